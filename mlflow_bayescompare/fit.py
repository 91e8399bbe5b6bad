"""Run the Stan model on either backend and return the draws in one layout.

Layout: ``draws[name]`` is an array ``(chains, draws, *shape)`` for each of ``delta0`` (Stan samples it as
``delta0_u``), ``sigma0``, ``delta`` (whether Stan sampled it centred or as ``delta_w``) and,
when the prior has them, ``nu_minus_one``, ``gamma_alpha``, ``gamma_beta`` (Stan's length-0/1 arrays become absent
or scalar).  ``sampler[name]`` is ``(chains, draws)`` for ``divergent__``, ``treedepth__``, ``n_leapfrog__``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
import zlib
from dataclasses import dataclass

import numpy as np

from . import model as stan_model
from .errors import SamplingError

PARAMETERS = ("delta0", "sigma0", "nu_minus_one", "gamma_alpha", "gamma_beta", "delta", "delta_w")
SAMPLER_STATS = ("divergent__", "treedepth__", "n_leapfrog__")
MAX_TREEDEPTH = 10


@dataclass
class Fit:
    draws: dict[str, np.ndarray]
    sampler: dict[str, np.ndarray]
    backend: str
    seconds: float
    max_treedepth: int = MAX_TREEDEPTH

    @property
    def divergences(self) -> int:
        return int(self.sampler["divergent__"].sum())


def sample(stan_data: dict, *, chains: int, draws: int, warmup: int, seed: int, backend: str = "auto") -> Fit:
    """Sample the posterior of ``stan/hierarchical.stan`` given ``stan_data`` (see :mod:`.prepare`)."""
    backend = stan_model.resolve_backend(backend)
    run = _sample_cmdstanpy if backend == "cmdstanpy" else _sample_pystan
    raw, sampler, seconds = run(stan_data, chains=chains, draws=draws, warmup=warmup, seed=seed)
    q = stan_data["q"]
    out = {}
    for name in PARAMETERS:
        if name in raw and name not in ("delta", "delta_w") and raw[name].size:
            out[name] = raw[name].reshape(chains, draws)  # Stan arrays of length 1 become scalars
    # put δ_i back together: centred ones as sampled, δ0 + σ0 sinh(w_i) for the rest
    delta = np.empty((chains, draws, q))
    delta[..., np.asarray(stan_data["idx_c"], dtype=int) - 1] = raw["delta"].reshape(chains, draws, -1)
    delta[..., np.asarray(stan_data["idx_nc"], dtype=int) - 1] = (
        out["delta0"][..., None] + out["sigma0"][..., None] * np.sinh(raw["delta_w"].reshape(chains, draws, -1))
    )
    out["delta"] = delta
    return Fit(out, sampler, backend, seconds)


def chain_seeds(seed: int, chains: int) -> list[int]:
    """One Stan seed per chain, drawn from numpy's ``SeedSequence(seed)``: distinct chains, and no two seeds share
    a chain (seed + k would make the fits of seeds 1 and 2 share three of four chains)."""
    state = np.random.SeedSequence(seed).generate_state(chains, dtype=np.uint64)
    return [int(s % (2**31 - 2)) + 1 for s in state]


def _sample_pystan(stan_data, *, chains, draws, warmup, seed):
    return pystan_chains(lambda chain_seed: stan_model.pystan_model(stan_data, chain_seed), PARAMETERS,
                         chains=chains, draws=draws, warmup=warmup, seed=seed)


def pystan_chains(build, names, *, chains, draws, warmup, seed):
    """Sample ``chains`` chains of the pystan model ``build(chain_seed)`` and return ``(raw, sampler, seconds)``:
    ``raw[name]`` is ``(chains, draws, *dims)`` for each of ``names`` the model has.

    One single-chain pystan call per chain, each in its own thread, chain k seeded with ``chain_seeds(seed)[k]``.
    One pystan call serves all its chains' output on one asyncio loop, and httpstan's reader of a chain's output does
    not yield while more output is waiting: the chains of one call take turns instead of running side by side, and
    a chain waiting for a free process starts only when an earlier chain's reader is done.  With a loop per chain
    they run in parallel (4 chains on 2 cores: about a quarter less wall time on the paper's data)."""
    start, started = time.perf_counter(), time.time()
    first, *others = chain_seeds(seed, chains)
    built = build(first)  # the chains differ only in their seed
    posteriors = [built, *(dataclasses.replace(built, random_seed=chain_seed) for chain_seed in others)]
    _start_pystan_workers()

    def one_chain(posterior):
        return posterior.sample(num_chains=1, num_samples=draws, num_warmup=warmup)

    try:
        with stan_model.quiet_pystan(), _quiet_asyncio(), _kill_samplers_on_ctrl_c(), lean_fit_cache(), \
                prompt_polling(), \
                concurrent.futures.ThreadPoolExecutor(chains, thread_name_prefix="stan-chain") as pool:
            fits = list(pool.map(one_chain, posteriors))
    except RuntimeError as exc:
        raise SamplingError(f"Stan failed to sample: {exc}") from exc
    except KeyboardInterrupt:
        _stop_pystan_workers()
        stan_model.discard_pystan_fits(since=started)
        raise
    finally:
        stan_model.prune_pystan_fits()

    # a single-chain fit gives (*dims, draws)
    raw = {name: np.stack([np.moveaxis(fit[name], -1, 0) for fit in fits])
           for name in names if name in fits[0].param_names}
    sampler = {name: np.stack([fit[name].reshape(draws) for fit in fits]) for name in SAMPLER_STATS}
    return raw, sampler, time.perf_counter() - start


def _start_pystan_workers() -> None:
    """httpstan forks its sampler processes when its pool is first used: have that happen here, before the chain
    threads exist (a process forked while other threads run can crash).  A pool broken by a sampler process that
    died earlier is replaced, so one crash does not fail every later fit of a long-running process."""
    import httpstan.services_stub as services

    try:
        services.executor.submit(int).result()
    except concurrent.futures.BrokenExecutor:
        _stop_pystan_workers()
        services.executor.submit(int).result()


def _stop_pystan_workers() -> None:
    """After a Ctrl-C: httpstan's sampler processes ignore SIGINT and would run Stan to the end (and the
    interpreter would wait for them at exit), so kill them and give httpstan a fresh pool for later fits."""
    services = sys.modules.get("httpstan.services_stub")
    if services is None:
        return
    old = services.executor
    _kill_pystan_samplers()
    with contextlib.suppress(Exception):
        old.shutdown(wait=False, cancel_futures=True)
    services.executor = concurrent.futures.ProcessPoolExecutor(mp_context=multiprocessing.get_context("fork"),
                                                               initializer=services.init_worker)


def _kill_pystan_samplers() -> None:
    services = sys.modules.get("httpstan.services_stub")
    for proc in list((getattr(getattr(services, "executor", None), "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            proc.kill()


@contextlib.contextmanager
def _kill_samplers_on_ctrl_c():
    """Make Ctrl-C stop sampling at once.  asyncio would turn it into a cancellation, which httpstan's loop reading
    a chain's output does not see while draws keep arriving, so pystan would return only when sampling ends.
    Killing the sampler processes first ends that loop; whatever that loop then raises about the broken stream
    (aiohttp's ``ClientPayloadError``, say) is reported as the interrupt it is.  Left alone where SIGINT is not the
    default (pool workers that ignore it, other handlers) or outside the main thread."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    pressed = []

    def interrupt(signum, frame):
        pressed.append(signum)
        _kill_pystan_samplers()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    except Exception as exc:
        if pressed:
            raise KeyboardInterrupt("sampling interrupted") from exc
        raise
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class _StoredStream:
    """httpstan's per-socket compressor, replaced: gzip level 0 (stored, still valid gzip) for the streams pystan
    reads, nothing at all for the diagnostic writer's.  Each of Stan's writers has its own socket, so the first
    bytes of a stream say whose it is."""

    DIAGNOSTIC = b'{"version":1,"topic":"diagnostic"'

    def __init__(self, level=0, method=zlib.DEFLATED, wbits=zlib.MAX_WBITS, *args, **kwargs):
        self._gzip = zlib.compressobj(0, method, wbits)
        self._head, self._drop = b"", None

    def compress(self, data: bytes) -> bytes:
        if self._drop is None:
            self._head += data
            if len(self._head) < len(self.DIAGNOSTIC):
                return b""
            self._drop = self._head.startswith(self.DIAGNOSTIC)
            data, self._head = self._head, b""
        return b"" if self._drop else self._gzip.compress(data)

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        if self._drop:
            return b""
        head, self._head = self._head, b""
        return self._gzip.compress(head) + self._gzip.flush(mode)


_LEAN_ZLIB = types.SimpleNamespace(**{**vars(zlib), "compressobj": _StoredStream})


def lean_fit_cache():
    """Let httpstan store only what pystan reads, uncompressed.  httpstan writes every message of the sampler into
    its on-disk fit cache, gzipped, and reads the file back whole for pystan.  Most of it is the diagnostic writer's:
    the unconstrained values, momenta and gradients of every draw, about three times the draws themselves, which
    pystan never reads.  Dropping that stream and skipping compression saves about a fifth of a fit's wall time
    (4 chains x 1000 draws on the paper's data), for a file that is deleted minutes later
    (``model.prune_pystan_fits``).  Does nothing when httpstan's internals are not the ones this was written for
    (httpstan 4.x)."""
    import httpstan.services_stub as services

    return stan_model.swapped(services, "zlib", zlib, _LEAN_ZLIB)


POLL_SECONDS = 0.005  # pystan's polling interval while prompt_polling is active (pystan's own: 0.05)


def prompt_polling():
    """Have pystan notice a finished chain within 5 ms instead of 50.  pystan fetches a chain's draws only when its
    progress poll, every 50 ms, finds the chain done, and a poll sent while httpstan is still streaming that chain's
    output is answered late and stale: the last chains' draws were fetched 50-100 ms after they were ready.
    Capping pystan's sleeps at ``POLL_SECONDS`` saves about 9% of a fit's wall time (4 chains x 1000 draws on the
    paper's data).  Does nothing when pystan's internals are not the ones this was written for (pystan 3.x)."""
    import stan.model

    return stan_model.swapped(stan.model, "asyncio", asyncio, _PROMPT_ASYNCIO)


async def _prompt_sleep(delay, result=None):
    return await asyncio.sleep(min(delay, POLL_SECONDS), result)


_PROMPT_ASYNCIO = types.SimpleNamespace(**{**vars(asyncio), "sleep": _prompt_sleep})


@contextlib.contextmanager
def _quiet_asyncio():
    """pystan cancels its asyncio tasks on Ctrl-C, and asyncio logs each cancelled callback with a traceback;
    the interrupt itself is reported by the caller."""
    logger = logging.getLogger("asyncio")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


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
