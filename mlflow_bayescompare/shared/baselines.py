"""The frequentist test two families report beside their Bayesian answer: the Wilcoxon signed-rank test on the
per-dataset mean differences (Sec. 2, eq. "wsignstat"), of the hierarchical test and of the Bayesian signed-rank test.
(The per-dataset tests the paper compares the hierarchical model with, the Nadeau-Bengio corrected t-test and the
Bayesian correlated t-test, are the correlated t-test family's formula: :mod:`..families.correlated_t.formula`.)
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["signed_rank_p"]


def signed_rank_p(means: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value; 1.0 when every mean difference is zero, NaN for one dataset."""
    means = np.asarray(means, dtype=float)
    if len(means) < 2:
        return float("nan")
    if np.all(means == 0):
        return 1.0
    return float(stats.wilcoxon(means).pvalue)
