"""Simulation-based calibration (SBC; Talts, Betancourt, Simpson, Vehtari & Gelman 2018) of both Stan programs.

For each replicate: draw the parameters from the prior, simulate data from the model, fit the program to the data,
and take the rank of each true value among L thinned posterior draws (0..L).  If the program and its sampler are
correct, every such rank is uniform on {0, ..., L}, whatever the prior and the data.  The ranks are binned and
tested for uniformity with a chi-squared test (:func:`chi2_p`), and drawn as histograms (:func:`plot`).

* ``hierarchical`` (``stan/hierarchical.stan``, Corani et al. 2017): the paper's prior bounds are derived from the
  data, which makes its prior improper for simulation, so FIXED bounds are given as data (scaled units):
  δ0 ~ U(-1, 1), σ0 ~ U(0, 1), σ_i ~ U(0, 1), ν = 1 + ν', ν' ~ Gamma(α, β) (shape, rate), α ~ U(0.5, 5),
  β ~ U(0.05, 0.15) (the paper's, ``nu_prior = 0``); δ_i ~ t_ν(δ0, σ0); x_i ~ MVN(δ_i 1, σ_i² M),
  M = (1 - ρ) I + ρ 1 1', ρ = 1/10, n_i = 10 k_i (k_i runs of 10-fold CV, k_i uniform on 1..10).  With σ_i
  bounded by 1 the incomplete-gamma factor of the integrated likelihood matters, so ``exact_sigma_bound = 1``
  (tests/test_calibration.py checks that the likelihood is then exact).  Ranked: δ0, σ0, ν, α, β and δ_1.
  Each configuration forces one form of δ_i for every replicate (``centred`` or ``noncentred``,
  ``prepare.delta_form``); ``alternate`` switches form from one replicate to the next, ``auto`` takes the
  package's own choice (``prepare.weakly_informed``).  A simulation whose mean(x̄_i) falls outside δ0's bounds
  is counted and drawn again (unless ``calibrate(skip_outside=False)``), as in the recorded runs, made before the
  program's reparameterisation of δ0 was fixed for such data (see :func:`inside`).  Dropping simulations on a
  property of the data alone keeps the ranks uniform.
* ``hierarchical_k`` (``stan/hierarchical_k.stan``, the hierarchical model of k models): fixed bounds as data
  (:data:`PRIOR_K`, scaled units): d ~ U(-1, 1)^(k-1), σ0 ~ U(0, 1), the shape R = p W / tr(W) with W ~ Wishart(I,
  p) (Ω = σ0² R), σ_i ~ U(0, 1) (``sigma_high = 1``), α, β, ν as above, 1/λ_i ~ Gamma(ν/2, ν/2); the fold scores
  of k models on n_i = 10 r_i folds (r_i uniform on 1..3) with a fold effect and a common shift per dataset (the
  model integrates both out); each τ_i's form and the whitening G as the package picks them
  (``hierarchical_k.tau_forms``, ``hierarchical_k.whitening``).  Ranked: the Helmert coordinates d_j of δ, σ0, Ω_11,
  the first pair's spread, ν, α, β and 1/λ_1.
  ``Config.missing`` removes each (model, dataset) cell with that probability, at random and whatever the scores
  (at least two models kept per dataset), so that the ragged datasets' rewrite of the program is calibrated too.
* ``bbt`` (``stan/bbt.stan``, Wainer 2023): σ ~ LogNormal(0, 0.5) (the package's default hyper-prior),
  β_k ~ N(0, σ) iid; the program samples the strengths in the sum-to-zero subspace (their mean never meets the
  data and is integrated out), so the identified quantities are ranked: σ and the centred strengths
  β_k - mean(β).  Each of the K(K-1)/2 pairs plays ``Config.games`` games, W_ij ~ Binomial(games,
  inv_logit(β_i - β_j)); the Stan data come from ``ranking.handle_ties`` and ``ranking.stan_data``.

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
from scipy import special, stats

from ..families.hierarchical import prepare
from ..families.ranking import engine as ranking
from ..families.ranking import hierarchical_k
from ..sampling import convergence, sampler
from ..vocabulary.errors import SamplingError
from ..vocabulary.options import RankOptions

__all__ = ["PRIOR", "FORMS", "HIERARCHICAL_PARAMS", "BBT_OPTIONS", "simulate_hierarchical", "hierarchical_data",
           "hierarchical_posterior", "PRIOR_K", "hierarchical_k_names", "wishart_shape", "hierarchical_k_summaries",
           "simulate_hierarchical_k", "hierarchical_k_scores", "drop_models", "hierarchical_k_posterior", "bbt_names",
           "simulate_bbt", "bbt_data", "bbt_posterior", "thin",
           "bulk_ess", "binned", "chi2_p", "Config", "Calibration", "replicate_seed", "inside", "pick_form",
           "calibrate", "plot", "report"]

#: the fixed prior of the hierarchical program (scaled units), given to Stan as data
PRIOR = {"delta0_low": -1.0, "delta0_high": 1.0, "sigma0_high": 1.0, "sigma_high": 1.0,
         "alpha_low": 0.5, "alpha_high": 5.0, "beta_low": 0.05, "beta_high": 0.15}
#: the fixed prior of the hierarchical program of k models (scaled units), given to Stan as data
PRIOR_K = {"d_bound": 1.0, "sigma0_high": 1.0, "sigma_high": 1.0, "alpha_low": 0.5, "alpha_high": 5.0,
           "beta_low": 0.05, "beta_high": 0.15}
FOLDS = 10  # ρ = 1/FOLDS; n_i = FOLDS * runs_i
MAX_RUNS = 10
FORMS = ("centred", "noncentred")
HIERARCHICAL_PARAMS = ("delta0", "sigma0", "nu", "alpha", "beta", "delta_1")
BBT_OPTIONS = RankOptions()  # lognormal hyper-prior, scale 0.5, ties spread (none are simulated)


# ------------------------------------------------------------------------------------------------ simulation


def simulate_hierarchical(rng: np.random.Generator, q: int) -> tuple[dict, dict]:
    """Parameters drawn from the prior and the Stan data (without the δ_i form) of data simulated from them."""
    p = PRIOR
    delta0 = rng.uniform(p["delta0_low"], p["delta0_high"])
    sigma0 = rng.uniform(0, p["sigma0_high"])
    alpha = rng.uniform(p["alpha_low"], p["alpha_high"])
    beta = rng.uniform(p["beta_low"], p["beta_high"])
    nu = 1 + rng.gamma(alpha, 1 / beta)  # numpy's gamma takes the scale, 1 / rate
    delta = delta0 + sigma0 * rng.standard_t(nu, q)
    sigma = rng.uniform(0, p["sigma_high"], q)
    rho = 1 / FOLDS
    n = FOLDS * rng.integers(1, MAX_RUNS + 1, q)
    xbar, ssd = np.empty(q), np.empty(q)
    for i in range(q):
        # x ~ MVN(δ 1, σ² M), M = (1 - ρ) I + ρ 1 1': independent noise plus one shared term
        x = delta[i] + sigma[i] * (np.sqrt(1 - rho) * rng.standard_normal(n[i]) + np.sqrt(rho) * rng.standard_normal())
        xbar[i], ssd[i] = x.mean(), np.sum((x - x.mean()) ** 2)
    truth = {"delta0": delta0, "sigma0": sigma0, "nu": nu, "alpha": alpha, "beta": beta, "delta_1": delta[0]}
    data = {"q": q, "n": n.tolist(), "rho": [rho] * q, "xbar": xbar.tolist(), "ssd": ssd.tolist(), **PRIOR,
            "exact_sigma_bound": 1, "nu_prior": 0}
    return truth, data


def hierarchical_data(data: dict, form: str) -> dict:
    return {**data, **prepare.delta_form(data["q"], noncentred=form == "noncentred")}


def hierarchical_posterior(stan_data: dict, **settings) -> tuple[dict[str, np.ndarray], sampler.Fit]:
    """(chains, draws) posterior draws of :data:`HIERARCHICAL_PARAMS`."""
    posterior = sampler.sample(stan_data, **settings)
    d = posterior.draws
    draws = {"delta0": d["delta0"], "sigma0": d["sigma0"], "nu": 1 + d["nu_minus_one"], "alpha": d["gamma_alpha"],
             "beta": d["gamma_beta"], "delta_1": d["delta"][..., 0]}
    return draws, posterior


def hierarchical_k_names(models: int) -> list[str]:
    return ([f"d_{j + 1}" for j in range(models - 1)]
            + ["sigma0", "omega_11", "spread_12", "nu", "alpha", "beta", "tau_1"])


def wishart_shape(rng: np.random.Generator, p: int, df: float) -> np.ndarray:
    """R = p W / tr(W), W ~ Wishart(I_p, df) by Bartlett's decomposition: W = A A', A lower-triangular with
    A_rr² ~ χ²(df − r + 1) and A_rt ~ N(0, 1) below the diagonal."""
    factor = np.tril(rng.standard_normal((p, p)), -1) + np.diag(np.sqrt(rng.chisquare(df - np.arange(p))))
    w = factor @ factor.T
    return p * w / np.trace(w)


def hierarchical_k_summaries(d: np.ndarray, omega: np.ndarray) -> dict[str, np.ndarray]:
    """The ranked quantities that are not parameters (any leading axes): Ω_11 (the first Helmert coordinate's
    variance) and the spread of the first pair's contrast, √((H Ω H')_11 + (H Ω H')_22 − 2 (H Ω H')_12)."""
    basis = hierarchical_k.helmert(d.shape[-1] + 1)
    effects = basis @ omega @ basis.T
    return {"omega_11": omega[..., 0, 0],
            "spread_12": np.sqrt(effects[..., 0, 0] + effects[..., 1, 1] - 2 * effects[..., 0, 1])}


def simulate_hierarchical_k(rng: np.random.Generator, q: int, models: int, missing: float = 0.0) -> tuple[dict, dict]:
    """Parameters from the fixed prior (:data:`PRIOR_K`), the fold scores of ``models`` models on ``q`` datasets
    (:func:`hierarchical_k_scores`) and the Stan data."""
    truth, blocks = hierarchical_k_scores(rng, q, models, missing)
    rho = np.full(q, 1 / FOLDS)
    n = np.array([len(block) for block in blocks])
    v, c = hierarchical_k.sufficient(blocks, rho)
    present = [hierarchical_k.present(block) for block in blocks]
    data = {**hierarchical_k.sufficient_data(v, c, n, rho, present, models), **PRIOR_K, "shape_df": float(models - 1)}
    return truth, {**data, **hierarchical_k.tau_forms(data), "whiten": hierarchical_k.whitening(data).tolist()}


def hierarchical_k_scores(rng: np.random.Generator, q: int, models: int, missing: float = 0.0,
                          runs: int | None = None) -> tuple[dict, list[np.ndarray]]:
    """Parameters from the fixed prior (:data:`PRIOR_K`; the shape R = p W / tr(W), W ~ Wishart(I, p)) and the fold
    scores (a block of n_i = 10 r_i folds × ``models`` per dataset, r_i uniform on 1..3 or ``runs``) of
    ``stan/hierarchical_k.stan``'s model, with a fold effect and a dataset's common shift (which the model integrates
    out), each model then missing on a dataset with probability ``missing`` (:func:`drop_models`)."""
    p = PRIOR_K
    d = rng.uniform(-p["d_bound"], p["d_bound"], models - 1)
    sigma0 = rng.uniform(0, p["sigma0_high"])
    omega = sigma0**2 * wishart_shape(rng, models - 1, models - 1)
    alpha = rng.uniform(p["alpha_low"], p["alpha_high"])
    beta = rng.uniform(p["beta_low"], p["beta_high"])
    nu = 1 + rng.gamma(alpha, 1 / beta)
    tau = rng.gamma(nu / 2, 2 / nu, q)
    sigma = rng.uniform(0, p["sigma_high"], q)
    basis = hierarchical_k.helmert(models)
    values, vectors = np.linalg.eigh(omega)
    factor = vectors * np.sqrt(np.clip(values, 0, None))
    rho = 1 / FOLDS
    n = FOLDS * (rng.integers(1, 4, q) if runs is None else np.full(q, runs))
    blocks = []
    for i in range(q):
        theta = basis @ (d + factor @ rng.standard_normal(models - 1) / np.sqrt(tau[i])) + rng.normal()
        noise = np.sqrt(1 - rho) * rng.standard_normal((n[i], models)) + np.sqrt(rho) * rng.standard_normal(models)
        blocks.append(theta + rng.normal(0, 1, (n[i], 1)) + sigma[i] * noise)
    if missing:
        blocks = [drop_models(block, missing, rng) for block in blocks]
    truth = {**{f"d_{j + 1}": d[j] for j in range(models - 1)}, "sigma0": sigma0,
             **{name: float(x) for name, x in hierarchical_k_summaries(d, omega).items()}, "nu": nu, "alpha": alpha,
             "beta": beta, "tau_1": tau[0]}
    return truth, blocks


def drop_models(block: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """The block with each model's column NaN with probability ``share`` (at least two models kept, at random)."""
    kept = rng.random(block.shape[1]) >= share
    if kept.sum() < 2:
        kept[rng.choice(block.shape[1], 2, replace=False)] = True
    return np.where(kept, block, np.nan)


def hierarchical_k_posterior(stan_data: dict, **settings) -> tuple[dict[str, np.ndarray], sampler.Run]:
    run = sampler.run("hierarchical_k", stan_data, **settings)
    d = run.draws["d"]
    draws = {f"d_{j + 1}": d[..., j] for j in range(d.shape[-1])}
    omega = run.draws["Omega"].reshape(*d.shape, d.shape[-1])
    draws.update(hierarchical_k_summaries(d, omega))
    draws.update({"sigma0": run.draws["sigma0"].reshape(d.shape[:2]), "nu": run.draws["nu"].reshape(d.shape[:2]),
                  "alpha": run.draws["gamma_alpha"].reshape(d.shape[:2]),
                  "beta": run.draws["gamma_beta"].reshape(d.shape[:2]), "tau_1": run.draws["tau"][..., 0]})
    return draws, run


def bbt_names(models: int) -> list[str]:
    return ["sigma"] + [f"beta_{k + 1}" for k in range(models)]


def simulate_bbt(rng: np.random.Generator, models: int, games: int) -> tuple[dict, dict]:
    """σ and the strengths from the prior, every pair's wins from the Bradley-Terry likelihood, and the Stan data
    (without the form)."""
    sigma = rng.lognormal(0, BBT_OPTIONS.hyper_scale)
    beta = rng.normal(0, sigma, models)
    i, j = np.triu_indices(models, 1)
    wins = rng.binomial(games, special.expit(beta[i] - beta[j]))
    names = [f"m{k + 1}" for k in range(models)]
    table = pd.DataFrame({"model_a": np.asarray(names)[i], "model_b": np.asarray(names)[j], "wins_a": wins,
                          "wins_b": games - wins, "ties": 0})
    data = ranking.stan_data(names, ranking.handle_ties(table, BBT_OPTIONS.ties), BBT_OPTIONS, centred=True)
    centred = beta - beta.mean()  # the identified strengths
    truth = {"sigma": sigma, **{f"beta_{k + 1}": centred[k] for k in range(models)}}
    return truth, data


def bbt_data(data: dict, form: str) -> dict:
    return {**data, "centred": int(form == "centred")}


def bbt_posterior(stan_data: dict, **settings) -> tuple[dict[str, np.ndarray], sampler.Run]:
    run = sampler.run("bbt", stan_data, **settings)
    beta = run.draws["beta"]
    draws = {"sigma": run.draws["sigma"].reshape(beta.shape[:2])}
    draws.update({f"beta_{k + 1}": beta[..., k] for k in range(beta.shape[-1])})
    return draws, run


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
        rows = []
        for name, p in self.pvalues(bins).items():
            counts = binned(np.asarray(self.ranks[name]), self.kept, bins)
            ess = np.asarray(self.ess[name])
            rows.append({"parameter": name, "chi2_p": p, "min_bin": counts.min(), "max_bin": counts.max(),
                         "first_bin": counts[0], "last_bin": counts[-1], "median_ess": float(np.median(ess)),
                         "fits_ess_below_L": int(np.sum(ess < self.kept))})
        return pd.DataFrame(rows)


def replicate_seed(seed: int, config: Config, replicate: int) -> np.random.SeedSequence:
    """A seed per (seed, configuration, replicate): the configurations of one program and size share their
    simulated data across forms (the same replicates, fitted in each form)."""
    program, size = {"hierarchical": (0, config.q), "bbt": (1, config.models * 1000 + config.games),
                     "hierarchical_k": (2, config.q * 1000 + config.models)}[config.program]
    return np.random.SeedSequence([seed, program, size, replicate])


def inside(data: dict) -> bool:
    """Whether mean(x̄_i) lies inside δ0's prior bounds.  hierarchical.stan centres its logit reparameterisation
    of δ0 there; before it kept that centre inside the bounds, data from outside made δ0's sampled coordinate ~1e5
    times too narrow and the chains got stuck (benchmarks/README.md).  The recorded runs skip such data (the
    default of :func:`calibrate`'s ``skip_outside``).  With the paper's bounds, ±max|x|, the mean is always inside."""
    centre = float(np.mean(data["xbar"]))
    return data["delta0_low"] < centre < data["delta0_high"]


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
              progress=None) -> Calibration:
    """SBC of one configuration: simulations until ``replicates`` of them are fitted, each once.  With
    ``skip_outside``, simulated data whose mean(x̄_i) falls outside δ0's bounds are counted and not fitted (see
    :func:`inside`): a choice made on the data alone, which keeps every rank uniform (the rank is uniform given
    the data, whatever the data)."""
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
                posterior, raw = hierarchical_k_posterior(data, **settings)
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
                 f"{'med ESS':>8} {'ESS<L':>6}")
    for row in table.itertuples():
        lines.append(f"  {row.parameter:10} {row.chi2_p:8.3f} {row.min_bin:8d} {row.max_bin:8d} {row.first_bin:6d} "
                     f"{row.last_bin:6d} {row.median_ess:8.0f} {row.fits_ess_below_L:6d}")
    return "\n".join(lines)
