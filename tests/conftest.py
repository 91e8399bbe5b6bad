"""Shared fixtures: a real sqlite tracking store per test and a real ``mlflow server`` per session."""

from __future__ import annotations

import inspect
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
from skip_policy import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401 (the skip policy's hooks)

DATA = Path(__file__).parent / "data"
TESTS = Path(__file__).resolve().parent
#: shared fixtures of ours that are cheap to set up again: they do not tie their tests to one pytest-xdist worker
CHEAP_SHARED = {"uci", "_empty_sqlite_db", "_stan_programs_compiled", "_pair_cache_key"}
#: marks whose tests run one after another on one worker: two Ray clusters (or a cluster and a local Ray) at once
#: on the machine's two cores would compete for ports and CPUs that each test counts on
ONE_WORKER_MARKS = ("ray",)


def pytest_configure(config):
    """``CPU_TIMES=1``: the CPU seconds of every test, and a table by file at the end (``cpu_times.py``)."""
    if os.environ.get("CPU_TIMES") == "1" and not config.pluginmanager.has_plugin("cpu_times"):
        import cpu_times

        config.pluginmanager.register(cpu_times, "cpu_times")


# ---------------------------------------------------------------------------------------------- xdist groups


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups into the tests' ids
def pytest_collection_modifyitems(config, items):
    """Tie the tests that share a fixture of ours set up once per module or session (a server, a cluster, a store
    full of runs; all but :data:`CHEAP_SHARED`) to one pytest-xdist group, each parameter of such a fixture (a
    server on sqlite, on PostgreSQL) a group of its own: ``--dist loadgroup`` then runs a group on one worker, so
    each server starts once, and the groups, largest first, beside the tests that share nothing, which go one by
    one (the slow ones first) to whichever worker is free.  Tests that share two such fixtures join their groups
    into one, and the tests of each mark of :data:`ONE_WORKER_MARKS` make one group."""
    owner: dict[str, str] = {}  # union-find over the fixtures' keys

    def root(key: str) -> str:
        while owner.setdefault(key, key) != key:
            key = owner[key]
        return key

    keys = {item.nodeid: _shared_fixture_keys(item) for item in items}
    # a fixture every test uses (an autouse one) ties nothing: grouping on it would put the whole run on one worker
    everywhere = set.intersection(*(set(found) for found in keys.values())) if len(items) > 1 else set()
    keys = {nodeid: [key for key in found if key not in everywhere] for nodeid, found in keys.items()}
    for found in keys.values():
        for key in found[1:]:
            owner[root(key)] = root(found[0])
    for item in items:
        if keys[item.nodeid]:
            item.add_marker(pytest.mark.xdist_group(root(keys[item.nodeid][0])))
    # the tests that share nothing go out in this order once the groups are handed out: the slow ones first, so that
    # the quick ones, not a minutes-long one, fill the end of the run
    items.sort(key=lambda item: 0 if keys[item.nodeid] else 1 if item.get_closest_marker("slow") else 2)


def _shared_fixture_keys(item) -> list[str]:
    """One key per fixture of ours, scoped wider than a test, that ``item`` uses: the fixture's name, its module
    unless it is session-wide, and its parameter for this test."""
    info = getattr(item, "_fixtureinfo", None)
    params = getattr(getattr(item, "callspec", None), "params", {})
    found = []
    for name in item.fixturenames if info else ():
        definitions = info.name2fixturedefs.get(name) or ()
        if not definitions or name in CHEAP_SHARED:
            continue
        definition = definitions[-1]
        if definition.scope == "function" or not Path(inspect.getfile(definition.func)).resolve().is_relative_to(TESTS):
            continue
        where = "" if definition.scope == "session" else f"{item.module.__name__}::"
        found.append(f"{where}{name}" + (f"[{params[name]}]" if name in params else ""))
    found += [f"mark:{mark}" for mark in ONE_WORKER_MARKS if item.get_closest_marker(mark)]
    return sorted(found)


@pytest.fixture(scope="session", autouse=True)
def _stan_programs_compiled():
    """Every Stan program compiled (or found in the cache) before this process's first test, by what
    ``mlflow-bayescompare compile`` runs: a test that expects a program cached (``compile_seconds`` 0, the stage
    ``compiling`` skipped) then holds whichever pytest-xdist worker runs it, in any order.  Seconds when the cache
    holds them (``.ci/run`` compiles first); the workers compile each program once between them (its compile lock).
    Tests of a cold compile use caches of their own.  Nothing on a machine without a Stan backend."""
    from mlflow_bayescompare.sampling import programs, sampler
    from mlflow_bayescompare.vocabulary.errors import InputError

    try:
        sampler.compile_programs(programs.PROGRAMS)
    except InputError:  # no backend here: the tests that need one say so
        pass


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
    """``sqlite:///{tmp_path}/mlflow.db``, also set as the global tracking URI for the test (then restored). No
    experiment is active in it: ``mlflow.set_experiment`` in an earlier test of the worker leaves its id in
    ``MLFLOW_EXPERIMENT_ID``, which a subprocess (``mlflow run``) would inherit and look up in this store."""
    _forget_active_experiment()
    shutil.copy(_empty_sqlite_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    previous, previous_env = tracking_utils._tracking_uri, os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)  # also sets env MLFLOW_TRACKING_URI
    yield uri
    mlflow.set_tracking_uri(previous)
    if previous_env is not None:
        os.environ["MLFLOW_TRACKING_URI"] = previous_env
    _forget_active_experiment()


def _forget_active_experiment():
    """MLflow's fluent API keeps the active experiment in a module global and in ``MLFLOW_EXPERIMENT_ID``."""
    from mlflow.tracking import fluent

    os.environ.pop("MLFLOW_EXPERIMENT_ID", None)
    fluent._active_experiment_id = None


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
