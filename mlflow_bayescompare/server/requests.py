"""Reading a request: the JSON body (size, shape, nesting), the option objects of a job, and query parameters.

Everything the command line would reject is rejected here with a 400 before anything is read from the store: the
fields go through :func:`..vocabulary.options.parse_fields` (the CLI's own rules and words), and the server adds its own
limits from :class:`.jobs.Settings` (chains, draws, warm-up, models of a matrix) and the shape of an experiment id.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any

from flask import request

from ..client import MAX_WAIT
from ..vocabulary.errors import InputError
from ..vocabulary.options import (
    EvalOptions,
    FitOptions,
    MatrixOptions,
    ModelsOptions,
    PairOptions,
    RankOptions,
    SourceOptions,
    parse_fields,
)
from ..vocabulary.runkey import DEFAULT_KEYS, parse_key
from .jobs import Settings

__all__ = ["ApiError", "JobRequest", "MAX_BODY", "MAX_DEPTH", "json_body", "job_request", "job_body_request",
           "check_model_count", "with_sources", "evals_body_request", "experiment_id_arg", "run_id_arg", "no_such_run",
           "key_arg", "max_results_arg", "wait_arg", "is_experiment_id"]

MAX_BODY = 64 * 1024  # bytes of a JSON body
MAX_DEPTH = 8  # nesting of a JSON body: the fields are flat, lists at most one level down
MAX_EXPERIMENT_ID = 2**63 - 1  # MLflow's stores keep experiment ids as (at most) 64-bit integers
_EXPERIMENT_ID_RE = re.compile(r"^[0-9]{1,19}$")
_RUN_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_KINDS = {"comparison": (SourceOptions, FitOptions, PairOptions),
          "matrix": (SourceOptions, FitOptions, ModelsOptions, MatrixOptions),
          "ranking": (SourceOptions, RankOptions, ModelsOptions)}
#: fields a kind of job does not take (a ranking takes the `rank` command's options, as the command line does)
#: (a matrix's engine and child runs are the server's: MLFLOW_BAYESCOMPARE_ENGINE; it takes `refresh`)
_EXCLUDED = {"comparison": (), "matrix": ("sensitivity", "engine", "ray_address", "child_runs_up_to", "child_runs"),
             "ranking": ("RankOptions.drop_incomplete", "pair_reports")}


class ApiError(Exception):
    """An answer other than success: the HTTP status, the message and every problem (``errors``)."""

    def __init__(self, status: int, message: str, errors: list[str] | None = None):
        super().__init__(message)
        self.status, self.message, self.errors = status, message, errors or [message]


@dataclass(frozen=True)
class JobRequest:
    """A validated request to start a job: the option objects, and the models (none: every model found)."""

    kind: str  # "comparison", "matrix" or "ranking"
    source: SourceOptions
    fit: FitOptions | RankOptions  # a ranking's settings are RankOptions
    models: tuple[str, ...]
    claim: str | None = None
    pair_reports: bool = False  # a matrix's: ModelsOptions.pair_reports
    refresh: bool = False  # a matrix's: MatrixOptions.refresh (fit every pair again, reading no cache)


# --------------------------------------------------------------------------------------------------- body


def json_body() -> dict[str, Any]:
    """The request's JSON object: at most :data:`MAX_BODY` bytes and :data:`MAX_DEPTH` levels deep, strict JSON
    (``NaN`` and ``Infinity`` are not JSON)."""
    if request.mimetype != "application/json":
        raise ApiError(415, "send the fields as JSON (Content-Type: application/json)")
    if (request.content_length or 0) > MAX_BODY:
        raise ApiError(413, f"request body larger than {MAX_BODY} bytes")
    data = request.stream.read(MAX_BODY + 1)
    if len(data) > MAX_BODY:
        raise ApiError(413, f"request body larger than {MAX_BODY} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "the request body must be UTF-8 JSON") from None
    if _depth(text) > MAX_DEPTH:
        raise ApiError(400, f"the request body is nested more than {MAX_DEPTH} levels deep")
    try:
        body = json.loads(text, parse_constant=_not_json)
    except ValueError as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _not_json(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _depth(text: str) -> int:
    """How deep the JSON text nests arrays and objects (strings skipped), without parsing it."""
    deepest = depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


# --------------------------------------------------------------------------------------------------- jobs


def job_request(kind: str, body: dict[str, Any], settings: Settings) -> JobRequest:
    """The options of a ``comparison``, ``matrix`` or ``ranking`` request, checked by the options' rules and the
    server's limits; every problem is reported at once (an :class:`InputError`)."""
    problems = _limit_problems(kind, body, settings)
    try:
        source, fit, third, *how = parse_fields(body, _KINDS[kind], origin="json", exclude=_EXCLUDED[kind])
    except InputError as exc:
        raise InputError(exc.problems + problems, header="invalid request:") from None
    if problems:
        raise InputError(problems, header="invalid request:")
    if kind == "comparison":
        return JobRequest(kind, source, fit, (third.model_a, third.model_b), third.claim)
    return JobRequest(kind, source, fit, third.models, pair_reports=third.pair_reports,
                      refresh=bool(how and how[0].refresh))


def job_body_request(kind: str, settings: Settings) -> JobRequest:
    """The job of the request's JSON body (:func:`json_body`, :func:`job_request`)."""
    return job_request(kind, json_body(), settings)


def evals_body_request() -> EvalOptions:
    """The options of a comparison of evaluation runs from the request's JSON body (the command line's
    ``compare-evals`` options, by the same rules and words); every problem at once (an :class:`InputError`)."""
    (options,) = parse_fields(json_body(), [EvalOptions], origin="json")
    return options


def _limit_problems(kind: str, body: dict[str, Any], settings: Settings) -> list[str]:
    """The server's own bounds, on the raw values (the options check their types); ``MAX_MATRIX_MODELS`` bounds
    the pairs of a matrix (a ranking is one fit of all its models)."""
    problems = []
    limits = {"chains": (settings.max_chains, "MAX_CHAINS"), "draws": (settings.max_draws, "MAX_DRAWS"),
              "warmup": (settings.max_draws, "MAX_DRAWS")}
    for name, (limit, variable) in limits.items():
        value = body.get(name)
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) \
                and value > limit:
            problems.append(f"Invalid value for '{name}': must be <= {limit} on this server "
                            f"(MLFLOW_BAYESCOMPARE_{variable}); got {value!r}")
    ids = body.get("experiment_id")
    for value in ids if isinstance(ids, list) else [] if ids is None else [ids]:
        if isinstance(value, (str, int)) and not isinstance(value, bool) and not is_experiment_id(str(value)):
            problems.append(f"Invalid value for 'experiment_id': {str(value)[:40]!r} is not an experiment id "
                            "(at most 19 digits)")
    models = body.get("models")
    count = len(models) if isinstance(models, list) else len([m for m in models.split(",") if m.strip()]) \
        if isinstance(models, str) else 0
    if kind == "matrix" and count > settings.max_matrix_models:
        problems.append(_too_many_models(count, settings))
    return problems


def _too_many_models(count: int, settings: Settings) -> str:
    return (f"Invalid value for 'models': {count} models; this server compares at most "
            f"{settings.max_matrix_models} at once (MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS)")


def check_model_count(models: tuple[str, ...], settings: Settings) -> None:
    """The models found for "compare all models" within ``MAX_MATRIX_MODELS``."""
    if len(models) > settings.max_matrix_models:
        raise InputError([_too_many_models(len(models), settings)], header="invalid request:")


def with_sources(job: JobRequest, experiment_ids: list[str]) -> JobRequest:
    """``job`` reading exactly ``experiment_ids`` (resolved and permitted), by id; a search run's job reads its run
    (whose experiment was resolved and permitted)."""
    if job.source.search_run is not None:
        return job
    source = dataclasses.replace(job.source, experiment_names=(), experiment_ids=tuple(experiment_ids))
    return dataclasses.replace(job, source=source)


# --------------------------------------------------------------------------------------------------- query


def is_experiment_id(value: str) -> bool:
    return bool(_EXPERIMENT_ID_RE.match(value)) and int(value) <= MAX_EXPERIMENT_ID


def experiment_id_arg(required: bool = True) -> str | None:
    """``?experiment_id=`` (digits), or None when absent and not required."""
    value = request.args.get("experiment_id", "")
    if not value and not required:
        return None
    if not is_experiment_id(value):
        raise ApiError(400, "query parameter 'experiment_id' must be an experiment id (at most 19 digits)")
    return value


def run_id_arg() -> str:
    """``?run_id=`` (32 hex digits).  Anything else is answered like a run that does not exist."""
    value = request.args.get("run_id", "")
    if not _RUN_ID_RE.match(value):
        raise ApiError(404, no_such_run(value))
    return value


def no_such_run(run_id: str) -> str:
    """The one answer for a run that does not exist, is not a comparison, or may not be read."""
    return f"no comparison run {run_id[:64]!r}"


def key_arg(role: str) -> str:
    """The query's ``<role>_key`` (:mod:`..vocabulary.runkey`), or its ``<role>_tag`` (``tag:<name>``), or the
    default key."""
    tag = request.args.get(f"{role}_tag")
    value = request.args.get(f"{role}_key") or (f"tag:{tag}" if tag else DEFAULT_KEYS[role])
    if len(value) > 500 or "\x00" in value:
        raise ApiError(400, f"query parameter '{role}_key' must be at most 500 characters")
    try:
        return str(parse_key(value, role))
    except InputError as exc:
        raise ApiError(400, f"query parameter {exc}") from None


def max_results_arg(default: int = 50, most: int = 200) -> int:
    raw = request.args.get("max_results", str(default))
    if not re.fullmatch(r"[0-9]{1,6}", raw):
        raise ApiError(400, "query parameter 'max_results' must be a whole number")
    return min(most, max(1, int(raw)))


def wait_arg() -> float:
    """``?wait=``: the seconds (a number, at most three decimals) a status request may wait for the job's state to
    change, at most :data:`MAX_WAIT` (more is cut to it); 0 when absent."""
    raw = request.args.get("wait", "0")
    if not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,3})?", raw):
        raise ApiError(400, f"query parameter 'wait' must be a number of seconds (at most {MAX_WAIT:g})")
    return min(MAX_WAIT, float(raw))
