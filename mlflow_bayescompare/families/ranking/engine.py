"""The router of the rankings: ``rank_models`` ranks several models across datasets with the hierarchical model of
their fold scores (:mod:`.hierarchical_k`, Corani et al. 2017 extended to k models: the default) or with the Bayesian
Bradley-Terry model (:mod:`.bbt`, Wainer 2023); on one dataset, with the joint correlated-t model of their fold scores
(:mod:`.joint`).  :func:`ranking_model` is the one routing rule, :func:`rank_scores` routes; the scores are read by
:mod:`.scores`.
"""

from __future__ import annotations

from ...vocabulary.errors import InputError
from ...vocabulary.options import RankOptions, build
from ...vocabulary.progress import Progress
from .. import RANKING_MODELS, taking
from .. import ranking_model as family
from .common import HEADER, RankedModels
from .scores import Scores, read_scores

__all__ = ["check_vs", "rank_models", "rank_scores", "ranking_model", "model_across"]


def rank_models(data, *, models=None, dataset: str | None = None, folds: int | None = None,
                options: RankOptions | None = None, progress: Progress | None = None,
                **settings) -> RankedModels:
    """Rank models across datasets by the hierarchical model of their fold scores (:mod:`.hierarchical_k`, the
    default) or by their wins (BBT, Wainer 2023: ``model="bbt"``, and on per-dataset means), or on one dataset by
    the joint correlated-t model of their fold scores (:mod:`.joint`).

    Args:
        data: a DataFrame in one of three forms.  *Tidy*: columns dataset, model, score and optionally repeat and
            fold (folds are paired across models by (repeat, fold); without them, one row per dataset and model).
            *Wide*: one column of scores per model and the dataset column named by ``dataset``, one row per fold
            (paired by their order within a dataset, as bbtcomp reads them).  *Means*: wide without a dataset
            column, one row per dataset (named by the index).
        models: the models to rank, in the order of the tables (default: every model, in order of appearance).
        dataset: the dataset column (default ``dataset`` in a tidy table; none in a wide one).
        folds: the folds of the cross-validation (ρ = 1/folds); default: a tidy table's ``folds`` column, or its
            fold labels when a ``repeat`` column pairs them; ``rho=`` gives ρ instead.
        options: a :class:`~.options.RankOptions`; ``settings`` are its fields as keywords instead, which override
            it (local_rope, local_rope_factor, ties, hyper_prior, rope, chains, seed, drop_incomplete, ...).
        progress: a hook receiving the stages ``compiling`` (once per machine) and ``sampling``.

    Returns:
        The result of the model that ranked: :class:`~.hierarchical_k.result.HierarchicalRankingResult`,
        :class:`~.bbt.result.RankingResult` or :class:`~.joint.result.JointRankingResult` (each a
        :class:`~.common.RankedModels`).
    """
    opts = build(RankOptions, options, **settings)
    scores = read_scores(data, models=models, dataset=dataset, greater_is_better=opts.greater_is_better,
                         drop_incomplete=opts.drop_incomplete, skip_missing=opts.skip_missing, folds=folds)
    return rank_scores(scores, opts, progress)


def rank_scores(scores: Scores, opts: RankOptions,
                progress: Progress | None = None) -> RankedModels:
    """:func:`rank_models` on scores already read (:func:`read_scores`, by ``opts``' direction and rules for
    missing scores): the joint correlated-t model on one dataset, across several the model of
    :func:`ranking_model` (each model's engine: its row of the family table)."""
    return family(ranking_model(scores, opts)).part("engine")(scores, opts, progress)


def ranking_model(scores: Scores, opts: RankOptions) -> str:
    """The name of the model that ranks ``scores``: ``joint-t`` on one dataset; across datasets ``opts.model``, where
    ``auto`` is the hierarchical model on fold scores and BBT on per-dataset means (one score per model and dataset).
    ``vs`` is refused by a model that does not answer it, and a model lacking a dataset by a model that refuses it
    (BBT unless ``skip_missing``, its rule: no game there); the hierarchical model takes such datasets as they are.
    Each model's rules are its row of the family table."""
    if len(scores.datasets) == 1:
        model = taking("one dataset", RANKING_MODELS).name
    else:
        model = model_across(opts, means=all(len(block) == 1 for block in scores.blocks))
    ranking = family(model)
    if ranking.refuse:
        ranking.part("refuse")(scores, opts)
    if opts.vs is not None and not ranking.versus:
        why = ("on one dataset" if ranking.takes == "one dataset" else f"on per-dataset means ({model} ranks them)"
               if opts.model == "auto" else f"under model {model}")
        raise InputError(f"vs compares the models with the hierarchical model across datasets (on one dataset: the "
                         f"joint model), which does not rank {why}", header=HEADER)
    check_vs(opts.vs, scores.models)
    return model


def check_vs(vs: str | None, models) -> None:
    """``vs`` names one of ``models`` (or ``best``, the leader): the pre-flight checks it on the models the run list
    holds, before any score is fetched."""
    if vs not in (None, "best") and vs not in models:
        raise InputError(f"vs {vs!r} is not among the models ranked ({', '.join(map(str, models))}); give one of "
                         "them, or best for the leader", header=HEADER)


def model_across(opts: RankOptions, means: bool) -> str:
    """The model that ranks across datasets: ``opts.model``, where ``auto`` is BBT on per-dataset ``means`` (one
    score per model and dataset) and the hierarchical model on fold scores (the models that take them)."""
    if opts.model != "auto":
        return opts.model
    return taking("means" if means else "folds", RANKING_MODELS).name
