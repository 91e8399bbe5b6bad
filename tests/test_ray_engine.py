"""``--engine ray`` on a real two-node Ray cluster started on this machine (``ray start --head`` and ``ray start
--address``, :mod:`mlflow_bayescompare.simulation.ray_cluster`): the local engine's numbers, a killed worker survived,
and the bad inputs refused."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from servers import Server, free_port, require_module
from uci_runs import log_uci

from mlflow_bayescompare import InputError
from mlflow_bayescompare.pipeline.compare import compare_matrix
from mlflow_bayescompare.sampling import ray_engine
from mlflow_bayescompare.simulation.ray_cluster import RayCluster
from mlflow_bayescompare.vocabulary.errors import SamplingError

pytestmark = [pytest.mark.slow, pytest.mark.ray]

MODELS = ("nbc", "hnb", "j48")
DATASETS = (20, 21, 24, 27)  # 3 models x 4 datasets: 3 pairs
FAST = dict(chains=2, draws=200, seed=7)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    require_module("ray", 'Ray is not installed (pip install -e ".[test]" installs it)')
    started = RayCluster(tmp_path_factory.mktemp("ray"))
    try:
        yield started
    finally:
        started.stop()
    assert started.processes() == {}  # every process it started has ended


@pytest.fixture
def scores(client, experiment_id):
    log_uci(client, experiment_id, models=MODELS, datasets=DATASETS)
    return experiment_id


def _numbers(matrix) -> dict:
    return {pair: (o.p_a_better, o.p_rope, o.p_b_better, o.verdict) for pair, o in matrix.pairs.items()}


def test_a_matrix_on_the_cluster_gives_the_local_engines_numbers_and_survives_a_killed_worker(
        cluster, client, tracking_uri, scores):
    local = compare_matrix(experiment_ids=[scores], metric="accuracy", models=MODELS, tracking_uri=tracking_uri,
                           log=False, jobs=2, **FAST)
    seen = []

    def progress(stage, detail=None):
        seen.append(detail or "")
        if detail and detail.startswith("1/3 pairs done") and not killed:
            killed.extend(_kill_a_busy_worker(cluster))

    killed: list[int] = []
    on_ray = compare_matrix(experiment_ids=[scores], metric="accuracy", models=MODELS, tracking_uri=tracking_uri,
                            engine="ray", ray_address=cluster.address, progress=progress, refresh=True, **FAST)

    assert _numbers(on_ray) == _numbers(local)
    assert killed  # a worker died mid-matrix; its pair was fitted again by the restarted actor
    assert any(d.startswith("1/3 pairs done, about ") and d.endswith(" left") for d in seen)  # with the ETA
    parent = client.get_run(on_ray.run_id)
    assert parent.info.status == "FINISHED" and parent.data.metrics["n_pairs"] == 3
    children = client.search_runs([scores], f"tags.`mlflow.parentRunId` = '{on_ray.run_id}'")
    assert sorted(r.info.run_id for r in children) == sorted(o.run_id for o in on_ray.pairs.values())
    # the children's artifacts were written on the workers and logged by the driver
    assert {"posterior.nc", "shrinkage.csv"} <= {a.path for a in client.list_artifacts(children[0].info.run_id)}


def test_a_server_with_the_ray_engine_fits_its_matrix_jobs_on_the_cluster(cluster, tmp_path):
    """``MLFLOW_BAYESCOMPARE_ENGINE=ray`` and ``RAY_ADDRESS`` in a real server's environment: its "compare all
    models" job runs on the cluster (the run's ``engine`` param) and gives the local engine's numbers."""
    server = Server(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}",
                    env={"MLFLOW_BAYESCOMPARE_ENGINE": "ray", "RAY_ADDRESS": cluster.address})
    try:
        client = MlflowClient(server.url)
        experiment_id = client.create_experiment("ray-server")
        log_uci(client, experiment_id, models=MODELS, datasets=DATASETS)
        api = server.api()
        state = api.wait(api.start("matrix", {"experiment_id": [experiment_id], "metric": "accuracy", **FAST}))
        assert state["status"] == "FINISHED", state
        assert client.get_run(state["run_id"]).data.params["engine"] == "ray"
        local = compare_matrix(experiment_ids=[experiment_id], metric="accuracy", tracking_uri=server.url,
                               log=False, jobs=2, **FAST)  # every model found, as the job
        assert {(p["model_a"], p["model_b"]): (p["p_a_better"], p["p_rope"], p["p_b_better"], p["verdict"])
                for p in state["pairs"]} == _numbers(local)
    finally:
        server.stop()


def test_a_worker_that_keeps_dying_fails_the_matrix_naming_its_pair_and_logs_nothing(cluster, client, tracking_uri,
                                                                                      scores):
    """Every worker busy with a pair is killed, again and again: past :data:`ray_engine.RETRIES` restarts an actor
    stays dead, and the matrix fails with the pair it was fitting and why, before any run is written."""
    stop, killed = threading.Event(), []

    def killer():
        while not stop.is_set():
            killed.extend(_kill_a_busy_worker(cluster, within=1))

    before = {r.info.run_id for r in client.search_runs([scores])}
    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        with pytest.raises(SamplingError, match=rf"the pair \w+ vs \w+ was not fitted: its Ray worker died "
                                                rf"{ray_engine.RETRIES + 1} times"):
            compare_matrix(experiment_ids=[scores], metric="accuracy", models=MODELS, tracking_uri=tracking_uri,
                           engine="ray", ray_address=cluster.address, refresh=True, **FAST)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert len(killed) >= ray_engine.RETRIES + 1
    assert {r.info.run_id for r in client.search_runs([scores])} == before  # no parent, no child: nothing written


def _kill_a_busy_worker(cluster, within: float = 30) -> list[int]:
    """SIGKILL one of the cluster's matrix workers that is fitting a pair (Ray titles it ``ray::_PairWorker.call``;
    the Stan sampler processes it forked carry its title too, and are left alone), waiting ``within`` seconds for
    one."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        workers = set(cluster.workers("_PairWorker"))
        busy = [pid for pid in cluster.workers("_PairWorker.call") if cluster.parent(pid) not in workers]
        if busy:
            os.kill(busy[0], signal.SIGKILL)
            return busy[:1]
        time.sleep(0.2)
    return []


def test_an_address_that_does_not_answer_fails_fast_naming_it(tracking_uri, scores):
    address = f"127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(InputError, match=f"Ray cluster at {address} does not answer"):
        compare_matrix(experiment_ids=[scores], metric="accuracy", models=MODELS, tracking_uri=tracking_uri,
                       engine="ray", ray_address=address, **FAST)
    assert time.monotonic() - start < ray_engine.CONNECT_SECONDS


def test_cli_refusals_without_ray_and_one_pair_run_here(tracking_uri, scores):
    """Ray missing (hidden from a fresh interpreter) says which extra installs it, exit 2; a single pair with
    ``--engine ray`` never reaches for the cluster (the address given answers nothing) and says so."""
    command = ["-m", "mlflow_bayescompare.cli", "matrix", "--tracking-uri", tracking_uri, "--experiment-id", scores,
               "--metric", "accuracy", "--engine", "ray", "--ray-address", f"127.0.0.1:{free_port()}", "--no-log",
               "--chains", "2", "--draws", "200", "--seed", "7"]
    no_ray = "import sys; sys.modules['ray'] = None; from mlflow_bayescompare.cli import main; main()"
    hidden = subprocess.run([sys.executable, "-c", no_ray, *command[2:], "--models", "nbc,hnb,j48"],
                            capture_output=True, text=True, timeout=120)
    assert hidden.returncode == 2, hidden.stderr
    assert 'pip install "mlflow-bayescompare[ray]"' in hidden.stderr

    one = subprocess.run([sys.executable, *command, "--models", "nbc,hnb"], capture_output=True, text=True,
                         timeout=300)
    assert one.returncode == 0, one.stderr
    assert "one pair: fitted in this process, not on the Ray cluster" in one.stderr


def test_a_cluster_that_differs_from_the_driver_is_named_before_any_work(cluster):
    """The versions each worker reports (from a real actor of the cluster) against a driver that differs."""
    ray = require_module("ray", "Ray is not installed")
    with ray_engine.started(1, 2, int, address=cluster.address) as running:  # int(): a warm-up doing nothing
        reported = ray.get([actor.versions.remote() for actor in running.actors])
    assert reported == [ray_engine.worker_versions()]
    driver = {**ray_engine.worker_versions(), "Python": "3.99.0"}
    assert ray_engine.version_problems(driver, reported) == [
        f"Python {reported[0]['Python']} on the cluster, 3.99.0 here"]


def test_ctrl_c_cancels_the_clusters_work(cluster, tracking_uri, scores):
    """Ctrl-C in the driver kills the actors, and with them their running pairs: no matrix worker is left."""
    done = []

    def progress(stage, detail=None):
        if stage == "sampling" and not done:  # the first word of sampling (the actors may be up already)
            done.append(True)
            threading.Timer(8, lambda: os.kill(os.getpid(), signal.SIGINT)).start()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as in a fresh interpreter
    try:
        with pytest.raises(KeyboardInterrupt):
            compare_matrix(experiment_ids=[scores], metric="accuracy", models=MODELS, tracking_uri=tracking_uri,
                           engine="ray", ray_address=cluster.address, progress=progress, chains=2, draws=100_000,
                           seed=7)
    finally:
        signal.signal(signal.SIGINT, previous)
    end = time.monotonic() + 60  # Ray reaps a killed actor's process in seconds, longer on a loaded machine
    while cluster.workers("_PairWorker") and time.monotonic() < end:
        time.sleep(0.5)
    assert cluster.workers("_PairWorker") == []


def _cli(*args: str, env: dict | None = None) -> subprocess.Popen:
    """The CLI as a real process of its own (in its own session: a signal sent to it reaches it alone)."""
    full = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS")}
    full.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "mlflow_bayescompare.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=full, start_new_session=True)


def test_sigterm_stops_a_matrix_on_a_cluster_with_143(cluster, client, tracking_uri, scores):
    """SIGTERM to ``matrix --engine ray --ray-address …`` while its pairs fit: the command kills its actors, says it
    was stopped, logs nothing and exits 143.  Ray's core worker had put its own SIGTERM handler in place (which
    aborted the process: exit 134, a C++ stack dump), and Ray's ``ray.wait`` turned the stop into its own exit 1."""
    proc = _cli("matrix", "--tracking-uri", tracking_uri, "--experiment-id", scores, "--metric", "accuracy",
                "--engine", "ray", "--ray-address", cluster.address, "--chains", "2", "--draws", "100000",
                "--seed", "7")
    try:
        end = time.monotonic() + 180
        while not cluster.workers("_PairWorker.call") and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.3)
        assert proc.poll() is None and cluster.workers("_PairWorker.call"), "no pair started fitting"
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-2000:]
    assert err.count("Error: stopped by SIGTERM.") == 1 and "SIGTERM received" not in err, err[-2000:]
    assert client.search_runs([scores], "tags.`bayescompare.kind` IS NOT NULL") == []
    end = time.monotonic() + 60
    while cluster.workers("_PairWorker") and time.monotonic() < end:
        time.sleep(0.5)
    assert cluster.workers("_PairWorker") == []


def test_workers_killed_while_starting_are_a_failure_at_run_time(cluster):
    """Each worker killed while it starts (importing the package), again and again past its restarts: the matrix
    fails at run time (:class:`SamplingError`, exit 1) saying so, not as a bad input with an install hint."""
    from mlflow_bayescompare.pipeline.pairfits import _warm_up

    stop, killed = threading.Event(), []

    def killer():
        while not stop.is_set():
            for pid in set(cluster.workers("_PairWorker")) - set(cluster.workers("_PairWorker.call")):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.1)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        with pytest.raises(SamplingError) as failed:
            with ray_engine.started(2, 3, _warm_up, address=cluster.address):
                pass
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not isinstance(failed.value, InputError) and len(killed) > ray_engine.RETRIES
    assert str(failed.value).startswith(f"the Ray cluster at {cluster.address} could not start its workers: one "
                                        f"died while starting, {ray_engine.RETRIES + 1} times"), failed.value
    assert "installed" not in str(failed.value)


def test_a_node_without_the_package_is_named_with_the_install_hint(tmp_path_factory):
    """A node whose Python cannot import the package (a ``sitecustomize`` hides it, as if it were not installed):
    refused as a bad setup (:class:`InputError`, exit 2) naming the package to install, unlike workers that die."""
    from mlflow_bayescompare.pipeline.pairfits import _warm_up

    tmp = tmp_path_factory.mktemp("bare")  # short: Ray's socket paths under it must fit in 107 bytes
    (tmp / "hidden").mkdir()
    (tmp / "hidden" / "sitecustomize.py").write_text("import sys\nsys.modules['mlflow_bayescompare'] = None\n")
    bare = RayCluster(tmp / "ray", nodes=1, env={"PYTHONPATH": str(tmp / "hidden")})
    try:
        with pytest.raises(InputError) as refused:
            with ray_engine.started(1, 2, _warm_up, address=bare.address):
                pass
    finally:
        bare.stop()
    assert str(refused.value).startswith(
        f"the Ray cluster at {bare.address} could not start a worker: mlflow-bayescompare "
        f"{ray_engine.worker_versions()['mlflow-bayescompare']} (or one of its dependencies) is not installed on "
        "every node: "), refused.value
    assert "No module named" in str(refused.value) and "\x1b[" not in str(refused.value)


def test_a_cluster_with_token_authentication_takes_the_token_from_the_environment_only(tmp_path_factory, client,
                                                                                          tracking_uri, scores,
                                                                                          monkeypatch):
    """A cluster started with Ray's token authentication on (``RAY_AUTH_MODE=token``, the token in a file named by
    ``RAY_AUTH_TOKEN_PATH``).  A driver without the token is refused naming the variables to set (an
    :class:`InputError`: exit 2); the command with them in its environment fits on the cluster.  The token reaches
    no output, run, or command line of any process of the cluster, and nothing is written into ``~/.ray``."""
    tmp = tmp_path_factory.mktemp("tok")
    (tmp / "token").write_text(secrets.token_hex(32))
    (tmp / "token").chmod(0o600)
    token, auth = (tmp / "token").read_text(), {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(tmp / "token")}
    home = Path.home() / ".ray" / "auth_token"
    had_home_token = home.exists()
    guarded = RayCluster(tmp / "ray", env={**auth, "RAY_AUTH_TOKEN": None}, nodes=1)
    try:
        for name in [name for name in os.environ if name.startswith("RAY_AUTH_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # this process: a driver without the token
        with pytest.raises(InputError) as refused:
            with ray_engine.started(1, 2, int, address=guarded.address):
                pass
        allowed = _cli("matrix", "--tracking-uri", tracking_uri, "--experiment-id", scores, "--metric", "accuracy",
                       "--engine", "ray", "--ray-address", guarded.address, "--chains", "2", "--draws", "200",
                       "--seed", "7", env=auth)
        out, err = allowed.communicate(timeout=600)
        commands = guarded.processes().values()
    finally:
        guarded.stop()
    assert str(refused.value).startswith(f"could not connect to the Ray cluster at {guarded.address}: ")
    assert str(refused.value).endswith(ray_engine.TOKEN_HINT), refused.value
    assert allowed.returncode == 0, err[-2000:]
    assert f"fitting on the Ray cluster at {guarded.address}" in err
    run = client.search_runs([scores], "tags.`bayescompare.kind` = 'matrix'")[0]
    assert run.data.params["engine"] == "ray"
    for text in (out, err, repr(run.data.params), repr(run.data.tags), *commands):
        assert token not in text
    assert home.exists() == had_home_token


def test_with_no_address_ray_starts_here_for_the_matrix_and_ends_with_it(tracking_uri, scores, monkeypatch):
    """No address and no ``RAY_ADDRESS``: Ray starts on this machine for the matrix, from the calling thread (Ray's
    processes die with the thread that started them, which killed them within seconds when a helper thread started
    them), gives the local engine's numbers, and is shut down after."""
    ray = require_module("ray", 'Ray is not installed (pip install -e ".[test]" installs it)')
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # else Ray writes ~/.ray/auth_token, which the clusters started
    # by `ray start` on this machine afterwards then require, and their second node fails to join the first
    local = compare_matrix(experiment_ids=[scores], metric="accuracy", models=MODELS, tracking_uri=tracking_uri,
                           log=False, jobs=1, **FAST)
    handler = signal.getsignal(signal.SIGTERM)
    on_ray = compare_matrix(experiment_ids=[scores], metric="accuracy", models=MODELS, tracking_uri=tracking_uri,
                            log=False, engine="ray", jobs=1, **FAST)
    assert _numbers(on_ray) == _numbers(local)
    assert not ray.is_initialized()
    assert signal.getsignal(signal.SIGTERM) is handler  # Ray's own handler did not replace the process's
