"""``rank_one_dataset``: one joint Bayesian model of k models' per-fold scores on ONE dataset, the matrix-normal
generalisation of the Bayesian correlated t-test (Corani & Benavoli, Machine Learning 100, 2015).  No Stan.

Model.  Fold j (j = 1 … n, n = folds · repeats) gives the k models' scores y_j ∈ R^k, and Y (n × k) = 1μ' + E with
E ~ MN(0, M, Σ): the folds correlated by M (n × n, 1 on the diagonal and ρ off it, ρ = 1/folds as the correlated
t-test has it: they share training data), the models by Σ (k × k, unstructured: models are scored on the same folds).
Prior p(μ, Σ) ∝ |Σ|^(−k): flat on μ, and on Σ the improper inverse-Wishart limit with k − 1 degrees of freedom, the
one whose implied prior on every contrast's variance c'Σc is the correlated t-test's 1/σ².  (Jeffreys' |Σ|^(−(k+1)/2)
would leave n − k degrees of freedom below instead of n − 1, and a pair's posterior would no longer be its test's.)

Posterior.  With w = 1'M⁻¹1 = n/(1 + (n − 1)ρ), the GLS estimate of μ is the fold means ȳ (M⁻¹1 is proportional to
1), and the GLS residual scatter is S = (Y − 1ȳ')'M⁻¹(Y − 1ȳ') = R'R/(1 − ρ), R = Y − 1ȳ'.  Integrating Σ out leaves
p(μ | Y) ∝ |S + w(μ − ȳ)(μ − ȳ)'|^(−(n + k − 1)/2): μ is multivariate Student-t with n − 1 degrees of freedom,
location ȳ and scale Λ = S/(w(n − 1)).  A contrast c'μ is then Student-t with n − 1 degrees of freedom, location c'ȳ
and scale² c'Sc/(w(n − 1)) = (1/n + ρ/(1 − ρ)) s², s² the sample variance of the differences Yc: exactly the
correlated t-test of that pair.  So each pair's P(better / rope / worse) and interval are that test's, in closed form
(:func:`...correlated_t.formula.correlated_t_posterior`), and the pairs and the ranking agree by construction.

P(best) and the ranks need the joint posterior: they are read from seeded draws μ = ȳ + √(f/(g/(n − 1)))·R'z,
z ~ N(0, I_n), g ~ χ²(n − 1), f = 1/((1 − ρ)·w·(n − 1)): R'z has covariance R'R, so f·R'R = Λ (exact, and defined
when S is singular, e.g. with fewer folds than models).

A pair is *credible* by the rankings' one rule (:func:`..common.credible`): P(better), its mass beyond the rope on the
better side, reaches 1 − (1 − threshold)/2, which is Kruschke's HDI+ROPE rule (the ``threshold`` HDI of the difference,
central for a Student-t, lies wholly beyond the rope): with equal models that happens at most 1 − threshold of the
time, where "P(better) ≥ threshold" on either side would happen up to twice as often.  Against a reference (``vs``:
the leader or a model), each other model's row is its pair's correlated t-test again, with the verdict of the
hierarchical ranking's table against a reference (:func:`..common.verdict`: better or worse at the same level).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy import special, stats

from ....shared import posterior_summary
from ....vocabulary.console import log
from ....vocabulary.errors import InputError
from ....vocabulary.options import RankOptions, draw_seed
from ....vocabulary.outcomes import Orientation
from ....vocabulary.progress import CLOSED_FORM, Progress, notify
from ....vocabulary.versions import versions
from ...correlated_t import formula
from ..common import VERDICTS, credible, rank_table, verdict
from .result import JointRankingResult

__all__ = ["rank_one_dataset", "joint_inputs", "posterior_draws", "HEADER"]

HEADER = "Cannot rank the models on one dataset (the joint correlated-t model):"


def rank_one_dataset(scores, opts: RankOptions, progress: Progress | None = None) -> JointRankingResult:
    """Rank the models of ``scores`` (a :class:`~..scores.Scores` of one dataset, its blocks oriented so that
    greater is better, with the folds known or ``opts.rho`` given) by the joint model."""
    notify(progress, "sampling", f"{len(scores.models)} models on the folds of one dataset (joint correlated-t "
                                 f"model, {CLOSED_FORM})")
    started = time.perf_counter()
    y, rho, reason = joint_inputs(scores, opts)
    seed = opts.seed if opts.seed is not None else draw_seed()
    draws = posterior_draws(y, rho, opts.chains * opts.draws, np.random.default_rng(seed))
    sign = 1.0 if opts.greater_is_better else -1.0
    ranking = rank_table(sign * draws, list(scores.models), opts.hdi_prob)
    ranking = ranking.drop(columns=["strength", "strength_sd"]).assign(mean=sign * ranking["strength"])
    order = list(ranking["model"])
    columns = {m: y[:, i] for i, m in enumerate(scores.models)}
    ranking = _with_leader_gaps(ranking, columns, rho)
    pairs = _pair_table(columns, order, rho, opts)
    p_best = ranking["p_best"].to_numpy()
    mc_se = float(np.sqrt(p_best * (1 - p_best) / len(draws)).max())
    warnings = _warnings(pairs, opts.greater_is_better)
    reference = None if opts.vs is None else order[0] if opts.vs == "best" else opts.vs
    settings = {**opts.to_dict(), "seed": seed, "model": JointRankingResult.model, "datasets": list(scores.datasets),
                "models": list(scores.models), "folds": scores.folds, "n": len(y), "rho": rho, "rho_reason": reason,
                **({"vs_reference": reference} if reference is not None else {}), "versions": versions()}
    frame = pd.DataFrame(columns)
    return JointRankingResult(list(scores.models), ranking, pairs, frame, {
        "warnings": warnings, "mc_se_max": mc_se, "sampling_seconds": time.perf_counter() - started}, settings,
        draws.reshape(opts.chains, opts.draws, len(scores.models)),
        _versus_table(columns, order, reference, rho, opts) if reference is not None else None)


def joint_inputs(scores, opts: RankOptions) -> tuple[np.ndarray, float, str]:
    """The fold scores (n × k, metric units), ρ and its reason, checked: one dataset, a score for every model on
    every fold, at least 2 folds, a whole number of repeats, a known ρ.  Every problem at once."""
    sign = 1.0 if opts.greater_is_better else -1.0
    problems = []
    if len(scores.datasets) != 1:
        problems.append(f"the joint model ranks models on one dataset; got {len(scores.datasets)}")
    block = scores.blocks[0] if scores.blocks else np.empty((0, len(scores.models)))
    lacking = [m for i, m in enumerate(scores.models) if np.isnan(block[:, i]).any()]
    if lacking:
        problems.append(f"models without a score on every fold: {', '.join(map(str, lacking))} (the joint model "
                        "pairs every model's folds; skip_missing does not apply on one dataset)")
    n, folds = len(block), scores.folds
    if n < 2:
        problems.append(f"{n} fold score(s) per model; the joint model needs at least 2")
    if folds is not None and n % folds:
        problems.append(f"{n} scores per model is not a whole number of repeats of {folds} folds")
    if problems:
        raise InputError(problems, header=HEADER)
    rho, reason = formula.correlation(folds, opts.rho, None, None, header=HEADER)
    return sign * block, rho, reason


def posterior_draws(y: np.ndarray, rho: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws (size, k) of μ from its multivariate Student-t posterior (see the module's docstring)."""
    n = len(y)
    residuals = y - y.mean(axis=0)
    w = n / (1 + (n - 1) * rho)
    f = 1 / ((1 - rho) * w * (n - 1))
    z = rng.standard_normal((size, n))
    g = rng.chisquare(n - 1, size)
    return y.mean(axis=0) + np.sqrt(f / (g / (n - 1)))[:, None] * (z @ residuals)


def _interval(df: int, loc: float, scale: float, prob: float = posterior_summary.HDI_PROB) -> tuple[float, float]:
    """The central (here: highest-density) ``prob`` interval of the Student-t posterior; (loc, loc) for a point
    mass."""
    half = scale * float(special.stdtrit(df, (1 + prob) / 2))  # Student-t's quantile, without scipy.stats' checks
    return loc - half, loc + half


def _with_leader_gaps(ranking: pd.DataFrame, columns: dict[str, np.ndarray], rho: float) -> pd.DataFrame:
    """``ranking`` with diff_to_leader, diff_low and diff_high: μ_model − μ_leader (metric units) and its 95%
    interval."""
    leader = columns[ranking["model"].iloc[0]]
    gaps = []
    for model in ranking["model"]:
        df, loc, scale = formula.correlated_t_posterior(columns[model] - leader, rho)
        gaps.append((loc, *_interval(df, loc, scale)))
    return ranking.assign(**dict(zip(("diff_to_leader", "diff_low", "diff_high"), np.array(gaps).T)))


def _pair_table(columns: dict[str, np.ndarray], order: list[str], rho: float, opts: RankOptions) -> pd.DataFrame:
    """One row per pair, better first, in the ranking's order (see :class:`JointRankingResult`)."""
    orientation = Orientation(opts.greater_is_better)
    rows = []
    for i, better in enumerate(order):
        for worse in order[i + 1:]:
            df, loc, scale = formula.correlated_t_posterior(columns[better] - columns[worse], rho)
            probs = orientation.orient(*formula.correlated_t_masses(df, loc, scale, opts.metric_rope))
            sign = 1.0 if opts.greater_is_better else -1.0
            above = float(sign * loc > 0) if scale == 0 else float(stats.t.sf(0, df, loc=sign * loc, scale=scale))
            rows.append({"better": better, "worse": worse, "difference": loc,
                         **dict(zip(("hdi_low", "hdi_high"), _interval(df, loc, scale))), "scale": scale,
                         "p_better": probs["a_better"], "p_rope": probs["rope"], "p_worse": probs["b_better"],
                         "p_above": above})
    pairs = pd.DataFrame(rows)
    return pairs.assign(credible=credible(pairs, JointRankingResult.rule, opts.threshold))


def _versus_table(columns: dict[str, np.ndarray], order: list[str], reference: str, rho: float,
                  opts: RankOptions) -> pd.DataFrame:
    """Every model but ``reference``, in the ranking's order, against it (see :class:`JointRankingResult`)."""
    orientation, rows = Orientation(opts.greater_is_better), []
    for model in (m for m in order if m != reference):
        df, loc, scale = formula.correlated_t_posterior(columns[model] - columns[reference], rho)
        probs = orientation.orient(*formula.correlated_t_masses(df, loc, scale, opts.metric_rope))
        three = probs["a_better"], probs["rope"], probs["b_better"]
        rows.append({"model": model, "reference": reference, "p_better": three[0], "p_rope": three[1],
                     "p_worse": three[2], "difference": loc,
                     **dict(zip(("hdi_low", "hdi_high"), _interval(df, loc, scale))),
                     "verdict": VERDICTS[verdict(*three, opts.threshold)]})
    return pd.DataFrame(rows)


def _warnings(pairs: pd.DataFrame, greater_is_better: bool) -> list[str]:
    """Pairs whose fold differences are constant (their posterior is a point mass), logged once."""
    warnings = [f"{r.better} − {r.worse} is {r.difference:.4g} on every fold (zero variance): its posterior is a "
                "point mass, so its probabilities are 0 or 1" for r in pairs.itertuples(index=False) if r.scale == 0]
    for warning in warnings:
        log.warning(warning)
    return warnings
