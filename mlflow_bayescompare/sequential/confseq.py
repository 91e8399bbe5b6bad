"""The anytime-valid cross-check: a confidence sequence for the mean of bounded paired differences, and the
decision it supports against the rope.

The sequence is the predictable plug-in empirical-Bernstein confidence sequence (PrPl-EB) of I. Waudby-Smith and
A. Ramdas, *Estimating means of bounded random variables by betting*, JRSS-B 86(1), 2024, Theorem 2 (eqs. 13-15):
for X_1, X_2, … in [0, 1] whose conditional mean given the past is μ,

    C_t = [ Σλ_i X_i / Σλ_i  ±  (log(2/α) + Σ v_i ψ_E(λ_i)) / Σλ_i ],   v_i = 4 (X_i − μ̂_{i−1})²,
    ψ_E(λ) = (−log(1 − λ) − λ)/4,   λ_t = min(√(2 log(2/α) / (σ̂²_{t−1} t log(1 + t))), c),
    μ̂_t = (1/2 + Σ_{i≤t} X_i)/(t + 1),   σ̂²_t = (1/4 + Σ_{i≤t} (X_i − μ̂_i)²)/(t + 1),

covers μ at every t at once with probability ≥ 1 − α, whatever the stopping rule; read at the design's looks and
intersected over them (as here) it is a confidence sequence too, the same in a look and in the simulation.  Why
this one: it is closed form, so a whole simulation runs as cumulative sums (the hedged betting sequence of the
same paper's Theorem 3 is tighter but needs a grid of candidate means per look), it adapts to the variance (the
Hoeffding sequence would not), and it assumes nothing but the bounds.  Howard et al. (Annals of Statistics 49,
2021) give empirical-Bernstein sequences of the same order.

What it assumes, and what it cannot do: the units are bounded (a difference of two scores in ``score_range``) and
each unit's conditional mean given the ones before is the same μ (independent units, or a martingale).  Folds of
one cross-validation repeat share training data, so for ``correlated-t`` the units are the per-repeat mean
differences, independent across repeats given the dataset: the sequence then covers *this dataset's* expected
difference over random partitions, not the correlated t-test's μ, which also averages over datasets.  Its width
cannot fall below about log(2/α)/(c·t) times the range, whatever the variance (an unseen rare extreme value is
never ruled out), so it needs at least log(2/α)·range/(c·rope) units to decide anything: with differences in
[−1, 1] and a rope of 0.01, thousands of units — a cross-check for evaluation items, rarely decisive over repeats.
"""

from __future__ import annotations

import numpy as np

from .rule import LEFT, NONE, RIGHT, ROPE

__all__ = ["confidence_sequence", "cs_decision", "BET_CAP"]

#: c, the largest bet (Waudby-Smith & Ramdas suggest 1/2 or 3/4): a larger cap lowers the floor log(2/α)/(c·t)
BET_CAP = 0.75


def confidence_sequence(differences, alpha: float, half_range: float, at=None) -> tuple[np.ndarray, np.ndarray]:
    """The PrPl-EB confidence sequence of the mean of ``differences`` (last axis: the units in arrival order, within
    [−half_range, half_range]), read after the units counted by ``at`` (default: after each) and intersected over
    those reads: (low, high) in the differences' units, one column per read."""
    x = (np.asarray(differences, dtype=float) + half_range) / (2 * half_range)  # in [0, 1]
    units = x.shape[-1]
    t = np.arange(1, units + 1)
    mean = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    variance = (0.25 + np.cumsum((x - mean) ** 2, axis=-1)) / (t + 1)
    mean_before, variance_before = np.empty_like(x), np.empty_like(x)  # the predictable μ̂_{t−1}, σ̂²_{t−1}
    mean_before[..., 0], variance_before[..., 0] = 0.5, 0.25
    mean_before[..., 1:], variance_before[..., 1:] = mean[..., :-1], variance[..., :-1]
    log_term = np.log(2 / alpha)
    bet = np.minimum(np.sqrt((2 * log_term / (t * np.log1p(t))) / variance_before), BET_CAP)
    spend = (x - mean_before) ** 2 * (-np.log1p(-bet) - bet)  # v_i ψ_E(λ_i) = 4(X_i − μ̂_{i−1})² ψ_E(λ_i)
    reads = np.arange(units) if at is None else np.asarray(at) - 1
    total_bet = np.cumsum(bet, axis=-1)[..., reads]
    centre = np.cumsum(bet * x, axis=-1)[..., reads] / total_bet
    margin = (log_term + np.cumsum(spend, axis=-1)[..., reads]) / total_bet
    low = np.maximum.accumulate(np.maximum(centre - margin, 0), axis=-1)
    high = np.minimum.accumulate(np.minimum(centre + margin, 1), axis=-1)
    return 2 * half_range * low - half_range, 2 * half_range * high - half_range


def cs_decision(low, high, rope: float) -> np.ndarray:
    """The paper's side the sequence decides, as :func:`.rule.decide` codes: right when it lies above the rope,
    left below it, rope when it lies inside [−rope, rope], none (0) otherwise."""
    low, high = np.asarray(low), np.asarray(high)
    return np.select([low > rope, high < -rope, (low >= -rope) & (high <= rope)], [RIGHT, LEFT, ROPE], NONE)
