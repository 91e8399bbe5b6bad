"""Runs that logged one score per (model, dataset): compare and matrix pick the Bayesian signed-rank test, say so,
and log their runs; --test forces either test."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from uci_runs import log_means, log_uci, uci_scores

from mlflow_bayescompare import signed_rank_test
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.pipeline.compare import compare_matrix, compare_runs


def test_means_only_runs_get_the_signed_rank_test(client, tracking_uri, experiment_id, tmp_path):
    means = log_means(client, experiment_id)
    outcome = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="hnb", model_b="nbc",
                           tracking_uri=tracking_uri, seed=4)
    datasets = sorted({d for _, d in means})
    direct = signed_rank_test([means["hnb", d] for d in datasets], [means["nbc", d] for d in datasets],
                              datasets=datasets, model_a="hnb", model_b="nbc", seed=4)
    assert outcome.layout == "means" and outcome.result.test == "signed-rank"
    assert (outcome.p_a_better, outcome.p_rope, outcome.p_b_better) == pytest.approx(
        (direct.p_a_better, direct.p_rope, direct.p_b_better))
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["bayescompare.test"] == "signed-rank"
    assert "signed-rank" in run.data.tags["mlflow.note.content"]
    assert run.data.metrics["p_a_better"] == pytest.approx(outcome.p_a_better)
    assert {a.path for a in client.list_artifacts(outcome.run_id)} >= {"report.html", "report.md", "summary.json",
                                                                       "dataset_means.csv", "plots"}


def test_cli_says_which_test_answered_and_test_can_be_forced(client, tracking_uri, experiment_id):
    log_means(client, experiment_id)
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            "--model-a", "hnb", "--model-b", "nbc", "--seed", "4", "--no-log"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert "Bayesian signed-rank test on the per-dataset means" in result.stdout
    result = CliRunner().invoke(main, [*argv, "--json"])
    assert json.loads(result.stdout)["test"] == "signed-rank"
    result = CliRunner().invoke(main, [*argv, "--test", "hierarchical"])
    assert result.exit_code == 2 and "signed-rank" in result.stderr  # one score per run: no folds to pair


def _direct(means, a, b, seed):
    """The signed-rank test of ``a`` against ``b`` on the means, called directly."""
    datasets = sorted({d for _, d in means})
    return signed_rank_test([means[a, d] for d in datasets], [means[b, d] for d in datasets], datasets=datasets,
                            model_a=a, model_b=b, seed=seed)


@pytest.mark.slow
def test_matrix_on_means_only_runs_compares_every_pair_by_the_signed_rank_test(client, tracking_uri,
                                                                              experiment_id):
    means = log_means(client, experiment_id, ("nbc", "hnb", "j48"))
    outcome = compare_matrix(experiment_ids=[experiment_id], metric="accuracy", models=["nbc", "hnb", "j48"],
                             tracking_uri=tracking_uri, seed=4, jobs=1)
    assert outcome.summary.tests == ("signed-rank",) and outcome.bbt is not None  # the BBT ranking reads means too
    for (a, b), pair in outcome.pairs.items():
        direct = _direct(means, a, b, seed=4)
        assert pair.result.test == "signed-rank"
        assert (pair.p_a_better, pair.p_rope, pair.p_b_better) == pytest.approx(
            (direct.p_a_better, direct.p_rope, direct.p_b_better)), (a, b)
        child = client.get_run(pair.run_id)
        assert child.info.status == "FINISHED" and child.data.tags["bayescompare.test"] == "signed-rank"
        assert child.data.tags["mlflow.parentRunId"] == outcome.run_id
        assert "dataset_means.csv" in {a.path for a in client.list_artifacts(pair.run_id)}
    parent = client.get_run(outcome.run_id)
    assert parent.info.status == "FINISHED"
    assert "Bayesian signed-rank test on the per-dataset means" in parent.data.tags["mlflow.note.content"]
    assert parent.data.metrics["n_datasets"] == 6 and "p_best.hnb" in parent.data.metrics


def test_cli_matrix_says_which_test_compared_the_pairs(client, tracking_uri, experiment_id):
    log_means(client, experiment_id, ("nbc", "hnb", "j48"))
    argv = ["matrix", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            "--seed", "4", "--jobs", "1", "--no-log"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert "Pairs: Bayesian signed-rank test on the per-dataset means" in result.stdout
    result = CliRunner().invoke(main, [*argv, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["test"] == "signed-rank"
    result = CliRunner().invoke(main, [*argv, "--test", "hierarchical"])
    assert result.exit_code == 2 and "--test signed-rank" in result.stderr  # no folds to pair


def test_signed_rank_test_can_be_forced_on_per_fold_runs(client, tracking_uri, experiment_id):
    log_uci(client, experiment_id, models=("nbc", "hnb"))
    outcome = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="hnb", model_b="nbc",
                           tracking_uri=tracking_uri, seed=4, test="signed-rank", log=False)
    means = {key: float(np.mean(scores)) for key, scores in uci_scores(("nbc", "hnb")).items()}
    direct = _direct(means, "hnb", "nbc", seed=4)
    assert outcome.layout == "steps" and outcome.result.test == "signed-rank"
    assert (outcome.p_a_better, outcome.p_rope, outcome.p_b_better) == pytest.approx(
        (direct.p_a_better, direct.p_rope, direct.p_b_better))
