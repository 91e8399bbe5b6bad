"""What a comparison of one scorer reports beside its probabilities: the items' outcomes and the 2×2 table, the
repeats and the share of the variance their noise carries, and a frequentist paired test on the same items."""

from __future__ import annotations

import numpy as np
from scipy import stats

from .kinds import Kind
from .pairing import ScorerValues

__all__ = ["outcomes", "pass_fail_table", "repeats", "baseline"]


def outcomes(values: np.ndarray, greater_is_better: bool) -> dict[str, int]:
    """The complete items (rows of ``values``, A then B) on which B is better, A is better, or they tie."""
    d = (values[:, 1] - values[:, 0])[~np.isnan(values).any(axis=1)] * (1 if greater_is_better else -1)
    return {"b_better": int((d > 0).sum()), "a_better": int((d < 0).sum()), "tied": int((d == 0).sum())}


def pass_fail_table(scores: ScorerValues) -> dict[str, int] | None:
    """The paired 2×2 table of pass/fail values evaluated once per item: n11 (both pass), n10 (A passes, B fails),
    n01 (A fails, B passes), n00; None with repeats (their means are no longer 0 or 1)."""
    complete = scores.complete
    if scores.kind.name != "pass_fail" or (scores.repeats[complete] > 1).any():
        return None
    a, b = scores.values[complete].T
    return {"n11": int(((a == 1) & (b == 1)).sum()), "n10": int(((a == 1) & (b == 0)).sum()),
            "n01": int(((a == 0) & (b == 1)).sum()), "n00": int(((a == 0) & (b == 0)).sum())}


def repeats(scores: ScorerValues, systems: tuple[str, ...]) -> dict:
    """Per system the repeats averaged per complete item (min, mean, max), and ``noise_share``: the share of the
    variance of the per-item differences that the repeats' own noise carries, mean_i(s²_Ai/r_Ai + s²_Bi/r_Bi) /
    var_i(d_i) over the items repeated on both sides (Miller 2024, "Adding error bars to evals", Sec. 3: near 1,
    more repeats narrow the answer; near 0, only more items do); None when no item is repeated on both sides."""
    complete = scores.complete
    counts = scores.repeats[complete]
    out = {s: {"min": int(c.min()), "mean": float(c.mean()), "max": int(c.max())}
           for s, c in zip(systems, counts.T)}
    both = (counts > 1).all(axis=1)
    d = scores.values[complete, 1] - scores.values[complete, 0]
    share = None
    if both.any() and len(d) > 1 and np.var(d, ddof=1) > 0:
        noise = (scores.within[complete][both] / counts[both]).sum(axis=1).mean()
        share = float(min(noise / np.var(d, ddof=1), 1.0))
    return {**out, "noise_share": share}


def baseline(scores: ScorerValues) -> dict:
    """A frequentist paired test on the complete items, ignoring clusters, two-sided: McNemar's exact test (the
    binomial test of n01 among the discordant pairs) for pass/fail evaluated once, Wilcoxon's signed-rank test for
    ordinal values and repeated pass/fail, the paired t-test for continuous and log values."""
    values = scores.values[scores.complete]
    d = values[:, 1] - values[:, 0]
    kind: Kind = scores.kind
    table = pass_fail_table(scores)
    if table is not None:
        discordant = table["n01"] + table["n10"]
        p = stats.binomtest(table["n01"], discordant, 0.5).pvalue if discordant else 1.0
        return {"test": "McNemar's exact test", "p_value": float(p)}
    if not np.any(d != 0):
        p = 1.0
    elif kind.discrete:
        p = stats.wilcoxon(d).pvalue
    else:
        p = stats.ttest_rel(values[:, 1], values[:, 0]).pvalue
    name = "Wilcoxon's signed-rank test" if kind.discrete else "the paired t-test"
    return {"test": name, "p_value": float(p)}
