"""The figures of a comparison of evaluation runs, through matplotlib's object-oriented API (no pyplot state): per
scorer the posterior of the mean difference B − A with its rope and the regions of each outcome in their colours
(``differences``), the three probabilities of every scorer as one bar each (``outcomes``), and for k systems each
one's P(best) per scorer (``p_best``)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from ...shared.figures import INK, short, tidy
from ...vocabulary.outcomes import COLORS, OUTCOMES, Orientation, outcome_label
from .result import EvalComparisons, EvalRanking

__all__ = ["all_figures", "ranking_figures", "plot_differences", "plot_outcomes", "plot_p_best", "MAX_PANELS"]

#: scorers drawn in the differences figure at most (the report's tables hold every one)
MAX_PANELS = 12
_COLUMNS = 3
_BINS = 60


def all_figures(result: EvalComparisons) -> dict[str, Figure]:
    """The report's figures of a comparison of A and B, keyed ``differences`` and ``outcomes``."""
    return {"differences": plot_differences(result), "outcomes": plot_outcomes(result)}


def ranking_figures(result: EvalRanking) -> dict[str, Figure]:
    """The report's figure of a ranking of k systems, keyed ``p_best``."""
    return {"p_best": plot_p_best(result)}


def plot_differences(result: EvalComparisons) -> Figure:
    """One panel per scorer: the histogram of the posterior draws of B − A, each region beyond or inside the rope in
    the colour of the outcome it means, the mean and the 95% HDI."""
    scorers = list(result.by_scorer)[:MAX_PANELS]
    rows = math.ceil(len(scorers) / _COLUMNS)
    columns = min(len(scorers), _COLUMNS)
    fig = Figure(figsize=(3.6 * columns + 0.6, 2.7 * rows + 0.6), layout="constrained")
    for i, scorer in enumerate(scorers):
        _difference_panel(fig.add_subplot(rows, columns, i + 1), result.by_scorer[scorer])
    fig.suptitle(f"{short(result.system_b)} − {short(result.system_a)}: posterior of the mean difference per scorer",
                 color=INK, fontsize=11)
    return fig


def _difference_panel(ax, one) -> None:
    d, rope = one.draws, one.rope
    low, high = float(np.min(d)), float(np.max(d))
    span = max(high - low, 2 * rope, 1e-12)
    edges = np.linspace(min(low, -rope) - 0.05 * span, max(high, rope) + 0.05 * span, _BINS + 1)
    left, _, right = Orientation(one.greater_is_better).sides  # B − A < −rope, > rope: the paper's x = a − b sides
    for outcome, (lo, hi) in ((right, (edges[0], -rope)), ("rope", (-rope, rope)), (left, (rope, edges[-1]))):
        inside = d[(d >= lo) & (d <= hi)]
        if inside.size:
            ax.hist(inside, bins=edges, color=COLORS[outcome], alpha=0.85, density=False)
    ax.axvspan(-rope, rope, color=COLORS["rope"], alpha=0.12, lw=0)
    summary = one.difference
    ax.axvline(summary["mean"], color=INK, lw=1, ls="--")
    ax.plot([summary["hdi_low"], summary["hdi_high"]], [0, 0], color=INK, lw=4, solid_capstyle="butt")
    ax.set_title(short(one.scorer, 40), color=INK, fontsize=10)
    ax.set_xlabel(f"B − A ({short(one.kind['units'], 36)})", fontsize=8)
    ax.set_yticks([])
    tidy(ax)


def plot_outcomes(result: EvalComparisons) -> Figure:
    """A bar per scorer: P(A better), P(practically equivalent), P(B better), in the outcome colours."""
    scorers = list(result.by_scorer)
    fig = Figure(figsize=(7.5, 0.9 + 0.42 * len(scorers)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(scorers))[::-1]
    start = np.zeros(len(scorers))
    labels = {o: outcome_label(o, short(result.system_a, 24), short(result.system_b, 24)) for o in OUTCOMES}
    for outcome in OUTCOMES:
        p = np.array([result.by_scorer[s].probabilities[outcome] for s in scorers])
        ax.barh(y, p, left=start, color=COLORS[outcome], label=labels[outcome], height=0.7)
        for yi, si, pi in zip(y, start, p):
            if pi >= 0.08:
                ax.text(si + pi / 2, yi, f"{pi:.2f}", ha="center", va="center", color="white", fontsize=8)
        start = start + p
    ax.set_yticks(y, [short(s, 28) for s in scorers])
    ax.set_xlim(0, 1)
    ax.set_xlabel("posterior probability")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25 if len(scorers) < 4 else -0.12), ncol=3, frameon=False,
              fontsize=8)
    tidy(ax)
    return fig


def plot_p_best(result: EvalRanking) -> Figure:
    """Per scorer, each system's P(best): bars grouped by scorer, a colour per system."""
    scorers, systems = list(result.by_scorer), result.systems
    fig = Figure(figsize=(max(6.0, 1.2 + 0.5 * len(scorers) * len(systems)), 3.8), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(systems)
    colors = [COLORS["a_better"], COLORS["b_better"], COLORS["rope"], INK, "#38a169", "#805ad5"]
    for j, system in enumerate(systems):
        p = [dict(zip(result.by_scorer[s].ranking["system"], result.by_scorer[s].ranking["p_best"]))[system]
             for s in scorers]
        ax.bar(np.arange(len(scorers)) + (j - (len(systems) - 1) / 2) * width, p, width,
               color=colors[j % len(colors)], label=short(system, 24))
    ax.set_xticks(np.arange(len(scorers)), [short(s, 20) for s in scorers])
    ax.set_ylim(0, 1)
    ax.set_ylabel("P(best)")
    ax.legend(frameon=False, fontsize=8, ncol=min(len(systems), 4))
    tidy(ax)
    return fig
