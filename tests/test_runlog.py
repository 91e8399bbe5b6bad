"""The comparison run: its name, tags, params, metrics and artifacts, and what a failure leaves behind."""

from __future__ import annotations

import json

import arviz as az
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from servers import gateway
from uci_runs import artifact_paths, uci_scores

from mlflow_bayescompare import hierarchical_test
from mlflow_bayescompare.families.hierarchical import run as hierarchical_run
from mlflow_bayescompare.runs import runlog
from mlflow_bayescompare.scores.tensor import from_tidy
from mlflow_bayescompare.shared import run_content
from mlflow_bayescompare.vocabulary.errors import InputError

TAGS = {
    "bayescompare.kind", "bayescompare.model_a", "bayescompare.model_b", "bayescompare.metric",
    "bayescompare.verdict", "bayescompare.decision", "bayescompare.source_experiment_ids", "bayescompare.stage",
    "bayescompare.diagnostics", "bayescompare.test", "mlflow.note.content",
}
PARAMS = {"rope", "rho", "folds", "prior", "chains", "draws", "warmup", "seed", "backend", "threshold",
          "greater_is_better", "test", "sensitivity", "std_upper_bound", "alpha_bounds", "beta_bounds", "layout",
          "version.mlflow", "version.mlflow-bayescompare", "version.stan"}
METRICS = {"p_a_better", "p_rope", "p_b_better", "p_delta0_a_better", "p_delta0_rope", "p_delta0_b_better",
           "odds_a_better_vs_b_better", "odds_a_better_vs_rope", "odds_rope_vs_b_better", "delta0_mean",
           "delta0_hdi_low", "delta0_hdi_high", "sigma0_mean", "nu_median", "signed_rank_p", "n_datasets", "rhat_max",
           "ess_bulk_min", "divergences", "sampling_seconds", "compile_seconds"}


@pytest.fixture(scope="module")
def fitted():
    """hnb vs nbc on six UCI datasets (source run ids made up: runlog only copies them)."""
    rows = [
        {"dataset": ds, "model": m, "fold": i, "score": s, "run_id": f"run-{m}-{ds}", "folds": 10}
        for (m, ds), scores in uci_scores(("nbc", "hnb")).items() for i, s in enumerate(scores)
    ]
    tensor = from_tidy(pd.DataFrame(rows), "hnb", "nbc")
    return hierarchical_test(tensor, rope=0.01, chains=2, draws=500, seed=1), tensor


def _log(client, experiment_id, fitted, run_id=None):
    result, tensor = fitted
    with hierarchical_run.bundle(result, tensor, metric="accuracy", experiment_ids=[experiment_id],
                                   layout="steps", run_id=run_id) as bundle:
        return runlog.log_bundle(client, bundle, experiment_id=experiment_id, run_id=run_id)


def _start(client, experiment_id, model_a, model_b, metric):
    return runlog.start_run(client, experiment_id, name=run_content.run_name(model_a, model_b, metric),
                            tags={"bayescompare.kind": "comparison", "bayescompare.model_a": model_a,
                                  "bayescompare.model_b": model_b, "bayescompare.metric": metric})


@pytest.mark.slow
def test_comparison_run_holds_everything(client, experiment_id, fitted, tmp_path):
    result, tensor = fitted
    run = client.get_run(_log(client, experiment_id, fitted))

    assert run.info.status == "FINISHED"
    assert run.info.run_name == "hnb vs nbc · accuracy"
    assert run.info.experiment_id == experiment_id
    tags = {k: v for k, v in run.data.tags.items() if k.startswith(("bayescompare.", "mlflow.note"))}
    assert set(tags) == TAGS
    assert tags["bayescompare.kind"] == "comparison" and tags["bayescompare.test"] == "hierarchical"
    assert (tags["bayescompare.model_a"], tags["bayescompare.model_b"]) == ("hnb", "nbc")
    assert tags["bayescompare.metric"] == "accuracy"
    assert tags["bayescompare.verdict"] == result.verdict
    assert tags["bayescompare.decision"] == result.decision
    assert tags["bayescompare.source_experiment_ids"] == experiment_id
    assert tags["bayescompare.stage"] == "done"
    assert result.verdict in tags["mlflow.note.content"]

    params = run.data.params
    assert PARAMS <= set(params)
    assert (params["rope"], params["chains"], params["draws"], params["seed"]) == ("0.01", "2", "500", "1")
    assert (params["folds"], params["rho"], params["layout"], params["prior"]) == ("10", "0.1", "steps",
                                                                                   "hierarchical")
    assert params["greater_is_better"] == "True"
    assert all(len(v) <= 6000 for v in params.values())

    metrics = run.data.metrics
    assert set(metrics) == METRICS
    assert metrics["p_a_better"] == pytest.approx(result.p_a_better)
    assert metrics["p_a_better"] + metrics["p_rope"] + metrics["p_b_better"] == pytest.approx(1)
    assert metrics["n_datasets"] == 6

    assert artifact_paths(client, run.info.run_id) == sorted(hierarchical_run.COMPARISON_ARTIFACTS)
    local = tmp_path / "download"
    local.mkdir()
    client.download_artifacts(run.info.run_id, "", str(local))
    assert json.loads((local / "summary.json").read_text()) == result.to_dict()
    cv = pd.read_csv(local / "cv_differences.csv")
    assert list(cv.columns) == ["dataset", "repeat", "fold", "score_a", "score_b", "diff", "run_id_a", "run_id_b"]
    assert len(cv) == 600 and set(cv["run_id_a"]) == {f"run-hnb-uci{d}" for d in (20, 21, 24, 27, 28, 30)}
    assert len(pd.read_csv(local / "shrinkage.csv")) == 6
    posterior = az.from_netcdf(str(local / "posterior.nc")).posterior
    assert posterior["delta"].shape == (2, 500, 6)
    assert json.loads((local / "stan" / "data.json").read_text())["q"] == 6
    assert (local / "stan" / "hierarchical.stan").read_text().startswith("//")
    html = (local / "report.html").read_text()
    assert "data:image/png;base64," in html and "<script src=" not in html
    assert (local / "plots" / "simplex.png").read_bytes()[:4] == b"\x89PNG"


def test_failure_while_logging_leaves_a_failed_run(client, fitted, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the artifact directory should be")
    broken = client.create_experiment("broken", artifact_location=(blocker / "artifacts").as_uri())

    with pytest.raises(Exception):  # noqa: B017 - any error of the store; the test is the run it leaves
        _log(client, broken, fitted)

    [run] = client.search_runs([broken])
    assert run.info.status == "FAILED"
    assert run.data.tags["bayescompare.stage"] == "failed"
    assert "not-a-directory" in run.data.tags["bayescompare.error"]
    assert run.data.metrics["p_a_better"] == pytest.approx(fitted[0].p_a_better)  # logged before the artifacts


def test_failure_while_computing_creates_no_run(client, experiment_id, fitted):
    result, tensor = fitted
    broken = type(tensor)(tensor.model_a, tensor.model_b, tensor.datasets, tensor.diffs, tensor.folds, table=None)

    with pytest.raises(Exception):  # noqa: B017 - any error; the test is that no run is left
        _log(client, experiment_id, (result, broken))

    assert client.search_runs([experiment_id]) == []


def test_prestarted_run_is_filled_and_staged(client, experiment_id, fitted):
    run_id = _start(client, experiment_id, "hnb", "nbc", "accuracy")
    run = client.get_run(run_id)
    assert (run.info.status, run.data.tags["bayescompare.stage"]) == ("RUNNING", "queued")
    runlog.set_stage(client, run_id, "sampling")
    assert client.get_run(run_id).data.tags["bayescompare.stage"] == "sampling"

    assert _log(client, experiment_id, fitted, run_id=run_id) == run_id

    run = client.get_run(run_id)
    assert (run.info.status, run.data.tags["bayescompare.stage"]) == ("FINISHED", "done")
    assert len(client.search_runs([experiment_id])) == 1
    assert artifact_paths(client, run_id) == sorted(hierarchical_run.COMPARISON_ARTIFACTS)


def test_the_run_says_which_stages_the_work_went_past_without_doing(client, experiment_id):
    """A job whose Stan program was cached goes from fetching to sampling: its run says compiling was skipped (the
    page then does not light it); a later compile (a matrix's ranking program) takes it back off the list."""
    run_id = _start(client, experiment_id, "a", "b", "m")
    record = runlog.stage_recorder(client, run_id)
    skipped = []
    for stage in ("fetching", "sampling", "compiling", "sampling", "reporting"):
        record(stage)
        tags = client.get_run(run_id).data.tags
        skipped.append((tags["bayescompare.stage"], tags.get("bayescompare.stages_skipped")))
    assert skipped == [("fetching", None), ("sampling", "compiling"), ("compiling", ""), ("sampling", ""),
                       ("reporting", "")]


def test_fail_run_records_the_error(client, experiment_id):
    run_id = _start(client, experiment_id, "a", "b", "m")
    runlog.fail_run(client, run_id, ValueError("no runs for model 'b'"))
    run = client.get_run(run_id)
    assert run.info.status == "FAILED"
    assert run.data.tags["bayescompare.error"] == "no runs for model 'b'"


def test_a_failed_run_records_no_password(client, experiment_id, monkeypatch):
    """MLflow's own errors name the tracking URI as given (``API request to http://user:PW@host/… failed``): the
    run's error tag holds the error without the password.  A real request to a server answering 500."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with gateway(500) as host, pytest.raises(MlflowException) as failed:
        MlflowClient(f"http://u:pre@TAIL-pw@{host}").get_experiment("1")
    run_id = _start(client, experiment_id, "a", "b", "m")
    runlog.fail_run(client, run_id, failed.value)
    error = client.get_run(run_id).data.tags["bayescompare.error"]
    assert error.startswith(f"API request to http://{host}/api/2.0/mlflow/experiments/get failed"), error
    assert "pre@" not in error and "TAIL-pw" not in error


def test_sigterm_while_logging_leaves_a_failed_run_saying_so(client, experiment_id, fitted):
    """The CLI's SIGTERM handler, installed in this process, and a real SIGTERM sent to it as logging starts."""
    import os
    import signal

    from mlflow_bayescompare import cli_signals

    result, tensor = fitted
    previous = signal.getsignal(signal.SIGTERM)
    try:
        cli_signals.stop_on_sigterm()
        with hierarchical_run.bundle(result, tensor, metric="accuracy", experiment_ids=[experiment_id]) as bundle:
            with pytest.raises(SystemExit) as stopped:
                runlog.log_bundle(client, bundle, experiment_id=experiment_id,
                                  progress=lambda stage, detail=None: os.kill(os.getpid(), signal.SIGTERM))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stopped.value.code == 143
    [run] = client.search_runs([experiment_id])
    assert (run.info.status, run.data.tags["bayescompare.error"]) == ("FAILED", "stopped by SIGTERM")


def test_a_target_number_is_an_id_and_never_a_new_name(client, experiment_id):
    """The one rule (:func:`runlog.choose_target`) on a plain store: a number is the id of an existing experiment,
    refused when it is also another experiment's name, and never the name of a new one."""
    other = client.create_experiment("other")
    assert runlog.resolve_target(client, other, [experiment_id]) == other
    assert runlog.resolve_target(client, "other", [experiment_id]) == other
    created = runlog.resolve_target(client, "comparisons", [experiment_id])
    assert client.get_experiment(created).name == "comparisons"
    absent = str(int(created) + 100)
    with pytest.raises(InputError) as refused:
        runlog.resolve_target(client, absent, [experiment_id])
    assert str(refused.value) == f"no experiment with id '{absent}'; a new target experiment needs a name that " \
                                 "is not a number"
    assert client.get_experiment_by_name(absent) is None
    squatted = client.create_experiment(other)  # MLflow itself allows a name like an id
    with pytest.raises(InputError, match=f"target experiment '{other}' is ambiguous"):
        runlog.resolve_target(client, other, [experiment_id])
    assert runlog.resolve_target(client, squatted, [experiment_id]) == squatted  # its id is not ambiguous
    client.delete_experiment(created)
    with pytest.raises(InputError, match="experiment 'comparisons' is deleted"):
        runlog.resolve_target(client, "comparisons", [experiment_id])


def test_long_description_is_cut_at_a_line():
    text = "\n".join(f"| row {i} | {'x' * 50} |" for i in range(400))
    cut = run_content.fit_tag(text)
    assert len(cut) <= 8000 and cut.endswith("report.md)") and "| row 0 |" in cut


@pytest.mark.server
@pytest.mark.slow
def test_comparison_run_on_a_server(server_client, server_experiment_id, fitted):
    run_id = _log(server_client, server_experiment_id, fitted)
    run = MlflowClient(server_client.tracking_uri).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert artifact_paths(server_client, run_id) == sorted(hierarchical_run.COMPARISON_ARTIFACTS)


@pytest.mark.slow
def test_a_bundle_beyond_one_batch_is_logged_whole(server_client, server_experiment_id, tmp_path):
    """More tags and params than one ``log_batch`` takes, and more entities than one call allows: every one
    arrives, in calls within MLflow's limits (a tracking server refuses a call beyond them)."""
    client, experiment_id = server_client, server_experiment_id
    (tmp_path / "content").mkdir()
    (tmp_path / "content" / "a.txt").write_text("a")
    tags = {f"t{i:03d}": str(i) for i in range(230)}
    params = {f"p{i:03d}": str(i) for i in range(150)}
    metrics = {f"m{i:04d}": float(i) for i in range(1700)}
    bundle = run_content.Bundle("big", tags, params, metrics, tmp_path / "content")
    run_id = runlog.log_bundle(client, bundle, experiment_id=experiment_id)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert {k: run.data.tags[k] for k in tags} == tags and run.data.params == params
    assert run.data.metrics == metrics
