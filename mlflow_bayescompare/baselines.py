"""The tests the paper compares the hierarchical model with, computed on the raw (unscaled) differences.

* Wilcoxon signed-rank test on the per-dataset mean differences (Sec. 2, eq. "wsignstat");
* Nadeau-Bengio corrected t-test per dataset (eq. "ttest-nadeau"): t = x̄ / sqrt((1/n + ρ/(1-ρ)) s²), n-1 dof;
* Bayesian correlated t-test per dataset (Corani & Benavoli 2015): δ_i | x_i ~ t_{n-1}(x̄, (1/n + ρ/(1-ρ)) s²);

and the correlation ρ of one dataset's folds (:func:`correlation`), which the correlated t-test and the joint model
of k models on one dataset read the same way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats

from .errors import InputError


def signed_rank_p(means: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value; 1.0 when every mean difference is zero, NaN for one dataset."""
    means = np.asarray(means, dtype=float)
    if len(means) < 2:
        return float("nan")
    if np.all(means == 0):
        return 1.0
    return float(stats.wilcoxon(means).pvalue)


def correlated_t_posterior(x: np.ndarray, rho: float) -> tuple[int, float, float]:
    """(df, loc, scale) of the Bayesian correlated t-test's posterior of the mean difference of ``x``:
    Student-t with n − 1 degrees of freedom, location x̄ and scale² = (1/n + ρ/(1 − ρ)) s² (s² with ddof=1)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if np.all(x == x[0]):  # constant: exactly a point mass (the variance would keep the mean's rounding error)
        return n - 1, float(x[0]), 0.0
    return n - 1, float(np.mean(x)), float(correlated_t_scale(n, np.var(x, ddof=1), rho))


def correlated_t_scale(n, variance, rho):
    """The posterior's scale √((1/n + ρ/(1 − ρ)) s²) from the number of differences n and their variance s²
    (ddof=1) (Corani & Benavoli 2015, after Nadeau & Bengio's correction); arrays broadcast, one posterior per
    element (the stop-when-decided simulation evaluates thousands at once)."""
    return np.sqrt((1 / np.asarray(n, dtype=float) + rho / (1 - rho)) * variance)


def correlated_t_masses(df, loc, scale, rope: float):
    """The posterior masses of μ < −rope, inside the rope, and μ > rope; a point mass at ``loc`` where the scale is
    0 (constant differences).  Floats for one posterior; for arrays (which broadcast) arrays, one posterior per
    element."""
    loc, scale = np.asarray(loc, dtype=float), np.asarray(scale, dtype=float)
    point = scale == 0
    unit = np.where(point, 1.0, scale)
    # Student-t's cdf itself (scipy.stats' checks and frozen distributions cost more than the cdf)
    left = np.where(point, loc < -rope, special.stdtr(df, (-rope - loc) / unit))
    right = np.where(point, loc > rope, special.stdtr(df, (loc - rope) / unit))
    if left.ndim == 0:
        left, right = float(left), float(right)
    return left, 1 - left - right, right


def nadeau_bengio_p(df: int, loc: float, scale: float) -> float:
    """Two-sided p-value of the Nadeau-Bengio corrected t-test, t = x̄ / scale with the same scale; 1 or 0 for
    constant differences (0 or not)."""
    if scale == 0:
        return 1.0 if loc == 0 else 0.0
    return float(2 * stats.t.sf(abs(loc) / scale, df=df))


def per_dataset(diffs: list[np.ndarray], rho: np.ndarray, rope: float) -> pd.DataFrame:
    """Columns ``nb_t_p``, ``bct_p_left``, ``bct_p_rope``, ``bct_p_right``, one row per dataset."""
    rows = []
    for x, r in zip(diffs, rho):
        posterior = correlated_t_posterior(x, r)
        left, rope_mass, right = correlated_t_masses(*posterior, rope)
        rows.append({"nb_t_p": nadeau_bengio_p(*posterior), "bct_p_left": left, "bct_p_rope": rope_mass,
                     "bct_p_right": right})
    return pd.DataFrame(rows)


def correlation(folds: int | None, rho, n_train: int | None, n_test: int | None, *,
                header: str) -> tuple[float, str]:
    """ρ of one dataset's folds and where it comes from: ``rho`` when given, else n_test/(n_train + n_test) for
    hold-out splits, else 1/folds (Nadeau & Bengio).  ``folds`` has been checked (a whole number ≥ 2,
    :data:`.tensor.FOLDS_ONE`); ``rho`` by the options.  Problems are raised under ``header``."""
    problems = []
    holdout = n_train is not None or n_test is not None
    if holdout:
        for name, size in (("n_train", n_train), ("n_test", n_test)):
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
                problems.append(f"{name} must be a whole number >= 1 (the size of each split's "
                                f"{'training' if name == 'n_train' else 'test'} set); got {size!r}")
        if rho is not None:
            problems.append("give rho or n_train and n_test, not both")
        if folds is not None:
            problems.append(f"n_train and n_test describe repeated hold-out splits and folds={folds} k-fold "
                            "cross-validation: give one")
    if rho is not None and np.ndim(rho) and len(rho) != 1:
        problems.append(f"rho has {len(rho)} values for 1 dataset")
    if problems:
        raise InputError(problems, header=header)
    if rho is not None:
        return float(np.ravel(rho)[0]), "given"
    if holdout:
        value = n_test / (n_train + n_test)
        return value, f"n_test/(n_train+n_test) = {n_test}/({n_train}+{n_test}) = {value:.4g}"
    if folds is None:
        raise InputError("the number of cross-validation folds is unknown: pass folds=K (ρ = 1/K is the correlation "
                         "between folds), n_train and n_test for repeated hold-out splits, or rho=ρ directly",
                         header=header)
    return 1.0 / folds, f"1/folds with folds={folds}"
