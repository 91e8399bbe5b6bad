"""Pre-flight of a comparison, a matrix or a ranking: everything the pipeline checks before it samples, written
once, run by the pipeline itself (:mod:`.compare`) and by the server before it accepts a job.

:func:`plan` resolves the source experiments and the models (every model found when none are given); :func:`check`
collects their scores and builds what will be fitted: each pair's paired fold scores (or its per-dataset means when
the signed-rank test answers: :func:`signed_rank_applies`) and the Bayesian Bradley-Terry ranking's table of scores.
A pair's problems, or every pair's for a matrix, are reported at once in one :class:`~.errors.InputError`; what was
built is returned, so that the pipeline fits from it without reading the scores again.  A matrix builds its pairs'
data as its workers take them (:meth:`Checked.pairs`), so that the first fits start while the others are checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError
from .hierarchical.prepare import correlations
from .matrix import model_pairs
from .options import FitOptions, RankOptions, SourceOptions
from .progress import Progress, notify
from .ranking.engine import Scores, read_scores
from .tracking.collect import CollectedScores, collect_scores, discover, resolve_experiments

__all__ = ["Plan", "Checked", "plan", "check", "signed_rank_applies"]


@dataclass(frozen=True)
class Plan:
    """A request with its sources resolved: ``kind`` (``comparison``, ``matrix`` or ``ranking``, as the server's
    jobs), its options (a ranking's are :class:`~.options.RankOptions`), the source experiments' ids, the models and
    the pairs compared (a comparison's one, a matrix's every one, none for a ranking)."""

    kind: str
    source: SourceOptions
    options: FitOptions | RankOptions
    experiment_ids: list[str]
    models: list[str]
    pairs: list[tuple[str, str]]

    @property
    def ranked(self) -> bool:
        """Whether the work holds a Bayesian Bradley-Terry ranking: a ranking's, a matrix's of three models or more."""
        return self.kind == "ranking" or (self.kind == "matrix" and len(self.models) >= 3)


@dataclass
class Checked:
    """What the pipeline fits, built from the scores collected: each pair's data (:attr:`data`: a
    :class:`~.scores.tensor.CVTensor`, or its :class:`~.scores.tensor.DatasetMeans` when ``signed_rank``), and the
    scores of the ranking (of a ranking, or of a matrix of three models or more) with the options it is fitted
    with."""

    plan: Plan
    collected: CollectedScores
    signed_rank: bool = False
    data: dict[tuple[str, str], Any] = field(default_factory=dict)
    ranking: Scores | None = None
    rank: RankOptions | None = None

    @property
    def layout(self) -> str:
        return self.collected.layout

    def pairs(self) -> Iterator[tuple[tuple[str, str], Any]]:
        """Build each pair's data into :attr:`data`, yielding it once built, then a matrix's ranking scores.  A
        comparison's problems are its pair's, in their own words; a matrix's are every pair's, each named (after the
        first, the pairs are still checked but no longer yielded), then, once the pairs pass, its ranking's."""
        planned, problems = self.plan, []
        for a, b in planned.pairs:
            try:
                self.data[a, b] = _pair_data(self.collected, (a, b), planned.source, planned.options, self.signed_rank)
            except InputError as exc:
                if planned.kind == "comparison":
                    raise
                problems += [f"{a} vs {b}: {p}" for p in exc.problems]
            if not problems:
                yield (a, b), self.data[a, b]
        if problems:
            raise InputError(problems, header="Cannot compare every pair:")
        if planned.ranked:
            self.rank = _rank_options(planned)
            self.ranking = _ranking_scores(self.collected, planned, self.rank)


def plan(client, kind: str, source: SourceOptions, options: FitOptions | RankOptions, models: Sequence[str] = (),
         progress: Progress | None = None) -> Plan:
    """The source experiments' ids (the work is then ``fetching``) and the models: those given (a comparison's
    two), else every model tagged in the experiments; a matrix's models make at least one pair."""
    ids = resolve_experiments(client, source.experiment_names, source.experiment_ids)
    notify(progress, "fetching")
    models = [str(m) for m in models] or discover(client, ids, model_tag=source.model_tag,
                                                  dataset_tag=source.dataset_tag)["models"]
    pairs = model_pairs(models) if kind == "matrix" else [tuple(models)] if kind == "comparison" else []
    return Plan(kind, source, options, ids, models, pairs)


def check(client, planned: Plan, progress: Progress | None = None, *, streamed: bool = False) -> Checked:
    """Collect the scores of ``planned`` and build what will be fitted (:class:`Checked`); with ``streamed``, the
    pairs' data are built as :meth:`Checked.pairs` is read (a matrix hands each pair to its workers as soon as it
    is checked)."""
    source = planned.source
    collected = collect_scores(client, planned.experiment_ids, source.metric, planned.models,
                               filter_string=source.filter_string, layout=source.layout, model_tag=source.model_tag,
                               dataset_tag=source.dataset_tag, folds=source.folds, progress=progress)
    if planned.kind == "ranking":
        rank = _rank_options(planned)
        return Checked(planned, collected, ranking=_ranking_scores(collected, planned, rank), rank=rank)
    checked = Checked(planned, collected, signed_rank_applies(planned.options.test, collected.layout))
    if not streamed:
        for _ in checked.pairs():
            pass
    return checked


def signed_rank_applies(test: str, layout: str) -> bool:
    """Whether a comparison runs the signed-rank test: asked for, or ``auto`` on runs that hold one score each."""
    return test == "signed-rank" or (test == "auto" and layout == "means")


def _pair_data(collected: CollectedScores, pair: tuple[str, str], source: SourceOptions, fit: FitOptions,
               signed_rank: bool):
    """A pair's per-dataset means for the signed-rank test, else its paired fold scores and their correlation ρ
    (as the hierarchical test will read them)."""
    if signed_rank:
        return collected.means(*pair, drop_incomplete=source.drop_incomplete, on_duplicate=source.on_duplicate)
    tensor = collected.tensor(*pair, drop_incomplete=source.drop_incomplete, on_duplicate=source.on_duplicate)
    correlations(tensor.datasets, tensor.folds, fit.rho)
    return tensor


def _rank_options(planned: Plan) -> RankOptions:
    """The ranking's options: a ranking's own, a matrix's sampled like its pairs; datasets a model lacks dropped
    when the source says so."""
    rank = planned.options
    if planned.kind == "matrix":
        rank = RankOptions(greater_is_better=rank.greater_is_better, threshold=rank.threshold,
                           **rank.with_warmup().sampler_settings())
    if planned.source.drop_incomplete and not rank.drop_incomplete:
        rank = dataclasses.replace(rank, drop_incomplete=True)
    return rank


def _ranking_scores(collected: CollectedScores, planned: Plan, rank: RankOptions) -> Scores:
    """The ranking's scores: one run per model and dataset, every model present, a score for each."""
    scores = _one_run_each(collected.scores, planned.source.on_duplicate)
    return read_scores(scores, models=planned.models, greater_is_better=rank.greater_is_better,
                       drop_incomplete=rank.drop_incomplete, skip_missing=rank.skip_missing)


def _one_run_each(scores, on_duplicate: str):
    """The scores with one run per (dataset, model): the latest with ``on_duplicate="latest"``, else an error that
    names every (dataset, model) with several runs."""
    runs = scores.groupby(["dataset", "model"], sort=False)["run_id"].nunique()
    repeated = runs[runs > 1]
    if repeated.empty:
        return scores
    if on_duplicate == "latest":
        latest = scores.sort_values("start_time", kind="stable").groupby(["dataset", "model"])["run_id"].last()
        return scores[scores["run_id"].isin(set(latest))]
    raise InputError([f"dataset '{d}': model '{m}' has {n} runs; delete or filter out the extra runs, or keep the "
                      "latest (--latest on the command line, on_duplicate='latest' in Python)"
                      for (d, m), n in repeated.items()], header="Cannot rank the models:")
