"""The ``/bayescompare/`` page and its JSON API, as a Flask blueprint added to MLflow's own Flask app.

Routes (all under ``--static-prefix`` when one is set):

* ``GET  /bayescompare/``                                 the page
* ``GET  /bayescompare/static/<file>``                    its CSS and JavaScript
* ``GET  /bayescompare/api/csrf``                         ``{"csrf_token"}`` + the CSRF cookie (for scripts)
* ``GET  /bayescompare/api/experiments``                  experiments the user may read
* ``GET  /bayescompare/api/choices?experiment_id=…``      models, datasets and metrics found in an experiment
* ``POST /bayescompare/api/comparisons``                  start a comparison (the CLI's ``compare`` fields) → 202
* ``GET  /bayescompare/api/comparisons``                  past comparisons (``?experiment_id=…&max_results=…``)
* ``GET  /bayescompare/api/comparisons/<run_id>``         a comparison's state and result
* ``POST /bayescompare/api/matrix``                       compare all (or the listed) models pairwise → 202
* ``GET  /bayescompare/runs/<run_id>/report.html``        the comparison's report, inline, sandboxed
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path
from typing import Any

import click
from flask import Blueprint, Response, request, send_from_directory
from jinja2 import Environment, FileSystemLoader, select_autoescape
from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException

from .. import cli as cli_module
from .. import runlog
from ..errors import BayesCompareError, InputError
from ..result import json_safe
from . import jobs, security

_logger = logging.getLogger(__name__)

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
TEMPLATES = Environment(loader=FileSystemLoader(str(HERE / "templates")),
                        autoescape=select_autoescape(["html"], default=True))

RUN_ID_RE = re.compile(r"^[0-9a-f]{32}$")
EXPERIMENT_ID_RE = re.compile(r"^[0-9]{1,19}$")
MAX_STRING = 500
MAX_FILTER = 2000
MAX_EXPERIMENTS = 20
MAX_BODY = 64 * 1024
MAX_REPORT_BYTES = 50 * 1024 * 1024
RUNNING = ("RUNNING", "SCHEDULED")

#: CLI options the API does not take: the server decides where to read and always logs.
EXCLUDED = {"tracking_uri", "no_log", "as_json", "strict", "jobs"}
ALIASES = {"experiment_names": "experiment_name", "experiment_ids": "experiment_id", "filter_string": "filter"}

PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")
REPORT_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
              "frame-ancestors 'self'; sandbox allow-popups allow-popups-to-escape-sandbox")


class ApiError(Exception):
    def __init__(self, status: int, message: str, errors: list[str] | None = None):
        super().__init__(message)
        self.status, self.message, self.errors = status, message, errors or [message]


# ------------------------------------------------------------------------------------------------------ state

_state: dict[str, Any] = {}


def settings() -> jobs.Settings:
    if "settings" not in _state:
        _state["settings"] = jobs.Settings.from_env()
    return _state["settings"]


def store_client():
    """An in-process client on the server's own backend store (reads, job records; no artifacts)."""
    from mlflow import MlflowClient

    if "client" not in _state:
        _state["client"] = MlflowClient(settings().backend_store_uri or None)
    return _state["client"]


def runner() -> jobs.JobRunner:
    if "runner" not in _state:
        _state["runner"] = jobs.JobRunner(settings(), on_lost=_mark_lost)
    return _state["runner"]


def _mark_lost(run_id: str, reason: str) -> None:
    jobs.fail_if_running(store_client(), run_id, reason)


def prefix() -> str:
    from mlflow.server.handlers import _add_static_prefix

    return _add_static_prefix("")


def base_path() -> str:
    return prefix() + "/bayescompare"


def loopback_uri() -> str:
    """How the job processes reach this server: ``MLFLOW_BAYESCOMPARE_TRACKING_URI``, else the local address the
    request arrived on (the listening socket), plus the static prefix."""
    if settings().tracking_uri:
        return settings().tracking_uri.rstrip("/")
    env = request.environ
    host = env.get("SERVER_NAME") or "127.0.0.1"
    if host in ("0.0.0.0", "", "::", "[::]"):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    scheme = env.get("wsgi.url_scheme", "http")
    return f"{scheme}://{host}:{env.get('SERVER_PORT', '5000')}{prefix()}"


# ------------------------------------------------------------------------------------------------------ blueprint


def create_blueprint() -> Blueprint:
    bp = Blueprint("bayescompare", __name__, url_prefix=base_path())
    bp.add_url_rule("/", "page", page, methods=["GET"])
    bp.add_url_rule("/static/<path:filename>", "static", static_file, methods=["GET"])
    bp.add_url_rule("/api/csrf", "csrf", csrf_token, methods=["GET"])
    bp.add_url_rule("/api/experiments", "experiments", api_experiments, methods=["GET"])
    bp.add_url_rule("/api/choices", "choices", api_choices, methods=["GET"])
    bp.add_url_rule("/api/comparisons", "list_comparisons", api_list, methods=["GET"])
    bp.add_url_rule("/api/comparisons", "create_comparison", api_create_comparison, methods=["POST"])
    bp.add_url_rule("/api/comparisons/<run_id>", "comparison", api_status, methods=["GET"])
    bp.add_url_rule("/api/matrix", "create_matrix", api_create_matrix, methods=["POST"])
    bp.add_url_rule("/runs/<run_id>/report.html", "report", report, methods=["GET"])
    bp.register_error_handler(ApiError, _api_error)
    return bp


def _json(obj: Any, status: int = 200) -> Response:
    resp = Response(json.dumps(json_safe(obj)), status=status, mimetype="application/json")
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _api_error(exc: ApiError) -> Response:
    return _json({"error": exc.message, "errors": exc.errors}, exc.status)


def _public(message: str) -> str:
    """Messages name the server's public URL, never the backend store URI (which may hold a password)."""
    uri = settings().backend_store_uri
    if uri and uri in message:
        message = message.replace(uri, request.host_url.rstrip("/") + prefix())
    return message


def _guarded(fn):
    """Map this package's and MLflow's errors to JSON answers (as the CLI maps them to exit codes)."""
    try:
        return fn()
    except ApiError:
        raise
    except InputError as exc:
        raise ApiError(400, _public(str(exc))) from exc
    except BayesCompareError as exc:
        raise ApiError(502, _public(str(exc))) from exc
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            raise ApiError(404, f"MLflow: {exc.message}") from exc
        if exc.error_code in ("INVALID_PARAMETER_VALUE", "BAD_REQUEST"):
            raise ApiError(400, f"MLflow: {exc.message}") from exc
        raise ApiError(500, f"MLflow: {exc.message}") from exc


# ------------------------------------------------------------------------------------------------------ page


def page():
    token, new = security.token_for(request)
    client = store_client()
    experiments = _readable_experiments(client)
    run_id = request.args.get("run_id", "")
    context = {
        "base": base_path(),
        "mlflow_ui": prefix() + "/",
        "csrf_token": token,
        "experiments": experiments,
        "comparisons": _safe_list(client, [e["experiment_id"] for e in experiments], 20),
        "settings": settings(),
        "priors": cli_module.PRIORS,
        "layouts": cli_module.LAYOUTS,
        "run_id": run_id if RUN_ID_RE.match(run_id) else "",
        "user": security.current_user(request),
    }
    html = TEMPLATES.get_template("page.html").render(**context)
    resp = Response(html, mimetype="text/html")
    resp.headers["Content-Security-Policy"] = PAGE_CSP
    resp.headers["Referrer-Policy"] = "same-origin"
    resp.headers["Cache-Control"] = "no-store"
    if new:
        security.set_cookie(resp, token, base_path() + "/", request.is_secure)
    return resp


def static_file(filename: str):
    if filename not in {p.name for p in STATIC_DIR.iterdir()}:
        return Response("not found", status=404, mimetype="text/plain")
    resp = send_from_directory(STATIC_DIR, filename, max_age=300)
    return resp


def csrf_token():
    token, new = security.token_for(request)
    resp = _json({"csrf_token": token, "header": security.HEADER, "cookie": security.COOKIE})
    if new:
        security.set_cookie(resp, token, base_path() + "/", request.is_secure)
    return resp


def _safe_list(client, experiment_ids, limit):
    try:
        return list_comparisons(client, experiment_ids, limit)
    except Exception:  # the page must render even when the store is slow or odd
        _logger.exception("bayescompare: listing past comparisons failed")
        return []


# ------------------------------------------------------------------------------------------------------ reads


def _readable_experiments(client) -> list[dict[str, str]]:
    out, token = [], None
    while True:
        page_ = client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=1000, page_token=token,
                                          order_by=["name ASC"])
        out += [{"experiment_id": e.experiment_id, "name": e.name} for e in page_
                if security.can(request, e.experiment_id)]
        token = page_.token
        if not token or len(out) >= 5000:
            return out


def api_experiments():
    return _guarded(lambda: _json({"experiments": _readable_experiments(store_client())}))


def _experiment_arg(name: str = "experiment_id") -> str:
    value = request.args.get(name, "")
    if not EXPERIMENT_ID_RE.match(value):
        raise ApiError(400, f"query parameter '{name}' must be an experiment id (digits)")
    if not security.can(request, value):
        raise ApiError(403, f"no permission to read experiment {value}")
    return value


def _tag_arg(name: str, default: str) -> str:
    value = request.args.get(name, default) or default
    if len(value) > MAX_STRING or "`" in value:
        raise ApiError(400, f"query parameter '{name}' must be a tag key (at most {MAX_STRING} characters, "
                            "no backticks)")
    return value


def api_choices():
    from ..collect import discover

    def go():
        eid = _experiment_arg()
        found = discover(store_client(), [eid], model_tag=_tag_arg("model_tag", "model"),
                         dataset_tag=_tag_arg("dataset_tag", "dataset"))
        return _json({"experiment_id": eid, **found})

    return _guarded(go)


def api_list():
    def go():
        client = store_client()
        try:
            limit = min(200, max(1, int(request.args.get("max_results", "50"))))
        except ValueError:
            raise ApiError(400, "query parameter 'max_results' must be an integer") from None
        if request.args.get("experiment_id"):
            ids = [_experiment_arg()]
        else:
            ids = [e["experiment_id"] for e in _readable_experiments(client)]
        return _json({"comparisons": list_comparisons(client, ids, limit)})

    return _guarded(go)


def list_comparisons(client, experiment_ids: list[str], limit: int) -> list[dict[str, Any]]:
    """The latest ``limit`` comparison and matrix runs of the experiments, newest first."""
    rows = []
    for start in range(0, len(experiment_ids), 100):
        chunk = experiment_ids[start:start + 100]
        for kind in jobs.KINDS:
            runs = client.search_runs(chunk, f"tags.`{jobs.TAG_KIND}` = '{kind}'", max_results=limit,
                                      order_by=["attributes.start_time DESC"])
            rows += [summarise_run(r) for r in runs]
    rows.sort(key=lambda r: r["start_time"] or 0, reverse=True)
    return rows[:limit]


def summarise_run(run) -> dict[str, Any]:
    """The JSON view of a comparison (or matrix) run: status, stage, probabilities, verdict, error, links."""
    from ..compare import run_url_path

    tags, metrics, info = run.data.tags, run.data.metrics, run.info
    status = info.status
    out: dict[str, Any] = {
        "run_id": info.run_id,
        "experiment_id": info.experiment_id,
        "kind": tags.get(jobs.TAG_KIND),
        "name": info.run_name,
        "status": "RUNNING" if status in RUNNING else "FINISHED" if status == "FINISHED" else "FAILED",
        "stage": tags.get(jobs.TAG_STAGE) or ("done" if status == "FINISHED" else None),
        "metric": tags.get("bayescompare.metric"),
        "model_a": tags.get("bayescompare.model_a"),
        "model_b": tags.get("bayescompare.model_b"),
        "p_a_better": metrics.get("p_a_better"),
        "p_rope": metrics.get("p_rope"),
        "p_b_better": metrics.get("p_b_better"),
        "verdict": tags.get("bayescompare.verdict"),
        "decision": tags.get("bayescompare.decision"),
        "diagnostics": tags.get("bayescompare.diagnostics"),
        "error": tags.get(jobs.TAG_ERROR) or ("the run was killed" if status == "KILLED" else None),
        "start_time": info.start_time,
        "end_time": info.end_time,
        "parent_run_id": tags.get(runlog.TAG_PARENT),
        "run_url": prefix() + "/" + run_url_path(info.experiment_id, info.run_id),
        "report_url": f"{base_path()}/runs/{info.run_id}/report.html"
        if status == "FINISHED" and tags.get(jobs.TAG_KIND) == "comparison" else None,
    }
    if out["kind"] == "matrix":
        out["models"] = [m for m in (tags.get("bayescompare.models") or "").split(",") if m]
        best = tags.get("bayescompare.best")
        out["best"] = best
        if best and status == "FINISHED":
            out["verdict"] = f"best: {best}"
    claim = tags.get(jobs.TAG_REQUIRE)
    if claim and out["p_a_better"] is not None:
        name, _, threshold = claim.partition("@")
        probability = {"a-better": out["p_a_better"], "not-worse": out["p_a_better"] + (out["p_rope"] or 0),
                       "equivalent": out["p_rope"]}.get(name)
        if probability is not None:
            out["require"] = {"claim": name, "threshold": float(threshold), "probability": probability,
                              "supported": probability >= float(threshold)}
    return out


def _get_job_run(run_id: str):
    if not RUN_ID_RE.match(run_id):
        raise ApiError(404, f"no comparison run {run_id[:64]!r}")
    client = store_client()
    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            raise ApiError(404, f"no comparison run {run_id!r}") from exc
        raise
    if run.data.tags.get(jobs.TAG_KIND) not in jobs.KINDS:
        raise ApiError(404, f"run {run_id} is not a comparison run")
    if not security.can(request, run.info.experiment_id):
        raise ApiError(403, f"no permission to read experiment {run.info.experiment_id}")
    reason = jobs.stale_reason(run, settings())
    if reason and jobs.fail_if_running(client, run_id, reason):
        run = client.get_run(run_id)
    return run


def api_status(run_id: str):
    def go():
        run = _get_job_run(run_id)
        out = summarise_run(run)
        if out["kind"] == "matrix" and out["status"] == "FINISHED":
            children = store_client().search_runs(
                [run.info.experiment_id], f"tags.`{runlog.TAG_PARENT}` = '{run.info.run_id}'", max_results=1000)
            out["pairs"] = [summarise_run(c) for c in children]
        return _json(out)

    return _guarded(go)


def report(run_id: str):
    def go():
        run = _get_job_run(run_id)
        if run.info.status != "FINISHED":
            raise ApiError(404, "the comparison has not finished")
        with tempfile.TemporaryDirectory(prefix="bayescompare-report-") as tmp:
            path = Path(_download_artifact(run, "report.html", tmp))
            if path.stat().st_size > MAX_REPORT_BYTES:
                raise ApiError(413, "report.html is too large to show inline")
            body = path.read_bytes()
        resp = Response(body, mimetype="text/html")
        resp.headers["Content-Security-Policy"] = REPORT_CSP
        resp.headers["Content-Disposition"] = "inline; filename=report.html"
        resp.headers["X-Frame-Options"] = "SAMEORIGIN"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["Cache-Control"] = "private, max-age=300"
        return resp

    return _guarded(go)


def _download_artifact(run, path: str, dst: str) -> str:
    """Fetch one artifact of ``run`` the way MLflow's ``/get-artifact`` does (proxied root or direct repository)."""
    from mlflow.server import handlers

    uri = run.info.artifact_uri
    if handlers._is_servable_proxied_run_artifact_root(uri):
        repo = handlers._get_artifact_repo_mlflow_artifacts()
        path = handlers._get_proxied_run_artifact_destination_path(proxied_artifact_root=uri, relative_path=path)
    else:
        repo = handlers._get_artifact_repo(run)
    try:
        return repo.download_artifacts(path, dst_path=dst)
    except (OSError, MlflowException) as exc:
        raise ApiError(404, f"the run has no {Path(path).name} artifact") from exc


# ------------------------------------------------------------------------------------------------------ writes


def _body() -> dict[str, Any]:
    problem = security.csrf_problem(request)
    if problem:
        raise ApiError(403, problem)
    if request.mimetype != "application/json":
        raise ApiError(415, "send the fields as JSON (Content-Type: application/json)")
    if (request.content_length or 0) > MAX_BODY:
        raise ApiError(413, f"request body larger than {MAX_BODY} bytes")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _option_name(param: click.Option) -> str:
    return max((o for o in param.opts if o.startswith("--")), key=len)


def _fields(command: click.Command) -> dict[str, click.Option]:
    return {_option_name(p)[2:].replace("-", "_"): p for p in command.params
            if isinstance(p, click.Option) and p.name not in EXCLUDED}


def parse_fields(body: dict[str, Any], command: click.Command) -> dict[str, Any]:
    """Validate the JSON fields with the CLI's own option definitions, so errors read exactly as the CLI's.

    Returns the options by their Python names (as the CLI's command function receives them).
    """
    fields = _fields(command)
    body = {ALIASES.get(k, k): v for k, v in body.items()}
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise ApiError(400, f"unknown field(s): {', '.join(u[:60] for u in unknown[:20])}; accepted: "
                            f"{', '.join(sorted(fields))}")
    ctx = click.Context(command, info_name=command.name)
    opts, errors = {}, []
    for key, param in fields.items():
        opt = _option_name(param)
        raw = body.get(key)
        try:
            raw = _json_shape(raw, param, opt)
            if raw is None:
                raw = param.get_default(ctx)
            value = param.process_value(ctx, raw)
            opts[param.name] = None if type(value).__name__ == "Sentinel" else value  # click >= 8.3's UNSET
        except click.ClickException as exc:
            errors.append(exc.format_message())
    if errors:
        raise ApiError(400, errors[0], errors)
    return opts


def _json_shape(raw, param: click.Option, opt: str):
    """JSON values of the right shape for click (lists for repeatable options, booleans for flags)."""
    if raw is None:
        return None
    if param.multiple:
        raw = [raw] if isinstance(raw, (str, int)) and not isinstance(raw, bool) else raw
        if not isinstance(raw, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in raw):
            raise click.BadParameter("expected a list of strings", param_hint=f"'{opt}'")
        if len(raw) > MAX_EXPERIMENTS:
            raise click.BadParameter(f"at most {MAX_EXPERIMENTS} values", param_hint=f"'{opt}'")
        return [str(v) for v in raw]
    if param.is_flag:
        if not isinstance(raw, bool):
            raise click.BadParameter("expected true or false", param_hint=f"'{opt}'")
        return raw
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise click.BadParameter(f"expected a {param.type.name}, got {type(raw).__name__}", param_hint=f"'{opt}'")
    return raw


def _server_bounds(opts: dict[str, Any], command: click.Command) -> None:
    """Bounds the server adds to the CLI's (cost and size), reported in click's words."""
    cfg = settings()
    params = {p.name: p for p in command.params}
    ctx = click.Context(command, info_name=command.name)
    checks = {
        "chains": click.IntRange(1, cfg.max_chains),
        "draws": click.IntRange(10, cfg.max_draws),
        "folds": click.IntRange(2, 1000),
        "seed": click.IntRange(0, 2**32 - 1),
    }
    errors = []
    for name, kind in checks.items():
        if opts.get(name) is not None:
            try:
                kind.convert(opts[name], params[name], ctx)
            except click.BadParameter as exc:
                exc.param = params[name]
                errors.append(exc.format_message())
    for name, value in opts.items():
        limit = MAX_FILTER if name == "filter_string" else MAX_STRING
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, str) and len(v) > limit for v in values):
            errors.append(f"Invalid value for '{_option_name(params[name])}': longer than {limit} characters.")
        if any(isinstance(v, str) and "\x00" in v for v in values):
            errors.append(f"Invalid value for '{_option_name(params[name])}': contains a NUL character.")
    if errors:
        raise ApiError(400, errors[0], errors)


def _target(client, opts, sources: list[str]) -> str:
    """The experiment to log into: ``target_experiment`` (name or id; a new name is created), else the first
    source — as the CLI's ``--target-experiment``."""
    value = opts.get("target_experiment")
    if not value:
        return sources[0]
    found = client.get_experiment_by_name(value)
    if found is not None and found.lifecycle_stage == "active":
        return found.experiment_id
    if value.isdigit():
        try:
            exp = client.get_experiment(value)
            if exp.lifecycle_stage == "active":
                return exp.experiment_id
        except MlflowException:
            pass
    if found is not None:
        raise InputError(f"experiment '{value}' is deleted; restore it or choose another target")
    from mlflow.server.handlers import _get_tracking_store

    eid = _get_tracking_store().create_experiment(value)  # the server's store: its default artifact root
    security.grant_manage(request, eid)
    return eid


def _check_access(sources: list[str], target: str) -> None:
    denied = [e for e in sources if not security.can(request, e)]
    if denied:
        raise ApiError(403, f"no permission to read experiment(s) {', '.join(denied)}")
    if not security.can(request, target, "update"):
        raise ApiError(403, f"no permission to log runs into experiment {target}")


def _common_kwargs(opts: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    return dict(
        experiment_ids=ids, metric=opts["metric"], rope=opts["rope"], greater_is_better=not opts["lower_is_better"],
        folds=opts["folds"], seed=opts["seed"], filter_string=opts["filter_string"], layout=opts["layout"],
        drop_incomplete=opts["drop_incomplete"], on_duplicate="latest" if opts["latest"] else "error",
        prior=opts["prior"], chains=opts["chains"], draws=opts["draws"], threshold=opts["threshold"],
        backend=opts["backend"], model_tag=opts["model_tag"], dataset_tag=opts["dataset_tag"],
    )


def _check_sources(client, opts, models: list[str]) -> list[str]:
    """What the CLI would reject before sampling: unknown experiments, a bad filter, absent models or tags."""
    from .. import collect

    ids = collect.resolve_experiments(client, opts["experiment_names"], opts["experiment_ids"])
    collect._check_filter(opts["filter_string"])
    collect._model_runs(client, ids, models, opts["filter_string"], opts["model_tag"], opts["dataset_tag"])
    return ids


def _job_tags(kind: str, opts: dict[str, Any], ids: list[str], extra: dict[str, str]) -> dict[str, str]:
    request_record = {k: v for k, v in opts.items() if v not in (None, (), "", False)}
    tags = {
        jobs.TAG_KIND: kind,
        "bayescompare.metric": opts["metric"],
        "bayescompare.source_experiment_ids": ",".join(ids),
        jobs.TAG_STAGE: "queued",
        jobs.TAG_REQUEST: runlog._fit_tag(json.dumps(request_record, default=str), 5000),
        **jobs.owner_tags(),
        **extra,
    }
    user = security.current_user(request)
    if user:
        tags[jobs.TAG_USER] = user
        tags["mlflow.user"] = user
    return tags


def _submit(kind: str, run_id: str, kwargs: dict[str, Any]) -> None:
    spec = {
        "kind": kind, "run_id": run_id, "kwargs": kwargs, "tracking_uri": loopback_uri(),
        "credentials": security.credentials(request), "state_dir": str(settings().state_dir),
        "slots": settings().max_jobs,
    }
    try:
        runner().submit(spec)
    except jobs.QueueFull as exc:
        jobs.fail_if_running(store_client(), run_id, f"not started: {exc}")
        raise ApiError(503, str(exc)) from exc
    except Exception as exc:
        jobs.fail_if_running(store_client(), run_id, f"not started: {type(exc).__name__}: {exc}")
        raise


def _accepted(run_id: str, experiment_id: str) -> Response:
    from ..compare import run_url_path

    resp = _json({"run_id": run_id, "experiment_id": experiment_id, "status": "RUNNING", "stage": "queued",
                  "status_url": f"{base_path()}/api/comparisons/{run_id}",
                  "run_url": prefix() + "/" + run_url_path(experiment_id, run_id)}, 202)
    resp.headers["Location"] = f"{base_path()}/api/comparisons/{run_id}"
    return resp


def api_create_comparison():
    def go():
        command = cli_module.compare
        opts = parse_fields(_body(), command)
        _server_bounds(opts, command)
        client = store_client()
        ids = _check_sources(client, opts, [opts["model_a"], opts["model_b"]])
        target = _target(client, opts, ids)
        _check_access(ids, target)
        extra = {"bayescompare.model_a": opts["model_a"], "bayescompare.model_b": opts["model_b"]}
        if opts.get("claim"):
            extra[jobs.TAG_REQUIRE] = f"{opts['claim']}@{opts['threshold']}"
        tags = _job_tags("comparison", opts, ids, extra)
        run = client.create_run(target, tags=tags,
                                run_name=runlog.run_name(opts["model_a"], opts["model_b"], opts["metric"]))
        run_id = run.info.run_id
        kwargs = _common_kwargs(opts, ids)
        kwargs.update(model_a=opts["model_a"], model_b=opts["model_b"], sensitivity=opts["sensitivity"],
                      target_experiment_id=target)
        _submit("comparison", run_id, kwargs)
        return _accepted(run_id, target)

    return _guarded(go)


def api_create_matrix():
    def go():
        from ..collect import discover
        from ..matrix import model_pairs

        command = cli_module.matrix
        body = _body()
        models = body.pop("models", None)
        if isinstance(models, str):
            models = [m.strip() for m in models.split(",") if m.strip()]
        if models is not None and (not isinstance(models, list) or not all(isinstance(m, str) for m in models)):
            raise ApiError(400, "Invalid value for '--models': expected a list of model names")
        body["models"] = ",".join(models) if models else "*"
        opts = parse_fields(body, command)
        _server_bounds(opts, command)
        client = store_client()
        if not models:  # "compare all models": every model found in the experiments
            from .. import collect

            ids = collect.resolve_experiments(client, opts["experiment_names"], opts["experiment_ids"])
            models = discover(client, ids, model_tag=opts["model_tag"], dataset_tag=opts["dataset_tag"])["models"]
        limit = settings().max_matrix_models
        if len(models) > limit:
            raise ApiError(400, f"Invalid value for '--models': {len(models)} models; the server compares at most "
                                f"{limit} at once (MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS)")
        if any(len(m) > MAX_STRING for m in models):
            raise ApiError(400, f"Invalid value for '--models': a name is longer than {MAX_STRING} characters.")
        model_pairs(models)  # at least two, no duplicates (InputError → 400)
        ids = _check_sources(client, opts, models)
        target = _target(client, opts, ids)
        _check_access(ids, target)
        opts["models"] = ",".join(models)
        tags = _job_tags("matrix", opts, ids, {"bayescompare.models": runlog._fit_tag(",".join(models))})
        run = client.create_run(target, tags=tags, run_name=f"{len(models)} models · {opts['metric']}")
        run_id = run.info.run_id
        kwargs = _common_kwargs(opts, ids)
        kwargs.update(models=models, tracking_url=loopback_uri())
        _submit("matrix", run_id, kwargs)
        return _accepted(run_id, target)

    return _guarded(go)

