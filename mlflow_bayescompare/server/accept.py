"""Accepting a job whose permission is known (:mod:`.permissions`): the checks the command line makes before
sampling, then a place in the queue, then the target and the run, then the submit.

Every refusal comes before anything is written: the scores are collected and every pair's tensor is built from the
server's own store (reads only; the collector's and the tensor's problems are a 400), the queue is checked (503)
atomically with the submit, and only then is a new target experiment created and the RUNNING run started.
"""

from __future__ import annotations

import dataclasses
import json

from ..tracking import tags as T
from ..tracking.bundle import fit_tag, models_run_name, run_name
from ..tracking.collect import collect_scores, discover
from ..compare import one_run_each, signed_rank_applies
from ..errors import InputError
from ..matrix import model_pairs
from ..hierarchical.prepare import correlations
from ..ranking.engine import read_scores
from ..result import json_safe
from ..tracking.runlog import fail_if_running, start_run
from . import context, permissions
from .jobs import JobSpec
from .owners import owner_tags
from .requests import JobRequest, check_model_count, with_sources
from .serialize import accepted

__all__ = ["accept", "check_data"]


def accept(granted: permissions.Granted):
    """Start the job of ``granted`` (sources resolved, permission checked): 202 with where to follow it."""
    job = with_sources(granted.job, granted.experiment_ids)
    job = dataclasses.replace(job, models=check_data(job))
    store, settings = context.store_client(), context.settings()
    with context.runner().reserve() as submit:
        target = permissions.create_target(granted.target)
        name = _run_name(job)
        run_id = start_run(store, target, name=name, tags=_job_tags(job), stage="queued")
        spec = JobSpec(kind=job.kind, run_id=run_id, models=job.models, fit=job.fit, pair_reports=job.pair_reports,
                       source=dataclasses.replace(job.source, target_experiment=str(target)),
                       tracking_uri=context.loopback_uri(), state_dir=str(settings.state_dir), slots=settings.max_jobs,
                       credentials=permissions.credentials())
        try:
            submit(spec)
        except BaseException as exc:
            fail_if_running(store, run_id, f"not started: {type(exc).__name__}: {exc}")
            raise
    return accepted(run_id, target)


def check_data(job: JobRequest) -> tuple[str, ...]:
    """What the command line checks before sampling, on the server's own store: the runs and scores of the models
    (every model found, for a matrix or a ranking), then each pair's tensor (or per-dataset means, when the
    signed-rank test will answer), or the ranking's table of scores.  The models of the job."""
    client, source = context.store_client(), job.source
    ids = list(source.experiment_ids)
    models = job.models or tuple(discover(client, ids, model_tag=source.model_tag,
                                          dataset_tag=source.dataset_tag)["models"])
    if job.kind == "matrix":
        check_model_count(models, context.settings())
    collected = collect_scores(client, ids, source.metric, list(models), filter_string=source.filter_string,
                               layout=source.layout, model_tag=source.model_tag, dataset_tag=source.dataset_tag,
                               folds=source.folds)
    if job.kind == "ranking":
        _check_ranking(collected, models, job)
    else:
        _check_pairs(collected, model_pairs(models) if job.kind == "matrix" else [models], job)
    return tuple(models)


def _check_pairs(collected, pairs: list[tuple[str, str]], job: JobRequest) -> None:
    """Each pair's data as its test will read it; one pair's problems in the command line's own words."""
    source, problems = job.source, []
    for a, b in pairs:
        try:
            if signed_rank_applies(job.fit.test, collected.layout):
                collected.means(a, b, drop_incomplete=source.drop_incomplete, on_duplicate=source.on_duplicate)
                continue
            tensor = collected.tensor(a, b, drop_incomplete=source.drop_incomplete, on_duplicate=source.on_duplicate)
            correlations(tensor.datasets, tensor.folds, job.fit.rho)
        except InputError as exc:
            if len(pairs) == 1:
                raise  # the command line's own message
            problems += [f"{a} vs {b}: {p}" for p in exc.problems]
    if problems:
        raise InputError(problems, header="Cannot compare every pair:")


def _check_ranking(collected, models: tuple[str, ...], job: JobRequest) -> None:
    """The ranking's scores as :func:`..compare.rank_runs` reads them: three models at least, every one present,
    one run per model and dataset, a score for each (the ranking's own words)."""
    rank, source = job.fit, job.source
    scores = one_run_each(collected.scores, source.on_duplicate)
    read_scores(scores, models=list(models), greater_is_better=rank.greater_is_better,
                drop_incomplete=source.drop_incomplete, skip_missing=rank.skip_missing)


def _run_name(job: JobRequest) -> str:
    """The name the job's run will keep (as its bundle names it)."""
    if job.kind == "comparison":
        return run_name(*job.models, job.source.metric)
    return models_run_name(job.kind, len(job.models), job.source.metric)


def _job_tags(job: JobRequest) -> dict[str, str]:
    source = job.source
    record = {"kind": job.kind, **source.to_dict(), **job.fit.to_dict(), "models": list(job.models),
              "claim": job.claim, **({"pair_reports": job.pair_reports} if job.kind == "matrix" else {})}
    tags = {
        T.KIND: job.kind,
        T.METRIC: source.metric,
        T.SOURCE_EXPERIMENTS: ",".join(source.experiment_ids),
        T.JOB_REQUEST: fit_tag(json.dumps(json_safe(record), default=str), 5000),
        **owner_tags(),
    }
    if job.kind == "comparison":
        tags[T.MODEL_A], tags[T.MODEL_B] = job.models
        if job.claim:
            tags[T.REQUIRE] = f"{job.claim}@{job.fit.threshold}"
    else:
        tags[T.MODELS] = fit_tag(",".join(job.models))
    user = permissions.current_user()
    if user:
        tags[T.JOB_USER] = tags[T.USER] = user
    return tags
