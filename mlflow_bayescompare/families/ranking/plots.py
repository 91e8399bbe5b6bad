"""The figures every ranking shares: the Bayesian critical-difference diagram, P(best), and (of the models that
read differences in metric units: the joint and the hierarchical model) the matrix of P(better by more than the
rope) with P(rope) and each model's difference to the leader.  Each model's ``plots`` module picks its figures.

Every function builds its own :class:`matplotlib.figure.Figure` through the object-oriented API, never pyplot's
global state, and sizes it to the number of models (16 stay readable).

**The critical-difference diagram.**  Each model sits at its posterior mean rank (1 = best) on the rank axis, with
the HDI of its rank (``hdi_prob``, 89% by default).  As in Demšar's (2006) diagram, a bar joins models whose
difference is *not credible*, by the result's own rule (:func:`.common.credible`; its ``not_credible_rule`` in the
diagram's title): BBT's P(P(better beats worse) > 0.5) >= ``threshold``, the paper's *above.50* >= 0.95 (Sec. 7.1);
the hierarchical model's P(better) >= ``threshold``; one dataset's HDI beyond the rope.  A bar marks each longest run
of consecutive models, in mean-rank order, in which no two differ credibly (runs inside a longer one are not drawn).
Models joined by no bar differ credibly from their neighbours.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ...shared.figures import INK
from ...vocabulary.outcomes import COLORS
from .common import RankedModels

__all__ = ["critical_difference", "better_matrix", "p_best", "leader_gaps", "indistinct_groups", "annotated_matrix",
           "MODEL_COLOR", "GRID_COLOR"]

MODEL_COLOR = COLORS["a_better"]
GRID_COLOR = COLORS["rope"]


def indistinct_groups(res: RankedModels, threshold: float | None = None) -> list[list[str]]:
    """The bars of the critical-difference diagram: each longest run of consecutive models (by mean rank) in which
    no two differ credibly (``res.credible_pairs(threshold)``; default threshold: the result's)."""
    order = list(res.ranking.sort_values("mean_rank", kind="stable")["model"])
    credible = res.credible_pairs(threshold)
    groups, reach = [], 0
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and not any(frozenset((order[end + 1], m)) in credible
                                               for m in order[start:end + 1]):
            end += 1
        if end > max(start, reach):
            groups.append(order[start:end + 1])
            reach = end
    return groups


def critical_difference(res: RankedModels, threshold: float | None = None) -> Figure:
    """Models on the axis of posterior mean rank with their rank HDIs; bars join models that do not differ
    credibly (see the module's docstring)."""
    table = res.ranking.sort_values("mean_rank", kind="stable").reset_index(drop=True)
    k = len(table)
    groups = indistinct_groups(res, threshold)
    lanes = _lanes(groups, {m: i for i, m in enumerate(table["model"])})
    fig = Figure(figsize=(7.5 + 0.25 * max(lanes, default=0), 1.3 + 0.32 * k), layout="constrained")
    ax = fig.subplots()
    rows = np.arange(k)
    ax.hlines(rows, table["rank_low"], table["rank_high"], color=MODEL_COLOR, lw=2.5, alpha=0.55)
    ax.plot(table["mean_rank"], rows, "o", color=MODEL_COLOR, ms=6, zorder=3)
    right = k + 0.6
    for group, lane in zip(groups, lanes):
        top, bottom = (int(table.index[table["model"] == m][0]) for m in (group[0], group[-1]))
        x = right + 0.35 * lane
        ax.vlines(x, top - 0.25, bottom + 0.25, color=INK, lw=3)
        ax.hlines([top - 0.25, bottom + 0.25], x - 0.12, x, color=INK, lw=1)
    ax.set_yticks(rows, [f"{m}  ({r:.1f})" for m, r in zip(table["model"], table["mean_rank"])])
    ax.set_ylim(k - 0.5, -0.7)
    ax.set_xlim(0.5, right + 0.35 * max(lanes, default=0) + 0.3)
    ax.set_xticks(range(1, k + 1))
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(f"posterior mean rank (1 = best) with its {res.settings['hdi_prob']:.0%} HDI")
    ax.grid(axis="x", color=GRID_COLOR, alpha=0.25)
    for side in ("right", "bottom"):
        ax.spines[side].set_visible(False)
    limit = res.settings["threshold"] if threshold is None else threshold
    ax.set_title(f"bars join models whose difference is not credible: {res.not_credible_rule(limit)}",
                 fontsize=9, loc="left", color=INK)
    return fig


def _lanes(groups: list[list[str]], row: dict[str, int]) -> list[int]:
    """A lane (column) per bar, the first one free of any bar that overlaps it."""
    ends: list[int] = []
    lanes = []
    for group in groups:
        first, last = row[group[0]], row[group[-1]]
        lane = next((i for i, end in enumerate(ends) if end < first), len(ends))
        ends[lane:lane + 1] = [last]
        lanes.append(lane)
    return lanes


def better_matrix(res) -> Figure:
    """P(row better than column by more than the rope), each cell with P(rope) below it (one dataset; across
    datasets the hierarchical model's, the two-model test's statistic)."""
    better, rope = res.better_matrix()
    return annotated_matrix(res.order, better, rope, "Blues", "P(better)",
                             f"P(row better than column by more than ±{res.settings['metric_rope']:g}); "
                             "in brackets P(rope)")


def annotated_matrix(order: list[str], values, below, cmap: str, label: str, title: str) -> Figure:
    """A heat map of ``values`` (k × k, NaN on the diagonal), each cell with ``below``'s value in brackets."""
    k = len(order)
    top, bottom = values.to_numpy(dtype=float), below.to_numpy(dtype=float)
    size = 2.2 + 0.62 * k
    fig = Figure(figsize=(size + 1.2, size), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(top), vmin=0, vmax=1, cmap=cmap)
    fontsize = max(5.5, 10 - 0.3 * k)
    for i, j in np.ndindex(top.shape):
        if i != j:
            dark = abs(top[i, j] - 0.5) > 0.3 if cmap == "RdBu" else top[i, j] > 0.6
            ax.text(j, i, f"{top[i, j]:.2f}\n({bottom[i, j]:.2f})", ha="center", va="center", fontsize=fontsize,
                    color="white" if dark else INK, linespacing=1.1)
    ax.set_xticks(range(k), order, rotation=45, ha="right")
    ax.set_yticks(range(k), order)
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.7, label=label)
    return fig


def leader_gaps(res, xlabel: str) -> Figure:
    """Each model's posterior mean difference to the leader in metric units with its interval (the axis says
    which: ``xlabel``, formatted with ``leader`` and ``hdi_prob``), the rope around 0 shaded."""
    table = res.ranking
    k, rope = len(table), res.settings["metric_rope"]
    fig = Figure(figsize=(7.0, 1.2 + 0.34 * k), layout="constrained")
    ax = fig.subplots()
    rows = np.arange(k)
    ax.axvspan(-rope, rope, color=GRID_COLOR, alpha=0.2, lw=0, label=f"rope ±{rope:g}")
    ax.axvline(0, color=INK, lw=0.8)
    ax.hlines(rows, table["diff_low"], table["diff_high"], color=MODEL_COLOR, lw=2.5, alpha=0.6)
    ax.plot(table["diff_to_leader"], rows, "o", color=MODEL_COLOR, ms=6, zorder=3)
    ax.set_yticks(rows, table["model"])
    ax.set_ylim(k - 0.5, -0.5)
    leader = table["model"].iloc[0]
    ax.set_xlabel(xlabel.format(leader=leader, hdi_prob=res.settings["hdi_prob"]))
    ax.legend(loc="lower left", fontsize=8, frameon=False)
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)
    return fig


def p_best(res: RankedModels, largest: str) -> Figure:
    """The posterior probability that each model is the best (the ``largest`` strength, or mean), best first."""
    table = res.ranking
    k = len(table)
    fig = Figure(figsize=(6.5, 1.0 + 0.3 * k), layout="constrained")
    ax = fig.subplots()
    rows = np.arange(k)
    ax.barh(rows, table["p_best"], color=MODEL_COLOR, height=0.7)
    for row, p in zip(rows, table["p_best"]):
        ax.text(p + 0.01, row, f"{p:.3f}", va="center", fontsize=8, color=INK)
    ax.set_yticks(rows, table["model"])
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("P(best): posterior probability of the largest " + largest)
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)
    return fig
