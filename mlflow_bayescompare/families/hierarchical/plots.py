"""Figures of a :class:`~mlflow_bayescompare.hierarchical.result.HierarchicalResult` (Corani et al. 2017).

Every function builds its own :class:`matplotlib.figure.Figure` through the object-oriented API and never touches
pyplot's global state, so the module is safe to use from the threads of a web server.  Outcomes appear in the
order of :data:`~.result.OUTCOMES` and in its :data:`~.result.COLORS` (A blue, rope grey, B orange).  The x axis of
the density and shrinkage plots is ``δ = score_a - score_b``; each side of the rope is labelled and coloured by the
model it favours under ``greater_is_better``.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from scipy import special, stats

from ...shared.figures import (
    INK,
    delta_label,
    legend_below,
    outcome_text,
    plot_simplex,
    shade,
    short,
    side_labels,
    tidy,
)
from ...vocabulary.outcomes import COLORS, DECISION_COLORS, OUTCOMES
from .result import HierarchicalResult
from .summary import PARETO_K_LIMIT

__all__ = ["all_figures", "plot_posterior", "plot_shrinkage", "plot_model_fit", "predictive_density", "FLAG_COLOR"]

#: Model-check marks (the amber of an inconclusive decision).
FLAG_COLOR = DECISION_COLORS["inconclusive"]
MAX_MIXTURE_DRAWS = 4000
GRID_POINTS = 600


def all_figures(res: HierarchicalResult) -> dict[str, Figure]:
    """The four report figures keyed ``simplex`` (:func:`...shared.figures.plot_simplex`), ``posterior``,
    ``shrinkage``, ``model_fit``."""
    return {"simplex": plot_simplex(res), "posterior": plot_posterior(res), "shrinkage": plot_shrinkage(res),
            "model_fit": plot_model_fit(res)}


# --- posterior densities --------------------------------------------------------------------------------------


def _hyper_draws(res: HierarchicalResult, max_draws: int = MAX_MIXTURE_DRAWS, seed: int = 0):
    """A seeded thinning of (δ0, σ0, ν) to at most ``max_draws``; ν is None for the Gaussian prior."""
    delta0, sigma0 = np.ravel(res.draws["delta0"]), np.ravel(res.draws["sigma0"])
    nu = np.ravel(res.draws["nu"]) if "nu" in res.draws else None
    if delta0.size > max_draws:
        keep = np.sort(np.random.default_rng(seed).choice(delta0.size, max_draws, replace=False))
        delta0, sigma0, nu = delta0[keep], sigma0[keep], None if nu is None else nu[keep]
    return delta0, sigma0, nu


def _bandwidth(values: np.ndarray) -> float:
    """Silverman's rule of thumb with the robust spread, min(sd, IQR / 1.34)."""
    q1, q3 = np.quantile(values, [0.25, 0.75])
    spread = min(np.std(values), (q3 - q1) / 1.34) or np.std(values)
    return 0.9 * spread * values.size ** -0.2


def predictive_density(res: HierarchicalResult, values=(), points: int = GRID_POINTS):
    """Posterior predictive density of δ on the next dataset, ``(grid, density)``.

    The mixture over posterior draws of t_ν(δ0, σ0) (Gaussian without ν), each component widened by the kernel
    bandwidth of the δ0 draws (scale √(σ0² + h²)): a kernel estimate that removes the Monte Carlo spikes of narrow
    components without moving the mass.  The grid spans the central 99% of the predictive, the rope and ``values``,
    and holds ±rope exactly, so regions split on it.
    """
    delta0, sigma0, nu = _hyper_draws(res)
    noise = np.random.default_rng(1)
    sample = delta0 + sigma0 * (noise.standard_normal(delta0.size) if nu is None else noise.standard_t(nu))
    lo, hi = np.quantile(sample, [0.005, 0.995])
    lo, hi = min(lo, -res.rope, *values), max(hi, res.rope, *values)
    pad = 0.08 * (hi - lo)
    grid = np.union1d(np.linspace(lo - pad, hi + pad, points), [-res.rope, res.rope])
    scale = np.sqrt(sigma0**2 + _bandwidth(delta0) ** 2)
    density = np.zeros_like(grid)
    for chunk in np.array_split(np.arange(delta0.size), max(1, delta0.size // 500)):
        z = (grid - delta0[chunk, None]) / scale[chunk, None]
        if nu is None:
            log_pdf = -0.5 * z**2 - 0.5 * np.log(2 * np.pi)
        else:
            v = nu[chunk, None]
            log_pdf = (special.gammaln((v + 1) / 2) - special.gammaln(v / 2) - 0.5 * np.log(v * np.pi)
                       - (v + 1) / 2 * np.log1p(z**2 / v))
        density += np.exp(log_pdf - np.log(scale[chunk, None])).sum(axis=0)
    return grid, density / delta0.size


def _kde(values: np.ndarray, grid: np.ndarray) -> np.ndarray | None:
    """``gaussian_kde`` of ``values`` on ``grid``, or None when it is undefined (fewer than 2 distinct values)."""
    values = np.asarray(values, dtype=float)
    if np.unique(values).size < 2:
        return None
    return stats.gaussian_kde(values)(grid)


def plot_posterior(res: HierarchicalResult) -> Figure:
    """Posterior predictive density of δ on the next dataset (top) and posterior density of δ0 (bottom).

    The predictive (:func:`predictive_density`) holds the areas beyond / inside the rope that drive the test (Sec.
    "The inference of the test"); the δ0 panel shades the same regions, whose masses are ``res.delta0_probs``.
    """
    fig = Figure(figsize=(7.5, 7.4), layout="constrained")
    top, bottom = fig.subplots(2, 1)
    family = "Gaussian" if "nu" not in res.draws else "Student-t"
    grid, density = predictive_density(res)
    top.plot(grid, density, color=INK, lw=1.8, label=f"predictive ({family} mixture)")
    shade(top, res, grid, density)
    masses = []
    top.set_title("δ on the next dataset (posterior predictive)", color=INK, fontsize=11, pad=8)

    delta0 = np.ravel(res.draws["delta0"])
    lo, hi = np.quantile(delta0, [0.001, 0.999])
    lo, hi = min(lo, -res.rope), max(hi, res.rope)
    grid0 = np.union1d(np.linspace(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), GRID_POINTS), [-res.rope, res.rope])
    density0 = _kde(delta0, grid0)
    if density0 is None:
        bottom.axvline(delta0[0], color=INK, lw=1.8, label="δ0 (constant)")
    else:
        bottom.plot(grid0, density0, color=INK, lw=1.8, label="posterior of δ0")
        masses = shade(bottom, res, grid0, density0, res.delta0_probs)
    d = res.delta0
    bottom.axvline(d["mean"], color=INK, lw=1, ls="--",
                   label=f"mean {d['mean']:.3g}, 95% HDI [{d['hdi_low']:.3g}, {d['hdi_high']:.3g}]")
    bottom.set_title("δ0: mean difference across datasets (posterior)", color=INK, fontsize=11, pad=8)
    for ax in (top, bottom):
        side_labels(ax, res)
        ax.set_xlabel(delta_label(res))
        ax.set_ylabel("density")
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.15)
        legend_below(ax, masses if ax is bottom else [])
        tidy(ax)
    return fig


# --- per-dataset shrinkage ------------------------------------------------------------------------------------


def _bulk_limits(res: HierarchicalResult) -> tuple[float, float]:
    """x limits on the bulk: Tukey's fences (1.5 IQR) of the HDI ends, widened to every estimate inside them, the
    rope and δ0; anything beyond is clipped and marked."""
    sh = res.shrinkage
    ends = np.concatenate([sh["hdi_low"], sh["hdi_high"]]).astype(float)
    everything = np.concatenate([ends, sh["mle"], sh["shrunk"]]).astype(float)
    everything = everything[np.isfinite(everything)]
    q1, q3 = np.quantile(ends[np.isfinite(ends)], [0.25, 0.75])
    fence_lo, fence_hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    if q3 == q1:  # no spread to judge outliers by
        fence_lo, fence_hi = everything.min(), everything.max()
    kept = everything[(everything >= fence_lo) & (everything <= fence_hi)]
    lo = min(kept.min(initial=np.inf), -res.rope, res.delta0["mean"])
    hi = max(kept.max(initial=-np.inf), res.rope, res.delta0["mean"])
    pad = 0.04 * (hi - lo)
    return lo - pad, hi + pad


def _mark_clipped(ax, columns: list[tuple[str, np.ndarray]], lo: float, hi: float) -> None:
    """At each edge a row's values pass: an arrow on the edge and, just above the row, the values beyond it."""
    for row in range(len(columns[0][1])):
        for edge, beyond, ha, marker in ((lo, np.less, "left", "<"), (hi, np.greater, "right", ">")):
            out = [f"{name} {values[row]:.3g}" for name, values in columns if beyond(values[row], edge)]
            if out:
                ax.plot(edge, row, marker=marker, color=INK, ms=6, clip_on=False, zorder=6)
                ax.text(edge, row - 0.1, ", ".join(out), ha=ha, va="bottom", fontsize=7, color=INK, zorder=6)


def _check_marks(res: HierarchicalResult) -> list[str]:
    """Per dataset, the model check's findings, e.g. ``"k̂ 0.93, conflict"`` (none without those columns)."""
    marks = []
    for row in res.shrinkage.to_dict(orient="records"):
        high_k = row.get("pareto_k") is not None and row["pareto_k"] > PARETO_K_LIMIT
        found = [f"$\\hat{{k}}$ {row['pareto_k']:.2f}"] if high_k else []
        marks.append(", ".join(found + (["conflict"] if row.get("conflict") else [])))
    return marks


def plot_shrinkage(res: HierarchicalResult) -> Figure:
    """Forest plot: per-dataset MLE (mean difference) and shrunk estimate with its 95% HDI.

    The hierarchical model pulls each dataset's mean towards δ0 (Sec. "The shrinkage estimator for
    cross-validation"); the marker colour shows the dataset's most probable outcome.  The x axis stays on the bulk
    (values beyond it are written at the edge); datasets the model check flags (Pareto k̂ > 0.7, conflict) are
    shaded amber with the reason after their name.
    """
    sh, q = res.shrinkage, len(res.shrinkage)
    fig = Figure(figsize=(7.5, 1.8 + 0.24 * max(q, 4)), layout="constrained")
    ax = fig.add_subplot()
    rows, (lo, hi) = np.arange(q), _bulk_limits(res)
    marks = _check_marks(res)
    for row in rows[[bool(m) for m in marks]]:
        ax.axhspan(row - 0.5, row + 0.5, color=FLAG_COLOR, alpha=0.14, lw=0, zorder=0)
    ax.axvspan(-res.rope, res.rope, color=COLORS["rope"], alpha=0.18, lw=0, label=f"rope ±{res.rope:g}")
    ax.axvline(0, color=COLORS["rope"], lw=0.8)
    ax.axvline(res.delta0["mean"], color=INK, lw=1, ls="--", label=f"δ0 mean {res.delta0['mean']:.3g}")
    low, high, mle, shrunk = (sh[c].to_numpy(dtype=float) for c in ("hdi_low", "hdi_high", "mle", "shrunk"))
    ax.hlines(rows, np.clip(low, lo, hi), np.clip(high, lo, hi), color="#52606d", lw=1.4, label="95% HDI", zorder=2)
    shown = (mle >= lo) & (mle <= hi)
    ax.scatter(mle[shown], rows[shown], marker="o", s=28, facecolors="white", edgecolors=INK, lw=1, zorder=3,
               label="MLE (mean difference)")
    likeliest = np.array(OUTCOMES)[sh[["p_a_better", "p_rope", "p_b_better"]].to_numpy(dtype=float).argmax(axis=1)]
    for outcome in OUTCOMES:
        mask = (likeliest == outcome) & (shrunk >= lo) & (shrunk <= hi)
        if mask.any():
            ax.scatter(shrunk[mask], rows[mask], marker="D", s=30, color=COLORS[outcome], zorder=4,
                       label=f"shrunk; most probable: {outcome_text(res, outcome, 20)}")
    _mark_clipped(ax, [("HDI", low), ("HDI", high), ("MLE", mle), ("shrunk", shrunk)], lo, hi)
    ax.set_yticks(rows, [short(d) + (f"  ⚠ {m}" if m else "") for d, m in zip(sh["dataset"], marks)],
                  fontsize=8 if q <= 40 else 6.5)
    ax.set_xlim(lo, hi)
    ax.set_ylim(q - 0.5, -0.5)
    ax.set_xlabel(delta_label(res))
    ax.set_title("Per-dataset differences: MLE and hierarchical (shrunk) estimates", color=INK, fontsize=11)
    if any(marks):
        ax.plot([], [], "s", color=FLAG_COLOR, alpha=0.4,
                label=f"⚠ model check: $\\hat{{k}}$ > {PARETO_K_LIMIT} or conflict")
    fig.legend(loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    ax.grid(axis="x", color="#e4e7eb", lw=0.6)
    tidy(ax)
    for tick, mark in zip(ax.get_yticklabels(), marks):
        tick.set_color(FLAG_COLOR if mark else INK)
    return fig


# --- model fit ------------------------------------------------------------------------------------------------


def plot_model_fit(res: HierarchicalResult) -> Figure:
    """Fit check in the style of the paper's Fig. 7.

    The KDE of the shrinkage estimates (the paper's best approximation of the true distribution of the δ_i's,
    thick black) against the posterior predictive density of δ; a model that fits puts the two close together.
    """
    fig = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    shrunk = res.shrinkage["shrunk"].to_numpy(dtype=float)
    grid, density = predictive_density(res, values=shrunk)
    family = "Gaussian" if "nu" not in res.draws else "Student-t"
    ax.plot(grid, density, color="#52606d", lw=1.8, ls="--", label=f"posterior predictive ({family})")
    kde = _kde(shrunk, grid)
    if kde is not None:
        ax.plot(grid, kde, color=INK, lw=2.8, label="KDE of shrinkage estimates")
    ax.vlines(shrunk, 0, 0.05, color=INK, lw=1.2, label="shrinkage estimates", transform=ax.get_xaxis_transform())
    ax.axvspan(-res.rope, res.rope, color=COLORS["rope"], alpha=0.18, lw=0, label=f"rope ±{res.rope:g}")
    ax.set_ylim(bottom=0)
    ax.set_xlabel(delta_label(res))
    ax.set_ylabel("density")
    ax.set_title("Model fit: predictive density vs the per-dataset estimates (paper Fig. 7)", color=INK,
                 fontsize=11)
    ax.legend(fontsize=8, frameon=False)
    tidy(ax)
    return fig
