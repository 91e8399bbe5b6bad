"""The hierarchical test's stand-in, used only to simulate a ``hierarchical`` design's operating characteristics
(a Stan fit per simulated look would take hours; a look itself fits the real test).

The hierarchical test (Corani, Benavoli, Demšar, Mangili & Zaffalon, Machine Learning 106, 2017; the package's
``stan/hierarchical.stan``) answers with the *next dataset's* probabilities: over the posterior of (δ0, σ0, ν), the
share in which the left area, the rope's area or the right area of t_ν(δ0, σ0) is the largest (its step 2-3;
:func:`..shared.posterior_summary.winner_fractions`).  The stand-in keeps that answer and simplifies the model:

1. each dataset's δ_i is known through its correlated t-test (Corani & Benavoli 2015): x̄_i with the variance
   se_i² = s_i² (1/n_i + ρ/(1 − ρ)) (Nadeau & Bengio), taken as Normal (the classic random-effects meta-analysis);
2. δ_i ~ N(δ0, σ0²) (the hierarchical test's Gaussian variant, ν → ∞), δ0 flat, σ0 ~ U(0, 1000·sd(x̄)) (the
   paper's bound, Sec. 3).  Given σ0, δ0's posterior is then exactly N(μ(σ0), 1/W(σ0)) with w_i = 1/(σ0² + se_i²),
   W = Σ w_i, μ = Σ w_i x̄_i / W, and σ0's marginal posterior is ∝ Π w_i^½ · W^(−½) · exp(−½ Σ w_i (x̄_i − μ)²);
3. at a given σ0 the right area of N(δ0, σ0) is the largest exactly when δ0 > c(σ0) (the left when δ0 < −c(σ0)),
   c(σ0) = rope·g(σ0/rope) the root of Φ((c − r)/σ0) = Φ((r − c)/σ0) − Φ((−r − c)/σ0), 0 once
   Φ(r/σ0) ≤ 2/3 (the rope's area can no longer be the largest); so P(right) = E_σ0[Φ((μ − c)√W)], P(left) =
   E_σ0[Φ((−c − μ)√W)]: one integral over log σ0, from 10^−2.5 times the data's spread sqrt(var(x̄) + mean(se²))
   to the prior's bound, by Gauss-Legendre (:data:`NODES` nodes) on each side of the kink where c reaches 0 (within
   0.001 of a 3000-node trapezoid rule on 3 to 20 datasets).

Vectorised over simulated paths and looks.  ``tests/test_sequential_standin.py`` checks it against a brute-force
2-D grid of the same model; ``benchmarks/bench_watch_hierarchical.py`` measures how often its decision equals the
real Stan test's (benchmarks/README.md, "The hierarchical watch's stand-in").
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["standin_masses", "winning_offset", "NODES", "SIGMA0_BOUND"]

#: Gauss-Legendre nodes of the integral over log σ0 on each of its two segments (module docstring, step 3)
NODES = 24
#: σ0's uniform prior reaches this many times sd(x̄) (the paper's bound, ``prepare.py``'s sigma0_high)
SIGMA0_BOUND = 1000.0
_LEGENDRE_X, _LEGENDRE_W = np.polynomial.legendre.leggauss(NODES)
_UNIT_X, _UNIT_W = (_LEGENDRE_X + 1) / 2, _LEGENDRE_W / 2  # on [0, 1]
_BELOW, _ABOVE = np.log(10**-2.5), np.log(10**3.5)  # the integral's reach around the data's spread, in log σ0
#: Φ(1/t) = 2/3 here: from σ0 = t·rope on, the rope's area is never the largest
_NO_ROPE = 1 / special.ndtri(2 / 3)
_TABLE_T = np.logspace(-4, np.log10(_NO_ROPE), 400)


def _offset_by_bisection(t: np.ndarray) -> np.ndarray:
    """g(t) = c/rope at σ0 = t·rope, for t below :data:`_NO_ROPE`, by 60 bisections on [0, 1 + 10t]."""
    low, high = np.zeros_like(t), 1 + 10 * t
    for _ in range(60):
        a = (low + high) / 2
        right_wins = special.ndtr((a - 1) / t) > special.ndtr((1 - a) / t) - special.ndtr((-1 - a) / t)
        low, high = np.where(right_wins, low, a), np.where(right_wins, a, high)
    return (low + high) / 2


_TABLE_G = _offset_by_bisection(_TABLE_T)


def winning_offset(sigma0, rope: float):
    """c(σ0): the right area of N(δ0, σ0) around (−rope, rope) is the largest exactly when δ0 > c (the module's
    step 3); interpolated in log σ0 from a table of bisections (to ~1e-4·rope)."""
    t = np.asarray(sigma0, dtype=float) / rope
    inside = t < _NO_ROPE
    g = np.interp(np.log(np.where(inside, np.maximum(t, _TABLE_T[0]), 1.0)), np.log(_TABLE_T), _TABLE_G)
    return np.where(inside, rope * g, 0.0)


def _nodes(log_spread, log_bound, log_kink):
    """Nodes and weights in log σ0 from 10^−2.5 times the spread (or 10⁻³ times the bound, if lower) to the prior's
    bound (at most 10^3.5 times the spread), in two Gauss-Legendre segments split where c(σ0) reaches 0 (its kink)."""
    low = np.minimum(log_spread + _BELOW, log_bound - 3 * np.log(10))
    high = np.minimum(log_spread + _ABOVE, log_bound)
    kink = np.clip(log_kink, low, high)
    nodes = np.concatenate([low + (kink - low) * _UNIT_X, kink + (high - kink) * _UNIT_X], axis=-1)
    weights = np.concatenate([(kink - low) * _UNIT_W, (high - kink) * _UNIT_W], axis=-1)
    return nodes, np.maximum(weights, 1e-300)  # an empty segment (the kink outside) weighs nothing


def standin_masses(means, variances, count, rho: float, rope: float):
    """The stand-in's P(left), P(rope), P(right) (the paper's sides of δ = a − b) from each dataset's mean x̄_i and
    variance s_i² (ddof = 1) of its n_i = ``count`` differences; the datasets along the last axis, any leading axes
    (paths, looks) broadcast."""
    xbar = np.asarray(means, dtype=float)[..., None, :]  # (..., 1, datasets): the nodes go on axis -2
    se2 = (np.asarray(variances, dtype=float) * (1 / np.asarray(count, dtype=float) + rho / (1 - rho)))[..., None, :]
    among = np.var(xbar, axis=-1, ddof=1)  # (..., 1)
    within = np.sqrt(np.asarray(variances, dtype=float)).mean(axis=-1)[..., None]
    bound = SIGMA0_BOUND * np.where(among > 0, np.sqrt(among), within)  # prepare.py's fallback when all x̄ agree
    log_sigma0, log_step = _nodes(np.log(np.maximum(among + se2.mean(axis=-1), 1e-300)) / 2,
                                  np.log(np.maximum(bound, 1e-300)), np.log(_NO_ROPE * rope))
    sigma0 = np.exp(log_sigma0)  # (..., nodes)
    w = 1 / (sigma0[..., None] ** 2 + np.maximum(se2, 1e-300))
    total = w.sum(axis=-1)
    centre = (w * xbar).sum(axis=-1) / total
    log_like = 0.5 * np.log(w).sum(axis=-1) - 0.5 * np.log(total) - 0.5 * (w * (xbar - centre[..., None]) ** 2).sum(
        axis=-1)
    log_weight = log_like + log_sigma0 + np.log(log_step)  # flat in σ0: dσ0 = σ0 d log σ0
    weight = np.exp(log_weight - log_weight.max(axis=-1, keepdims=True))
    weight /= weight.sum(axis=-1, keepdims=True)
    c, root = winning_offset(sigma0, rope), np.sqrt(total)
    right = (weight * special.ndtr((centre - c) * root)).sum(axis=-1)
    left = (weight * special.ndtr((-c - centre) * root)).sum(axis=-1)
    return left, np.maximum(1 - left - right, 0.0), right
