"""Shared fixtures: a real sqlite tracking store per test and a real ``mlflow server`` per session."""

from __future__ import annotations

import contextlib
import os
import signal
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.tracking._tracking_service import utils as tracking_utils

DATA = Path(__file__).parent / "data"
PG_ENV = "MLFLOW_BAYESCOMPARE_PG_URI"


@pytest.fixture(scope="session")
def uci() -> pd.DataFrame:
    """The paper's data: 10 x 10-fold CV of 5 classifiers on 54 UCI datasets (see tests/data/README.md)."""
    return pd.read_csv(DATA / "uci_classification.csv")


# ---------------------------------------------------------------------------------------------- sqlite


@pytest.fixture(scope="session")
def _empty_sqlite_db(tmp_path_factory) -> Path:
    """An empty, migrated MLflow sqlite database, created once and copied per test (migrations take seconds)."""
    path = tmp_path_factory.mktemp("template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def tracking_uri(tmp_path, _empty_sqlite_db):
    """``sqlite:///{tmp_path}/mlflow.db``, also set as the global tracking URI for the test (then restored)."""
    shutil.copy(_empty_sqlite_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    previous, previous_env = tracking_utils._tracking_uri, os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)  # also sets env MLFLOW_TRACKING_URI
    yield uri
    mlflow.set_tracking_uri(previous)
    if previous_env is not None:
        os.environ["MLFLOW_TRACKING_URI"] = previous_env


@pytest.fixture
def client(tracking_uri) -> MlflowClient:
    return MlflowClient(tracking_uri)


@pytest.fixture
def experiment_id(client, tmp_path) -> str:
    """A fresh experiment whose artifacts go under tmp_path."""
    return client.create_experiment("cv", artifact_location=(tmp_path / "artifacts").as_uri())


# ---------------------------------------------------------------------------------------------- server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # uvicorn workers may outlive `mlflow server`
            pytest.fail(f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"mlflow server at {url} not healthy after {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def mlflow_server(request, tmp_path_factory):
    """URI of a real ``mlflow server`` on 127.0.0.1, backed by sqlite or by PostgreSQL (env MLFLOW_BAYESCOMPARE_PG_URI)."""
    tmp = tmp_path_factory.mktemp(f"server-{request.param}")
    if request.param == "postgres":
        backend = os.environ.get(PG_ENV)
        if not backend:
            pytest.skip(f"set {PG_ENV}=postgresql://user:pass@host/db to run the server tests on PostgreSQL")
    else:
        backend = f"sqlite:///{tmp / 'mlflow.db'}"
    url = f"http://127.0.0.1:{_free_port()}"
    log = tmp / "server.log"
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1],
           "--backend-store-uri", backend, "--artifacts-destination", str(tmp / "artifacts"), "--workers", "1"]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    with open(log, "wb") as out:  # own process group: uvicorn runs as a child of `mlflow server`
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        _wait_healthy(url, proc, log)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def server_client(mlflow_server) -> MlflowClient:
    return MlflowClient(mlflow_server)


@pytest.fixture
def server_experiment_id(server_client) -> str:
    """A fresh, uniquely named experiment on the session's server (a PostgreSQL store may outlive the session)."""
    return server_client.create_experiment(f"cv-{uuid.uuid4().hex[:12]}")
