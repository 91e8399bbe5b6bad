"""Figures of a :class:`~mlflow_bayescompare.result.HierarchicalResult` (Corani et al. 2017).

Every function builds its own :class:`matplotlib.figure.Figure` through the object-oriented API and never touches
pyplot's global state, so the module is safe to use from the threads of a web server.  The x axis of every plot is
``delta = score_a - score_b``: left of the rope is the paper's *left*, right of it the paper's *right*; the labels
say which model that favours under ``greater_is_better``.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from scipy import stats

from .result import HierarchicalResult

#: Colours shared with the HTML report: model A, model B and the rope (practical equivalence).
A_COLOR = "#2b6cb0"
B_COLOR = "#d9822b"
ROPE_COLOR = "#7a8794"
INK = "#1f2933"
MAX_MIXTURE_DRAWS = 2000
PNG_DPI = 110

_DENSITY_CMAP = LinearSegmentedColormap.from_list("bayescompare", ["#dbe7f3", "#6f9fd0", "#1d4f8c", "#0b2545"])


def outcome_labels(res: HierarchicalResult) -> tuple[str, str, str]:
    """Human labels of the paper's (left, rope, right), e.g. ``("nbc better", "rope", "hnb better")``."""
    better_left, better_right = (res.model_b, res.model_a) if res.greater_is_better else (res.model_a, res.model_b)
    return f"{better_left} better", "practically equivalent", f"{better_right} better"


def outcome_colors(res: HierarchicalResult) -> tuple[str, str, str]:
    """Colours of the paper's (left, rope, right): each side takes the colour of the model it favours."""
    return (B_COLOR, ROPE_COLOR, A_COLOR) if res.greater_is_better else (A_COLOR, ROPE_COLOR, B_COLOR)


def all_figures(res: HierarchicalResult) -> dict[str, Figure]:
    """The four report figures keyed ``simplex``, ``posterior``, ``shrinkage``, ``model_fit``."""
    return {
        "simplex": plot_simplex(res),
        "posterior": plot_posterior(res),
        "shrinkage": plot_shrinkage(res),
        "model_fit": plot_model_fit(res),
    }


def figure_png(fig: Figure, dpi: int = PNG_DPI) -> bytes:
    """Render ``fig`` to PNG bytes (no global state involved)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    return buf.getvalue()


# --- simplex ---------------------------------------------------------------------------------------------------

_VERTICES = np.array([[0.0, 0.0], [0.5, np.sqrt(3) / 2], [1.0, 0.0]])  # left, rope, right


def plot_simplex(res: HierarchicalResult) -> Figure:
    """Density of the per-draw (left, rope, right) areas on the probability simplex.

    Each posterior draw of (delta0, sigma0, nu) gives the three areas of the next dataset's Student-t and thus a point
    of the triangle (Sec. "The inference of the test"); the lines from the centroid to the edge midpoints split it
    into the regions where left, rope or right is the largest, and P(left/rope/right) is the share of draws in each.
    """
    fig = Figure(figsize=(6.2, 5.2), layout="constrained")
    ax = fig.add_subplot()
    points = np.asarray(res.next_probs, dtype=float) @ _VERTICES
    hb = ax.hexbin(points[:, 0], points[:, 1], gridsize=(48, 24), extent=(0, 1, 0, _VERTICES[1, 1]), mincnt=1,
                   bins="log", cmap=_DENSITY_CMAP, linewidths=0.0, zorder=2)
    cbar = fig.colorbar(hb, ax=ax, shrink=0.55, pad=0.0, aspect=25)
    cbar.set_label("posterior draws per cell (log scale)", color=INK)

    centroid = _VERTICES.mean(axis=0)
    for i, j in ((0, 1), (1, 2), (2, 0)):
        midpoint = (_VERTICES[i] + _VERTICES[j]) / 2
        ax.plot(*zip(centroid, midpoint), color="#9aa5b1", lw=1, ls="--", zorder=3)
    ax.fill(*_VERTICES.T, facecolor="none", edgecolor=INK, lw=1.4, zorder=4)

    probs = (res.p_left, res.p_rope, res.p_right)
    placements = ((0.0, -0.05, "left", "top"), (0.5, _VERTICES[1, 1] + 0.05, "center", "bottom"),
                  (1.0, -0.05, "right", "top"))
    for vertex, label, p, color, (x, y, ha, va) in zip(_VERTICES, outcome_labels(res), probs, outcome_colors(res),
                                                       placements):
        ax.text(x, y, f"p({_short(label, 30)})\nP = {p:.3f}", ha=ha, va=va, fontsize=10, color=color,
                fontweight="bold")
        ax.plot(*vertex, "o", color=color, ms=7, zorder=5, clip_on=False)
    ax.set_title("Next-dataset outcome probabilities", color=INK, fontsize=11)
    ax.set_xlim(-0.04, 1.04)
    ax.set_ylim(-0.2, _VERTICES[1, 1] + 0.17)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return fig


# --- posterior densities --------------------------------------------------------------------------------------


def _hyper_draws(res: HierarchicalResult, max_draws: int = MAX_MIXTURE_DRAWS, seed: int = 0):
    """A seeded thinning of (delta0, sigma0, nu) to at most ``max_draws``; nu is None for the Gaussian prior."""
    delta0 = np.ravel(res.draws["delta0"])
    sigma0 = np.ravel(res.draws["sigma0"])
    nu = np.ravel(res.draws["nu"]) if "nu" in res.draws else None
    if delta0.size > max_draws:
        keep = np.sort(np.random.default_rng(seed).choice(delta0.size, max_draws, replace=False))
        delta0, sigma0 = delta0[keep], sigma0[keep]
        nu = None if nu is None else nu[keep]
    return delta0, sigma0, nu


def _component(delta0, sigma0, nu):
    return stats.norm(delta0, sigma0) if nu is None else stats.t(nu, delta0, sigma0)


def _predictive(res: HierarchicalResult, values: np.ndarray | None = None, points: int = 400):
    """Posterior predictive density of delta on the next dataset: the mixture of t(delta0, sigma0, nu) over draws.

    Returns ``(grid, density)``; the grid spans the central 99% of the mixture and the rope, plus ``values``.
    """
    delta0, sigma0, nu = _hyper_draws(res)
    component = _component(delta0, sigma0, nu)
    sample = component.rvs(random_state=np.random.default_rng(1))
    lo, hi = np.quantile(sample, [0.005, 0.995])
    extra = [-res.rope, res.rope] if values is None else [-res.rope, res.rope, *np.asarray(values, float)]
    lo, hi = min(lo, *extra), max(hi, *extra)
    pad = 0.08 * (hi - lo)
    grid = np.linspace(lo - pad, hi + pad, points)
    density = _component(delta0[:, None], sigma0[:, None], None if nu is None else nu[:, None]).pdf(grid).mean(axis=0)
    return grid, density


def _rope_band(ax, res: HierarchicalResult, label: bool = True) -> None:
    """Shade the rope and name the side each model wins on."""
    ax.axvspan(-res.rope, res.rope, color=ROPE_COLOR, alpha=0.18, lw=0, label=f"rope ±{res.rope:g}" if label else None)
    ax.axvline(0, color=ROPE_COLOR, lw=0.8)
    left, _, right = outcome_labels(res)
    left_color, _, right_color = outcome_colors(res)
    ax.text(0.01, 0.97, f"← {_short(left, 30)}", transform=ax.transAxes, ha="left", va="top", color=left_color, fontsize=9,
            fontweight="bold")
    ax.text(0.99, 0.97, f"{_short(right, 30)} →", transform=ax.transAxes, ha="right", va="top", color=right_color, fontsize=9,
            fontweight="bold")


def _kde(values: np.ndarray, grid: np.ndarray) -> np.ndarray | None:
    """``gaussian_kde`` of ``values`` on ``grid``, or None when it is undefined (fewer than 2 distinct values)."""
    values = np.asarray(values, dtype=float)
    if np.unique(values).size < 2:
        return None
    return stats.gaussian_kde(values)(grid)


def plot_posterior(res: HierarchicalResult) -> Figure:
    """Posterior predictive density of delta on the next dataset and posterior density of delta0.

    The predictive is the mixture, over posterior draws, of t(delta; delta0, sigma0, nu) (Gaussian without nu)
    whose areas left of / inside / right of the rope drive the test (Sec. "The inference of the test").
    """
    fig = Figure(figsize=(7.5, 6.2), layout="constrained")
    top, bottom = fig.subplots(2, 1)
    family = "Gaussian" if "nu" not in res.draws else "Student-t"

    grid, density = _predictive(res)
    top.plot(grid, density, color=INK, lw=1.8, label=f"predictive ({family} mixture)")
    left_color, rope_color, right_color = outcome_colors(res)
    for lo, hi, color in ((grid[0], -res.rope, left_color), (-res.rope, res.rope, rope_color),
                          (res.rope, grid[-1], right_color)):
        inside = (grid >= lo) & (grid <= hi)
        top.fill_between(grid[inside], density[inside], color=color, alpha=0.35, lw=0)
    _rope_band(top, res)
    top.set_title("δ on the next dataset (posterior predictive)", color=INK, fontsize=11)

    delta0 = np.ravel(res.draws["delta0"])
    lo, hi = np.quantile(delta0, [0.001, 0.999])
    lo, hi = min(lo, -res.rope), max(hi, res.rope)
    grid0 = np.linspace(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), 400)
    density0 = _kde(delta0, grid0)
    if density0 is None:
        bottom.axvline(delta0[0], color=INK, lw=1.8, label="δ0 (constant)")
    else:
        bottom.plot(grid0, density0, color=INK, lw=1.8, label="posterior of δ0")
        bottom.fill_between(grid0, density0, color=INK, alpha=0.08, lw=0)
    bottom.axvline(res.delta0["mean"], color=INK, lw=1, ls="--",
                   label=f"mean {res.delta0['mean']:.3g}, 95% HDI [{res.delta0['hdi_low']:.3g}, "
                         f"{res.delta0['hdi_high']:.3g}]")
    _rope_band(bottom, res)
    bottom.set_title("δ0: mean difference across datasets (posterior)", color=INK, fontsize=11)

    for ax in (top, bottom):
        ax.set_xlabel(_delta_label(res))
        ax.set_ylabel("density")
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.15)
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.9), fontsize=8, frameon=False)
        _tidy(ax)
    return fig


# --- per-dataset shrinkage ------------------------------------------------------------------------------------


def _short(name: object, width: int = 32) -> str:
    """``name`` cut in the middle to ``width`` characters, keeping both ends (they usually tell datasets apart)."""
    text = str(name)
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def plot_shrinkage(res: HierarchicalResult) -> Figure:
    """Forest plot: per-dataset MLE (mean difference) and shrunk estimate with its 95% HDI.

    The hierarchical model pulls each dataset's mean towards delta0 (Sec. "The shrinkage estimator for
    cross-validation"); the marker colour shows which of left / rope / right is the most probable on that dataset.
    """
    sh = res.shrinkage
    q = len(sh)
    fig = Figure(figsize=(7.5, 1.6 + 0.24 * max(q, 4)), layout="constrained")
    ax = fig.add_subplot()
    rows = np.arange(q)
    ax.axvspan(-res.rope, res.rope, color=ROPE_COLOR, alpha=0.18, lw=0, label=f"rope ±{res.rope:g}")
    ax.axvline(0, color=ROPE_COLOR, lw=0.8)
    ax.axvline(res.delta0["mean"], color=INK, lw=1, ls="--", label=f"δ0 mean {res.delta0['mean']:.3g}")
    ax.hlines(rows, sh["hdi_low"], sh["hdi_high"], color="#52606d", lw=1.4, label="95% HDI", zorder=2)
    ax.scatter(sh["mle"], rows, marker="o", s=28, facecolors="white", edgecolors=INK, lw=1, zorder=3,
               label="MLE (mean difference)")
    likeliest = sh[["p_left", "p_rope", "p_right"]].to_numpy(dtype=float).argmax(axis=1)
    labels = outcome_labels(res)
    for k, color in enumerate(outcome_colors(res)):
        mask = likeliest == k
        if mask.any():
            ax.scatter(sh["shrunk"][mask], rows[mask], marker="D", s=30, color=color, zorder=4,
                       label=f"shrunk; most probable: {labels[k]}")
    ax.set_yticks(rows, [_short(d) for d in sh["dataset"]], fontsize=8 if q <= 40 else 6.5)
    ax.set_ylim(q - 0.5, -0.5)
    ax.set_xlabel(_delta_label(res))
    ax.set_title("Per-dataset differences: MLE and hierarchical (shrunk) estimates", color=INK, fontsize=11)
    fig.legend(loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    ax.grid(axis="x", color="#e4e7eb", lw=0.6)
    _tidy(ax)
    return fig


# --- model fit ------------------------------------------------------------------------------------------------


def plot_model_fit(res: HierarchicalResult) -> Figure:
    """Fit check in the style of the paper's Fig. 7.

    The KDE of the shrinkage estimates (the paper's best approximation of the true distribution of the delta_i's,
    thick black) against the posterior predictive density of delta; a model that fits puts the two close together.
    """
    fig = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    shrunk = res.shrinkage["shrunk"].to_numpy(dtype=float)
    grid, density = _predictive(res, values=shrunk)
    family = "Gaussian" if "nu" not in res.draws else "Student-t"
    ax.plot(grid, density, color=A_COLOR, lw=1.8, label=f"posterior predictive ({family})")
    kde = _kde(shrunk, grid)
    if kde is not None:
        ax.plot(grid, kde, color=INK, lw=2.8, label="KDE of shrinkage estimates")
    ax.vlines(shrunk, 0, 0.05, color=INK, lw=1.2, label="shrinkage estimates", transform=ax.get_xaxis_transform())
    ax.axvspan(-res.rope, res.rope, color=ROPE_COLOR, alpha=0.18, lw=0, label=f"rope ±{res.rope:g}")
    ax.set_ylim(bottom=0)
    ax.set_xlabel(_delta_label(res))
    ax.set_ylabel("density")
    ax.set_title("Model fit: predictive density vs the per-dataset estimates (paper Fig. 7)", color=INK,
                 fontsize=11)
    ax.legend(fontsize=8, frameon=False)
    _tidy(ax)
    return fig


def _delta_label(res: HierarchicalResult) -> str:
    return f"δ = score({_short(res.model_a, 24)}) − score({_short(res.model_b, 24)})"


def _tidy(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(colors=INK, labelsize=8)
