"""The ``bayescompare`` server app: a real ``mlflow server --app-name bayescompare`` on 127.0.0.1.  Its JSON API is
checked value for value against the command line and the Python API (same seed, same probabilities), its page is
driven in headless Chromium, and gunicorn, ``--static-prefix``, the start-up sweep of stale runs and the start-up
compile of the Stan programs each run on a server of their own.  Security: ``test_security.py``; limits:
``test_server_limits.py``; a server stopped or killed mid-job: ``test_faults.py``."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import requests
from mlflow import MlflowClient
from mlflow.entities import Metric, RunTag
from servers import (
    Server,
    chromium_page,
    create_pg_database,
    drop_pg_database,
    require_chromium,
    require_pg,
    show_past_run,
)
from uci_runs import log_uci_with_time

from mlflow_bayescompare.client import JobFailed
from mlflow_bayescompare.families.ranking.hierarchical_k.report import DIFFERS as JOINT_DIFFERS
from mlflow_bayescompare.pipeline.compare import compare_matrix, compare_runs, rank_runs, require
from mlflow_bayescompare.pipeline.evals import compare_evaluation_runs
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.sampling import programs, pystan_backend
from mlflow_bayescompare.server.owners import owner_tags
from mlflow_bayescompare.shared.report_html import format_differences, format_probability
from mlflow_bayescompare.vocabulary import claims
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.outcomes import COLORS

pytestmark = [pytest.mark.server, pytest.mark.slow]  # slow: each test needs the servers this module starts

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
MODELS = ("lda", "cart", "svm")
OFFSETS = {"lda": 0.0, "cart": -0.03, "svm": 0.005}
FAST = {"chains": 2, "draws": 200}
PROBABILITIES = ("p_a_better", "p_rope", "p_b_better")
#: a decision on two metrics, the second (lower is better) with a rope of its own
SEVERAL = {"metric": "accuracy,fit_time", "rope": "fit_time=0.1", "direction": "fit_time=lower"}


def _log_runs(client: MlflowClient, name: str, datasets: int = 5) -> str:
    eid = client.create_experiment(name)
    rng = np.random.default_rng(7)
    for model in MODELS:
        for d in range(datasets):
            scores = np.clip(0.7 + 0.03 * d + OFFSETS[model] + rng.normal(0, 0.03, 20), 0, 1)
            log_cv_scores(model, f"dataset-{d}", scores, folds=10, repeats=2, experiment_id=eid, client=client)
    return eid


def _log_means(client: MlflowClient, name: str, datasets: int = 6) -> str:
    """The means layout: one run per (model, dataset), holding one score."""
    eid = client.create_experiment(name)
    rng = np.random.default_rng(3)
    for model, offset in (("nbc", 0.0), ("hnb", 0.02)):
        for d in range(datasets):
            run = client.create_run(eid, tags={"model": model, "dataset": f"uci-{d}"})
            client.log_batch(run.info.run_id, metrics=[Metric("accuracy", 0.7 + 0.02 * d + offset
                                                              + rng.normal(0, 0.01), 0, 0)])
            client.set_terminated(run.info.run_id)
    return eid


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"bc-{request.param}")
    backend = create_pg_database(require_pg()) if request.param == "postgres" else f"sqlite:///{tmp / 'mlflow.db'}"
    srv = Server(tmp, backend, extra=["--workers", "2"])
    srv.client = MlflowClient(srv.url)
    srv.means_id = _log_means(srv.client, f"means-{uuid.uuid4().hex[:8]}")
    srv.means_matrix_id = _log_means(srv.client, f"means-matrix-{uuid.uuid4().hex[:8]}")  # the API's matrix
    srv.one_dataset_id = _log_runs(srv.client, f"one-dataset-{uuid.uuid4().hex[:8]}", datasets=1)
    srv.uci_id = srv.client.create_experiment(f"uci-time-{uuid.uuid4().hex[:8]}")  # accuracy and fit_time
    log_uci_with_time(srv.client, srv.uci_id, models=("nbc", "hnb", "j48"))
    srv.experiment_id = _log_runs(srv.client, f"cv-{uuid.uuid4().hex[:8]}")  # the newest scores
    srv.experiment_name = srv.client.get_experiment(srv.experiment_id).name
    yield srv
    srv.stop()
    if request.param == "postgres":
        drop_pg_database(backend)


#: The page talks only to the plugin's JSON API, whose answers on PostgreSQL the API tests above check: one page test
#: runs end to end on each store, the other page tests on sqlite alone (CI's time budget).
ON_SQLITE = pytest.mark.parametrize("server", ["sqlite"], indirect=True)


def _fields(srv, **extra) -> dict:
    return {"experiment_name": [srv.experiment_name], "metric": "accuracy", "model_a": "lda", "model_b": "cart",
            **FAST, **extra}


def _in_process(srv, model_a: str, model_b: str, seed: int, **fit) -> dict:
    """The same comparison through the Python API (nothing logged): what the server's job must have found."""
    out = compare_runs(experiment_names=[srv.experiment_name], metric="accuracy", model_a=model_a, model_b=model_b,
                       tracking_uri=srv.url, log=False, seed=seed, **{**FAST, **fit})
    return {"p_a_better": out.p_a_better, "p_rope": out.p_rope, "p_b_better": out.p_b_better,
            "verdict": out.verdict}


def _comparison_runs(srv) -> set[str]:
    runs = srv.client.search_runs([srv.experiment_id], f"tags.`{T.KIND}` IS NOT NULL", max_results=1000)
    return {r.info.run_id for r in runs}


# ------------------------------------------------------------------------------------------------ JSON API


def test_api_matches_cli_for_the_same_seed(server):
    api = server.api()
    run_id = api.start("comparison", _fields(server, seed=11, rope=0.01))
    state = api.wait(run_id)
    assert (state["status"], state["stage"], state["error"]) == ("FINISHED", "done", None), state
    cli = subprocess.run(
        [sys.executable, "-m", "mlflow_bayescompare.cli", "compare", "--tracking-uri", server.url,
         "--experiment-name", server.experiment_name, "--metric", "accuracy", "--model-a", "lda",
         "--model-b", "cart", "--seed", "11", "--rope", "0.01", "--chains", "2", "--draws", "200",
         "--json", "--no-log"], capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stderr[-3000:]
    expected = json.loads(cli.stdout)
    assert {k: state[k] for k in (*PROBABILITIES, "verdict", "decision")} == \
        {k: expected[k] for k in (*PROBABILITIES, "verdict", "decision")}
    run = server.client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags[T.KIND] == "comparison"
    assert {k: run.data.metrics[k] for k in PROBABILITIES} == {k: expected[k] for k in PROBABILITIES}
    assert state["report_url"] == f"/bayescompare/report?run_id={run_id}"
    report = api.session.get(f"{server.root}{state['report_url']}", timeout=30)
    assert report.status_code == 200 and report.headers["Content-Type"].startswith("text/html")
    assert "sandbox" in report.headers["Content-Security-Policy"]
    assert report.headers["Content-Disposition"] == "inline; filename=report.html"
    logged = server.client.download_artifacts(run_id, "report.html", str(server.tmp))
    assert report.content == Path(logged).read_bytes()


def test_data_problem_gets_the_cli_message_and_no_run(server):
    s = server.api().session
    before = _comparison_runs(server)
    resp = s.post(f"{server.url}/bayescompare/api/comparisons", json=_fields(server, model_b="no-such-model"),
                  timeout=60)
    assert resp.status_code == 400, resp.text
    message = resp.json()["error"]
    assert message == ("Cannot collect scores:\n  - model 'no-such-model' is in no run tagged 'model'; "
                       "models present: cart, lda, svm")
    cli = subprocess.run([sys.executable, "-m", "mlflow_bayescompare.cli", "compare", "--tracking-uri", server.url,
                          "--experiment-name", server.experiment_name, "--metric", "accuracy", "--model-a", "lda",
                          "--model-b", "no-such-model", "--no-log"], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 2 and f"Error: {message}" in cli.stderr, cli.stderr
    assert _comparison_runs(server) == before


def test_four_concurrent_comparisons_give_the_python_api_results(server):
    api = server.api()
    pairs = [("lda", "cart"), ("cart", "lda"), ("lda", "svm"), ("svm", "cart")]
    with ThreadPoolExecutor(4) as pool:
        run_ids = list(pool.map(lambda p: api.start("comparison", _fields(
            server, model_a=p[0], model_b=p[1], seed=3)), pairs))
    assert len(set(run_ids)) == 4
    states = [api.wait(r) for r in run_ids]
    for (a, b), state in zip(pairs, states):
        assert (state["status"], state["model_a"], state["model_b"]) == ("FINISHED", a, b), state
        assert {k: state[k] for k in (*PROBABILITIES, "verdict")} == _in_process(server, a, b, seed=3)


def test_matrix_compares_all_models(server):
    api = server.api()
    state = api.wait(api.start("matrix", {"experiment_id": [server.experiment_id], "metric": "accuracy", **FAST,
                                          "seed": 1}))
    assert (state["status"], state["kind"], state["models"]) == ("FINISHED", "matrix", sorted(MODELS)), state
    expected = compare_matrix(experiment_ids=[server.experiment_id], metric="accuracy", tracking_uri=server.url,
                              log=False, jobs=1, seed=1, **FAST)
    assert state["best"] == expected.ranking["model"].iloc[0] and state["verdict"] == f"best: {state['best']}"
    got = {(p["model_a"], p["model_b"]): tuple(p[k] for k in PROBABILITIES) for p in state["pairs"]}
    assert got == {pair: (o.p_a_better, o.p_rope, o.p_b_better) for pair, o in expected.pairs.items()}
    assert all(p["parent_run_id"] == state["run_id"] and p["status"] == "FINISHED" for p in state["pairs"])
    assert state["ranking"] == _ranking_rows(expected.ranking)
    assert state["report_url"] == f"/bayescompare/report?run_id={state['run_id']}"
    assert [p["report_url"] for p in state["pairs"]] == [None] * 3  # pair runs without their own report (default)


def test_matrix_on_means_only_runs_compares_the_pairs_by_the_signed_rank_test(server):
    """The page's "Compare all models" on runs that hold one score each: checked up front as the signed-rank test
    reads them, then compared by it (the command line's choice).  In an experiment of its own: the page tests list
    the shared means experiment's comparisons."""
    means_id = server.means_matrix_id
    api = server.api()
    state = api.wait(api.start("matrix", {"experiment_id": [means_id], "metric": "accuracy", "seed": 2,
                                          "pair_reports": True}))
    assert (state["status"], state["kind"]) == ("FINISHED", "matrix"), state
    expected = compare_matrix(experiment_ids=[means_id], metric="accuracy", tracking_uri=server.url,
                              log=False, jobs=1, seed=2)
    assert expected.summary.tests == ("signed-rank",)
    got = {(p["model_a"], p["model_b"]): tuple(p[k] for k in PROBABILITIES) for p in state["pairs"]}
    assert got == {pair: (o.p_a_better, o.p_rope, o.p_b_better) for pair, o in expected.pairs.items()}
    assert {p["test"] for p in state["pairs"]} == {"signed-rank"}
    # pair_reports: every pair run has its report, which the API serves
    assert [p["report_url"] for p in state["pairs"]] == [f"/bayescompare/report?run_id={p['run_id']}"
                                                         for p in state["pairs"]]
    report = api.session.get(server.url + state["pairs"][0]["report_url"], timeout=30)
    assert report.status_code == 200 and "<img" in report.text


def test_one_dataset_through_the_api_is_the_correlated_t_test_and_its_joint_model(server):
    """Three models on one dataset: a comparison answers with the correlated t-test (the status's and the run's
    ``test``), "compare all models" compares its pairs with it and ranks the three by the joint model (its rows with
    the difference to the leader), each exactly as the Python API does."""
    api, eid = server.api(), server.one_dataset_id
    state = api.wait(api.start("comparison", {"experiment_id": [eid], "metric": "accuracy", "model_a": "lda",
                                              "model_b": "cart", "seed": 1}))
    assert (state["status"], state["test"]) == ("FINISHED", "correlated-t"), state
    direct = compare_runs(experiment_ids=[eid], metric="accuracy", model_a="lda", model_b="cart",
                          tracking_uri=server.url, log=False)
    assert tuple(state[k] for k in PROBABILITIES) == (direct.p_a_better, direct.p_rope, direct.p_b_better)
    assert server.client.get_run(state["run_id"]).data.tags[T.TEST] == "correlated-t"
    state = api.wait(api.start("matrix", {"experiment_id": [eid], "metric": "accuracy", "seed": 3}))
    assert (state["status"], state["ranking_model"]) == ("FINISHED", "joint-t"), state
    assert {p["test"] for p in state["pairs"]} == {"correlated-t"}
    expected = compare_matrix(experiment_ids=[eid], metric="accuracy", tracking_uri=server.url, log=False, jobs=1,
                              seed=3)
    assert state["ranking"] == _ranking_rows(expected.ranking, JOINT_COLUMNS)
    assert state["best"] == expected.ranking["model"].iloc[0]


JOINT_COLUMNS = ["model", "p_best", "mean_rank", "rank_low", "rank_high", "mean", "diff_to_leader", "diff_low",
                 "diff_high"]


HIERARCHICAL_COLUMNS = ["model", "p_best", "p_best_next", "mean_rank", "rank_low", "rank_high", "effect",
                        "diff_to_leader", "diff_low", "diff_high"]


def _ranking_rows(table, columns=HIERARCHICAL_COLUMNS) -> list[dict]:
    """The JSON API's rows of a ranking table (the hierarchical model's columns unless told)."""
    columns = list(columns)
    texts = ("model", "reference", "verdict")
    return [{k: (str(v) if k in texts else float(v)) for k, v in row.items()}
            for row in table[columns].to_dict(orient="records")]


def test_ranking_api_matches_rank_runs(server):
    """POST /api/rankings runs ``rank_runs`` as a job; its status carries the ranking, best first, and with ``vs``
    the table against the reference; a ``vs`` naming no ranked model is refused (400) and writes nothing."""
    api = server.api()
    fields = {"experiment_id": [server.experiment_id], "metric": "accuracy", **FAST, "seed": 5}
    before = len(server.client.search_runs([server.experiment_id]))
    resp = api.session.post(f"{server.url}/bayescompare/api/rankings", json={**fields, "vs": "nope"}, timeout=60)
    assert resp.status_code == 400 and "vs 'nope' is not among the models ranked" in resp.json()["error"], resp.text
    assert len(server.client.search_runs([server.experiment_id])) == before
    state = api.wait(api.start("ranking", {**fields, "vs": "lda"}))
    assert (state["status"], state["kind"], state["models"]) == ("FINISHED", "ranking", sorted(MODELS)), state
    expected = rank_runs(experiment_ids=[server.experiment_id], metric="accuracy", tracking_uri=server.url,
                         log=False, **FAST, seed=5, vs="lda")
    assert state["ranking_model"] == "hierarchical" and state["settings"]["vs"] == "lda"
    assert state["ranking"] == _ranking_rows(expected.ranking)
    assert state["versus"] == _ranking_rows(expected.result.versus, list(expected.result.versus.columns))
    assert [r["model"] for r in state["ranking"]] == list(expected.ranking["model"])
    assert state["verdict"] == f"best: {expected.ranking['model'].iloc[0]}" and "pairs" not in state
    run = server.client.get_run(state["run_id"])
    assert run.data.tags[T.KIND] == "ranking" and run.data.metrics[f"p_best.{state['best']}"] == \
        state["ranking"][0]["p_best"]


def _by_metric(outcome) -> list[dict]:
    """The status's ``metrics`` of a comparison on several metrics, from the Python API's outcome."""
    return [{"metric": m, **{p: getattr(o, p) for p in PROBABILITIES}, "verdict": o.verdict, "decision": o.decision,
             "test": o.test} for m, o in outcome.by_metric.items()]


def test_several_metrics_through_the_api_are_the_python_apis(server):
    """A comparison on two metrics, the second with its own rope and direction: its status holds each metric's
    probabilities, verdict and decision as ``compare_runs`` finds them with the same seed, the combined line as its
    verdict, no probabilities of its own, and the request's metrics, rope and direction as its settings.  The same
    decision logged by the Python API gives its rope and direction back from its per-metric params."""
    api = server.api()
    fields = {"experiment_id": [server.uci_id], "model_a": "nbc", "model_b": "hnb", **SEVERAL, **FAST, "seed": 6,
              "require": "not-worse"}
    state = api.wait(api.start("comparison", fields))
    assert state["status"] == "FINISHED", state
    logged = compare_runs(experiment_ids=[server.uci_id], model_a="nbc", model_b="hnb", tracking_uri=server.url,
                          seed=6, **SEVERAL, **FAST)
    assert state["metrics"] == _by_metric(logged)
    assert [m["decision"] for m in state["metrics"]] == ["b_better", "a_better"]  # fit_time: lower is better
    assert state["verdict"] == logged.verdict == "nbc vs hnb: nbc is worse on accuracy, and better on fit_time."
    assert [state[p] for p in PROBABILITIES] == [None] * 3
    claim = state["require"]  # on every metric, as compare.require and the command line's JSON
    assert (claim["claim"], claim["supported"]) == ("not-worse", require(logged, "not-worse")) == ("not-worse", False)
    assert {m: c["supported"] for m, c in claim["metrics"].items()} == {"accuracy": False, "fit_time": True}
    assert {k: state["settings"][k] for k in SEVERAL} == SEVERAL
    assert state["report_url"] == f"/bayescompare/report?run_id={state['run_id']}"
    report = api.session.get(server.url + state["report_url"], timeout=30)
    assert report.status_code == 200 and report.text.count('<section id="metric-') == 2  # the combined report
    settings = api.status(logged.run_id)["settings"]  # a run of the Python API: no job request, its params
    assert (settings["metric"], settings["rope"], settings["direction"]) == \
        ("accuracy,fit_time", "accuracy=0.01,fit_time=0.1", "accuracy=higher,fit_time=lower")


@pytest.mark.parametrize("fields, message", [
    ({"metric": "accuracy,f1"}, "Cannot read metric 'f1':\n  - metric 'f1' not found (as steps, 'f1_fold_<i>' keys, "
                                "child runs or one value per run); metrics present: accuracy, accuracy_mean, "
                                "accuracy_std, fit_time"),
    ({**SEVERAL, "rope": "accuracy=0.01,roc_auc=0.5"},
     "invalid options:\n  - rope names metric 'roc_auc', which was not asked for (metric: accuracy, fit_time)"),
], ids=["metric-missing", "rope-of-another-metric"])
def test_several_metrics_refused_up_front(server, fields, message):
    """A metric the runs do not hold, or a rope naming a metric not asked for: 400 naming it, nothing written."""
    before = {r.info.run_id for r in server.client.search_runs([server.uci_id], max_results=1000)}
    resp = server.api().session.post(f"{server.url}/bayescompare/api/comparisons", timeout=60, json={
        "experiment_id": [server.uci_id], "model_a": "nbc", "model_b": "hnb", **FAST, **fields})
    assert (resp.status_code, resp.json()["error"]) == (400, message), resp.text
    assert {r.info.run_id for r in server.client.search_runs([server.uci_id], max_results=1000)} == before


def test_every_claim_through_the_api_is_the_python_verdict(server):
    """A comparison posted with each claim as ``require``: the API's report is the Python API's on the same data and
    seed (:mod:`~mlflow_bayescompare.vocabulary.claims`, ``require``), and each claim's probability is its sum of the
    posterior's outcomes as the API shows them."""
    outcomes = {"a-better": ("p_a_better",), "not-worse": ("p_a_better", "p_rope"), "equivalent": ("p_rope",)}
    assert set(outcomes) == set(claims.CLAIMS)
    fit = {"seed": 4, "rope": 0.01, "threshold": 0.6}
    api = server.api()
    with ThreadPoolExecutor(len(outcomes)) as pool:
        run_ids = dict(zip(outcomes, pool.map(lambda claim: api.start("comparison", _fields(
            server, model_a="svm", model_b="lda", require=claim, **fit)), outcomes)))
    expected = compare_runs(experiment_names=[server.experiment_name], metric="accuracy", model_a="svm",
                            model_b="lda", tracking_uri=server.url, log=False, **FAST, **fit)
    assert expected.p_a_better < fit["threshold"] <= expected.p_a_better + expected.p_rope  # the claims differ
    for claim, run_id in run_ids.items():
        state = api.wait(run_id)
        assert state["status"] == "FINISHED", state
        assert state["require"] == claims.report(expected, claim, fit["threshold"]).to_dict()
        assert state["require"]["supported"] is require(expected, claim, fit["threshold"])
        assert state["require"]["probability"] == sum(state[p] for p in outcomes[claim])
        assert state["require"]["supported"] is (state["require"]["probability"] >= fit["threshold"])


def test_matrix_refused_with_every_pair_problem_as_the_python_api_and_nothing_written(server):
    """The server's pre-flight is the pipeline's: a matrix whose model b has 5 folds on a dataset where the others
    have 10 is refused (400) naming both of its pairs, in the words ``compare_matrix`` raises (its first pair handed
    to the workers, the next ones checked), and neither writes a run."""
    eid = server.client.create_experiment(f"folds-{uuid.uuid4().hex[:8]}")
    rng = np.random.default_rng(11)
    for model, folds in (("a", 10), ("c", 10), ("b", 5)):
        for dataset in ("d0", "d1"):
            k = folds if dataset == "d0" else 10
            log_cv_scores(model, dataset, rng.uniform(0.7, 0.8, k), folds=k, experiment_id=eid, client=server.client)
    runs = {r.info.run_id for r in server.client.search_runs([eid])}
    resp = server.api().session.post(f"{server.url}/bayescompare/api/matrix", timeout=60,
                                 json={"experiment_id": [eid], "metric": "accuracy", "models": ["a", "c", "b"],
                                       **FAST})
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == ("Cannot compare every pair:\n"
                                    "  - a vs b: dataset 'd0': fold count differs: 'a' uses 10 folds, 'b' uses 5\n"
                                    "  - c vs b: dataset 'd0': fold count differs: 'c' uses 10 folds, 'b' uses 5")
    with pytest.raises(InputError) as raised:
        compare_matrix(experiment_ids=[eid], metric="accuracy", models=["a", "c", "b"], tracking_uri=server.url,
                       jobs=2, **FAST)
    assert str(raised.value) == resp.json()["error"]
    assert {r.info.run_id for r in server.client.search_runs([eid])} == runs
    server.client.delete_experiment(eid)  # the page tests open on the experiment with the newest scores


def test_experiments_and_choices(server):
    s = server.api().session
    listed = s.get(f"{server.url}/bayescompare/api/experiments", timeout=30).json()["experiments"]
    assert {"experiment_id": server.experiment_id, "name": server.experiment_name} in listed
    choices = s.get(f"{server.url}/bayescompare/api/choices", params={"experiment_id": server.experiment_id},
                    timeout=30).json()
    assert choices == {"experiment_id": server.experiment_id, "models": sorted(MODELS), "metrics": ["accuracy"],
                       "datasets": [f"dataset-{d}" for d in range(5)], "runs": 15, "model_key": "tag:model",
                       "dataset_key": "tag:dataset"}


EVAL_RUN_NAMES = ("prompt-A", '<script>alert("evals")</script>](javascript:x) #B')


def _log_eval_tables(client: MlflowClient, name: str, items: int = 16) -> tuple[str, list[str]]:
    """Two evaluation runs of a harness (a long table each: item, scorer, value): B passes more items and is
    slower."""
    eid = client.create_experiment(name)
    ids = []
    for k, run_name in enumerate(EVAL_RUN_NAMES):
        rows = [{"item": f"q{i}", "scorer": s, "value": v} for i in range(items)
                for s, v in (("correct", i % (3 + 2 * k) != 0), ("latency", 1.0 + 0.1 * k + 0.01 * i))]
        run = client.create_run(eid, run_name=run_name)
        client.log_table(run.info.run_id, pd.DataFrame(rows), "eval_scores.json")
        client.set_terminated(run.info.run_id)
        ids.append(run.info.run_id)
    return eid, ids


def test_evaluation_runs_compared_through_the_api_as_the_python_api_does(server):
    api = server.api()
    eid, (a, b) = _log_eval_tables(server.client, f"evals-{uuid.uuid4().hex[:8]}")
    listed = api.evaluation_runs(eid)
    assert [(r["run_id"], r["kind"], r["artifact"]) for r in listed] == [(b, "table", "eval_scores.json"),
                                                                      (a, "table", "eval_scores.json")]
    fields = {"run_a": a, "run_b": b, "rope": "latency=0.05", "seed": 5}
    state = api.wait(api.start("evals", fields))
    assert (state["status"], state["error"]) == ("FINISHED", None), state
    expected = compare_evaluation_runs(a, b, rope="latency=0.05", seed=5, tracking_uri=server.url, log=False)
    by_scorer = {m["metric"]: m for m in state["metrics"]}
    for scorer, one in expected.result.by_scorer.items():
        assert {k: by_scorer[scorer][k] for k in PROBABILITIES} == {k: getattr(one, k) for k in PROBABILITIES}
    assert state["source_runs"] == [a, b] and state["model_b"] == EVAL_RUN_NAMES[1]
    assert state["compare_url"] == f"/#/experiments/{eid}/evaluation-runs?selectedRunUuid={a}&compareToRunUuid={b}"
    report = api.session.get(f"{server.root}{state['report_url']}", timeout=30)
    assert report.status_code == 200 and "<script>alert" not in report.text
    one = api.wait(api.start("evals", {"run_a": a, "run_b": b, "scorers": "correct", "require": "better",
                                       "seed": 5}))  # shown as a comparison of one metric
    correct = compare_evaluation_runs(a, b, scorers="correct", seed=5, tracking_uri=server.url,
                                      log=False).result.by_scorer["correct"]
    assert {k: one[k] for k in (*PROBABILITIES, "verdict")} == {k: getattr(correct, k) for k in
                                                                  (*PROBABILITIES, "verdict")}
    assert one["require"]["probability"] == pytest.approx(correct.p_b_better) and one["kind"] == "comparison"
    ranked = api.wait(api.start("evals", {"runs": [a, b], "vs": a, "scorers": "correct", "seed": 5}))
    assert (ranked["status"], ranked["kind"], ranked["source_runs"]) == ("FINISHED", "ranking", [a, b]), ranked
    assert ranked["compare_url"] is None  # MLflow's side-by-side view is of run A and run B
    before = {r.info.run_id for r in server.client.search_runs([eid])}
    for extra, words in (({"scorers": "bleu"}, "scorer 'bleu' is in none of the runs"),
                         ({"run_b": uuid.uuid4().hex}, "not found"), ({"rope": "nope=1"}, "rope names scorer")):
        resp = api.session.post(f"{server.url}/bayescompare/api/evals", json={**fields, **extra}, timeout=60)
        assert resp.status_code == 400 and words in resp.json()["error"], resp.text
    assert {r.info.run_id for r in server.client.search_runs([eid])} == before


def test_stock_mlflow_ui_and_rest_api_still_answer(server):
    index = requests.get(f"{server.url}/", timeout=30)
    assert index.status_code == 200 and "<title>MLflow</title>" in index.text
    asset = next(part.split('"')[0] for part in index.text.split('src="')[1:] if part.split('"')[0].endswith(".js"))
    js = requests.get(urllib.parse.urljoin(f"{server.url}/", asset), timeout=30)
    assert js.status_code == 200 and len(js.content) > 1000
    rest = requests.get(f"{server.url}/api/2.0/mlflow/experiments/search", params={"max_results": 10}, timeout=30)
    assert rest.status_code == 200
    assert server.experiment_name in {e["name"] for e in rest.json()["experiments"]}


# ------------------------------------------------------------------------------------------------ browser


def _browser():
    require_chromium()
    return chromium_page()


def _options(page, select: str) -> list[str]:
    return page.eval_on_selector_all(f"{select} option", "os => os.map(o => o.textContent)")


def _stage_classes(page) -> dict[str, str]:
    return dict(page.eval_on_selector_all("#stages li", "ls => ls.map(l => [l.dataset.stage, l.className])"))


def _fill_form(page, server, seed: int, draws: int) -> None:
    page.select_option("#experiment", server.experiment_id)
    page.wait_for_selector("#model_a option:nth-child(3)", state="attached")  # no eval: the page's CSP forbids it
    page.select_option("#metric", "accuracy")
    page.select_option("#model_a", "lda")
    page.select_option("#model_b", "cart")
    page.click("details summary")
    page.fill("#chains", "2")
    page.fill("#draws", str(draws))
    page.fill("#seed", str(seed))


def _rgb(color: str) -> str:
    """``#rrggbb`` as the browser's computed ``rgb(r, g, b)``."""
    return "rgb({}, {}, {})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)))


def _run_id(page) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["run_id"][0]


#: each visible control of the form: does its text (a select's chosen option, an input's value) fit inside it?
_TEXT_FITS = """els => els.filter(e => e.offsetParent !== null).map(e => {
  const cs = getComputedStyle(e), probe = document.createElement("span");
  probe.style.font = cs.font; probe.style.whiteSpace = "pre"; probe.style.position = "absolute";
  probe.textContent = e.tagName === "SELECT" ? e.selectedOptions[0].textContent : e.value;
  document.body.appendChild(probe);
  const width = probe.getBoundingClientRect().width;
  probe.remove();
  const room = e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  return [e.id, probe.textContent, width <= room - (e.tagName === "SELECT" ? 20 : 0)];
})"""


@pytest.mark.browser
@ON_SQLITE
def test_page_first_contact(server):
    """The page opens on the experiment with the newest scores (not the empty Default); Compare waits for a valid
    choice and refuses one model against itself; the outcome colours are the reports'; every control shows its
    whole text."""
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        assert page.input_value("#experiment") == server.experiment_id
        icon = page.get_attribute('link[rel="icon"]', "href")  # inline: the browser asks no /favicon.ico (a 404)
        assert icon.startswith("data:image/svg+xml,") and urllib.parse.unquote(icon).endswith("</svg>")
        page.wait_for_selector("#model_a option:nth-child(3)", state="attached")
        page.wait_for_selector("#compare-btn:enabled")
        assert (page.input_value("#model_a"), page.input_value("#model_b")) == ("cart", "lda")
        assert page.is_hidden("#form-hint") and page.is_enabled("#matrix-btn") and page.is_enabled("#rank-btn")
        page.select_option("#model_b", "cart")
        assert page.is_disabled("#compare-btn") and page.is_enabled("#matrix-btn")
        assert page.text_content("#form-hint") == "Choose two different models for A and B."
        page.select_option("#model_b", "svm")
        assert page.is_enabled("#compare-btn") and page.is_hidden("#form-hint")
        colors = page.eval_on_selector("html", "e => ['--a_better', '--rope', '--b_better'].map("
                                               "v => getComputedStyle(e).getPropertyValue(v).trim())")
        assert colors == [COLORS["a_better"], COLORS["rope"], COLORS["b_better"]]
        page.click("details summary")
        for width in (1280, 1024, 800):
            page.set_viewport_size({"width": width, "height": 1000})
            for direction in ("higher", "lower"):
                page.select_option("#direction", direction)
                fits = page.eval_on_selector_all("#compare-form select, #compare-form input:not([type=checkbox])",
                                                 _TEXT_FITS)
                assert len(fits) == 18 and all(ok for _, _, ok in fits), (width, fits)
    assert dialogs == []
    assert '"GET /favicon.ico' not in server.log.read_text(errors="replace")  # no page of it asked for one


@pytest.mark.browser
def test_page_runs_a_comparison_and_follows_its_stages(server):
    """The form's defaults come from the option specs; the stages are shown as the job goes through them, in the job
    panel and in its row of Past comparisons; the result shown is the run's, in the reports' colours (A left, rope,
    B right); the report is shown inline, as tall as it is and without the summary above it; the run link opens
    MLflow's model-training view."""
    ARTIFACTS.mkdir(exist_ok=True)
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        defaults = {k: page.input_value(f"#{k}") for k in ("rope", "chains", "draws", "threshold", "model_key")}
        assert defaults == {"rope": "0.01", "chains": "4", "draws": "1000", "threshold": "0.95",
                            "model_key": "tag:model"}
        _fill_form(page, server, seed=4, draws=20000)  # long enough to be seen sampling
        page.click("#compare-btn")
        seen, deadline = [], time.monotonic() + 600
        while page.text_content("#job-status") != "FINISHED":
            current = [s for s, c in _stage_classes(page).items() if c == "current"]
            if current and (not seen or seen[-1] != current[0]):
                seen.append(current[0])
            if current == ["sampling"]:
                assert page.text_content("#job-status") == "Running: sampling…"
                row = page.query_selector(f'#past tr[data-run-id="{_run_id(page)}"] td.status')
                assert row is None or row.text_content() in ("RUNNING · sampling", "RUNNING · reporting",
                                                              "RUNNING · logging", "FINISHED")
            assert time.monotonic() < deadline and page.text_content("#job-status") != "FAILED", \
                page.text_content("#job-error")
            page.wait_for_timeout(200)
        assert "sampling" in seen and seen == sorted(seen, key=list(_stage_classes(page)).index), seen
        run_id = _run_id(page)
        state = server.api().status(run_id)
        # only the stages the job went through are lit: the compile when the model was not cached yet
        compiled = server.client.get_run(run_id).data.metrics["compile_seconds"] > 0
        assert state["skipped"] == ([] if compiled else ["compiling"])
        assert _stage_classes(page) == {s: "skipped" if s in state["skipped"] else "past" for s in _stage_classes(page)}
        assert "compiling" in seen or page.text_content('#stages li[data-stage="compiling"]') == \
            "model cached (not compiled)"
        assert (page.text_content("#verdict"), state["test"]) == (state["verdict"], "hierarchical")
        assert [page.text_content(f"#{i}") for i in ("p-a", "p-rope", "p-b")] == \
            [format_probability(state[k]) for k in PROBABILITIES]
        assert page.is_visible("#probs-caption") and page.text_content("#probs-caption") == "Next dataset"
        assert page.text_content("#run-link") == "Open the comparison run in the MLflow UI"
        bar = page.eval_on_selector_all("#bar .seg", "ss => ss.map(s => [s.id, getComputedStyle(s).backgroundColor])")
        assert bar == [["bar-a", _rgb(COLORS["a_better"])], ["bar-rope", _rgb(COLORS["rope"])],
                       ["bar-b", _rgb(COLORS["b_better"])]]
        assert page.get_attribute("#run-link", "href") == state["run_url"]
        page.wait_for_selector("#report:not([hidden])")
        assert page.get_attribute("#report", "src") == state["report_url"] + "&embed=1"
        report = page.frame_locator("#report")
        report.locator("h2", has_text="Per dataset").wait_for(timeout=30_000)
        page.wait_for_timeout(500)
        assert report.locator(".banner").is_hidden() and report.locator(".card.summary").is_hidden()
        assert report.locator("h2", has_text="Mean difference across datasets (δ0)").is_visible()  # beside them
        inner, outer = page.eval_on_selector(
            "#report", "f => [f.contentDocument.documentElement.scrollHeight, f.clientHeight]")
        assert outer > 720 and abs(inner - outer) <= 4, (inner, outer)  # no scrolling inside the frame
        page.screenshot(path=str(ARTIFACTS / f"bayescompare-page-{server.backend.split(':')[0]}.png"),
                        full_page=True)
        page.click("#run-link")
        page.wait_for_selector("[data-testid=experiment-observatory-link-runs]", timeout=60_000)
        assert page.text_content("[data-testid=experiment-observatory-link-runs]").strip() == "Runs"
    assert dialogs == []


@pytest.mark.browser
@ON_SQLITE
def test_page_compares_two_evaluation_runs_and_links_mlflows_own_view(server):
    """"Compare evaluation runs": the experiment's evaluation runs listed (a hostile name shown as text: the page's
    CSP is off, so escaping alone is tested), the newest as B; a scorer not in the runs refused with the server's
    message; the comparison followed to its verdict per scorer, as the API answers it, with the link to MLflow's
    side-by-side view of the two runs."""
    eid, (a, b) = _log_eval_tables(server.client, f"evals-page-{uuid.uuid4().hex[:8]}")
    with chromium_page(bypass_csp=True) as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        page.select_option("#evals-experiment", eid)
        page.wait_for_selector("#evals-run-a option:nth-child(2)", state="attached")
        assert (page.input_value("#evals-run-a"), page.input_value("#evals-run-b")) == (a, b)
        assert _options(page, "#evals-run-b")[0].startswith(EVAL_RUN_NAMES[1] + " · table · ")
        assert page.text_content("#evals-info") == "2 evaluation runs"
        page.fill("#evals-scorers", "bleu")
        page.click("#evals-btn")
        page.wait_for_selector("#evals-error:not([hidden])")
        assert "scorer 'bleu' is in none of the runs" in page.text_content("#evals-error")
        page.fill("#evals-scorers", "")
        page.fill("#evals-rope", "latency=0.05")
        page.click("#evals-section details summary")
        page.fill("#evals-seed", "5")
        page.click("#evals-btn")
        page.wait_for_function("document.getElementById('job-status').textContent === 'FINISHED'", timeout=120_000)
        state = server.api().status(_run_id(page))
        assert page.text_content("#job-title") == f"prompt-A vs {EVAL_RUN_NAMES[1]} · correct, latency"
        assert page.text_content("#by-metric-caption") == "By scorer" and page.text_content("#by-metric-per") == \
            "Scorer"
        rows = page.eval_on_selector_all("#by-metric tbody tr", "rs => rs.map(r => r.cells[0].textContent)")
        assert rows == [m["metric"] for m in state["metrics"]] == ["correct", "latency"]
        assert page.is_visible("#compare-link") and page.get_attribute("#compare-link", "href") == \
            state["compare_url"]
        assert page.is_hidden("#evals-error")
        page.select_option("#evals-run-a", b)  # B against A: reopened, the runs are chosen again (not the defaults)
        page.select_option("#evals-run-b", a)
        page.click("#evals-btn")
        page.wait_for_function(f"location.search !== '?run_id={state['run_id']}' && "
                               "document.getElementById('job-status').textContent === 'FINISHED'", timeout=120_000)
        page.goto(f"{server.url}/bayescompare/?run_id={_run_id(page)}")
        page.wait_for_function(f"document.getElementById('evals-run-a').value === '{b}'", timeout=30_000)
        assert (page.input_value("#evals-experiment"), page.input_value("#evals-run-b")) == (eid, a)
        page.select_option("#evals-runs", [a, b])  # ranked: per scorer, each run's P(best)
        page.click("#evals-rank-btn")
        page.wait_for_function("document.getElementById('job-title').textContent === "
                               "'Ranking of 2 evaluation runs · correct, latency' && "
                               "document.getElementById('job-status').textContent === 'FINISHED'", timeout=120_000)
        ranked = server.api().status(_run_id(page))
        assert ranked["kind"] == "ranking" and page.is_visible("#rankings") and page.is_hidden("#compare-link-line")
        assert EVAL_RUN_NAMES[1] in page.text_content("#rankings")
    assert dialogs == []


def _better_first(pair: dict) -> list[str]:
    """A pair's row on the page: the model more probably better first, its verdict and probabilities."""
    a, b, p_a, p_b = pair["model_a"], pair["model_b"], pair["p_a_better"], pair["p_b_better"]
    if p_b > p_a:
        a, b, p_a, p_b = b, a, p_b, p_a
    return [f"{a} vs {b}", pair["verdict"], *map(format_probability, (p_a, pair["p_rope"], p_b))]


@pytest.mark.browser
@ON_SQLITE
def test_page_ranks_against_a_model(server):
    """"Rank all models" against a model: the ranking job of the API with ``vs``, its table against the reference
    (one row per other model, the verdict, P(better / equivalent / worse), the difference and its HDI) under the
    ranking, no pairs; reopened, the form asks the same again.  Past comparisons names the model that ranked: a BBT
    ranking and a hierarchical one looked alike there (issue 40, item 12)."""
    bbt = rank_runs(experiment_ids=[server.experiment_id], metric="accuracy", model="bbt", seed=5, draws=200,
                    tracking_uri=server.url)
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        _fill_form(page, server, seed=5, draws=200)
        assert page.eval_on_selector_all("#vs option", "os => os.map(o => o.value)") == ["", "best", *sorted(MODELS)]
        page.select_option("#vs", "lda")
        page.click("#rank-btn")
        page.wait_for_selector("#versus:not([hidden])", timeout=600_000)
        run_id = _run_id(page)
        state = server.api().status(run_id)
        assert (state["kind"], state["settings"]["vs"], state["ranking_model"]) == ("ranking", "lda", "hierarchical")
        assert page.text_content("#versus-caption") == "Against lda on the next dataset"
        rows = page.eval_on_selector_all("#versus tbody tr",
                                         "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")
        versus, n = state["versus"], len(state["versus"])  # differences and HDIs with one number of decimals
        shown = format_differences([r[k] for k in ("difference", "hdi_low", "hdi_high") for r in versus])
        assert rows == [[r["model"], r["verdict"], *map(format_probability, (r["p_better"], r["p_rope"], r["p_worse"])),
                         shown[i], f"[{shown[n + i]}, {shown[2 * n + i]}]"] for i, r in enumerate(versus)] and n == 2
        assert page.is_visible("#ranking") and page.is_hidden("#pairs") and page.is_hidden("#pairs-differ")
        assert page.text_content("#job-title") == "Ranking of 3 models · accuracy"
        names = {r: page.text_content(f'#past tr[data-run-id="{r}"] a.show') for r in (run_id, bbt.run_id)}
        assert names == {run_id: "ranking of 3 models · hierarchical", bbt.run_id: "ranking of 3 models · BBT"}
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"bayescompare-page-versus-{server.backend.split(':')[0]}.png"),
                        full_page=True)
        page.goto(f"{server.url}/bayescompare/?run_id={run_id}")
        page.wait_for_selector("#versus:not([hidden])", timeout=60_000)
        deadline = time.monotonic() + 30  # the form is filled once the experiment's choices are in
        while page.eval_on_selector("#vs", "e => e.value") != "lda" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert page.eval_on_selector("#vs", "e => e.value") == "lda"
    assert dialogs == []


@pytest.mark.browser
@ON_SQLITE
def test_page_compare_all_models(server):
    """The result of "Compare all models": the ranking (the hierarchical model of k models, so captioned), the
    pairs, and the ranking report (critical-difference diagram, P(better) matrix, P(best), leader gaps) inline, the
    link naming the matrix run; in Past comparisons, with its experiment's name, the matrix holds its pairs folded
    under it, each in its own orientation with its own probabilities once unfolded; the list filters by
    experiment.  Asked to fit every pair again, it reads no cache."""
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        _fill_form(page, server, seed=1, draws=200)
        page.check("#refresh")
        page.click("#matrix-btn")
        page.wait_for_selector("#pairs:not([hidden])", timeout=600_000)
        run_id = _run_id(page)
        state = server.api().status(run_id)
        run = server.client.get_run(run_id)
        assert (run.data.params["refresh"], run.data.metrics["n_pairs_cached"]) == ("True", 0)
        rows = page.eval_on_selector_all("#pairs tbody tr",
                                         "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")
        assert rows == [_better_first(p) for p in state["pairs"]] and len(rows) == 3
        assert any(p["p_b_better"] > p["p_a_better"] for p in state["pairs"])  # one pair at least is turned round
        assert page.text_content("#pairs-caption") == "Pairs: Bayesian hierarchical test on the per-fold scores"
        assert page.text_content("#pairs-differ") == JOINT_DIFFERS and page.is_hidden("#versus")
        ranking = page.eval_on_selector_all("#ranking tbody tr",
                                            "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")
        assert ranking == [[str(i + 1), r["model"], format_probability(r["p_best"]), f"{r['mean_rank']:.2f}",
                            f"{r['rank_low']}–{r['rank_high']}"] for i, r in enumerate(state["ranking"])]
        assert state["ranking_model"] == "hierarchical"  # the caption names the model that ranked, not BBT's
        assert page.text_content("#ranking-caption") == \
            "Ranking (hierarchical model of k models, Corani et al. 2017 extended)"
        assert page.text_content("#job-title") == "All models (3) · accuracy"
        assert page.text_content("#run-link") == "Open the matrix run in the MLflow UI"
        assert page.get_attribute("#report", "src") == f"/bayescompare/report?run_id={run_id}&embed=1"
        report = page.frame_locator("#report")
        for figure in ("critical_difference", "better_matrix", "p_best", "leader_gaps"):  # the hierarchical model's
            report.locator(f'img[alt="{figure}"]').wait_for(timeout=30_000)
        page.wait_for_selector(f'#past tr[data-parent="{run_id}"]', state="attached")
        pairs = f'#past tr[data-parent="{run_id}"]'
        assert len(page.query_selector_all(pairs)) == 3 and not page.is_visible(pairs)  # folded under the matrix
        toggle = f'#past tr[data-run-id="{run_id}"] button.toggle'
        assert page.text_content(toggle) == "▸ 3 pairs"
        page.click(toggle)
        page.wait_for_selector(pairs)
        assert page.text_content(toggle) == "▾ hide 3 pairs"
        past = page.eval_on_selector_all(
            "#past tbody tr", "rs => rs.map(r => [r.dataset.runId, r.dataset.parent || '', r.hidden,"
                              " r.cells[1].textContent, r.cells[2].querySelector('a.show').textContent,"
                              " r.cells[6].textContent, r.cells[7].textContent, r.cells[8].textContent])")
        at = [r[0] for r in past].index(run_id)
        assert past[at][1:5] == ["", False, server.experiment_name, "3 models · hierarchical"]  # the model that ranked
        assert past[at + 1:at + 4] == [[p["run_id"], run_id, False, "", f"{p['model_a']} vs {p['model_b']}",
                                        *(format_probability(p[k]) for k in PROBABILITIES)] for p in state["pairs"]]
        assert [r for r in past if r[1] == run_id] == past[at + 1:at + 4]  # no pair of it at the top level
        page.click(toggle)
        page.wait_for_selector(pairs, state="hidden")
        page.select_option("#history-experiment", server.means_id)
        page.wait_for_selector(f'#past tr[data-run-id="{run_id}"]', state="detached")
        shown = page.eval_on_selector_all("#past tbody tr", "rs => rs.map(r => r.dataset.runId || '')")
        means_runs = server.api().session.get(f"{server.url}/bayescompare/api/comparisons",
                                              params={"experiment_id": server.means_id}, timeout=30).json()
        assert shown == ([c["run_id"] for c in means_runs["comparisons"]] or [""])
    assert dialogs == []


@pytest.mark.browser
@ON_SQLITE
def test_page_compares_means_with_the_signed_rank_test(server):
    """Runs holding one score per (model, dataset): the page compares them with the Bayesian signed-rank test, and
    says so, as the status does; their matrix, of one pair, is listed with "1 pair"."""
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        page.select_option("#experiment", server.means_id)
        page.wait_for_selector('#model_a option[value="nbc"]', state="attached")
        page.select_option("#model_a", "hnb")
        page.select_option("#model_b", "nbc")
        page.click("details summary")
        page.fill("#seed", "2")
        page.click("#compare-btn")
        page.wait_for_selector("#verdict:not(:empty)", timeout=300_000)
        state = server.api().status(_run_id(page))
        assert (state["status"], state["test"]) == ("FINISHED", "signed-rank"), state
        assert server.client.get_run(state["run_id"]).data.tags[T.TEST] == "signed-rank"
        assert page.get_attribute("#test-used", "data-test") == "signed-rank"
        assert page.text_content("#test-used") == ("Test: Bayesian signed-rank test on the per-dataset means (the "
                                                   "runs hold one score per dataset)")
        direct = compare_runs(experiment_ids=[server.means_id], metric="accuracy", model_a="hnb", model_b="nbc",
                              tracking_uri=server.url, log=False, seed=2)
        assert [page.text_content(f"#{i}") for i in ("p-a", "p-rope", "p-b")] == \
            [format_probability(getattr(direct, k)) for k in PROBABILITIES]
        assert page.is_hidden("#probs-caption")  # "Next dataset" is the hierarchical test's
        page.frame_locator("#report").locator("img[alt=simplex]").wait_for(timeout=30_000)
        page.click("#matrix-btn")  # two models: one pair, said so in Past comparisons
        page.wait_for_selector("#pairs:not([hidden])", timeout=300_000)
        toggle = f'#past tr[data-run-id="{_run_id(page)}"] button.toggle'
        page.goto(f"{server.url}/bayescompare/")
        page.wait_for_selector(toggle)
        assert page.text_content(toggle) == "▸ 1 pair"
    assert dialogs == []


@pytest.mark.browser
@ON_SQLITE
def test_page_on_one_dataset_says_which_test_and_which_ranking_answered(server):
    """One dataset: "Compare A vs B" says the correlated t-test answered, "Compare all models" that its pairs were
    compared by it and that the joint correlated-t model ranked them, as the status does.  With a rope of 0.05, P(cart
    better) is about 2e-5: the page writes it as the reports do, <0.001.  A run the Python API logged, reopened, shows
    no stages: they were not recorded (every one lit would say it compiled)."""
    logged = compare_runs(experiment_ids=[server.one_dataset_id], model_a="lda", model_b="cart", metric="accuracy",
                          rope=0.05, tracking_uri=server.url)  # the correlated t-test's closed form: no Stan
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        page.select_option("#experiment", server.one_dataset_id)
        page.wait_for_selector("#choices-info:has-text('1 dataset')")  # this experiment's choices are in
        assert page.text_content("#choices-info") == "3 models · 1 dataset · 3 runs"
        page.select_option("#metric", "accuracy")
        page.select_option("#model_a", "lda")
        page.select_option("#model_b", "cart")
        page.fill("#rope", "0.05")
        page.click("#compare-btn")
        page.wait_for_selector("#verdict:not(:empty)", timeout=300_000)
        state = server.api().status(_run_id(page))
        assert state["test"] == "correlated-t"
        shown = [page.text_content(f"#{i}") for i in ("p-a", "p-rope", "p-b")]
        assert shown == [format_probability(state[k]) for k in PROBABILITIES] and shown[2] == "<0.001", shown
        assert page.get_attribute("#test-used", "data-test") == "correlated-t" and page.is_visible("#stages")
        assert page.text_content("#test-used") == ("Test: Bayesian correlated t-test on the per-fold scores of one "
                                                   "dataset (the models share one dataset)")
        page.frame_locator("#report").locator("img[alt=posterior]").wait_for(timeout=30_000)
        page.click("#matrix-btn")
        page.wait_for_selector("#ranking:not([hidden])", timeout=300_000)
        state = server.api().status(_run_id(page))
        assert (state["kind"], state["ranking_model"]) == ("matrix", "joint-t")
        assert page.text_content("#ranking-caption") == "Ranking (joint correlated-t model of one dataset's folds)"
        assert page.text_content("#pairs-caption") == ("Pairs: Bayesian correlated t-test on the per-fold scores of "
                                                       "one dataset (the models share one dataset)")
        assert len(page.query_selector_all("#ranking tbody tr")) == 3
        page.frame_locator("#report").locator('img[alt="leader_gaps"]').wait_for(timeout=30_000)
        page.select_option("#vs", "best")  # refused on one dataset before: the joint model answers it
        page.click("#rank-btn")
        page.wait_for_selector("#versus:not([hidden])", timeout=300_000)
        state = server.api().status(_run_id(page))
        assert state["ranking_model"] == "joint-t" and [r["reference"] for r in state["versus"]] == [state["best"]] * 2
        assert page.text_content("#versus-caption") == f"Against {state['best']} on this dataset"
        page.goto(f"{server.url}/bayescompare/?run_id={logged.run_id}")
        page.wait_for_selector("#verdict:not(:empty)", timeout=60_000)
        assert page.text_content("#verdict") == logged.verdict and page.is_hidden("#stages")
    assert dialogs == []


@pytest.mark.browser
@ON_SQLITE
def test_page_reopens_a_comparison_with_its_settings(server):
    """Clicking a past comparison fills the form with its settings; its sensitivity analysis is in the report.
    Clicking a past ranking then fills the rope in metric units with its ``metric_rope``, never with its rope (its
    P(win) interval), and "against" with its reference (none); the link names the ranking run."""
    api = server.api()
    run_id = api.start("comparison", _fields(server, model_a="svm", model_b="lda", seed=8, rope=0.02,
                                             lower_is_better=True, sensitivity=True))
    ranking_id = api.start("ranking", {"experiment_id": [server.experiment_id], "metric": "accuracy", **FAST,
                                       "seed": 9, "rope": [0.45, 0.55]})
    assert api.wait(run_id)["status"] == "FINISHED"
    assert api.wait(ranking_id)["settings"]["rope"] in ([0.45, 0.55], "[0.45, 0.55]")
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        page.select_option("#experiment", server.means_id)
        page.click(f'#past tr[data-run-id="{run_id}"] a.show')
        assert page.text_content(f'#past tr[data-run-id="{run_id}"] td.experiment') == server.experiment_name
        page.wait_for_selector('#model_a option[value="svm"]:checked', state="attached")
        form = {k: page.input_value(f"#{k}") for k in ("experiment", "metric", "model_a", "model_b", "rope", "seed",
                                                       "chains", "draws", "direction")}
        assert form == {"experiment": server.experiment_id, "metric": "accuracy", "model_a": "svm", "model_b": "lda",
                        "rope": "0.02", "seed": "8", "chains": "2", "draws": "200", "direction": "lower"}
        assert page.is_checked("#sensitivity") and page.is_enabled("#compare-btn")
        page.wait_for_selector("#sensitivity-note:not([hidden])")
        page.frame_locator("#report").locator("h2", has_text="Sensitivity to the prior and the rope").wait_for(
            timeout=30_000)
        show_past_run(page, ranking_id, "#ranking:not([hidden])")
        for _ in range(100):  # the form refilled from the ranking's settings (its seed) ...
            if page.input_value("#seed") == "9":
                break
            page.wait_for_timeout(100)
        assert (page.input_value("#seed"), page.input_value("#rope"), page.input_value("#vs")) == ("9", "0.01", "")
        assert page.text_content("#run-link") == "Open the ranking run in the MLflow UI"
    assert dialogs == []


def _rows(page, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(selector, "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")


def _ranking_cells(rows: list[dict]) -> list[list[str]]:
    """A ranking's rows as the page shows them: rank, model, P(best), mean rank, rank interval."""
    return [[str(i + 1), r["model"], format_probability(r["p_best"]), f"{r['mean_rank']:.2f}",
             f"{r['rank_low']}–{r['rank_high']}"] for i, r in enumerate(rows)]


@pytest.mark.browser
@ON_SQLITE
def test_page_compares_and_ranks_on_two_metrics(server):
    """Two metrics chosen, a rope and a direction for one of them: "Compare" shows the combined line and a "By metric"
    table of the Python API's probabilities instead of the bar, and the combined report; "Rank all models" against a
    model shows each metric's ranking and table against it side by side, as ``rank_runs`` finds them ("Compare all
    models", which compares one metric, waits for one); reopened from Past comparisons, where its probability cells
    stay empty, the comparison refills the metrics, the rope and the direction."""
    expected = compare_runs(experiment_ids=[server.uci_id], model_a="nbc", model_b="hnb", tracking_uri=server.url,
                            log=False, seed=6, **SEVERAL, **FAST)  # before the browser: Stan runs no event loop in it
    ranked = rank_runs(experiment_ids=[server.uci_id], tracking_uri=server.url, log=False, seed=6, vs="nbc",
                       metric=SEVERAL["metric"], metric_rope=SEVERAL["rope"], direction=SEVERAL["direction"], **FAST)
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        page.select_option("#experiment", server.uci_id)
        page.wait_for_selector('#metric option[value="fit_time"]', state="attached")
        page.select_option("#metric", ["accuracy", "fit_time"])
        page.select_option("#model_a", "nbc")
        page.select_option("#model_b", "hnb")
        page.fill("#rope", SEVERAL["rope"])
        page.fill("#direction_per_metric", SEVERAL["direction"])
        assert page.is_disabled("#matrix-btn") and page.is_enabled("#rank-btn")
        page.click("details summary")
        page.fill("#chains", "2")
        page.fill("#draws", "200")
        page.fill("#seed", "6")
        page.click("#compare-btn")
        page.wait_for_selector("#by-metric:not([hidden])", timeout=600_000)
        run_id = _run_id(page)
        assert _rows(page, "#by-metric thead tr") == [["Metric", "Verdict", "P(nbc better)", "P(rope)",
                                                      "P(hnb better)"]]
        assert page.text_content("#by-metric caption") == "By metric · Next dataset"  # not δ0's
        assert _rows(page, "#by-metric tbody tr") == [[m["metric"], m["verdict"], *(format_probability(m[p])
                                                       for p in PROBABILITIES)] for m in _by_metric(expected)]
        assert page.text_content("#verdict") == expected.verdict
        assert page.is_hidden("#bar") and page.is_hidden("#probs")
        assert page.text_content("#job-title") == "nbc vs hnb · accuracy, fit_time"
        page.frame_locator("#report").locator("section#metric-fit_time").wait_for(timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        backend = server.backend.split(":")[0]
        page.screenshot(path=str(ARTIFACTS / f"bayescompare-page-metrics-{backend}.png"), full_page=True)
        page.select_option("#vs", "nbc")
        page.click("#rank-btn")
        page.wait_for_selector("#rankings:not([hidden])", timeout=600_000)
        state = server.api().status(_run_id(page))
        assert state["rankings"] == {m: _ranking_rows(o.ranking) for m, o in ranked.by_metric.items()}
        assert state["versus"] == {m: _ranking_rows(o.result.versus, list(o.result.versus.columns))
                                   for m, o in ranked.by_metric.items()}
        assert page.is_hidden("#ranking") and page.is_hidden("#versus")
        for metric, rows in state["rankings"].items():
            ranking, versus = (f'#{box} table[data-metric="{metric}"]' for box in ("rankings", "versus-by-metric"))
            assert page.text_content(f"{ranking} caption") == \
                f"{metric} · Ranking (hierarchical model of k models, Corani et al. 2017 extended)"
            assert _rows(page, f"{ranking} tbody tr") == _ranking_cells(rows)
            assert page.text_content(f"{versus} caption") == f"{metric} · Against nbc on the next dataset"
            assert [r[:5] for r in _rows(page, f"{versus} tbody tr")] == \
                [[r["model"], r["verdict"], *map(format_probability, (r["p_better"], r["p_rope"], r["p_worse"]))]
                 for r in state["versus"][metric]]
        tops = page.eval_on_selector_all("#rankings table", "ts => ts.map(t => t.getBoundingClientRect().top)")
        assert len(tops) == 2 and tops[0] == tops[1]  # side by side
        assert "ranking" not in state and page.text_content("#verdict") == state["verdict"] == ranked.verdict
        page.screenshot(path=str(ARTIFACTS / f"bayescompare-page-metrics-ranked-{backend}.png"), full_page=True)
        page.goto(f"{server.url}/bayescompare/")
        row = f'#past tr[data-run-id="{run_id}"]'
        page.wait_for_selector(row)
        assert _rows(page, row)[0][5:9] == [expected.verdict, "", "", ""]
        page.click(f"{row} a.show")
        page.wait_for_selector('#metric option[value="fit_time"]:checked', state="attached")
        assert page.eval_on_selector("#metric", "s => Array.from(s.selectedOptions).map(o => o.value)") == \
            ["accuracy", "fit_time"]
        assert (page.input_value("#rope"), page.input_value("#direction_per_metric")) == \
            (SEVERAL["rope"], SEVERAL["direction"])
        assert page.is_disabled("#matrix-btn")
    assert dialogs == []


def _release(page, held: list) -> None:
    """Let the requests held back by a route through, one by one, then give the page's handlers time to run."""
    for route in held:
        with page.expect_response(lambda r, url=route.request.url: r.url == url):
            route.continue_()
    page.wait_for_timeout(500)


@pytest.mark.browser
@ON_SQLITE
def test_page_drops_a_late_answer_about_an_experiment_no_longer_selected(server):
    """The page asks for the first-listed experiment's models on load; if that answer comes after the user has picked
    another experiment, it must not overwrite the lists (seen in CI as a metric list gone empty)."""
    held = []
    with _browser() as (page, dialogs):
        page.route("**/bayescompare/api/choices?*",
                   lambda route: route.continue_() if f"experiment_id={server.experiment_id}&" in route.request.url
                   else held.append(route))
        page.goto(f"{server.url}/bayescompare/")
        other = next(v for v in page.eval_on_selector_all("#experiment option", "os => os.map(o => o.value)")
                     if v != server.experiment_id)
        page.select_option("#experiment", other)
        page.select_option("#experiment", server.experiment_id)
        page.wait_for_selector("#model_a option:nth-child(3)", state="attached")
        assert held, "the question about the other experiment was not held back"
        _release(page, held)
        assert _options(page, "#metric") == ["accuracy"]
        assert sorted(_options(page, "#model_a")) == sorted(MODELS)
        assert page.text_content("#choices-info") == "3 models · 5 datasets · 15 runs"


@pytest.mark.browser
@ON_SQLITE
def test_page_shows_only_the_last_run_asked_for(server):
    """Picking a past comparison while the page still waits for the previous one's status: the late status must not
    replace the one picked."""
    api = server.api()
    first = api.start("comparison", _fields(server, seed=21))
    picked = api.start("comparison", _fields(server, model_a="cart", model_b="lda", seed=21))
    assert api.wait(first)["status"] == api.wait(picked)["status"] == "FINISHED"
    held = []
    with _browser() as (page, dialogs):
        page.route(f"**/bayescompare/api/comparisons/get?run_id={first}", lambda route: held.append(route))
        page.goto(f"{server.url}/bayescompare/?run_id={first}")
        page.click(f'#past tr[data-run-id="{picked}"] a.show')
        page.wait_for_selector("#verdict:not(:empty)")
        assert page.text_content("#job-title") == "cart vs lda · accuracy"
        assert held, "the status of the first run was not held back"
        _release(page, held)
        assert page.text_content("#job-title") == "cart vs lda · accuracy"
        assert page.text_content("#label-a") == "P(cart better)"


# ------------------------------------------------------------------------------------------------ other modes


def test_gunicorn_with_two_workers(tmp_path):
    srv = Server(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", extra=["--gunicorn-opts", "--workers 2"])
    try:
        client = MlflowClient(srv.url)
        eid = _log_runs(client, "cv", datasets=4)
        assert "gunicorn" in requests.get(f"{srv.url}/bayescompare/", timeout=30).headers.get("Server", "")
        api = srv.api()
        run_id = api.start("comparison", {"experiment_id": [eid], "metric": "accuracy", "model_a": "lda",
                                          "model_b": "cart", **FAST, "seed": 1})
        assert api.wait(run_id)["status"] == "FINISHED"
        assert requests.get(f"{srv.url}/api/2.0/mlflow/experiments/search", params={"max_results": 5},
                            timeout=30).status_code == 200
    finally:
        srv.stop()


def test_static_prefix(tmp_path):
    srv = Server(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", prefix="/mlflow", extra=["--workers", "1"])
    try:
        client = MlflowClient(srv.url)
        eid = _log_runs(client, "cv", datasets=4)
        page = requests.get(f"{srv.url}/bayescompare/", timeout=30)
        assert page.status_code == 200 and 'data-base="/mlflow/bayescompare"' in page.text
        assert requests.get(f"{srv.root}/bayescompare/", timeout=30).status_code == 404
        assert requests.get(f"{srv.url}/bayescompare/static/page.js", timeout=30).status_code == 200
        api = srv.api()
        run_id = api.start("comparison", {"experiment_id": [eid], "metric": "accuracy", "model_a": "lda",
                                          "model_b": "cart", **FAST, "seed": 1})
        state = api.wait(run_id)
        assert state["status"] == "FINISHED", state
        assert state["run_url"] == f"/mlflow/#/experiments/{eid}/runs/{run_id}?workflowType=machine_learning"
        assert state["report_url"] == f"/mlflow/bayescompare/report?run_id={run_id}"
        assert api.session.get(f"{srv.root}{state['report_url']}", timeout=30).status_code == 200
    finally:
        srv.stop()


def test_stale_running_runs_are_marked_failed_at_startup(tmp_path):
    backend = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(backend)
    eid = client.create_experiment("cv")
    dead = subprocess.Popen(["true"])
    dead.wait()
    tags = {T.KIND: "comparison", T.STAGE: "sampling"}
    gone = client.create_run(eid, tags={**tags, **owner_tags(dead.pid)}).info.run_id
    old = client.create_run(eid, tags=tags, start_time=int((time.time() - 3 * 86400) * 1000)).info.run_id
    alive = client.create_run(eid, tags={**tags, **owner_tags(os.getpid())}).info.run_id
    other = client.create_run(eid, tags={T.KIND: "comparison", **owner_tags(dead.pid, host="another-host")}
                              ).info.run_id
    plain = client.create_run(eid, tags={"model": "lda", **owner_tags(dead.pid)}).info.run_id
    recorded = client.create_run(eid, tags={**tags, **owner_tags(dead.pid), T.ERROR: "the job's own reason"})
    client.log_batch(alive, tags=[RunTag("note", "owned by the test process")])
    srv = Server(tmp_path, backend, extra=["--workers", "1"])
    try:
        deadline = time.monotonic() + 60
        ended = (gone, old, recorded.info.run_id)
        while time.monotonic() < deadline:
            if all(client.get_run(r).info.status == "FAILED" for r in ended):
                break
            time.sleep(0.5)
        errors = {r: client.get_run(r).data.tags[T.ERROR] for r in ended}
        assert errors[gone] == (f"marked FAILED by the bayescompare server: the process that ran it (pid {dead.pid} "
                                f"on {socket.gethostname()}) is gone; the server was stopped or restarted while "
                                "the comparison was sampling")
        assert "beyond the grace period of 43200 s" in errors[old]
        assert errors[recorded.info.run_id] == "the job's own reason"  # a recorded reason is kept
        assert {client.get_run(r).data.tags[T.STAGE] for r in ended} == {"failed"}
        for run_id in (alive, other, plain):
            assert client.get_run(run_id).info.status == "RUNNING"
        with pytest.raises(JobFailed) as failed:
            srv.api().wait(gone, timeout=0)
        assert (failed.value.state["status"], failed.value.state["error"]) == ("FAILED", errors[gone])
        assert str(failed.value) == f"comparison {gone} FAILED: {errors[gone]}"
    finally:
        srv.stop()


def _copy_compiled(names, cache: Path) -> None:
    """Put the compiled programs ``names`` (from this machine's cache) into the httpstan cache under ``cache``
    (``XDG_CACHE_HOME``), as a compile there would leave them: a test of a cold compile then pays for the one program
    it watches (a compile is ~45 CPU-seconds), not for every program."""
    import httpstan
    import httpstan.cache

    for name in names:
        model = pystan_backend.model_name(programs.program_code(name))
        target = cache / "httpstan" / httpstan.__version__ / "models" / model.split("/")[1]
        shutil.copytree(httpstan.cache.model_directory(model), target)


def _wait_for_log(srv, pattern: str, timeout: float) -> str:
    """The server's log once a line matches ``pattern`` (an assertion with its tail after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not re.search(pattern, log := srv.log.read_text(errors="replace")) and time.monotonic() < deadline:
        time.sleep(1)
    assert re.search(pattern, log), log[-3000:]
    return log


@pytest.mark.browser
@pytest.mark.timeout(1800)  # its own waits add up to about 900 s
def test_stan_programs_compile_at_startup_and_a_job_waits_for_it(tmp_path):
    """A server on a machine where the hierarchical program is not compiled yet (a fresh cache, holding only the
    two other programs): it compiles the Stan programs in the background as it starts; a comparison asked for
    meanwhile shows the stage "compiling" on the page, waits for that compile instead of compiling again, and
    finishes."""
    cache = tmp_path / "cache"
    _copy_compiled(["bbt", "hierarchical_k"], cache)  # compiled already: the server compiles hierarchical alone
    srv = Server(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", extra=["--workers", "2"],
                 env={"XDG_CACHE_HOME": str(cache), "MLFLOW_BAYESCOMPARE_CACHE": str(cache / "bayescompare")})
    try:
        srv.experiment_id = _log_runs(MlflowClient(srv.url), "cv", datasets=4)
        with _browser() as (page, dialogs):
            page.goto(f"{srv.url}/bayescompare/")
            _fill_form(page, srv, seed=1, draws=200)
            page.click("#compare-btn")
            page.wait_for_selector('#stages li.current[data-stage="compiling"]', timeout=120_000)
            assert page.text_content("#job-status") == "Running: compiling…"
            page.wait_for_selector("#verdict:not(:empty)", timeout=600_000)
            assert page.text_content("#job-status") == "FINISHED"
            run_id = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["run_id"][0]
        # the start-up compile logs its programs once every one is compiled: the others may still be compiling
        log = _wait_for_log(srv, r"compiled the Stan program hierarchical at start-up in \d+ s", timeout=600)
        assert log.count("compiling 1 Stan program at once (hierarchical)") == 1, log[-3000:]  # one line says it
        run = MlflowClient(srv.url).get_run(run_id)
        assert run.info.status == "FINISHED" and run.data.metrics["compile_seconds"] > 0  # it waited for that compile
    finally:
        srv.stop()
