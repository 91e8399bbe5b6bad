"""A ``hierarchical`` watch (:mod:`.watch`): two models' cross-validation runs on several datasets, read as their
repeats grow (:func:`read_datasets`), answered at each look by the hierarchical test (Corani et al. 2017) fitted by
Stan (:func:`stan_posterior`: :func:`..families.hierarchical.engine.hierarchical_test` on the package's compiled
``stan/hierarchical.stan``, its next dataset's P(left), P(rope), P(right)).

* The datasets: those named (``datasets``), else every dataset both models have, in name order.  Each dataset's
  repeats are paired as for ``correlated-t`` (:func:`.watchsources.paired_repeats`), and a look reads the repeats
  every dataset has (a repeat counts once every dataset has it): one row of scores per dataset.
* A fit takes about a second for tens of datasets; a look fits each scheduled size it reaches (from a fixed seed, so
  a size read again gives the same probabilities).  The fits of this process are kept by the scores they read, and
  the looks a watch run recorded are taken as fitted (:func:`remember`; their scores are checked by digest before
  the look is kept), so each size is fitted once per watch.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..families.hierarchical.engine import hierarchical_test
from ..reads.collect import collect_scores
from ..sequential import Design, Posterior
from ..vocabulary.errors import InputError
from ..vocabulary.options import PairOptions, SourceOptions
from ..vocabulary.outcomes import counted
from ..vocabulary.progress import notify
from .watchsources import WatchData, paired_repeats

__all__ = ["read_datasets", "stan_posterior", "remember", "FIT_SEED"]

#: the seed of every fit at a look: the same scores give the same probabilities
FIT_SEED = 0
_KEPT = 512  # fits kept in this process, by the scores they read
_fits: dict[str, tuple[float, float, float]] = {}


def read_datasets(client, design: Design, source: SourceOptions, pair: PairOptions, datasets: tuple[str, ...],
                  experiment_ids: list[str], progress=None) -> WatchData:
    """The two models' per-fold scores on each dataset so far: a row per dataset, the repeats every dataset has
    (the module's docstring)."""
    a, b = pair.model_a, pair.model_b
    collected = collect_scores(client, experiment_ids, source.metric, [a, b], filter_string=source.filter_string,
                               layout=source.layout, model_key=source.model_key, dataset_key=source.dataset_key,
                               folds=design.folds, progress=progress)
    names = _datasets(collected.scores, a, b, datasets)
    read = {d: paired_repeats(collected.scores, design, pair, d) for d in names}
    folds = design.folds
    common = min(len(r[0]) for r in read.values()) // folds
    notes = [f"dataset '{d}': {note}" for d, r in read.items() for note in r[3]]
    lagging = [d for d, r in read.items() if len(r[0]) // folds == common]
    if any(len(r[0]) // folds > common for r in read.values()):
        notes.append(f"{counted(common, 'repeat')} of every dataset read: {', '.join(lagging)} "
                     f"{'has' if len(lagging) == 1 else 'have'} no more yet")
        read = {d: paired_repeats(collected.scores, design, pair, d, common) if len(r[0]) // folds > common else r
                for d, r in read.items()}
    width = common * folds
    scores_a = np.array([r[0][:width] for r in read.values()]).reshape(len(names), width)
    scores_b = np.array([r[1][:width] for r in read.values()]).reshape(len(names), width)
    runs = [run for r in read.values() for run in r[2]]
    notes.insert(0, f"{counted(len(names), 'dataset')}: {', '.join(names)}")
    return WatchData(a, b, source.metric, None, scores_a, scores_b, runs, experiment_ids, notes)


def _datasets(scores, a: str, b: str, asked: tuple[str, ...]) -> list[str]:
    """The datasets asked for (both models must have each), else every dataset both have, in name order."""
    have = {m: set(scores.loc[scores["model"] == m, "dataset"]) for m in (a, b)}
    if asked:
        problems = [f"model '{m}' has no scores on dataset '{d}'" for d in asked for m in (a, b) if d not in have[m]]
        if len(set(asked)) != len(asked):
            problems.append(f"datasets names one dataset twice: {', '.join(asked)}")
        if problems:
            raise InputError(problems, header="Cannot watch:")
        return list(asked)
    shared = sorted(have[a] & have[b])
    if len(shared) < 3:
        raise InputError(f"models '{a}' and '{b}' share {counted(len(shared), 'dataset')}"
                         f"{': ' + ', '.join(shared) if shared else ''}; the hierarchical test reads at least 3 "
                         "(correlated-t watches one)", header="Cannot watch:")
    return shared


def _key(design: Design, diffs: np.ndarray) -> str:
    return hashlib.sha256(f"{design.fingerprint}:{diffs.shape}".encode() + diffs.tobytes()).hexdigest()


def _keep(key: str, masses: tuple[float, float, float]) -> None:
    if len(_fits) >= _KEPT:
        _fits.pop(next(iter(_fits)))
    _fits[key] = masses


def remember(design: Design, scores_a: np.ndarray, scores_b: np.ndarray, rows: list[dict]) -> None:
    """Take the recorded ``rows`` of a watch run (their oriented probabilities) as the fits at their sizes on these
    scores: a later call does not fit an earlier look again.  Were the scores not those the rows read, the look is
    refused by their digests (:mod:`.watchlook`) before anything is kept."""
    diffs = np.asarray(scores_a, dtype=float) - np.asarray(scores_b, dtype=float)
    for row in rows:
        end = row["size"] * (design.folds or 1)
        if end <= diffs.shape[-1]:
            a, rope, b = row["p_a_better"], row["p_rope"], row["p_b_better"]
            _keep(_key(design, diffs[..., :end]), (b, rope, a) if design.greater_is_better else (a, rope, b))


def stan_posterior(design: Design, progress=None) -> Posterior:
    """The :class:`~..sequential.posteriors.Posterior` of a ``hierarchical`` look: the rows of paired scores (one
    per dataset) → the hierarchical test's next-dataset P(left), P(rope), P(right) of δ = a − b, fitted by Stan
    (the package's default priors and sampler settings, seed :data:`FIT_SEED`, no model check)."""
    folds = design.folds

    def posterior(scores_a, scores_b, rope: float) -> tuple[float, float, float]:
        diffs = np.asarray(scores_a, dtype=float) - np.asarray(scores_b, dtype=float)
        key = _key(design, diffs)
        if key not in _fits:
            repeats = diffs.shape[-1] // (folds or 1)
            notify(progress, "sampling", f"fitting the hierarchical test on {len(diffs)} datasets at "
                                         f"{counted(repeats, 'repeat')}")
            fit = hierarchical_test(diffs=list(diffs), folds=folds, rho=design.rho, rope=rope,
                                    seed=FIT_SEED, model_check=False, progress=progress)
            _keep(key, (fit.p_left, fit.p_rope, fit.p_right))
        return _fits[key]

    return posterior
