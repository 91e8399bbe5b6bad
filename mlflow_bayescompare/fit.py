"""Run the Stan model on either backend and return the draws in one layout.

Layout: ``draws[name]`` is an array ``(chains, draws, *shape)`` for each of ``delta0``, ``sigma0``, ``delta`` (whether
Stan sampled it centred or as ``delta_z``) and,
when the prior has them, ``nu_minus_one``, ``gamma_alpha``, ``gamma_beta`` (Stan's length-0/1 arrays become absent
or scalar).  ``sampler[name]`` is ``(chains, draws)`` for ``divergent__``, ``treedepth__``, ``n_leapfrog__``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from . import model as stan_model
from .errors import SamplingError

PARAMETERS = ("delta0", "sigma0", "nu_minus_one", "gamma_alpha", "gamma_beta", "delta", "delta_z")
SAMPLER_STATS = ("divergent__", "treedepth__", "n_leapfrog__")
MAX_TREEDEPTH = 10


@dataclass
class Fit:
    draws: dict[str, np.ndarray]
    sampler: dict[str, np.ndarray]
    backend: str
    seconds: float
    max_treedepth: int = MAX_TREEDEPTH


def sample(stan_data: dict, *, chains: int, draws: int, warmup: int, seed: int, backend: str = "auto") -> Fit:
    """Sample the posterior of ``stan/hierarchical.stan`` given ``stan_data`` (see :mod:`.prepare`)."""
    backend = stan_model.resolve_backend(backend)
    run = _sample_cmdstanpy if backend == "cmdstanpy" else _sample_pystan
    raw, sampler, seconds = run(stan_data, chains=chains, draws=draws, warmup=warmup, seed=seed)
    q = stan_data["q"]
    out = {}
    for name in PARAMETERS:
        if name not in raw:
            continue
        value = raw[name]
        if name in ("delta", "delta_z"):
            if value.size:
                out["delta"] = value.reshape(chains, draws, q)
        elif value.size:  # Stan arrays of length 1 become scalars, length 0 are dropped
            out[name] = value.reshape(chains, draws)
    if stan_data.get("noncentred"):  # δ_i = δ0 + σ0 z_i
        out["delta"] = out["delta0"][..., None] + out["sigma0"][..., None] * out["delta"]
    return Fit(out, sampler, backend, seconds)


def _sample_pystan(stan_data, *, chains, draws, warmup, seed):
    posterior = stan_model.pystan_model(stan_data, seed)
    start = time.perf_counter()
    try:
        with stan_model._quiet_stdout():
            fit = posterior.sample(num_chains=chains, num_samples=draws, num_warmup=warmup)
    except RuntimeError as exc:
        raise SamplingError(f"Stan failed to sample: {exc}") from exc
    finally:
        stan_model.prune_pystan_fits()

    def by_chain(flat: np.ndarray) -> np.ndarray:
        # pystan returns (*dims, draws * chains) with the draw index running fastest
        dims = flat.shape[:-1]
        return np.moveaxis(flat.reshape(*dims, chains, draws), (-2, -1), (0, 1))

    raw = {name: by_chain(fit[name]) for name in PARAMETERS if name in fit.param_names}
    sampler = {name: by_chain(fit[name]).reshape(chains, draws) for name in SAMPLER_STATS}
    return raw, sampler, time.perf_counter() - start


def _sample_cmdstanpy(stan_data, *, chains, draws, warmup, seed):
    compiled = stan_model.cmdstan_model()
    start = time.perf_counter()
    try:
        fit = compiled.sample(
            data=stan_data,
            chains=chains,
            parallel_chains=min(chains, os.cpu_count() or 1),
            iter_sampling=draws,
            iter_warmup=warmup,
            seed=seed,
            show_progress=False,
            show_console=False,
            output_dir=None,
        )
    except RuntimeError as exc:
        raise SamplingError(f"Stan failed to sample: {exc}") from exc
    raw = {}
    for name in PARAMETERS:
        if name in fit.metadata.stan_vars:
            value = fit.stan_variable(name)  # (chains * draws, *dims), chain after chain
            raw[name] = value.reshape(chains, draws, *value.shape[1:])
    stats = fit.method_variables()
    sampler = {name: np.asarray(stats[name]).T.reshape(chains, draws) for name in SAMPLER_STATS}
    return raw, sampler, time.perf_counter() - start
