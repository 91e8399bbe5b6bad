"""Shared fixtures: a real sqlite tracking store per test and a real ``mlflow server`` per session."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.tracking._tracking_service import utils as tracking_utils
from servers import Server, create_pg_database, drop_pg_database, require_pg

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session", autouse=True)
def _pair_cache_key(tmp_path_factory):
    """The pair cache's key (``runs/cachekey.py``) is kept in a folder of this session, not the user's ``~/.config``;
    the servers the tests start inherit it, as a server inherits its user's."""
    saved = {name: os.environ.pop(name, None) for name in ("XDG_CONFIG_HOME", "MLFLOW_BAYESCOMPARE_CACHE_KEY")}
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield
    for name, value in saved.items():
        os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


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


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def mlflow_server(request, tmp_path_factory):
    """URI of a real ``mlflow server`` on 127.0.0.1, backed by sqlite or by a fresh PostgreSQL database (created
    through env MLFLOW_BAYESCOMPARE_PG_URI, dropped afterwards)."""
    tmp = tmp_path_factory.mktemp(f"server-{request.param}")
    if request.param == "postgres":
        backend = create_pg_database(require_pg())
    else:
        backend = f"sqlite:///{tmp / 'mlflow.db'}"
    try:
        server = Server(tmp, backend, app=None, extra=["--workers", "1"], timeout=90)
    except RuntimeError as exc:
        if request.param == "postgres":
            drop_pg_database(backend)
        pytest.fail(str(exc))
    try:
        yield server.url
    finally:
        server.stop()
        if request.param == "postgres":
            drop_pg_database(backend)


@pytest.fixture
def server_client(mlflow_server) -> MlflowClient:
    return MlflowClient(mlflow_server)


@pytest.fixture
def server_experiment_id(server_client) -> str:
    """A fresh, uniquely named experiment on the session's server (a PostgreSQL store may outlive the session)."""
    return server_client.create_experiment(f"cv-{uuid.uuid4().hex[:12]}")
