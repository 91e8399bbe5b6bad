"""Turn the CV differences into the Stan data block, as the authors' R driver does (``hierarchical_test.R``).

1. ρ_i = 1/folds_i (the Nadeau-Bengio correlation n_test/n_total, eq. ttest-nadeau), or the ρ given.
2. Scale every difference and the rope by the mean per-dataset standard deviation (ddof = 1, as R's ``sd``).
3. A dataset whose differences are all equal gets noise U(-rope, rope) added to its first half and subtracted
   from its second half, so its mean is kept (a middle element of odd n is left alone; baycomp instead replaces
   the row and breaks on odd n).
4. Data-derived prior bounds: δ0 ~ U(±max|x|), σ_i ~ U(0, 1000·s̄), σ0 ~ U(0, 1000·sd(x̄_i)) (Sec. 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import special

from ...scores.tensor import FOLDS_ONE
from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.options import FitOptions


@dataclass
class Prepared:
    stan_data: dict
    scale: float  # the mean per-dataset sd the data were divided by
    rope_scaled: float
    perturbed: list[str]  # datasets whose zero variance was perturbed
    rho: np.ndarray
    n: np.ndarray
    warnings: list[str] = field(default_factory=list)  # about the data vs the rope (also logged)


def correlations(datasets: list[str], folds, rho) -> np.ndarray:
    """ρ per dataset: ``rho`` if given (one value or one per dataset, checked by the options), else 1/folds."""
    q = len(datasets)
    if rho is not None:
        values = np.asarray(rho, dtype=float)
        if values.ndim and values.size != q:
            raise InputError(f"rho has {values.size} values for {q} datasets")
        return np.broadcast_to(values, (q,)).copy()
    if folds is None or (isinstance(folds, (list, tuple)) and any(f is None for f in folds)):
        missing = [d for d, f in zip(datasets, folds or [None] * q) if f is None]
        raise InputError(
            "the number of cross-validation folds is unknown for dataset(s) "
            + ", ".join(repr(d) for d in missing[:10])
            + ": pass folds=K (or rho=ρ directly); ρ = 1/K is the correlation between folds"
        )
    values = np.broadcast_to(np.asarray(folds, dtype=float), (q,))
    for d, k in zip(datasets, values):
        if k == 1:
            raise InputError(f"dataset {d!r}: {FOLDS_ONE}")
        if k < 1 or k != int(k):
            raise InputError(f"folds must be a whole number >= 2; got {k} for dataset {d!r}")
    return 1.0 / values


def prepare(
    datasets: list[str],
    diffs: list[np.ndarray],
    *,
    rope: float,
    rho: np.ndarray,
    prior_code: int,
    rng: np.random.Generator,
    std_upper_bound: float = FitOptions.std_upper_bound,
    alpha_bounds: tuple[float, float] = FitOptions.alpha_bounds,
    beta_bounds: tuple[float, float] = FitOptions.beta_bounds,
) -> Prepared:
    """The Stan data for ``stan/hierarchical.stan`` (sufficient statistics of the scaled, patched differences)."""
    if not rope > 0:
        raise InputError(f"rope must be a positive half-width (the region is (-rope, rope)); got {rope}")
    n = np.array([len(x) for x in diffs])
    notes = _data_warnings(diffs, rope)
    for note in notes:
        log.warning(note)
    sds = np.array([np.std(x, ddof=1) for x in diffs])
    scale = float(np.mean(sds)) if np.mean(sds) > 0 else rope  # every dataset constant: the rope is the unit
    scaled, perturbed = _scale_and_patch(datasets, diffs, scale, rope / scale, rng)
    xbar = np.array([x.mean() for x in scaled])
    ssd = np.array([np.sum((x - x.mean()) ** 2) for x in scaled])
    std_within = float(np.mean([np.std(x, ddof=1) for x in scaled]))
    std_among = float(np.std(xbar, ddof=1)) if len(scaled) > 1 else std_within
    if std_among == 0:  # every dataset has the same mean: fall back as for q = 1
        std_among = std_within
    bound = max(float(np.max(np.abs(x))) for x in scaled)
    sigma_high = std_upper_bound * std_within
    _check_sigma_bound(datasets, scaled, ssd, n, rho, std_upper_bound, sigma_high)
    stan_data = {
        "q": len(scaled), "n": n.tolist(), "rho": rho.tolist(), "xbar": xbar.tolist(), "ssd": ssd.tolist(),
        "delta0_low": -bound, "delta0_high": bound,
        "sigma0_high": std_upper_bound * std_among, "sigma_high": sigma_high,
        "exact_sigma_bound": int(sigma_bound_matters(xbar, ssd, n, rho, bound, sigma_high)),
        **delta_form(len(scaled), noncentred=weakly_informed(xbar, ssd, n, rho)),
        "nu_prior": prior_code,
        "alpha_low": alpha_bounds[0], "alpha_high": alpha_bounds[1],
        "beta_low": beta_bounds[0], "beta_high": beta_bounds[1],
    }
    return Prepared(stan_data, scale, rope / scale, perturbed, rho, n, notes)


def _data_warnings(diffs: list[np.ndarray], rope: float) -> list[str]:
    """What looks wrong about the data against the rope (the fit still runs)."""
    largest = max(float(np.max(np.abs(x))) for x in diffs)
    if largest == 0:
        return ["every difference is zero: the two models' scores are identical on every fold of every dataset, "
                "so the result can only be practical equivalence"]
    if largest > 1 and rope < 0.02:
        return [f"differences reach {largest:.3g} but the rope is ±{rope}: the scores look like they are on a 0-100 "
                "scale while the rope is on a 0-1 scale; pass a rope in the scores' units (e.g. rope=1 for "
                "percent)"]
    if largest < rope:
        return [f"the rope ±{rope:g} is wider than every difference in the data (the largest is {largest:.3g}): "
                "everything is inside the rope, so practical equivalence is all the test can find; is the rope in "
                "the scores' units?"]
    return []


def _scale_and_patch(datasets, diffs, scale: float, rope_s: float, rng) -> tuple[list[np.ndarray], list[str]]:
    """Divide by ``scale``; a constant dataset gets U(-rope, rope) noise added to its first half and subtracted from
    its second half, which keeps its mean (the middle element of odd n stays as it is)."""
    scaled, perturbed = [], []
    for name, x in zip(datasets, diffs):
        x = np.asarray(x, dtype=float) / scale
        if np.ptp(x) == 0:
            half = len(x) // 2
            noise = rng.uniform(-rope_s, rope_s, half)
            x = x.copy()
            x[:half] += noise
            x[half : 2 * half] -= noise
            perturbed.append(name)
        scaled.append(x)
    return scaled, perturbed


def sigma_bound_matters(xbar, ssd, n, rho, delta_bound: float, sigma_high: float) -> bool:
    """Whether the upper bound U of σ_i changes the likelihood with σ_i integrated out (rewrite 2 of the Stan
    program): its factor P_upper((n-1)/2, Q/(2U²)) is 1 to double precision unless Q/(2U²) is large somewhere a
    δ_i can be.  Q grows with (x̄_i - δ_i)², so it is checked at the far end of δ0's range, widened by the
    data's spread; with the paper's U = 1000 × the data's sd the factor is 1 and the Stan program skips it."""
    m = n / (1 + (n - 1) * rho)
    far = np.abs(xbar) + 2 * delta_bound + np.sqrt(ssd / np.maximum(n - 1, 1))
    q_far = ssd / (1 - rho) + m * far**2
    factor = _sigma_bound_factor(q_far, n, sigma_high)
    return bool(np.any(factor < 1 - 1e-12))


def _sigma_bound_factor(q_form, n, sigma_high: float):
    """The likelihood's factor P_upper((n-1)/2, Q/(2U²)) of the bound U on σ_i (rewrite 2 of the Stan program)."""
    return special.gammaincc(0.5 * (n - 1), q_form / (2 * sigma_high**2))


def _check_sigma_bound(datasets, scaled, ssd, n, rho, std_upper_bound: float, sigma_high: float) -> None:
    """Refuse a bound U on σ_i under which a dataset's likelihood is 0 for every δ_i: its factor
    P_upper((n-1)/2, Q/(2U²)) underflows already at Q's smallest value, S/(1-ρ) (δ_i = x̄_i)."""
    factor = _sigma_bound_factor(ssd / (1 - rho), n, sigma_high)
    if np.all(factor > 0):
        return
    worst = int(np.argmin(factor))
    spread = float(np.std(scaled[worst], ddof=1))
    raise InputError(
        f"std_upper_bound={std_upper_bound:g} bounds σ_i at {std_upper_bound:g} × the mean per-dataset sd, far "
        f"below the spread of dataset {datasets[worst]!r} ({spread:.3g} × that mean): no σ_i under the bound can "
        f"explain its differences; use a larger std_upper_bound (the paper's is 1000)")


def weakly_informed(xbar: np.ndarray, ssd: np.ndarray, n: np.ndarray, rho: np.ndarray) -> bool:
    """Whether to sample every δ_i non-centred: the hierarchy, not the data, pins the δ_i down.

    That is when the typical standard error (Nadeau-Bengio) exceeds the spread of the true δ_i, estimated robustly
    as τ² = (1.4826·MAD(x̄))² − se².  With well-separated datasets (the usual case) every δ_i stays centred.
    """
    se = np.sqrt(ssd / (n - 1) * (1 / n + rho / (1 - rho)))
    centre = np.median(xbar)
    spread = 1.4826 * float(np.median(np.abs(xbar - centre)))
    tau = np.sqrt(max(spread**2 - float(np.median(se)) ** 2, 0.0))
    return bool(np.median(se) > tau)


def delta_form(q: int, noncentred: bool) -> dict:
    """The Stan data that pick the form of δ_i: all ``q`` non-centred, or all centred (1-based indices)."""
    every = list(range(1, q + 1))
    if noncentred:
        return {"q_nc": q, "idx_nc": every, "idx_c": []}
    return {"q_nc": 0, "idx_nc": [], "idx_c": every}
