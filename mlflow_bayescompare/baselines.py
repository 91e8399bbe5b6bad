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


def per_dataset(diffs: list[np.ndarray], rho: np.ndarray, rope: float) -> pd.DataFrame:
    """Columns ``nb_t_p``, ``bct_p_left``, ``bct_p_rope``, ``bct_p_right``, one row per dataset."""
    rows = []
    for x, r in zip(diffs, rho):
        n, mean, var = len(x), float(np.mean(x)), float(np.var(x, ddof=1))
        scale = np.sqrt((1 / n + r / (1 - r)) * var)
        if scale == 0:  # constant differences: the posterior is a point mass at the mean
            p_nb = 1.0 if mean == 0 else 0.0
            left, right = float(mean < -rope), float(mean > rope)
        else:
            posterior = stats.t(df=n - 1, loc=mean, scale=scale)
            p_nb = float(2 * stats.t.sf(abs(mean) / scale, df=n - 1))
            left, right = float(posterior.cdf(-rope)), float(posterior.sf(rope))
        rows.append({"nb_t_p": p_nb, "bct_p_left": left, "bct_p_rope": 1 - left - right, "bct_p_right": right})
    return pd.DataFrame(rows)
