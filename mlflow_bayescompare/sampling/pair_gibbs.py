"""The hierarchical model of one difference (Corani et al. 2017, Sec. 3: ``stan/hierarchical_k.stan`` at k = 2, the
paper's model, priors included), sampled by Gibbs for many pairs at once: the ranking's pairs (issue 38).

For each pair, on its q datasets, in the program's scaled contrast units (v_i, c_i, m_i, w_i of its data block):
  p(y_i | φ_i, σ_i) ∝ σ_i^(−w_i−1) exp(−(c_i + m_i (v_i − φ_i)²) / (2σ_i²))   (rewrites 1-2 before rewrite 4;
    w_i = n_i − 1: v_i | φ_i, σ_i ~ N(φ_i, σ_i²/m_i), the within-fold sum of squares c_i)
  φ_i ~ N(d, σ0²/τ_i), τ_i ~ Gamma(ν/2, ν/2)   ([eq:delta_i] as a scale mixture)
  d ~ U(±d_bound), σ0 ~ U(0, σ0_high), σ_i flat, ν = 1 + ν', ν' ~ Gamma(α, β), α ~ U, β ~ U   (the paper's priors)
  with α and β integrated out of ν''s prior (:func:`nu_prior`: they are not reported, and a ν' that moves given
  α and β moves only as fast as they do)
A sweep: φ_i by an independence Metropolis step from N(v_i, σ_i²/m_i) with τ_i integrated out (φ_i ~ t_ν(d, σ0));
then τ_i, σ_i, φ_i, d and σ0 from their conditionals (normal, gamma, truncated by inversion); d and σ0 again given
z_i = (φ_i − d)√τ_i/σ0 (the interweaving of Yu & Meng 2011, "To center or not to center", JCGS 20:531-570, which
keeps σ0 moving where the datasets' noise hides the population's spread); ν' and σ0 by random-walk Metropolis with
the τ_i integrated out (ν' moved together with σ0 so that t_ν(d, σ0)'s quartiles stay, a shear of unit Jacobian, as
ν and σ0 trade along one ridge), under ν''s marginal prior.  The walks' scales adapt in the warm-up only.

Why not Stan: a pair is a few hundred coordinates and a cheap density, and a ranking of k models has k(k − 1)/2 of
them; NUTS spends about 4 s on each (Wainer's 131 four-fold datasets), where these sweeps run every pair together as
arrays (benchmarks/README.md, "The ranking's pairs by Gibbs").  A pair's draws depend on its own data only, so that
no other pair, joining or leaving, moves them: each draws its random numbers from its own generator, seeded by the
seed alone, and the pairs are sampled in batches of the same dataset count and priors (nothing padded: a padded sum
rounds differently), each batch split across the machine's cores, one worker process per core (:mod:`.subprocesses`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable

import numpy as np
from scipy import special

from . import subprocesses
from .sampler import Run

__all__ = ["sample_pairs", "batch_draws", "nu_prior", "FORM", "ACCEPT_TARGET", "WALKS", "BLOCK", "UNIFORMS"]

#: how the pairs are sampled (a fit's ``parameterisation``)
FORM = ("Gibbs sweeps (Yu-Meng interweaving of d and sigma0; nu', sigma0 and phi_i by Metropolis with tau_i "
        "integrated out; alpha and beta integrated out of nu's prior)")

#: the random-walk steps' target acceptance rate (one dimension: Roberts, Gelman & Gilks 1997)
ACCEPT_TARGET = 0.44
#: Metropolis steps per sweep on each of log ν' and log σ0 (the τ_i integrated out)
WALKS = 3
#: sweeps whose random numbers a pair draws at once
BLOCK = 32
#: uniforms per chain and sweep for the scalar steps: d, σ0 (centred, its rare truncation), σ0 and d (non-centred),
#: and two per walk step
UNIFORMS = 4 + 2 * WALKS
#: the log ν' of :func:`nu_prior`'s table: ν' from 1e-13 to 9e6 (the prior's mass beyond: below 1e-9)
NU_GRID = np.linspace(-30.0, 16.0, 4601)
#: the precision of the per-dataset arrays (pairs, chains, q) and their random numbers: single, twice as fast in numpy's
#: loops, its rounding (1e-7 relative) far below the draws' Monte-Carlo error; the scalars d, σ0, ν' and the sums'
#: use are double (benchmarks/README.md, "The pairs' Gibbs in single precision")
REAL = np.float32


class _Batch:
    """Pairs with the same dataset count q and the same prior of ν': their data as (pairs, 1, q) arrays, their
    scalars as (pairs, 1) and the table of ν''s prior."""

    def __init__(self, datas: list[dict]):
        def rows(key, column=False):
            values = [np.asarray(data[key], float) for data in datas]
            return np.stack([v[:, 0] if column else v for v in values])[:, None, :].astype(REAL)

        self.v, self.c, self.m, self.w = rows("v_c", column=True), rows("c"), rows("m"), rows("w")
        scalar = {key: np.array([float(data[key]) for data in datas])[:, None]
                  for key in ("d_bound", "sigma0_high")}
        self.d_bound, self.sigma0_high = scalar["d_bound"], scalar["sigma0_high"]
        self.nu_prior = nu_prior(*_nu_bounds(datas[0]))  # the batch's pairs share their priors (sample_pairs)


class _Randoms:
    """Each pair's random numbers from its own generator: the fixed laws' drawn :data:`BLOCK` sweeps at a time (one
    call per pair, kind and block, not per sweep), τ_i's Gamma((ν + 1)/2), whose shape is known only at its sweep, one
    call per pair and chain."""

    def __init__(self, gens, chains: int, q: int, shapes_r: np.ndarray):
        pairs = len(gens)
        self.gens, self.q, self.shapes_r = gens, q, shapes_r
        self.gamma_r = np.empty((pairs, BLOCK, chains, q), REAL)  # the noise's Gamma(w_i/2)
        self.normals = np.empty((pairs, BLOCK, chains, 2 * q), REAL)  # φ's proposal and draw
        self.uniforms = np.empty((pairs, BLOCK, chains, q), REAL)  # φ's acceptance
        self.gamma_s = np.empty((pairs, BLOCK, chains))  # σ0's Gamma((q − 1)/2)
        self.walks = np.empty((pairs, BLOCK, chains, 2 * WALKS))  # the walks' normals
        self.steps = np.empty((pairs, BLOCK, chains, UNIFORMS))  # the scalar steps' uniforms

    def sweep(self, sweep: int):
        """This sweep's gamma variates of the noise and of σ0, normals of φ, uniforms of the scalar steps and normals
        of the walks."""
        at = sweep % BLOCK
        if at == 0:
            for row, (gen, shape) in enumerate(zip(self.gens, self.shapes_r)):
                same = np.all(shape == shape[0])  # one shape: numpy's faster path
                gen.standard_gamma(shape[0] if same else np.broadcast_to(shape, self.gamma_r.shape[1:]),
                                   out=self.gamma_r[row], dtype=REAL)
                gen.standard_normal(out=self.normals[row], dtype=REAL)
                gen.random(out=self.uniforms[row], dtype=REAL)
                gen.standard_gamma((self.q - 1) / 2, out=self.gamma_s[row])
                gen.standard_normal(out=self.walks[row])
                gen.random(out=self.steps[row])
        q, normals = self.q, self.normals[:, at]
        return (self.gamma_r[:, at], self.gamma_s[:, at], normals[..., :q], normals[..., q:], self.uniforms[:, at],
                self.steps[:, at], self.walks[:, at])

    def gamma(self, shape: np.ndarray) -> np.ndarray:
        """Gamma(shape) variates (pairs, chains, q), ``shape`` (pairs, chains): a scalar shape per call, numpy's
        fast path."""
        out = np.empty((*shape.shape, self.q), REAL)
        for row, gen in enumerate(self.gens):
            for chain, value in enumerate(shape[row]):
                gen.standard_gamma(value, out=out[row, chain], dtype=REAL)
        return out


def _truncated_normal(mean, sd, low, high, u):
    """N(mean, sd²) truncated to (low, high), by inversion of the uniforms ``u``."""
    a, b = special.ndtr((low - mean) / sd), special.ndtr((high - mean) / sd)
    return np.clip(mean + sd * special.ndtri(np.clip(a + u * (b - a), 1e-300, 1 - 1e-16)), low, high)


def _truncated_gamma(shape, rate, low, high, u):
    """Gamma(shape, rate) truncated to (low, high), by inversion of the uniforms ``u``."""
    a, b = special.gammainc(shape, rate * low), special.gammainc(shape, rate * high)
    return np.clip(special.gammaincinv(shape, np.clip(a + u * (b - a), 1e-300, 1 - 1e-16)) / rate, low, high)


def _log_t(nu_prime, s0, q, squares):
    """Σ_i log t_ν(φ_i; d, σ0) up to a constant, ν = 1 + ν', from ``squares`` = (φ_i − d)² (pairs, chains, q)."""
    nu = 1 + nu_prime
    constant = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu) - np.log(s0)
    return q * constant - (nu + 1) / 2 * np.sum(np.log1p(squares * _column(1 / (nu * s0**2))), axis=2)


def _column(values: np.ndarray) -> np.ndarray:
    """Scalars (pairs, chains) as a (pairs, chains, 1) column of the per-dataset arrays' precision."""
    return values[..., None].astype(REAL)


def _quartile(nu_prime):
    """The upper quartile of t_ν, ν = 1 + ν', by its Cornish-Fisher expansion in 1/ν (Abramowitz & Stegun 26.7.5;
    1.000 at ν = 1 against 1; any function of ν keeps the shear move exact, a close one makes it useful)."""
    z, nu = 0.6744897501960817, 1 + nu_prime
    return z + (z**3 + z) / (4 * nu) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * nu**2)


@functools.lru_cache(maxsize=4)
def nu_prior(alpha_low: float, alpha_high: float, beta_low: float, beta_high: float) -> np.ndarray:
    """log p(ν') at :data:`NU_GRID`'s log ν', ν' ~ Gamma(α, β) with α ~ U(α_low, α_high) and β ~ U(β_low, β_high)
    integrated out: over β in closed form, ∫ Gamma(ν'; α, β) dβ = α/ν'² · [P(α + 1, β_high ν') − P(α + 1, β_low ν')]
    (P the regularised lower incomplete gamma), over α by 48-point Gauss-Legendre quadrature."""
    nodes, weights = np.polynomial.legendre.leggauss(48)
    alpha = alpha_low + (alpha_high - alpha_low) * (nodes + 1) / 2
    nu_prime = np.exp(NU_GRID)[:, None]
    density = alpha / nu_prime**2 * (special.gammainc(alpha + 1, beta_high * nu_prime)
                                     - special.gammainc(alpha + 1, beta_low * nu_prime))
    table = np.log(np.maximum(density @ weights / 2 / (beta_high - beta_low), 1e-300))
    table.setflags(write=False)  # cached: one table for every batch with these bounds
    return table


def _nu_bounds(data: dict) -> tuple[float, float, float, float]:
    """The bounds of α's and β's uniform priors in a pair's data block."""
    return tuple(float(data[key]) for key in ("alpha_low", "alpha_high", "beta_low", "beta_high"))


def _log_nu_prior(x: _Batch, nu_prime: np.ndarray) -> np.ndarray:
    """log p(ν') + log ν' (a walk on log ν''s Jacobian) for ``nu_prime`` (pairs, chains), from the batch's table of
    :func:`nu_prior`: linear in log ν' between the grid's points, constant beyond its ends."""
    log_nu_prime = np.log(nu_prime)
    return np.interp(log_nu_prime, NU_GRID, x.nu_prior) + log_nu_prime


def sample_pairs(datas: list[dict], *, chains: int, draws: int, warmup: int, thin: int, seed: int,
                 report: Callable[[int, int], None] | None = None) -> list[Run]:
    """Sample each pair's data block (``hierarchical_k.stan``'s at k = 2, every dataset complete) for ``warmup`` +
    ``draws`` × ``thin`` sweeps per chain, keeping every ``thin``-th; one :class:`~.sampler.Run` per pair with the
    program's names d, sigma0, nu and Omega, ``seconds`` its share of the time.  ``report(sweep, sweeps)`` hears of
    the first batch's progress every :data:`BLOCK` sweeps."""
    start = time.perf_counter()
    groups: dict[tuple, list[int]] = {}
    for index, data in enumerate(datas):
        groups.setdefault((int(data["q"]), _nu_bounds(data)), []).append(index)
    cores = max(1, min(os.cpu_count() or 1, len(datas)))
    parts = [[int(i) for i in part] for members in groups.values()
             for part in np.array_split(members, min(cores, len(members)))]
    batches = [[datas[i] for i in part] for part in parts]
    rows = subprocesses.run(batch_draws, [(batch, chains, draws, warmup, thin, seed) for batch in batches],
                            [len(batch) * int(batch[0]["q"]) for batch in batches], cores, report)
    kept = {i: row for part, batch_rows in zip(parts, rows) for i, row in zip(part, batch_rows)}
    share = (time.perf_counter() - start) / len(datas)
    zeros = np.zeros((chains, draws))
    return [Run({"d": kept[i]["d"][..., None], "sigma0": kept[i]["sigma0"], "nu": kept[i]["nu"],
                 "Omega": kept[i]["sigma0"][..., None, None] ** 2},
                {"divergent__": zeros, "treedepth__": zeros, "n_leapfrog__": zeros}, "gibbs", share, 0.0)
            for i in range(len(datas))]


def batch_draws(datas: list[dict], chains: int, draws: int, warmup: int, thin: int, seed: int,
                report: Callable[[int, int], None] | None = None) -> list[dict[str, np.ndarray]]:
    """The kept draws of d, σ0 and ν (each (chains, draws)) of each pair of one batch (the same q and priors)."""
    return _sweeps(_Batch(datas), chains, draws, warmup, thin, seed, report)


@dataclasses.dataclass
class _State:
    """The chains of one batch: d, σ0, ν' (pairs, chains); φ_i, 1/σ_i² (pairs, chains, q); the random walks'
    log-scales (2, pairs, chains: log ν', log σ0) and their acceptance in the last sweep."""

    d: np.ndarray
    s0: np.ndarray
    nu_prime: np.ndarray
    phi: np.ndarray
    r: np.ndarray
    steps: np.ndarray
    accepted: np.ndarray


def _start(x: _Batch, chains: int, gens) -> _State:
    """Each chain's d, σ0 and ν' scattered around the moment estimates of its pair, φ_i at v_i, σ_i at the
    within-dataset estimate."""
    pairs, q = x.v.shape[0], x.v.shape[2]
    first = np.stack([gen.standard_normal((chains, 3)) for gen in gens])
    mean, spread = x.v.mean(axis=2), x.v.std(axis=2, ddof=1) + 1e-3
    d = np.clip(mean + first[..., 0] * spread / np.sqrt(q), -0.9 * x.d_bound, 0.9 * x.d_bound)
    s0 = np.clip(spread * np.exp(0.5 * first[..., 1]), 1e-6, 0.9 * x.sigma0_high)
    shape = (pairs, chains, q)
    return _State(d, s0, 10 * np.exp(first[..., 2]), np.broadcast_to(x.v, shape).copy(),
                  np.broadcast_to(x.w / x.c, shape).astype(REAL), np.ones((2, pairs, chains)),
                  np.zeros((2, pairs, chains)))


def _sweeps(x: _Batch, chains: int, draws: int, warmup: int, thin: int, seed: int,
            report: Callable[[int, int], None] | None) -> list[dict[str, np.ndarray]]:
    """The Gibbs sweeps of one batch; per pair its kept draws of d, σ0 and ν, each (chains, draws)."""
    pairs, q = x.v.shape[0], x.v.shape[2]
    gens = [np.random.default_rng(seed) for _ in range(pairs)]
    state = _start(x, chains, gens)
    keep = {name: np.empty((pairs, chains, draws)) for name in ("d", "sigma0", "nu")}
    randoms = _Randoms(gens, chains, q, x.w[:, 0, :] / 2)
    sweeps = warmup + draws * thin
    for sweep in range(sweeps):
        if report and sweep % BLOCK == 0:
            report(sweep, sweeps)
        gamma_r, gamma_s, normal, jump, jump_u, uniform, walk = randoms.sweep(sweep)
        tau = _effects(x, state, randoms.gamma((2 + state.nu_prime) / 2), gamma_r, normal, jump, jump_u)
        _population(x, state, tau, gamma_s, uniform)
        _tails(x, state, uniform, walk)
        if sweep < warmup:  # Robbins-Monro on the walks' log-scales toward ACCEPT_TARGET
            state.steps *= np.exp((state.accepted - ACCEPT_TARGET) / np.sqrt(sweep + 1))
        elif (sweep - warmup) % thin == thin - 1:
            at = (sweep - warmup) // thin
            keep["d"][..., at], keep["sigma0"][..., at], keep["nu"][..., at] = state.d, state.s0, 1 + state.nu_prime
    return [{name: values[row] for name, values in keep.items()} for row in range(pairs)]


def _effects(x: _Batch, state: _State, gamma_tau, gamma_r, normal, jump, jump_u) -> np.ndarray:
    """φ_i, τ_i and σ_i; returns the τ_i.  ``gamma_tau``: Gamma((ν + 1)/2) variates."""
    nu = 1 + state.nu_prime
    d, inverse_spread, half_nu = _column(state.d), _column(1 / (nu * state.s0**2)), _column((nu + 1) / 2)
    # φ_i given v_i, σ_i, d, σ0, ν with τ_i integrated out (prior t_ν(d, σ0)): an independence proposal from
    # N(v_i, σ_i²/m_i), accepted at the ratio of the t densities
    inverse_e = x.m * state.r
    proposal = x.v + jump / np.sqrt(inverse_e)
    ratio = half_nu * (np.log1p((state.phi - d) ** 2 * inverse_spread)
                       - np.log1p((proposal - d) ** 2 * inverse_spread))
    with np.errstate(divide="ignore"):  # a uniform of 0: accepted
        phi = np.where(np.log(jump_u) < ratio, proposal, state.phi)
    # τ_i given φ_i, d, σ0, ν (which also completes the last sweep's draws of ν' and σ0 with the τ_i integrated
    # out); σ_i (as r_i = 1/σ_i²) given φ_i; φ_i given the rest
    tau = gamma_tau / (_column(nu / 2) + (phi - d) ** 2 * _column(0.5 / state.s0**2))
    state.r = gamma_r / ((x.c + x.m * (x.v - phi) ** 2) / 2)
    inverse_e = x.m * state.r
    prior = tau * _column(1 / state.s0**2)
    precision = inverse_e + prior
    state.phi = (inverse_e * x.v + prior * d) / precision + normal / np.sqrt(precision)
    return tau


def _population(x: _Batch, state: _State, tau, gamma_s, uniform) -> None:
    """d and σ0 given φ (centred), then given z_i = (φ_i − d)√τ_i/σ0 (non-centred; φ_i moves with them)."""
    q = x.v.shape[2]
    total = tau.sum(axis=2, dtype=float)
    d = _truncated_normal(np.sum(tau * state.phi, axis=2, dtype=float) / total, state.s0 / np.sqrt(total), -x.d_bound,
                          x.d_bound, uniform[..., 0])
    squares = np.sum(tau * (state.phi - _column(d)) ** 2, axis=2, dtype=float)
    # 1/σ0² ~ Gamma((q − 1)/2, squares/2) on σ0 < σ0_high (a flat prior on σ0): the untruncated draw where it falls
    # there, else by inversion (either way the truncated law)
    precision0 = gamma_s / (squares / 2)
    beyond = precision0 < x.sigma0_high ** -2
    if beyond.any():
        precision0 = np.where(beyond, _truncated_gamma((q - 1) / 2, squares / 2, x.sigma0_high ** -2, np.inf,
                                                       uniform[..., 1]), precision0)
    s0 = 1 / np.sqrt(precision0)
    # non-centred: v_i ~ N(d + σ0 g_i, e_i), g_i = z_i/√τ_i, e_i = 1/(m_i r_i)
    g = (state.phi - _column(d)) * _column(1 / s0)
    inverse_e = x.m * state.r
    weighted = inverse_e * g
    fit = np.sum(weighted * g, axis=2, dtype=float)
    s0 = np.maximum(_truncated_normal(np.sum(weighted * (x.v - _column(d)), axis=2, dtype=float) / fit,
                                      1 / np.sqrt(fit), 0.0, x.sigma0_high, uniform[..., 2]), 1e-12)
    total = inverse_e.sum(axis=2, dtype=float)
    d = _truncated_normal(np.sum(inverse_e * (x.v - _column(s0) * g), axis=2, dtype=float) / total,
                          1 / np.sqrt(total), -x.d_bound, x.d_bound, uniform[..., 3])
    state.d, state.s0, state.phi = d, s0, _column(d) + _column(s0) * g


def _tails(x: _Batch, state: _State, uniform, walk) -> None:
    """ν' and σ0 given φ and d with the τ_i integrated out (φ_i ~ t_ν(d, σ0); the τ_i are drawn again at the next
    sweep's start): :data:`WALKS` random-walk steps on log ν' (σ0 sheared along, so that t_ν(d, σ0)'s quartiles
    stay; + ν''s marginal prior and log-Jacobian) and on log σ0 (+ log σ0: its flat prior's Jacobian)."""
    q = x.v.shape[2]
    squares = (state.phi - _column(state.d)) ** 2
    nu_prime, s0 = state.nu_prime, state.s0
    state.accepted[:] = 0
    current = _log_t(nu_prime, s0, q, squares)
    prior = _log_nu_prior(x, nu_prime)
    for step in range(WALKS):
        proposal = nu_prime * np.exp(state.steps[0] * walk[..., 2 * step])
        scaled = s0 * _quartile(nu_prime) / _quartile(proposal)
        value, proposed = _log_t(proposal, scaled, q, squares), _log_nu_prior(x, proposal)
        move = (np.log(uniform[..., 4 + 2 * step]) < (value + proposed + np.log(scaled) - current - prior
                                                       - np.log(s0)))
        move &= scaled < x.sigma0_high
        nu_prime, s0 = np.where(move, proposal, nu_prime), np.where(move, scaled, s0)
        current, prior = np.where(move, value, current), np.where(move, proposed, prior)
        state.accepted[0] += move / WALKS
        proposal = s0 * np.exp(state.steps[1] * walk[..., 2 * step + 1])
        value = _log_t(nu_prime, proposal, q, squares)
        move = ((np.log(uniform[..., 5 + 2 * step]) < value + np.log(proposal) - current - np.log(s0))
                & (proposal < x.sigma0_high))
        s0, current = np.where(move, proposal, s0), np.where(move, value, current)
        state.accepted[1] += move / WALKS
    state.nu_prime, state.s0 = nu_prime, s0
