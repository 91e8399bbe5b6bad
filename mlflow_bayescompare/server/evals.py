"""The server's comparison of evaluation runs: the experiment's evaluation runs for the page to pick from, and
accepting a job whose permission the hook checked (:func:`.permissions.readable_runs`).

Accepting it runs the pipeline's own pre-flight on the server's store (:func:`..pipeline.evals.check_evaluation_runs`:
the runs read as the job will read them, every option checked against them; the reader's permission hook is
:func:`.permissions.can`, so a run of an experiment the user may not read is "not found" there too), then takes a
place in the queue, creates a new target experiment and the RUNNING run, and submits the job: a request refused
(400, 403, 404, 503) writes nothing.
"""

from __future__ import annotations

import dataclasses
import json

from ..families import eval_test
from ..pipeline.evals import check_evaluation_runs
from ..reads.eval_runs import evaluation_runs
from ..runs.runlog import start_run
from ..shared.run_content import fit_tag, run_name
from ..vocabulary import tags as T
from ..vocabulary.outcomes import json_safe
from . import context, permissions
from .accept import job_uri, submit_started
from .jobs import JobSpec
from .owners import owner_tags
from .requests import max_results_arg
from .serialize import accepted, json_response

__all__ = ["accept_evals", "list_evaluation_runs", "TEST"]

TEST = eval_test().name  # the test's name in the family table: the runs' bayescompare.test


def list_evaluation_runs():
    """``GET …/api/evaluation-runs?experiment_id=``: the experiment's evaluation runs, newest first (the route's
    permission: read on the experiment)."""
    [experiment_id] = permissions.granted().experiment_ids
    runs = evaluation_runs(context.store_client(), experiment_id, max_results_arg(default=100, most=500))
    return json_response({"experiment_id": experiment_id, "runs": runs})


def accept_evals(granted: permissions.Granted):
    """Start the comparison (or ranking) of evaluation runs of ``granted``: 202 with where to follow it."""
    options, store, settings = granted.evals, context.store_client(), context.settings()
    plan = check_evaluation_runs(options, tracking_uri=store.tracking_uri, can_read=permissions.can)
    with context.runner().reserve() as submit:
        target = permissions.create_target(granted.target)
        run_id = start_run(store, target, name=_name(options, plan), tags=_tags(options, plan, granted.experiment_ids),
                           stage="queued")
        spec = JobSpec(kind="evals", run_id=run_id, source=None, fit=None, models=tuple(plan.systems),
                       evals=dataclasses.replace(options, target_experiment=str(target)),
                       tracking_uri=job_uri(), state_dir=str(settings.state_dir), slots=settings.max_jobs,
                       credentials=permissions.credentials())
        submit_started(submit, store, run_id, spec)
    return accepted(run_id, target)


def _name(options, plan) -> str:
    """The name the job's run will keep (as its bundle names it)."""
    if not options.ranked:
        return run_name(*plan.systems, ", ".join(plan.scorers))
    return f"ranking of {len(plan.systems)} evaluation runs · {', '.join(plan.scorers)}"


def _tags(options, plan, experiments: list[str]) -> dict[str, str]:
    record = {"kind": "evals", **options.to_dict()}
    tags = {T.KIND: "ranking" if options.ranked else "comparison", T.TEST: TEST, T.METRIC: ",".join(plan.scorers),
            T.SOURCE_EXPERIMENTS: ",".join(experiments), T.SOURCE_RUNS: ",".join(options.run_ids),
            T.JOB_REQUEST: fit_tag(json.dumps(json_safe(record), default=str), 5000), **owner_tags()}
    if options.ranked:
        tags.update({T.RANKING: TEST, T.MODELS: fit_tag(T.joined_names(plan.systems))})
    else:
        tags.update({T.MODEL_A: plan.systems[0], T.MODEL_B: plan.systems[1], T.RUN_A: options.run_a,
                     T.RUN_B: options.run_b})
    if options.claim is not None:
        tags[T.REQUIRE] = f"{options.claim}@{options.threshold:g}"
    if user := permissions.current_user():
        tags[T.USER] = user
    return tags
