"""Bad inputs, end to end on a real sqlite store: every case goes through the CLI (``CliRunner``) or the Python API
and must give a message naming what is wrong (dataset, model, run, option), never a traceback, and must leave no
FINISHED comparison run behind.  Cases that are legitimate but suspicious (q = 1, rope wider than the data, scores on
a 0-100 scale with a 0-1 rope, identical models) run to the end with a warning."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time
import uuid
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from mlflow.entities import Metric, Param, RunStatus, RunTag

from mlflow_bayescompare import InputError, hierarchical_test
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.pipeline.compare import compare_matrix, compare_runs, rank_runs, require
from mlflow_bayescompare.reads.collect import collect_scores
from mlflow_bayescompare.vocabulary.keys import KEYS_ARTIFACT, metric_folder, metric_key, named_keys
from mlflow_bayescompare.vocabulary.tags import VERDICT, metric_tag

FAST = ["--chains", "2", "--draws", "200", "--seed", "1"]
DATASETS = ("iris", "wine", "glass", "yeast")
# separate, consistent differences so that the good cases give a clear verdict quickly
OFFSETS = {"rf": 0.03, "svm": 0.0, "knn": -0.02}
MODELS = tuple(OFFSETS)


# ----------------------------------------------------------------------------------------------- helpers


def log_steps(client, eid, model, dataset, scores, *, metric="accuracy", folds="10", repeats="1", tags=None,
              params=None) -> str:
    """One run in the steps layout, written with raw MLflow calls so that any value (NaN, 'ten') can be logged."""
    run_tags = {"model": model, "dataset": dataset} if tags is None else tags
    run_id = client.create_run(eid, tags=run_tags).info.run_id
    now = int(time.time() * 1000)
    ps = {"cv_folds": folds, "cv_repeats": repeats, **(params or {})}
    client.log_batch(run_id, metrics=[Metric(metric, float(v), now, i) for i, v in enumerate(scores)],
                     params=[Param(k, str(v)) for k, v in ps.items() if v is not None])
    client.set_terminated(run_id)
    return run_id


def scores(model, dataset, n=10, seed=0, scale=1.0):
    """``n`` accuracies of ``model`` on ``dataset``, the same in every process (fixed seeds, no ``hash()``)."""
    rng = np.random.default_rng([MODELS.index(model), DATASETS.index(dataset), seed])
    return scale * np.clip(0.8 + OFFSETS.get(model, 0.0) + 0.02 * DATASETS.index(dataset)
                           + rng.normal(0, 0.02, n), 0, 1)


def log_grid(client, eid, models=("rf", "svm"), datasets=DATASETS) -> dict:
    return {(m, d): log_steps(client, eid, m, d, scores(m, d)) for m in models for d in datasets}


def cli(tracking_uri, eid, *args, fast=True):
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", eid, "--metric", "accuracy",
            "--model-a", "rf", "--model-b", "svm", *(FAST if fast else []), *args]
    return CliRunner().invoke(main, argv)


def finished_comparisons(client, eid) -> list:
    runs = client.search_runs([eid], "tags.`bayescompare.kind` = 'comparison'")
    return [r for r in runs if r.info.status == RunStatus.to_string(RunStatus.FINISHED)]


def assert_refused(result, client, eid, code, *fragments):
    """Exit ``code``, each fragment in the output, an ``Error:`` line, no traceback, no FINISHED comparison run."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert "Error: " in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    assert finished_comparisons(client, eid) == []


@pytest.fixture
def grid(client, experiment_id):
    """rf and svm on four datasets, 10 folds, steps layout."""
    return log_grid(client, experiment_id)


def test_scores_are_the_same_in_every_process():
    """The simulated scores come from fixed seeds: ``scores`` run in two fresh interpreters with different
    string-hash salts (PYTHONHASHSEED, on which ``hash()`` of strings depends) and in this one gives one array."""
    code = (f"import numpy as np\nDATASETS, OFFSETS, MODELS = {DATASETS!r}, {OFFSETS!r}, {MODELS!r}\n"
            f"{inspect.getsource(scores)}\nprint(scores('svm', 'glass', seed=1).tolist())")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                           env={**os.environ, "PYTHONHASHSEED": salt}) for salt in ("1", "2")]
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout) == scores("svm", "glass", seed=1).tolist()


# ------------------------------------------------------------------------------------------- where and what


def test_unknown_experiment_name_and_id(tracking_uri, client, experiment_id, grid):
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-name", "no-such", "--experiment-id", "424242",
            "--metric", "accuracy", "--model-a", "rf", "--model-b", "svm"]
    result = CliRunner().invoke(main, argv)
    # both problems at once, naming the store
    assert_refused(result, client, experiment_id, 2, "no experiment named 'no-such'", "no experiment with id '424242'",
                   tracking_uri)
    assert "did you mean" not in result.output  # nothing is named like 'no-such'
    result = CliRunner().invoke(main, [*argv[:3], "--experiment-name", "cvv", *argv[7:]])
    assert_refused(result, client, experiment_id, 2, "no experiment named 'cvv'; did you mean 'cv'?")


def test_deleted_experiment_is_unknown(tracking_uri, client, experiment_id, grid):
    client.delete_experiment(experiment_id)
    result = cli(tracking_uri, experiment_id)
    assert result.exit_code == 2 and f"no experiment with id '{experiment_id}'" in result.output
    assert "Traceback" not in result.output


def test_a_target_experiment_that_cannot_take_the_run_is_refused_before_any_fit(tracking_uri, client, experiment_id,
                                                                                grid):
    """A deleted target, a new one named like an id, or one named longer than PostgreSQL keeps (sqlite keeps it), is
    refused in the pre-flight by ``compare``, ``matrix`` and ``rank`` (the Python API hears no sampling stage) and
    by the command line (exit 2), with nothing created."""
    deleted = client.create_experiment("gone")
    client.delete_experiment(deleted)
    log_grid(client, experiment_id, models=("knn",))
    before = {e.experiment_id for e in client.search_experiments(view_type=3)}
    for target, problem in (("gone", "experiment 'gone' is deleted"), ("99999", "no experiment with id '99999'"),
                            ("t" * 257, "a new target experiment's name may hold at most 256 characters")):
        for call in (lambda **kw: compare_runs(model_a="rf", model_b="svm", **kw), compare_matrix, rank_runs):
            stages = []
            heard = stages.append
            with pytest.raises(InputError, match=problem):
                call(experiment_ids=[experiment_id], metric="accuracy", tracking_uri=tracking_uri, chains=2,
                     draws=200, target_experiment=target, progress=lambda stage, _=None, heard=heard: heard(stage))
            assert "sampling" not in stages and "compiling" not in stages, stages
        assert_refused(cli(tracking_uri, experiment_id, "--target-experiment", target), client, experiment_id, 2,
                       problem)
    assert {e.experiment_id for e in client.search_experiments(view_type=3)} == before
    assert client.search_runs([experiment_id], "tags.`bayescompare.kind` != ''") == []


def test_unknown_metric_lists_the_metrics_present(tracking_uri, client, experiment_id, grid):
    result = cli(tracking_uri, experiment_id, "--metric", "f1")
    assert_refused(result, client, experiment_id, 2, "metric 'f1' not found", "metrics present: accuracy")


def test_model_in_no_run_lists_the_models_present(tracking_uri, client, experiment_id, grid):
    result = cli(tracking_uri, experiment_id, "--model-b", "xgboost")
    assert_refused(result, client, experiment_id, 2, "model 'xgboost' is in no run tagged 'model'",
                   "models present: rf, svm")


def test_both_models_missing_reported_at_once(tracking_uri, client, experiment_id, grid):
    result = cli(tracking_uri, experiment_id, "--model-a", "lgbm", "--model-b", "xgboost")
    assert_refused(result, client, experiment_id, 2, "model 'lgbm'", "model 'xgboost'")


def test_dataset_tag_missing_names_the_runs(tracking_uri, client, experiment_id, grid):
    bad = log_steps(client, experiment_id, "rf", "", scores("rf", "iris"), tags={"model": "rf"})
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, "have tag 'model' but no tag 'dataset'", bad)


def test_model_tag_missing_everywhere(tracking_uri, client, experiment_id):
    for d in DATASETS[:2]:
        log_steps(client, experiment_id, "rf", d, scores("rf", d), tags={"algo": "rf", "dataset": d})
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, "no run carries tag 'model' for the model and no param that "
                   "every run carries varies across them", "params: cv_folds, cv_repeats; tags: algo, dataset",
                   "Say where the model is with --model-key")
    # with the right key, or the old option, it is found (the other model is still missing, by name)
    for option in (["--model-key", "tag:algo"], ["--model-tag", "algo"]):
        result = cli(tracking_uri, experiment_id, *option)
        assert_refused(result, client, experiment_id, 2, "model 'svm' is in no run tagged 'algo'")


def test_tag_key_with_backtick(tracking_uri, client, experiment_id, grid):
    result = cli(tracking_uri, experiment_id, "--model-tag", "mo`del")
    assert_refused(result, client, experiment_id, 2, "contains a backtick")


def test_empty_experiment(tracking_uri, client, experiment_id):
    """Called empty, by its name: not two models that are in no run (issue 40, item 11)."""
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, f"experiment 'cv' (id {experiment_id}) has no runs")
    assert "is in no run" not in result.output


# ------------------------------------------------------------------------------------------- the CV tensor


def test_a_dataset_one_model_lacks_is_left_out_and_named(tracking_uri, client, experiment_id, grid, tmp_path):
    """The pair is compared on the datasets both have; the one left out is named in the messages, the JSON, the
    run (tag, param, description), its HTML report and the text."""
    log_steps(client, experiment_id, "rf", "abalone", scores("rf", "iris"))
    result = cli(tracking_uri, experiment_id, "--json")
    assert result.exit_code == 0, result.output
    out, note = json.loads(result.stdout), "left out 1 dataset only one of the two models has"
    assert (out["n_datasets"], out["datasets_left_out"]) == (4, {"abalone": "no scores of 'svm'"})
    assert f"{note}: 'abalone' (no scores of 'svm'); compared on the 4 both have" in result.stderr
    run = client.get_run(out["run_id"])
    assert run.data.tags["bayescompare.datasets_left_out"] == "abalone"
    assert json.loads(run.data.params["datasets_left_out"]) == {"abalone": "no scores of 'svm'"}
    assert note in run.data.tags["mlflow.note.content"]
    report = client.download_artifacts(out["run_id"], "report.html", str(tmp_path))
    assert note in open(report, encoding="utf-8").read()
    result = cli(tracking_uri, experiment_id, "--no-log", "--test", "signed-rank")
    assert result.exit_code == 0 and "Left out: 'abalone' (no scores of 'svm')" in result.stdout, result.output


def test_fewer_than_two_shared_datasets(tracking_uri, client, experiment_id, grid):
    """One shared dataset: the correlated t-test of its folds, said; the signed-rank test refused with the
    one-dataset test named; no shared dataset: each model's named."""
    log_steps(client, experiment_id, "knn", "iris", scores("knn", "iris"))
    log_steps(client, experiment_id, "knn", "abalone", scores("knn", "iris"))
    result = cli(tracking_uri, experiment_id, "--model-b", "knn", "--no-log", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["test"] == "correlated-t" and sorted(out["datasets_left_out"]) == ["abalone", "glass", "wine", "yeast"]
    assert "compared on the 1 both have ('iris'): one dataset, on which the correlated t-test" in result.stderr
    result = cli(tracking_uri, experiment_id, "--model-b", "knn", "--test", "signed-rank")
    assert_refused(result, client, experiment_id, 2, "1 dataset ('iris'): the signed-rank test compares two models "
                   "across datasets", "(the Bayesian correlated t-test)", "left out 4 datasets")
    log_steps(client, experiment_id, "lgbm", "abalone", scores("rf", "iris"))
    result = cli(tracking_uri, experiment_id, "--model-b", "lgbm")
    assert_refused(result, client, experiment_id, 2, "'rf' and 'lgbm' share no dataset: 'rf' has 'glass', 'iris', "
                   "'wine', 'yeast'; 'lgbm' has 'abalone'")


def test_a_matrix_whose_pairs_need_two_tests_names_both(tracking_uri, client, experiment_id):
    """svm has one dataset: its pairs share one, and the correlated t-test compares them; rf and knn share two, and
    the hierarchical test does. The text and the JSON name both tests, and each pair its own."""
    for model, datasets in (("rf", DATASETS), ("knn", DATASETS[:2]), ("svm", DATASETS[:1])):
        for d in datasets:
            log_steps(client, experiment_id, model, d, scores(model, d))
    argv = ["matrix", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            *FAST, "--no-log", "--jobs", "1"]
    out = json.loads(CliRunner().invoke(main, [*argv, "--json"]).stdout)
    assert {(p["model_a"], p["model_b"]): p["test"] for p in out["pairs"]} == {
        ("knn", "rf"): "hierarchical", ("knn", "svm"): "correlated-t", ("rf", "svm"): "correlated-t"}
    assert out["test"] == "hierarchical,correlated-t"
    text = CliRunner().invoke(main, argv)
    assert text.exit_code == 0, text.output
    assert "Pairs: Bayesian hierarchical test on the per-fold scores; Bayesian correlated t-test on the per-fold " \
           "scores of one dataset (the more probably better model first)" in text.stdout


@pytest.mark.slow
def test_a_matrix_compares_each_pair_on_its_shared_datasets(tracking_uri, client, experiment_id):
    """Per pair, the datasets both models have; the ranking plays no game where a model lacks a dataset;
    --drop-incomplete keeps one common set for every pair (means layout: signed-rank pairs, a BBT ranking)."""
    for m in MODELS:
        for d in DATASETS:
            if (m, d) not in (("svm", "glass"), ("knn", "yeast")):
                log_steps(client, experiment_id, m, d, scores(m, d, n=1), folds=None, repeats=None)
    argv = ["matrix", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            *FAST, "--no-log", "--json", "--jobs", "1"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    left_out = {(p["model_a"], p["model_b"]): p["datasets_left_out"] for p in json.loads(result.stdout)["pairs"]}
    assert left_out == {("rf", "svm"): {"glass": "no scores of 'svm'"}, ("knn", "rf"): {"yeast": "no scores of 'knn'"},
                        ("knn", "svm"): {"yeast": "no scores of 'knn'", "glass": "no scores of 'svm'"}}
    assert "pairs count no game where one is missing" in result.stderr
    assert "each pair is compared on the datasets both its models have; left out where one lacks them:\n" \
           "  'knn' lacks yeast\n  'svm' lacks glass\n" in result.stderr  # said once, not once a pair
    assert "only one of the two models has" not in result.stderr
    result = CliRunner().invoke(main, [*argv, "--drop-incomplete"])
    assert result.exit_code == 0, result.output
    assert all(sorted(p["datasets_left_out"]) == ["glass", "yeast"] for p in json.loads(result.stdout)["pairs"])
    assert "pairs count no game" not in result.stderr


def test_unequal_fold_counts_name_the_dataset(tracking_uri, client, experiment_id, grid):
    log_steps(client, experiment_id, "rf", "abalone", scores("rf", "iris"), folds="10")
    log_steps(client, experiment_id, "svm", "abalone", scores("svm", "iris", n=5), folds="5")
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2)
    # one problem, this one, naming the dataset and each model's count
    assert result.stderr[result.stderr.index("Error: "):].splitlines() == [
        "Error: Cannot compare 'rf' with 'svm':",
        "  - dataset 'abalone': fold count differs: 'rf' uses 10 folds, 'svm' uses 5",
        "to leave out the datasets with missing or extra folds or scores: --drop-incomplete on the command line, "
        "drop_incomplete=True in Python",  # what to do, once
    ]


def test_missing_folds_name_dataset_model_and_fold(tracking_uri, client, experiment_id, grid):
    run = log_steps(client, experiment_id, "rf", "abalone", scores("rf", "iris")[:8])
    log_steps(client, experiment_id, "svm", "abalone", scores("svm", "iris"))
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, "abalone", "rf")
    assert run in result.output or "fold 8" in result.output or "8-9" in result.output, result.output


def test_duplicate_runs_list_their_ids_and_latest_resolves(tracking_uri, client, experiment_id, grid):
    extra = log_steps(client, experiment_id, "rf", "wine", scores("rf", "wine", seed=1))
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, "dataset 'wine'", "model 'rf' has 2 runs", extra,
                   grid[("rf", "wine")])
    result = cli(tracking_uri, experiment_id, "--latest", "--no-log", "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("bad, shown", [(float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "inf")])
def test_non_finite_scores_name_dataset_model_fold(tracking_uri, client, experiment_id, grid, bad, shown):
    values = scores("rf", "iris")
    values[3] = bad
    run = log_steps(client, experiment_id, "rf", "abalone", values)
    log_steps(client, experiment_id, "svm", "abalone", scores("svm", "iris"))
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, "dataset 'abalone' model 'rf'", "fold 3", run, shown)


def test_non_numeric_cv_folds_param_names_the_run(tracking_uri, client, experiment_id, grid):
    run = log_steps(client, experiment_id, "rf", "abalone", scores("rf", "iris"), folds="ten")
    log_steps(client, experiment_id, "svm", "abalone", scores("svm", "iris"))
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, f"run {run}: param 'cv_folds' is 'ten'")
    # an explicit --folds overrides the param
    result = cli(tracking_uri, experiment_id, "--folds", "10", "--no-log", "--json")
    assert result.exit_code == 0, result.output


def test_folds_param_missing_says_how_to_give_it(tracking_uri, client, experiment_id):
    for m in ("rf", "svm"):
        for d in DATASETS[:2]:
            log_steps(client, experiment_id, m, d, scores(m, d), folds=None, repeats=None)
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, "number of folds is unknown", "--folds K", "cv_folds")


def test_folds_equal_one(tracking_uri, client, experiment_id, grid):
    result = cli(tracking_uri, experiment_id, "--folds", "1")
    assert_refused(result, client, experiment_id, 2, "Invalid value for '--folds'")
    run = log_steps(client, experiment_id, "rf", "abalone", scores("rf", "iris"), folds="1")
    log_steps(client, experiment_id, "svm", "abalone", scores("svm", "iris"), folds="1")
    result = cli(tracking_uri, experiment_id)
    assert_refused(result, client, experiment_id, 2, f"run {run}: param 'cv_folds' is '1'", ">= 2")
    # the Python API explains why
    with pytest.raises(InputError, match=r"got 1 \(folds = 1 makes ρ = 1/folds = 1"):
        hierarchical_test(np.ones((2, 10)), np.zeros((2, 10)), folds=1)


def test_folds_contradicting_the_logged_cv_folds_are_refused(tracking_uri, client, experiment_id, grid):
    """Runs logged with cv_folds=10: --folds 200 would read each run's 10 scores as part of one repeat of 200 folds
    (with ρ = 1/200) and change the verdict; it is refused, naming both numbers and the runs' datasets and models."""
    result = cli(tracking_uri, experiment_id, "--folds", "200")
    assert_refused(result, client, experiment_id, 2, "--folds 200 (folds=200) contradicts the param cv_folds=10 "
                   "logged by dataset 'glass' model 'rf', dataset 'glass' model 'svm', dataset 'iris' model 'rf' and "
                   "5 more runs; leave --folds out")
    with pytest.raises(InputError, match=r"--folds 1001 \(folds=1001\) contradicts the param cv_folds=10"):
        compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="rf", model_b="svm", folds=1001,
                     tracking_uri=tracking_uri)
    assert collect_scores(client, [experiment_id], "accuracy", folds=10).folds == dict.fromkeys(sorted(DATASETS), 10)


def test_folds_that_split_no_dataset_into_whole_repeats_are_refused(tracking_uri, client, experiment_id):
    """Runs without cv_folds, 100 scores each (10 repeats of 10 folds): --folds 200 and --folds 3 cannot split them
    into whole repeats, and say so for each dataset; --folds 20 can (20 folds, 5 repeats) and is taken."""
    for m in ("rf", "svm"):
        for d in DATASETS[:2]:
            log_steps(client, experiment_id, m, d, scores(m, d, n=100), folds=None, repeats=None)
    for folds in ("200", "3"):
        result = cli(tracking_uri, experiment_id, "--folds", folds)
        assert_refused(result, client, experiment_id, 2, "dataset 'iris' (model '", "dataset 'wine' (model '",
                       f"logs 100 fold scores: not a whole number of repeats of --folds {folds} (folds={folds})")
    assert collect_scores(client, [experiment_id], "accuracy", folds=20).folds == {"iris": 20, "wine": 20}


def test_folds_contradicting_the_logged_cv_repeats_are_refused(tracking_uri, client, experiment_id):
    """Runs logged with cv_repeats=10 but no cv_folds, 100 scores each: --folds 20 would read them as 5 repeats
    (and --folds 5 as 20); refused, naming both numbers; --folds 10 makes the 10 repeats logged."""
    for m in ("rf", "svm"):
        for d in DATASETS[:2]:
            log_steps(client, experiment_id, m, d, scores(m, d, n=100), folds=None, repeats="10")
    for folds, made in (("20", 5), ("5", 20)):
        result = cli(tracking_uri, experiment_id, "--folds", folds)
        assert_refused(result, client, experiment_id, 2, f"--folds {folds} (folds={folds}) makes {made} repeats of the "
                       "fold scores logged by dataset 'iris' model 'rf', dataset 'iris' model 'svm', dataset 'wine' "
                       "model 'rf' and 1 more runs, which contradicts their param cv_repeats=10")
    assert collect_scores(client, [experiment_id], "accuracy", folds=10).folds == {"iris": 10, "wine": 10}


def test_a_rope_wider_than_any_score_could_need_is_refused_before_the_fit(tracking_uri, client, experiment_id, grid):
    """rope 1e308 overflowed the fit's arithmetic after sampling; the pre-flight refuses a rope more than a million
    times the largest score, in the scores' units."""
    largest = max(scores(m, d).max() for m, d in grid)
    result = cli(tracking_uri, experiment_id, "--rope", "1e308")
    assert_refused(result, client, experiment_id, 2, "rope 1e+308 is more than 1e+06 times the largest 'accuracy' "
                   f"score logged ({largest:.3g}): the rope is a half-width in the scores' units")


RANK = ["rank", "--metric", "accuracy", "--chains", "2", "--draws", "200", "--seed", "1"]


@pytest.mark.parametrize("args, fragment", [
    (["--require", "best=xgb"], "--require best=xgb: no such model among knn, rf, svm"),
    (["--drop-incomplete", "--skip-missing"], "drop_incomplete and skip_missing exclude each other"),
    (["--models", "rf,svm"], "compare two models with the two-model test (the command `compare`; in Python,"),
    (["--metric-rope", "1e308"], "metric_rope 1e+308 is more than 1e+06 times the largest 'accuracy' score logged"),
    (["--model", "bbt", "--require", "none-better=rf"], "claim 'none-better=rf' needs the hierarchical model's "
                                                        "ranking (model hierarchical, on fold scores across datasets); "
                                                        "these models are ranked by bbt"),
])
def test_a_ranking_that_cannot_answer_is_refused_before_anything_is_written(tracking_uri, client, experiment_id,
                                                                              args, fragment):
    log_grid(client, experiment_id, models=MODELS)
    result = CliRunner().invoke(main, [*RANK, "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, *args])
    assert result.exit_code == 2 and fragment in result.stderr, result.output
    assert "Traceback" not in result.output
    assert client.search_runs([experiment_id], "tags.`bayescompare.kind` IS NOT NULL") == []


def test_layout_that_is_not_there(tracking_uri, client, experiment_id, grid):
    result = cli(tracking_uri, experiment_id, "--layout", "keys")
    assert_refused(result, client, experiment_id, 2, "metric 'accuracy' not found in the keys layout "
                   "('<metric>_fold_<i>' keys); metrics present: accuracy; layout 'auto' tells the layout from the "
                   "runs")
    result = cli(tracking_uri, experiment_id, "--layout", "rows")
    assert_refused(result, client, experiment_id, 2, "Invalid value for '--layout'")


# ------------------------------------------------------------------------------------------- options


@pytest.mark.parametrize("args, fragment", [
    (["--rope", "-0.01"], "Invalid value for '--rope'"),
    (["--rope", "0"], "Invalid value for '--rope': must be a finite number > 0"),
    (["--chains", "0"], "Invalid value for '--chains'"),
    (["--chains", "-2"], "Invalid value for '--chains'"),
    (["--draws", "5"], "Invalid value for '--draws'"),
    (["--threshold", "1.5"], "Invalid value for '--threshold'"),
    (["--threshold", "0"], "Invalid value for '--threshold'"),
    (["--prior", "cauchy"], "Invalid value for '--prior'"),
    (["--require", "much-better"], "Invalid value for '--require'"),
    (["--seed", "one"], "Invalid value for '--seed'"),
    (["--model-b", "rf"], "model A and model B are both 'rf'"),
    (["--model-a", "rf\udcff"], "Invalid value for '--model-a': is not text that UTF-8 can encode"),
])
def test_bad_options(tracking_uri, client, experiment_id, grid, args, fragment):
    result = cli(tracking_uri, experiment_id, *args)
    assert_refused(result, client, experiment_id, 2, fragment)


def test_bad_options_through_the_python_api(tracking_uri, client, experiment_id, grid):
    kw = dict(experiment_ids=[experiment_id], metric="accuracy", model_a="rf", model_b="svm",
              tracking_uri=tracking_uri, draws=200)
    with pytest.raises(InputError, match="chains must be a whole number >= 1 and <= 64; got 0"):
        compare_runs(**kw, chains=0)
    with pytest.raises(InputError, match="chains must be a whole number >= 1 and <= 64; got -1"):
        compare_runs(**kw, chains=-1)
    with pytest.raises(InputError, match=r"threshold must be a finite number > 0 and < 1; got 1.5"):
        compare_runs(**kw, chains=2, threshold=1.5)
    with pytest.raises(InputError, match="prior must be one of hierarchical, .*; got 'cauchy'"):
        compare_runs(**kw, chains=2, prior="cauchy")
    with pytest.raises(InputError, match="rope must be a finite number > 0; got -0.1"):
        compare_runs(**kw, chains=2, rope=-0.1)
    with pytest.raises(InputError, match="model A and model B are both 'rf'"):
        compare_runs(**{**kw, "model_b": "rf"}, chains=2)
    with pytest.raises(InputError, match="layout must be one of"):
        compare_runs(**kw, chains=2, layout="rows")
    outcome = compare_runs(**kw, chains=2, seed=1, log=False)
    with pytest.raises(InputError, match="unknown claim 'better'"):
        require(outcome, "better")
    with pytest.raises(InputError, match=r"threshold must be a finite number > 0 and < 1; got 2"):
        require(outcome, "a-better", threshold=2)
    assert finished_comparisons(client, experiment_id) == []


def test_require_with_no_log_exits_1_and_logs_nothing(tracking_uri, client, experiment_id, grid):
    # svm is worse than rf everywhere: "svm is at least as good" is not supported
    argv = ["--model-a", "svm", "--model-b", "rf", "--require", "not-worse", "--no-log", "--json"]
    result = cli(tracking_uri, experiment_id, *argv)
    assert result.exit_code == 1, result.output
    assert "Error: claim 'not-worse' not supported" in result.stderr and "Traceback" not in result.output
    assert json.loads(result.stdout)["require"]["supported"] is False
    assert client.search_runs([experiment_id], "tags.`bayescompare.kind` = 'comparison'") == []


# ------------------------------------------------------------------------------------------- filters


@pytest.mark.parametrize("flt", [
    "tags.x = 'a' OR 1=1",
    "'; DROP TABLE runs; --",
    "tags.model = 'rf'; DELETE FROM runs",
    "params.cv_folds = '10' UNION SELECT * FROM runs",
])
def test_filter_injection_is_refused_and_harmless(tracking_uri, client, experiment_id, grid, flt):
    result = cli(tracking_uri, experiment_id, "--filter", flt)
    assert_refused(result, client, experiment_id, 2, "invalid filter string")
    assert len(client.search_runs([experiment_id])) == len(grid)  # every table intact


@pytest.mark.parametrize("command", ["compare", "rank", "matrix"])
def test_an_invalid_filter_is_refused_by_every_kind(tracking_uri, client, experiment_id, grid, command):
    """A matrix and a ranking find every model by a search under the filter: MLflow's parser refuses it before,
    as for a comparison (exit 2, MLflow's words), not the search at the store (exit 1, "MLflow … failed")."""
    models = ["--model-a", "rf", "--model-b", "svm"] if command == "compare" else []
    result = CliRunner().invoke(main, [command, "--tracking-uri", tracking_uri, "--experiment-id", experiment_id,
                                       "--metric", "accuracy", *models, *FAST, "--filter", "1=1"])
    assert_refused(result, client, experiment_id, 2, "Error: invalid filter string '1=1': Invalid comparison clause")
    assert "MLflow at" not in result.output and len(client.search_runs([experiment_id])) == len(grid)


def test_filter_with_quotes_is_applied_or_matches_nothing(tracking_uri, client, experiment_id, grid):
    # a well-formed filter with both quote kinds narrows the runs as MLflow defines it
    result = cli(tracking_uri, experiment_id, "--filter", "tags.dataset != \"it's\" AND tags.dataset != 'yeast'",
                 "--no-log", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_datasets"] == 3
    # quotes smuggled into a value are part of the literal: nothing matches, and the message quotes the filter
    for flt in ("tags.dataset = 'O''Reilly'", "tags.`dataset` = 'iris\\' OR \\'1\\'=\\'1'"):
        result = cli(tracking_uri, experiment_id, "--filter", flt)
        assert_refused(result, client, experiment_id, 2, "model 'rf' is in no run tagged 'model' that matches the "
                       "filter")
    assert len(client.search_runs([experiment_id])) == len(grid)


# ------------------------------------------------------------------------------------------- names


NAMES = ("o'neil \"quoted\"", "модель-ü-模型", "<img src=x onerror=alert(1)>&amp;")


@pytest.mark.slow
def test_names_with_quotes_unicode_and_html_end_to_end(tracking_uri, client, experiment_id, tmp_path):
    for i, m in enumerate(NAMES):
        for d in ("d'one", "<b>two</b>", "три"):
            values = np.clip(0.7 + 0.02 * i + np.random.default_rng(i).normal(0, 0.02, 10), 0, 1)
            log_steps(client, experiment_id, m, d, values)
    for a, b in ((NAMES[0], NAMES[2]), (NAMES[1], NAMES[0])):
        argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric",
                "accuracy", "--model-a", a, "--model-b", b, "--json", *FAST]
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        run = client.get_run(report["run_id"])
        assert run.info.status == "FINISHED"
        assert (run.data.tags["bayescompare.model_a"], run.data.tags["bayescompare.model_b"]) == (a, b)
        md = client.download_artifacts(run.info.run_id, "report.md", str(tmp_path / run.info.run_id))
        html = client.download_artifacts(run.info.run_id, "report.html", str(tmp_path / run.info.run_id))
        for path in (md, html):
            text = open(path, encoding="utf-8").read()
            assert "<img src=x" not in text and "<b>two</b>" not in text
        for text in (open(md, encoding="utf-8").read(), run.data.tags["mlflow.note.content"]):
            assert "<img" not in text and "<b>" not in text
        if NAMES[2] in (a, b):
            assert "&lt;img src=x onerror=alert(1)&gt;" in open(html, encoding="utf-8").read()
        if NAMES[1] in (a, b):
            assert NAMES[1] in open(md, encoding="utf-8").read()


#: model names MLflow refuses in a metric key (a URL, a path that resolves elsewhere), two of which read alike
URL_NAMES = ("https://host/a", "https:__host_a", "b/../c")
#: a metric name MLflow takes, too long to take a suffix in a decision on several metrics
LONG_METRIC = "https:/x/" + "m" * 231


def test_keys_built_from_names_are_valid_distinct_and_reversible(client, experiment_id):
    """Each hostile name gets a key a real store takes, as a metric and as a param; no two names share one; the
    keys do not depend on the order of the names; a name MLflow takes as it is keeps it."""
    names = [*NAMES, *URL_NAMES, "https___host_a", "a/b", "a:b", "a_b", "..", "x" * 300, "rf-1.2 beta"]
    keys = named_keys("p_best", names)
    assert len(set(keys.values())) == len(names) and named_keys("p_best", reversed(names)) == keys
    assert keys["rf-1.2 beta"] == "p_best.rf-1.2 beta" and keys[NAMES[1]] == f"p_best.{NAMES[1]}"
    assert keys["https://host/a"].startswith("p_best.https___host_a-")
    run_id = client.create_run(experiment_id).info.run_id
    client.log_batch(run_id, metrics=[Metric(key, 1.0, 0, 0) for key in keys.values()],
                     params=[Param(key, name) for name, key in keys.items()])
    assert client.get_run(run_id).data.params == {key: name for name, key in keys.items()}


def test_keys_built_from_metric_names_are_valid_and_distinct(client, experiment_id, tmp_path):
    """A decision on several metrics keys each metric's values, params and tags by its name: every key a real store
    takes, even for a metric named by 240 characters or like a path (a search's scorer is any text) and for a
    model whose own key fills MLflow's 250; the folder of a metric's artifacts a path inside the run's."""
    metrics = ["accuracy", LONG_METRIC, "a/../b", "../../x", ".", "точность" * 30, "https:/x/a"]
    names = ["p_a_better", *named_keys("p_best", ["rf", "x" * 300]).values()]
    keys = {(m, n): metric_key(m, n) for m in metrics for n in names}
    tags = {m: metric_tag(VERDICT, m) for m in metrics}
    assert len(set(keys.values())) == len(keys) and len(set(tags.values())) == len(metrics)
    assert keys["accuracy", "p_a_better"] == "accuracy/p_a_better" and tags["https:/x/a"] == f"{VERDICT}/https:/x/a"
    run_id = client.create_run(experiment_id).info.run_id
    client.log_batch(run_id, metrics=[Metric(k, 1.0, 0, 0) for k in keys.values()],
                     params=[Param(k, "v") for k in keys.values()], tags=[RunTag(t, "v") for t in tags.values()])
    folders = [tmp_path / metric_folder(m) for m in metrics]
    for folder in folders:
        folder.mkdir(parents=True)
        assert tmp_path.resolve() in folder.resolve().parents
    assert len(set(folders)) == len(metrics) and metric_folder("https:/x/a") == "https:/x/a"


@pytest.mark.slow
def test_names_like_urls_and_paths_rank_and_matrix(tracking_uri, client, experiment_id, tmp_path):
    """A ranking of every hostile model and a matrix of those named like URLs finish, each run's metrics keyed as
    MLflow accepts and mapped back to the models' names by its metric_keys.json; so does a comparison of two of
    them on two metrics, one named by 240 characters."""
    models = (*NAMES, *URL_NAMES)
    for i, m in enumerate(models):
        for d in ("d'one", "<b>two</b>", "три"):
            values = np.clip(0.7 + 0.02 * i + np.random.default_rng(i).normal(0, 0.02, 10), 0, 1)
            run_id = log_steps(client, experiment_id, m, d, values)
            client.log_batch(run_id, metrics=[Metric(LONG_METRIC, float(v), 0, j) for j, v in enumerate(values)])
    fast = dict(tracking_uri=tracking_uri, chains=2, draws=100, warmup=100, seed=1)
    several = compare_runs(experiment_ids=[experiment_id], metric=f"accuracy,{LONG_METRIC}", model_a=URL_NAMES[0],
                           model_b=URL_NAMES[2], **fast)
    run = client.get_run(several.run_id)
    mapping = json.loads(open(client.download_artifacts(several.run_id, KEYS_ARTIFACT, str(tmp_path)),
                              encoding="utf-8").read())
    assert run.info.status == "FINISHED" and mapping[metric_folder(LONG_METRIC) + "/"]["metric"] == LONG_METRIC
    logged = {(mapping[k]["metric"], mapping[k]["name"]): v for k, v in run.data.metrics.items() if k in mapping}
    assert logged[LONG_METRIC, "p_a_better"] == several.by_metric[LONG_METRIC].p_a_better
    ranking = rank_runs(experiment_ids=[experiment_id], metric="accuracy", **fast)
    matrix = compare_matrix(experiment_ids=[experiment_id], metric="accuracy", models=URL_NAMES, jobs=1, **fast)
    for outcome, names in ((ranking, models), (matrix, URL_NAMES)):
        run = client.get_run(outcome.run_id)
        assert run.info.status == "FINISHED"
        path = client.download_artifacts(outcome.run_id, KEYS_ARTIFACT, str(tmp_path / outcome.run_id))
        mapping = json.loads(open(path, encoding="utf-8").read())
        assert sorted(mapping.values()) == sorted(names * 3)  # p_best, mean_rank and diff_to_leader of each
        for column in ("p_best", "mean_rank"):
            logged = {mapping[k]: v for k, v in run.data.metrics.items() if k.startswith(f"{column}.")}
            assert logged == pytest.approx(dict(zip(outcome.ranking["model"], outcome.ranking[column])))
    assert f"p_best.{NAMES[1]}" in client.get_run(ranking.run_id).data.metrics  # a name MLflow takes keeps its key


def test_thousands_of_unrelated_runs(tracking_uri, client, experiment_id, grid):
    """Its time is benchmarks/bench_inputs.py's ``cli compare``."""
    bulk_unrelated_runs(client, experiment_id, 3000)
    assert len(client.search_runs([experiment_id], max_results=5000)) == 3000 + len(grid)
    result = cli(tracking_uri, experiment_id, "--json", "--no-log")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["n_datasets"] == 4
    # the 3000 runs change nothing: the result is the engine's on the grid's own scores, draw for draw
    order = [row["dataset"] for row in report["shrinkage"]]
    reference = hierarchical_test(np.array([scores("rf", d) for d in order]),
                                  np.array([scores("svm", d) for d in order]), folds=10, chains=2, draws=200, seed=1)
    assert (report["p_a_better"], report["p_rope"], report["p_b_better"]) == (
        reference.p_a_better, reference.p_rope, reference.p_b_better)
    assert report["p_a_better"] > 0.8  # rf is 0.03 better on each of only four datasets: 0.92 here
    # comparing with one of the unrelated models (100 runs, no cv_folds, no accuracy) is refused, naming runs
    result = cli(tracking_uri, experiment_id, "--model-b", "other-7")
    assert_refused(result, client, experiment_id, 2, "the number of folds is unknown for 100 run(s)")


def bulk_unrelated_runs(client, experiment_id, n):
    """``n`` runs of other models and projects (tags, a loss metric), written in one transaction of the store
    (``create_run`` would take ~50 ms each on sqlite)."""
    from mlflow.store.tracking.dbmodels.models import SqlMetric, SqlRun, SqlTag

    store = client._tracking_client.store
    now = int(time.time() * 1000)
    with store.ManagedSessionMaker(read_only=False) as session:
        for i in range(n):
            rid = uuid.uuid4().hex
            session.add(SqlRun(run_uuid=rid, name=f"noise-{i}", source_type="LOCAL", source_name="",
                               entry_point_name="", user_id="test", status="FINISHED", start_time=now, end_time=now,
                               source_version="", lifecycle_stage="active", artifact_uri=f"/tmp/{rid}",
                               experiment_id=int(experiment_id)))
            tags = {"team": "other"} if i % 3 else {"model": f"other-{i % 10}", "dataset": f"ds-{i}"}
            session.add_all([SqlTag(key=k, value=v, run_uuid=rid) for k, v in tags.items()])
            session.add(SqlMetric(key="loss", value=float(i), timestamp=now, step=0, is_nan=False, run_uuid=rid))


# ------------------------------------------------------------------------------------------- degenerate data


@pytest.mark.slow
def test_one_dataset_runs_with_a_warning(tracking_uri, client, experiment_id):
    """The hierarchical test forced on one dataset (auto answers with the correlated t-test: test_one_dataset.py)."""
    for m in ("rf", "svm"):
        log_steps(client, experiment_id, m, "iris", scores(m, "iris"))
    result = cli(tracking_uri, experiment_id, "--json", "--test", "hierarchical")
    assert result.exit_code == 0, result.output
    assert "one dataset only" in result.stderr
    report = json.loads(result.stdout)
    assert any("one dataset only" in w for w in report["diagnostics"]["warnings"])


@pytest.mark.slow
def test_rope_wider_than_every_difference_warns(tracking_uri, client, experiment_id, grid, tmp_path):
    result = cli(tracking_uri, experiment_id, "--rope", "0.5", "--json")
    assert result.exit_code == 0, result.output
    assert "bayescompare: warning: the rope ±0.5 is wider than every difference" in result.stderr
    report = json.loads(result.stdout)
    assert report["p_rope"] >= 0.99  # every difference is within ±0.08
    assert any("wider than every difference" in w for w in report["diagnostics"]["warnings"])
    md = client.download_artifacts(report["run_id"], "report.md", str(tmp_path))
    assert "wider than every difference" in open(md, encoding="utf-8").read()


def test_percent_scores_with_a_fraction_rope_warn(tracking_uri, client, experiment_id):
    for m in ("rf", "svm"):
        for d in DATASETS:
            log_steps(client, experiment_id, m, d, scores(m, d, scale=100.0))
    result = cli(tracking_uri, experiment_id, "--json", "--no-log")
    assert result.exit_code == 0, result.output
    assert "bayescompare: warning: differences reach" in result.stderr and "0-100 scale" in result.stderr
    report = json.loads(result.stdout)
    assert any("0-100 scale" in w for w in report["diagnostics"]["warnings"])


@pytest.mark.slow
def test_all_differences_zero(tracking_uri, client, experiment_id):
    for d in DATASETS:
        values = scores("rf", d)
        log_steps(client, experiment_id, "rf", d, values)
        log_steps(client, experiment_id, "svm", d, values)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cli(tracking_uri, experiment_id, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["p_rope"] >= 0.99 and "equivalent" in report["verdict"]
    messages = [str(w.message) for w in caught] + report["diagnostics"]["warnings"]
    assert any("every difference is zero" in m and "identical" in m for m in messages), messages
    assert client.get_run(report["run_id"]).info.status == "FINISHED"


def test_sigma_bound_below_a_datasets_spread_is_refused_before_stan():
    # σ_i ≤ 0.3 × the mean per-dataset sd: the third dataset's differences spread 3 × more than the others', so
    # its likelihood is 0 for every δ_i; Stan would fail to initialise ("log(0)") after 100 attempts
    rng = np.random.default_rng(5)
    diffs = rng.normal(0.01, [[0.01], [0.01], [0.03]], size=(3, 100))
    with pytest.raises(InputError) as err:
        hierarchical_test(diffs=diffs, folds=10, seed=1, std_upper_bound=0.3, datasets=["iris", "wine", "adult"])
    assert "std_upper_bound=0.3" in str(err.value) and "'adult'" in str(err.value)
    assert "'iris'" not in str(err.value)
