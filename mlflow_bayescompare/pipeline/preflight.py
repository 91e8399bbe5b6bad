"""Pre-flight of a comparison, a matrix or a ranking: everything the pipeline checks before it samples, written
once, run by the pipeline itself (:mod:`.compare`) and by the server before it accepts a job.

:func:`plan` resolves the source experiments and the models (every model found when none are given); :func:`check`
collects their scores and builds what will be fitted: each pair's paired fold scores (or its per-dataset means when
the test answering it takes them), which test answers each pair (:func:`choose_test`, the one routing rule), each
checked by its family's pre-flight (its row of the family table), and the ranking's table of scores.
A pair's problems, or every pair's for a matrix, are reported at once in one :class:`~..vocabulary.errors.InputError`;
what was
built is returned, so that the pipeline fits from it without reading the scores again.  A matrix builds its pairs'
data as its workers take them (:meth:`Checked.pairs`), so that the first fits start while the others are checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..families import RANKING_MODELS, pair_test, taking
from ..families.ranking.common import lacking_lines
from ..families.ranking.engine import check_vs, model_across, ranking_model
from ..families.ranking.scores import Scores, read_scores
from ..reads.collect import CollectedScores, check_filter, collect_scores, discover, resolve_experiments
from ..reads.search import read_search
from ..runs import runlog
from ..runs.matrix import model_pairs
from ..vocabulary.claims import best_model, check_answered
from ..vocabulary.console import about, log
from ..vocabulary.errors import InputError
from ..vocabulary.options import FitOptions, RankOptions, SourceOptions, per_metric
from ..vocabulary.progress import Progress, notify

__all__ = ["Plan", "Checked", "plan", "check", "check_metrics", "one_metric", "choose_test", "ROPE_LIMIT"]

#: The widest rope of a two-model test, in multiples of the largest score's magnitude.  A difference of two scores
#: is at most twice that magnitude, so a rope beyond it already makes equivalence certain (the test warns); one a
#: million times wider can only be a mistake of units, and near the float range (a rope of 1e308) it overflows the
#: arithmetic of the fit and its figures, which would fail after the request was accepted.
ROPE_LIMIT = 1e6


@dataclass(frozen=True)
class Plan:
    """A request with its sources resolved: ``kind`` (``comparison``, ``matrix`` or ``ranking``, as the server's
    jobs), its options (a ranking's are :class:`~..vocabulary.options.RankOptions`), the source experiments' ids, the
    models and
    the pairs compared (a comparison's one, a matrix's every one, none for a ranking); a scikit-learn search's scores
    (``collected``), read to know its candidates."""

    kind: str
    source: SourceOptions
    options: FitOptions | RankOptions
    experiment_ids: list[str]
    models: list[str]
    pairs: list[tuple[str, str]]
    collected: CollectedScores | None = None  # a search run's scores, read whole when it was planned
    claim: str | None = None  # a ranking's claim (best=<model> ...), which its ranking model must answer

    @property
    def ranked(self) -> bool:
        """Whether the work holds a ranking of every model at once: a ranking's, a matrix's of three models or more."""
        return self.kind == "ranking" or (self.kind == "matrix" and len(self.models) >= 3)


@dataclass
class Checked:
    """What the pipeline fits, built from the scores collected: each pair's data (:attr:`data`: a
    :class:`~..scores.tensor.CVTensor`, or its :class:`~..scores.tensor.DatasetMeans` when ``means``: the test chosen
    on the layout takes per-dataset means) and the test that answers it (:attr:`tests`, by :func:`choose_test`), and
    the scores of the ranking (of a ranking, or of a matrix of three models or more) with the options it is fitted
    with."""

    plan: Plan
    collected: CollectedScores
    means: bool = False
    data: dict[tuple[str, str], Any] = field(default_factory=dict)
    tests: dict[tuple[str, str], str] = field(default_factory=dict)
    ranking: Scores | None = None
    rank: RankOptions | None = None

    @property
    def layout(self) -> str:
        return self.collected.layout

    def test_ahead(self) -> str:
        """The test that answers the pairs as far as it is known before they are built: :func:`choose_test` on
        every dataset collected (a pair shares at most those; the pair's own choice is :attr:`tests`)."""
        return choose_test(self.plan.options.test, self.layout, self.collected.scores["dataset"].nunique())

    def ranking_program(self) -> str:
        """The Stan program of a matrix's ranking across datasets, compiled ahead with the pairs' program."""
        model = model_across(_rank_options(self.plan, self.collected), means=self.layout == "means")
        return RANKING_MODELS[model].program

    def pairs(self) -> Iterator[tuple[tuple[str, str], Any]]:
        """Build each pair's data into :attr:`data`, yielding it once built, then a matrix's ranking scores.  A
        comparison's problems are its pair's, in their own words; a matrix's are every pair's, each named (after the
        first, the pairs are still checked but no longer yielded), then, once the pairs pass, its ranking's."""
        planned, problems = self.plan, []
        alone = planned.kind == "comparison"
        if not alone:
            _say_what_models_lack(self.collected, planned.models)
        for a, b in planned.pairs:
            try:
                self.data[a, b], self.tests[a, b] = _pair_data(self.collected, (a, b), planned.source,
                                                               planned.options, self.means, alone)
            except InputError as exc:
                if planned.kind == "comparison":
                    raise
                problems += [f"{a} vs {b}: {p}" for p in exc.problems]
            if not problems:
                yield (a, b), self.data[a, b]
        if problems:
            raise InputError(problems, header="Cannot compare every pair:")
        if planned.ranked:
            self.rank = _rank_options(planned, self.collected)
            self.ranking = _ranking_scores(self.collected, planned, self.rank)


def plan(client, kind: str, source: SourceOptions, options: FitOptions | RankOptions, models: Sequence[str] = (),
         progress: Progress | None = None, *, claim: str | None = None, logged: bool = False) -> Plan:
    """The source experiments' ids (the work is then ``fetching``) and the models: those given (a comparison's
    two), else every model tagged in the experiments; a matrix's models make at least one pair.  A ranking's
    ``claim`` (``best=<model>``) must name one of its models.  ``logged``: the result will be logged into the
    target experiment, which must take it (:func:`~..runs.runlog.check_target`).  The filter is parsed first, by
    MLflow's own parser, for every kind (every model found is found by a search under it)."""
    check_filter(source.filter_string)
    if logged:
        runlog.check_target(client, source.target_experiment)
    if source.search_run is not None:
        return _search_plan(client, kind, source, options, models, claim, progress)
    ids = resolve_experiments(client, source.experiment_names, source.experiment_ids)
    notify(progress, "fetching")
    models = [str(m) for m in models] or discover(client, ids, model_key=source.model_key,
                                                  dataset_key=source.dataset_key,
                                                  filter_string=source.filter_string)["models"]
    if claim is not None:
        best_model(claim, models)
    if kind == "ranking":
        check_vs(options.vs, models)
    return Plan(kind, source, options, ids, models, _pairs(kind, models), claim=claim)


def check_metrics(client, kind: str, source: SourceOptions, options: FitOptions | RankOptions,
                  models: Sequence[str] = (), progress: Progress | None = None, *, claim: str | None = None,
                  logged: bool = False) -> dict[str, Checked]:
    """:func:`plan` and :func:`check` of a comparison or a ranking for each of its metrics (several make one
    decision: :func:`~..vocabulary.options.per_metric` gives each its rope and direction), by metric.  Every metric is
    checked and their problems reported at once, each under its metric's name (a problem every metric has, once)."""
    if logged:
        runlog.check_target(client, source.target_experiment)
    checked, problems = {}, {}
    split = per_metric(source, options)
    for metric, (one_source, one_options) in split.items():
        try:
            with about(metric if len(split) > 1 else None):
                checked[metric] = check(client, plan(client, kind, one_source, one_options, models, progress,
                                                     claim=claim), progress)
        except InputError as exc:
            problems[metric] = exc
    if not problems:
        return checked
    first = next(iter(problems.values()))
    if len(problems) == len(source.metrics) and all(e.problems == first.problems for e in problems.values()):
        raise first
    several = len(problems) > 1
    raise InputError([f"metric '{metric}': {p}" if several else p for metric, exc in problems.items()
                      for p in exc.problems],
                     header=f"Cannot read metric{'s' if several else ''} {', '.join(map(repr, problems))}:",
                     footer=list(dict.fromkeys(line for exc in problems.values() for line in exc.footer)))


def one_metric(source: SourceOptions, options: FitOptions) -> tuple[SourceOptions, FitOptions]:
    """The source and options of a matrix, which compares one metric (its rope and direction resolved)."""
    split = per_metric(source, options)
    if len(split) > 1:
        raise InputError(f"a matrix compares one metric; got {len(split)} ({', '.join(split)}): run it per metric, "
                         "or rank the models on every metric at once (rank --metric a,b)")
    return next(iter(split.values()))


def _pairs(kind: str, models: list[str]) -> list[tuple[str, str]]:
    return model_pairs(models) if kind == "matrix" else [tuple(models)] if kind == "comparison" else []


def _search_plan(client, kind: str, source: SourceOptions, options, models: Sequence[str], claim: str | None,
                 progress: Progress | None) -> Plan:
    """The plan of a scikit-learn search run (:mod:`..reads.search`): its experiment, its candidates (those
    named, or all), and its scores; the search's hold-out splits give ρ unless the options do."""
    notify(progress, "fetching", f"search run {source.search_run}")
    search = read_search(client, source.search_run, source.metric, folds=source.folds, rho=options.rho)
    chosen = search.resolve([str(m) for m in models])
    if claim is not None:
        best_model(claim, chosen)
    if kind == "ranking":
        check_vs(options.vs, chosen)
    if search.rho is not None and options.rho is None:
        options = dataclasses.replace(options, rho=search.rho[0])
    return Plan(kind, source, options, [search.experiment_id], chosen, _pairs(kind, chosen), search.collected,
                claim)


def check(client, planned: Plan, progress: Progress | None = None, *, streamed: bool = False) -> Checked:
    """Collect the scores of ``planned`` and build what will be fitted (:class:`Checked`); with ``streamed``, the
    pairs' data are built as :meth:`Checked.pairs` is read (a matrix hands each pair to its workers as soon as it
    is checked)."""
    source = planned.source
    collected = planned.collected or collect_scores(
        client, planned.experiment_ids, source.metric, planned.models, filter_string=source.filter_string,
        layout=source.layout, model_key=source.model_key, dataset_key=source.dataset_key, folds=source.folds,
        progress=progress)
    if planned.kind == "matrix" and source.drop_incomplete:  # one set of datasets for every pair
        collected = collected.common(planned.models)
    if planned.kind == "ranking":
        rank = _rank_options(planned, collected)
        return Checked(planned, collected, ranking=_ranking_scores(collected, planned, rank), rank=rank)
    _check_rope(planned.options.rope, collected)
    means = pair_test(choose_test(planned.options.test, collected.layout)).takes == "means"
    checked = Checked(planned, collected, means)
    if not streamed:
        for _ in checked.pairs():
            pass
    return checked


def choose_test(test: str, layout: str, datasets: int | None = None) -> str:
    """The test that answers a pair, the one routing rule: the one asked for, else (``auto``) the test that takes
    what the pair holds (:func:`~..families.taking`): per-dataset means on runs that hold one score each (the means
    layout: the signed-rank test), the folds of one dataset when the pair's per-fold scores are on ``datasets`` = 1
    dataset (the correlated t-test), the folds across datasets otherwise, and while the datasets are not counted yet
    (the hierarchical test)."""
    if test != "auto":
        return test
    return taking("means" if layout == "means" else "one dataset" if datasets == 1 else "folds").name


def _check_rope(rope: float, collected: CollectedScores, name: str = "rope") -> None:
    """A rope (in the scores' units; the option ``name``) at most :data:`ROPE_LIMIT` times the largest score's
    magnitude."""
    largest = float(collected.scores["score"].abs().max())
    if 0 < largest and rope > ROPE_LIMIT * largest:
        raise InputError(f"{name} {rope:g} is more than {ROPE_LIMIT:g} times the largest '{collected.metric}' score "
                         f"logged ({largest:.3g}): the rope is a half-width in the scores' units (e.g. 0.01 for "
                         "an accuracy between 0 and 1)")


def _say_what_models_lack(collected: CollectedScores, models: Sequence[str]) -> None:
    """A matrix's one warning about the datasets its pairs leave out: what each model lacks, one model a line (not
    one warning a pair)."""
    lacking = collected.lacking(models)
    if lacking:
        log.warning("each pair is compared on the datasets both its models have; left out where one lacks them:\n  "
                    + "\n  ".join(lacking_lines(lacking)))


def _pair_data(collected: CollectedScores, pair: tuple[str, str], source: SourceOptions, fit: FitOptions,
               means: bool, say_left_out: bool):
    """A pair's data and the test that answers it: its per-dataset means for a test that takes them, else its paired
    fold scores; checked by the test's pre-flight (its row of the family table) as the test will read them;
    ``say_left_out``: warn of the datasets the pair leaves out."""
    kept = {"drop_incomplete": source.drop_incomplete, "on_duplicate": source.on_duplicate,
            "say_left_out": say_left_out}
    if means:
        test = pair_test(choose_test(fit.test, collected.layout))
        data = collected.means(*pair, **kept)
    else:
        asked = pair_test(fit.test) if fit.test != "auto" else None
        if asked is not None and asked.means_layout and collected.layout == "means":
            raise InputError(f"the runs hold one '{collected.metric}' score per model and dataset (the means layout), "
                             f"but {asked.means_layout}")
        data = collected.tensor(*pair, **kept)
        test = pair_test(choose_test(fit.test, collected.layout, len(data.datasets)))
    test.part("check")(data, fit, collected)
    return data, test.name


def _rank_options(planned: Plan, collected: CollectedScores) -> RankOptions:
    """The ranking's options: a ranking's own, a matrix's sampled like its pairs and ranked by the model that ranks
    its layout (:func:`~..families.ranking.engine.model_across`): on datasets some models lack, the hierarchical model
    takes each dataset's models as they are, and a model that refuses them (Bradley-Terry on per-dataset means) plays
    no game where a model lacks the dataset (its rule, ``skip_missing``); datasets a model lacks dropped when the
    source says so."""
    rank = planned.options
    if planned.kind == "matrix":  # on one dataset, the joint model reads the pairs' rope and ρ
        rho = rank.rho[0] if isinstance(rank.rho, tuple) and len(rank.rho) == 1 else rank.rho
        rank = RankOptions(greater_is_better=rank.greater_is_better, threshold=rank.threshold, metric_rope=rank.rope,
                           rho=None if isinstance(rho, tuple) else rho, **rank.with_warmup().sampler_settings())
        refuses = RANKING_MODELS[model_across(rank, means=collected.layout == "means")].refuse is not None
        rank = dataclasses.replace(rank, skip_missing=refuses and _ragged(collected, planned))
    if planned.source.drop_incomplete and not rank.drop_incomplete:
        rank = dataclasses.replace(rank, drop_incomplete=True)
    return rank


def _ragged(collected: CollectedScores, planned: Plan) -> bool:
    """Whether some model lacks a dataset another has (and the source keeps such datasets)."""
    if planned.source.drop_incomplete:
        return False
    scores = collected.scores[collected.scores["model"].isin(planned.models)]
    return bool((scores.groupby("dataset")["model"].nunique() < len(set(planned.models))).any())


def _ranking_scores(collected: CollectedScores, planned: Plan, rank: RankOptions) -> Scores:
    """The ranking's scores: one run per model and dataset, checked as the model that ranks them reads them
    (:func:`..families.ranking.engine.ranking_model`: the joint model on one dataset, every model on every fold; across
    datasets the hierarchical model, each dataset's models on every fold, a known ρ, or BBT, every model on every
    dataset unless it plays no game there; ``vs`` one of the models)."""
    scores = _one_run_each(collected.scores, planned.source.on_duplicate)
    scores = read_scores(scores, models=planned.models, greater_is_better=rank.greater_is_better,
                         drop_incomplete=rank.drop_incomplete, skip_missing=rank.skip_missing)
    family = RANKING_MODELS[ranking_model(scores, rank)]
    if planned.claim is not None:
        check_answered(planned.claim, family.name, family.claims)
    if family.metric_rope:  # the models that read the rope in metric units
        _check_rope(rank.metric_rope, collected, "metric_rope")
    if family.check:
        family.part("check")(scores, rank)
    return scores


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
