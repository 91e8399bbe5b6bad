"""Accepting a job whose permission is known (:mod:`.permissions`): the pipeline's own pre-flight, then a place in
the queue, then the target and the run, then the submit.

Every refusal comes before anything is written: the pre-flight (:mod:`..pipeline.preflight`, as the command line and
the job itself run it) reads the server's own store (reads only; its problems are a 400), the queue is checked (503)
atomically with the submit, and only then is a new target experiment created and the RUNNING run started.
"""

from __future__ import annotations

import dataclasses
import json

from ..pipeline import preflight
from ..runs.runlog import fail_if_running, start_run
from ..shared.run_content import fit_tag, models_run_name, run_name
from ..vocabulary import tags as T
from ..vocabulary.console import redact_uri
from ..vocabulary.outcomes import json_safe
from . import context, permissions
from .jobs import JobSpec
from .owners import owner_tags
from .requests import JobRequest, check_model_count, with_sources
from .serialize import accepted

__all__ = ["accept", "check_data", "job_uri", "submit_started"]


def accept(granted: permissions.Granted):
    """Start the job of ``granted`` (sources resolved, permission checked): 202 with where to follow it."""
    job = with_sources(granted.job, granted.experiment_ids)
    job = dataclasses.replace(job, models=check_data(job))
    store, settings = context.store_client(), context.settings()
    with context.runner().reserve() as submit:
        target = permissions.create_target(granted.target)
        name = _run_name(job)
        run_id = start_run(store, target, name=name, tags=_job_tags(job, granted.experiment_ids),
                           stage="queued")
        spec = JobSpec(kind=job.kind, run_id=run_id, models=job.models, fit=job.fit, pair_reports=job.pair_reports,
                       refresh=job.refresh,
                       source=dataclasses.replace(job.source, target_experiment=str(target)),
                       tracking_uri=job_uri(), state_dir=str(settings.state_dir), slots=settings.max_jobs,
                       engine=settings.engine, credentials=permissions.credentials())
        submit_started(submit, store, run_id, spec)
    return accepted(run_id, target)


def submit_started(submit, store, run_id: str, spec: JobSpec) -> None:
    """Hand ``spec`` to the queue (``submit``, of ``context.runner().reserve()``); the RUNNING run ``run_id`` started
    for it ends FAILED with the reason when it cannot be."""
    try:
        submit(spec)
    except BaseException as exc:
        fail_if_running(store, run_id, f"not started: {type(exc).__name__}: {exc}")
        raise


def job_uri() -> str:
    """How the job reaches this server: with the requesting user's credentials under basic-auth, so without any
    user and password the configured URI carries (``requests`` would let those replace the header MLflow sets)."""
    uri = context.loopback_uri()
    return redact_uri(uri) if permissions.credentials() else uri


def check_data(job: JobRequest) -> tuple[str, ...]:
    """The pipeline's pre-flight of the job on the server's own store, with the server's limit on the models of a
    matrix (every model found, when none are named) checked before their scores are read.  The models of the job."""
    client = context.store_client()
    if job.kind != "matrix":  # a comparison or a ranking, on each of its metrics
        checked = preflight.check_metrics(client, job.kind, job.source, job.fit, job.models)
        return tuple(next(iter(checked.values())).plan.models)
    planned = preflight.plan(client, job.kind, *preflight.one_metric(job.source, job.fit), job.models)
    check_model_count(tuple(planned.models), context.settings())
    preflight.check(client, planned)
    return tuple(planned.models)


def _run_name(job: JobRequest) -> str:
    """The name the job's run will keep (as its bundle names it)."""
    if job.kind == "comparison":
        return run_name(*job.models, job.source.metric)
    return models_run_name(job.kind, len(job.models), job.source.metric)


def _job_tags(job: JobRequest, sources: list[str]) -> dict[str, str]:
    source = job.source
    record = {"kind": job.kind, **source.to_dict(), **job.fit.to_dict(), "models": list(job.models),
              "claim": job.claim,
              **({"pair_reports": job.pair_reports, "refresh": job.refresh} if job.kind == "matrix" else {})}
    tags = {
        T.KIND: job.kind,
        T.METRIC: source.metric,
        T.SOURCE_EXPERIMENTS: ",".join(sources),
        T.JOB_REQUEST: fit_tag(json.dumps(json_safe(record), default=str), 5000),
        **owner_tags(),
    }
    if job.kind == "comparison":
        tags[T.MODEL_A], tags[T.MODEL_B] = job.models
        if job.claim:
            tags[T.REQUIRE] = f"{job.claim}@{job.fit.threshold}"
    else:
        tags[T.MODELS] = fit_tag(T.joined_names(job.models))
    user = permissions.current_user()
    if user:
        tags[T.USER] = user
    return tags
