"""The tests the paper compares the hierarchical model with, computed on the raw (unscaled) differences.

* Wilcoxon signed-rank test on the per-dataset mean differences (Sec. 2, eq. "wsignstat");
* Nadeau-Bengio corrected t-test per dataset (eq. "ttest-nadeau"): t = x̄ / sqrt((1/n + ρ/(1-ρ)) s²), n-1 dof;
* Bayesian correlated t-test per dataset (Corani & Benavoli 2015): δ_i | x_i ~ t_{n-1}(x̄, (1/n + ρ/(1-ρ)) s²).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


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
    return n - 1, float(np.mean(x)), float(np.sqrt((1 / n + rho / (1 - rho)) * np.var(x, ddof=1)))


def correlated_t_masses(df: int, loc: float, scale: float, rope: float) -> tuple[float, float, float]:
    """The posterior masses of μ < −rope, inside the rope, and μ > rope; a point mass at ``loc`` when the scale is 0
    (constant differences)."""
    if scale == 0:
        left, right = float(loc < -rope), float(loc > rope)
    else:
        posterior = stats.t(df=df, loc=loc, scale=scale)
        left, right = float(posterior.cdf(-rope)), float(posterior.sf(rope))
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
