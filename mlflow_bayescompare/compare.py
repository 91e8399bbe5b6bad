"""Python API of the whole pipeline: pre-flight (collect → tensor: :mod:`.preflight`) → fit → summarise → report
→ log.

:func:`compare_runs` compares two models, :func:`compare_matrix` every pair of several, :func:`rank_runs` ranks
them, :func:`require` turns an outcome into a yes/no for gating a model's promotion (:mod:`.claims`).  The command
line and the server's jobs call these.
Options are given as :mod:`.options` objects (``source=``, ``fit=``) or as keywords naming their fields.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from . import claims, preflight
from .correlated_t.engine import correlated_t_test
from .hierarchical.engine import hierarchical_test
from .matrix import MatrixSummary, summarise
from .options import (
    MATRIX_PAIR_WARMUP,
    WARMUP,
    FitOptions,
    ModelsOptions,
    PairOptions,
    RankOptions,
    SourceOptions,
    from_keywords,
)
from .progress import Progress, notify
from .ranking.engine import RANKING_PROGRAMS, model_across, rank_scores
from .result import TEST_NAMES, counted
from .sampling import sampler, workers
from .signed_rank.engine import signed_rank_test
from .tracking import reach, runlog
from .tracking.bundle import (
    comparison_bundle,
    correlated_t_bundle,
    matrix_bundle,
    ranking_bundle,
    signed_rank_bundle,
)

__all__ = ["compare_runs", "compare_matrix", "rank_runs", "require", "Outcome",
           "ComparisonOutcome", "MatrixOutcome", "RankingOutcome"]


@dataclass
class Outcome:
    """A result read from MLflow runs plus where it was logged: the engine's result (``result``) and its
    attributes (``verdict``, ``ranking`` …), readable on the outcome directly."""

    result: Any
    metric: str
    experiment_ids: list[str]
    layout: str | None = None
    run_id: str | None = None
    experiment_id: str | None = None

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "result":
            raise AttributeError(name)
        return getattr(self.result, name)

    def to_dict(self) -> dict[str, Any]:
        """The result's JSON summary plus ``metric``, ``layout``, ``source_experiment_ids`` and where it was logged."""
        return {**self.result.to_dict(), "metric": self.metric, "layout": self.layout,
                "source_experiment_ids": self.experiment_ids, "run_id": self.run_id,
                "experiment_id": self.experiment_id}


@dataclass
class RankingOutcome(Outcome):
    """A :class:`~.ranking.result.RankingResult` (``ranking``, ``pairs``, ``wins`` …) and its ranking run."""


@dataclass
class ComparisonOutcome(Outcome):
    """A two-model test's result (:class:`HierarchicalResult`, :class:`SignedRankResult` or
    :class:`CorrelatedTTestResult`), the data it was fitted on (``tensor``: the paired folds, or the per-dataset
    means) and where it was logged."""

    tensor: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "n_datasets": len(self.tensor.datasets)}


@dataclass
class MatrixOutcome:
    """Every pair's :class:`ComparisonOutcome` (keyed ``(a, b)`` in the order of ``models``), the summary
    (``better``/``rope`` matrices, ``ranking``) and the parent run."""

    models: list[str]
    pairs: dict[tuple[str, str], ComparisonOutcome]
    summary: MatrixSummary
    bbt: Any = None  # the ranking of all models at once (three or more): BBT, or the joint model on one dataset
    run_id: str | None = None
    experiment_id: str | None = None

    @property
    def ranking(self):
        """The ranking of all models (P(best), mean rank …) with three or more models, else the pair's summary."""
        return self.bbt.ranking if self.bbt is not None else self.summary.ranking

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": self.models,
            "metric": self.summary.metric,
            "test": self.summary.test,  # the test that compared the pairs
            "run_id": self.run_id,
            "experiment_id": self.experiment_id,
            "ranking": self.ranking.to_dict(orient="records"),
            "p_better": _nested(self.summary.better),  # p_better[row][column] = P(row better than column)
            "p_rope": _nested(self.summary.rope),
            "pairs": [
                {"model_a": a, "model_b": b, "p_a_better": o.p_a_better, "p_rope": o.p_rope,
                 "p_b_better": o.p_b_better, "verdict": o.verdict, "decision": o.decision, "run_id": o.run_id}
                for (a, b), o in self.pairs.items()
            ],
        }


def compare_runs(experiment_names: Sequence[str] = (), experiment_ids: Sequence[str] = (), *, model_a: str,
                 model_b: str, source: SourceOptions | None = None, fit: FitOptions | None = None, log: bool = True,
                 tracking_uri: str | None = None, run_id: str | None = None, progress: Progress | None = None,
                 **options) -> ComparisonOutcome:
    """Compare ``model_a`` with ``model_b`` on the per-fold ``metric`` logged in the given experiments.

    Reads the runs (layout steps/keys/children/means, auto-detected), pairs the folds and runs the test
    :func:`~.preflight.choose_test` picks (``test="auto"``) or the one asked for: the hierarchical test across
    datasets, the Bayesian correlated t-test when the two models share one dataset, the Bayesian signed-rank test
    on the per-dataset means of runs that hold one score each; with ``log=True``, it logs a comparison run into the
    target experiment (default: the first source experiment).
    ``options`` are fields of :class:`~.options.SourceOptions` (``metric``, ``layout``, ``filter_string`` …) and
    :class:`~.options.FitOptions` (``rope``, ``chains``, ``seed`` …).  ``run_id`` names a RUNNING comparison run to
    fill (the server's job record): its stage tag follows the work and it ends FAILED, with the error, if anything
    goes wrong.  ``progress`` hears the stages (see :mod:`.progress`).
    """
    source, fit = _options(experiment_names, experiment_ids, options, (SourceOptions, source), (FitOptions, fit))
    pair = PairOptions(model_a=model_a, model_b=model_b)
    client, progress, started = _begin(tracking_uri, run_id, progress)
    with _failing_run(client, run_id):
        checked = preflight.check(client, preflight.plan(client, "comparison", source, fit,
                                                         (pair.model_a, pair.model_b), progress), progress)
        ids, layout = checked.plan.experiment_ids, checked.layout
        result, data = _two_model_test(checked, checked.plan.options, progress)  # the plan's: a search's rho
        outcome = ComparisonOutcome(result, source.metric, ids, layout=layout, tensor=data)
        if log or run_id is not None:
            notify(progress, "reporting")
            target = _target(client, run_id, source, ids)
            with _pair_bundle(result, data, source.metric, ids, layout, run_id=run_id,
                              experiment_id=target) as bundle:
                outcome.run_id = runlog.log_bundle(client, bundle, experiment_id=target, run_id=run_id,
                                                   start_time=started, progress=progress)
            outcome.experiment_id = target
    return outcome


def compare_matrix(experiment_names: Sequence[str] = (), experiment_ids: Sequence[str] = (), *,
                   models: Sequence[str] = (), source: SourceOptions | None = None, fit: FitOptions | None = None,
                   log: bool = True, tracking_uri: str | None = None, run_id: str | None = None,
                   progress: Progress | None = None, jobs: int | None = None, **options) -> MatrixOutcome:
    """Compare every pair of ``models`` (default: every model found): one child comparison run per pair under a
    parent run holding the matrix of P(row better than column) and P(rope) and, with three or more models, their
    ranking (P(best), mean rank: :func:`rank_runs`; the joint correlated-t model on one dataset).  The pairs are
    compared by the test :func:`compare_runs` would choose (:func:`~.preflight.choose_test`): the hierarchical test
    on per-fold scores, the correlated t-test on a pair that shares one dataset, the signed-rank test on runs that
    hold one score each.

    A pair's run holds its numbers, tables and posterior; with ``pair_reports=True`` (a field of
    :class:`~.options.ModelsOptions`) also the figures, HTML report and PSIS-LOO model check of a comparison run.
    Pairs warm up for :data:`~.options.MATRIX_PAIR_WARMUP` iterations per chain unless ``warmup`` is given (and
    a pair whose chains then disagree again for :data:`~.options.WARMUP`:
    :func:`~.hierarchical.engine.hierarchical_test`).
    Pairs are fitted, and their runs' content built, in up to ``jobs`` processes (default: one per CPU; they are
    spawned, so a script calling this with several jobs needs the ``if __name__ == "__main__":`` guard).
    ``run_id`` names a RUNNING parent run to fill (the server's job record).  Other arguments as
    :func:`compare_runs`.
    """
    source, fit, chosen = _options(experiment_names, experiment_ids, {**options, "models": tuple(models)},
                                   (SourceOptions, source), (FitOptions, fit), (ModelsOptions, None))
    client, progress, started = _begin(tracking_uri, run_id, progress)
    with _failing_run(client, run_id), tempfile.TemporaryDirectory(prefix="bayescompare-matrix-") as folder:
        planned = preflight.plan(client, "matrix", source, fit, chosen.models, progress)
        ids, models, pairs, fit = planned.experiment_ids, planned.models, planned.pairs, planned.options
        log = log or run_id is not None
        with workers.started(jobs, len(pairs), warm_up=_warm_up) as pool:  # they start up during the pre-flight
            checked = preflight.check(client, planned, progress, streamed=True)
            ahead = checked.test_ahead()
            # the pairs' program and the ranking's compiled at once, before the workers load them
            ranking = RANKING_PROGRAMS[model_across(RankOptions(), means=checked.layout == "means")]
            sampler.compile_programs([p for p, fitted in (("hierarchical", ahead == "hierarchical"),
                                                          (ranking, planned.ranked)) if fitted], fit.backend, progress)
            if ahead == "hierarchical":
                notify(progress, "sampling",
                       f"{counted(len(pairs), 'pair')} ({fit.chains} chains × {fit.draws} draws each)")
            else:
                notify(progress, "sampling", f"{counted(len(pairs), 'pair')} ({TEST_NAMES[ahead]})")
            # each pair handed to the workers once its data are checked; a bad pair stops them, after every pair's
            # problems are found (nothing is logged before every pair is fitted)
            tasks = ((p, (data, checked.tests[p], fit, source.metric, ids, checked.layout,
                          Path(folder) / str(i) if log else None, chosen.pair_reports))
                     for i, (p, data) in enumerate(checked.pairs()))
            fitted = workers.run_all(_fit_pair, tasks, total=len(pairs), pool=pool, progress=progress)
        summary = summarise({p: fitted[p][0] for p in pairs}, models, source.metric)
        bbt = rank_scores(checked.ranking, checked.rank, progress) if checked.ranking is not None else None
        matrix = MatrixOutcome(models, {p: ComparisonOutcome(fitted[p][0], source.metric, ids, layout=checked.layout,
                                                             tensor=checked.data[p]) for p in pairs}, summary, bbt)
        if log:
            notify(progress, "reporting")
            bundle = matrix_bundle(summary, [fitted[p][0] for p in pairs], experiment_ids=ids, ranking=bbt,
                                   layout=checked.layout, directory=Path(folder) / "parent")
            target = _target(client, run_id, source, ids)
            children = {p: fitted[p][1] for p in pairs}
            matrix.run_id = _log_family(client, bundle, children, target, run_id, started, progress)
            matrix.experiment_id = target
            for p, child in children.items():
                matrix.pairs[p].run_id, matrix.pairs[p].experiment_id = child, target
    return matrix


def rank_runs(experiment_names: Sequence[str] = (), experiment_ids: Sequence[str] = (), *,
              models: Sequence[str] = (), source: SourceOptions | None = None, rank: RankOptions | None = None,
              log: bool = True, tracking_uri: str | None = None, run_id: str | None = None,
              progress: Progress | None = None, claim: str | None = None, **options) -> RankingOutcome:
    """Rank ``models`` (default: every model found, at least three) on the scores logged in the given experiments
    (:func:`~.ranking.engine.rank_models`): across datasets with the hierarchical model of their fold scores (the
    default; ``model="bbt"`` and per-dataset means: the Bayesian Bradley-Terry model; ``vs`` adds the table of every
    model against one), on one dataset with the joint correlated-t model of its folds (:mod:`.ranking.joint`), and
    log a ranking run.  ``options`` are fields of :class:`~.options.SourceOptions` and :class:`~.options.RankOptions`;
    ``claim`` (``best=<model>``, ``none-better=<model>``, ``not-worse-than-best=<model>``), the claim
    :func:`require` will be asked, is checked against the models before
    their scores are read or anything is written; the rest as :func:`compare_runs`."""
    source, rank = _options(experiment_names, experiment_ids, options, (SourceOptions, source), (RankOptions, rank))
    models = list(ModelsOptions(models=tuple(models)).models)
    client, progress, started = _begin(tracking_uri, run_id, progress)
    with _failing_run(client, run_id):
        planned = preflight.plan(client, "ranking", source, rank, models, progress, claim=claim)
        checked = preflight.check(client, planned, progress)
        ids = checked.plan.experiment_ids
        result = rank_scores(checked.ranking, checked.rank, progress)
        outcome = RankingOutcome(result, source.metric, ids, layout=checked.layout)
        if log or run_id is not None:
            notify(progress, "reporting")
            target = _target(client, run_id, source, ids)
            with ranking_bundle(result, metric=source.metric, experiment_ids=ids, layout=checked.layout) as bundle:
                outcome.run_id = runlog.log_bundle(client, bundle, experiment_id=target, run_id=run_id,
                                                   start_time=started, progress=progress)
            outcome.experiment_id = target
    return outcome


def require(outcome, claim: str = "a-better", threshold: float | None = None) -> bool:
    """Does the posterior support ``claim`` at ``threshold`` (default: the result's)?

    About model A of a comparison (a :class:`ComparisonOutcome` or a result): ``a-better``: P(A better) ≥ threshold;
    ``not-worse``: P(A better) + P(rope) ≥ threshold; ``equivalent``: P(rope) ≥ threshold.  Of a ranking:
    ``best=<model>``: P(model is the best) ≥ threshold; of the hierarchical ranking also ``none-better=<model>`` (no
    model better than it by more than the rope on the next dataset) and ``not-worse-than-best=<model>`` (``not-worse``
    against the leader) (:mod:`.claims`).
    """
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


def _two_model_test(checked: preflight.Checked, fit: FitOptions, progress):
    """Fit step of a comparison: the test the pre-flight chose for the pair (:func:`~.preflight.choose_test`).
    Returns the result and the data it was fitted on."""
    (a, b), data = next(iter(checked.data.items()))
    test = checked.tests[a, b]
    if test == "signed-rank":
        notify(progress, "sampling", f"{a} vs {b} on {len(data.datasets)} dataset means (signed-rank test)")
    elif test == "correlated-t":
        notify(progress, "sampling", f"{a} vs {b} on the {len(data.diffs[0])} folds of one dataset (correlated "
                                     "t-test, closed form)")
    else:
        notify(progress, "sampling",
               f"{a} vs {b} on {counted(len(data.datasets), 'dataset')} ({fit.chains} chains × {fit.draws} draws)")
    return _pair_test(data, test, fit, progress), data


def _pair_test(data, test: str, fit: FitOptions, progress: Progress | None = None, *, matrix_pair: bool = False,
               model_check: bool = True):
    """Fit step of a pair by ``test`` (the pre-flight's choice): the signed-rank test on its means, the correlated
    t-test on the folds of its one dataset (closed form, no Stan), else the hierarchical test on its paired folds
    (with its PSIS-LOO model check unless ``model_check=False``; as a ``matrix_pair``, after the matrix's warm-up
    when none is given)."""
    if test == "signed-rank":
        return signed_rank_test(data, options=fit)
    if test == "correlated-t":
        return correlated_t_test(data, options=fit)
    return hierarchical_test(data, options=fit, progress=progress, model_check=model_check,
                             default_warmup=MATRIX_PAIR_WARMUP if matrix_pair else WARMUP)


def _pair_bundle(result, data, metric: str, ids, layout: str, *, run_id: str | None = None,
                 experiment_id: str | None = None, directory: Path | None = None, figures: bool = True):
    """Report step of a comparison: the run of whichever test answered, to be logged in ``experiment_id`` (as
    ``run_id`` when that run exists), its artifacts written into ``directory`` (default: a temporary one);
    ``figures=False`` for a matrix's pair run without figures and HTML report."""
    if result.test == "signed-rank":
        return signed_rank_bundle(result, data, metric=metric, experiment_ids=ids, layout=layout,
                                  directory=directory, figures=figures)
    if result.test == "correlated-t":
        return correlated_t_bundle(result, metric=metric, experiment_ids=ids, layout=layout, directory=directory,
                                   figures=figures)
    return comparison_bundle(result, data, metric=metric, experiment_ids=ids, layout=layout, run_id=run_id,
                             experiment_id=experiment_id, directory=directory, figures=figures)


def _begin(tracking_uri: str | None, run_id: str | None, progress: Progress | None):
    """A pipeline's client (of a tracking server that answers: :func:`~.tracking.reach.check_reachable`), its
    progress hook (recording the stage in ``run_id`` when given) and start time."""
    client = MlflowClient(tracking_uri)
    reach.check_reachable(client.tracking_uri)
    return client, runlog.stage_recorder(client, run_id, progress), int(time.time() * 1000)


def _target(client, run_id: str | None, source: SourceOptions, ids) -> str:
    """The experiment of the run: the one of ``run_id`` when it exists, else the target option's."""
    if run_id is not None:
        return client.get_run(run_id).info.experiment_id
    return runlog.resolve_target(client, source.target_experiment, ids)


def _warm_up() -> None:
    """A matrix worker's first task: unpickling it imports this module, and with it the fit and report steps
    (MLflow, arviz, matplotlib), while the caller is busy elsewhere."""


def _fit_pair(data, test: str, fit: FitOptions, metric: str, ids, layout, folder: Path | None, report: bool):
    """One pair, in a worker: its test (the pre-flight's choice, on the data it built for the pair) and, when it
    will be logged, its run's bundle (written into ``folder``); ``report``: with the figures, HTML report and model
    check."""
    result = _pair_test(data, test, fit, matrix_pair=True, model_check=report)
    if folder is None:
        return result, None
    return result, _pair_bundle(result, data, metric, ids, layout, directory=folder, figures=report)


def _log_family(client, parent, children: dict, target: str, run_id: str | None, started: int,
                progress: Progress | None) -> str:
    """Log the child runs under the parent (created now, unless it is the RUNNING ``run_id``), then the parent's
    own bundle.  Children are written by a few threads when the store is a server.  A failed child fails the
    parent."""
    if run_id is None:
        run_id = runlog.start_run(client, target, name=parent.name, tags=parent.tags, stage="logging",
                                  start_time=started)
    notify(progress, "logging")
    threads = 4 if str(client.tracking_uri).startswith(("http://", "https://")) else 1
    try:
        with ThreadPoolExecutor(threads) as pool:
            ids = pool.map(lambda item: runlog.log_bundle(client, item[1], experiment_id=target,
                                                          parent_run_id=run_id, start_time=started),
                           list(children.items()))
            for pair, child_id in zip(list(children), ids):
                children[pair] = child_id
    except BaseException as exc:
        runlog.fail_run(client, run_id, exc)
        raise
    return runlog.log_bundle(client, parent, run_id=run_id, progress=progress)


@contextlib.contextmanager
def _failing_run(client, run_id: str | None):
    """End the RUNNING ``run_id`` FAILED with the error when the work fails (nothing to do without one)."""
    try:
        yield
    except BaseException as exc:
        if run_id is not None:
            runlog.fail_if_running(client, run_id, str(exc) or type(exc).__name__)
        raise


def _nested(frame) -> dict:
    """``{row: {column: value}}`` with ``None`` on the diagonal."""
    return frame.astype(object).where(frame.notna(), None).to_dict(orient="index")

