"""Security regressions of the server app, on real servers: script injection through every user-controlled field
(checked in headless Chromium with the page's CSP switched off, so that escaping alone is tested), cross-site
requests, path traversal and filter injection, and MLflow's basic-auth for a non-admin user under its default
``MLFLOW_BASIC_AUTH_FAIL_CLOSED=true``: every route, answers that do not tell "forbidden" from "does not exist",
and refused requests that create nothing."""

from __future__ import annotations

import contextlib
import json
import os
import re
import urllib.parse
import uuid

import numpy as np
import pandas as pd
import pytest
import requests
from click.testing import CliRunner
from mlflow import MlflowClient
from mlflow.entities import RunStatus
from servers import Server, chromium_page, free_port, gateway, require_chromium, require_module, show_past_run

from mlflow_bayescompare.cli import main
from mlflow_bayescompare.client import BayesCompareClient, RequestRefused
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.runs import runlog
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError

pytestmark = [pytest.mark.server, pytest.mark.slow]  # slow: each test needs the servers this module starts

FAST = {"chains": 2, "draws": 200, "seed": 1}
XSS = {
    "experiment": '<img src=x onerror=alert("experiment")>',
    "model": '<script>alert("model")</script>',
    "model2": '"><svg onload=alert("model2")>',
    "dataset": '<img src=x onerror=alert("dataset")>',
    "error": '<img src=x onerror=alert("error")>',
    "verdict": '<svg onload=alert("verdict")>',
    "metric": '<img src=x onerror=alert("metric")>',
    "filter": '<img src=x onerror=alert("filter")>',
}


def _log(client, eid, models, datasets, seed=7, params=None):
    rng = np.random.default_rng(seed)
    for i, model in enumerate(models):
        for dataset in datasets:
            scores = np.clip(0.75 + 0.01 * i + rng.normal(0, 0.03, 10), 0, 1)
            run_id = log_cv_scores(model, dataset, scores, folds=10, experiment_id=eid, client=client)
            for key, value in (params or {}).items():
                client.log_param(run_id, key, value)


def _job_runs(client, experiment_ids) -> set[str]:
    runs = client.search_runs(list(experiment_ids), f"tags.`{T.KIND}` IS NOT NULL", max_results=1000)
    return {r.info.run_id for r in runs}


# ------------------------------------------------------------------------------------------------ plain server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("security")
    srv = Server(tmp, f"sqlite:///{tmp / 'mlflow.db'}", extra=["--workers", "1"],
                 env={"MLFLOW_SERVER_CORS_ALLOWED_ORIGINS": "https://allowed.example"})
    srv.client = MlflowClient(srv.url)
    srv.experiment_id = srv.client.create_experiment(XSS["experiment"])
    _log(srv.client, srv.experiment_id, ["lda", XSS["model"], XSS["model2"]], [XSS["dataset"], "d1", "d2"])
    failed = srv.client.create_run(srv.experiment_id, tags={
        T.KIND: "comparison", T.MODEL_A: XSS["model"], T.MODEL_B: "lda", T.METRIC: XSS["metric"],
        T.ERROR: XSS["error"], T.VERDICT: XSS["verdict"], T.STAGE: "failed"})
    srv.client.set_terminated(failed.info.run_id, RunStatus.to_string(RunStatus.FAILED))
    srv.failed_run = failed.info.run_id
    yield srv
    srv.stop()


def _post(srv, path="/api/comparisons", session=None, **kwargs):
    return (session or srv.api().session).post(f"{srv.url}/bayescompare{path}", timeout=60, **kwargs)


def _body(srv, **extra):
    return {"experiment_id": [srv.experiment_id], "metric": "accuracy", "model_a": XSS["model"], "model_b": "lda",
            **FAST, **extra}


@pytest.mark.browser
def test_no_script_runs_from_any_user_controlled_field(server):
    """Experiment, model and dataset names, tag values (verdict, metric) and error messages, in the page rendered by
    the server, in the dropdowns, the result, the ranking table, the history and the form's error line."""
    require_chromium()
    api = server.api()
    run_id = api.start("comparison", _body(server))
    assert api.wait(run_id)["status"] == "FINISHED"
    ranking = api.wait(api.start("ranking", {"experiment_id": [server.experiment_id], "metric": "accuracy", **FAST}))
    with chromium_page(bypass_csp=True) as (page, dialogs):
        page.goto(f"{server.url}/bayescompare/")
        assert f"{XSS['experiment']} ({server.experiment_id})" in page.eval_on_selector_all(
            "#experiment option", "os => os.map(o => o.textContent)")
        page.select_option("#experiment", server.experiment_id)
        page.wait_for_selector("#model_a option:nth-child(3)", state="attached")
        assert sorted(page.eval_on_selector_all("#model_a option", "os => os.map(o => o.textContent)")) == \
            sorted(["lda", XSS["model"], XSS["model2"]])
        history = page.text_content("#past")
        assert XSS["verdict"] in history and XSS["metric"] in history and f"{XSS['model']} vs lda" in history
        page.click(f'#past tr[data-run-id="{run_id}"] a.show')
        page.wait_for_selector("#verdict:not(:empty)")
        assert page.text_content("#label-a") == f"P({XSS['model']} better)"
        page.wait_for_selector("#report:not([hidden])")
        show_past_run(page, ranking["run_id"], "#ranking:not([hidden])")
        assert page.eval_on_selector_all("#ranking tbody tr", "rs => rs.map(r => r.cells[1].textContent)") == \
            [r["model"] for r in ranking["ranking"]]
        assert sorted(r["model"] for r in ranking["ranking"]) == sorted(["lda", XSS["model"], XSS["model2"]])
        page.click(f'#past tr[data-run-id="{server.failed_run}"] a.show')
        page.wait_for_selector("#job-error:not([hidden])")
        assert page.text_content("#job-error") == f"Failed: {XSS['error']}"
        page.click("details summary")
        page.fill("#filter", XSS["filter"])
        page.click("#compare-btn")
        page.wait_for_selector("#form-error:not([hidden])")
        assert XSS["filter"] in page.text_content("#form-error")
        page.wait_for_timeout(1000)
        injected = page.eval_on_selector_all("img, svg, script:not([src]), iframe:not(#report)", "es => es.length")
    assert dialogs == [] and injected == 0


def test_pages_carry_their_security_headers(server):
    page = requests.get(f"{server.url}/bayescompare/", timeout=30)
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert "&lt;img src=x onerror=alert(&#34;experiment&#34;)&gt;" in page.text and XSS["experiment"] not in page.text
    css = requests.get(f"{server.url}/bayescompare/static/page.css", timeout=30)
    assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")
    cookie = page.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/bayescompare/" in cookie


# ------------------------------------------------------------------------------------------------ cross-site


@pytest.mark.parametrize("case", ["no token", "header only", "cookie only", "mismatch", "foreign origin",
                                  "null origin", "cross-site", "same-site", "form", "text"])
@pytest.mark.parametrize("path", ["/api/comparisons", "/api/matrix", "/api/rankings"])
def test_cross_site_requests_are_refused_and_create_nothing(server, case, path):
    before = _job_runs(server.client, [server.experiment_id])
    s = server.api().session
    token = s.headers["X-BayesCompare-CSRF"]
    body = _body(server) if path == "/api/comparisons" else {"experiment_id": [server.experiment_id],
                                                              "metric": "accuracy", **FAST}
    kwargs = {"json": body}
    if case == "no token":
        s = requests.Session()
    elif case == "header only":
        s = requests.Session()
        s.headers["X-BayesCompare-CSRF"] = token
    elif case == "cookie only":
        del s.headers["X-BayesCompare-CSRF"]
    elif case == "mismatch":
        s.headers["X-BayesCompare-CSRF"] = "x" * 43
    elif case in ("foreign origin", "null origin"):
        s.headers["Origin"] = "https://evil.example" if case == "foreign origin" else "null"
    elif case in ("cross-site", "same-site"):
        s.headers["Sec-Fetch-Site"] = case
    elif case == "form":  # what a plain HTML form of another site can send
        kwargs = {"data": {"experiment_id": server.experiment_id, "metric": "accuracy"}}
    else:
        kwargs = {"data": '{"metric": "accuracy"}', "headers": {"Content-Type": "text/plain"}}
    resp = _post(server, path, session=s, **kwargs)
    assert resp.status_code in (403, 415), (resp.status_code, resp.text)
    assert _job_runs(server.client, [server.experiment_id]) == before


def test_same_site_requests_pass(server):
    api = server.api()
    for headers in ({"Sec-Fetch-Site": "same-origin", "Origin": server.root}, {"Sec-Fetch-Site": "none"},
                    {"Origin": "https://allowed.example"}):
        resp = _post(server, session=api.session, json=_body(server, model_b=XSS["model2"]), headers=headers)
        assert resp.status_code == 202, (headers, resp.text)
        assert api.wait(resp.json()["run_id"])["status"] == "FINISHED"


# ------------------------------------------------------------------------------------------------ traversal


@pytest.mark.parametrize("path", [
    "/bayescompare/static/%2e%2e/templates/page.html", "/bayescompare/static/..%2ftemplates%2fpage.html",
    "/bayescompare/static/__init__.py", "/bayescompare/static/", "/bayescompare/static/%2e%2e%2f%2e%2e%2fapp.py",
    "/bayescompare/runs/0123456789abcdef0123456789abcdef/report.html",
    "/bayescompare/api/comparisons/0123456789abcdef0123456789abcdef",
])
def test_no_file_outside_the_static_folder_is_served(server, path):
    resp = requests.get(f"{server.url}{path}", timeout=30)
    assert resp.status_code == 404, resp.text[:300]
    assert "{{" not in resp.text and "import" not in resp.text


@pytest.mark.parametrize("run_id", ["../../../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", "0" * 31 + "/",
                                    "0123456789ABCDEF0123456789ABCDEF", ""])
@pytest.mark.parametrize("route", ["/api/comparisons/get", "/report"])
def test_run_ids_are_run_ids(server, route, run_id):
    resp = requests.get(f"{server.url}/bayescompare{route}", params={"run_id": run_id}, timeout=30)
    assert resp.status_code == 404 and resp.json()["error"] == f"no comparison run {run_id!r}"


@pytest.mark.parametrize("extra, words", [
    ({"filter": "tags.model = 'lda' OR tags.model = 'x'"}, "invalid filter string"),
    ({"filter": "1=1"}, "invalid filter string"),
    ({"filter": "params.x = 'a'; DROP TABLE runs"}, "invalid filter string"),
    ({"model_b": "lda' OR tags.model != '"}, "model 'lda' OR tags.model != '' is in no run tagged 'model'"),
    ({"model_b": "x' \" OR 1=1"}, "is in no run tagged 'model'"),
    ({"model_tag": "model` = 'lda' OR tags.`x"}, "Invalid value for 'model_tag'"),
    ({"experiment_id": ["1 OR 1=1"]}, "is not an experiment id"),
])
def test_filter_injection_is_refused_and_creates_nothing(server, extra, words):
    before = _job_runs(server.client, [server.experiment_id])
    resp = _post(server, json=_body(server, **extra))
    assert resp.status_code == 400 and words in resp.json()["error"], resp.text
    assert _job_runs(server.client, [server.experiment_id]) == before


@pytest.mark.parametrize("path", ["/api/comparisons", "/api/matrix", "/api/rankings"])
def test_an_invalid_filter_is_a_bad_request_for_every_kind(server, path):
    """A matrix and a ranking of every model find them by a search under the filter: parsed before (400), not
    failed at the store (502)."""
    before = _job_runs(server.client, [server.experiment_id])
    body = _body(server, filter="1=1")
    if path != "/api/comparisons":
        body = {k: v for k, v in body.items() if not k.startswith("model")}
    resp = _post(server, path, json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"].startswith("invalid filter string '1=1': Invalid comparison clause"), resp.text
    assert _job_runs(server.client, [server.experiment_id]) == before


# ------------------------------------------------------------------------------------------------ basic-auth

ADMIN = ("admin", "bayescompare-Admin-pw-1")
ALICE = ("alice", "alice-Password-1")
ABSENT_RUN = "0123456789abcdef0123456789abcdef"


@contextlib.contextmanager
def _as(user):
    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")}
    os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"] = user
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


BOB = ("bob", "bob-Password-1")
CAROL = ("carol", "pre@TAIL:carol-Pw-1")  # a password holding '@' and then ':'
JOB = ("job", "pre@TAIL-job-Pw-1")  # a user with no permission, in the URI the job processes reach the server by


def _auth_server(tmp, fail_closed: str | None, logged=("e-read", "e-edit", "e-none"), job_uri_credentials=False):
    """``bayescompare-auth`` under ``--static-prefix /mlflow`` with ``MLFLOW_BASIC_AUTH_FAIL_CLOSED`` set to
    ``fail_closed`` (None: unset, MLflow's default), no permission by default.  Alice (not an admin) may read
    ``e-read``, edit ``e-edit`` and nothing of ``e-none``, whose runs hold a model and a param value she must not
    learn; Bob manages ``bob-exp`` and reads ``e-read``; Carol, whose password holds ``@``, may read ``e-read`` and
    edit ``e-edit``.  ``job_uri_credentials``: the job processes reach the server by a URI carrying the password of
    ``job``, a user with no permission: a job that ran with the URI's credentials instead of the requesting user's
    (``requests`` lets a URI's user and password replace the header MLflow sets) would fail."""
    require_module("flask_wtf", "MLflow's basic-auth needs Flask-WTF (pip install 'mlflow[auth]')")
    config = tmp / "auth.ini"
    config.write_text("[mlflow]\ndefault_permission = NO_PERMISSIONS\nauth_cache_ttl_seconds = 600\n"
                      f"database_uri = sqlite:///{tmp / 'auth.db'}\nadmin_username = {ADMIN[0]}\n"
                      f"admin_password = {ADMIN[1]}\n"
                      "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
    port = free_port()
    env = {"MLFLOW_AUTH_CONFIG_PATH": str(config), "MLFLOW_FLASK_SERVER_SECRET_KEY": uuid.uuid4().hex}
    if fail_closed is not None:
        env["MLFLOW_BASIC_AUTH_FAIL_CLOSED"] = fail_closed
    if job_uri_credentials:
        env["MLFLOW_BAYESCOMPARE_TRACKING_URI"] = f"http://{JOB[0]}:{JOB[1]}@127.0.0.1:{port}/mlflow"
    srv = Server(tmp, f"sqlite:///{tmp / 'mlflow.db'}", app="bayescompare-auth", env=env, prefix="/mlflow",
                 extra=["--workers", "1"], port=port, start=False)
    if fail_closed is None:
        srv.env.pop("MLFLOW_BASIC_AUTH_FAIL_CLOSED", None)
    srv.job_uri_credentials = job_uri_credentials
    srv.start()
    with _as(ADMIN):
        from mlflow.server import get_app_client

        srv.admin = MlflowClient(srv.url)
        auth = get_app_client("basic-auth", tracking_uri=srv.url)
        for user in (ALICE, BOB, CAROL) + ((JOB,) if job_uri_credentials else ()):
            auth.create_user(*user)
        srv.ids = {name: srv.admin.create_experiment(name) for name in ("e-read", "e-edit", "e-none", "bob-exp")}
        for name in logged:
            models = ["lda", "cart", "secretmodelX" if name == "e-none" else "svm"]
            _log(srv.admin, srv.ids[name], models, ["d0", "d1", "d2"], params={"owner": "zed"})
        for user, name, permission in (("alice", "e-read", "READ"), ("alice", "e-edit", "EDIT"),
                                       ("bob", "bob-exp", "MANAGE"), ("bob", "e-read", "READ"),
                                       ("carol", "e-read", "READ"), ("carol", "e-edit", "EDIT")):
            auth.grant_user_permission(user, "experiment", srv.ids[name], permission)
    return srv


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    """The basic-auth server under MLflow's defaults (fail-closed unset), with a comparison of the admin's in
    ``e-none``."""
    srv = _auth_server(tmp_path_factory.mktemp("auth"), None)
    admin = srv.api(ADMIN)
    srv.hidden_run = admin.start("comparison", {"experiment_id": [srv.ids["e-none"]], "metric": "accuracy",
                                                "model_a": "lda", "model_b": "secretmodelX", **FAST})
    assert admin.wait(srv.hidden_run)["status"] == "FINISHED"
    yield srv
    srv.stop()


@pytest.fixture(scope="module", params=["unset", "true", "false"])
def fail_closed_server(request, tmp_path_factory, auth_server):
    """A basic-auth server under each ``MLFLOW_BASIC_AUTH_FAIL_CLOSED`` setting, one at a time: unset is
    :func:`auth_server`; under the others the jobs reach the server by a URI carrying a password."""
    if request.param == "unset":
        yield auth_server
        return
    srv = _auth_server(tmp_path_factory.mktemp(f"auth-{request.param}"), request.param, logged=("e-read",),
                       job_uri_credentials=True)
    yield srv
    srv.stop()


def _snapshot(srv) -> tuple:
    """Every experiment and every run of the store, as the admin sees them."""
    with _as(ADMIN):
        experiments = sorted((e.experiment_id, e.name) for e in srv.admin.search_experiments())
        runs = {r.info.run_id for e, _ in experiments for r in srv.admin.search_runs([e], max_results=5000)}
    return experiments, runs


ROUTES = [("GET", "/bayescompare/"), ("GET", "/bayescompare/static/page.js"), ("GET", "/bayescompare/api/csrf"),
          ("GET", "/bayescompare/api/experiments"), ("GET", "/bayescompare/api/choices?experiment_id=1"),
          ("GET", "/bayescompare/api/comparisons"), ("POST", "/bayescompare/api/comparisons"),
          ("GET", f"/bayescompare/api/comparisons/get?run_id={ABSENT_RUN}"), ("POST", "/bayescompare/api/matrix"),
          ("GET", f"/bayescompare/report?run_id={ABSENT_RUN}"), ("GET", "/bayescompare/static/page.css"),
          ("POST", "/bayescompare/api/rankings"), ("GET", "/bayescompare/static/evals.js"),
          ("GET", "/bayescompare/api/evaluation-runs?experiment_id=1"), ("POST", "/bayescompare/api/evals")]


def test_the_auth_matrix_covers_every_route():
    """Every route of the plugin is in :data:`ROUTES`, so each one is checked below."""
    from mlflow_bayescompare.server.routes import route_table

    assert {(method, path.split("?")[0]) for method, path in ROUTES} == \
        {(method, path) for path, method, _ in route_table()}


@pytest.mark.parametrize("method, path", ROUTES)
def test_every_route_needs_a_login(auth_server, method, path):
    for auth in (None, ("alice", "wrong"), ("nobody", "x")):
        resp = requests.request(method, f"{auth_server.url}{path}", auth=auth, json={}, timeout=30)
        assert resp.status_code == 401, (auth, resp.status_code, resp.text[:200])


def test_the_client_refused_for_wrong_credentials_does_not_show_them(auth_server):
    for auth in (None, ("alice", "not-" + ALICE[1])):
        with pytest.raises(RequestRefused) as refused:
            BayesCompareClient(auth_server.url, auth=auth)
        assert refused.value.status == 401 and str(refused.value).startswith("read the CSRF token: HTTP 401: ")
        assert ALICE[1] not in str(refused.value)
    alice = BayesCompareClient(auth_server.url, auth=ALICE)  # signed in: a run she may not read is absent to her
    with pytest.raises(RequestRefused) as hidden:
        alice.status(auth_server.hidden_run)
    assert hidden.value.status == 404 and ALICE[1] not in str(hidden.value)


@pytest.mark.parametrize("method, path", ROUTES)
def test_a_non_admin_reaches_every_route_under_fail_closed(auth_server, method, path):
    """MLflow's default fail-closed net refuses routes it has no validator for: every route is registered."""
    s = auth_server.api(ALICE).session
    resp = s.request(method, f"{auth_server.url}{path}", json={}, timeout=30)
    assert resp.status_code != 403 or resp.headers["Content-Type"].startswith("application/json"), resp.text
    assert "Permission denied" not in resp.text


def test_a_non_admin_sees_only_what_they_may_read(auth_server):
    s, url, ids = auth_server.api(ALICE).session, auth_server.url, auth_server.ids
    page = s.get(f"{url}/bayescompare/", timeout=30)
    assert page.status_code == 200 and "signed in as alice" in page.text
    assert "e-read" in page.text and "e-edit" in page.text and "e-none" not in page.text
    listed = s.get(f"{url}/bayescompare/api/experiments", timeout=30).json()["experiments"]
    assert {e["name"] for e in listed} >= {"e-read", "e-edit"} and "e-none" not in {e["name"] for e in listed}
    choices = s.get(f"{url}/bayescompare/api/choices", params={"experiment_id": ids["e-read"]}, timeout=30).json()
    assert choices["models"] == ["cart", "lda", "svm"]
    runs = s.get(f"{url}/bayescompare/api/comparisons", timeout=30).json()["comparisons"]
    assert auth_server.hidden_run not in {r["run_id"] for r in runs}


def _same(first: requests.Response, second: requests.Response, first_word: str, second_word: str) -> None:
    """The two answers are the same, but for the name or id each request gave."""
    assert first.status_code == second.status_code
    assert first.text.replace(first_word, "?") == second.text.replace(second_word, "?"), (first.text, second.text)


def test_a_non_admin_is_refused_another_users_report(auth_server):
    """The admin's comparison in ``e-none``, which Alice may not read, has a report the admin reads; Alice asking for
    it is refused with the one answer of a run that does not exist: a 404 whose JSON names no such run, not the
    report, not a server error."""
    url, run = auth_server.url, auth_server.hidden_run
    own = auth_server.api(ADMIN).session.get(f"{url}/bayescompare/report", params={"run_id": run}, timeout=30)
    assert own.status_code == 200 and "secretmodelX" in own.text  # the report is there, holding the hidden model
    refused = auth_server.api(ALICE).session.get(f"{url}/bayescompare/report", params={"run_id": run}, timeout=30)
    assert refused.status_code == 404 and refused.headers["Content-Type"].startswith("application/json")
    assert refused.json()["error"] == f"no comparison run {run!r}" and "secretmodelX" not in refused.text


def test_forbidden_and_absent_get_the_same_answer_and_create_nothing(auth_server):
    s, url, ids = auth_server.api(ALICE).session, auth_server.url, auth_server.ids
    absent_id = str(int(max(ids.values())) + 1000)
    before = _snapshot(auth_server)
    for route in ("/api/choices", "/api/comparisons"):
        hidden = s.get(f"{url}/bayescompare{route}", params={"experiment_id": ids["e-none"]}, timeout=30)
        absent = s.get(f"{url}/bayescompare{route}", params={"experiment_id": absent_id}, timeout=30)
        assert hidden.status_code == 404
        _same(hidden, absent, ids["e-none"], absent_id)
    for route in ("/api/comparisons/get", "/report"):
        hidden = s.get(f"{url}/bayescompare{route}", params={"run_id": auth_server.hidden_run}, timeout=30)
        absent = s.get(f"{url}/bayescompare{route}", params={"run_id": ABSENT_RUN}, timeout=30)
        assert hidden.status_code == 404
        _same(hidden, absent, auth_server.hidden_run, ABSENT_RUN)
    base = {"metric": "accuracy", "model_a": "lda", "model_b": "cart", "target_experiment": "e-edit", **FAST}
    probes = [  # the same request about the hidden experiment and about one that does not exist
        ({"experiment_id": [ids["e-none"]]}, {"experiment_id": [absent_id]}, ids["e-none"], absent_id),
        ({"experiment_name": ["e-none"]}, {"experiment_name": ["no-such"]}, "e-none", "no-such"),
        ({"experiment_id": [ids["e-none"]], "model_b": "nosuchmodel"},
         {"experiment_id": [absent_id], "model_b": "nosuchmodel"}, ids["e-none"], absent_id),
        ({"experiment_id": [ids["e-none"]], "filter": "params.owner LIKE 'z%'"},
         {"experiment_id": [ids["e-none"]], "filter": "params.owner LIKE 'q%'"}, "z%", "q%"),
        ({"experiment_id": [ids["e-none"]], "target_experiment": "alice-probe"},
         {"experiment_id": [absent_id], "target_experiment": "alice-probe"}, ids["e-none"], absent_id),
    ]
    for hidden_fields, absent_fields, hidden_word, absent_word in probes:
        for path in ("/api/comparisons", "/api/matrix", "/api/rankings"):
            body = dict(base) if path == "/api/comparisons" else {k: v for k, v in base.items() if "model" not in k}
            hidden = s.post(f"{url}/bayescompare{path}", json={**body, **hidden_fields}, timeout=60)
            absent = s.post(f"{url}/bayescompare{path}", json={**body, **absent_fields}, timeout=60)
            assert hidden.status_code == 400 and "secretmodelX" not in hidden.text, hidden.text
            _same(hidden, absent, hidden_word, absent_word)
    assert _snapshot(auth_server) == before


@pytest.mark.parametrize("fields, status_code, words", [
    ({"experiment_id": "e-read"}, 403, "no permission to log runs into experiment"),  # read-only source as target
    ({"experiment_id": "e-read", "target_experiment": "e-none"}, 403, "no permission to log runs into experiment "
                                                                      "'e-none'"),
    ({"experiment_id": "e-read", "target_experiment": "e-read"}, 403, "no permission to log runs into"),
    ({"experiment_id": "e-none", "target_experiment": "alice-new"}, 400, "no experiment with id"),
    ({"experiment_id": "e-read", "target_experiment": "alice-new", "model_b": "nosuchmodel"}, 400,
     "model 'nosuchmodel' is in no run"),
    ({"experiment_id": "e-read", "target_experiment": "alice-new", "chains": 0}, 400, "'chains'"),
])
def test_refused_requests_create_nothing(auth_server, fields, status_code, words):
    s = auth_server.api(ALICE).session
    fields = {**fields, "experiment_id": [auth_server.ids[fields["experiment_id"]]]}
    before = _snapshot(auth_server)
    resp = s.post(f"{auth_server.url}/bayescompare/api/comparisons",
                  json={"metric": "accuracy", "model_a": "lda", "model_b": "cart", **FAST, **fields}, timeout=60)
    assert resp.status_code == status_code and words in resp.json()["error"], resp.text
    assert _snapshot(auth_server) == before


def test_a_non_admin_compares_with_their_own_permissions(auth_server):
    alice, url, ids = auth_server.api(ALICE), auth_server.url, auth_server.ids
    s = alice.session
    fields = {"experiment_id": [ids["e-read"]], "metric": "accuracy", "model_a": "lda", "model_b": "svm", **FAST}
    run_id = alice.start("comparison", {**fields, "target_experiment": "e-edit"})
    state = alice.wait(run_id)
    assert (state["status"], state["experiment_id"]) == ("FINISHED", ids["e-edit"]), state
    admin = auth_server.api(ADMIN)
    same = admin.wait(admin.start("comparison", fields))
    assert [state[k] for k in ("p_a_better", "p_rope", "p_b_better")] == \
        [same[k] for k in ("p_a_better", "p_rope", "p_b_better")]
    with _as(ADMIN):
        tags = auth_server.admin.get_run(run_id).data.tags
    assert tags[T.USER] == "alice"
    assert {k for k in tags if k.startswith("bayescompare.job")} == {T.JOB_OWNER, T.JOB_REQUEST}  # two, not seven
    assert s.get(f"{url}/bayescompare/report", params={"run_id": run_id}, timeout=30).status_code == 200
    name = f"alice-{uuid.uuid4().hex[:6]}"
    matrix = alice.wait(alice.start("matrix", {"experiment_id": [ids["e-read"]], "metric": "accuracy",
                                               "target_experiment": name, **FAST}))
    assert matrix["status"] == "FINISHED" and len(matrix["pairs"]) == 3, matrix
    listed = s.get(f"{url}/bayescompare/api/experiments", timeout=30).json()["experiments"]
    assert {"experiment_id": matrix["experiment_id"], "name": name} in listed  # its creator may read it (MANAGE)
    assert re.fullmatch(r"/mlflow/#/experiments/\d+/runs/[0-9a-f]{32}\?workflowType=machine_learning",
                        matrix["run_url"])
    assert alice.status(run_id)["report_url"] == f"/mlflow/bayescompare/report?run_id={run_id}"
    assert urllib.parse.urlsplit(url).path == "/mlflow"


@pytest.fixture(scope="module")
def eval_runs(auth_server):
    """Two evaluation runs (a harness's long tables) in ``e-read`` and two in ``e-none``, whose candidate's name
    Alice must not learn, logged by the admin."""
    ids = {}
    with _as(ADMIN):
        for experiment, names in (("e-read", ("base", "cand")), ("e-none", ("base", "secretmodelX"))):
            for k, name in enumerate(names):
                run = auth_server.admin.create_run(auth_server.ids[experiment], run_name=name)
                table = pd.DataFrame({"item": [f"q{i}" for i in range(12)], "scorer": "correct",
                                      "value": [i % (2 + k) == 0 for i in range(12)]})
                auth_server.admin.log_table(run.info.run_id, table, "eval_scores.json")
                auth_server.admin.set_terminated(run.info.run_id)
                ids[experiment, k] = run.info.run_id
    return ids


def test_evaluation_runs_are_read_only_by_who_may_read_them(auth_server, eval_runs):
    """Alice may not read ``e-none``: its evaluation runs are absent to her (the same answer, word for word, as runs
    that do not exist), a comparison into an experiment she may only read is refused with 403, and none of it
    writes anything; into ``e-edit`` it runs with her own permissions."""
    alice, url, ids = auth_server.api(ALICE), auth_server.url, auth_server.ids
    s = alice.session
    absent_id = str(int(max(ids.values())) + 1000)
    before = _snapshot(auth_server)
    hidden = s.get(f"{url}/bayescompare/api/evaluation-runs", params={"experiment_id": ids["e-none"]}, timeout=30)
    absent = s.get(f"{url}/bayescompare/api/evaluation-runs", params={"experiment_id": absent_id}, timeout=30)
    assert hidden.status_code == 404
    _same(hidden, absent, ids["e-none"], absent_id)
    secret = {"run_a": eval_runs["e-none", 0], "run_b": eval_runs["e-none", 1], "target_experiment": "e-edit"}
    made_up = {"run_a": uuid.uuid4().hex, "run_b": uuid.uuid4().hex, "target_experiment": "e-edit"}
    refused = s.post(f"{url}/bayescompare/api/evals", json=secret, timeout=60)
    unknown = s.post(f"{url}/bayescompare/api/evals", json=made_up, timeout=60)
    assert refused.status_code == 400 and "secretmodelX" not in refused.text, refused.text
    assert refused.text.replace(secret["run_a"], "A").replace(secret["run_b"], "B") == \
        unknown.text.replace(made_up["run_a"], "A").replace(made_up["run_b"], "B")
    readable = {"run_a": eval_runs["e-read", 0], "run_b": eval_runs["e-read", 1]}
    read_only = s.post(f"{url}/bayescompare/api/evals", json=readable, timeout=60)  # into e-read, run A's
    assert read_only.status_code == 403 and "no permission to log runs into" in read_only.json()["error"]
    assert _snapshot(auth_server) == before
    listed = s.get(f"{url}/bayescompare/api/evaluation-runs", params={"experiment_id": ids["e-read"]}, timeout=30)
    assert {r["run_id"] for r in listed.json()["runs"]} == set(readable.values())
    state = alice.wait(alice.start("evals", {**readable, "target_experiment": "e-edit", "seed": 1}))
    assert (state["status"], state["experiment_id"], state["source_runs"]) == \
        ("FINISHED", ids["e-edit"], [readable["run_a"], readable["run_b"]]), state
    with _as(ADMIN):
        assert auth_server.admin.get_run(state["run_id"]).data.tags[T.USER] == "alice"


def test_a_numeric_target_is_an_id_and_never_a_new_name(fail_closed_server):
    """Issue 30's case, through the server and through the command line's path (a plain client as each user):
    alice targets the id of bob's experiment, which she may not read; the admin then compares "into" that id."""
    srv, ids = fail_closed_server, fail_closed_server.ids
    bobs, absent = ids["bob-exp"], str(int(max(ids.values())) + 1000)
    url = f"{srv.url}/bayescompare/api/comparisons"
    body = {"experiment_id": [ids["e-read"]], "metric": "accuracy", "model_a": "lda", "model_b": "cart", **FAST}
    alice, bob = srv.api(ALICE).session, srv.api(BOB).session
    before = _snapshot(srv)
    hidden = alice.post(url, json={**body, "target_experiment": bobs}, timeout=60)
    assert hidden.status_code == 400, hidden.text  # not a new experiment of hers named like bob's id
    assert hidden.json()["error"] == f"no experiment with id '{bobs}'; a new target experiment needs a name that " \
                                     "is not a number"
    _same(hidden, alice.post(url, json={**body, "target_experiment": absent}, timeout=60), bobs, absent)
    for kind in ("matrix", "rankings"):  # every kind of job, by the same rule
        fields = {k: v for k, v in body.items() if not k.startswith("model")}
        other = alice.post(url.replace("comparisons", kind), json={**fields, "target_experiment": bobs}, timeout=60)
        assert (other.status_code, other.json()["error"]) == (400, hidden.json()["error"]), other.text
    with _as(ALICE), pytest.raises(InputError) as refused:
        runlog.resolve_target(MlflowClient(srv.url), bobs, [ids["e-read"]])
    assert str(refused.value) == hidden.json()["error"]
    assert _snapshot(srv) == before

    admin = srv.api(ADMIN)
    state = admin.wait(admin.start("comparison", {**body, "target_experiment": bobs}))
    assert (state["status"], state["experiment_id"]) == ("FINISHED", bobs)  # the id, as meant

    with _as(ALICE):  # MLflow itself lets alice name an experiment like bob's id
        squatted = MlflowClient(srv.url).create_experiment(bobs)
        assert runlog.resolve_target(MlflowClient(srv.url), bobs, [ids["e-read"]]) == squatted  # all she can see
    before = _snapshot(srv)
    for user, session in ((ADMIN, admin.session), (BOB, bob)):  # both may read bob's: the number is ambiguous
        resp = session.post(url, json={**body, "target_experiment": bobs}, timeout=60)
        assert resp.status_code == 400 and f"target experiment '{bobs}' is ambiguous" in resp.json()["error"], \
            resp.text
        with _as(user), pytest.raises(InputError, match="is ambiguous"):
            runlog.resolve_target(MlflowClient(srv.url), bobs, [ids["e-read"]])
    assert _snapshot(srv) == before  # nothing landed in alice's experiment
    log = srv.log.read_text(errors="replace")
    assert "View run" not in log and "View experiment" not in log  # MLflow's run links stay out of the server log
    assert "pre@" not in log and "TAIL-job" not in log


@pytest.mark.parametrize("command", [
    ["compare", "--model-a", "lda", "--model-b", "cart"],
    ["rank", "--json"],  # MLflow's run links would go to stderr
])
def test_credentials_in_the_tracking_uri_are_never_printed(auth_server, command):
    """A password holding ``@`` then ``:`` in ``MLFLOW_TRACKING_URI``: neither it nor MLflow's run links reach the
    output."""
    ids, host = auth_server.ids, auth_server.url.split("://", 1)[1]
    result = CliRunner().invoke(main, [
        *command, "--experiment-id", ids["e-read"], "--metric", "accuracy", "--target-experiment", "e-edit",
        "--chains", "2", "--draws", "200", "--seed", "1"],
        env={"MLFLOW_TRACKING_URI": f"http://{CAROL[0]}:{CAROL[1]}@{host}", "MLFLOW_TRACKING_USERNAME": None,
             "MLFLOW_TRACKING_PASSWORD": None})
    printed = result.stdout + result.stderr
    assert result.exit_code == 0, printed
    if "--json" in command:
        assert json.loads(result.stdout)["experiment_id"] == ids["e-edit"]
    else:
        assert f"http://{host}/#/experiments/{ids['e-edit']}/runs/" in result.stdout  # the closing line's link
    assert "View run" not in printed and "View experiment" not in printed
    assert "pre@" not in printed and "TAIL" not in printed


def test_mlflow_errors_naming_the_tracking_uri_print_no_password(monkeypatch):
    """MLflow's own errors name the tracking URI as given (``API request to http://user:PW@host/… failed``): the
    command line's error line names it without the password.  A server whose API answers 500 (its database down)."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with gateway(500) as host:
        result = CliRunner().invoke(main, [
            "compare", "--tracking-uri", f"http://{CAROL[0]}:{CAROL[1]}@{host}", "--experiment-name", "cv",
            "--metric", "accuracy,f1", "--model-a", "a", "--model-b", "b", "--target-experiment", "new-target"])
    printed = result.stdout + result.stderr
    assert result.exit_code == 1 and f"Error: MLflow: API request to http://{host}/api/2.0/" in printed, printed
    assert "pre@" not in printed and "TAIL" not in printed


@pytest.mark.parametrize("given", ["option", "env"])
def test_a_password_on_the_command_line_is_kept_from_a_ray_cluster(given):
    """Ray keeps the driver's command line in the cluster's job table (its entrypoint, readable by every client of
    the cluster): ``matrix --engine ray`` refuses a ``--tracking-uri`` carrying a password, before anything is read,
    and takes the same URI from ``MLFLOW_TRACKING_URI`` (here a closed port: refused as unreachable)."""
    uri = f"http://{CAROL[0]}:{CAROL[1]}@127.0.0.1:{free_port()}"
    result = CliRunner().invoke(main, [
        "matrix", "--engine", "ray", "--experiment-name", "cv", "--metric", "accuracy",
        *(["--tracking-uri", uri] if given == "option" else [])],
        env={"MLFLOW_TRACKING_URI": uri if given == "env" else None})
    printed = result.stdout + result.stderr
    assert result.exit_code == 2 and "pre@" not in printed and "TAIL" not in printed, printed
    assert ("a Ray cluster keeps this command line" if given == "option" else "unreachable: Connection refused") \
        in printed, printed


def test_a_job_writes_only_into_the_servers_artifact_store(auth_server, tmp_path):
    """An experiment's artifact location is chosen by whoever creates it: a job (which writes from the server's
    machine, with the server's access) refuses, as target or as the first source it would log into, an experiment
    alice made with a folder of the server's machine as its artifact location; nothing is written."""
    elsewhere = tmp_path / "elsewhere"
    with _as(ALICE):
        eid = MlflowClient(auth_server.url).create_experiment(f"alice-{uuid.uuid4().hex[:6]}",
                                                              artifact_location=elsewhere.as_uri())
    alice, before = auth_server.api(ALICE).session, _snapshot(auth_server)
    for path, fields in (("comparisons", {"experiment_id": [auth_server.ids["e-read"]], "model_a": "lda",
                                          "model_b": "cart", "target_experiment": eid}),
                         ("rankings", {"experiment_id": [eid]})):
        resp = alice.post(f"{auth_server.url}/bayescompare/api/{path}", json={"metric": "accuracy", **FAST, **fields},
                          timeout=60)
        assert resp.status_code == 403, resp.text
        assert f"keeps its artifacts at {elsewhere.as_uri()}, not in its own folder of this server's artifact store" \
            in resp.text
    assert _snapshot(auth_server) == before and not elsewhere.exists()


def _stored(srv) -> set[str]:
    """Every file of the server's artifact store."""
    return {str(p.relative_to(srv.tmp)) for p in (srv.tmp / "artifacts").rglob("*")}


def test_a_job_writes_only_into_its_experiments_own_artifact_folder(auth_server):
    """Every ``mlflow-artifacts:`` location but the experiment's own folder is refused (403, before any work, nothing
    written): another experiment's folder, the root, and paths leaving the artifact route by ``..``, escaped once or
    twice (a job would upload there with alice's credentials).  Alice's experiment with MLflow's default location
    takes the job, its artifacts in its own folder."""
    alice, ids = auth_server.api(ALICE), auth_server.ids
    body = {"experiment_id": [ids["e-read"]], "metric": "accuracy", "model_a": "lda", "model_b": "cart", **FAST}
    with _as(ALICE):
        made = {location: MlflowClient(auth_server.url).create_experiment(f"alice-{uuid.uuid4().hex[:6]}",
                                                                           artifact_location=location)
                for location in (f"mlflow-artifacts:/{ids['e-edit']}", "mlflow-artifacts:/",
                                 "mlflow-artifacts:/../../../api/2.0/mlflow/x", "mlflow-artifacts:/%2e%2e/x",
                                 "mlflow-artifacts:/%252e%252e/x", f"mlflow-artifacts:/{ids['e-edit']}/../x")}
        own = MlflowClient(auth_server.url).create_experiment(f"alice-{uuid.uuid4().hex[:6]}")
    before, stored = _snapshot(auth_server), _stored(auth_server)
    for location, eid in made.items():
        resp = alice.session.post(f"{auth_server.url}/bayescompare/api/comparisons",
                                  json={**body, "target_experiment": eid}, timeout=60)
        assert resp.status_code == 403, (location, resp.text)
        assert resp.json()["error"] == (
            f"experiment '{eid}' keeps its artifacts at {location}, not in its own folder of this server's artifact "
            f"store (mlflow-artifacts:/{eid}), where the server's jobs write; choose a 'target_experiment' created "
            "with the server's default artifact location"), resp.text
    assert _snapshot(auth_server) == before and _stored(auth_server) == stored
    state = alice.wait(alice.start("comparison", {**body, "target_experiment": own}))
    assert (state["status"], state["experiment_id"]) == ("FINISHED", own), state
    assert f"artifacts/{own}/{state['run_id']}/artifacts/report.html" in _stored(auth_server)


def _forged(srv, run_id: str, folder, *, claimed: bool) -> str:
    """Carol (who may edit ``e-edit``, as alice may) plants there a FINISHED run made to look like alice's matrix
    ``run_id``: its pairs table with every verdict turned round, the rows' signatures kept, or made with a key of
    Carol's own; with the tags of alice's run (``claimed``: the cache's fingerprint among them), or only those
    saying it is a matrix holding a pairs table (the issue's attack)."""
    from mlflow_bayescompare.runs.cachekey import Signer
    from mlflow_bayescompare.runs.matrix import PairRow

    with _as(CAROL):
        carol = MlflowClient(srv.url)
        run = carol.get_run(run_id)
        folder.mkdir()
        table = pd.read_parquet(carol.download_artifacts(run_id, "pairs.parquet", str(folder)))
        for i in table.index:  # A practically better, consistently (by the decision rule)
            table.loc[i, ["p_a_better", "p_rope", "p_b_better"]] = [0.98, 0.01, 0.01]
            table.loc[i, ["decision", "verdict"]] = ["a_better", f"{table.loc[i, 'model_a']} is practically better "
                                                                 "(strong evidence)"]
            if i % 2:
                row = PairRow.from_record(table.loc[i].to_dict())
                table.loc[i, "signature"] = Signer(b"carol's own key", "alice").sign(row)
        table.to_parquet(folder / "pairs.parquet", index=False)
        tags = {k: v for k, v in run.data.tags.items() if k.startswith("bayescompare.")
                and (claimed or k in (T.KIND, T.PAIRS_TABLE))}
        planted = carol.create_run(run.info.experiment_id, tags=tags).info.run_id
        carol.log_artifact(planted, str(folder / "pairs.parquet"))
        carol.set_terminated(planted, RunStatus.to_string(RunStatus.FINISHED))
    return planted


def test_a_forged_matrix_in_a_shared_experiment_is_not_taken_from_the_cache(auth_server, tmp_path):
    """Alice's matrix into ``e-edit``, which carol may edit too.  Carol then plants two runs there made to look like
    newer matrices holding alice's pairs, every verdict turned round: one with only the tags of a matrix, one with
    every tag of alice's run.  Alice's next matrix takes every pair from her own earlier matrix (the same numbers,
    its child runs named), none from carol's; the server's log names the run claiming her cache whose rows are not
    hers.  With ``refresh`` (the JSON API's, as the CLI's ``--refresh``) it reads no cache at all."""
    alice, ids = auth_server.api(ALICE), auth_server.ids
    body = {"experiment_id": [ids["e-read"]], "metric": "accuracy", "target_experiment": "e-edit", "chains": 2,
            "draws": 200, "seed": 41}
    first = alice.wait(alice.start("matrix", body))
    assert first["status"] == "FINISHED" and len(first["pairs"]) == 3, first
    _forged(auth_server, first["run_id"], tmp_path / "plain", claimed=False)
    claiming = _forged(auth_server, first["run_id"], tmp_path / "claiming", claimed=True)

    second = alice.wait(alice.start("matrix", body))
    assert second["status"] == "FINISHED", second

    def numbers(state):
        return {(p["model_a"], p["model_b"]): (p["p_a_better"], p["p_rope"], p["p_b_better"], p["verdict"])
                for p in state["pairs"]}

    assert numbers(second) == numbers(first)
    with _as(ADMIN):
        run = auth_server.admin.get_run(second["run_id"])
        origins = {auth_server.admin.get_run(p["run_id"]).data.tags.get(T.CACHED_FROM) for p in second["pairs"]}
    assert run.data.metrics["n_pairs_cached"] == 3 and origins == {p["run_id"] for p in first["pairs"]}
    assert f"matrix run {claiming} is tagged as holding your pair cache, but 3 of its 3 rows are not taken (3 not " \
           "signed for you: forged, or altered since): not read from it" in auth_server.log.read_text(errors="replace")

    refreshed = alice.wait(alice.start("matrix", {**body, "refresh": True}))
    with _as(ADMIN):
        again = auth_server.admin.get_run(refreshed["run_id"])
    assert again.data.metrics["n_pairs_cached"] == 0 and numbers(refreshed) == numbers(first)
    assert json.loads(again.data.tags[T.JOB_REQUEST])["refresh"] is True


def _autologged_search(srv, experiment: str) -> str:
    """A GridSearchCV on iris autologged by the admin into ``experiment``: the search run's id."""
    import warnings

    import mlflow
    import mlflow.sklearn
    from sklearn.datasets import load_iris
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    X, y = load_iris(return_X_y=True)
    previous = mlflow.get_tracking_uri()
    with _as(ADMIN), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlflow.set_tracking_uri(srv.url)
        try:
            mlflow.sklearn.autolog(log_models=False, log_datasets=False, max_tuning_runs=0,
                                   log_post_training_metrics=False, silent=True)
            with mlflow.start_run(experiment_id=srv.ids[experiment]) as run:
                GridSearchCV(SVC(), {"C": [0.1, 1], "kernel": ["linear", "rbf"]}, cv=5).fit(X, y)
        finally:
            mlflow.sklearn.autolog(disable=True)
            mlflow.set_tracking_uri(previous)
    return run.info.run_id


def test_a_search_run_is_read_only_by_who_may_read_its_experiment(auth_server):
    """The JSON API's ``search_run``: read on the run's experiment is checked first, a run in an experiment the
    user may not read is refused exactly as an absent one, and a permitted one runs into the target."""
    alice = auth_server.api(ALICE)
    hidden, readable = _autologged_search(auth_server, "e-none"), _autologged_search(auth_server, "e-read")
    before = _snapshot(auth_server)
    body = {"metric": "score", "model_a": "C=1, kernel=rbf", "model_b": "C=0.1, kernel=linear",
            "target_experiment": "e-edit"}
    refused = alice.session.post(f"{auth_server.url}/bayescompare/api/comparisons",
                                 json={**body, "search_run": hidden}, timeout=60)
    absent = alice.session.post(f"{auth_server.url}/bayescompare/api/comparisons",
                                json={**body, "search_run": ABSENT_RUN}, timeout=60)
    assert refused.status_code == 400 and "no run" in refused.json()["error"], refused.text
    _same(refused, absent, hidden, ABSENT_RUN)
    assert _snapshot(auth_server) == before
    state = alice.wait(alice.start("comparison", {**body, "search_run": readable}))
    assert (state["status"], state["experiment_id"]) == ("FINISHED", auth_server.ids["e-edit"]), state
    with _as(ADMIN):
        tags = auth_server.admin.get_run(state["run_id"]).data.tags
    assert tags[T.TEST] == "correlated-t" and tags[T.SOURCE_EXPERIMENTS] == auth_server.ids["e-read"], tags
