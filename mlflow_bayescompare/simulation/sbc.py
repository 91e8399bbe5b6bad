"""Simulation-based calibration (SBC; Talts, Betancourt, Simpson, Vehtari & Gelman 2018) of the three Stan programs.

For each replicate: draw the parameters from the prior, simulate data from the model, fit the program to the data,
and take the rank of each true value among L thinned posterior draws (0..L).  If the program and its sampler are
correct, every such rank is uniform on {0, ..., L}, whatever the prior and the data.  The ranks are binned and
tested for uniformity with a chi-squared test (:func:`chi2_p`), and drawn as histograms (:func:`plot`).

The three programs, their fixed priors and their simulators are :mod:`.sbc_models`.

Draws (:func:`calibrate`): ``chains`` chains of ``warmup`` + ``draws``; L (``kept``) draws spread evenly over them
are kept (thinning, as Talts et al. recommend, against the autocorrelation that makes the histogram U-shaped).  The
bulk ESS of every ranked quantity is recorded, and :func:`report` counts the fits with fewer effective draws than L.
``benchmarks/bench_calibration.py`` runs it from the command line; benchmarks/README.md has the recorded runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from ..families.hierarchical import prepare
from ..families.ranking.bbt import engine as ranking
from ..sampling import convergence
from ..vocabulary.errors import SamplingError
from .sbc_models import (
    BBT_OPTIONS,
    HIERARCHICAL_PARAMS,
    bbt_data,
    bbt_names,
    bbt_posterior,
    hierarchical_data,
    hierarchical_k_names,
    hierarchical_k_posterior,
    hierarchical_posterior,
    inside,
    simulate_bbt,
    simulate_hierarchical,
    simulate_hierarchical_k,
)

__all__ = ["FORMS", "thin", "bulk_ess", "binned", "chi2_p", "Config", "Calibration", "replicate_seed", "pick_form",
           "calibrate", "pooled", "plot", "report"]

FORMS = ("centred", "noncentred")

# ------------------------------------------------------------------------------------------------ ranks


def thin(draws: np.ndarray, kept: int) -> np.ndarray:
    """``kept`` draws spread evenly over the chains (chain after chain)."""
    flat = draws.reshape(-1)
    if kept > flat.size:
        raise ValueError(f"cannot keep {kept} of {flat.size} draws")
    return flat[np.linspace(0, flat.size - 1, kept).round().astype(int)]


def bulk_ess(draws: np.ndarray) -> float:
    """The bulk ESS of one quantity's ``(chains, draws)`` draws."""
    return float(convergence.ess_bulk(np.asarray(draws, dtype=float)[None])[0])


def binned(ranks: np.ndarray, kept: int, bins: int) -> np.ndarray:
    """Counts of the ranks 0..kept in ``bins`` bins of equal width (kept + 1 must be a multiple of bins)."""
    if (kept + 1) % bins:
        raise ValueError(f"{kept + 1} rank values do not split into {bins} equal bins")
    return np.bincount(np.asarray(ranks) * bins // (kept + 1), minlength=bins)


def chi2_p(ranks: np.ndarray, kept: int, bins: int) -> float:
    """p-value of the chi-squared test of uniformity of the binned ranks."""
    return float(stats.chisquare(binned(ranks, kept, bins)).pvalue)


# ------------------------------------------------------------------------------------------------ one configuration


@dataclass
class Config:
    program: str  # hierarchical, hierarchical_k or bbt
    form: str  # centred, noncentred or alternate (hierarchical_k: integrated, its one form)
    q: int = 10  # datasets (hierarchical, hierarchical_k)
    models: int = 5  # models (bbt, hierarchical_k)
    games: int = 20  # games per pair (bbt)
    missing: float = 0.0  # hierarchical_k: the chance that a model is missing on a dataset

    @property
    def label(self) -> str:
        ragged = f"_missing{round(100 * self.missing)}" if self.missing else ""
        size = {"hierarchical": f"q{self.q}", "hierarchical_k": f"q{self.q}_K{self.models}{ragged}"}.get(
            self.program, f"K{self.models}_games{self.games}")
        return f"{self.program}_{size}_{self.form}"

    @property
    def params(self) -> tuple[str, ...]:
        if self.program == "hierarchical_k":
            return tuple(hierarchical_k_names(self.models))
        return HIERARCHICAL_PARAMS if self.program == "hierarchical" else tuple(bbt_names(self.models))


@dataclass
class Calibration:
    config: Config
    kept: int
    ranks: dict[str, list[int]]
    ess: dict[str, list[float]]
    truths: dict[str, list[float]] = field(default_factory=dict)  # per replicate, to re-rank other values
    thinned: dict[str, list[np.ndarray]] = field(default_factory=dict)  # the L kept draws per replicate
    divergent_fits: int = 0
    divergences: int = 0
    seconds: float = 0.0
    sampling_seconds: float = 0.0
    fit_divergences: list[int] = field(default_factory=list)  # per fitted replicate
    fit_seconds: list[float] = field(default_factory=list)  # sampling seconds per fitted replicate
    outside: int = 0  # hierarchical: simulations whose mean(x̄_i) fell outside δ0's bounds (see inside())
    noncentred: int = 0  # fits in the non-centred form

    @property
    def replicates(self) -> int:
        return len(next(iter(self.ranks.values())))

    def pvalues(self, bins: int) -> dict[str, float]:
        return {name: chi2_p(np.asarray(r), self.kept, bins) for name, r in self.ranks.items()}

    def table(self, bins: int) -> pd.DataFrame:
        """Per parameter: the chi-squared p, the bins, the mean rank / L and its z-score (a lean of the posterior,
        which the chi-squared test of many bins is slow to see; 0.5 and 0 when uniform), and the ESS."""
        rows = []
        spread = np.sqrt(((self.kept + 1) ** 2 - 1) / 12) / self.kept  # sd of rank / L, the rank uniform on 0..L
        for name, p in self.pvalues(bins).items():
            ranks = np.asarray(self.ranks[name])
            counts = binned(ranks, self.kept, bins)
            ess = np.asarray(self.ess[name])
            mean = ranks.mean() / self.kept
            rows.append({"parameter": name, "chi2_p": p, "min_bin": counts.min(), "max_bin": counts.max(),
                         "first_bin": counts[0], "last_bin": counts[-1], "mean_rank": mean,
                         "mean_rank_z": (mean - 0.5) / (spread / np.sqrt(len(ranks))),
                         "median_ess": float(np.median(ess)), "fits_ess_below_L": int(np.sum(ess < self.kept))})
        return pd.DataFrame(rows)


def replicate_seed(seed: int, config: Config, replicate: int) -> np.random.SeedSequence:
    """A seed per (seed, configuration, replicate): the configurations of one program and size share their
    simulated data across forms (the same replicates, fitted in each form)."""
    program, size = {"hierarchical": (0, config.q), "bbt": (1, config.models * 1000 + config.games),
                     "hierarchical_k": (2, config.q * 1000 + config.models)}[config.program]
    return np.random.SeedSequence([seed, program, size, replicate])


def pick_form(form: str, replicate: int, data: dict) -> str:
    """The form of δ_i (or of the strengths) for one replicate: as asked, alternating, or ``auto``: the package's
    own choice from the data (``prepare.weakly_informed``; ``ranking._centred_first``)."""
    if form == "alternate":
        return FORMS[replicate % 2]
    if form != "auto":
        return form
    if "xbar" in data:
        arrays = [np.asarray(data[k], dtype=float) for k in ("xbar", "ssd", "n", "rho")]
        return "noncentred" if prepare.weakly_informed(*arrays) else "centred"
    table = pd.DataFrame({"model_a": data["first"], "model_b": data["second"], "wins_a_post": data["wins_first"],
                          "wins_b_post": data["wins_second"]})
    return "centred" if ranking._centred_first(list(range(1, data["K"] + 1)), table, BBT_OPTIONS) else "noncentred"


def calibrate(config: Config, replicates: int, *, seed: int = 1, chains: int = 2, warmup: int = 500,
              draws: int = 500, kept: int = 99, backend: str = "auto", skip_outside: bool = True,
              retry: bool = False, progress=None) -> Calibration:
    """SBC of one configuration: simulations until ``replicates`` of them are fitted, each once.  With
    ``skip_outside``, simulated data whose mean(x̄_i) falls outside δ0's bounds are counted and not fitted (see
    :func:`inside`): a choice made on the data alone, which keeps every rank uniform (the rank is uniform given
    the data, whatever the data).  ``retry`` (``hierarchical_k``): each fit as ``rank`` samples it, again at
    adapt_delta 0.95 after a divergent fit, keeping the fit with fewer divergent transitions."""
    result = Calibration(config, kept, {p: [] for p in config.params}, {p: [] for p in config.params})
    start = time.perf_counter()
    r = -1
    while result.replicates < replicates:
        r += 1
        sequence = replicate_seed(seed, config, r)
        rng = np.random.default_rng(sequence)
        stan_seed = int(sequence.generate_state(1)[0] % (2**31 - 2)) + 1
        settings = dict(chains=chains, draws=draws, warmup=warmup, seed=stan_seed, backend=backend)
        try:
            if config.program == "hierarchical":
                truth, data = simulate_hierarchical(rng, config.q)
                if not inside(data):
                    result.outside += 1
                    if skip_outside:
                        continue
                form = pick_form(config.form, r, data)
                posterior, raw = hierarchical_posterior(hierarchical_data(data, form), **settings)
            elif config.program == "hierarchical_k":
                truth, data = simulate_hierarchical_k(rng, config.q, config.models, config.missing)
                form = config.form
                posterior, raw = hierarchical_k_posterior(data, retry, **settings)
            else:
                truth, data = simulate_bbt(rng, config.models, config.games)
                form = pick_form(config.form, r, data)
                posterior, raw = bbt_posterior(bbt_data(data, form), **settings)
        except SamplingError as exc:  # name the replicate, so that it can be simulated again and looked at
            raise SamplingError(f"{config.label}, replicate {r} (seed {seed}): {exc}") from exc
        result.noncentred += form == "noncentred"
        result.sampling_seconds += raw.seconds
        divergent = int(raw.sampler["divergent__"].sum())
        result.fit_divergences.append(divergent)
        result.fit_seconds.append(raw.seconds)
        result.divergences += divergent
        result.divergent_fits += divergent > 0
        for name in config.params:
            kept_draws = thin(posterior[name], kept)
            result.ranks[name].append(int(np.sum(kept_draws < truth[name])))
            result.ess[name].append(bulk_ess(posterior[name]))
            result.truths.setdefault(name, []).append(float(truth[name]))
            result.thinned.setdefault(name, []).append(kept_draws)
        if progress:
            progress(result, replicates, time.perf_counter() - start)
    result.seconds = time.perf_counter() - start
    return result


def pooled(calibrations: list[Calibration]) -> Calibration:
    """Runs of one configuration from different seeds (disjoint replicates) as one run: a rank histogram's p-value
    is then read on all their replicates, where one seed's few hundred can fail by chance in one of ten statistics."""
    first = calibrations[0]
    if any(c.config != first.config or c.kept != first.kept for c in calibrations):
        raise ValueError("only runs of one configuration, with the same L, can be pooled")

    def joined(attribute: str) -> dict[str, list]:
        return {name: [x for c in calibrations for x in getattr(c, attribute).get(name, [])]
                for name in first.config.params}

    return Calibration(first.config, first.kept, joined("ranks"), joined("ess"), joined("truths"), joined("thinned"),
                       **{name: sum(getattr(c, name) for c in calibrations)
                          for name in ("divergent_fits", "divergences", "seconds", "sampling_seconds", "outside",
                                       "noncentred")},
                       fit_divergences=[x for c in calibrations for x in c.fit_divergences],
                       fit_seconds=[x for c in calibrations for x in c.fit_seconds])


# ------------------------------------------------------------------------------------------------ output


def plot(calibration: Calibration, bins: int, path: Path) -> Path:
    """The rank histograms of one configuration, with the expected count and its 99% band (Talts et al.), as a PNG
    at ``path``."""
    params = list(calibration.ranks)
    n = calibration.replicates
    cols = min(len(params), 3)
    rows = -(-len(params) // cols)
    fig = Figure(figsize=(4 * cols, 3 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    low, high = stats.binom.ppf([0.005, 0.995], n, 1 / bins)
    pvalues = calibration.pvalues(bins)
    for ax, name in zip(axes.ravel(), params):
        counts = binned(np.asarray(calibration.ranks[name]), calibration.kept, bins)
        ax.axhspan(low, high, color="0.85", zorder=0)
        ax.axhline(n / bins, color="0.4", lw=1)
        ax.bar(np.arange(bins), counts, width=0.9, color="tab:blue", zorder=1)
        ax.set_title(f"{name}: χ² p = {pvalues[name]:.3g}", fontsize=10)
        ax.set_xticks([0, bins - 1], ["0", f"{calibration.kept}"])
        ax.set_xlabel("rank of the true value (binned)", fontsize=8)
    for ax in axes.ravel()[len(params):]:
        ax.axis("off")
    fig.suptitle(f"SBC {calibration.config.label}: {n} replicates, L = {calibration.kept}, {bins} bins "
                 "(grey: 99% band of a uniform bin)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    return path


def report(calibration: Calibration, bins: int) -> str:
    """One configuration's run and its table of p-values, bins and ESS per parameter, as printed."""
    c = calibration
    table = c.table(bins)
    lines = [f"{c.config.label}: {c.replicates} replicates ({c.noncentred} non-centred), L = {c.kept}, {bins} bins; "
             f"{c.seconds:.0f} s (sampling {c.sampling_seconds:.0f} s); {c.divergent_fits} fits with divergences "
             f"({c.divergences} in total)" + (f"; {c.outside} simulations with mean(xbar) outside δ0's bounds"
                                              if c.config.program == "hierarchical" else "")]
    lines.append(f"  {'parameter':10} {'chi2 p':>8} {'min bin':>8} {'max bin':>8} {'first':>6} {'last':>6} "
                 f"{'rank/L':>7} {'z':>6} {'med ESS':>8} {'ESS<L':>6}")
    for row in table.itertuples():
        lines.append(f"  {row.parameter:10} {row.chi2_p:8.3f} {row.min_bin:8d} {row.max_bin:8d} {row.first_bin:6d} "
                     f"{row.last_bin:6d} {row.mean_rank:7.3f} {row.mean_rank_z:+6.2f} {row.median_ess:8.0f} "
                     f"{row.fits_ess_below_L:6d}")
    return "\n".join(lines)
