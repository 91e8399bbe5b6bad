"""MLflow's insides, in this one module: every private name of MLflow's the package uses, and every MLflow
environment variable it reads or sets.  The rest of the package calls the functions here.

Checked with MLflow 3.17.2 and 3.13.0, the floor: the first MLflow to search runs by ``tags.x IS NULL`` (3.11), to
serve its REST API under ``--static-prefix`` (3.12) and whose basic-auth store has ``grant_user_permission`` (3.13,
used when a job creates its target experiment).  CI runs the MLflow-touching tests at the floors (mlflow 3.13, numpy
1.24, pandas 2.0, ...: ``.ci/floors``) in a venv of their own, after the main suite at the newest.  Only the
standard library is imported at module level, MLflow (and its Flask) inside the functions, so that importing this
module costs nothing.
Used beyond MLflow's public API:

* ``mlflow.server.handlers``: ``_add_static_prefix`` (the server's ``--static-prefix``), ``_get_tracking_store``
  (the server's own store, and its ``artifact_root_uri``: the default artifact root, to which MLflow's
  ``mlflow.utils.uri.append_to_uri_path`` adds an experiment's id for its default location), and how ``/get-artifact``
  finds a run's artifact: ``_is_servable_proxied_run_artifact_root``, ``_get_artifact_repo_mlflow_artifacts``,
  ``_get_proxied_run_artifact_destination_path``, ``_get_artifact_repo``;
* ``mlflow.server.auth``: ``_get_experiment_permission`` and the validator table ``BEFORE_REQUEST_VALIDATORS``,
  keyed by exact path and method (from MLflow 3.16, whose ``MLFLOW_BASIC_AUTH_FAIL_CLOSED`` defaults to true, a
  signed-in non-admin is refused a route missing there);
* ``flask.g.mlflow_authenticated_user``: the user MLflow's basic-auth signed in (from MLflow 3.14; before, the
  caller reads the request's basic-auth header);
* ``mlflow.tracking.fluent._get_experiment_id``: the active experiment;
* ``RunData._metric_objs``: a listed run's latest metric with its step and timestamp (:func:`latest_metric`);
* ``mlflow.utils.search_utils.SearchUtils.parse_search_filter``: MLflow's parser of a runs filter string, the one
  every store applies (a module outside MLflow's documented API);
* ``mlflow.utils.validation``: ``_validate_metric_name`` and ``_validate_param_name`` (with the public
  ``MAX_ENTITY_KEY_LENGTH``), MLflow's own rules for a key, which the keys derived from names are tested against;
* the environment ``mlflow server`` gives its workers: ``_MLFLOW_SGI_NAME`` (uvicorn, gunicorn or waitress),
  ``_MLFLOW_SERVER_BOOT_ID`` (one id per start, shared by the workers; from MLflow 3.16), and
  ``mlflow.server.BACKEND_STORE_URI_ENV_VAR`` (the backend store);
* MLflow's public environment variables: ``MLFLOW_TRACKING_URI`` (the CLI's ``--tracking-uri``),
  ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD`` (set for a job's calls: :func:`as_user`),
  ``MLFLOW_SERVER_CORS_ALLOWED_ORIGINS`` (read), ``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT`` (set while the
  package ends a run: :func:`end_run`) and ``MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR`` (off while it downloads an
  artifact: :func:`download_artifact`), in 3.13 and 3.17 alike;
* the names MLflow gives what an evaluation leaves (:data:`RUN_TYPE_TAG` and the others below, with where MLflow
  defines each), the largest page of traces its server answers (:data:`TRACES_PAGE`), and the artifact
  ``mlflow.models.evaluate`` writes (:data:`EVAL_TABLE`): read by :mod:`..reads.evaluations`, checked with MLflow
  3.17.2 and, but for the ``@mlflow.test`` tag (3.17), 3.13.0;
* ``mlflow.utils.mlflow_tags.MLFLOW_DATASET_CONTEXT``, the tag of a run's dataset input that says its role
  (``mlflow.data.context``: :data:`DATASET_CONTEXT`), which MLflow's UI shows beside the dataset;
* how MLflow's client retries: a ``requests`` session over urllib3's ``Retry``, whose retries urllib3 reports on
  its logger ``urllib3.connectionpool`` (:data:`RETRY_LOGGER`, :func:`retry_notice`), a logger with no handler of
  its own but urllib3's ``NullHandler``, so that MLflow retries in silence unless someone listens there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["TRACKING_URI_ENV", "CREDENTIALS_ENV", "RETRY_LOGGER", "DATASET_CONTEXT", "COMPARED", "log_compared_inputs",
           "active_experiment_id", "as_user", "latest_metric",
           "authenticated_user", "backend_store_uri", "cors_allowed_origins", "end_run", "experiment_permission",
           "filter_problem", "is_own_artifact_folder", "is_valid_key", "register_auth_validator", "retry_notice",
           "run_artifact_location", "download_top_artifact", "read_top_text", "download_artifact", "top_artifacts",
           "RUN_TYPE_TAG", "EVALUATION_RUN_TYPES", "TEST_NAME_TAG", "SCORER_TRACE_TAG", "ASSESSMENT_RUN_KEY",
           "TRACE_INPUTS_KEY", "TRACES_PAGE", "EVAL_TABLE", "served_by_uvicorn", "server_boot_id", "static_prefix",
           "own_artifact_folder", "tracking_store", "tracking_user"]

#: the environment variable of MLflow's tracking URI
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
#: the environment variables of the basic-auth user name and password MLflow's client sends
CREDENTIALS_ENV = {"username": "MLFLOW_TRACKING_USERNAME", "password": "MLFLOW_TRACKING_PASSWORD"}
#: MLflow's switch for the "🏃 View run … at: <tracking URI>…" and "🧪 View experiment at: …" lines its client
#: writes on stdout when it ends a run on a tracking server: they carry the URI as given, password included
_RUN_LINKS_ENV = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"  # "true": no "View run/experiment at" lines
_PROGRESS_BAR_ENV = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"  # "false": no "Downloading artifacts" bar on stderr
_switches = {"lock": threading.Lock(), "held": {}, "saved": {}}
#: the logger on which urllib3 reports each retry of MLflow's client
RETRY_LOGGER = "urllib3.connectionpool"

# what an evaluation leaves behind
#: the run tag ``mlflow.genai.evaluate`` sets (``mlflow.utils.mlflow_tags.MLFLOW_RUN_TYPE``) and its values on runs
#: whose traces are an evaluation's items: ``genai_evaluate``, and ``test``, the run of ``@mlflow.test``'s session
RUN_TYPE_TAG = "mlflow.runType"
EVALUATION_RUN_TYPES = ("genai_evaluate", "test")
#: the trace tag ``@mlflow.test`` sets on each trace an evaluation makes inside a test: the pytest node id, which
#: carries the case's id (``test_x.py::test_f[case]``; the case id alone, tag ``mlflow.test.case_id``, repeats across
#: test functions): ``mlflow.pytest.session.TAG_TEST_NAME``, set by ``genai.evaluation.harness._tag_mlflow_test_traces``
TEST_NAME_TAG = "mlflow.test.name"
#: the tag of a trace a judge made while scoring (``tracing.constant.TraceTagKey.SOURCE_SCORER_NAME``): not an item
SCORER_TRACE_TAG = "mlflow.trace.sourceScorer"
#: the metadata key naming the run an assessment was made for (``AssessmentMetadataKey.SOURCE_RUN_ID``); a trace
#: evaluated by several runs carries each run's assessments
ASSESSMENT_RUN_KEY = "mlflow.assessment.sourceRunId"
#: the trace metadata holding the trace's inputs as JSON, cut to 250 characters and ``...``
#: (``TraceMetadataKey.INPUTS``, ``tracing.constant.MAX_CHARS_IN_TRACE_INFO_METADATA``)
TRACE_INPUTS_KEY = "mlflow.traceInputs"
#: the most traces one search answers on a tracking server (``server.handlers._search_traces_v3``)
TRACES_PAGE = 500
#: the per-example table ``mlflow.models.evaluate`` logs, after the ``metric_prefix`` of its evaluator config
#: (``models.evaluation.default_evaluator._EVAL_TABLE_FILE_NAME``), written by ``MlflowClient.log_table``:
#: ``{"columns": [...], "data": [[...], ...]}`` (pandas' ``orient="split"``)
EVAL_TABLE = "eval_results_table.json"


# --------------------------------------------------------------------------------------------------- client side


def active_experiment_id() -> str | None:
    """The experiment ``mlflow`` logs into by default: the one set active, else from the environment."""
    from mlflow.tracking.fluent import _get_experiment_id

    return _get_experiment_id()


def latest_metric(run, key: str) -> tuple[int, int, float] | None:
    """The step, timestamp and value of the run's latest ``key`` as a search lists it (the public
    ``run.data.metrics`` holds the value alone), or None."""
    found = next((m for m in run.data._metric_objs if m.key == key), None)
    return None if found is None else (found.step, found.timestamp, found.value)


def is_valid_key(key: str) -> bool:
    """Whether MLflow takes ``key`` as a metric key and as a param key: its characters, its path rules (no ``//``,
    no ``..`` part) and its length, by MLflow's own validators (those of the platform it runs on)."""
    from mlflow.exceptions import MlflowException
    from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, _validate_metric_name, _validate_param_name

    try:
        _validate_metric_name(key)
        _validate_param_name(key)
    except MlflowException:
        return False
    return len(key) <= MAX_ENTITY_KEY_LENGTH


def filter_problem(filter_string: str) -> str | None:
    """What MLflow's own parser of a runs filter finds wrong with ``filter_string`` (None: it parses)."""
    from mlflow.exceptions import MlflowException
    from mlflow.utils.search_utils import SearchUtils

    try:
        SearchUtils.parse_search_filter(filter_string)
    except MlflowException as exc:
        return exc.message
    return None


def tracking_user(tracking_uri: str | None) -> str:
    """The basic-auth user MLflow's client calls the tracking server as: ``MLFLOW_TRACKING_USERNAME``, else the
    user name the URI carries ('' for none, and for a local store)."""
    return os.environ.get(CREDENTIALS_ENV["username"]) or urllib.parse.unquote(
        urllib.parse.urlsplit(str(tracking_uri or "")).username or "")


@contextlib.contextmanager
def as_user(credentials: dict[str, str] | None) -> Iterator[None]:
    """MLflow clients created in the block send these basic-auth ``username`` and ``password`` (none given: the
    environment as it is); the environment is restored afterwards."""
    saved = {name: os.environ.get(name) for name in CREDENTIALS_ENV.values()}
    if credentials:
        for key, name in CREDENTIALS_ENV.items():
            os.environ[name] = credentials[key]
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def end_run(client, run_id: str, status: str) -> None:
    """End the run with ``status`` (``client.set_terminated``), without MLflow's run-link lines on stdout."""
    with _switch(_RUN_LINKS_ENV, "true"):
        client.set_terminated(run_id, status)


def download_artifact(repo_or_client, path: str, destination: str, run_id: str | None = None) -> str:
    """The local path of the artifact ``path`` downloaded into ``destination`` (by a client, of ``run_id``; or by
    an artifact repository), without MLflow's progress bar on stderr (a terminal's, or the server's log)."""
    with _switch(_PROGRESS_BAR_ENV, "false"):
        if run_id is not None:
            return repo_or_client.download_artifacts(run_id, path, destination)
        return repo_or_client.download_artifacts(path, dst_path=destination)


@contextlib.contextmanager
def _switch(name: str, value: str) -> Iterator[None]:
    """MLflow's environment variable ``name`` at ``value`` for the block, which MLflow reads as it prints.  Several
    threads may be in such a block at once: the first sets it, the last restores it."""
    with _switches["lock"]:
        if _switches["held"].get(name, 0) == 0:
            _switches["saved"][name] = os.environ.get(name)
            os.environ[name] = value
        _switches["held"][name] = _switches["held"].get(name, 0) + 1
    try:
        yield
    finally:
        with _switches["lock"]:
            _switches["held"][name] -= 1
            if _switches["held"][name] == 0:
                saved = _switches["saved"].pop(name)
                if saved is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = saved


def retry_notice(record: logging.LogRecord) -> tuple[BaseException | None, int | None] | None:
    """If ``record`` (of :data:`RETRY_LOGGER`) tells that MLflow's client is about to retry a request: the error
    that broke the connection (None when the server answered with a status MLflow retries, such as 503) and how
    many retries are left (None when unknown); else None.  urllib3 writes ``Retrying (<Retry>) after connection
    broken by '<error>': <path>`` (WARNING) and ``Retry: <path>`` (DEBUG)."""
    message, args = str(record.msg), record.args if isinstance(record.args, tuple) else ()
    if message.startswith("Retrying (") and len(args) == 3:
        retries, error, _ = args
        return (error if isinstance(error, BaseException) else None), getattr(retries, "total", None)
    if message.startswith("Retry: "):
        return None, None
    return None


# --------------------------------------------------------------------------------------------------- the server


def served_by_uvicorn() -> bool:
    """Does ``mlflow server`` run the app under uvicorn (an ASGI app), rather than gunicorn or waitress?"""
    return os.environ.get("_MLFLOW_SGI_NAME") == "uvicorn"


def server_boot_id() -> str | None:
    """The id of this ``mlflow server`` start (its workers share it); None outside ``mlflow server``, or before
    MLflow 3.16."""
    return os.environ.get("_MLFLOW_SERVER_BOOT_ID") or None


def backend_store_uri() -> str | None:
    """The ``--backend-store-uri`` of ``mlflow server``; None outside it."""
    from mlflow.server import BACKEND_STORE_URI_ENV_VAR

    return os.environ.get(BACKEND_STORE_URI_ENV_VAR) or None


def cors_allowed_origins() -> list[str]:
    """The origins of ``MLFLOW_SERVER_CORS_ALLOWED_ORIGINS``, as written (comma-separated)."""
    return [o.strip() for o in os.environ.get("MLFLOW_SERVER_CORS_ALLOWED_ORIGINS", "").split(",") if o.strip()]


def static_prefix() -> str:
    """The server's ``--static-prefix`` ('' without one)."""
    from mlflow.server.handlers import _add_static_prefix

    return _add_static_prefix("")


def tracking_store():
    """The server's own tracking store."""
    from mlflow.server.handlers import _get_tracking_store

    return _get_tracking_store()


def own_artifact_folder(experiment_id: str) -> str:
    """The artifact location MLflow gives the experiment ``experiment_id`` when it is created without one: the
    server's default artifact root + ``/<id>`` (``mlflow-artifacts:/<id>`` on a server that serves its artifacts),
    as the SQL store's ``_get_artifact_location`` makes it."""
    from mlflow.utils.uri import append_to_uri_path

    return append_to_uri_path(tracking_store().artifact_root_uri, str(experiment_id))


def is_own_artifact_folder(experiment_id: str, location: str) -> bool:
    """Is ``location`` the experiment's own folder (:func:`own_artifact_folder`), spelled as MLflow spells it but
    for trailing slashes (a local folder also as a plain path)?  A location that only resolves there, through ``.``
    or ``..`` segments or percent-escapes (once or twice), is not: the client, the HTTP library and the server each
    resolve such a path their own way, and a ``..`` that leaves the artifact route sends the upload (with the
    user's credentials) to another route of the server."""
    own, found = own_artifact_folder(experiment_id).rstrip("/"), location.rstrip("/")
    if found == own:
        return True
    local = _local_path(found)
    return local is not None and local == _local_path(own) and "%" not in local \
        and not {".", ".."} & set(urllib.parse.unquote(found).split("/"))


def _local_path(location: str) -> str | None:
    """A local location's absolute, normalised path (a ``file:`` URI's unescaped once), None for other schemes."""
    parts = urllib.parse.urlsplit(location)
    if parts.scheme not in ("", "file") or (parts.scheme == "file" and parts.netloc not in ("", "localhost")):
        return None
    return os.path.normpath(os.path.abspath(urllib.parse.unquote(parts.path) if parts.scheme else location))


def run_artifact_location(run, path: str) -> tuple:
    """``(artifact repository, path in it)`` of the run's artifact ``path``, as ``/get-artifact`` finds it: under
    the proxied artifact root (``--artifacts-destination``), or in the run's own repository."""
    from mlflow.server import handlers

    uri = run.info.artifact_uri
    if handlers._is_servable_proxied_run_artifact_root(uri):
        return (handlers._get_artifact_repo_mlflow_artifacts(),
                handlers._get_proxied_run_artifact_destination_path(proxied_artifact_root=uri, relative_path=path))
    return handlers._get_artifact_repo(run), path


def top_artifacts(client, run) -> list[str]:
    """The names of the run's top-level artifacts.  A client on a tracking server lists them through it; a client on
    a server's own backend store (the plugin's pre-flight, inside the server) cannot resolve ``mlflow-artifacts:``
    URIs, and lists where the server's ``/get-artifact`` does (:func:`run_artifact_location`)."""
    if _through_client(client, run):
        return [a.path for a in client.list_artifacts(run.info.run_id)]
    repo, located = run_artifact_location(run, "")
    return [a.path.rpartition("/")[2] for a in repo.list_artifacts(located.rstrip("/") or None)]


def download_top_artifact(client, run, name: str, destination: str) -> str | None:
    """The local path of the run's top-level artifact ``name`` downloaded into ``destination``, None when the run
    has none (found as :func:`top_artifacts` finds them)."""
    if name not in top_artifacts(client, run):
        return None
    if _through_client(client, run):
        return download_artifact(client, name, destination, run_id=run.info.run_id)
    repo, located = run_artifact_location(run, name)
    return download_artifact(repo, located, destination)


def read_top_text(client, run, name: str) -> str:
    """The text of the run's top-level artifact ``name``, read where :func:`download_top_artifact` reads it but
    without listing the run's artifacts first or resolving a ``runs:/`` URI (which reads the run again, and its
    logged models): what a watch reads back at each look.  An artifact that is not there is MLflow's error."""
    import mlflow.artifacts

    with tempfile.TemporaryDirectory(prefix="bayescompare-") as tmp:
        if _through_client(client, run):
            with _switch(_PROGRESS_BAR_ENV, "false"):
                path = mlflow.artifacts.download_artifacts(artifact_uri=f"{run.info.artifact_uri.rstrip('/')}/{name}",
                                                           dst_path=tmp, tracking_uri=client.tracking_uri)
        else:
            repo, located = run_artifact_location(run, name)
            path = download_artifact(repo, located, tmp)
        return Path(path).read_text(encoding="utf-8")


def _through_client(client, run) -> bool:
    """Does the client reach the run's artifacts itself (a tracking server's client, or artifacts outside the
    server's proxied root)?"""
    return urllib.parse.urlsplit(client.tracking_uri).scheme in ("http", "https") \
        or not run.info.artifact_uri.startswith("mlflow-artifacts:")


# --------------------------------------------------------------------------------------------------- basic-auth


def authenticated_user() -> str | None:
    """The user MLflow's basic-auth signed in for the current request (None before it did)."""
    from flask import g

    return getattr(g, "mlflow_authenticated_user", None)


def experiment_permission(experiment_id: str, user: str):
    """``user``'s permission on the experiment (``can_read``, ``can_update``, ...), defaults applied."""
    from mlflow.server import auth

    return auth._get_experiment_permission(str(experiment_id), user)


def register_auth_validator(path: str, method: str, validator: Callable[[], bool]) -> None:
    """Make ``validator`` MLflow's basic-auth check of requests for ``method`` on ``path`` (exactly)."""
    from mlflow.server import auth

    auth.BEFORE_REQUEST_VALIDATORS[(path, method)] = validator


#: the tag of a dataset input that says its role in the run (``mlflow.utils.mlflow_tags.MLFLOW_DATASET_CONTEXT``)
DATASET_CONTEXT = "mlflow.data.context"
#: the role of the datasets a comparison, ranking or matrix run compared the models on
COMPARED = "compared"


def log_compared_inputs(client, run_id: str, datasets) -> None:
    """Log ``datasets`` (MLflow ``Dataset`` entities, read from the source runs' inputs) as the run's own inputs,
    in the context :data:`COMPARED`: MLflow's UI then lists them under the run's Datasets instead of "None"."""
    from mlflow.entities import DatasetInput, InputTag

    if datasets:
        client.log_inputs(run_id, datasets=[DatasetInput(d, tags=[InputTag(DATASET_CONTEXT, COMPARED)])
                                            for d in datasets])
