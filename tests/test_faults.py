"""Real faults, no mocks of MLflow or Stan: an unreachable tracking server, a server killed and restarted in the
middle of a fetch, an artifact store that cannot be written, Stan failing to initialise, and Ctrl-C while Stan
samples.  In every case the comparison either completes with all its data or fails with a clear message and an
exit code, never a traceback, and no comparison run is left FINISHED half-logged or RUNNING."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from mlflow.entities import RunStatus
from servers import Server, free_port, gateway, group_alive, trickling

from mlflow_bayescompare.cli import main
from mlflow_bayescompare.client import JobFailed
from mlflow_bayescompare.reads import reach
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.sampling import sampler
from mlflow_bayescompare.server.owners import owner
from mlflow_bayescompare.vocabulary.errors import SamplingError

FAST = ["--chains", "2", "--draws", "200", "--seed", "1"]
#: MLflow's client retries: few and quick, so that the tests do not wait for the default 7 retries × backoff 2
QUICK_RETRIES = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}


def _cli(*args, env=None, timeout=600):
    """The CLI as a real subprocess (its own process group, so signals reach Stan's workers as Ctrl-C would)."""
    full_env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    full_env.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "mlflow_bayescompare.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=full_env, start_new_session=True,
                            preexec_fn=_terminal_sigint)


def _terminal_sigint():
    """SIGINT as in a terminal.  A shell starts background jobs (``cmd &``) with SIGINT ignored, and children inherit
    that, so under such a runner Ctrl-C would never reach the CLI at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _finish(proc, timeout=600):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"CLI did not exit within {timeout} s:\n{err[-3000:]}")
    return proc.returncode, out, err


def _log(client, eid, models=("rf", "svm"), datasets=4, folds=10, repeats=1, threads=1):
    rng = np.random.default_rng(3)
    offsets = {"rf": 0.02, "svm": 0.0, "knn": -0.01}

    def one(key):
        m, d = key
        values = np.clip(0.8 + offsets.get(m, 0) + 0.01 * d + rng.normal(0, 0.02, folds * repeats), 0, 1)
        return log_cv_scores(m, f"ds{d:03d}", values, folds=folds, repeats=repeats, experiment_id=eid, client=client)

    keys = [(m, d) for m in models for d in range(datasets)]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, keys))


def _comparison_runs(client, eid):
    return client.search_runs([eid], "tags.`bayescompare.kind` = 'comparison'")


# ------------------------------------------------------------------------------------------------ unreachable


@pytest.mark.parametrize("command, where, down", [
    (["compare", "--metric", "accuracy", "--model-a", "rf", "--model-b", "svm", "--json"], "option", "closed port"),
    (["matrix", "--metric", "accuracy", "--models", "a,b,c"], "env", "closed port"),
    (["rank", "--metric", "accuracy,f1"], "option", "gateway"),  # a proxy answering 503 for its MLflow
])
@pytest.mark.slow
def test_an_unreachable_server_is_told_at_once(command, where, down):
    """Nothing listens on the port, or a gateway says its MLflow is down: the command says so within 30 s (the
    issue's bound; MLflow's own retries take about 4 minutes), naming the URI without its password and the cause,
    exit 2, no traceback."""
    with contextlib.ExitStack() as stack:
        host = stack.enter_context(gateway(503, health=503)) if down == "gateway" else f"127.0.0.1:{free_port()}"
        uri = f"http://ci:pre@TAIL-1@{host}"
        given = ["--tracking-uri", uri] if where == "option" else []
        proc = _cli(*command[:1], *given, "--experiment-name", "cv", *command[1:],
                    env={"MLFLOW_TRACKING_URI": uri} if where == "env" else None)
        code, out, err = _finish(proc, timeout=30)
    cause = "HTTP 503 Service Unavailable" if down == "gateway" else "Connection refused"
    assert code == 2, err
    assert out == ""  # nothing claims a result on stdout
    assert f"Error: the MLflow tracking server at http://{host} is unreachable: {cause}" in err
    assert "pre@" not in err and "TAIL-1" not in err and "Traceback" not in err


def test_a_health_answer_that_trickles_is_no_answer(monkeypatch):
    """A ``/health`` whose status line comes a byte a second (for 8 s, then whole): the look is bounded as a whole
    (here 2 s, as :data:`~mlflow_bayescompare.reads.reach.DEADLINE` bounds it at 15 s), not per read, so the
    command ends with exit 2 within the bound, naming the URI and the bound; a body that trickles is not waited
    for, its status line having answered."""
    monkeypatch.setattr(reach, "DEADLINE", 2.0, raising=False)
    import mlflow_bayescompare.pipeline.compare  # noqa: F401  (imported ahead: the bound is the look's, not an import's)

    with trickling("head") as host:
        started = time.monotonic()
        result = CliRunner().invoke(main, ["rank", "--tracking-uri", f"http://ci:pre@TAIL-1@{host}",
                                           "--experiment-name", "cv", "--metric", "accuracy"])
        took = time.monotonic() - started
    assert result.exit_code == 2 and took < 3.5, (took, result.output)
    assert f"Error: the MLflow tracking server at http://{host} is unreachable: no answer within 2 s" \
        in result.output and "pre@" not in result.output and "Traceback" not in result.output
    with trickling("body") as host:
        started = time.monotonic()
        reach.check_reachable(f"http://{host}")
        assert time.monotonic() - started < 1.5


# ------------------------------------------------------------------------------------------------ restart


@pytest.mark.server
@pytest.mark.slow
def test_server_killed_and_restarted_in_the_middle_of_a_fetch(tmp_path):
    """2 models × 60 datasets × 1000 scores (100 folds × 10 repeats): the bulk history fetch is 5 requests of
    25,000 points.  The server's process group is SIGKILLed as soon as the first one is answered, and restarted on
    the same port and store a second later; MLflow's retries carry the fetch over the gap.  The comparison must
    then hold every dataset (no partial fetch passed off as complete), or fail with a clear message."""
    srv = Server(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", app=None, extra=["--workers", "2"])
    try:
        client = MlflowClient(srv.url)
        eid = client.create_experiment("cv")
        _log(client, eid, datasets=60, folds=100, repeats=10, threads=8)
        mark = srv.log.stat().st_size
        proc = _cli("compare", "--tracking-uri", srv.url, "--experiment-id", eid, "--metric", "accuracy",
                    "--model-a", "rf", "--model-b", "svm", "--json", *FAST,
                    env={"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "6", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"})
        deadline = time.monotonic() + 120
        while "get-history-bulk" not in srv.log.read_text(errors="replace")[mark:]:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the CLI never reached the bulk fetch"
            time.sleep(0.02)
        srv.kill()  # a crash: the whole process group at once, requests in flight are cut
        assert proc.poll() is None  # the CLI was still working when the server went away
        time.sleep(1)
        srv.start()  # same port, same store
        code, out, err = _finish(proc)
        print(f"outcome after the restart: exit {code}; stderr tail: {err[-300:]!r}")
        assert "Traceback" not in err
        runs = _comparison_runs(client, eid)
        if code == 0:
            report = json.loads(out)
            assert report["n_datasets"] == 60
            [run] = runs
            assert run.info.status == "FINISHED" and run.info.run_id == report["run_id"]
            assert run.data.metrics["n_datasets"] == 60
            names = {a.path for a in client.list_artifacts(run.info.run_id)}
            assert {"report.html", "report.md", "summary.json", "cv_differences.csv", "posterior.nc"} <= names
        else:
            assert code == 1 and f"Error: MLflow at {srv.url} failed" in err, err
            assert all(r.info.status != "FINISHED" for r in runs)
    finally:
        srv.stop()


# ------------------------------------------------------------------------------------------------ artifacts


@pytest.fixture(scope="module")
def broken_artifact_server(tmp_path_factory):
    """A bayescompare server whose ``--artifacts-destination`` lies under a regular file: every upload fails,
    even as root (permission bits would not stop root)."""
    tmp = tmp_path_factory.mktemp("broken-artifacts")
    blocker = tmp / "blocker"
    blocker.write_text("a file where the artifact directory should be\n")
    srv = Server(tmp, f"sqlite:///{tmp / 'mlflow.db'}", artifacts=blocker / "artifacts", extra=["--workers", "1"],
                 env=QUICK_RETRIES)
    srv.client = MlflowClient(srv.url)
    srv.experiment_id = srv.client.create_experiment("cv")
    _log(srv.client, srv.experiment_id)
    yield srv
    srv.stop()


@pytest.mark.server
@pytest.mark.slow
def test_artifact_upload_fails_run_ends_failed_with_the_error(broken_artifact_server, monkeypatch):
    srv = broken_artifact_server
    for key, value in QUICK_RETRIES.items():
        monkeypatch.setenv(key, value)
    argv = ["compare", "--tracking-uri", srv.url, "--experiment-id", srv.experiment_id, "--metric", "accuracy",
            "--model-a", "rf", "--model-b", "svm", "--json", *FAST]
    result = CliRunner().invoke(main, argv)

    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""  # no JSON result: nothing claims success
    assert "Error: " in result.stderr and "Traceback" not in result.output
    [run] = [r for r in _comparison_runs(srv.client, srv.experiment_id)
             if r.data.tags.get("bayescompare.model_a") == "rf" and not owner(r)]
    assert run.info.status == "FAILED"
    assert run.data.tags["bayescompare.stage"] == "failed"
    error = run.data.tags["bayescompare.error"]
    assert error and ("500" in error or "artifact" in error.lower()), error
    assert "p_a_better" in run.data.metrics  # the numbers were logged before the upload failed …
    assert run.data.tags.get("bayescompare.verdict")  # … but the run says FAILED, not FINISHED


@pytest.mark.server
@pytest.mark.slow
def test_artifact_upload_fails_through_the_json_api(broken_artifact_server):
    srv = broken_artifact_server
    api = srv.api()
    run_id = api.start("comparison", {"experiment_id": [srv.experiment_id], "metric": "accuracy", "model_a": "svm",
                                      "model_b": "rf", "chains": 2, "draws": 200, "seed": 1})
    with pytest.raises(JobFailed) as failed:
        api.wait(run_id, timeout=300)
    state = failed.value.state
    assert state["error"] and state["stage"] == "failed" and str(failed.value).endswith(state["error"]), state
    run = srv.client.get_run(run_id)
    assert run.info.status == "FAILED" and run.data.tags["bayescompare.error"]


# ------------------------------------------------------------------------------------------------ Stan


def _valid_stan_data() -> dict:
    from mlflow_bayescompare.families.hierarchical import prepare
    from mlflow_bayescompare.sampling.programs import prior_code

    rng = np.random.default_rng(0)
    diffs = [rng.normal(0.01, 0.02, 10), rng.normal(-0.01, 0.02, 10)]
    return prepare.prepare(["a", "b"], diffs, rope=0.01, rho=np.array([0.1, 0.1]),
                           prior_code=prior_code("hierarchical"), rng=rng).stan_data


def test_stan_initialisation_failure_carries_stans_message():
    """Our own validation stops every bad input we know of before Stan (the last one, ±inf stored by MLflow as
    ±1.8e308, gave exactly this failure), so hand Stan data that passes its declared constraints but leaves no
    valid initial value: σ0's upper bound 0."""
    data = {**_valid_stan_data(), "sigma0_high": 0.0}
    with pytest.raises(SamplingError) as info:
        sampler.sample(data, chains=1, draws=20, warmup=20, seed=1, backend="pystan")
    message = str(info.value)
    assert message.startswith("Stan failed to sample:")
    assert "Initialization" in message and "lub_constrain" in message  # Stan's own words


@pytest.mark.parametrize("change,words", [
    ({"n": [10, -3]}, ["n[2] is -3", "greater than or equal to 2"]),
    ({"delta0_low": 0.0, "delta0_high": 0.0}, ["delta0_high (0) must exceed delta0_low (0)"]),
])
def test_stan_rejects_data_that_breaks_its_declared_constraints(change, words):
    data = {**_valid_stan_data(), **change}
    with pytest.raises(SamplingError) as info:
        sampler.sample(data, chains=1, draws=20, warmup=20, seed=1, backend="pystan")
    message = str(info.value)
    assert all(w in message for w in words), message  # Stan's own words


# ------------------------------------------------------------------------------------------------ Ctrl-C


@pytest.fixture
def uci_store(tmp_path):
    from uci_runs import log_uci

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    eid = client.create_experiment("cv", artifact_location=(tmp_path / "artifacts").as_uri())
    log_uci(client, eid)
    return uri, client, eid


@pytest.mark.parametrize("command,stop", [
    (["compare", "--model-a", "hnb", "--model-b", "nbc"], "ctrl-c"),
    (["matrix", "--models", "hnb,nbc,j48", "--jobs", "2"], "ctrl-c"),
    (["matrix", "--models", "hnb,nbc,j48", "--jobs", "2"], "sigterm"),
])
@pytest.mark.slow
def test_ctrl_c_or_sigterm_during_sampling_leaves_no_running_run(uci_store, command, stop):
    """Ctrl-C reaches the terminal's whole foreground group; SIGTERM (``kill``, ``timeout``, a scheduler) only the
    CLI's own process, which must then stop its matrix workers and their samplers itself."""
    uri, client, eid = uci_store
    # 2 × 100,000 draws: minutes of sampling, so the interrupt surely lands in it
    proc = _cli(command[0], "--tracking-uri", uri, "--experiment-id", eid, "--metric", "accuracy", *command[1:],
                "--chains", "2", "--draws", "100000", "--seed", "1")
    err_lines: list[str] = []
    reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while not any("bayescompare: sampling" in line for line in list(err_lines)):
        assert proc.poll() is None, "".join(err_lines)[-3000:]
        assert time.monotonic() < deadline, "".join(err_lines)[-3000:]
        time.sleep(0.1)
    time.sleep(2)
    if stop == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    else:
        os.kill(proc.pid, signal.SIGTERM)
    start = time.monotonic()
    try:
        code = proc.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"the CLI did not exit within 120 s of {stop}")
    assert time.monotonic() - start < 60, "the interrupt did not stop the sampling promptly"
    # no sampler process outlives the CLI (checked first: one that does holds the output pipes open)
    time.sleep(1)
    ps = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-g", str(proc.pid)], capture_output=True, text=True)
    alive = [line for line in ps.stdout.splitlines() if line.split()[1][0] != "Z"]  # zombies are already dead
    if alive:
        os.killpg(proc.pid, signal.SIGKILL)
    assert alive == [], alive
    reader.join(10)
    out, err = proc.stdout.read(), "".join(err_lines)
    assert code == (143 if stop == "sigterm" else 1) and out == "", code
    assert ("Error: stopped by SIGTERM." if stop == "sigterm" else "Aborted!") in err, err[-2000:]
    assert "Traceback" not in err, err[-4000:]
    runs = client.search_runs([eid], "tags.`bayescompare.kind` IS NOT NULL")
    assert [r for r in runs if r.info.status == RunStatus.to_string(RunStatus.RUNNING)] == []
    assert [r for r in runs if r.info.status == RunStatus.to_string(RunStatus.FINISHED)] == []


def test_matrix_workers_start_with_ctrl_c_ignored():
    """A Ctrl-C that arrives while a matrix worker is still starting must not reach it (it would print a traceback
    from its imports): the workers are spawned with SIGINT ignored, and the parent's handler is put back."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from mlflow_bayescompare.sampling import workers

    before = signal.getsignal(signal.SIGINT)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with workers._ctrl_c_ignored_by_new_workers():
            started = pool.submit(signal.getsignal, signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is before
        assert started.result(120) == signal.SIG_IGN


_KILLED_MID_FIT = """
import numpy as np
from mlflow_bayescompare import hierarchical_test
hierarchical_test(diffs=np.random.default_rng(1).normal(0.01, 0.02, (5, 10)), folds=10, seed=1, chains=2,
                  draws=100_000, backend="pystan")
"""


@pytest.mark.slow
def test_the_samplers_of_a_process_killed_mid_fit_die_with_it():
    """A process killed by SIGKILL (a Ray worker killed by its node, the OOM killer) has no handler to stop its
    Stan sampler processes: they used to run their chains to the end, holding the sockets they inherited (a Ray
    worker's raylet then never saw it die, and never restarted it).  They now die with it."""
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_MID_FIT], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:  # its two sampler processes
        time.sleep(0.2)
    assert len(_children(proc.pid)) >= 2, "the fit never started its sampler processes"
    time.sleep(1)  # sampling
    proc.kill()
    proc.wait()
    gone = _gone(proc.pid, timeout=10)
    if not gone:
        os.killpg(proc.pid, signal.SIGKILL)
    assert gone, "a sampler process outlived the process that forked it"


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split() if entry.name.isdigit() else []
        except OSError:
            continue
        if fields and fields[0] != "Z" and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


#: a process sampling with the SIGTERM handler of a matrix worker or of a command, stopped at the worst moment:
#: right after httpstan's pool forks a sampler process, inside the pool's ``submit`` (which holds its lock) and
#: before the pool lists it
_STOPPED_WHILE_FORKING = """
import os, signal
import numpy as np
from mlflow_bayescompare import cli_signals, hierarchical_test
from mlflow_bayescompare.sampling import workers

workers._worker_init() if "{handler}" == "worker" else cli_signals.stop_on_sigterm()
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGTERM))
hierarchical_test(diffs=np.random.default_rng(1).normal(0.01, 0.02, (5, 10)), folds=10, seed=1, chains=2,
                  draws=100_000, backend="pystan")
"""


@pytest.mark.parametrize("handler", ["worker", "command"])
@pytest.mark.slow
def test_a_process_stopped_while_forking_its_samplers_exits_and_leaves_none(handler):
    """The SIGTERM that stops a matrix worker (or a command) can land while httpstan forks the sampler processes.
    Its handler used to run there: it missed the process just forked, which outlived the worker holding the pool's
    pipes (a matrix's CLI then hung at exit: test_ctrl_c_or_sigterm… hung 2 runs in 5 under load), and waited
    forever for the lock the pool's ``submit`` held.  Now the stop waits for the fork to end, then kills every
    sampler."""
    proc = subprocess.Popen([sys.executable, "-c", _STOPPED_WHILE_FORKING.format(handler=handler)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("within 120 s of SIGTERM, the worker did not exit or a sampler it left still held its output")
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    deadline = time.monotonic() + 10
    while group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = group_alive(proc.pid)
    if alive:
        os.killpg(proc.pid, signal.SIGKILL)
    assert not alive, "a sampler process outlived its worker"


@pytest.mark.slow
def test_ctrl_c_during_a_server_job_ends_the_run_failed(uci_store):
    """The server path creates the run first (stage tags); an interrupt of the work ends it FAILED."""
    from mlflow_bayescompare.pipeline.compare import compare_runs
    from mlflow_bayescompare.runs import runlog

    uri, client, eid = uci_store
    run_id = runlog.start_run(client, eid, name="hnb vs nbc · accuracy", tags={"bayescompare.kind": "comparison"})
    done = threading.Event()

    def interrupt_when_sampling():  # Ctrl-C two seconds after the run's stage tag says "sampling"
        watcher = MlflowClient(uri)
        while not done.is_set():
            if watcher.get_run(run_id).data.tags.get("bayescompare.stage") == "sampling":
                if not done.wait(2):
                    os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.1)

    threading.Thread(target=interrupt_when_sampling, daemon=True).start()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal; see _terminal_sigint
    try:
        with pytest.raises(KeyboardInterrupt):
            compare_runs(experiment_ids=[eid], metric="accuracy", model_a="hnb", model_b="nbc", tracking_uri=uri,
                         chains=2, draws=100000, seed=1, run_id=run_id)
    finally:
        done.set()
        signal.signal(signal.SIGINT, previous)
    run = client.get_run(run_id)
    assert run.info.status == "FAILED"
    assert run.data.tags["bayescompare.stage"] == "failed"
    assert "interrupt" in run.data.tags["bayescompare.error"].lower()
    # the process can fit again after the interrupt (httpstan's sampler pool was replaced, not left broken)
    again = compare_runs(experiment_ids=[eid], metric="accuracy", model_a="hnb", model_b="nbc", tracking_uri=uri,
                         chains=2, draws=100, seed=1, log=False)
    assert again.p_a_better + again.p_rope + again.p_b_better == pytest.approx(1)


# ------------------------------------------------------------------------------------------------ server jobs

LONG = {"chains": 2, "draws": 500_000, "seed": 1}  # minutes of sampling: surely interrupted in it


def _job_server(tmp_path) -> Server:
    srv = Server(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", extra=["--workers", "1"],
                 env={"MLFLOW_BAYESCOMPARE_MAX_DRAWS": "1000000"})
    srv.client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")  # the store itself, also while it is down
    srv.experiment_id = MlflowClient(srv.url).create_experiment("cv")
    _log(MlflowClient(srv.url), srv.experiment_id)
    return srv


def _sampling_job(srv, api, **fields) -> tuple[str, int]:
    """Start a long comparison; once it samples, its run id and the pid of its job process."""
    run_id = api.start("comparison", {"experiment_id": [srv.experiment_id], "metric": "accuracy", "model_a": "rf",
                                      "model_b": "svm", **LONG, **fields})
    deadline = time.monotonic() + 300
    while api.status(run_id, wait=30)["stage"] != "sampling":  # each answer at the job's next step
        assert time.monotonic() < deadline, api.status(run_id)
    time.sleep(1)
    return run_id, owner(srv.client.get_run(run_id))["pid"]


def _gone(pid: int, timeout: float = 15) -> bool:
    """Has every process of the process group ``pid`` (a job process and its Stan samplers) ended?"""
    deadline = time.monotonic() + timeout
    while group_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not group_alive(pid)


def _error(srv, run_id: str) -> tuple[str, str, str]:
    run = srv.client.get_run(run_id)
    return run.info.status, run.data.tags.get("bayescompare.stage"), run.data.tags.get("bayescompare.error")


@pytest.mark.server
@pytest.mark.slow
def test_server_stopped_mid_sampling_ends_its_run_failed_with_the_reason(tmp_path):
    """SIGTERM to the server (as a service manager stops it): the job's run ends FAILED saying so, its processes
    end with it, and the restart's sweep keeps that reason."""
    srv = _job_server(tmp_path)
    try:
        run_id, pid = _sampling_job(srv, srv.api())
        srv.stop()
        reason = ("the bayescompare server was stopped (SIGTERM) while the comparison was sampling; "
                  "start the comparison again")
        assert _error(srv, run_id) == ("FAILED", "failed", reason)
        assert _gone(pid)
        srv.start()
        api = srv.api()
        assert (api.status(run_id)["error"], _error(srv, run_id)[2]) == (reason, reason)
        again = api.start("comparison", {"experiment_id": [srv.experiment_id], "metric": "accuracy", "model_a": "rf",
                                         "model_b": "svm", "chains": 2, "draws": 200, "seed": 1})
        assert api.wait(again)["status"] == "FINISHED"
    finally:
        srv.stop()


@pytest.mark.server
@pytest.mark.slow
def test_job_process_killed_then_server_crashed_and_restarted(tmp_path):
    """SIGKILL of a job's process mid-sampling: its run ends FAILED at once with that reason (its Stan samplers
    killed too) and the server goes on comparing.  Then the whole server is SIGKILLed mid-sampling (a crash): its
    job processes end with it, and the restart's sweep ends the orphaned run FAILED saying why, keeping the first
    run's reason; a new comparison succeeds."""
    srv = _job_server(tmp_path)
    try:
        api = srv.api()
        killed, pid = _sampling_job(srv, api)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(JobFailed) as failed:
            api.wait(killed, timeout=30)
        state = failed.value.state
        reason = ("the comparison's process ended abruptly while the comparison was sampling (a job process of this "
                  "server was killed, or ran out of memory: BrokenProcessPool)")
        assert (state["status"], state["stage"], state["error"]) == ("FAILED", "failed", reason)
        assert _gone(pid)
        after = api.start("comparison", {"experiment_id": [srv.experiment_id], "metric": "accuracy",
                                         "model_a": "svm", "model_b": "rf", "chains": 2, "draws": 200, "seed": 1})
        assert api.wait(after)["status"] == "FINISHED"

        orphan, orphan_pid = _sampling_job(srv, api, seed=2)
        srv.kill()
        assert _gone(orphan_pid), "the job process outlived its server"
        assert _error(srv, orphan)[:2] == ("RUNNING", "sampling")
        srv.start()
        api = srv.api()
        with pytest.raises(JobFailed) as failed:
            api.wait(orphan, timeout=60)
        state = failed.value.state
        assert (state["status"], state["error"]) == (
            "FAILED", f"marked FAILED by the bayescompare server: the process that ran it (pid {orphan_pid} on "
                      f"{owner(srv.client.get_run(orphan))['host']}) is gone; the server was "
                      "stopped or restarted while the comparison was sampling")
        assert _error(srv, killed) == ("FAILED", "failed", reason)
        again = api.start("comparison", {"experiment_id": [srv.experiment_id], "metric": "accuracy", "model_a": "rf",
                                         "model_b": "svm", "chains": 2, "draws": 200, "seed": 1})
        assert api.wait(again)["status"] == "FINISHED"
    finally:
        srv.stop()
