"""The pipeline of evaluation runs: pre-flight (read the runs as MLflow recorded them, check the request against
them: :func:`check_evaluation_runs`) → the paired models (:mod:`..families.evals`) → [across several suites, the
hierarchical test for the next suite] → the run → log.

:func:`compare_evaluation_runs` compares run B with run A, scorer by scorer, :func:`rank_evaluation_runs` ranks
two or more, and :func:`require_evaluations` is the gate (the claims of ``compare-evals --require``) for a pytest
test, an ``@mlflow.test`` function or a pipeline step.  Everything that can refuse a request (the runs readable and
evaluation runs, the scorers, every option, the target experiment) is checked before a run is written; the command
line and the server's jobs call these.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..families import eval_test, pair_test
from ..families.evals.gates import check as gate_check
from ..families.evals.run import engine_settings, suite_settings
from ..families.evals.suites import suite_inputs
from ..reads.evaluations import EvaluationRead, read_evaluations
from ..runs import runlog
from ..vocabulary import claims
from ..vocabulary import mlflow_internals as mi
from ..vocabulary import tags as T
from ..vocabulary.console import log as console
from ..vocabulary.errors import InputError
from ..vocabulary.options import EvalOptions, from_keywords
from ..vocabulary.optionspec import clean_field
from ..vocabulary.progress import Progress, notify
from .outcomes import EvalsOutcome
from .work import begin, failing_run

__all__ = ["EvalPlan", "check_evaluation_runs", "compare_evaluation_runs", "rank_evaluation_runs",
           "require_evaluations", "claim_reports", "claim_dict", "EvalsOutcome"]


@dataclass
class EvalPlan:
    """What the pre-flight read and resolved: the tidy table, what was read, the systems (labels of the runs, in
    order), the scorers compared and the reference of a ranking (a system, or None for the leader)."""

    table: pd.DataFrame
    read: EvaluationRead
    systems: list[str]
    scorers: list[str]
    vs: str | None = None


def check_evaluation_runs(options: EvalOptions, *, tracking_uri: str | None = None,
                          can_read: Callable[[str], bool] | None = None,
                          progress: Progress | None = None) -> EvalPlan:
    """The pre-flight of a request: read the runs (:func:`..reads.evaluations.read_evaluations`; ``can_read``:
    the server's permission check, an unreadable run answered as an absent one), then check the options against
    what was read (the family's ``check``).  Reads only; every problem is an :class:`InputError`."""
    table, read = read_evaluations(list(options.run_ids), pair_key=options.pair_key, cluster=options.cluster,
                                   suite=options.suite, scorers=list(options.scorers) or None,
                                   table_artifact=options.table_artifact, tracking_uri=tracking_uri,
                                   can_read=can_read, progress=progress)
    systems = read.systems
    vs = _reference(options.vs, read)
    scorers = eval_test().part("check")(table, systems, options)
    return EvalPlan(table, read, systems, scorers, vs)


def _reference(vs: str | None, read: EvaluationRead) -> str | None:
    """The system ``vs`` names (a run id or a run's label), None for the leader (``best``)."""
    if vs in (None, "best"):
        return None
    found = [r.system for r in read.runs if vs in (r.run_id, r.system)]
    if not found:
        raise InputError(f"vs names {vs!r}, none of the runs ranked ({', '.join(repr(r.run_id) for r in read.runs)})",
                         header="invalid evaluation settings:")
    return found[0]


def compare_evaluation_runs(run_a: str | None = None, run_b: str | None = None, *,
                            options: EvalOptions | None = None, log: bool = True, tracking_uri: str | None = None,
                            run_id: str | None = None, progress: Progress | None = None,
                            can_read: Callable[[str], bool] | None = None, **keywords) -> EvalsOutcome:
    """Is evaluation run B better than evaluation run A, scorer by scorer, on the items both evaluated?

    Reads the runs as MLflow recorded them (``mlflow.genai.evaluate``'s traces and assessments,
    ``mlflow.models.evaluate``'s table, or a long table), pairs their items, and answers per scorer with the exact
    paired model of its kind (:func:`..families.evals.compare_evaluations`): P(A better), P(rope), P(B better),
    B − A with its 95% HDI, the verdict, about how many more items would decide an inconclusive one; across scorers
    one joint probability; across several suites (``suite``) the hierarchical test for the next suite.  With
    ``log=True`` it logs a comparison run into ``target_experiment`` (default: run A's experiment).  ``keywords``
    are fields of :class:`~..vocabulary.options.EvalOptions` (``scorers``, ``rope``, ``kinds``, ``direction``,
    ``cluster``, ``pair_key``, ``suite``, ``threshold``, ``draws``, ``seed``, ``claim`` …); ``run_id`` a RUNNING
    run to fill (the server's job record)."""
    options = _options(options, keywords, run_a=run_a, run_b=run_b)
    if options.ranked:
        raise InputError("compare_evaluation_runs compares run A with run B: rank_evaluation_runs ranks runs")
    return _pipeline(options, log, tracking_uri, run_id, progress, can_read)


def rank_evaluation_runs(runs: Sequence[str] = (), *, vs: str | None = None, options: EvalOptions | None = None,
                         log: bool = True, tracking_uri: str | None = None, run_id: str | None = None,
                         progress: Progress | None = None, can_read: Callable[[str], bool] | None = None,
                         **keywords) -> EvalsOutcome:
    """Rank evaluation runs on the items they share, scorer by scorer (:func:`..families.evals.rank_evaluations`):
    each run's P(best) and mean score, every run against ``vs`` (a run id, or ``best``/None for the leader), and a
    sentence that says plainly when no pair is decided; logged as a ranking run.  The rest as
    :func:`compare_evaluation_runs`."""
    options = _options(options, keywords, runs=tuple(runs) or None, vs=vs)
    if not options.ranked:
        raise InputError("rank_evaluation_runs ranks runs (runs=[...]); compare_evaluation_runs compares two")
    return _pipeline(options, log, tracking_uri, run_id, progress, can_read)


def _options(options: EvalOptions | None, keywords: dict, **given) -> EvalOptions:
    (built,) = from_keywords({**keywords, **{k: v for k, v in given.items() if v is not None}}, (EvalOptions, options))
    return built


def _pipeline(options: EvalOptions, log: bool, tracking_uri, run_id, progress, can_read) -> EvalsOutcome:
    client, progress, started = begin(tracking_uri, run_id, progress)
    with failing_run(client, run_id):
        if log and run_id is None:
            runlog.check_target(client, options.target_experiment)
        plan = check_evaluation_runs(options, tracking_uri=client.tracking_uri, can_read=can_read, progress=progress)
        outcome = _fitted(options, plan, progress)
        if log or run_id is not None:
            notify(progress, "reporting")
            target = client.get_run(run_id).info.experiment_id if run_id is not None else \
                runlog.resolve_target(client, options.target_experiment, [plan.read.runs[0].experiment_id])
            with tempfile.TemporaryDirectory(prefix="bayescompare-evals-") as folder:
                bundle = _bundle(outcome, options, Path(folder) / "run")
                outcome.run_id = runlog.log_bundle(client, bundle, experiment_id=target, run_id=run_id,
                                                   start_time=started, progress=progress)
            outcome.experiment_id = target
            _log_inputs(client, outcome.run_id, plan.read)
    return outcome


def _fitted(options: EvalOptions, plan: EvalPlan, progress) -> EvalsOutcome:
    family, settings = eval_test(), engine_settings(options, plan.scorers)
    what = f"{len(plan.scorers)} scorer(s) on {plan.table['item'].nunique()} paired items"
    notify(progress, "sampling", f"{' vs '.join(plan.systems)}: {what} (exact, no MCMC)")
    if options.ranked:
        result = family.part("rank")(plan.table, plan.systems, plan.scorers, vs=plan.vs, **settings)
        return EvalsOutcome(result, ",".join(plan.scorers), _experiments(plan.read), read=plan.read, table=plan.table)
    result = family.part("engine")(plan.table, *plan.systems, list(plan.scorers), **settings)
    next_suite = _next_suite(options, plan, result.settings["seed"], progress) if options.suite else None
    return EvalsOutcome(result, ",".join(plan.scorers), _experiments(plan.read), read=plan.read, table=plan.table,
                        next_suite=next_suite)


def _next_suite(options: EvalOptions, plan: EvalPlan, seed: int, progress) -> dict:
    """Per scorer, the hierarchical test across the suites (Corani et al. 2017): the answer for the next suite."""
    hierarchical = pair_test("hierarchical").part("engine")
    out = {}
    for scorer in plan.scorers:
        notify(progress, "sampling", f"{scorer}: the hierarchical test across suites")
        inputs = suite_inputs(plan.table, *plan.systems, scorer, **suite_settings(options, scorer))
        out[scorer] = hierarchical(**inputs, threshold=options.threshold, seed=seed, progress=progress)
    return out


def _experiments(read: EvaluationRead) -> list[str]:
    return list(dict.fromkeys(r.experiment_id for r in read.runs))


def _bundle(outcome: EvalsOutcome, options: EvalOptions, folder: Path):
    """The run of the outcome, with the request's options as params and the claim's report, when one was asked."""
    family, request = eval_test(), _request_params(options)
    if options.ranked:
        bundle = family.part("ranking_run")(outcome.result, outcome.table, outcome.read, request=request,
                                            directory=folder)
    else:
        bundle = family.part("run")(outcome.result, outcome.table, outcome.read, next_suite=outcome.next_suite,
                                    request=request, directory=folder)
    if options.claim is not None:
        joint = claim_reports(outcome, options.claim)["joint"]
        bundle.tags[T.REQUIRE] = f"{options.claim}@{joint.threshold:g}"
        bundle.metrics["p_require"] = float(joint.probability)
    return bundle


def _request_params(options: EvalOptions) -> dict[str, str]:
    """The request's own options (how the runs were read and paired), as params."""
    fields = ("cluster", "pair_key", "suite", "table_artifact", "scorers", "kinds", "direction", "claim")
    return {f"request.{name}": value for name, value in options.to_params().items() if name in fields}


def _log_inputs(client, run_id: str, read: EvaluationRead) -> None:
    """The source runs' dataset inputs (``mlflow.genai.evaluate`` logs its dataset) as the comparison run's inputs,
    each once, in the context ``compared``: MLflow's UI then lists what was compared.  A failure is a warning."""
    try:
        datasets = {}
        for r in read.runs:
            for entry in client.get_run(r.run_id).inputs.dataset_inputs:
                datasets.setdefault((entry.dataset.name, entry.dataset.digest), entry.dataset)
        mi.log_compared_inputs(client, run_id, list(datasets.values()))
    except Exception as exc:  # the run is logged; its inputs are a convenience of MLflow's UI
        console.warning("could not log the compared datasets as the run's inputs: %s", exc)


# --------------------------------------------------------------------------------------------------- gates


def claim_reports(outcome, claim) -> dict:
    """The claim (``compare-evals --require``'s grammar: :data:`..vocabulary.claims.EVAL_CLAIM_WORDS` for every
    scorer, per scorer, or ``improves``) about B on a comparison's result: ``joint``, the one probability that every
    part holds at once (:func:`..families.evals.gates.check`), and ``scorers``, each gated scorer's own report."""
    result = getattr(outcome, "result", outcome)
    parsed = claims.eval_claim(clean_field(EvalOptions, "claim", claim), list(result.by_scorer))
    threshold = next(iter(result.by_scorer.values())).settings["threshold"]
    joint = gate_check(result, parsed.claims, better_on=parsed.better_on, threshold=threshold)
    scorers = {s: gate_check(result, {s: c}, threshold=threshold) for s, c in parsed.claims.items()}
    return {"joint": joint, "scorers": scorers, "text": parsed.text}


def claim_dict(reports: dict) -> dict:
    """The JSON of :func:`claim_reports`: the claim as asked, the joint report, each scorer's."""
    return {**reports["joint"].to_dict(), "claim": reports["text"], "statement": reports["joint"].claim,
            "scorers": {s: r.to_dict() for s, r in reports["scorers"].items()}}


def require_evaluations(outcome, claim: str = claims.IMPROVES, *, threshold: float | None = None) -> claims.Report:
    """Fail (``AssertionError``, with the probability and each gated scorer's) unless the posterior supports
    ``claim`` about B at ``threshold`` (default: the comparison's), as one joint probability; the report otherwise.
    ``claim``: ``improves`` (B not worse than A on every scorer, better on one), ``better``, ``not-worse`` or
    ``equivalent`` on every scorer, or per scorer (``"correctness=better,latency=not-worse"``)::

        outcome = compare_evaluation_runs(baseline_run, candidate_run, log=False, seed=1)
        require_evaluations(outcome, "improves")
    """
    reports = claim_reports(outcome, claim)
    joint = reports["joint"]
    if threshold is not None:
        joint = claims.Report(joint.claim, joint.probability, threshold)
    if not joint.supported:
        each = "; ".join(f"{s}: {r.probability:.3f}" for s, r in reports["scorers"].items())
        raise AssertionError(f"{joint.failure()} (each scorer alone: {each})")
    return joint
