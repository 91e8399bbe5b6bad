"""The Python client of the server app's JSON API (:mod:`mlflow_bayescompare.client`) on a real ``mlflow server
--app-name bayescompare``: a comparison started, followed and waited for gives the Python API's numbers; a refused
request, a run that does not exist, a FAILED job, a wait that runs out of time and an address that is not the app's
each raise an error that says which, without the credentials it was given.  The other server tests use the client
too; the 401 of wrong credentials is in ``test_security.py``, next to its basic-auth server."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import numpy as np
import pytest
from mlflow import MlflowClient
from servers import Server, free_port

from mlflow_bayescompare.client import MAX_WAIT, BayesCompareClient, JobFailed, JobTimeout, RequestRefused
from mlflow_bayescompare.pipeline.compare import compare_runs
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.server.owners import owner_tags
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.progress import STAGES

pytestmark = [pytest.mark.server, pytest.mark.slow]  # slow: each test needs the server this module starts

FAST = {"chains": 2, "draws": 200}
SECRET = "pa55-w0rd-not-shown"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("client")
    srv = Server(tmp, f"sqlite:///{tmp / 'mlflow.db'}", extra=["--workers", "1"])
    store = MlflowClient(srv.url)
    srv.experiment_id = store.create_experiment("cv")
    rng = np.random.default_rng(5)
    for model, offset in (("lda", 0.0), ("cart", -0.02)):
        for d in range(4):
            scores = np.clip(0.75 + 0.03 * d + offset + rng.normal(0, 0.03, 20), 0, 1)
            log_cv_scores(model, f"dataset-{d}", scores, folds=10, repeats=2, experiment_id=srv.experiment_id,
                          client=store)
    yield srv
    srv.stop()


def _fields(srv, **extra) -> dict:
    return {"experiment_id": [srv.experiment_id], "metric": "accuracy", "model_a": "lda", "model_b": "cart",
            **FAST, **extra}


def test_a_comparison_started_and_waited_for_gives_the_python_api_result(server):
    api = BayesCompareClient(server.url, auth=("alice", SECRET))  # a server without basic-auth ignores them
    run_id = api.start("comparison", _fields(server, seed=4))
    with pytest.raises(JobTimeout) as early:  # no time to wait: still queued or running
        api.wait(run_id, timeout=0)
    assert early.value.state["status"] == "RUNNING"
    assert str(early.value) == f"comparison {run_id} still RUNNING (stage {early.value.state['stage']}) after 0 s"
    state = api.wait(run_id, timeout=300, poll=0.2)
    assert (state["status"], state["kind"], state["run_id"], state["error"]) == ("FINISHED", "comparison", run_id,
                                                                               None), state
    direct = compare_runs(experiment_ids=[server.experiment_id], metric="accuracy", model_a="lda", model_b="cart",
                          tracking_uri=server.url, log=False, seed=4, **FAST)
    assert (state["p_a_better"], state["p_rope"], state["p_b_better"], state["verdict"]) == \
        (direct.p_a_better, direct.p_rope, direct.p_b_better, direct.verdict)
    assert api.status(run_id) == state
    assert api.session.get(server.root + state["report_url"], timeout=30).status_code == 200


def test_a_status_asked_to_wait_answers_when_the_job_changes(server):
    """The long poll (``?wait=``): a RUNNING job's status is held until its stage or status changes and answered
    then, not at the end of the wait; held as long as asked when nothing changes; at once once the run has ended.
    The job: a run owned by this (live) process, its stage moved in the store by hand.  ``wait`` then follows a real
    job with one request per step it takes, where polling asked every 0.2 s."""
    store, api = MlflowClient(server.url), server.api()
    run_id = store.create_run(server.experiment_id, tags={T.KIND: "comparison", T.STAGE: "fetching",
                                                          **owner_tags(os.getpid())}).info.run_id
    soon = MAX_WAIT / 2  # well before the wait's end, even on a loaded machine
    started = time.monotonic()
    assert (api.status(run_id, wait=3)["stage"], api.status(run_id)["status"]) == ("fetching", "RUNNING")
    assert 3 <= time.monotonic() - started < 3 + soon
    threading.Timer(2.0, store.set_tag, (run_id, T.STAGE, "sampling")).start()
    started = time.monotonic()
    assert api.status(run_id, wait=MAX_WAIT)["stage"] == "sampling"
    assert 2.0 <= time.monotonic() - started < soon
    store.set_terminated(run_id)
    started = time.monotonic()
    assert api.status(run_id, wait=MAX_WAIT)["status"] == "FINISHED" and time.monotonic() - started < soon
    refused = api.session.get(f"{server.url}/bayescompare/api/comparisons/get",
                              params={"run_id": run_id, "wait": "soon"}, timeout=30)
    assert (refused.status_code, refused.json()["error"]) == \
        (400, f"query parameter 'wait' must be a number of seconds (at most {MAX_WAIT:g})")

    asked = []
    api.session.hooks["response"].append(lambda response, *args, **kwargs: asked.append(response.url))
    job = api.start("comparison", _fields(server, seed=5))
    assert api.wait(job, timeout=300, poll=0.2)["status"] == "FINISHED"
    assert 1 <= len(asked) - 1 <= len(STAGES) - 1, asked  # the start, then one status per stage at most


def test_a_refused_request_raises_with_the_servers_reasons(server):
    api = server.api()
    with pytest.raises(RequestRefused) as refused:
        api.start("comparison", _fields(server, model_b="no-such-model", chains=0))
    assert refused.value.status == 400
    assert str(refused.value).startswith("start a comparison: HTTP 400: invalid request:")
    assert refused.value.errors == ["Invalid value for 'chains': must be a whole number >= 1 and <= 64; got 0"]
    with pytest.raises(ValueError, match="unknown kind of job 'pairs': one of comparison, matrix, ranking"):
        api.start("pairs", _fields(server))


@pytest.mark.parametrize("run_id", ["0123456789abcdef0123456789abcdef", "not-a-run-id"])
def test_a_run_that_does_not_exist(server, run_id):
    with pytest.raises(RequestRefused) as refused:
        server.api().wait(run_id)
    assert refused.value.status == 404
    assert str(refused.value) == f"status of run {run_id}: HTTP 404: no comparison run '{run_id}'"


def test_a_failed_job_raises_with_its_reason(server):
    """A job whose process is gone: the server ends its run FAILED saying why, and ``wait`` raises that reason."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    store = MlflowClient(server.url)
    run_id = store.create_run(server.experiment_id, tags={T.KIND: "comparison", T.STAGE: "sampling",
                                                          **owner_tags(dead.pid)}).info.run_id
    with pytest.raises(JobFailed) as failed:
        server.api().wait(run_id, timeout=30)
    reason = failed.value.state["error"]
    assert (failed.value.state["status"], failed.value.state["run_id"]) == ("FAILED", run_id)
    assert f"the process that ran it (pid {dead.pid} " in reason
    assert str(failed.value) == f"comparison {run_id} FAILED: {reason}"
    assert store.get_run(run_id).data.tags[T.ERROR] == reason


def test_an_address_that_is_not_the_app_and_no_credentials_in_messages(server):
    with pytest.raises(RequestRefused) as wrong:  # MLflow's own 404 page, not the app's JSON
        BayesCompareClient(f"http://alice:{SECRET}@127.0.0.1:{server.port}/no-prefix", auth=("alice", SECRET))
    assert wrong.value.status == 404 and SECRET not in str(wrong.value)
    assert str(wrong.value).startswith("read the CSRF token: HTTP 404: ")
    assert str(wrong.value).endswith(f"; is http://127.0.0.1:{server.port}/no-prefix an `mlflow server --app-name "
                                     "bayescompare` (with its static prefix)?")
    with pytest.raises(RequestRefused) as unreachable:
        BayesCompareClient(f"http://alice:{SECRET}@127.0.0.1:{free_port()}", auth=("alice", SECRET))
    assert unreachable.value.status is None and SECRET not in str(unreachable.value)
    assert str(unreachable.value).startswith("read the CSRF token: cannot reach http://127.0.0.1:")
