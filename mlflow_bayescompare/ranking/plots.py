"""Figures of a :class:`~.ranking.result.RankingResult` (Wainer 2023): a Bayesian critical-difference diagram, the
matrix of P(win) with the rope's probability, and P(best).

Every function builds its own :class:`matplotlib.figure.Figure` through the object-oriented API, never pyplot's
global state, and sizes it to the number of models (16 stay readable).

**The critical-difference diagram.**  Each model sits at its posterior mean rank (1 = best) on the rank axis, with
the HDI of its rank (``hdi_prob``, 89% by default).  As in Demšar's (2006) diagram, a bar joins models whose
difference is *not credible*: two models differ credibly when P(P(better beats worse) > 0.5) >= ``threshold``, the
paper's *above.50* >= 0.95 (Sec. 7.1); a bar marks each longest run of consecutive models, in mean-rank order, in
which no two differ credibly (runs inside a longer one are not drawn).  Models joined by no bar differ credibly
from their neighbours.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..figures import INK
from ..result import COLORS
from .result import RankingResult

MODEL_COLOR = COLORS["a_better"]
GRID_COLOR = COLORS["rope"]

__all__ = ["all_figures", "critical_difference", "pwin_matrix", "p_best", "indistinct_groups", "MODEL_COLOR",
           "GRID_COLOR"]


def all_figures(res: RankingResult) -> dict[str, Figure]:
    """The three figures keyed ``critical_difference``, ``pwin_matrix``, ``p_best``."""
    return {"critical_difference": critical_difference(res), "pwin_matrix": pwin_matrix(res), "p_best": p_best(res)}


def indistinct_groups(res: RankingResult, threshold: float | None = None) -> list[list[str]]:
    """The bars of the critical-difference diagram: each longest run of consecutive models (by mean rank) in which
    no two differ credibly, i.e. P(P(win) > 0.5) < ``threshold`` (default: the result's) for every pair."""
    threshold = res.settings["threshold"] if threshold is None else threshold
    order = list(res.ranking.sort_values("mean_rank", kind="stable")["model"])
    credible = {frozenset((row.better, row.worse)) for row in res.pairs.itertuples(index=False)
                if row.p_above_half >= threshold}
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


def critical_difference(res: RankingResult, threshold: float | None = None) -> Figure:
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
    ax.set_title(f"bars join models whose difference is not credible: P(P(win) > 0.5) < {limit:g}",
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


def pwin_matrix(res: RankingResult) -> Figure:
    """Posterior mean P(row beats column) on a new dataset, each cell with P(P(win) in the rope) below it."""
    order, k = res.order, len(res.order)
    p_win, rope = res.p_win_matrix().to_numpy(dtype=float), res.p_in_rope_matrix().to_numpy(dtype=float)
    size = 2.2 + 0.62 * k
    fig = Figure(figsize=(size + 1.2, size), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(p_win), vmin=0, vmax=1, cmap="RdBu")
    fontsize = max(5.5, 10 - 0.3 * k)
    for i, j in np.ndindex(p_win.shape):
        if i != j:
            dark = abs(p_win[i, j] - 0.5) > 0.3
            ax.text(j, i, f"{p_win[i, j]:.2f}\n({rope[i, j]:.2f})", ha="center", va="center", fontsize=fontsize,
                    color="white" if dark else INK, linespacing=1.1)
    ax.set_xticks(range(k), order, rotation=45, ha="right")
    ax.set_yticks(range(k), order)
    low, high = res.settings["rope"]
    ax.set_title(f"P(row beats column) on a new dataset; in brackets P(in rope [{low:g}, {high:g}])", fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.7, label="P(win)")
    return fig


def p_best(res: RankingResult) -> Figure:
    """The posterior probability that each model is the best (the largest strength), best first."""
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
    ax.set_xlabel("P(best): posterior probability of the largest strength")
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)
    return fig
