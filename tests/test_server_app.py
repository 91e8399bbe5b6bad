"""The ``bayescompare`` server app: a real ``mlflow server --app-name bayescompare`` on 127.0.0.1, its page driven in
headless Chromium, its JSON API, gunicorn, ``--static-prefix``, basic-auth layering and the stale-run sweep."""

from __future__ import annotations

import contextlib
import json
import os
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

from servers import (Server, create_pg_database, drop_pg_database, pg_base_uri, pg_skip_reason,
                     start_comparison, wait_done)

from mlflow_bayescompare.cvlog import log_cv_scores

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
XSS = "<script>alert(1)</script>"
MODELS = ("lda", "cart", XSS)
FAST = {"chains": 2, "draws": 500}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
ADMIN = ("admin", "bayescompare-Admin-pw-1")


# ------------------------------------------------------------------------------------------------ servers


def _pg_backend() -> str:
    if not pg_base_uri():
        pytest.skip(pg_skip_reason())
    return create_pg_database()


_drop_pg = drop_pg_database
_wait_done = wait_done
_start = start_comparison


def _log_runs(client: MlflowClient, name: str, datasets: int = 6) -> str:
    eid = client.create_experiment(name)
    rng = np.random.default_rng(7)
    offsets = {"lda": 0.0, "cart": -0.03, XSS: 0.005}
    for model in MODELS:
        for d in range(datasets):
            scores = np.clip(0.7 + 0.03 * d + offsets[model] + rng.normal(0, 0.03, 100), 0, 1)
            log_cv_scores(model, f"dataset-{d}", scores, folds=10, repeats=10, experiment_id=eid, client=client)
    return eid


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"bc-{request.param}")
    backend = _pg_backend() if request.param == "postgres" else f"sqlite:///{tmp / 'mlflow.db'}"
    srv = Server(tmp, backend, extra=["--workers", "2"])
    srv.client = MlflowClient(srv.url)
    srv.experiment_id = _log_runs(srv.client, f"cv-{uuid.uuid4().hex[:8]}")
    srv.experiment_name = srv.client.get_experiment(srv.experiment_id).name
    yield srv
    srv.stop()
    if request.param == "postgres":
        _drop_pg(backend)


def _fields(srv, **extra) -> dict:
    return {"experiment_name": [srv.experiment_name], "metric": "accuracy", "model_a": "lda", "model_b": "cart",
            **FAST, **extra}


# ------------------------------------------------------------------------------------------------ JSON API


def test_api_matches_cli_for_the_same_seed(server):
    s = server.session()
    run_id = _start(s, server.url, **_fields(server, seed=11, rope=0.01))
    state = _wait_done(s, server.url, run_id)
    assert state["status"] == "FINISHED", state
    assert state["stage"] == "done" and state["error"] is None
    cli = subprocess.run(
        [sys.executable, "-m", "mlflow_bayescompare.cli", "compare", "--tracking-uri", server.url,
         "--experiment-name", server.experiment_name, "--metric", "accuracy", "--model-a", "lda",
         "--model-b", "cart", "--seed", "11", "--rope", "0.01", "--chains", "2", "--draws", "500",
         "--json", "--no-log"], capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stderr[-3000:]
    expected = json.loads(cli.stdout)
    for key in ("p_a_better", "p_rope", "p_b_better"):
        assert state[key] == pytest.approx(expected[key], abs=1e-9), key
    assert state["verdict"] == expected["verdict"]
    run = server.client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["bayescompare.kind"] == "comparison"
    assert run.data.metrics["p_a_better"] == pytest.approx(expected["p_a_better"])
    report = s.get(f"{server.root}{state['report_url']}", timeout=30)
    assert report.status_code == 200 and report.headers["Content-Type"].startswith("text/html")
    assert "sandbox" in report.headers["Content-Security-Policy"]
    assert "attachment" not in report.headers.get("Content-Disposition", "")


@pytest.mark.parametrize("fields, cli_args", [
    ({"chains": 0}, ["--chains", "0"]),
    ({"layout": "rows"}, ["--layout", "rows"]),
    ({"experiment_name": ["no-such-experiment"]}, ["--experiment-name", "no-such-experiment"]),
    ({"model_b": "no-such-model"}, ["--model-b", "no-such-model"]),
    ({"metric": None}, None),
])
def test_invalid_input_gets_400_with_the_cli_message(server, fields, cli_args):
    s = server.session()
    body = {**_fields(server), **fields}
    body = {k: v for k, v in body.items() if v is not None}
    resp = s.post(f"{server.url}/bayescompare/api/comparisons", json=body, timeout=60)
    assert resp.status_code == 400, resp.text
    message = resp.json()["error"]
    if cli_args is None:
        assert message == "Missing option '--metric'."
        return
    base = ["--tracking-uri", server.url, "--experiment-name", server.experiment_name, "--metric", "accuracy",
            "--model-a", "lda", "--model-b", "cart", "--no-log"]
    cli = subprocess.run([sys.executable, "-m", "mlflow_bayescompare.cli", "compare", *base, *cli_args],
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 2
    assert f"Error: {message}" in cli.stderr, (message, cli.stderr)


def test_server_bounds_and_unknown_fields(server):
    s = server.session()
    resp = s.post(f"{server.url}/bayescompare/api/comparisons", json=_fields(server, chains=1000), timeout=30)
    assert resp.status_code == 400 and "'--chains'" in resp.json()["error"]
    resp = s.post(f"{server.url}/bayescompare/api/comparisons", json=_fields(server, tracking_uri="file:///"),
                  timeout=30)
    assert resp.status_code == 400 and "unknown field" in resp.json()["error"]
    resp = s.post(f"{server.url}/bayescompare/api/comparisons", data="x", timeout=30,
                  headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415


def test_four_concurrent_comparisons_all_finish(server):
    s = server.session()
    pairs = [("lda", "cart"), ("cart", "lda"), ("lda", XSS), (XSS, "cart")]
    with ThreadPoolExecutor(4) as pool:
        run_ids = list(pool.map(lambda p: _start(s, server.url, **_fields(server, model_a=p[0], model_b=p[1],
                                                                         seed=3)), pairs))
    assert len(set(run_ids)) == 4
    states = [_wait_done(s, server.url, r) for r in run_ids]
    assert [st["status"] for st in states] == ["FINISHED"] * 4, states
    assert all(st["p_a_better"] is not None for st in states)


def test_csrf_token_and_foreign_origin_are_refused(server):
    url = f"{server.url}/bayescompare/api/comparisons"
    resp = requests.post(url, json=_fields(server), timeout=30)  # no cookie, no header
    assert resp.status_code == 403 and "CSRF" in resp.json()["error"]
    s = server.session()
    resp = s.post(url, json=_fields(server), headers={"X-BayesCompare-CSRF": "x" * 43}, timeout=30)
    assert resp.status_code == 403 and "mismatch" in resp.json()["error"]
    resp = s.post(url, json=_fields(server), headers={"Origin": "https://evil.example"}, timeout=30)
    assert resp.status_code == 403 and "cross-origin" in resp.json()["error"]
    resp = s.post(url, json=_fields(server), headers={"Sec-Fetch-Site": "cross-site"}, timeout=30)
    assert resp.status_code == 403
    assert s.get(f"{server.url}/bayescompare/api/comparisons", timeout=30).status_code == 200


def test_stock_mlflow_ui_and_rest_api_still_answer(server):
    index = requests.get(f"{server.url}/", timeout=30)
    assert index.status_code == 200 and "<title>MLflow</title>" in index.text
    asset = next(part.split('"')[0] for part in index.text.split('src="')[1:] if part.split('"')[0].endswith(".js"))
    js = requests.get(urllib.parse.urljoin(f"{server.url}/", asset), timeout=30)
    assert js.status_code == 200 and len(js.content) > 1000
    rest = requests.get(f"{server.url}/api/2.0/mlflow/experiments/search", params={"max_results": 10}, timeout=30)
    assert rest.status_code == 200
    assert server.experiment_name in {e["name"] for e in rest.json()["experiments"]}


def test_model_name_with_script_is_escaped(server):
    page = requests.get(f"{server.url}/bayescompare/", timeout=30)
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    choices = requests.get(f"{server.url}/bayescompare/api/choices",
                           params={"experiment_id": server.experiment_id}, timeout=30).json()
    assert XSS in choices["models"]
    # a finished comparison involving the model is listed server-side in the page, escaped
    s = server.session()
    run_id = _start(s, server.url, **_fields(server, model_a=XSS, model_b="lda", seed=5))
    assert _wait_done(s, server.url, run_id)["status"] == "FINISHED"
    page = requests.get(f"{server.url}/bayescompare/", timeout=30).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert XSS not in page


def test_matrix_compares_all_models(server):
    s = server.session()
    resp = s.post(f"{server.url}/bayescompare/api/matrix",
                  json={"experiment_id": [server.experiment_id], "metric": "accuracy", "chains": 2, "draws": 200,
                        "seed": 1}, timeout=60)
    assert resp.status_code == 202, resp.text
    state = _wait_done(s, server.url, resp.json()["run_id"])
    assert state["status"] == "FINISHED", state
    assert state["kind"] == "matrix" and sorted(state["models"]) == sorted(MODELS)
    assert len(state["pairs"]) == 3 and state["verdict"].startswith("best: ")


# ------------------------------------------------------------------------------------------------ browser


@contextlib.contextmanager
def _chromium_page():
    """A page in headless Chromium; on leaving, no alert or confirm dialog may have opened."""
    playwright = pytest.importorskip("playwright.sync_api")
    executable = os.environ.get("MLFLOW_BAYESCOMPARE_CHROMIUM", "/usr/bin/chromium")
    if not Path(executable).exists():
        pytest.skip(f"no Chromium at {executable} (set MLFLOW_BAYESCOMPARE_CHROMIUM)")
    dialogs = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            yield page
        finally:
            browser.close()
    assert dialogs == []


def _options(page, select: str) -> list[str]:
    return page.eval_on_selector_all(f"{select} option", "os => os.map(o => o.textContent)")


def _release(page, held: list) -> None:
    """Let the requests held back by a route through, one by one, then give the page's handlers time to run."""
    for route in held:
        with page.expect_response(lambda r, url=route.request.url: r.url == url):
            route.continue_()
    page.wait_for_timeout(500)


@pytest.mark.browser
def test_page_in_headless_chromium(server):
    ARTIFACTS.mkdir(exist_ok=True)
    with _chromium_page() as page:
        page.goto(f"{server.url}/bayescompare/")
        page.select_option("#experiment", server.experiment_id)
        page.wait_for_selector("#model_a option:nth-child(3)", state="attached")  # no eval: the page's CSP forbids it
        assert XSS in _options(page, "#model_a")  # shown as text, not markup
        page.select_option("#metric", "accuracy")
        page.select_option("#model_a", "lda")
        page.select_option("#model_b", "cart")
        page.fill("#rope", "0.01")
        page.click("details summary")
        page.fill("#chains", "2")
        page.fill("#draws", "500")
        page.fill("#seed", "4")
        page.click("#compare-btn")
        page.wait_for_selector("#verdict:not(:empty)", timeout=600_000)
        assert page.text_content("#job-status") == "FINISHED"
        verdict = page.text_content("#verdict")
        p_a = page.text_content("#p-a")
        assert verdict and float(p_a) >= 0
        page.wait_for_selector("#report:not([hidden])")
        page.wait_for_timeout(1500)
        page.screenshot(path=str(ARTIFACTS / f"bayescompare-page-{server.backend.split(':')[0]}.png"),
                        full_page=True)
        href = page.get_attribute("#run-link", "href")
        assert "#/experiments/" in href and "/runs/" in href
        page.click("#run-link")
        page.wait_for_url("**/#/experiments/**")
        page.get_by_text("p_a_better").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(ARTIFACTS / f"bayescompare-mlflow-run-{server.backend.split(':')[0]}.png"),
                        full_page=True)


@pytest.mark.browser
def test_page_drops_a_late_answer_about_an_experiment_no_longer_selected(server):
    """The page asks for the first-listed experiment's models on load; if that answer comes after the user has picked
    another experiment, it must not overwrite the lists (seen in CI as a metric list gone empty)."""
    held = []
    with _chromium_page() as page:
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
        assert "accuracy" in _options(page, "#metric")
        assert sorted(_options(page, "#model_a")) == sorted(MODELS)
        assert page.text_content("#choices-info").startswith("3 models")


@pytest.mark.browser
def test_page_shows_only_the_last_run_asked_for(server):
    """Picking a past comparison while the page still waits for the previous one's status: the late status must not
    replace the one picked."""
    s = server.session()
    first = _start(s, server.url, **_fields(server, seed=21))
    picked = _start(s, server.url, **_fields(server, model_a="cart", model_b="lda", seed=21))
    assert _wait_done(s, server.url, first)["status"] == _wait_done(s, server.url, picked)["status"] == "FINISHED"
    held = []
    with _chromium_page() as page:
        page.route(f"**/bayescompare/api/comparisons/{first}", lambda route: held.append(route))
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
        run_id = _start(s, srv.url, experiment_id=[eid], metric="accuracy", model_a="lda", model_b="cart",
                        chains=2, draws=200, seed=1)
        assert _wait_done(s, srv.url, run_id)["status"] == "FINISHED"
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
        run_id = _start(s, srv.url, experiment_id=[eid], metric="accuracy", model_a="lda", model_b="cart",
                        chains=2, draws=200, seed=1)
        state = _wait_done(s, srv.url, run_id)
        assert state["status"] == "FINISHED", state
        assert state["run_url"].startswith("/mlflow/#/experiments/")
        assert state["report_url"].startswith("/mlflow/bayescompare/runs/")
    finally:
        srv.stop()


def test_basic_auth_layered(tmp_path):
    pytest.importorskip("flask_wtf", reason="MLflow's basic-auth needs Flask-WTF (pip install 'mlflow[auth]')")
    config = tmp_path / "auth.ini"
    config.write_text("[mlflow]\ndefault_permission = READ\n"
                      f"database_uri = sqlite:///{tmp_path / 'auth.db'}\nadmin_username = {ADMIN[0]}\n"
                      "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
    env = {"MLFLOW_AUTH_CONFIG_PATH": str(config), "MLFLOW_AUTH_ADMIN_PASSWORD": ADMIN[1],
           "MLFLOW_FLASK_SERVER_SECRET_KEY": uuid.uuid4().hex}
    srv = Server(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", app="bayescompare-auth", env=env,
                 extra=["--workers", "1"])
    try:
        assert requests.get(f"{srv.url}/bayescompare/", timeout=30).status_code == 401
        assert requests.get(f"{srv.url}/bayescompare/api/comparisons", timeout=30).status_code == 401
        assert requests.get(f"{srv.url}/api/2.0/mlflow/experiments/search", params={"max_results": 5},
                            timeout=30).status_code == 401
        os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"] = ADMIN
        try:
            eid = _log_runs(MlflowClient(srv.url), "cv", datasets=4)
        finally:
            os.environ.pop("MLFLOW_TRACKING_USERNAME"), os.environ.pop("MLFLOW_TRACKING_PASSWORD")
        page = requests.get(f"{srv.url}/bayescompare/", auth=ADMIN, timeout=30)
        assert page.status_code == 200 and "signed in as admin" in page.text
        s = srv.session(auth=ADMIN)
        run_id = _start(s, srv.url, experiment_id=[eid], metric="accuracy", model_a="lda", model_b="cart",
                        chains=2, draws=200, seed=1)
        state = _wait_done(s, srv.url, run_id)
        assert state["status"] == "FINISHED", state
        wrong = requests.get(f"{srv.url}/bayescompare/api/comparisons/{run_id}", auth=("admin", "wrong"), timeout=30)
        assert wrong.status_code == 401
    finally:
        srv.stop()


def test_stale_running_runs_are_marked_failed_at_startup(tmp_path):
    from mlflow_bayescompare.server import jobs

    backend = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(backend)
    eid = client.create_experiment("cv")
    dead = subprocess.Popen(["true"])
    dead.wait()
    tags = {"bayescompare.kind": "comparison", "bayescompare.stage": "sampling"}
    gone = client.create_run(eid, tags={**tags, **jobs.owner_tags(dead.pid)}).info.run_id
    old = client.create_run(eid, tags=tags, start_time=int((time.time() - 3 * 86400) * 1000)).info.run_id
    alive = client.create_run(eid, tags={**tags, **jobs.owner_tags(os.getpid())}).info.run_id
    other = client.create_run(eid, tags={"bayescompare.kind": "comparison", **jobs.owner_tags(dead.pid),
                                         jobs.TAG_HOST: "another-host"}).info.run_id
    plain = client.create_run(eid, tags={"model": "lda", **jobs.owner_tags(dead.pid)}).info.run_id
    client.log_batch(alive, tags=[RunTag("note", "owned by the test process")])
    srv = Server(tmp_path, backend, extra=["--workers", "1"])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all(client.get_run(r).info.status == "FAILED" for r in (gone, old)):
                break
            time.sleep(0.5)
        for run_id, words in ((gone, "is gone"), (old, "grace period")):
            run = client.get_run(run_id)
            assert run.info.status == "FAILED"
            assert words in run.data.tags["bayescompare.error"]
            assert run.data.tags["bayescompare.stage"] == "failed"
        for run_id in (alive, other, plain):
            assert client.get_run(run_id).info.status == "RUNNING"
        state = requests.get(f"{srv.url}/bayescompare/api/comparisons/{gone}", timeout=30).json()
        assert state["status"] == "FAILED" and "is gone" in state["error"]
    finally:
        srv.stop()

