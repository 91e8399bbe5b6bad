"""End to end against a real ``mlflow server --app-name bayescompare`` backed by PostgreSQL (a fresh database per
module, dropped afterwards): the three layouts collected and compared, ``compare`` through the CLI as a subprocess
(``--json``), ``matrix`` over three models, and the server app's JSON API.  Skips unless
``MLFLOW_BAYESCOMPARE_PG_URI`` names a PostgreSQL role that may create databases."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from servers import Server, create_pg_database, drop_pg_database, require_pg

from mlflow_bayescompare import hierarchical_test
from mlflow_bayescompare.client import RequestRefused
from mlflow_bayescompare.families.hierarchical.run import COMPARISON_ARTIFACTS
from mlflow_bayescompare.pipeline.compare import compare_runs
from mlflow_bayescompare.reads.collect import collect_scores
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.runs.runlog import RUN_NAME_LENGTH, start_run
from mlflow_bayescompare.shared.run_content import run_name

pytestmark = [pytest.mark.postgres, pytest.mark.server, pytest.mark.slow]

MODELS = ("rf", "svm", "knn")
OFFSETS = {"rf": 0.03, "svm": 0.0, "knn": -0.01}
DATASETS = [f"ds{i}" for i in range(5)]
FOLDS, REPEATS = 10, 10
FAST = {"chains": 2, "draws": 400, "seed": 7}


def _scores(model: str, dataset: str, n: int) -> np.ndarray:
    rng = np.random.default_rng([MODELS.index(model), DATASETS.index(dataset)])
    return np.round(np.clip(0.75 + OFFSETS[model] + 0.02 * DATASETS.index(dataset) + rng.normal(0, 0.02, n), 0, 1), 6)


def _log_steps(client, eid):
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: log_cv_scores(k[0], k[1], _scores(*k, FOLDS * REPEATS), folds=FOLDS, repeats=REPEATS,
                                              experiment_id=eid, client=client),
                      [(m, d) for m in MODELS for d in DATASETS]))


def _log_keys(client, eid):
    def one(key):
        m, d = key
        run_id = client.create_run(eid, tags={"model": m, "dataset": d}).info.run_id
        now = int(time.time() * 1000)
        client.log_batch(run_id, metrics=[Metric(f"accuracy_fold_{i}", float(v), now, 0)
                                          for i, v in enumerate(_scores(m, d, FOLDS * REPEATS))],
                         params=[Param("cv_folds", str(FOLDS)), Param("cv_repeats", str(REPEATS))])
        client.set_terminated(run_id)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, [(m, d) for m in MODELS for d in DATASETS]))


def _log_children(client, eid, models=("rf", "svm")):
    """One parent per (model, dataset), one child run per fold (10 folds, one repeat: 100 child runs)."""
    def one(key):
        m, d = key
        parent = client.create_run(eid, tags={"model": m, "dataset": d}).info.run_id
        client.log_batch(parent, params=[Param("cv_folds", str(FOLDS))])
        for fold, value in enumerate(_scores(m, d, FOLDS)):
            child = client.create_run(eid, tags={"mlflow.parentRunId": parent, "fold": str(fold)}).info.run_id
            client.log_batch(child, metrics=[Metric("accuracy", float(value), 0, 0)],
                             tags=[RunTag("repeat", "0")])
            client.set_terminated(child)
        client.set_terminated(parent)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, [(m, d) for m in models for d in DATASETS]))


@functools.cache
def _reference(per_dataset: int) -> tuple[float, float, float]:
    """P(rf better), P(rope), P(svm better) of the engine itself on the generated scores (``per_dataset`` each),
    with the settings of the comparisons below."""
    rf, svm = (np.array([_scores(m, d, per_dataset) for d in DATASETS]) for m in ("rf", "svm"))
    res = hierarchical_test(rf, svm, folds=FOLDS, **FAST)
    return res.p_a_better, res.p_rope, res.p_b_better


@pytest.fixture(scope="module")
def pg(tmp_path_factory):
    """A bayescompare server on a fresh PostgreSQL database, with one experiment per layout."""
    backend = create_pg_database(require_pg())
    assert backend.startswith("postgresql+psycopg2://")
    tmp = tmp_path_factory.mktemp("pg-e2e")
    try:
        srv = Server(tmp, backend, extra=["--workers", "2"])
    except RuntimeError:
        drop_pg_database(backend)
        raise
    try:
        srv.client = MlflowClient(srv.url)
        tag = uuid.uuid4().hex[:8]
        srv.experiments = {}
        for layout, log in (("steps", _log_steps), ("keys", _log_keys), ("children", _log_children)):
            eid = srv.client.create_experiment(f"{layout}-{tag}")
            log(srv.client, eid)
            srv.experiments[layout] = eid
        yield srv
    finally:
        srv.stop()
        drop_pg_database(backend)


def test_the_store_really_is_postgresql(pg):
    import psycopg2

    parts = urllib.parse.urlsplit(pg.backend)
    conn = psycopg2.connect(urllib.parse.urlunsplit(parts._replace(scheme="postgresql")))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM runs WHERE experiment_id = %s", (int(pg.experiments["steps"]),))
            assert cur.fetchone()[0] == len(MODELS) * len(DATASETS)
            cur.execute("SELECT count(*) FROM metrics WHERE key = 'accuracy' AND run_uuid IN "
                        "(SELECT run_uuid FROM runs WHERE experiment_id = %s)", (int(pg.experiments["steps"]),))
            assert cur.fetchone()[0] == len(MODELS) * len(DATASETS) * FOLDS * REPEATS
    finally:
        conn.close()


def test_a_run_named_by_long_model_names_is_stored(pg):
    """PostgreSQL keeps a run name of at most 250 characters: the run of two models named by 200 characters each
    (tags and params hold names up to 8000 and 6000) is created with its name cut, not refused after the fit."""
    name = run_name("a" * 200, "b" * 200, "accuracy")
    run_id = start_run(pg.client, pg.client.create_experiment(f"names-{uuid.uuid4().hex[:8]}"), name=name, tags={})
    assert pg.client.get_run(run_id).info.run_name == name[:RUN_NAME_LENGTH - 1] + "…"


@pytest.mark.parametrize("layout", ["steps", "keys", "children"])
def test_each_layout_is_detected_read_exactly_and_compared(pg, layout):
    eid = pg.experiments[layout]
    models = ["rf", "svm"]
    collected = collect_scores(pg.client, [eid], "accuracy", models)
    assert collected.layout == layout
    if layout == "steps":
        assert collected.fetch_method == "bulk"  # the server's get-history-bulk endpoint
    per_dataset = FOLDS if layout == "children" else FOLDS * REPEATS
    for (model, dataset), group in collected.scores.groupby(["model", "dataset"]):
        got = group.sort_values(["repeat", "fold"])["score"].to_numpy()
        np.testing.assert_allclose(got, _scores(model, dataset, per_dataset))  # every score, in fold order

    outcome = compare_runs(experiment_ids=[eid], metric="accuracy", model_a="rf", model_b="svm",
                           tracking_uri=pg.url, **FAST)
    assert outcome.layout == layout and list(outcome.tensor.datasets) == DATASETS
    # read back exactly, the fit is the engine's on the generated scores, draw for draw
    assert (outcome.p_a_better, outcome.p_rope, outcome.p_b_better) == _reference(per_dataset)
    # rf is 0.03 (three ropes) better on every dataset: certain with 100 scores a dataset, 0.96 with 10
    assert outcome.p_a_better >= (0.99 if per_dataset == FOLDS * REPEATS else 0.95)
    run = pg.client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED" and run.info.experiment_id == eid
    assert run.data.tags["bayescompare.kind"] == "comparison" and run.data.params["layout"] == layout
    artifacts = {a.path for a in pg.client.list_artifacts(outcome.run_id)}
    assert {path.split("/")[0] for path in COMPARISON_ARTIFACTS} <= artifacts


def test_cli_compare_json_against_the_server(pg):
    eid = pg.experiments["steps"]
    env = {**os.environ, "MLFLOW_TRACKING_URI": pg.url}
    done = subprocess.run(
        [sys.executable, "-m", "mlflow_bayescompare.cli", "compare", "--experiment-id", eid, "--metric", "accuracy",
         "--model-a", "svm", "--model-b", "knn", "--json", "--require", "not-worse", "--chains", "2", "--draws",
         "400", "--seed", "7"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    report = json.loads(done.stdout)  # exactly one JSON object on stdout
    assert {"p_a_better", "p_rope", "p_b_better", "verdict", "run_id", "experiment_id"} <= set(report)
    assert report["experiment_id"] == eid and report["n_datasets"] == len(DATASETS)
    assert done.returncode == (0 if report["require"]["supported"] else 1)
    run = pg.client.get_run(report["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["p_a_better"] == pytest.approx(report["p_a_better"])
    assert "Traceback" not in done.stderr


def test_cli_matrix_of_three_models(pg):
    eid = pg.experiments["keys"]
    done = subprocess.run(
        [sys.executable, "-m", "mlflow_bayescompare.cli", "matrix", "--tracking-uri", pg.url, "--experiment-id", eid,
         "--metric", "accuracy", "--models", ",".join(MODELS), "--jobs", "2", "--json", "--chains", "2", "--draws",
         "400", "--seed", "7"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert len(report["pairs"]) == 3 and report["ranking"][0]["model"] == "rf"
    parent = pg.client.get_run(report["run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["bayescompare.kind"] == "matrix"
    children = pg.client.search_runs([eid], f"tags.`mlflow.parentRunId` = '{report['run_id']}'")
    assert len(children) == 3 and all(c.info.status == "FINISHED" for c in children)


def test_json_api_on_postgresql(pg):
    api = pg.api()
    run_id = api.start("comparison", {"experiment_id": [pg.experiments["children"]], "metric": "accuracy",
                                      "model_a": "rf", "model_b": "svm", **FAST})
    state = api.wait(run_id)
    assert state["status"] == "FINISHED", state
    assert (state["p_a_better"], state["p_rope"], state["p_b_better"]) == _reference(FOLDS)  # the same fit
    run = pg.client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.params["layout"] == "children"
    report = api.session.get(f"{pg.root}{state['report_url']}", timeout=30)
    assert report.status_code == 200 and "rf" in report.text
    # a bad request gets the CLI's message
    with pytest.raises(RequestRefused) as refused:
        api.start("comparison", {"experiment_id": [pg.experiments["steps"]], "metric": "accuracy", "model_a": "rf",
                                 "model_b": "xgboost"})
    assert refused.value.status == 400 and "model 'xgboost' is in no run" in str(refused.value)
    choices = api.session.get(f"{pg.url}/bayescompare/api/choices",
                              params={"experiment_id": pg.experiments["steps"]}, timeout=30).json()
    assert sorted(choices["models"]) == sorted(MODELS) and "accuracy" in choices["metrics"]
