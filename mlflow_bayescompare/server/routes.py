"""The ``/bayescompare/`` blueprint: the route table (:data:`ROUTES`) and its thin handlers.

Every route has an exact path (run ids go in the query string), so MLflow's basic-auth can list each one; all sit
under ``--static-prefix`` when one is set.  The permission each route needs is in :data:`.permissions.RULES`,
checked by one ``before_request`` hook before the handler runs; the handlers then read what the hook resolved.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from flask import Blueprint, Response, request, send_from_directory
from jinja2 import Environment, FileSystemLoader, select_autoescape
from mlflow.exceptions import MlflowException

from ..families import page_words
from ..families.hierarchical.report import NEXT_DATASET, NEXT_DATASET_TITLE
from ..reads.collect import discover
from ..runs.runlog import fail_if_running
from ..shared.report_html import embedded
from ..vocabulary import tags as T
from ..vocabulary.errors import BayesCompareError, InputError
from ..vocabulary.outcomes import COLORS
from ..vocabulary.progress import STAGES
from ..vocabulary.runkey import DEFAULT_KEYS, parse_key
from . import context, lifecycle, permissions, security
from .accept import accept
from .artifacts import read_ranking, read_report, read_versus, read_watch
from .evals import accept_evals, list_evaluation_runs
from .jobs import QueueFull
from .owners import stale_reason
from .requests import ApiError, key_arg, max_results_arg, wait_arg
from .serialize import child_runs, colors_css, form_fields, json_response, list_comparisons, summarise_run

__all__ = ["Route", "ROUTES", "WAIT_STEP", "create_blueprint", "route_table", "mlflow_auth_routes"]

_logger = logging.getLogger(__name__)
WAIT_STEP = 0.2  # seconds between two reads of a job's run while a status request waits for it (?wait=)
_HERE = Path(__file__).parent
_STATIC = _HERE / "static"
_TEMPLATES = Environment(loader=FileSystemLoader(str(_HERE / "templates")),
                         autoescape=select_autoescape(["html"], default=True))
_STAGE_LABELS = {"fetching": "fetching scores", "compiling": "compiling the model"}
#: what a stage's pill says when the job went past it without doing it
_SKIPPED_LABELS = {"compiling": "model cached (not compiled)"}
#: the page's icon, inline (no request, so no /favicon.ico either): the outcome bar in the outcome colours
_FAVICON = "data:image/svg+xml," + urllib.parse.quote(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0e1e2b"/>'
    f'<rect x="2" y="5" width="6" height="6" fill="{COLORS["a_better"]}"/>'
    f'<rect x="8" y="5" width="3" height="6" fill="{COLORS["rope"]}"/>'
    f'<rect x="11" y="5" width="3" height="6" fill="{COLORS["b_better"]}"/></svg>')


@dataclass(frozen=True)
class Route:
    path: str  # under <static prefix>/bayescompare
    method: str
    endpoint: str  # the key of its rule in permissions.RULES
    view: Callable[[], Response]


# --------------------------------------------------------------------------------------------------- page


def _page() -> Response:
    token, new = security.token_for(request)
    experiments, form = permissions.readable_experiments(), form_fields(context.settings())
    run_id = request.args.get("run_id", "")
    html = _TEMPLATES.get_template("page.html").render(
        base=context.base_path(), mlflow_ui=context.prefix() + "/", csrf_token=token, experiments=experiments,
        selected=_latest_scored(experiments), form=form,
        stages=[(s, _STAGE_LABELS.get(s, s), _SKIPPED_LABELS.get(s, f"{s} (skipped)"))
                for s in STAGES if s != "failed"],
        run_id=run_id if len(run_id) == 32 and all(c in "0123456789abcdef" for c in run_id) else "",
        next_dataset={"title": NEXT_DATASET_TITLE, "sentence": NEXT_DATASET}, favicon=_FAVICON,
        families=json.dumps(page_words()),
        user=permissions.current_user())
    resp = Response(html, mimetype="text/html")
    resp.headers["Content-Security-Policy"] = security.PAGE_CSP
    resp.headers["Referrer-Policy"] = "same-origin"
    resp.headers["Cache-Control"] = "no-store"
    if new:
        security.set_cookie(resp, token, context.base_path() + "/", request.is_secure)
    return resp


def _latest_scored(experiments: list[dict[str, str]]) -> str | None:
    """The experiment of the newest run that carries the default model and dataset tags: the page opens on it."""
    newest = None
    query = " AND ".join([*(parse_key(key, role).present_clause() for role, key in DEFAULT_KEYS.items()),
                          f"tags.`{T.KIND}` IS NULL"])
    ids = [e["experiment_id"] for e in experiments]
    try:
        for start in range(0, len(ids), 100):
            for run in context.store_client().search_runs(ids[start:start + 100], query, max_results=1,
                                                          order_by=["attributes.start_time DESC"]):
                if newest is None or run.info.start_time > newest.info.start_time:
                    newest = run
    except Exception:  # the page must render even when the store is slow or odd
        _logger.exception("bayescompare: finding the latest experiment with scores failed")
    return newest.info.experiment_id if newest is not None else None


def _static(name: str) -> Response:
    return send_from_directory(_STATIC, name, max_age=300)


def _css() -> Response:
    """``page.css`` after the outcome colours of the reports (:func:`.serialize.colors_css`)."""
    resp = Response(colors_css() + (_STATIC / "page.css").read_text(encoding="utf-8"), mimetype="text/css")
    resp.headers["Cache-Control"] = "public, max-age=300"
    return resp


def _csrf() -> Response:
    token, new = security.token_for(request)
    resp = json_response({"csrf_token": token, "header": security.HEADER, "cookie": security.COOKIE})
    if new:
        security.set_cookie(resp, token, context.base_path() + "/", request.is_secure)
    return resp


# --------------------------------------------------------------------------------------------------- reads


def _experiments() -> Response:
    return json_response({"experiments": permissions.readable_experiments()})


def _choices() -> Response:
    [experiment_id] = permissions.granted().experiment_ids
    found = discover(context.store_client(), [experiment_id], model_key=key_arg("model"),
                     dataset_key=key_arg("dataset"), strict=False)
    return json_response({"experiment_id": experiment_id, **found})


def _list() -> Response:
    limit = max_results_arg()
    return json_response({"comparisons": list_comparisons(context.store_client(),
                                                          permissions.granted().experiment_ids, limit)})


def _job_run(run=None):
    """The run the hook granted (or ``run``, read again), ended FAILED first when its owner is gone (the status is
    read from the run), unless it is a job of this worker, whose runner records how it ended."""
    run, client = run or permissions.granted().run, context.store_client()
    runner = context.started_runner()
    if runner is not None and run.info.run_id in runner.pending():
        return run
    reason = stale_reason(run, context.settings().stale_after)
    if reason and fail_if_running(client, run.info.run_id, reason):
        run = client.get_run(run.info.run_id)
    return run


def _status() -> Response:
    run = _when_changed(_job_run(), wait_arg())
    out = summarise_run(run)
    if out["kind"] == T.WATCH:
        out["watch"] = read_watch(run)
    if out["kind"] in ("matrix", "ranking") and out["status"] == "FINISHED":
        if "metrics" in out:  # a ranking on several metrics: each metric's tables, by metric
            metrics = [m["metric"] for m in out["metrics"]]
            out["rankings"] = {m: read_ranking(run, m) for m in metrics}
            if out["settings"].get("vs"):
                out["versus"] = {m: read_versus(run, m) for m in metrics}
        else:
            out["ranking"] = read_ranking(run)
            if out["settings"].get("vs"):
                out["versus"] = read_versus(run)
        if out["kind"] == "matrix":
            out["pairs"] = child_runs(context.store_client(), run.info.experiment_id, run.info.run_id)
    return json_response(out)


def _when_changed(run, seconds: float):
    """The run once its status or stage differs from ``run``'s, or after ``seconds`` (the long poll of
    ``?wait=``): the store is read every :data:`WAIT_STEP` seconds, so a job's step is answered within that of
    being written, whichever worker or server wrote it.  At once when the run is not RUNNING, when this worker is
    stopping, and under a WSGI server that serves one request at a time per process (gunicorn's sync workers: a
    held request would hold the worker that the job itself calls)."""
    if not seconds or run.info.status != "RUNNING" or not request.environ.get("wsgi.multithread"):
        return run
    state, deadline, now = _job_state(run), time.monotonic() + seconds, run
    while (left := deadline - time.monotonic()) > 0 and not lifecycle.stopping.wait(min(WAIT_STEP, left)):
        now = _job_run(context.store_client().get_run(run.info.run_id))
        if _job_state(now) != state:
            break
    return now


def _job_state(run) -> tuple[str, str | None]:
    return run.info.status, run.data.tags.get(T.STAGE)


def _report() -> Response:
    """The run's ``report.html``; with ``embed=1``, as the page shows it under its own summary."""
    report = read_report(_job_run())
    resp = Response(embedded(report) if request.args.get("embed") == "1" else report, mimetype="text/html")
    resp.headers["Content-Security-Policy"] = security.REPORT_CSP
    resp.headers["Content-Disposition"] = "inline; filename=report.html"
    resp.headers["X-Frame-Options"] = "SAMEORIGIN"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["Cache-Control"] = "private, max-age=300"
    return resp


def _start() -> Response:
    return accept(permissions.granted())


def _start_evals() -> Response:
    return accept_evals(permissions.granted())


#: every route of the plugin: exact paths, one method each
ROUTES = (
    Route("/", "GET", "page", _page),
    Route("/static/page.css", "GET", "page_css", _css),
    Route("/static/page.js", "GET", "page_js", partial(_static, "page.js")),
    Route("/static/evals.js", "GET", "evals_js", partial(_static, "evals.js")),
    Route("/api/csrf", "GET", "csrf", _csrf),
    Route("/api/experiments", "GET", "experiments", _experiments),
    Route("/api/choices", "GET", "choices", _choices),
    Route("/api/comparisons", "GET", "list_comparisons", _list),
    Route("/api/comparisons", "POST", "create_comparison", _start),
    Route("/api/comparisons/get", "GET", "comparison", _status),
    Route("/api/matrix", "POST", "create_matrix", _start),
    Route("/api/rankings", "POST", "create_ranking", _start),
    Route("/api/evaluation-runs", "GET", "evaluation_runs", list_evaluation_runs),
    Route("/api/evals", "POST", "create_evals", _start_evals),
    Route("/report", "GET", "report", _report),
)


# --------------------------------------------------------------------------------------------------- blueprint


def create_blueprint() -> Blueprint:
    """The blueprint of :data:`ROUTES`, with the permission hook and the error answers."""
    unruled = {r.endpoint for r in ROUTES} - set(permissions.RULES)
    if unruled:
        raise RuntimeError(f"routes without a permission rule: {', '.join(sorted(unruled))}")
    bp = Blueprint("bayescompare", __name__, url_prefix=context.base_path())
    for route in ROUTES:
        bp.add_url_rule(route.path, route.endpoint, route.view, methods=[route.method])
    bp.before_request(permissions.authorize)
    bp.register_error_handler(ApiError, _api_error)
    bp.register_error_handler(InputError, lambda exc: _error(400, str(exc), exc.problems))
    bp.register_error_handler(QueueFull, lambda exc: _error(503, str(exc)))
    bp.register_error_handler(BayesCompareError, lambda exc: _error(502, str(exc)))
    bp.register_error_handler(MlflowException, _mlflow_error)
    return bp


def route_table() -> list[tuple[str, str, str]]:
    """``(path, method, permission)`` of every route, as served (static prefix included)."""
    return [(context.base_path() + r.path, r.method, permissions.RULES[r.endpoint].value) for r in ROUTES]


def mlflow_auth_routes() -> list[tuple[str, str]]:
    """The exact ``(path, method)`` pairs MLflow's basic-auth must know (with the page's address without its
    trailing slash, which Flask redirects)."""
    return [(path, method) for path, method, _ in route_table()] + [(context.base_path(), "GET")]


def _error(status: int, message: str, errors: list[str] | None = None) -> Response:
    message = context.public_message(message)
    errors = [context.public_message(e) for e in errors] if errors else [message]
    return json_response({"error": message, "errors": errors}, status)


def _api_error(exc: ApiError) -> Response:
    return _error(exc.status, exc.message, exc.errors)


def _mlflow_error(exc: MlflowException) -> Response:
    status = {"RESOURCE_DOES_NOT_EXIST": 404, "INVALID_PARAMETER_VALUE": 400, "BAD_REQUEST": 400,
              "RESOURCE_ALREADY_EXISTS": 409}.get(exc.error_code, 500)
    if status == 500:
        _logger.error("bayescompare: MLflow failed: %s", exc.message)
    return _error(status, f"MLflow: {exc.message}")
