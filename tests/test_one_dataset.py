"""One dataset, read from MLflow runs on a real sqlite store: ``compare`` and ``matrix`` answer a pair that shares
one dataset with the Bayesian correlated t-test (closed form, no Stan), say so everywhere they say which test
answered, and refuse what the test cannot read with exit 2 and nothing logged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner
from mlflow.entities import Metric, Param
from uci_runs import artifact_paths, log_uci, uci_scores

from mlflow_bayescompare import correlated_t_test, log_cv_scores
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.pipeline.compare import compare_matrix, compare_runs
from mlflow_bayescompare.vocabulary import tags as T

ONE = (20,)  # uci20: hnb beats nbc by about 0.04 on its 10 x 10 folds


def _cli(tracking_uri, eid, *args):
    return CliRunner().invoke(main, ["compare", "--tracking-uri", tracking_uri, "--experiment-id", eid, "--metric",
                                     "accuracy", "--model-a", "hnb", "--model-b", "nbc", *args])


def _comparisons(client, eid) -> list:
    return client.search_runs([eid], f"tags.`{T.KIND}` IS NOT NULL")


def test_compare_on_one_dataset_answers_with_the_correlated_t_test(client, tracking_uri, experiment_id):
    """The pipeline's answer is the closed form's on the same folds, to the last digit; the run says which test
    answered (tag, description, summary) and holds the correlated t-test's artifacts."""
    log_uci(client, experiment_id, models=("nbc", "hnb"), datasets=ONE)
    scores = uci_scores(("nbc", "hnb"), ONE)
    outcome = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="hnb", model_b="nbc",
                           tracking_uri=tracking_uri, rope=0.01)
    direct = correlated_t_test(scores["hnb", "uci20"], scores["nbc", "uci20"], folds=10, rope=0.01)
    assert outcome.result.test == "correlated-t" and outcome.rho == 0.1
    assert (outcome.p_a_better, outcome.p_rope, outcome.p_b_better) == (
        direct.p_a_better, direct.p_rope, direct.p_b_better)
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags[T.TEST] == "correlated-t" and run.data.tags[T.KIND] == "comparison"
    assert "Bayesian correlated t-test" in run.data.tags[T.NOTE]
    assert run.data.metrics["p_rope"] == pytest.approx(direct.p_rope)
    assert set(artifact_paths(client, outcome.run_id)) == {
        "report.html", "report.md", "summary.json", "cv_differences.csv", "plots/posterior.png", "plots/posterior.svg"}
    assert outcome.to_dict()["test"] == "correlated-t" and outcome.to_dict()["n_datasets"] == 1


def test_the_command_line_says_the_correlated_t_test_answered(client, tracking_uri, experiment_id):
    log_uci(client, experiment_id, models=("nbc", "hnb"), datasets=ONE)
    result = _cli(tracking_uri, experiment_id, "--no-log")
    assert result.exit_code == 0, result.output
    assert "hnb vs nbc · accuracy: 1 dataset (steps layout)" in result.stdout
    assert ("Bayesian correlated t-test on the per-fold scores of one dataset (100 folds, ρ = 0.1: 1/folds with "
            "folds=10)") in result.stdout
    # a closed form: nothing is sampled, and the progress line says so (issue 40, item 10)
    assert "bayescompare: computing hnb vs nbc on the 100 folds of one dataset" in result.stderr
    assert "bayescompare: sampling" not in result.stderr
    result = _cli(tracking_uri, experiment_id, "--no-log", "--json", "--test", "correlated-t")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["test"] == "correlated-t" and report["rho_reason"] == "1/folds with folds=10"


def _log_one_fold(client, eid):
    """Each model's ten repeats of one 'fold' (cv_folds = 1): ρ would be 1."""
    for model, offset in (("hnb", 0.02), ("nbc", 0.0)):
        run_id = client.create_run(eid, tags={"model": model, "dataset": "uci20"}).info.run_id
        values = 0.8 + offset + np.random.default_rng(len(model)).normal(0, 0.01, 10)
        client.log_batch(run_id, metrics=[Metric("accuracy", float(v), 0, i) for i, v in enumerate(values)],
                         params=[Param("cv_folds", "1"), Param("cv_repeats", "10")])


def _log_folds_that_differ(client, eid):
    """hnb's 10 x 10-fold scores against nbc's 20 x 5-fold scores on the one dataset."""
    scores = uci_scores(("nbc", "hnb"), ONE)
    for model, folds in (("hnb", 10), ("nbc", 5)):
        log_cv_scores(model, "uci20", scores[model, "uci20"], folds=folds, repeats=100 // folds, experiment_id=eid,
                      client=client)


def _log_two_datasets(client, eid):
    log_uci(client, eid, models=("nbc", "hnb"), datasets=(20, 21))


@pytest.mark.parametrize("log, args, fragments", [
    (_log_one_fold, (), ["param 'cv_folds' is '1'", "folds = 1 makes ρ = 1/folds = 1"]),
    (_log_folds_that_differ, (), ["dataset 'uci20': fold count differs: 'hnb' uses 10 folds, 'nbc' uses 5"]),
    (_log_two_datasets, ("--test", "correlated-t"),
     ["the correlated t-test compares two models on one dataset, but 'hnb' and 'nbc' share 2 datasets ('uci20', "
      "'uci21')", "--filter \"tags.`dataset` = 'uci20'\""]),
], ids=["one-fold", "folds-differ", "forced-on-two-datasets"])
def test_what_the_correlated_t_test_cannot_read_is_refused_and_nothing_logged(client, tracking_uri, experiment_id,
                                                                                log, args, fragments):
    log(client, experiment_id)
    result = _cli(tracking_uri, experiment_id, *args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Error: " in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    assert _comparisons(client, experiment_id) == []


def test_a_matrix_on_one_dataset_compares_its_pair_by_the_correlated_t_test(client, tracking_uri, experiment_id):
    log_uci(client, experiment_id, models=("nbc", "hnb"), datasets=ONE)
    outcome = compare_matrix(experiment_ids=[experiment_id], metric="accuracy", models=["hnb", "nbc"],
                             tracking_uri=tracking_uri, jobs=1)
    pair = outcome.pairs["hnb", "nbc"]
    assert outcome.summary.tests == ("correlated-t",) and pair.result.test == "correlated-t"
    assert client.get_run(pair.run_id).data.tags[T.TEST] == "correlated-t"
    assert client.get_run(outcome.run_id).data.metrics["n_datasets"] == 1
    result = CliRunner().invoke(main, ["matrix", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id,
                                       "--metric", "accuracy", "--jobs", "1", "--no-log"])
    assert result.exit_code == 0, result.output
    assert "Pairs: Bayesian correlated t-test on the per-fold scores of one dataset" in result.stdout


PROBE = """
import json, sys, time
from click.testing import CliRunner
from mlflow_bayescompare.cli import main
started = time.perf_counter()
result = CliRunner().invoke(main, sys.argv[1:])
seconds = time.perf_counter() - started
loaded = lambda *names: sorted(m for m in sys.modules if m.split(".")[0] in names)
print(json.dumps({"exit_code": result.exit_code, "output": result.output, "seconds": seconds,
                  "stan": loaded("stan", "httpstan", "cmdstanpy"), "heavy": loaded("sklearn", "arviz")}))
"""


@pytest.mark.slow  # a fresh interpreter importing MLflow
def test_nothing_compiles_on_the_one_dataset_path(client, tracking_uri, experiment_id, tmp_path):
    """With the Stan caches (the package's and httpstan's, under ``XDG_CACHE_HOME``) pointed at empty folders, a
    logged comparison on one dataset never imports a Stan backend and leaves the caches as empty as it found them:
    nothing was compiled.  Nor does the command import scikit-learn (not a dependency: the demo extra's) or arviz
    (seconds of imports the closed form does not need)."""
    log_uci(client, experiment_id, models=("nbc", "hnb"), datasets=ONE)
    import matplotlib

    caches = {"MLFLOW_BAYESCOMPARE_CACHE": tmp_path / "bayescompare-cache", "XDG_CACHE_HOME": tmp_path / "xdg"}
    for folder in caches.values():
        folder.mkdir()
    env = {**os.environ, **{k: str(v) for k, v in caches.items()}, "PYTHONPATH": os.pathsep.join(sys.path),
           "MPLCONFIGDIR": matplotlib.get_cachedir()}  # matplotlib's font cache stays where it is
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            "--model-a", "hnb", "--model-b", "nbc", "--json"]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, timeout=300)
    total = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.splitlines()[-1])
    assert probe["exit_code"] == 0, probe["output"]
    assert probe["stan"] == []
    assert probe["heavy"] == []  # scikit-learn is the demo extra's, arviz seconds to import: neither is needed
    assert "compiling" not in probe["output"] + done.stderr
    assert list(caches["MLFLOW_BAYESCOMPARE_CACHE"].rglob("*")) == []
    assert not (caches["XDG_CACHE_HOME"] / "httpstan").exists()
    report = json.loads(probe["output"].strip().splitlines()[-1])
    assert report["test"] == "correlated-t" and client.get_run(report["run_id"]).info.status == "FINISHED"
    print(f"one-dataset compare: {probe['seconds']:.1f} s in the command, {total:.1f} s with the interpreter's start")


def _readme_example(client, eid):
    """The README's example ("Which test when"): two models' 10 × 10-fold scores of one dataset, the folds' difficulty
    shared, mean difference +0.0059 (sd 0.0076)."""
    rng = np.random.default_rng(11)
    fold = rng.normal(0.85, 0.03, 100)
    a, b = fold + 0.006 + rng.normal(0, 0.006, 100), fold + rng.normal(0, 0.006, 100)
    assert (round((a - b).mean(), 4), round((a - b).std(ddof=1), 4)) == (0.0059, 0.0076)
    for model, scores in (("rf", a), ("svm", b)):
        log_cv_scores(model, "credit", scores, folds=10, repeats=10, experiment_id=eid, client=client)


@pytest.mark.parametrize("test, expected", [
    ("auto", (0.061, 0.939, 0.0)),
    pytest.param("hierarchical", (0.529, 0.089, 0.382), marks=pytest.mark.slow),  # Stan
])
def test_the_readme_example(client, tracking_uri, experiment_id, test, expected):
    """The numbers the README prints: on one dataset the hierarchical test cannot tell (its σ0 is not identified),
    the correlated t-test (auto) finds practical equivalence the most probable outcome."""
    _readme_example(client, experiment_id)
    outcome = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="rf", model_b="svm",
                           tracking_uri=tracking_uri, rope=0.01, seed=1, test=test, log=False)
    assert (outcome.p_a_better, outcome.p_rope, outcome.p_b_better) == pytest.approx(expected, abs=5e-4)
