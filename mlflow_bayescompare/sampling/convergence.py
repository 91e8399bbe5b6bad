"""Convergence diagnostics of every parameter at once: rank-normalised split R-hat, and bulk and tail effective
sample sizes, as defined by Vehtari, Gelman, Simpson, Carpenter and Bürkner, *Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC*, Bayesian Analysis 16(2), 2021 (the ESS of
several chains: its Sec. 3.2, with Geyer's initial monotone sequence; tail ESS: the smaller of the 5% and 95%
quantiles').

The numbers are arviz's ``rhat(method="rank")``, ``ess(method="bulk")`` and ``ess(method="tail")``
(``tests/test_convergence.py`` checks them against arviz).  arviz 0.23 computes them element by element in a Python
loop: 0.41 s per fit of 100 datasets, most of a matrix pair's time outside Stan, against 0.23 s here, where every
element of every parameter is one row of the same arrays.  Arrays below are ``(elements, chains, draws)``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import fft, special, stats

__all__ = ["rhat", "ess_bulk", "ess_tail", "stacked"]

TAIL_QUANTILES = (0.05, 0.95)


def stacked(draws: Mapping[str, np.ndarray]) -> np.ndarray:
    """Every element of every ``(chains, draws, *dims)`` array of ``draws`` as one row of an
    ``(elements, chains, draws)`` array."""
    rows = [np.moveaxis(np.asarray(a, dtype=float).reshape(a.shape[0], a.shape[1], -1), 2, 0)
            for a in draws.values()]
    return np.concatenate(rows, axis=0)


def rhat(x: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat of each row: the larger of the bulk R-hat (of the rank-normalised split chains)
    and the tail R-hat (of the same, folded about the median).  NaN with fewer than 2 chains or 4 draws, or a NaN
    draw."""
    split = _split_chains(x)
    folded = np.abs(split - np.median(split.reshape(len(split), -1), axis=1)[:, None, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.maximum(_classic_rhat(_rank_normalised(split)), _classic_rhat(_rank_normalised(folded)))
    return np.where(_invalid(x, min_chains=2), np.nan, value)


def ess_bulk(x: np.ndarray) -> np.ndarray:
    """Bulk effective sample size of each row: the ESS of the rank-normalised split chains."""
    value = _ess(_rank_normalised(_split_chains(x)))
    return np.where(_invalid(x, min_chains=1), np.nan, value)


def ess_tail(x: np.ndarray) -> np.ndarray:
    """Tail effective sample size of each row: the smaller ESS of the indicators of the draws at or below the 5%
    and at or below the 95% quantile (type 7, as R's default)."""
    pooled = x.reshape(len(x), -1)
    value = np.minimum.reduce([
        _ess(_split_chains((x <= np.quantile(pooled, q, axis=1)[:, None, None]).astype(float)))
        for q in TAIL_QUANTILES])
    return np.where(_invalid(x, min_chains=1), np.nan, value)


def _invalid(x: np.ndarray, *, min_chains: int) -> np.ndarray:
    return np.isnan(x).any(axis=(1, 2)) | (x.shape[1] < min_chains) | (x.shape[2] < 4)


def _split_chains(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as two chains (the middle draw of an odd length dropped)."""
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half:]], axis=1)


def _rank_normalised(x: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks pooled over chains and draws, Blom's offset: Φ⁻¹((r − 3/8) / (S + 1/4))."""
    rows, chains, draws = x.shape
    ranks = stats.rankdata(x.reshape(rows, chains * draws), method="average", axis=1)
    return special.ndtri((ranks - 0.375) / (chains * draws + 0.25)).reshape(x.shape)


def _classic_rhat(x: np.ndarray) -> np.ndarray:
    """Gelman and Rubin's potential scale reduction of N-draw chains: sqrt(((N − 1) W + B) / (N W)), with B the
    between-chain and W the mean within-chain variance."""
    draws = x.shape[2]
    between = draws * x.mean(axis=2).var(axis=1, ddof=1)
    within = x.var(axis=2, ddof=1).mean(axis=1)
    return np.sqrt((between / within + draws - 1) / draws)


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size S / τ of each row, τ = −1 + 2 Σ ρ(t) from the chains' autocorrelations combined with
    the between-chain variance (Sec. 3.2); the sum truncated by Geyer's initial positive sequence and made monotone
    (the pairs' sums never grow), τ bounded below by 1 / log10(S).  A constant row counts every draw."""
    rows, chains, draws = x.shape
    size = chains * draws
    centred = x - x.mean(axis=2, keepdims=True)
    length = fft.next_fast_len(2 * draws)
    spectrum = np.fft.rfft(centred, n=length, axis=2)
    acov = np.fft.irfft(spectrum * np.conjugate(spectrum), n=length, axis=2)[:, :, :draws] / draws
    mean_var = acov[:, :, 0].mean(axis=1) * draws / (draws - 1.0)
    var_plus = mean_var * (draws - 1.0) / draws
    if chains > 1:
        var_plus = var_plus + x.mean(axis=2).var(axis=1, ddof=1)
    constant = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]
    rho[:, 0] = 1.0
    pairs = draws // 2
    pair_sums = rho[:, 0:2 * pairs:2] + rho[:, 1:2 * pairs:2]  # ρ(2j) + ρ(2j+1)
    # the pairs read: pair j while j - 1 is positive and 2j - 1 < draws - 3, from pair 1
    j = np.arange(1, pairs)
    readable = (2 * j - 1 < draws - 3) & (pair_sums[:, :-1] > 0)
    last = np.cumprod(readable, axis=1).sum(axis=1)  # the last pair read, L (0: none)
    monotone = np.minimum.accumulate(pair_sums, axis=1)
    before_last = np.arange(pairs)[None, :] < last[:, None]
    even = rho[np.arange(rows), 2 * last]  # ρ(2L): kept when pair L is non-negative or itself positive
    kept = (pair_sums[np.arange(rows), last] >= 0) | (even > 0)
    tau = -1.0 + 2.0 * np.where(before_last, monotone, 0.0).sum(axis=1) + np.where(kept, even, 0.0)
    tau = np.maximum(tau, 1.0 / np.log10(size))
    return np.where(constant, float(size), size / tau)
