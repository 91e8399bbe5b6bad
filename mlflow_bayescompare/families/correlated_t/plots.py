"""The figure of a :class:`~.correlated_t.result.CorrelatedTTestResult`: the posterior of the mean difference μ,
built through matplotlib's object-oriented API (no pyplot state), with the regions, colours and side labels of
:mod:`.figures` that the hierarchical test's posterior uses."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from ...shared.figures import INK, delta_label, legend_below, outcome_text, shade, short, side_labels, tidy
from ...vocabulary.outcomes import COLORS
from .result import CorrelatedTTestResult

__all__ = ["all_figures", "plot_posterior", "GRID_POINTS"]

GRID_POINTS = 600


def all_figures(res: CorrelatedTTestResult) -> dict[str, Figure]:
    """The report's one figure, keyed ``posterior``."""
    return {"posterior": plot_posterior(res)}


def plot_posterior(res: CorrelatedTTestResult) -> Figure:
    """The Student-t posterior of μ (n − 1 degrees of freedom, location x̄, the ρ-corrected scale), each region
    beyond or inside the rope shaded in the colour of the outcome it means and labelled by its mass; a point mass is
    drawn as a line at x̄."""
    fig = Figure(figsize=(7.5, 4.4), layout="constrained")
    ax = fig.add_subplot()
    masses = []
    d = res.mean_difference
    if res.scale == 0:
        side = res.orientation.sides[0 if res.loc < -res.rope else 2 if res.loc > res.rope else 1]
        ax.axvline(res.loc, color=COLORS[side], lw=2.4,
                   label=f"point mass at x̄ = {res.loc:.3g} (constant differences): {outcome_text(res, side, 12)}")
        span = max(abs(res.loc), res.rope) * 1.5
        ax.set_xlim(-span, span)
        ax.set_yticks([])
    else:
        posterior = stats.t(res.df, loc=res.loc, scale=res.scale)
        lo, hi = posterior.ppf([0.0005, 0.9995])
        lo, hi = min(lo, -res.rope), max(hi, res.rope)
        pad = 0.05 * (hi - lo)
        grid = np.union1d(np.linspace(lo - pad, hi + pad, GRID_POINTS), [-res.rope, res.rope])
        density = posterior.pdf(grid)
        ax.plot(grid, density, color=INK, lw=1.8, label=f"posterior of μ: Student-t, {res.df} df")
        masses = shade(ax, res, grid, density, res.probabilities)
        ax.axvline(res.loc, color=INK, lw=1, ls="--",
                   label=f"x̄ {res.loc:.3g}, 95% interval [{d['hdi_low']:.3g}, {d['hdi_high']:.3g}]")
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.15)
    side_labels(ax, res)
    ax.set_title(f"μ: mean difference on {short(res.dataset)} (posterior; ρ = {res.rho:.3g}, {res.rho_reason})",
                 color=INK, fontsize=11, pad=8)
    ax.set_xlabel(delta_label(res))
    ax.set_ylabel("density")
    legend_below(ax, masses)
    tidy(ax)
    return fig
