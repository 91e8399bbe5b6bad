"""Summarise step of the hierarchical test: the draws back in score units (:func:`score_units`), next-dataset
probabilities, the mass of δ0 per region, per-dataset shrinkage and the per-dataset tests, the model check (PSIS-LOO
of each dataset left out whole) and the sensitivity note.  The answers read draws and the rope in *score units*; the
model check (:func:`dataset_pareto_k`, :func:`integrated_log_lik`) reads the Stan data and its draws in the *scaled*
units of :mod:`.prepare`, as the Stan program sees them (a likelihood: no rope)."""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from ...shared.posterior_summary import HDI_PROB, arviz, hdi
from ..correlated_t.formula import correlated_t_masses, correlated_t_posterior, nadeau_bengio_p

PARETO_K_LIMIT = 0.7
#: Nodes per density of :func:`integrated_log_lik`'s quadrature: k̂ within 0.015 of a 512-node quadrature's on the
#: paper's pairs (the former 64 plain midpoints: 0.026; 24 nodes: 0.08): benchmarks/README.md, "The model check's cost"
NODES = 48
#: Elements per array in :func:`integrated_log_lik`'s blocks of draws (about 400 kB in single precision), and the
#: most threads that share the blocks
BLOCK_ELEMENTS, MAX_THREADS = 100_000, 4


def score_units(draws: dict[str, np.ndarray], scale: float) -> dict[str, np.ndarray]:
    """The Stan program's draws in score units: δ0, σ0 and δ_i times the ``scale`` :mod:`.prepare` divided the data
    by; ν = 1 + ν'; the Gamma prior's α and β as they are."""
    out = {name: draws[name] * scale for name in ("delta0", "sigma0", "delta")}
    if "nu_minus_one" in draws:
        out["nu"] = 1 + draws["nu_minus_one"]
    for name in ("gamma_alpha", "gamma_beta"):
        if name in draws:
            out[name] = draws[name]
    return out


def next_dataset_areas(draws: dict[str, np.ndarray], rope: float) -> np.ndarray:
    """Per posterior draw of (δ0, σ0, ν) in score units (:func:`score_units`), the areas of t_ν(δ0, σ0) left of,
    inside and right of (-rope, rope), the rope in score units too.

    Sec. "The inference of the test", step 2.  Returns an array (draws, 3); the Gaussian prior (no ν) uses N(δ0, σ0).
    """
    loc, scale = draws["delta0"].ravel(), draws["sigma0"].ravel()
    dist = stats.norm if "nu" not in draws else stats.t(df=draws["nu"].ravel())
    left = dist.cdf((-rope - loc) / scale)
    right = dist.sf((rope - loc) / scale)
    return np.column_stack([left, 1 - left - right, right])


def side_masses(values: np.ndarray, rope: float) -> tuple[float, float, float]:
    """The share of draws left of, inside and right of (-rope, rope): the posterior mass of each region, e.g. of
    δ0 (the statistic of the paper's simulation studies, as the authors' driver stored ``delta0$rope``)."""
    flat = np.ravel(values)
    left, right = float(np.mean(flat < -rope)), float(np.mean(flat > rope))
    return left, 1 - left - right, right


def dataset_pareto_k(stan_data: dict, hyper: dict[str, np.ndarray], nodes: int = NODES) -> np.ndarray:
    """PSIS-LOO Pareto k̂ of each dataset left out whole (Vehtari, Gelman & Gabry 2017), from
    :func:`integrated_log_lik`: how well the Student-t population predicts a new dataset like it.  k̂ > 0.7 marks a
    dataset the population does not predict well (the paper's future-work caveat about the Student-t population).
    The relative efficiency of the draws is arviz's ``loo``'s (the mean ESS of δ0 over the draws); the smoothing is
    arviz's ``psislw``, without the rest of ``loo``, which nothing here reads."""
    az = arviz()  # here: importing it costs seconds, which a closed-form test should not pay
    log_lik = integrated_log_lik(stan_data, hyper, nodes)
    delta0 = np.asarray(hyper["delta0"])
    reff = float(az.ess(delta0, method="mean")) / delta0.size if delta0.shape[0] > 1 else 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # arviz warns about high k̂: the caller reports them by name
        _, pareto_k = az.psislw(-log_lik.reshape(-1, log_lik.shape[-1]).T, reff)
    return np.asarray(pareto_k)


def quadrature_nodes(count: int = NODES) -> tuple[np.ndarray, np.ndarray]:
    """Nodes u_k in (0, 1) and their weights for ∫_0^1 f(u) du: the midpoints v_k of ``count`` equal strata mapped
    by the quintic smoothstep u = 10v³ − 15v⁴ + 6v⁵, each weighted by its derivative 30v²(1 − v)²/count.  The map
    flattens the integrand at u = 0 and 1, where a density's tails make the plain midpoint rule converge as 1/count
    (benchmarks/README.md, "The model check's cost")."""
    v = (np.arange(count) + 0.5) / count
    return v**3 * (10 - 15 * v + 6 * v**2), 30 * v**2 * (1 - v) ** 2 / count


def integrated_log_lik(stan_data: dict, hyper: dict[str, np.ndarray], nodes: int = NODES) -> np.ndarray:
    """log p(x_i | θ) per draw and dataset, ``(chains, draws, q)``, with δ_i integrated out (δ_i belongs to
    dataset i alone): p(x_i | θ) = ∫ L_i(δ) t_ν(δ; δ0, σ0) dδ, where L_i, the likelihood with σ_i integrated out
    (rewrite 2 of the Stan program), is a Student-t density in δ with n_i − 2 degrees of freedom (up to a constant
    per dataset).  The integral is taken against the defensive mixture g = (L_i + t_ν)/2, half of it on the
    quantiles of each density (:func:`quadrature_nodes`), each node weighted by L_i t_ν / g = 2 L_i t_ν / (L_i + t_ν).
    Either density alone misses the mass when a narrow population sits far from the dataset in its own heavy tail,
    or a narrow likelihood far out in the population's.  ``hyper`` holds the draws of delta0, sigma0 and (unless the
    prior is Gaussian) nu_minus_one, in the scaled units of the Stan data (as the Stan program gives them).  The
    densities at the nodes are computed in single precision (their rounding, about 1e-6, is far below the
    quadrature's error), a few draws at a time, so that each (draws × datasets × nodes) array stays in the
    processor's cache (:data:`BLOCK_ELEMENTS`), the blocks shared by a thread per core (numpy's array operations run
    outside the interpreter's lock)."""
    n, rho = np.asarray(stan_data["n"], float), np.asarray(stan_data["rho"], float)
    xbar, ssd = np.asarray(stan_data["xbar"], float), np.asarray(stan_data["ssd"], float)
    df = np.maximum(n - 2, 1)
    lik = _StudentT.of(xbar, np.sqrt(ssd / (1 - rho) * (1 + (n - 1) * rho) / (n * df)), df)
    nu = None if "nu_minus_one" not in hyper else 1 + np.ravel(hyper["nu_minus_one"])
    loc, scale = np.ravel(hyper["delta0"]), np.ravel(hyper["sigma0"])
    pop = _StudentT.of(loc, scale, nu)
    u, weights = quadrature_nodes(nodes)
    half = nodes // 2  # the nodes are symmetric about 1/2: half the population's quantiles, mirrored
    upper = special.ndtri(u[None, half:]) if nu is None else special.stdtrit(nu[:, None], u[None, half:])
    on_pop = loc[:, None] + scale[:, None] * np.concatenate([-upper[:, ::-1], upper], axis=1)  # (draws, nodes)
    on_lik = xbar[:, None] + lik.scale[:, None] * stats.t.ppf(u, df[:, None])  # (q, nodes), fixed
    f32 = np.float32
    lik_on_lik = lik.log_at(on_lik, (-1, 1)).astype(f32)
    pop_on_pop = pop.log_at(on_pop, (-1, 1)).astype(f32)
    lik_by_dataset, weights, on_lik32 = lik.shaped((1, -1, 1), f32), weights.astype(f32), on_lik.astype(f32)
    out = np.empty((len(loc), len(xbar)))
    block = max(1, BLOCK_ELEMENTS // (len(xbar) * nodes))

    def fill(start: int) -> None:  # the draws of one block, into their own rows of ``out``
        draws = slice(start, start + block)
        by_lik = _log_weighted_sum(lik_on_lik, pop.shaped((-1, 1, 1), f32, draws).log_at(on_lik32), weights)
        by_pop = _log_weighted_sum(lik_by_dataset.log_at(on_pop[draws, None, :].astype(f32)),
                                    pop_on_pop[draws, None, :], weights)
        out[draws] = np.logaddexp(by_lik, by_pop) - np.log(2)

    with ThreadPoolExecutor(min(os.cpu_count() or 1, MAX_THREADS)) as pool:
        list(pool.map(fill, range(0, len(loc), block)))
    return out.reshape(*np.shape(hyper["delta0"]), -1)


def _log_weighted_sum(lik: np.ndarray, pop: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """log Σ_k w_k · 2 L t / (L + t) over the nodes (the last axis), from log L and log t (broadcast together):
    in linear units scaled by the largest min(log L, log t) of each row, where every other node is smaller."""
    top = np.minimum(lik, pop).max(axis=-1, keepdims=True)
    with np.errstate(over="ignore"):  # a node far below the top: exp overflows to inf, whose reciprocal is the 0 due
        inverse = np.exp(top - lik)
        inverse += np.exp(top - pop)
    return top[..., 0].astype(float) + np.log(2 * np.sum(weights / inverse, axis=-1, dtype=float))


@dataclass(frozen=True)
class _StudentT:
    """log t_ν(δ; loc, scale) = const − power · log(1 + (δ − loc)² · inverse), each draw's or dataset's constants
    computed once; without ν the Gaussian, const − power · (δ − loc)² · inverse."""

    loc: np.ndarray
    scale: np.ndarray
    const: np.ndarray
    power: np.ndarray
    inverse: np.ndarray
    gaussian: bool

    @classmethod
    def of(cls, loc: np.ndarray, scale: np.ndarray, nu: np.ndarray | None) -> _StudentT:
        if nu is None:
            return cls(loc, scale, -0.5 * np.log(2 * np.pi) - np.log(scale), np.full_like(loc, 0.5), 1 / scale**2,
                       True)
        const = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - np.log(scale)
        return cls(loc, scale, const, (nu + 1) / 2, 1 / (nu * scale**2), False)

    def shaped(self, shape: tuple[int, ...], dtype=float, rows=slice(None)) -> _StudentT:
        """The constants of ``rows``, reshaped to broadcast against the nodes (e.g. ``(-1, 1, 1)``)."""
        part = {name: getattr(self, name)[rows].reshape(shape).astype(dtype)
                for name in ("loc", "scale", "const", "power", "inverse")}
        return _StudentT(**part, gaussian=self.gaussian)

    def log_at(self, delta: np.ndarray, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """The log density at ``delta``; ``shape`` reshapes the constants first (e.g. ``(-1, 1)``: one row each)."""
        d = self.shaped(shape, delta.dtype) if shape is not None else self
        z = delta - d.loc
        z *= z
        z *= d.inverse
        if not d.gaussian:
            z += 1
            np.log(z, out=z)
        z *= -d.power
        z += d.const
        return z


def conflicts(table: pd.DataFrame, threshold: float) -> pd.Series:
    """Per dataset: its own evidence (the Bayesian correlated t-test) is at least ``threshold`` on one side of the
    rope while its shrunk estimate's most probable side is the other one."""
    shrunk_side = table[["p_left", "p_rope", "p_right"]].to_numpy().argmax(axis=1)
    return ((table["bct_p_left"] >= threshold) & (shrunk_side == 2)) | \
        ((table["bct_p_right"] >= threshold) & (shrunk_side == 0))


def shrinkage_table(delta: np.ndarray, rope: float) -> pd.DataFrame:
    """Per dataset: posterior mean of δ_i (the shrinkage estimate, Sec. "shrinkage"), its 95% HDI and the
    fractions of draws left of, inside and right of the rope.  ``delta`` is (chains, draws, q)."""
    flat = delta.reshape(-1, delta.shape[-1])
    low, high = hdi(flat, HDI_PROB)
    return pd.DataFrame(
        {
            "shrunk": flat.mean(axis=0),
            "hdi_low": low,
            "hdi_high": high,
            "p_left": (flat < -rope).mean(axis=0),
            "p_rope": ((flat >= -rope) & (flat <= rope)).mean(axis=0),
            "p_right": (flat > rope).mean(axis=0),
        }
    )


def per_dataset(diffs: list[np.ndarray], rho: np.ndarray, rope: float) -> pd.DataFrame:
    """The per-dataset tests the paper compares the hierarchical model with, on each dataset's own differences (in
    score units): columns ``nb_t_p`` (Nadeau-Bengio), ``bct_p_left``, ``bct_p_rope``, ``bct_p_right`` (the Bayesian
    correlated t-test), one row per dataset."""
    rows = []
    for x, r in zip(diffs, rho):
        posterior = correlated_t_posterior(x, r)
        left, rope_mass, right = correlated_t_masses(*posterior, rope)
        rows.append({"nb_t_p": nadeau_bengio_p(*posterior), "bct_p_left": left, "bct_p_rope": rope_mass,
                     "bct_p_right": right})
    return pd.DataFrame(rows)


def sensitivity_note(table: pd.DataFrame, decision: str) -> str:
    """One sentence: is the decision the same under every prior and rope of the sensitivity table?"""
    changed = table[table["decision"] != decision]
    if changed.empty:
        return f"conclusion stable: '{decision}' under every prior and rope tried"
    cases = "; ".join(f"prior {r.prior}, rope {r.rope:g} -> {r.decision}" for r in changed.itertuples())
    return f"conclusion changes in {len(changed)} of {len(table)} settings: {cases}"
