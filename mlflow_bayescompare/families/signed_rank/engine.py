"""``signed_rank_test``: the Bayesian signed-rank test on one score per dataset per model, as Benavoli, Corani,
Demšar & Zaffalon, *Time for a change: a tutorial for comparing multiple classifiers through Bayesian analysis*
(JMLR 18, 2017) use it with a rope, after Benavoli et al., *A Bayesian Wilcoxon signed-rank test based on the
Dirichlet process* (ICML 2014).

Model.  z_1 … z_q are the per-dataset differences x = a − b (the paper's orientation, as in :mod:`.result`).  Their
distribution gets a Dirichlet-process prior DP(s, δ_{z0}) whose base measure is one pseudo-observation z_0 = 0 of
weight s; the posterior is DP(s + q, …), and its draws are weights w = (w_0, w_1 … w_q) ~ Dirichlet(s, 1, …, 1) on
(z_0, z_1 … z_q).  Each draw gives the probability that a Walsh average (z_i + z_j)/2, the statistic of Wilcoxon's
signed-rank test, lies left of, inside or right of the rope [−r, r]:

    θ_left = Σ_i Σ_j w_i w_j [z_i + z_j < −2r],   θ_right = Σ_i Σ_j w_i w_j [z_i + z_j > 2r],
    θ_rope = 1 − θ_left − θ_right,

a Walsh average exactly on ±r counting half to its side and half to the rope (the Heaviside step with H(0) = ½ of
the authors' code and of baycomp's ``SignedRankTest``).  P(left), P(rope), P(right) are the shares of draws in which
each θ is the largest (:func:`.posterior.winner_fractions`), as for the hierarchical test.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...scores.tensor import MEANS_COLUMNS, CVTensor, DatasetMeans, dataset_means
from ...shared import baselines, posterior_summary
from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.options import FitOptions, build
from ...vocabulary.outcomes import Orientation, TwoModelResult, json_ready
from ...vocabulary.versions import versions

__all__ = ["signed_rank_test", "SignedRankResult", "as_means", "walsh_regions", "PRIOR_STRENGTH", "FEW_DATASETS",
           "too_few"]

#: Weight s of the prior's pseudo-observation at 0: baycomp's and scmamp's default, and the authors' R code's.
PRIOR_STRENGTH = 0.5
#: Below this many datasets the result carries a warning.
FEW_DATASETS = 5
_BLOCK = 10_000  # Dirichlet draws per block: memory is about 3 × block × (q + 1) floats


@dataclass
class SignedRankResult(TwoModelResult):
    """Summary of one Bayesian signed-rank test of model A against model B on q datasets.

    Attributes (the same as :class:`.HierarchicalResult`'s where they apply):
        p_left, p_rope, p_right: the paper's P(left), P(rope), P(right); they sum to 1.
        p_a_better, p_b_better, probabilities: the same, oriented by ``greater_is_better``.
        next_probs: (samples, 3) array of the sampled (θ_left, θ_rope, θ_right), the points of the probability
            simplex.
        verdict, decision, odds, evidence: as for the hierarchical test (:mod:`.summary`).
        datasets: one row per dataset in input order: dataset, score_a, score_b (NaN when only differences were
            given), diff (a − b) and outcome (the side of the rope that dataset's difference alone is on).
        signed_rank_p: two-sided frequentist Wilcoxon signed-rank p-value on the same differences.
        diagnostics: samples, mc_se_max (the largest Monte-Carlo standard error of the three probabilities),
            sampling_seconds, warnings (list of str).
        settings: everything needed to reproduce the result (test, rope, seed, chains, draws, samples,
            prior_strength, versions, ...).
    """

    test: ClassVar[str] = "signed-rank"

    datasets: pd.DataFrame
    signed_rank_p: float
    diagnostics: dict[str, Any]
    settings: dict[str, Any]

    @property
    def n_datasets(self) -> int:
        """The datasets compared (one row each in :attr:`datasets`)."""
        return len(self.datasets)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (no samples): :meth:`.HierarchicalResult.to_dict`'s keys that apply, plus
        ``test`` and ``datasets``."""
        return json_ready({
            **self.common_dict(),
            "signed_rank_p": self.signed_rank_p,
            "diagnostics": self.diagnostics,
            "settings": self.settings,
            "datasets": self.datasets.to_dict(orient="records"),
        })


def signed_rank_test(scores_a=None, scores_b=None, *, diffs=None, datasets=None, model_a: str | None = None,
                     model_b: str | None = None, options: FitOptions | None = None,
                     prior_strength: float = PRIOR_STRENGTH, **settings) -> SignedRankResult:
    """Compare model A with model B on one score per dataset.

    Args:
        scores_a, scores_b: one score per dataset for each model (1-D, e.g. the cross-validation means); or a
            :class:`.DatasetMeans` (from :meth:`.CollectedScores.means`) or a per-fold :class:`.CVTensor` (its
            folds averaged) as ``scores_a``.
        diffs: the differences ``a - b`` instead of the scores.
        datasets: their names (default ``dataset 0`` …).
        options: a :class:`~.options.FitOptions`; ``settings`` are its fields as keywords, which override it.  The
            test uses ``rope``, ``greater_is_better``, ``threshold``, ``seed`` (drawn and recorded when None) and
            ``chains`` × ``draws`` as the number of Dirichlet samples: the defaults, 4 × 1000, give 4000 samples and a
            Monte-Carlo standard error of at most 0.008 on each probability; ``draws=12_500`` with 4 chains gives
            baycomp's default of 50 000 (at most 0.0022).  Cost: about samples × q² operations.
        prior_strength: the weight s of the pseudo-observation at 0 (:data:`PRIOR_STRENGTH`).

    Returns:
        :class:`SignedRankResult`, oriented as the hierarchical test's: x = a − b, the paper's *right* (x > rope) is
        "A better" when greater is better.
    """
    opts = build(FitOptions, options, **settings)
    means = as_means(scores_a, scores_b, diffs, datasets, model_a, model_b)
    if isinstance(prior_strength, bool) or not (isinstance(prior_strength, (int, float))
                                                  and math.isfinite(prior_strength) and prior_strength > 0):
        raise InputError(f"prior_strength must be a finite number > 0; got {prior_strength!r}")
    opts = opts.with_seed()
    samples = opts.chains * opts.draws
    started = time.perf_counter()
    thetas = _sample(means.diffs, opts.rope, samples, prior_strength, np.random.default_rng(opts.seed))
    seconds = time.perf_counter() - started
    p_left, p_rope, p_right = posterior_summary.winner_fractions(thetas)
    orientation = Orientation(opts.greater_is_better)
    probs = orientation.orient(p_left, p_rope, p_right)
    odds = posterior_summary.posterior_odds(probs, samples)
    decision, sentence = posterior_summary.verdict(probs, odds, means.model_a, means.model_b, opts.threshold)
    return SignedRankResult(
        model_a=means.model_a, model_b=means.model_b, greater_is_better=opts.greater_is_better, rope=opts.rope,
        p_left=p_left, p_rope=p_rope, p_right=p_right, next_probs=thetas, verdict=sentence, decision=decision,
        odds=odds, evidence=posterior_summary.evidence(odds), datasets=_table(means, opts.rope, orientation),
        signed_rank_p=baselines.signed_rank_p(means.diffs),
        diagnostics=_diagnostics(means, opts.rope, (p_left, p_rope, p_right), samples, seconds),
        settings={"test": SignedRankResult.test, "rope": opts.rope, "greater_is_better": opts.greater_is_better,
                  "threshold": opts.threshold, "seed": opts.seed, "chains": opts.chains, "draws": opts.draws,
                  "samples": samples, "prior_strength": float(prior_strength), "prior_point": 0.0,
                  "versions": versions()},
    )


def walsh_regions(diffs: np.ndarray, rope: float, weights: np.ndarray) -> np.ndarray:
    """(θ_left, θ_rope, θ_right) of each row of Dirichlet ``weights`` (draws × (q + 1), the pseudo-observation
    z_0 = 0 first, then ``diffs``): the module's equations, as a (draws, 3) array."""
    z = np.concatenate([[0.0], np.asarray(diffs, dtype=np.float64)])
    sums = z[:, None] + z[None, :]
    above = (sums > 2 * rope) + 0.5 * (sums == 2 * rope)
    below = (sums < -2 * rope) + 0.5 * (sums == -2 * rope)
    left = np.einsum("si,sj,ij->s", weights, weights, below, optimize=True)
    right = np.einsum("si,sj,ij->s", weights, weights, above, optimize=True)
    return np.column_stack([left, 1 - left - right, right])


def _sample(diffs: np.ndarray, rope: float, samples: int, prior_strength: float,
            rng: np.random.Generator) -> np.ndarray:
    """``samples`` draws of (θ_left, θ_rope, θ_right), in blocks of ``_BLOCK`` Dirichlet draws."""
    alpha = np.concatenate([[prior_strength], np.ones(len(diffs))])
    blocks = [walsh_regions(diffs, rope, rng.dirichlet(alpha, size=min(_BLOCK, samples - start)))
              for start in range(0, samples, _BLOCK)]
    return np.concatenate(blocks)


# --------------------------------------------------------------------------------------------------- inputs


def as_means(scores_a=None, scores_b=None, diffs=None, datasets=None, model_a=None, model_b=None) -> DatasetMeans:
    """The per-dataset scores of any input form :func:`signed_rank_test` accepts; every problem in one
    :class:`InputError`, at least 2 datasets."""
    if isinstance(scores_a, DatasetMeans):
        means = scores_a
    elif isinstance(scores_a, CVTensor):
        means = dataset_means(scores_a)
    else:
        means = _from_arrays(scores_a, scores_b, diffs, datasets, str(model_a or "A"), str(model_b or "B"))
    if len(means.datasets) < 2:
        raise InputError(too_few(means.datasets), header="Cannot run the signed-rank test:")
    return means


def _from_arrays(scores_a, scores_b, diffs, datasets, model_a: str, model_b: str) -> DatasetMeans:
    if diffs is not None and (scores_a is not None or scores_b is not None):
        raise InputError("pass either scores_a and scores_b, or diffs=, not both")
    if diffs is None and (scores_a is None or scores_b is None):
        raise InputError("pass both scores_a and scores_b, or diffs=")
    problems: list[str] = []
    given = {"diffs": diffs} if diffs is not None else {"scores_a": scores_a, "scores_b": scores_b}
    values = {name: _vector(x, name, problems) for name, x in given.items()}
    if model_a == model_b:
        problems.append(f"model_a and model_b are both '{model_a}'; compare two different models")
    if problems:
        raise InputError(problems, header="Cannot run the signed-rank test:")
    sizes = {name: len(v) for name, v in values.items()}
    if len(set(sizes.values())) > 1:
        problems.append(f"scores_a has {sizes['scores_a']} datasets but scores_b has {sizes['scores_b']}")
    q = max(sizes.values())
    names = [f"dataset {i}" for i in range(q)] if datasets is None else [str(d) for d in datasets]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if len(names) != q:
        problems.append(f"datasets has {len(names)} names for {q} datasets")
    elif repeated:
        problems.append(f"dataset names repeat: {', '.join(map(repr, repeated))}")
    elif len(set(sizes.values())) == 1:
        problems += _nonfinite(values, names, model_a, model_b) + too_few(names)
    if problems:
        raise InputError(problems, header="Cannot run the signed-rank test:")
    a = values.get("scores_a", np.full(q, np.nan))
    b = values.get("scores_b", np.full(q, np.nan))
    d = values["diffs"] if "diffs" in values else a - b
    table = pd.DataFrame({"dataset": names, "score_a": a, "score_b": b, "diff": d, "n": 1, "run_id_a": None,
                          "run_id_b": None})[MEANS_COLUMNS]
    return DatasetMeans(model_a, model_b, names, a, b, d, table)


def _vector(x, name: str, problems: list[str]) -> np.ndarray:
    """``x`` as a 1-D float array; non-numeric or per-fold (2-D) input noted in ``problems``."""
    try:
        v = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        problems.append(f"{name} holds non-numeric values")
        return np.array([])
    if v.ndim != 1:
        problems.append(f"{name} must be 1-D, one score per dataset; got shape {v.shape} (for per-fold scores use "
                        "hierarchical_test, or pass a CVTensor to average its folds)")
        return v.ravel()
    return v


def _nonfinite(values: dict[str, np.ndarray], names: list[str], model_a: str, model_b: str) -> list[str]:
    """One problem per dataset with a NaN or infinite value, naming the model (or the difference)."""
    label = {"scores_a": f"score of '{model_a}'", "scores_b": f"score of '{model_b}'", "diffs": "difference"}
    out = []
    for i in np.flatnonzero(~np.all([np.isfinite(v) for v in values.values()], axis=0)):
        bad = [f"{label[k]} is {v[i]}" for k, v in values.items() if not np.isfinite(v[i])]
        out.append(f"dataset '{names[i]}': {', '.join(bad)}")
    return out


def too_few(names: list[str]) -> list[str]:
    """The problem of fewer than 2 datasets (named), with the one-dataset test."""
    if len(names) >= 2:
        return []
    which = f" ({', '.join(map(repr, names))})" if names else ""
    return [f"{len(names)} dataset{which}: the signed-rank test compares two models across datasets and needs at "
            f"least 2 ({FEW_DATASETS} or more for a reliable answer); on one dataset compare the per-fold scores "
            "(the Bayesian correlated t-test)"]


# --------------------------------------------------------------------------------------------------- summaries


def _table(means: DatasetMeans, rope: float, orientation: Orientation) -> pd.DataFrame:
    """One row per dataset: the two scores, their difference and the side of the rope it is on, oriented."""
    side = np.where(means.diffs < -rope, 0, np.where(means.diffs > rope, 2, 1))
    return pd.DataFrame({"dataset": means.datasets, "score_a": means.scores_a, "score_b": means.scores_b,
                         "diff": means.diffs, "outcome": np.asarray(orientation.sides)[side]})


def _diagnostics(means: DatasetMeans, rope: float, probs: tuple[float, float, float], samples: int,
                 seconds: float) -> dict[str, Any]:
    """Monte-Carlo error, time, and warnings (logged once): few datasets, every difference inside the rope."""
    warnings = []
    q = len(means.datasets)
    if q < FEW_DATASETS:
        warnings.append(f"only {q} datasets: the signed-rank test rests on very few differences and on the prior's "
                        "pseudo-observation at 0, and its probabilities can be high on little evidence; add datasets "
                        "before trusting a decision")
    if np.all(np.abs(means.diffs) <= rope):
        warnings.append(f"every mean difference is inside the rope (|a - b| <= {rope:g}): the posterior puts all its "
                        "mass in the rope, so P(rope) = 1 whatever the number of datasets")
    for warning in warnings:
        log.warning(warning)
    mc_se = max(math.sqrt(p * (1 - p) / samples) for p in probs)
    return {"samples": samples, "mc_se_max": mc_se, "sampling_seconds": seconds, "n_datasets": q,
            "warnings": warnings}
