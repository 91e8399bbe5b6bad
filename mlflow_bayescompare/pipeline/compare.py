"""Python API of the whole pipeline: pre-flight (collect → tensor: :mod:`.preflight`) → fit → summarise → report
→ log.

:func:`compare_runs` compares two models, :func:`compare_matrix` every pair of several, :func:`rank_runs` ranks
them, :func:`require` turns an outcome into a yes/no for gating a model's promotion (:mod:`..vocabulary.claims`).  A
comparison or a ranking on several metrics (``metric="accuracy,fit_time"``) is one decision: a
:class:`~.outcomes.MetricsOutcome` of one outcome per metric, logged as one run (:mod:`..runs.several`); what they
return is in :mod:`.outcomes`.  The command line and the server's jobs call these.
Options are given as :mod:`..vocabulary.options` objects (``source=``, ``fit=``) or as keywords naming their fields.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..families import pair_test, ranking_model
from ..families.ranking.engine import rank_scores
from ..families.ranking.hierarchical_k.result import pair_fit_of_test
from ..runs import cachekey, runlog
from ..runs.bundle import matrix_bundle
from ..runs.matrix import summarise
from ..runs.several import several_metrics_bundle
from ..sampling import sampler
from ..shared.run_content import models_run_name, run_name
from ..vocabulary import claims
from ..vocabulary.console import about, redact_uri
from ..vocabulary.keys import metric_folder
from ..vocabulary.options import (
    FitOptions,
    MatrixOptions,
    ModelsOptions,
    PairOptions,
    RankOptions,
    SourceOptions,
    from_keywords,
)
from ..vocabulary.outcomes import counted
from ..vocabulary.progress import Progress, notify
from . import pairfits, preflight
from .outcomes import ComparisonOutcome, MatrixOutcome, MetricsOutcome, Outcome, RankingOutcome
from .work import begin, failing_run

__all__ = ["compare_runs", "compare_matrix", "rank_runs", "require", "Outcome", "ComparisonOutcome", "MatrixOutcome",
           "RankingOutcome", "MetricsOutcome"]


def compare_runs(experiment_names: Sequence[str] = (), experiment_ids: Sequence[str] = (), *, model_a: str,
                 model_b: str, source: SourceOptions | None = None, fit: FitOptions | None = None, log: bool = True,
                 tracking_uri: str | None = None, run_id: str | None = None, progress: Progress | None = None,
                 **options) -> ComparisonOutcome | MetricsOutcome:
    """Compare ``model_a`` with ``model_b`` on the per-fold ``metric`` logged in the given experiments (several
    metrics, comma-separated, with ``rope`` and ``direction`` per metric: a :class:`MetricsOutcome`).

    Reads the runs (layout steps/keys/children/means, auto-detected), pairs the folds and runs the test
    :func:`~.preflight.choose_test` picks (``test="auto"``) or the one asked for: the hierarchical test across
    datasets, the Bayesian correlated t-test when the two models share one dataset, the Bayesian signed-rank test
    on the per-dataset means of runs that hold one score each; with ``log=True``, it logs a comparison run into the
    target experiment (default: the first source experiment).
    ``options`` are fields of :class:`~..vocabulary.options.SourceOptions` (``metric``, ``layout``, ``filter_string``
    …) and
    :class:`~..vocabulary.options.FitOptions` (``rope``, ``chains``, ``seed`` …).  ``run_id`` names a RUNNING
    comparison run to
    fill (the server's job record): its stage tag follows the work and it ends FAILED, with the error, if anything
    goes wrong.  ``progress`` hears the stages (see :mod:`..vocabulary.progress`).
    """
    source, fit = _options(experiment_names, experiment_ids, options, (SourceOptions, source), (FitOptions, fit))
    pair = PairOptions(model_a=model_a, model_b=model_b)
    client, progress, started = begin(tracking_uri, run_id, progress)
    with failing_run(client, run_id):
        checked = preflight.check_metrics(client, "comparison", source, fit, (pair.model_a, pair.model_b), progress,
                                          logged=log and run_id is None)
        outcomes = {}
        for metric, one in checked.items():
            with about(metric if len(checked) > 1 else None):
                result, data = _two_model_test(one, one.plan.options, progress, _of_several(metric, checked))
            outcomes[metric] = ComparisonOutcome(result, metric, one.plan.experiment_ids, layout=one.layout,
                                                 tensor=data)  # the plan's options: a search's rho
        if log or run_id is not None:
            notify(progress, "reporting")
            target = _target(client, run_id, source, next(iter(checked.values())).plan.experiment_ids)
            return _logged(client, outcomes, target, run_id, started, progress, lambda o, folder: pairfits.pair_bundle(
                o.result, o.tensor, o.metric, o.experiment_ids, o.layout, run_id=run_id, experiment_id=target,
                directory=folder), _compared(checked, (pair.model_a, pair.model_b)))
    return _one_or_several(outcomes)


def compare_matrix(experiment_names: Sequence[str] = (), experiment_ids: Sequence[str] = (), *,
                   models: Sequence[str] = (), source: SourceOptions | None = None, fit: FitOptions | None = None,
                   log: bool = True, tracking_uri: str | None = None, run_id: str | None = None,
                   progress: Progress | None = None, jobs: int | None = None,
                   matrix_options: MatrixOptions | None = None, **options) -> MatrixOutcome:
    """Compare every pair of ``models`` (default: every model found): a parent run holding the matrix of P(row
    better than column) and P(rope), the pairs table (``pairs.parquet``) and, with three or more models, their
    ranking (P(best), mean rank: :func:`rank_runs`; the joint correlated-t model on one dataset), and one child
    comparison run per pair up to ``child_runs_up_to`` pairs (or always: ``child_runs=True``).  The pairs are
    compared by the test :func:`compare_runs` would choose (:func:`~.preflight.choose_test`): the hierarchical test
    on per-fold scores, the correlated t-test on a pair that shares one dataset, the signed-rank test on runs that
    hold one score each.

    A pair's run holds its numbers, tables and posterior; with ``pair_reports=True`` (a field of
    :class:`~..vocabulary.options.ModelsOptions`) also the figures, HTML report and PSIS-LOO model check of a
    comparison run.
    Pairs warm up for :data:`~..vocabulary.options.MATRIX_PAIR_WARMUP` iterations per chain unless ``warmup`` is given
    (and a pair whose chains then disagree again for :data:`~..vocabulary.options.WARMUP`:
    :func:`~..families.hierarchical.engine.hierarchical_test`).
    Pairs are fitted, and their runs' content built, in up to ``jobs`` processes (default: one per CPU; they are
    spawned, so a script calling this with several jobs needs the ``if __name__ == "__main__":`` guard), or with
    ``engine="ray"`` by up to ``jobs`` Ray workers of the cluster at ``ray_address`` (default: one per CPU of the
    cluster).  A pair whose data, options, Stan program and package version match a row of an earlier matrix's
    pairs table in the target experiment, signed for the same requester (:mod:`..runs.cachekey`), is read from
    there instead (``refresh=True``: fit them all again).
    ``run_id`` names a RUNNING parent run to fill (the server's job record).  Other arguments as
    :func:`compare_runs`; ``matrix_options`` (or its fields as keywords) a :class:`~..vocabulary.options.MatrixOptions`.
    """
    source, fit, chosen, how = _options(experiment_names, experiment_ids, {**options, "models": tuple(models)},
                                        (SourceOptions, source), (FitOptions, fit), (ModelsOptions, None),
                                        (MatrixOptions, matrix_options))
    source, fit = preflight.one_metric(source, fit)
    client, progress, started = begin(tracking_uri, run_id, progress)
    with failing_run(client, run_id), tempfile.TemporaryDirectory(prefix="bayescompare-matrix-") as folder:
        planned = preflight.plan(client, "matrix", source, fit, chosen.models, progress, logged=log and run_id is None)
        ids, models, pairs, fit = planned.experiment_ids, planned.models, planned.pairs, planned.options
        log = log or run_id is not None
        children = how.logs_child_runs(len(pairs))
        with pairfits.engine(how, jobs, len(pairs), progress) as run_all:  # they start up during the pre-flight
            checked = preflight.check(client, planned, progress, streamed=True)
            signer = cachekey.signer(client.tracking_uri) if log else None
            cache = pairfits.cached_rows(client, _cache_target(client, run_id, source, ids) if log else None, how,
                                         signer)
            _announce(checked, planned, fit, progress)
            work = pairfits.PairWork(fit, source.metric, tuple(ids), checked.layout, chosen.pair_reports,
                                     slim=not children, shipped=how.engine == "ray" and len(pairs) > 1)
            fitted = pairfits.fit_all(run_all, checked, work, cache, Path(folder) if log and children else None,
                                      progress)
        summary = summarise(fitted.results, models, source.metric)
        bbt = rank_scores(_with_pair_tests(checked.ranking, fitted.results, checked.rank), checked.rank,
                          progress) if checked.ranking is not None else None
        matrix = MatrixOutcome(models, {p: ComparisonOutcome(fitted.results[p], source.metric, ids,
                                                             layout=checked.layout, tensor=checked.data[p])
                                        for p in pairs}, summary, bbt, cached=fitted.cached)
        if log:
            notify(progress, "reporting")
            bundle = matrix_bundle(summary, list(fitted.rows.values()), experiment_ids=ids, ranking=bbt,
                                   layout=checked.layout, directory=Path(folder) / "parent", child_runs=children,
                                   run_params=_matrix_params(how))
            target = _target(client, run_id, source, ids)
            matrix.run_id = pairfits.log_family(client, bundle, fitted, target, run_id, started, progress, signer,
                                                datasets=checked.collected.datasets_of(models))
            matrix.experiment_id = target
            for p, row in fitted.rows.items():
                matrix.pairs[p].run_id, matrix.pairs[p].experiment_id = row.run_id, target
    return matrix


def _with_pair_tests(scores, results: dict, rank: RankOptions):
    """The ranking's ``scores`` with the matrix's hierarchical pair tests that came back with their draws, so that
    the hierarchical ranking's pairs are these very tests (one answer, nothing fitted twice); a pair that came back
    as a row only (above ``--child-runs-up-to``, or from the cache) the ranking fits itself."""
    tests = {frozenset(pair): pair_fit_of_test(result, rank.greater_is_better) for pair, result in results.items()
             if getattr(result, "test", None) == "hierarchical" and "delta0" in (getattr(result, "draws", None) or {})}
    return dataclasses.replace(scores, pair_tests=tests) if tests else scores


def rank_runs(experiment_names: Sequence[str] = (), experiment_ids: Sequence[str] = (), *,
              models: Sequence[str] = (), source: SourceOptions | None = None, rank: RankOptions | None = None,
              log: bool = True, tracking_uri: str | None = None, run_id: str | None = None,
              progress: Progress | None = None, claim: str | None = None,
              **options) -> RankingOutcome | MetricsOutcome:
    """Rank ``models`` (default: every model found, at least three) on the scores logged in the given experiments
    (:func:`~..families.ranking.engine.rank_models`): across datasets with the hierarchical model of their fold scores
    (the
    default; ``model="bbt"`` and per-dataset means: the Bayesian Bradley-Terry model; ``vs`` adds the table of every
    model against one), on one dataset with the joint correlated-t model of its folds
    (:mod:`..families.ranking.joint`), and
    log a ranking run.  ``options`` are fields of :class:`~..vocabulary.options.SourceOptions` and
    :class:`~..vocabulary.options.RankOptions`;
    ``claim`` (``best=<model>``, ``none-better=<model>``, ``not-worse-than-best=<model>``), the claim
    :func:`require` will be asked, is checked against the models before
    their scores are read or anything is written; several metrics (comma-separated, ``metric_rope`` and
    ``direction`` per metric) give one ranking each, side by side in one run (a :class:`MetricsOutcome`); the rest
    as :func:`compare_runs`."""
    source, rank = _options(experiment_names, experiment_ids, options, (SourceOptions, source), (RankOptions, rank))
    models = list(ModelsOptions(models=tuple(models)).models)
    client, progress, started = begin(tracking_uri, run_id, progress)
    with failing_run(client, run_id):
        checked = preflight.check_metrics(client, "ranking", source, rank, models, progress, claim=claim,
                                          logged=log and run_id is None)
        outcomes = {}
        for metric, one in checked.items():
            if len(checked) > 1:
                notify(progress, "sampling", _of_several(metric, checked))
            with about(metric if len(checked) > 1 else None):
                ranked = rank_scores(one.ranking, one.rank, progress)
            outcomes[metric] = RankingOutcome(ranked, metric, one.plan.experiment_ids, layout=one.layout)
        if log or run_id is not None:
            notify(progress, "reporting")
            target = _target(client, run_id, source, next(iter(checked.values())).plan.experiment_ids)
            return _logged(client, outcomes, target, run_id, started, progress, lambda o, folder: ranking_model(
                o.result.model).part("run")(o.result, metric=o.metric, experiment_ids=o.experiment_ids,
                                            layout=o.layout, directory=folder),
                           _compared(checked, None))
    return _one_or_several(outcomes)


def require(outcome, claim: str = "a-better", threshold: float | None = None) -> bool:
    """Does the posterior support ``claim`` at ``threshold`` (default: the result's)?

    About model A of a comparison (a :class:`ComparisonOutcome` or a result): ``a-better``: P(A better) ≥ threshold;
    ``not-worse``: P(A better) + P(rope) ≥ threshold; ``equivalent``: P(rope) ≥ threshold.  Of a ranking:
    ``best=<model>``: P(model is the best) ≥ threshold; of the hierarchical ranking also ``none-better=<model>`` (no
    model better than it by more than the rope on the next dataset) and ``not-worse-than-best=<model>`` (``not-worse``
    against the leader) (:mod:`..vocabulary.claims`).
    """
    if isinstance(outcome, MetricsOutcome):  # on every metric
        return all(require(one, claim, threshold) for one in outcome.by_metric.values())
    probability = claims.probability(outcome, claim)
    if threshold is None:
        threshold = outcome.settings["threshold"]
    return claims.Report(claim, probability, FitOptions(threshold=threshold).threshold).supported


# ------------------------------------------------------------------------------------------------------ steps


def _options(names, ids, options: dict, *classes_and_bases) -> tuple:
    """The options of a call: the option objects given, with the keywords (and the experiments) replaced.
    ``target_experiment_id`` is the earlier API's name of ``target_experiment``."""
    options = dict(options)
    if "target_experiment_id" in options:
        options["target_experiment"] = options.pop("target_experiment_id")
    if names or ids or "experiment_names" in options or "experiment_ids" in options:
        options["experiment_names"] = tuple([names] if isinstance(names, str) else names) or \
            options.get("experiment_names", ())
        options["experiment_ids"] = tuple([ids] if isinstance(ids, str) else ids) or options.get("experiment_ids", ())
    return from_keywords(options, *classes_and_bases)


def _two_model_test(checked: preflight.Checked, fit: FitOptions, progress, metric: str = ""):
    """Fit step of a comparison: the test the pre-flight chose for the pair (:func:`~.preflight.choose_test`).
    Returns the result and the data it was fitted on.  ``metric`` names the metric of several in the progress."""
    (a, b), data = next(iter(checked.data.items()))
    test = checked.tests[a, b]
    what = f"{a} vs {b} {pair_test(test).part('describe')(data, fit)}"
    notify(progress, "sampling", f"{metric}: {what}" if metric else what)
    return pairfits.pair_test(data, test, fit, progress), data


def _of_several(metric: str, checked: dict) -> str:
    """``accuracy (1 of 3)`` when a decision has several metrics, else nothing."""
    return f"{metric} ({list(checked).index(metric) + 1} of {len(checked)})" if len(checked) > 1 else ""


def _one_or_several(outcomes: dict[str, Outcome]) -> Outcome | MetricsOutcome:
    """The outcome of one metric, or the decision on several."""
    return next(iter(outcomes.values())) if len(outcomes) == 1 else MetricsOutcome(outcomes)


def _compared(checked: dict, models) -> list:
    """The dataset inputs of the runs of ``models`` (None: every model read) over every metric's scores, each once:
    the inputs of the run that compares them."""
    seen = {}
    for one in checked.values():
        chosen = models if models is not None else list(one.collected.runs_by_model)
        seen.update({(d.name, d.digest): d for d in one.collected.datasets_of(chosen)})
    return list(seen.values())


def _logged(client, outcomes: dict[str, Outcome], target: str, run_id: str | None, started: int, progress,
            bundle_of, datasets=()) -> Outcome | MetricsOutcome:
    """Log the outcome (one metric's, or the decision on several: one run holding each metric's, built by
    ``bundle_of(outcome, folder)`` into ``folder``) into ``target`` (as ``run_id`` when it exists), with
    ``datasets`` as the run's inputs."""
    outcome = _one_or_several(outcomes)
    with tempfile.TemporaryDirectory(prefix="bayescompare-") as folder:
        if isinstance(outcome, MetricsOutcome):
            first = next(iter(outcomes.values()))
            metrics = ", ".join(outcomes)
            name = models_run_name("ranking", len(first.result.models), metrics) if outcome.ranked else \
                run_name(first.model_a, first.model_b, metrics)
            header, rows = outcome.summary_rows()
            bundle = several_metrics_bundle({m: bundle_of(o, Path(folder) / metric_folder(m))
                                             for m, o in outcomes.items()},
                                            Path(folder), name=name, verdict=outcome.verdict, summary_header=header,
                                            summary_rows=rows)
        else:
            bundle = bundle_of(outcome, Path(folder) / "run")
        outcome.run_id = runlog.log_bundle(client, bundle, experiment_id=target, run_id=run_id, start_time=started,
                                           progress=progress, datasets=datasets)
    outcome.experiment_id = target
    for one in outcomes.values():
        one.run_id, one.experiment_id = outcome.run_id, target
    return outcome


def _announce(checked: preflight.Checked, planned: preflight.Plan, fit: FitOptions, progress) -> None:
    """Compile the pairs' program and the ranking's at once, before the workers load them, and say what is to be
    fitted."""
    ahead = pair_test(checked.test_ahead())
    ranked = [checked.ranking_program()] if planned.ranked else []
    sampler.compile_programs([p for p in [ahead.program, *ranked] if p], fit.backend, progress)
    pairs = counted(len(planned.pairs), "pair")
    if ahead.program:  # sampled by Stan
        notify(progress, "sampling", f"{pairs} ({fit.chains} chains × {fit.draws} draws each)")
    else:
        notify(progress, "sampling", f"{pairs} ({ahead.title})")


def _matrix_params(how: MatrixOptions) -> dict[str, str]:
    """How the matrix ran, as its run's params (the Ray address without credentials)."""
    params = how.to_params()
    if "ray_address" in params:
        params["ray_address"] = redact_uri(params["ray_address"])
    return params


def _cache_target(client, run_id: str | None, source: SourceOptions, ids) -> str | None:
    """The experiment whose earlier matrices the cache reads: the run's, or the target's when it exists."""
    if run_id is not None:
        return client.get_run(run_id).info.experiment_id
    return runlog.existing_target(client, source.target_experiment, ids)


def _target(client, run_id: str | None, source: SourceOptions, ids) -> str:
    """The experiment of the run: the one of ``run_id`` when it exists, else the target option's."""
    if run_id is not None:
        return client.get_run(run_id).info.experiment_id
    return runlog.resolve_target(client, source.target_experiment, ids)
