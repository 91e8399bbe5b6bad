"""The ranking through MLflow: runs → BBT → a ranking run, from the API and the command line; the matrix parent
carries the same ranking."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from uci_runs import log_uci, uci_scores

from mlflow_bayescompare import InputError, rank_models
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.compare import compare_matrix, rank_runs

FAST = dict(chains=2, draws=400, warmup=400, seed=3)
MODELS = ("nbc", "hnb", "j48", "j48gr")


@pytest.fixture
def uci_experiment(client, experiment_id):
    log_uci(client, experiment_id, models=MODELS)
    return experiment_id


def _tidy() -> pd.DataFrame:
    rows = [{"dataset": d, "model": m, "repeat": i // 10, "fold": i % 10, "score": s}
            for (m, d), scores in uci_scores(MODELS).items() for i, s in enumerate(scores)]
    return pd.DataFrame(rows)


def test_rank_runs_logs_a_ranking_run_equal_to_the_direct_fit(client, tracking_uri, uci_experiment, tmp_path):
    outcome = rank_runs(experiment_ids=[uci_experiment], metric="accuracy", tracking_uri=tracking_uri, **FAST)

    direct = rank_models(_tidy(), models=sorted(MODELS), **FAST)
    pd.testing.assert_frame_equal(outcome.ranking.reset_index(drop=True), direct.ranking.reset_index(drop=True))
    assert outcome.ranking["p_best"].sum() == pytest.approx(1)
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["bayescompare.kind"] == "ranking"
    assert run.data.tags["bayescompare.best"] == outcome.ranking["model"].iloc[0]
    for row in outcome.ranking.itertuples():
        assert run.data.metrics[f"p_best.{row.model}"] == pytest.approx(row.p_best)
        assert run.data.metrics[f"mean_rank.{row.model}"] == pytest.approx(row.mean_rank)
    assert "P(best)" in run.data.tags["mlflow.note.content"]
    names = {a.path for a in client.list_artifacts(outcome.run_id)} | \
        {a.path for a in client.list_artifacts(outcome.run_id, "plots")}
    assert {"ranking.csv", "pairs.csv", "wins.csv", "report.html", "posterior.nc", "plots/critical_difference.png",
            "plots/critical_difference.svg"} <= names
    csv = pd.read_csv(client.download_artifacts(outcome.run_id, "ranking.csv", str(tmp_path)))
    assert list(csv["model"]) == list(outcome.ranking["model"])


def test_rank_command_json_and_require(tracking_uri, uci_experiment):
    argv = ["rank", "--tracking-uri", tracking_uri, "--experiment-id", uci_experiment, "--metric", "accuracy",
            "--chains", "2", "--draws", "400", "--warmup", "400", "--seed", "3", "--json"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"run_id", "experiment_id", "ranking", "pairs"} <= set(report)
    assert {"model", "p_best", "mean_rank"} <= set(report["ranking"][0])
    worst = report["ranking"][-1]["model"]
    result = CliRunner().invoke(main, [*argv, "--no-log", "--require", f"best={worst}"])
    assert result.exit_code == 1 and f"claim 'best={worst}' not supported" in result.stderr
    result = CliRunner().invoke(main, [*argv, "--no-log", "--require", "worst=nbc"])
    assert result.exit_code == 2 and "expected best=MODEL" in result.stderr


def test_fewer_than_three_models_point_to_compare(tracking_uri, uci_experiment):
    with pytest.raises(InputError, match="hierarchical_test|compare"):
        rank_runs(experiment_ids=[uci_experiment], metric="accuracy", models=["nbc", "hnb"],
                  tracking_uri=tracking_uri, log=False, **FAST)


def test_matrix_parent_carries_the_bbt_ranking(client, tracking_uri, uci_experiment):
    matrix = compare_matrix(experiment_ids=[uci_experiment], metric="accuracy", models=["nbc", "hnb", "j48"],
                            tracking_uri=tracking_uri, jobs=1, chains=2, draws=400, warmup=400, seed=3)
    assert matrix.bbt is not None and set(matrix.ranking["model"]) == {"nbc", "hnb", "j48"}
    assert np.isclose(matrix.ranking["p_best"].sum(), 1)
    parent = client.get_run(matrix.run_id)
    assert parent.data.tags["bayescompare.best"] == matrix.ranking["model"].iloc[0]
    assert "P(best)" in parent.data.tags["mlflow.note.content"]
    assert "P(row better than column)" in parent.data.tags["mlflow.note.content"]
    assert parent.data.metrics["p_best.hnb"] == pytest.approx(
        float(matrix.ranking.set_index("model").loc["hnb", "p_best"]))
