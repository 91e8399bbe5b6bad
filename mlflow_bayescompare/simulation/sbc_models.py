"""The three Stan programs that :mod:`.sbc` calibrates, each with a fixed prior (given to Stan as data) to draw its
parameters from, a simulator of data from them, and its posterior draws of the ranked quantities.

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
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from ..families.hierarchical import prepare
from ..families.ranking.bbt import engine as ranking
from ..families.ranking.hierarchical_k import engine as hierarchical_k
from ..sampling import sampler
from ..vocabulary.options import RankOptions

__all__ = ["PRIOR", "PRIOR_K", "FOLDS", "MAX_RUNS", "HIERARCHICAL_PARAMS", "BBT_OPTIONS", "simulate_hierarchical",
           "hierarchical_data", "hierarchical_posterior", "inside", "hierarchical_k_names", "wishart_shape",
           "hierarchical_k_summaries", "simulate_hierarchical_k", "hierarchical_k_scores", "drop_models",
           "hierarchical_k_posterior", "bbt_names", "simulate_bbt", "bbt_data", "bbt_posterior"]

#: the fixed prior of the hierarchical program (scaled units), given to Stan as data
PRIOR = {"delta0_low": -1.0, "delta0_high": 1.0, "sigma0_high": 1.0, "sigma_high": 1.0,
         "alpha_low": 0.5, "alpha_high": 5.0, "beta_low": 0.05, "beta_high": 0.15}
#: the fixed prior of the hierarchical program of k models (scaled units), given to Stan as data
PRIOR_K = {"d_bound": 1.0, "sigma0_high": 1.0, "sigma_high": 1.0, "alpha_low": 0.5, "alpha_high": 5.0,
           "beta_low": 0.05, "beta_high": 0.15}
FOLDS = 10  # ρ = 1/FOLDS; n_i = FOLDS * runs_i
MAX_RUNS = 10
HIERARCHICAL_PARAMS = ("delta0", "sigma0", "nu", "alpha", "beta", "delta_1")
BBT_OPTIONS = RankOptions()  # lognormal hyper-prior, scale 0.5, ties spread (none are simulated)


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


def hierarchical_k_posterior(stan_data: dict, retry: bool = False, **settings) -> tuple[dict[str, np.ndarray],
                                                                                        sampler.Run]:
    """The program's draws of the SBC's statistics; ``retry``: sampled as ``rank`` samples it (again at adapt_delta
    0.95 after a divergent fit, the fit with fewer divergent transitions kept: ``sample_program``)."""
    if retry:
        run, _ = hierarchical_k.sample_program(stan_data, RankOptions(**settings), None)
    else:
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


def inside(data: dict) -> bool:
    """Whether mean(x̄_i) lies inside δ0's prior bounds.  hierarchical.stan centres its logit reparameterisation
    of δ0 there; before it kept that centre inside the bounds, data from outside made δ0's sampled coordinate ~1e5
    times too narrow and the chains got stuck (benchmarks/README.md).  The recorded runs skip such data (the
    default of :func:`calibrate`'s ``skip_outside``).  With the paper's bounds, ±max|x|, the mean is always inside."""
    centre = float(np.mean(data["xbar"]))
    return data["delta0_low"] < centre < data["delta0_high"]
