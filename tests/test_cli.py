"""The ``mlflow-bayescompare`` command line: output, exit codes, logging or not, ``matrix`` and ``demo``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from uci_runs import log_uci

from mlflow_bayescompare.cli import main

FAST = ["--chains", "2", "--draws", "500", "--seed", "1"]


@pytest.fixture
def uci_experiment(client, experiment_id):
    log_uci(client, experiment_id)
    return experiment_id


def _compare(tracking_uri, experiment_id, *args):
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            *FAST, *args]
    return CliRunner().invoke(main, argv)


def _comparison_runs(client, experiment_id):
    return client.search_runs([experiment_id], "tags.`bayescompare.kind` = 'comparison'")


def test_json_output_is_one_object(tracking_uri, uci_experiment, client):
    result = _compare(tracking_uri, uci_experiment, "--model-a", "hnb", "--model-b", "nbc", "--json")

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"p_a_better", "p_rope", "p_b_better", "verdict", "run_id", "experiment_id"} <= set(report)
    assert report["experiment_id"] == uci_experiment
    assert report["p_a_better"] + report["p_rope"] + report["p_b_better"] == pytest.approx(1)
    [run] = _comparison_runs(client, uci_experiment)
    assert run.info.run_id == report["run_id"] and run.info.status == "FINISHED"


def test_text_output_and_no_log(tracking_uri, uci_experiment, client):
    result = _compare(tracking_uri, uci_experiment, "--model-a", "hnb", "--model-b", "nbc", "--no-log")

    assert result.exit_code == 0, result.output
    assert "P(hnb better)" in result.stdout and "Verdict: " in result.stdout
    assert "Comparison run" not in result.stdout
    assert _comparison_runs(client, uci_experiment) == []


@pytest.mark.parametrize(
    "models, claim, code",
    [(("hnb", "nbc"), "a-better", 0), (("hnb", "nbc"), "not-worse", 0), (("nbc", "hnb"), "a-better", 1),
     (("hnb", "nbc"), "equivalent", 1)],
)
def test_require_exit_codes(tracking_uri, uci_experiment, models, claim, code):
    result = _compare(tracking_uri, uci_experiment, "--model-a", models[0], "--model-b", models[1], "--no-log",
                      "--require", claim, "--json")

    assert result.exit_code == code, result.output
    report = json.loads(result.stdout)  # printed whether or not the claim holds
    assert report["require"]["claim"] == claim and report["require"]["supported"] is (code == 0)
    if code:
        assert f"Error: claim '{claim}' not supported" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model-a", "hnb", "--model-b", "svm"], "model 'svm' is in no run"),
        (["--model-a", "hnb", "--model-b", "nbc", "--metric", "f1"], "metric 'f1' not found"),
        (["--model-a", "hnb", "--model-b", "nbc", "--experiment-name", "nope"], "no experiment named 'nope'"),
        (["--model-a", "hnb", "--model-b", "nbc", "--filter", "tags.x ~ 3"], "invalid filter string"),
        (["--model-a", "hnb", "--model-b", "nbc", "--rope", "-1"], "Invalid value for '--rope'"),
    ],
)
def test_bad_input_exits_2_with_a_message(tracking_uri, uci_experiment, args, message):
    result = _compare(tracking_uri, uci_experiment, *args)

    assert result.exit_code == 2, result.output
    assert "Error" in result.stderr and message in result.stderr
    assert "Traceback" not in result.output


def test_strict_fails_and_tags_the_run_on_sampler_problems(tracking_uri, uci_experiment, client):
    # 2 chains of 10 draws cannot reach R-hat <= 1.01
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", uci_experiment, "--metric", "accuracy",
            "--model-a", "hnb", "--model-b", "nbc", "--chains", "2", "--draws", "10", "--seed", "3", "--strict"]
    result = CliRunner().invoke(main, argv)

    assert result.exit_code == 1, result.output
    assert "Error: --strict: sampler problems: R-hat" in result.stderr
    [run] = _comparison_runs(client, uci_experiment)
    assert run.data.tags["bayescompare.strict"].startswith("failed: R-hat")


def test_help_documents_exit_codes():
    for argv in ([], ["compare"], ["matrix"], ["demo"]):
        result = CliRunner().invoke(main, [*argv, "--help"])
        assert result.exit_code == 0 and "Exit codes:" in result.output and "2  bad input" in result.output


def test_matrix_command(tracking_uri, uci_experiment, client):
    argv = ["matrix", "--tracking-uri", tracking_uri, "--experiment-name", "cv", "--metric", "accuracy",
            "--models", "nbc,hnb,j48", "--jobs", "1", "--json", *FAST]
    result = CliRunner().invoke(main, argv)

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [p["model_a"] + "-" + p["model_b"] for p in report["pairs"]] == ["nbc-hnb", "nbc-j48", "hnb-j48"]
    assert report["p_better"]["hnb"]["nbc"] == pytest.approx(report["pairs"][0]["p_b_better"])
    assert report["p_better"]["nbc"]["nbc"] is None
    parent = client.get_run(report["run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["bayescompare.kind"] == "matrix"
    assert len(_comparison_runs(client, uci_experiment)) == 3


def test_compare_as_a_subprocess_honours_the_environment(tracking_uri, uci_experiment):
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri}
    argv = [sys.executable, "-m", "mlflow_bayescompare.cli", "compare", "--experiment-name", "cv", "--metric",
            "accuracy", "--model-a", "hnb", "--model-b", "nbc", "--json", "--require", "a-better", *FAST]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout holds the JSON object and nothing else
    assert report["experiment_id"] == uci_experiment and report["require"]["supported"] is True
    assert MlflowClient(tracking_uri).get_run(report["run_id"]).info.status == "FINISHED"


def test_demo_end_to_end_in_a_fresh_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)

    result = CliRunner().invoke(main, ["demo", "--datasets", "6", "--chains", "2", "--draws", "500"])

    assert result.exit_code == 0, result.output
    assert (tmp_path / "mlflow.db").exists()
    assert "Verdict: " in result.stdout
    assert "mlflow server --app-name bayescompare --backend-store-uri sqlite:///mlflow.db" in result.stdout
    assert "bayescompare: sampling lda vs cart on 6 datasets" in result.stderr  # the stage, as compare shows it
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("bayescompare-demo")
    [run] = client.search_runs([experiment.experiment_id], "tags.`bayescompare.kind` = 'comparison'")
    assert run.info.status == "FINISHED" and run.data.metrics["n_datasets"] == 6
    assert f"http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}" in result.stdout
    assert run.data.metrics["sampling_seconds"] < 60 and "compile_seconds" in run.data.metrics
    cv_run = client.search_runs([experiment.experiment_id], "tags.model = 'lda'")[0]
    assert cv_run.data.metrics["accuracy_mean"] == pytest.approx(
        np.mean([m.value for m in client.get_metric_history(cv_run.info.run_id, "accuracy")]))
    assert run.info.end_time - run.info.start_time > 1000  # dated from the start of the work, not its logging


@pytest.mark.server
def test_compare_against_a_server(server_client, server_experiment_id):
    log_uci(server_client, server_experiment_id, models=("nbc", "hnb"))
    result = _compare(server_client.tracking_uri, server_experiment_id, "--model-a", "hnb", "--model-b", "nbc",
                      "--json")

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert server_client.get_run(report["run_id"]).info.status == "FINISHED"
