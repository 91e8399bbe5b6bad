"""What the server accepts: everything the command line would reject, and everything beyond the server's own
limits, gets its 4xx before any run (or experiment) exists; a full queue gets 503 and writes nothing; jobs beyond
``MLFLOW_BAYESCOMPARE_MAX_JOBS`` wait ``queued``.  One real server with small limits."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from mlflow import MlflowClient
from servers import Server

from mlflow_bayescompare.client import RequestRefused
from mlflow_bayescompare.reads.cvlog import log_cv_scores

pytestmark = [pytest.mark.server, pytest.mark.slow]  # slow: each test needs the servers this module starts

LIMITS = {"MLFLOW_BAYESCOMPARE_MAX_JOBS": "1", "MLFLOW_BAYESCOMPARE_MAX_QUEUE": "2",
          "MLFLOW_BAYESCOMPARE_MAX_CHAINS": "4", "MLFLOW_BAYESCOMPARE_MAX_DRAWS": "60000",
          "MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS": "2"}
FAST = {"chains": 2, "draws": 200, "seed": 1}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limits")
    srv = Server(tmp, f"sqlite:///{tmp / 'mlflow.db'}", extra=["--workers", "1"], env=LIMITS)
    srv.client = MlflowClient(srv.url)
    srv.cv = srv.client.create_experiment("cv")
    srv.folds = srv.client.create_experiment("folds")
    rng = np.random.default_rng(5)
    for i, model in enumerate(("lda", "cart", "svm")):
        for d in range(4):
            scores = np.clip(0.7 + 0.02 * i + 0.03 * d + rng.normal(0, 0.03, 10), 0, 1)
            log_cv_scores(model, f"d{d}", scores, folds=10, experiment_id=srv.cv, client=srv.client)
    for dataset, folds_b in (("d0", 5), ("d1", 10)):  # b has 5 folds on d0 where a has 10
        log_cv_scores("a", dataset, rng.uniform(0.7, 0.8, 10), folds=10, experiment_id=srv.folds, client=srv.client)
        log_cv_scores("b", dataset, rng.uniform(0.7, 0.8, folds_b), folds=folds_b, experiment_id=srv.folds,
                      client=srv.client)
    yield srv
    srv.stop()


def _snapshot(srv) -> tuple:
    experiments = sorted(e.experiment_id for e in srv.client.search_experiments())
    return experiments, {r.info.run_id for r in srv.client.search_runs(experiments, max_results=5000)}


def _comparison(srv, **extra) -> dict:
    return {"experiment_id": [srv.cv], "metric": "accuracy", "model_a": "lda", "model_b": "cart", **FAST, **extra}


def _raw(**raw: str) -> str:
    """JSON text of a comparison with fields whose values are written as given (NaN, 1e400 …); the test puts the
    experiment id in place of ``"__CV__"``."""
    text = json.dumps({"experiment_id": ["__CV__"], "metric": "accuracy", "model_a": "lda", "model_b": "cart",
                       **FAST})[:-1]
    return text + "".join(f', "{k}": {v}' for k, v in raw.items()) + "}"


REFUSED = [  # (path, body or raw JSON text, HTTP status, words of the answer)
    ("/api/comparisons", {"metric": None}, 400, "Missing field 'metric'"),
    ("/api/comparisons", {"metric": ""}, 400, "Invalid value for 'metric'"),
    ("/api/comparisons", {"metric": "loss"}, 400, "metric 'loss' not found"),
    ("/api/comparisons", {"model_b": "lda"}, 400, "compare two different models"),
    ("/api/comparisons", {"model_b": "knn"}, 400, "model 'knn' is in no run tagged 'model'"),
    ("/api/comparisons", {"experiment_id": None, "experiment_name": ["nope"]}, 400, "no experiment named 'nope'"),
    ("/api/comparisons", {"experiment_id": ["1" * 20]}, 400, "is not an experiment id"),
    ("/api/comparisons", {"experiment_id": ["9223372036854775807"]}, 400, "no experiment with id"),
    ("/api/comparisons", {"experiment_id": []}, 400, "name at least one experiment"),
    ("/api/comparisons", {"tracking_uri": "file:///tmp"}, 400, "unknown field 'tracking_uri'"),
    ("/api/comparisons", {"chains": 1.7}, 400, "Invalid value for 'chains': must be a whole number"),
    ("/api/comparisons", {"chains": "2; rm -rf /"}, 400, "Invalid value for 'chains'"),
    ("/api/comparisons", {"chains": True}, 400, "Invalid value for 'chains'"),
    ("/api/comparisons", {"chains": 5}, 400, "must be <= 4 on this server (MLFLOW_BAYESCOMPARE_MAX_CHAINS)"),
    ("/api/comparisons", {"draws": 60001}, 400, "must be <= 60000 on this server (MLFLOW_BAYESCOMPARE_MAX_DRAWS)"),
    ("/api/comparisons", {"warmup": 60001}, 400, "Invalid value for 'warmup': must be <= 60000 on this server"),
    ("/api/comparisons", {"lower_is_better": "yes"}, 400, "'lower_is_better' must be true or false"),
    ("/api/comparisons", {"rope": -0.01}, 400, "Invalid value for 'rope'"),
    ("/api/comparisons", {"prior": "flat"}, 400, "Invalid value for 'prior'"),
    ("/api/comparisons", {"require": "a-worse"}, 400, "Invalid value for 'require'"),
    ("/api/comparisons", {"experiment_id": ["FOLDS"], "model_a": "a", "model_b": "b"}, 400,
     "Cannot compare 'a' with 'b':\n  - dataset 'd0': fold count differs: 'a' uses 10 folds, 'b' uses 5"),
    ("/api/comparisons", {"folds": 1001}, 400, "--folds 1001 (folds=1001) contradicts the param cv_folds=10 logged "
                                               "by dataset 'd0' model 'cart'"),
    ("/api/comparisons", {"rope": 1e308}, 400, "rope 1e+308 is more than 1e+06 times the largest 'accuracy' score"),
    ("/api/comparisons", {"model_a": "lda\ud800"}, 400, "Invalid value for 'model_a': is not text that UTF-8 can"),
    ("/api/comparisons", _raw(rope="NaN"), 400, "NaN is not a JSON value"),
    ("/api/comparisons", _raw(threshold="Infinity"), 400, "Infinity is not a JSON value"),
    ("/api/comparisons", _raw(rope="1e400"), 400, "Invalid value for 'rope'"),
    ("/api/comparisons", _raw(threshold="-1e400"), 400, "Invalid value for 'threshold'"),
    ("/api/comparisons", _raw(chains="1e400"), 400, "Invalid value for 'chains'"),
    ("/api/comparisons", _raw(seed="1e400"), 400, "Invalid value for 'seed'"),
    ("/api/comparisons", _raw(seed="1" + "0" * 400), 400, "Invalid value for 'seed'"),
    ("/api/comparisons", "[" * 20000 + "]" * 20000, 400, "nested more than"),
    ("/api/comparisons", "[]", 400, "must be a JSON object"),
    ("/api/comparisons", '{"metric": ', 400, "not valid JSON"),
    ("/api/matrix", {"models": ["lda", "cart", "svm"]}, 400, "this server compares at most 2 at once"),
    ("/api/matrix", {}, 400, "3 models; this server compares at most 2 at once"),
    ("/api/matrix", {"models": ["lda"]}, 400, "models"),
    ("/api/matrix", {"models": ["lda", "lda"]}, 400, "listed more than once: lda"),
    ("/api/matrix", {"sensitivity": True}, 400, "unknown field 'sensitivity'"),
    ("/api/matrix", {"engine": "ray"}, 400, "unknown field 'engine'"),  # the server's: MLFLOW_BAYESCOMPARE_ENGINE
    ("/api/matrix", {"refresh": "yes"}, 400, "'refresh' must be true or false"),
    ("/api/rankings", {"refresh": True}, 400, "unknown field 'refresh'"),
    ("/api/rankings", {"models": ["lda", "cart"]}, 400, "a ranking needs at least 3 models; got 2 (lda, cart): "
                                                       "compare two models"),
    ("/api/rankings", {"models": ["lda", "cart", "knn"]}, 400, "model 'knn' is in no run tagged 'model'"),
    ("/api/rankings", {"experiment_id": ["FOLDS"]}, 400, "a ranking needs at least 3 models; got 2 (a, b)"),
    ("/api/rankings", {"rope": 0.01}, 400, "Invalid value for 'rope'"),
    ("/api/rankings", {"sensitivity": True}, 400, "unknown field 'sensitivity'"),
    ("/api/rankings", {"chains": 5}, 400, "must be <= 4 on this server (MLFLOW_BAYESCOMPARE_MAX_CHAINS)"),
    ("/api/rankings", {"models": {"lda": 1}}, 400, "Invalid value for 'models': must be a list of names"),
    ("/api/matrix", {"models": {"lda": 1}}, 400, "Invalid value for 'models': must be a list of names"),
    ("/api/rankings", {"models": ["lda\ud800", "cart", "svm"]}, 400, "Invalid value for 'models': is not text"),
    ("/api/rankings", {"drop_incomplete": True, "skip_missing": True}, 400,
     "drop_incomplete and skip_missing exclude each other"),
    # several metrics, a rope and a direction per metric, a ranking's reference (vs): each field's wrong JSON types
    ("/api/comparisons", {"metric": ["accuracy", "loss"]}, 400, "Invalid value for 'metric': must be a string"),
    ("/api/comparisons", {"metric": "accuracy,loss"}, 400, "Cannot read metric 'loss':"),
    ("/api/comparisons", {"metric": "accuracy,a\ud800"}, 400, "Invalid value for 'metric': is not text that UTF-8"),
    ("/api/comparisons", {"rope": {"accuracy": 1e308}}, 400, "rope 1e+308 is more than 1e+06 times the largest"),
    ("/api/comparisons", {"rope": {"accuracy": True}}, 400, "must be a finite number > 0; got True for metric"),
    ("/api/comparisons", {"rope": "accuracy=NaN"}, 400, "must be a finite number > 0; got 'NaN' for metric"),
    ("/api/comparisons", {"rope": {"auc": 0.1}}, 400, "rope names metric 'auc', which was not asked for"),
    ("/api/comparisons", {"direction": {"accuracy": 1}}, 400, "must be one of higher, lower; got 1 for metric"),
    ("/api/comparisons", {"direction": {"accuracy": "lower"}, "folds": 20}, 400,
     "--folds 20 (folds=20) contradicts the param cv_folds=10"),
    ("/api/rankings", {"vs": 5}, 400, "Invalid value for 'vs': must be a string"),
    ("/api/rankings", {"vs": "knn"}, 400, "vs 'knn' is not among the models ranked"),
    ("/api/rankings", {"metric_rope": {"accuracy": "0.1"}, "direction": ["lower"]}, 400,
     "Invalid value for 'direction': must be one of higher, lower; got ['lower']"),
    ("/api/rankings", {"metric_rope": {"accuracy": 1e308}}, 400, "metric_rope 1e+308 is more than 1e+06 times"),
    ("/api/comparisons", {"target_experiment": "t" * 257}, 400,
     "a new target experiment's name may hold at most 256 characters"),
]


@pytest.mark.parametrize("path, body, code, words", REFUSED,
                         ids=[f"{p.rsplit('/', 1)[1]}-{i}" for i, (p, *_) in enumerate(REFUSED)])
def test_refused_before_any_run_exists(server, path, body, code, words):
    before = _snapshot(server)
    s = server.api().session
    if isinstance(body, dict):
        fields = _comparison(server, **body)
        if path in ("/api/matrix", "/api/rankings"):
            fields = {k: v for k, v in fields.items() if k not in ("model_a", "model_b")}
        if fields.get("experiment_id") == ["FOLDS"]:
            fields["experiment_id"] = [server.folds]
        fields = {k: v for k, v in fields.items() if v is not None}
        resp = s.post(f"{server.url}/bayescompare{path}", json=fields, timeout=60)
    else:
        text = body.replace('"__CV__"', json.dumps(server.cv))
        resp = s.post(f"{server.url}/bayescompare{path}", data=text.encode(), timeout=60,
                      headers={"Content-Type": "application/json"})
    assert resp.status_code == code, resp.text[:500]
    assert words in resp.json()["error"], resp.json()["error"]
    assert _snapshot(server) == before


def test_body_limits(server):
    s = server.api().session
    url = f"{server.url}/bayescompare/api/comparisons"
    big = json.dumps({**_comparison(server), "filter": "x" * (64 * 1024)})
    resp = s.post(url, data=big, headers={"Content-Type": "application/json"}, timeout=30)
    assert resp.status_code == 413 and "larger than 65536 bytes" in resp.json()["error"]
    resp = s.post(url, data=b'{"metric": "\xff"}', headers={"Content-Type": "application/json"}, timeout=30)
    assert resp.status_code == 400 and "UTF-8" in resp.json()["error"]
    resp = s.post(url, data="metric=accuracy", headers={"Content-Type": "application/x-www-form-urlencoded"},
                  timeout=30)
    assert resp.status_code == 415


def test_experiments_api(server):
    listed = server.api().session.get(f"{server.url}/bayescompare/api/experiments", timeout=30).json()
    assert listed == {"experiments": [{"experiment_id": "0", "name": "Default"},
                                      {"experiment_id": server.cv, "name": "cv"},
                                      {"experiment_id": server.folds, "name": "folds"}]}


def test_jobs_wait_for_a_slot_and_a_full_queue_gets_503_with_no_run(server):
    """MAX_JOBS=1: the second job waits ``queued`` while the first samples; MAX_QUEUE=2: a third is refused with
    503 and leaves no run behind; once the queue has room, jobs are accepted again."""
    api = server.api()
    slow = api.start("comparison", _comparison(server, draws=20000))
    waiting = api.start("comparison", _comparison(server, model_b="svm"))
    deadline = time.monotonic() + 300
    while api.status(slow, wait=30)["stage"] != "sampling":  # each answer at the job's next step
        assert time.monotonic() < deadline
    assert api.status(waiting)["stage"] == "queued"
    before = _snapshot(server)
    with pytest.raises(RequestRefused) as refused:
        api.start("comparison", _comparison(server, model_a="svm"))
    assert refused.value.status == 503 and "MLFLOW_BAYESCOMPARE_MAX_QUEUE=2" in str(refused.value), refused.value
    assert _snapshot(server) == before
    first, second = api.wait(slow), api.wait(waiting)
    assert (first["status"], second["status"]) == ("FINISHED", "FINISHED")
    assert second["start_time"] < first["end_time"] <= second["end_time"]  # accepted while the first ran
    again = api.start("comparison", _comparison(server, model_a="svm"))
    assert api.wait(again)["status"] == "FINISHED"
