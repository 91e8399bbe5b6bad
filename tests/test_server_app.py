"""The ``bayescompare`` server app: a real ``mlflow server --app-name bayescompare`` on 127.0.0.1.  Its JSON API is
checked value for value against the command line and the Python API (same seed, same probabilities), its page is
driven in headless Chromium, and gunicorn, ``--static-prefix``, the start-up sweep of stale runs and the start-up
compile of the Stan programs each run on a server of their own.  Security: ``test_security.py``; limits:
``test_server_limits.py``; a server stopped or killed mid-job: ``test_faults.py``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import requests
from mlflow import MlflowClient
from mlflow.entities import RunTag
from servers import (Server, chromium_executable, chromium_page, create_pg_database, drop_pg_database, pg_base_uri,
                     pg_skip_reason, start_comparison, status, wait_done)

from mlflow_bayescompare import tags as T
from mlflow_bayescompare.compare import compare_matrix, compare_runs
from mlflow_bayescompare.cvlog import log_cv_scores
from mlflow_bayescompare.server.owners import owner_tags

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
MODELS = ("lda", "cart", "svm")
OFFSETS = {"lda": 0.0, "cart": -0.03, "svm": 0.005}
FAST = {"chains": 2, "draws": 200}
PROBABILITIES = ("p_a_better", "p_rope", "p_b_better")


def _log_runs(client: MlflowClient, name: str, datasets: int = 5) -> str:
    eid = client.create_experiment(name)
    rng = np.random.default_rng(7)
    for model in MODELS:
        for d in range(datasets):
            scores = np.clip(0.7 + 0.03 * d + OFFSETS[model] + rng.normal(0, 0.03, 20), 0, 1)
            log_cv_scores(model, f"dataset-{d}", scores, folds=10, repeats=2, experiment_id=eid, client=client)
    return eid


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"bc-{request.param}")
    if request.param == "postgres" and not pg_base_uri():
        pytest.skip(pg_skip_reason())
    backend = create_pg_database() if request.param == "postgres" else f"sqlite:///{tmp / 'mlflow.db'}"
    srv = Server(tmp, backend, extra=["--workers", "2"])
    srv.client = MlflowClient(srv.url)
    srv.experiment_id = _log_runs(srv.client, f"cv-{uuid.uuid4().hex[:8]}")
    srv.experiment_name = srv.client.get_experiment(srv.experiment_id).name
    yield srv
    srv.stop()
    if request.param == "postgres":
        drop_pg_database(backend)


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
    s = server.session()
    run_id = start_comparison(s, server.url, **_fields(server, seed=11, rope=0.01))
    state = wait_done(s, server.url, run_id)
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
    report = s.get(f"{server.root}{state['report_url']}", timeout=30)
    assert report.status_code == 200 and report.headers["Content-Type"].startswith("text/html")
    assert "sandbox" in report.headers["Content-Security-Policy"]
    assert report.headers["Content-Disposition"] == "inline; filename=report.html"
    logged = server.client.download_artifacts(run_id, "report.html", str(server.tmp))
    assert report.content == Path(logged).read_bytes()


def test_data_problem_gets_the_cli_message_and_no_run(server):
    s = server.session()
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
    s = server.session()
    pairs = [("lda", "cart"), ("cart", "lda"), ("lda", "svm"), ("svm", "cart")]
    with ThreadPoolExecutor(4) as pool:
        run_ids = list(pool.map(lambda p: start_comparison(s, server.url, **_fields(
            server, model_a=p[0], model_b=p[1], seed=3)), pairs))
    assert len(set(run_ids)) == 4
    states = [wait_done(s, server.url, r) for r in run_ids]
    for (a, b), state in zip(pairs, states):
        assert (state["status"], state["model_a"], state["model_b"]) == ("FINISHED", a, b), state
        assert {k: state[k] for k in (*PROBABILITIES, "verdict")} == _in_process(server, a, b, seed=3)


def test_matrix_compares_all_models(server):
    s = server.session()
    resp = s.post(f"{server.url}/bayescompare/api/matrix",
                  json={"experiment_id": [server.experiment_id], "metric": "accuracy", **FAST, "seed": 1},
                  timeout=60)
    assert resp.status_code == 202, resp.text
    state = wait_done(s, server.url, resp.json()["run_id"])
    assert (state["status"], state["kind"], state["models"]) == ("FINISHED", "matrix", sorted(MODELS)), state
    expected = compare_matrix(experiment_ids=[server.experiment_id], metric="accuracy", tracking_uri=server.url,
                              log=False, jobs=1, seed=1, **FAST)
    assert state["best"] == expected.ranking["model"].iloc[0] and state["verdict"] == f"best: {state['best']}"
    got = {(p["model_a"], p["model_b"]): tuple(p[k] for k in PROBABILITIES) for p in state["pairs"]}
    assert got == {pair: (o.p_a_better, o.p_rope, o.p_b_better) for pair, o in expected.pairs.items()}
    assert all(p["parent_run_id"] == state["run_id"] and p["status"] == "FINISHED" for p in state["pairs"])


def test_experiments_and_choices(server):
    s = server.session()
    listed = s.get(f"{server.url}/bayescompare/api/experiments", timeout=30).json()["experiments"]
    assert {"experiment_id": server.experiment_id, "name": server.experiment_name} in listed
    choices = s.get(f"{server.url}/bayescompare/api/choices", params={"experiment_id": server.experiment_id},
                    timeout=30).json()
    assert choices == {"experiment_id": server.experiment_id, "models": sorted(MODELS), "metrics": ["accuracy"],
                       "datasets": [f"dataset-{d}" for d in range(5)], "runs": 15}


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
    if chromium_executable() is None:
        pytest.skip("no Chromium with playwright (set MLFLOW_BAYESCOMPARE_CHROMIUM, pip install playwright)")
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


@pytest.mark.browser
def test_page_runs_a_comparison_and_follows_its_stages(server):
    """The form's defaults come from the option specs; the stages are shown as the job goes through them; the
    result shown is the run's, and the report is shown inline."""
    ARTIFACTS.mkdir(exist_ok=True)
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        defaults = {k: page.input_value(f"#{k}") for k in ("rope", "chains", "draws", "threshold", "model_tag")}
        assert defaults == {"rope": "0.01", "chains": "4", "draws": "1000", "threshold": "0.95", "model_tag": "model"}
        _fill_form(page, server, seed=4, draws=20000)  # long enough to be seen sampling
        page.click("#compare-btn")
        seen, deadline = [], time.monotonic() + 600
        while page.text_content("#job-status") != "FINISHED":
            current = [s for s, c in _stage_classes(page).items() if c == "current"]
            if current and (not seen or seen[-1] != current[0]):
                seen.append(current[0])
            assert time.monotonic() < deadline and page.text_content("#job-status") != "FAILED", \
                page.text_content("#job-error")
            page.wait_for_timeout(200)
        assert "sampling" in seen and seen == sorted(seen, key=list(_stage_classes(page)).index), seen
        assert set(_stage_classes(page).values()) == {"past"}
        run_id = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["run_id"][0]
        state = status(server.session(), server.url, run_id).json()
        assert page.text_content("#verdict") == state["verdict"]
        assert [page.text_content(f"#{i}") for i in ("p-a", "p-rope", "p-b")] == \
            [f"{state[k]:.3f}" for k in PROBABILITIES]
        assert page.get_attribute("#run-link", "href") == state["run_url"]
        page.wait_for_selector("#report:not([hidden])")
        assert page.get_attribute("#report", "src") == state["report_url"]
        report = page.frame_locator("#report")
        report.locator("body").wait_for(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / f"bayescompare-page-{server.backend.split(':')[0]}.png"),
                        full_page=True)
    assert dialogs == []


@pytest.mark.browser
def test_page_compare_all_models(server):
    with _browser() as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        _fill_form(page, server, seed=1, draws=200)
        page.click("#matrix-btn")
        page.wait_for_selector("#ranking:not([hidden])", timeout=600_000)
        run_id = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["run_id"][0]
        state = status(server.session(), server.url, run_id).json()
        rows = page.eval_on_selector_all("#ranking tbody tr",
                                         "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")
        expected = [[f"{p['model_a']} vs {p['model_b']}", p["verdict"], *(f"{p[k]:.3f}" for k in PROBABILITIES)]
                    for p in state["pairs"]]
        assert sorted(rows) == sorted(expected) and len(rows) == 3
        assert page.text_content("#job-title") == "All models (3) · accuracy"
    assert dialogs == []


def _release(page, held: list) -> None:
    """Let the requests held back by a route through, one by one, then give the page's handlers time to run."""
    for route in held:
        with page.expect_response(lambda r, url=route.request.url: r.url == url):
            route.continue_()
    page.wait_for_timeout(500)


@pytest.mark.browser
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
def test_page_shows_only_the_last_run_asked_for(server):
    """Picking a past comparison while the page still waits for the previous one's status: the late status must not
    replace the one picked."""
    s = server.session()
    first = start_comparison(s, server.url, **_fields(server, seed=21))
    picked = start_comparison(s, server.url, **_fields(server, model_a="cart", model_b="lda", seed=21))
    assert wait_done(s, server.url, first)["status"] == wait_done(s, server.url, picked)["status"] == "FINISHED"
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
        s = srv.session()
        run_id = start_comparison(s, srv.url, experiment_id=[eid], metric="accuracy", model_a="lda", model_b="cart",
                                  **FAST, seed=1)
        assert wait_done(s, srv.url, run_id)["status"] == "FINISHED"
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
        s = srv.session()
        run_id = start_comparison(s, srv.url, experiment_id=[eid], metric="accuracy", model_a="lda", model_b="cart",
                                  **FAST, seed=1)
        state = wait_done(s, srv.url, run_id)
        assert state["status"] == "FINISHED", state
        assert state["run_url"] == f"/mlflow/#/experiments/{eid}/runs/{run_id}"
        assert state["report_url"] == f"/mlflow/bayescompare/report?run_id={run_id}"
        assert s.get(f"{srv.root}{state['report_url']}", timeout=30).status_code == 200
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
    other = client.create_run(eid, tags={T.KIND: "comparison", **owner_tags(dead.pid),
                                         T.JOB_HOST: "another-host"}).info.run_id
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
                                f"on {owner_tags()[T.JOB_HOST]}) is gone; the server was stopped or restarted while "
                                "the comparison was sampling")
        assert "beyond the grace period of 43200 s" in errors[old]
        assert errors[recorded.info.run_id] == "the job's own reason"  # a recorded reason is kept
        assert {client.get_run(r).data.tags[T.STAGE] for r in ended} == {"failed"}
        for run_id in (alive, other, plain):
            assert client.get_run(run_id).info.status == "RUNNING"
        state = status(requests.Session(), srv.url, gone).json()
        assert (state["status"], state["error"]) == ("FAILED", errors[gone])
    finally:
        srv.stop()


@pytest.mark.slow
@pytest.mark.browser
def test_stan_programs_compile_at_startup_and_a_job_waits_for_it(tmp_path):
    """A server on a machine where nothing is compiled yet (a fresh cache): it compiles the Stan programs in the
    background as it starts; a comparison asked for meanwhile shows the stage "compiling" on the page, waits for that
    compile instead of compiling again, and finishes."""
    cache = tmp_path / "cache"
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
        log = srv.log.read_text(errors="replace")
        assert log.count("compiling the Stan program hierarchical once") == 1, log[-3000:]
        assert re.search(r"compiled the Stan program hierarchical at start-up in \d+ s", log), log[-3000:]
        run = MlflowClient(srv.url).get_run(run_id)
        assert run.info.status == "FINISHED" and run.data.metrics["compile_seconds"] > 0  # it waited for that compile
    finally:
        srv.stop()
