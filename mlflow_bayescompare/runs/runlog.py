"""Log step: write a :class:`~.bundle.Bundle` to an MLflow run, and keep a run's state while work fills it.

A run is created with the real start time of the work, and only once everything it will hold is computed, so a
failure never leaves a FINISHED run with half its artifacts; a run created beforehand (the server's job record, or
``compare_runs(run_id=...)``) follows the work in its stage tag and ends FAILED, with the reason, if it fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlflow.entities import Metric, Param, RunStatus, RunTag
from mlflow.exceptions import MlflowException
from mlflow.utils.time import get_current_time_millis

from ..shared.run_content import Bundle, fit_tag
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.console import redact_uri
from ..vocabulary.errors import BayesCompareError, InputError
from ..vocabulary.progress import STAGES, Progress

__all__ = ["log_bundle", "write_bundle", "start_run", "set_stage", "stage_recorder", "skipped_stages", "fail_run",
           "fail_if_running", "resolve_target", "check_target", "existing_target", "choose_target", "usable_target"]


#: the longest run name MLflow's SQL stores keep (``runs.name`` is VARCHAR(250); sqlite does not check, PostgreSQL
#: and MySQL refuse a longer one)
RUN_NAME_LENGTH = 250
#: the longest experiment name they keep (``experiments.name`` is VARCHAR(256); MLflow's own check allows 500)
EXPERIMENT_NAME_LENGTH = 256


def start_run(client, experiment_id: str, *, name: str, tags: dict[str, str], stage: str = "queued",
              start_time: int | None = None) -> str:
    """Create a RUNNING run (the job record a server hands back before the work starts)."""
    run = client.create_run(str(experiment_id), start_time=start_time, tags={**tags, T.STAGE: stage},
                            run_name=_stored_name(name))
    return run.info.run_id


def _stored_name(name: str) -> str:
    """A run's name as every store keeps it: cut to :data:`RUN_NAME_LENGTH`, ending with ``…`` when cut (a name
    built from long model or metric names; the run's tags hold them in full)."""
    return name if len(name) <= RUN_NAME_LENGTH else name[:RUN_NAME_LENGTH - 1] + "…"


def set_stage(client, run_id: str, stage: str, skipped: Sequence[str] | None = None) -> None:
    """Record how far the work on ``run_id`` has got and, when given, the stages it went past without doing
    (``skipped``: ``compiling`` when the Stan program was in the cache)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    tags = [RunTag(T.STAGE, stage)] + ([] if skipped is None else [RunTag(T.SKIPPED, ",".join(skipped))])
    client.log_batch(run_id, tags=tags)


def stage_recorder(client, run_id: str | None, then: Progress | None = None) -> Progress | None:
    """A progress hook that records each new stage in the run's stage tag, and the stages passed without being
    reached (:func:`skipped_stages`) whenever they change, then passes it on to ``then``."""
    if run_id is None:
        return then
    seen, skipped = [], []

    def record(stage: str, detail: str | None = None) -> None:
        nonlocal skipped
        if not seen or seen[-1] != stage:
            seen.append(stage)
            now = skipped_stages(seen)
            set_stage(client, run_id, stage, now if now != skipped else None)
            skipped = now
        if then is not None:
            then(stage, detail)

    return record


def skipped_stages(seen: Sequence[str]) -> list[str]:
    """The stages before the furthest one in ``seen`` (after ``queued``, where every job starts) that the work did
    not go through: ``compiling`` when the program came from the cache."""
    furthest = max(STAGES.index(stage) for stage in seen)
    return [stage for stage in STAGES[1:furthest] if stage not in seen]


def fail_run(client, run_id: str, error: BaseException | str) -> None:
    """End ``run_id`` FAILED with ``error`` in the ``bayescompare.error`` tag, without the credentials its URIs may
    carry (MLflow's own errors name the tracking URI as given, password included)."""
    message = redact_uri(error if isinstance(error, str) else (str(error) or type(error).__name__))
    client.log_batch(run_id, tags=[RunTag(T.ERROR, fit_tag(message)), RunTag(T.STAGE, "failed")])
    mlflow_internals.end_run(client, run_id, RunStatus.to_string(RunStatus.FAILED))


def fail_if_running(client, run_id: str, reason: str) -> bool:
    """End ``run_id`` FAILED unless it already ended; True if this call ended it.  A reason already recorded (the
    job's own error, written before its process died) is kept: ``reason`` is recorded only when there is none."""
    run = client.get_run(run_id)
    if run.info.status not in ("RUNNING", "SCHEDULED"):
        return False
    fail_run(client, run_id, run.data.tags.get(T.ERROR) or reason)
    return True


def resolve_target(client, target: str | None, sources: Sequence[str]) -> str:
    """The experiment to log into: ``target`` (:func:`choose_target`; a new name is created), else the first
    source."""
    if not target:
        return str(sources[0])
    found = _named_target(client, target)
    return client.create_experiment(target) if found is None else usable_target(found, target)


def check_target(client, target: str | None) -> None:
    """Refuse now, creating nothing, the ``target`` that :func:`resolve_target` would refuse once the work is done:
    ambiguous, a new name like an id, deleted, or not the user's to log into."""
    if target:
        found = _named_target(client, target)
        if found is not None:
            usable_target(found, target)


def _named_target(client, target: str):
    """The experiment ``target`` names (:func:`choose_target`), None for a new one; refused when unreadable."""
    found = choose_target(target, _experiment_by_id(client, target), _experiment_by_name(client, target))
    if found is _UNREADABLE:
        raise InputError(f"no permission to log runs into experiment '{target}'")
    return found


def existing_target(client, target: str | None, sources: Sequence[str]) -> str | None:
    """The experiment :func:`resolve_target` would log into when it exists already, else None (nothing created)."""
    if not target:
        return str(sources[0])
    found = choose_target(target, _experiment_by_id(client, target), _experiment_by_name(client, target))
    return None if found is None or found is _UNREADABLE else usable_target(found, target)


def _looks_like_id(value: str) -> bool:
    """An experiment id is a number: ASCII digits only."""
    return value.isascii() and value.isdigit()


def choose_target(value: str, by_id, by_name):
    """THE rule for a target experiment given as ``value`` (the command line's, the API's and the server's): the
    experiment it names, or None for a new experiment of that name.  ``by_id`` is the experiment whose id is
    ``value`` (None when there is none, or the user may not read it), ``by_name`` the one named ``value`` (any
    lifecycle stage).  A number is an id when that experiment exists; a number that is the id of one experiment
    and the name of another is refused, and so is a new experiment named like an id (it would later be taken for
    one), or too long for MLflow's SQL stores."""
    if by_id is not None and by_name is not None and by_id.experiment_id != by_name.experiment_id:
        raise InputError(f"target experiment '{value}' is ambiguous: it is the id of one experiment and the name of "
                         "another. Give the target by its name (an experiment named like a number cannot be told "
                         "from an id: rename it)")
    found = by_id if by_id is not None else by_name
    if found is None and _looks_like_id(value):
        raise InputError(f"no experiment with id '{value}'; a new target experiment needs a name that is not a "
                         "number")
    if found is None and len(value) > EXPERIMENT_NAME_LENGTH:
        raise InputError(f"a new target experiment's name may hold at most {EXPERIMENT_NAME_LENGTH} characters (what "
                         f"MLflow's SQL stores keep); got {len(value)}")
    return found


def usable_target(experiment, value: str) -> str:
    """The id of the target ``experiment`` chosen for ``value``, unless it is deleted."""
    if experiment.lifecycle_stage != "active":
        raise InputError(f"experiment '{value}' is deleted; restore it or choose another target")
    return experiment.experiment_id


@dataclass(frozen=True)
class _Unreadable:
    """An experiment that exists, but that the user may not read (MLflow's basic-auth answered 403)."""

    experiment_id: None = None
    lifecycle_stage: str = "active"


_UNREADABLE = _Unreadable()


def _experiment_by_name(client, value: str):
    """The experiment named ``value``; None when there is none, :data:`_UNREADABLE` when the user may not read it."""
    try:
        return client.get_experiment_by_name(value)
    except MlflowException as exc:
        if exc.error_code == "PERMISSION_DENIED":
            return _UNREADABLE
        raise


def _experiment_by_id(client, value: str):
    """The experiment whose id is ``value``; None when ``value`` is no id, or no experiment the user may read has
    it."""
    if not _looks_like_id(value):
        return None
    try:
        return client.get_experiment(value)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "PERMISSION_DENIED"):
            return None
        raise


def log_bundle(client, bundle: Bundle, *, experiment_id: str | None = None, run_id: str | None = None,
               parent_run_id: str | None = None, start_time: int | None = None,
               progress: Progress | None = None, datasets: Sequence = ()) -> str:
    """Write ``bundle`` to a new run in ``experiment_id`` (created now, dated ``start_time``) or to the RUNNING
    ``run_id``, with ``datasets`` (the source runs' dataset inputs) as its inputs; end it FINISHED and return its
    id.  A failure ends the run FAILED and re-raises."""
    run_tags = dict(bundle.tags)
    if parent_run_id:
        run_tags[T.PARENT] = parent_run_id
    if run_id is None:
        run_id = start_run(client, experiment_id, name=bundle.name, tags=run_tags, stage="logging",
                           start_time=start_time)
    else:
        client.update_run(run_id, name=_stored_name(bundle.name))
    try:
        if progress is not None:
            progress("logging")
        write_bundle(client, run_id, bundle, run_tags)
        mlflow_internals.log_compared_inputs(client, run_id, datasets)
        set_stage(client, run_id, "done")
        mlflow_internals.end_run(client, run_id, RunStatus.to_string(RunStatus.FINISHED))
    except BaseException as exc:
        fail_run(client, run_id, exc)
        raise
    return run_id


def write_bundle(client, run_id: str, bundle: Bundle, run_tags: dict[str, str] | None = None) -> None:
    """Log the bundle's tags, params and metrics (one ``log_batch``: MLflow's client splits it into as few calls
    as its per-call limits allow, one for a comparison) and its artifacts."""
    now = get_current_time_millis()
    client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in bundle.metrics.items()],
                     params=[Param(k, v) for k, v in bundle.params.items()],
                     tags=[RunTag(k, v) for k, v in (run_tags or bundle.tags).items()])
    client.log_artifacts(run_id, str(bundle.directory))
    expected = {p.relative_to(bundle.directory).as_posix() for p in bundle.directory.rglob("*") if p.is_file()}
    missing = expected - set(_artifact_paths(client, run_id))
    if missing:
        raise BayesCompareError(f"artifacts missing after upload: {', '.join(sorted(missing))}")


def _artifact_paths(client, run_id: str, path: str | None = None) -> list[str]:
    out = []
    for info in client.list_artifacts(run_id, path):
        out += _artifact_paths(client, run_id, info.path) if info.is_dir else [info.path]
    return out
