"""Who may do what: ONE table from each route to the permission it needs (:data:`RULES`), applied in ONE
``before_request`` hook (:func:`authorize`), as ``mlflow.server.auth`` applies its own validators.

Under ``bayescompare-auth`` the hook runs after MLflow's basic-auth has authenticated the request, and nothing is
read for a request before its permission is known:

* experiment ids are resolved first, and an experiment the user may not read is reported exactly like one that
  does not exist;
* a run named in a URL is read only to learn its experiment; a run that does not exist, is not a comparison or
  may not be read gets the same 404;
* a job needs read on its source experiments and update on its target (an existing one; a new one must be
  creatable); runs, scores and the target are touched only once that is known.

MLflow's own validator table (keyed by exact path and method) gets every route, so that
MLflow's default ``MLFLOW_BASIC_AUTH_FAIL_CLOSED=true`` lets signed-in users through to this hook
(:func:`register_with_mlflow_auth`).  Without basic-auth every check passes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from flask import g, request
from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException

from ..runs.runlog import choose_target, usable_target
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.console import redact_uri
from ..vocabulary.errors import InputError
from ..vocabulary.options import EvalOptions, SourceOptions
from . import context, security
from .requests import (
    ApiError,
    JobRequest,
    evals_body_request,
    experiment_id_arg,
    is_experiment_id,
    job_body_request,
    no_such_run,
    run_id_arg,
)

__all__ = ["Need", "RULES", "Granted", "Target", "authorize", "granted", "enable_basic_auth", "auth_enabled",
           "register_with_mlflow_auth", "can", "readable_experiments", "readable_runs", "current_user", "credentials",
           "create_target"]


class Need(enum.Enum):
    """What a route needs, beyond a login under basic-auth."""

    SIGNED_IN = "signed in (lists only what the user may read)"
    READ_EXPERIMENT = "read on the experiment ?experiment_id"
    READ_LISTED = "read on ?experiment_id when given, else lists the experiments the user may read"
    READ_RUN = "read on the experiment of the run ?run_id"
    START_JOB = "read on the source experiments, update on the target experiment (or create it, when new)"
    START_EVALS = "read on every evaluation run's experiment, update on the target experiment (or create it)"


#: endpoint → permission; a route missing here is refused (the blueprint checks every route has a rule)
RULES: dict[str, Need] = {
    "page": Need.SIGNED_IN,
    "page_css": Need.SIGNED_IN,
    "page_js": Need.SIGNED_IN,
    "csrf": Need.SIGNED_IN,
    "experiments": Need.SIGNED_IN,
    "choices": Need.READ_EXPERIMENT,
    "list_comparisons": Need.READ_LISTED,
    "comparison": Need.READ_RUN,
    "report": Need.READ_RUN,
    "create_comparison": Need.START_JOB,
    "create_matrix": Need.START_JOB,
    "create_ranking": Need.START_JOB,
    "evaluation_runs": Need.READ_EXPERIMENT,
    "create_evals": Need.START_EVALS,
    "evals_js": Need.SIGNED_IN,
}
_JOB_KINDS = {"create_comparison": "comparison", "create_matrix": "matrix", "create_ranking": "ranking"}
_state = {"auth": False}  # set by enable_basic_auth() in each worker process of `bayescompare-auth`


@dataclass(frozen=True)
class Target:
    """Where a job logs: an existing experiment's id, or the name of one to create when the job is accepted."""

    experiment_id: str | None
    name: str | None = None


@dataclass
class Granted:
    """What the hook resolved for the route: the experiments it may read, the run, or the job and its target."""

    need: Need
    experiment_ids: list[str] = field(default_factory=list)
    run: Any = None
    job: JobRequest | None = None
    target: Target | None = None
    evals: EvalOptions | None = None  # a comparison of evaluation runs: its options


# --------------------------------------------------------------------------------------------------- the hook


def authorize() -> None:
    """The blueprint's ``before_request`` hook: check the route's permission, keep what was resolved in
    ``flask.g`` (:func:`granted`), or answer 403/404 (raised as :class:`ApiError`)."""
    endpoint = (request.endpoint or "").rpartition(".")[2]
    need = RULES.get(endpoint)
    if need is None:
        raise ApiError(404, "not found")
    if need is Need.READ_EXPERIMENT:
        g.bayescompare = Granted(need, [_readable_id(experiment_id_arg())])
    elif need is Need.READ_LISTED:
        eid = experiment_id_arg(required=False)
        ids = [_readable_id(eid)] if eid else [e["experiment_id"] for e in readable_experiments()]
        g.bayescompare = Granted(need, ids)
    elif need is Need.READ_RUN:
        g.bayescompare = Granted(need, run=_readable_run(run_id_arg()))
    elif need in (Need.START_JOB, Need.START_EVALS):
        if problem := security.csrf_problem(request):
            raise ApiError(403, problem)
        g.bayescompare = _start_job(_JOB_KINDS[endpoint]) if need is Need.START_JOB else _start_evals()
    else:
        g.bayescompare = Granted(need)


def granted() -> Granted:
    """What :func:`authorize` resolved for the current request."""
    return g.bayescompare


def _start_job(kind: str) -> Granted:
    job = job_body_request(kind, context.settings())
    sources = resolve_sources(job.source)
    target = resolve_target(job.source.target_experiment, sources)
    return Granted(Need.START_JOB, sources, job=job, target=target)


def _start_evals() -> Granted:
    """A comparison of evaluation runs: the options, every run readable (:func:`readable_runs`), and the target
    (default: run A's experiment)."""
    options = evals_body_request()
    sources = readable_runs(options.run_ids)
    return Granted(Need.START_EVALS, list(dict.fromkeys(sources)),
                   target=resolve_target(options.target_experiment, sources[:1]), evals=options)


def readable_runs(run_ids) -> list[str]:
    """The experiment of each run, in order, when the user may read every one; else one :class:`InputError`
    naming each run that does not exist, is deleted or may not be read, in the evaluation-run reader's words."""
    found = [_readable_experiment_of(run_id) for run_id in run_ids]
    if absent := [f"run '{run_id[:64]}' not found" for run_id, eid in zip(run_ids, found) if eid is None]:
        raise InputError(absent, header="Cannot read the evaluation runs:")
    return found


# --------------------------------------------------------------------------------------------------- identity


def enable_basic_auth() -> None:
    _state["auth"] = True


def auth_enabled() -> bool:
    return _state["auth"]


def current_user() -> str | None:
    """The signed-in user (None without basic-auth)."""
    if not auth_enabled():
        return None
    user = mlflow_internals.authenticated_user()
    if user is None and request.authorization is not None:
        user = request.authorization.username
    return user


def credentials() -> dict[str, str] | None:
    """Basic-auth credentials to run the job as the requesting user (None without basic-auth)."""
    auth = request.authorization if auth_enabled() else None
    if auth is None or auth.type != "basic" or auth.username is None:
        return None
    return {"username": auth.username, "password": auth.password or ""}


def _is_admin() -> bool:
    if "bayescompare_admin" not in g:
        from mlflow.server import auth

        user = current_user()
        g.bayescompare_admin = bool(user) and bool(auth.store.get_user(user).is_admin)
    return g.bayescompare_admin


def can(experiment_id: str, what: str = "read") -> bool:
    """May the requesting user ``read`` / ``update`` the experiment (always, without basic-auth)?"""
    if not auth_enabled():
        return True
    user = current_user()
    if user is None:
        return False
    if _is_admin():
        return True
    permission = mlflow_internals.experiment_permission(experiment_id, user)
    return bool(permission.can_update if what == "update" else permission.can_read)


def _can_create_experiment() -> bool:
    if not auth_enabled() or _is_admin():
        return True
    from mlflow.server import auth

    return bool(auth.validate_can_create_experiment())


# --------------------------------------------------------------------------------------------------- experiments


def _experiment(*, name: str | None = None, experiment_id: str | None = None):
    """The experiment by name or id, or None when there is none (any lifecycle stage)."""
    client = context.store_client()
    if name is not None:
        return client.get_experiment_by_name(name)
    try:
        return client.get_experiment(experiment_id)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            return None
        raise


def _visible(experiment) -> bool:
    return experiment is not None and experiment.lifecycle_stage == "active" and can(experiment.experiment_id)


def _readable_id(experiment_id: str) -> str:
    """``experiment_id`` when the user may read it; else the 404 of an experiment that does not exist."""
    if not _visible(_experiment(experiment_id=experiment_id)):
        raise ApiError(404, f"no experiment with id '{experiment_id}'")
    return experiment_id


def readable_experiments(limit: int = 5000) -> list[dict[str, str]]:
    """The active experiments the user may read (id and name), by name."""
    client, out, token = context.store_client(), [], None
    while len(out) < limit:
        page = client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=1000, page_token=token,
                                         order_by=["name ASC"])
        out += [{"experiment_id": e.experiment_id, "name": e.name} for e in page if can(e.experiment_id)]
        token = page.token
        if not token:
            break
    return out[:limit]


def resolve_sources(source: SourceOptions) -> list[str]:
    """The ids of the source experiments, in order; one :class:`InputError` naming every one that does not exist,
    is deleted or may not be read (in the same words for each).  A search run's source is its experiment."""
    if source.search_run is not None:
        return [_readable_search_run(source.search_run)]
    ids, problems = [], []
    for name in source.experiment_names:
        found = _experiment(name=name)
        if _visible(found):
            ids.append(found.experiment_id)
        else:
            problems.append(f"no experiment named '{name}'")
    for eid in source.experiment_ids:
        found = _experiment(experiment_id=eid) if is_experiment_id(eid) else None
        if _visible(found):
            ids.append(found.experiment_id)
        else:
            problems.append(f"no experiment with id '{eid}'")
    if problems:
        raise InputError(problems, header="Unknown experiment(s):")
    if not ids:
        raise InputError(["name at least one experiment: 'experiment_name' or 'experiment_id'"],
                         header="invalid request:")
    return list(dict.fromkeys(ids))


def resolve_target(value: str | None, sources: list[str]) -> Target:
    """Where the job logs: ``value`` (a name or an id, as the CLI's ``--target-experiment``, by the one rule
    :func:`~..runs.runlog.choose_target`), else the first source.  An existing target needs update; a new one is
    created (if the user may) only when the job is accepted.

    The rule is given the experiment of the id only when the user may read it: an id they may not read is refused
    exactly as one that does not exist (a number never names a new experiment).  Names are not secret in MLflow
    (creating an experiment tells whether the name is taken), so the rule is given the experiment of the name
    whoever may read it, and an existing target the user may not update is refused in the same words whether or not
    they may read it (before telling whether it is deleted)."""
    if not value:
        if not can(sources[0], "update"):
            raise ApiError(403, f"no permission to log runs into experiment {sources[0]} (the first source); "
                                "choose a 'target_experiment' you may update")
        _check_artifact_store(_experiment(experiment_id=sources[0]), f"{sources[0]} (the first source)")
        return Target(sources[0])
    by_id = _experiment(experiment_id=value) if is_experiment_id(value) else None
    found = choose_target(value, by_id if by_id is not None and can(by_id.experiment_id) else None,
                          _experiment(name=value))
    if found is not None:
        if not can(found.experiment_id, "update"):
            raise ApiError(403, f"no permission to log runs into experiment '{value}'")
        _check_artifact_store(found, f"'{value}'")
        return Target(usable_target(found, value))
    if not _can_create_experiment():
        raise ApiError(403, f"no permission to create the experiment '{value}'")
    return Target(None, value)


def _check_artifact_store(experiment, named: str) -> None:
    """Under basic-auth, a job logs only into an experiment whose artifacts the server keeps in that experiment's
    own folder of its artifact store (:func:`~..vocabulary.mlflow_internals.is_own_artifact_folder`: as MLflow
    makes it for an experiment created without a location), refused with 403 before any work.  The job writes its
    artifacts from the server's machine with the server's own access (to a location of this machine, another
    bucket), or through the server's artifact route with the user's credentials (to another experiment's folder,
    or, past a ``..``, to another route of the server): whoever creates an experiment chooses its location.  Asked
    only of a user who may update the experiment."""
    if auth_enabled() and not mlflow_internals.is_own_artifact_folder(experiment.experiment_id,
                                                                      experiment.artifact_location):
        own = mlflow_internals.own_artifact_folder(experiment.experiment_id)
        raise ApiError(403, f"experiment {named} keeps its artifacts at {redact_uri(experiment.artifact_location)}, "
                            f"not in its own folder of this server's artifact store ({redact_uri(own)}), where the "
                            "server's jobs write; choose a 'target_experiment' created with the server's default "
                            "artifact location")


def create_target(target: Target) -> str:
    """The target's experiment id, creating it (in the server's own store, with its default artifact root) when
    it is new, and granting its creator MANAGE as MLflow's own create-experiment does."""
    if target.experiment_id is not None:
        return target.experiment_id
    experiment_id = mlflow_internals.tracking_store().create_experiment(target.name)
    user = current_user()
    if user and auth_enabled():
        from mlflow.server import auth

        auth.store.grant_user_permission(user, "experiment", str(experiment_id), auth.MANAGE.name)
    return experiment_id


# --------------------------------------------------------------------------------------------------- runs


def _readable_search_run(run_id: str) -> str:
    """The experiment of the run ``run_id`` (a scikit-learn search, read by the job), when the user may read it;
    else the one refusal of a run that does not exist."""
    if (experiment_id := _readable_experiment_of(run_id)) is None:
        raise InputError([f"no run '{run_id[:64]}'"], header="Unknown search run:")
    return experiment_id


def _readable_experiment_of(run_id: str) -> str | None:
    """The experiment of the run when it exists, is active and the user may read it, else None (absent and
    forbidden alike).  The run is read only to learn its experiment."""
    run = _run_or_none(run_id)
    readable = run is not None and run.info.lifecycle_stage == "active" and _visible(_experiment(
        experiment_id=run.info.experiment_id))
    return run.info.experiment_id if readable else None


def _readable_run(run_id: str):
    """The comparison (or matrix) run ``run_id`` when the user may read it; else the one 404 of a run that does not
    exist."""
    run = _run_or_none(run_id)
    if run is None or run.data.tags.get(T.KIND) not in T.KINDS or not can(run.info.experiment_id):
        raise ApiError(404, no_such_run(run_id))
    return run


def _run_or_none(run_id: str):
    try:
        return context.store_client().get_run(run_id)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            return None
        raise


# --------------------------------------------------------------------------------------------------- MLflow's table


def register_with_mlflow_auth(routes: Iterable[tuple[str, str]]) -> None:
    """Give MLflow's basic-auth a validator for every ``(path, method)`` of the plugin, so that under its default
    ``MLFLOW_BASIC_AUTH_FAIL_CLOSED=true`` a signed-in non-admin reaches :func:`authorize`, which applies
    :data:`RULES` (a validator can only answer 403, and "may not read" must look like "does not exist")."""
    for path, method in routes:
        mlflow_internals.register_auth_validator(path, method, _checked_by_the_plugin)


def _checked_by_the_plugin() -> bool:
    """MLflow's validator for the plugin's routes: the user is signed in (MLflow checked that); the route's
    permission is checked next, by :func:`authorize`."""
    return True
