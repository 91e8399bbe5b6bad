"""The Python API end to end on a real sqlite store: compare_runs, compare_matrix, require."""

from __future__ import annotations

import html
from types import SimpleNamespace

import pandas as pd
import pytest
from uci_runs import DATASETS, artifact_paths, log_uci, uci_scores

from mlflow_bayescompare import InputError
from mlflow_bayescompare.families.hierarchical.run import PAIR_SUMMARY_ARTIFACTS
from mlflow_bayescompare.families.ranking.hierarchical_k.report import DIFFERS as JOINT_DIFFERS
from mlflow_bayescompare.pipeline.compare import compare_matrix, compare_runs, require
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.runs import runlog
from mlflow_bayescompare.shared.run_content import NO_REPORT_NOTE

FAST = dict(chains=2, draws=500, seed=1)


@pytest.fixture
def uci_experiment(client, experiment_id):
    """nbc, hnb and j48 on six UCI datasets, 10x10 CV, steps layout."""
    return experiment_id, log_uci(client, experiment_id)


@pytest.mark.slow
def test_compare_runs_logs_a_comparison_run(client, tracking_uri, uci_experiment, tmp_path):
    experiment_id, runs = uci_experiment

    outcome = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="hnb", model_b="nbc",
                           tracking_uri=tracking_uri, **FAST)

    assert outcome.p_a_better + outcome.p_rope + outcome.p_b_better == pytest.approx(1)
    assert outcome.p_a_better > 0.9  # hnb beats nbc by 0.03-0.05 on each of these datasets
    assert (outcome.layout, outcome.tensor.datasets) == ("steps", [f"uci{d}" for d in (20, 21, 24, 27, 28, 30)])
    assert outcome.experiment_id == experiment_id
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["bayescompare.verdict"] == outcome.verdict
    assert run.data.metrics["p_a_better"] == pytest.approx(outcome.p_a_better)
    path = client.download_artifacts(outcome.run_id, "cv_differences.csv", str(tmp_path))
    cv = pd.read_csv(path)
    assert set(cv["run_id_a"]) == {rid for (m, _), rid in runs.items() if m == "hnb"}
    assert set(cv["run_id_b"]) == {rid for (m, _), rid in runs.items() if m == "nbc"}
    assert outcome.to_dict()["run_id"] == outcome.run_id


def test_same_seed_same_probabilities_and_no_log(client, tracking_uri, uci_experiment):
    experiment_id, _ = uci_experiment
    kwargs = dict(experiment_ids=[experiment_id], metric="accuracy", model_a="nbc", model_b="j48",
                  tracking_uri=tracking_uri, log=False, **FAST)

    first, second = compare_runs(**kwargs), compare_runs(**kwargs)

    assert (first.p_a_better, first.p_rope) == (second.p_a_better, second.p_rope)
    assert first.run_id is None and first.experiment_id is None
    assert client.search_runs([experiment_id], "tags.`bayescompare.kind` = 'comparison'") == []


def test_target_experiment_and_experiment_by_name(client, tracking_uri, uci_experiment, tmp_path):
    experiment_id, _ = uci_experiment
    target = client.create_experiment("comparisons", artifact_location=(tmp_path / "comparisons").as_uri())

    outcome = compare_runs(experiment_names=["cv"], metric="accuracy", model_a="hnb", model_b="nbc",
                           target_experiment_id=target, tracking_uri=tracking_uri, **FAST)

    assert outcome.experiment_id == target
    assert client.get_run(outcome.run_id).data.tags["bayescompare.source_experiment_ids"] == experiment_id


def test_prestarted_run_fails_with_the_input_error(client, tracking_uri, uci_experiment):
    experiment_id, _ = uci_experiment
    run_id = runlog.start_run(client, experiment_id, name="hnb vs svm · accuracy",
                              tags={"bayescompare.kind": "comparison"})

    with pytest.raises(InputError, match="svm"):
        compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="hnb", model_b="svm",
                     tracking_uri=tracking_uri, run_id=run_id, **FAST)

    run = client.get_run(run_id)
    assert run.info.status == "FAILED"
    assert "svm" in run.data.tags["bayescompare.error"]


@pytest.mark.slow
def test_compare_matrix_logs_parent_and_children(client, tracking_uri, uci_experiment, tmp_path):
    experiment_id, _ = uci_experiment

    matrix = compare_matrix(experiment_ids=[experiment_id], metric="accuracy", models=["nbc", "hnb", "j48"],
                            tracking_uri=tracking_uri, jobs=2, **FAST)

    assert list(matrix.pairs) == [("nbc", "hnb"), ("nbc", "j48"), ("hnb", "j48")]
    assert matrix.summary.better.loc["hnb", "nbc"] == pytest.approx(matrix.pairs["nbc", "hnb"].p_b_better)
    assert set(matrix.ranking["model"]) == {"nbc", "hnb", "j48"}  # the ranking of the three (hierarchical model)
    assert list(matrix.summary.ranking["rank"]) == [1, 2, 3]  # and the pairs' own summary
    # the ranking's pairs are the matrix's pair tests themselves (one answer, nothing fitted twice)
    assert matrix.bbt.settings["pairs_from"] == "each pair's own fit"
    for r in matrix.bbt.pairs.itertuples():
        pair = matrix.pairs.get((r.better, r.worse)) or matrix.pairs[(r.worse, r.better)]
        forward = (pair.model_a, pair.model_b) == (r.better, r.worse)
        expected = (pair.p_a_better, pair.p_rope, pair.p_b_better)
        assert (r.p_better, r.p_rope, r.p_worse) == pytest.approx(expected if forward else expected[::-1], abs=1e-9)
    parent = client.get_run(matrix.run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["bayescompare.kind"] == "matrix"
    assert parent.data.tags["bayescompare.best"] == matrix.ranking["model"].iloc[0]
    assert "| rank | model | P(best) |" in parent.data.tags["mlflow.note.content"]
    # why its pairs and the ranking's may differ (in words: the description escapes the sentence's punctuation)
    assert JOINT_DIFFERS in html.unescape(parent.data.tags["mlflow.note.content"])
    assert {"matrix.png", "p_better.csv", "p_rope.csv", "ranking.csv", "ranking.md", "pairs.csv"} <= \
        {a.path for a in client.list_artifacts(matrix.run_id)}
    ranking = pd.read_csv(client.download_artifacts(matrix.run_id, "ranking.csv", str(tmp_path)))
    assert list(ranking["model"]) == list(matrix.ranking["model"])
    children = client.search_runs([experiment_id], f"tags.`mlflow.parentRunId` = '{matrix.run_id}'")
    assert sorted(r.info.run_name for r in children) == sorted(
        ["nbc vs hnb · accuracy", "nbc vs j48 · accuracy", "hnb vs j48 · accuracy"])
    assert {r.info.status for r in children} == {"FINISHED"}
    assert {r.info.run_id for r in children} == {o.run_id for o in matrix.pairs.values()}
    # without pair_reports, a pair's run holds its numbers, tables and posterior, and says where the rest is
    for child in children:
        assert artifact_paths(client, child.info.run_id) == sorted(PAIR_SUMMARY_ARTIFACTS)
        assert child.data.tags["bayescompare.report"] == "none"
        assert NO_REPORT_NOTE in child.data.tags["mlflow.note.content"]
        assert sum(child.data.metrics[k] for k in ("p_a_better", "p_rope", "p_b_better")) == pytest.approx(1)
    shrinkage = pd.read_csv(client.download_artifacts(children[0].info.run_id, "shrinkage.csv", str(tmp_path)))
    assert "pareto_k" not in shrinkage and "conflict" in shrinkage  # the PSIS-LOO check belongs to the report
    assert all("pareto_k" not in o.result.shrinkage for o in matrix.pairs.values())
    # a matrix's pairs warm up for 300 iterations (a comparison for 1000), and what the description promises: the
    # pair compared on its own with the pair run's params gives the pair's numbers
    pair = matrix.pairs["nbc", "j48"]
    params = client.get_run(pair.run_id).data.params
    assert (params["warmup"], params["draws"], params["chains"], params["seed"]) == ("300", "500", "2", "1")
    alone = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="nbc", model_b="j48",
                         tracking_uri=tracking_uri, log=False, **{k: int(params[k]) for k in FAST},
                         warmup=int(params["warmup"]))
    assert (alone.p_a_better, alone.p_rope, alone.p_b_better) == (pair.p_a_better, pair.p_rope, pair.p_b_better)
    assert "pareto_k" in alone.result.shrinkage
    assert compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="nbc", model_b="j48",
                        tracking_uri=tracking_uri, log=False, **FAST).settings["warmup"] == 1000


def test_a_matrix_stops_at_a_bad_pair_before_logging_anything(client, tracking_uri, experiment_id):
    """The pairs are handed to the workers as their data are read, so the first pairs sample while the last are
    checked: a bad one (j48 scored on 20 × 5 folds of the last dataset, the others on 10 × 10) stops the workers
    and is refused by name, and no run is written."""
    log_uci(client, experiment_id, models=("nbc", "hnb"))
    log_uci(client, experiment_id, models=("j48",), datasets=DATASETS[:-1])
    (key, scores), = uci_scores(("j48",), DATASETS[-1:]).items()
    log_cv_scores(*key, scores, metric="accuracy", folds=5, repeats=20, experiment_id=experiment_id, client=client)
    with pytest.raises(InputError, match=rf"{DATASETS[-1]}.*fold count differs") as raised:
        compare_matrix(experiment_ids=[experiment_id], metric="accuracy", models=["nbc", "hnb", "j48"],
                       tracking_uri=tracking_uri, jobs=2, chains=2, draws=100_000, seed=1)
    assert "j48" in str(raised.value)
    assert client.search_runs([experiment_id], "tags.`bayescompare.kind` IS NOT NULL") == []


@pytest.mark.slow
def test_a_ragged_matrix_is_ranked_by_the_hierarchical_model_and_says_so(client, tracking_uri, experiment_id, caplog):
    """j48 lacks the last dataset: its pairs use the datasets both models have, and the ranking is the hierarchical
    model's, which fits that dataset with the models it has (a warning names what j48 lacks)."""
    log_uci(client, experiment_id, models=("nbc", "hnb"))
    log_uci(client, experiment_id, models=("j48",), datasets=DATASETS[:-1])
    matrix = compare_matrix(experiment_ids=[experiment_id], metric="accuracy", models=["nbc", "hnb", "j48"],
                            tracking_uri=tracking_uri, log=False, jobs=1, **FAST)
    assert matrix.bbt.model == "hierarchical" and set(matrix.ranking["model"]) == {"nbc", "hnb", "j48"}
    assert matrix.bbt.settings["lacking"] == {"j48": ["uci30"]} and "uci30" in matrix.bbt.settings["datasets"]
    assert dict(matrix.pairs["nbc", "j48"].tensor.left_out) == {"uci30": "no scores of 'j48'"}
    assert "'j48' lacks uci30" in caplog.text and "Bradley-Terry" not in caplog.text


def test_matrix_needs_two_distinct_models(tracking_uri):
    with pytest.raises(InputError, match="at least 2 models"):
        compare_matrix(experiment_ids=["0"], metric="accuracy", models=["nbc"], tracking_uri=tracking_uri)
    with pytest.raises(InputError, match="more than once"):
        compare_matrix(experiment_ids=["0"], metric="accuracy", models=["nbc", "nbc"], tracking_uri=tracking_uri)


@pytest.mark.parametrize(
    "probs, claim, expected",
    [
        ((0.96, 0.03, 0.01), "a-better", True),
        ((0.90, 0.09, 0.01), "a-better", False),
        ((0.90, 0.06, 0.04), "not-worse", True),
        ((0.50, 0.40, 0.10), "not-worse", False),
        ((0.01, 0.97, 0.02), "equivalent", True),
        ((0.30, 0.60, 0.10), "equivalent", False),
    ],
)
def test_require(probs, claim, expected):
    outcome = SimpleNamespace(p_a_better=probs[0], p_rope=probs[1], p_b_better=probs[2])
    assert require(outcome, claim, threshold=0.95) is expected


def test_require_rejects_unknown_claims():
    with pytest.raises(InputError, match="unknown claim"):
        require(SimpleNamespace(p_a_better=1, p_rope=0, p_b_better=0), "b-better")


def test_require_best_of_a_ranking_at_its_threshold():
    ranking = SimpleNamespace(ranking=pd.DataFrame({"model": ["rf", "svm"], "p_best": [0.96, 0.04]}),
                              settings={"threshold": 0.95})
    assert require(ranking, "best=rf") is True and require(ranking, "best=svm") is False
    assert require(ranking, "best=rf", threshold=0.99) is False
    with pytest.raises(InputError, match="no such model among rf, svm"):
        require(ranking, "best=knn")


def test_require_the_hierarchical_rankings_claims_read_their_columns():
    table = pd.DataFrame({"model": ["rf", "svm", "prod"], "p_best": [0.7, 0.2, 0.1],
                          "p_none_better": [0.9, 0.5, 0.97], "p_not_worse_than_leader": [1.0, 0.96, 0.4]})
    ranking = SimpleNamespace(ranking=table, settings={"threshold": 0.95})
    assert require(ranking, "none-better=prod") is True and require(ranking, "none-better=rf") is False
    assert require(ranking, " not-worse-than-best = svm") is True
    assert require(ranking, "not-worse-than-best=prod") is False
    with pytest.raises(InputError, match=r"--require none-better=knn: no such model among rf, svm, prod"):
        require(ranking, "none-better=knn")
    bbt = SimpleNamespace(ranking=table[["model", "p_best"]], settings={"threshold": 0.95})
    with pytest.raises(InputError, match="needs the hierarchical model's ranking"):
        require(bbt, "none-better=prod")
