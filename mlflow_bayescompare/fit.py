"""Run the Stan model on either backend and return the draws in one layout.

Layout: ``draws[name]`` is an array ``(chains, draws, *shape)`` for each of ``delta0`` (Stan samples it as
``delta0_u``), ``sigma0``, ``delta`` (whether Stan sampled it centred or as ``delta_w``) and,
when the prior has them, ``nu_minus_one``, ``gamma_alpha``, ``gamma_beta`` (Stan's length-0/1 arrays become absent
or scalar).  ``sampler[name]`` is ``(chains, draws)`` for ``divergent__``, ``treedepth__``, ``n_leapfrog__``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import selectors
import signal
import socket
import sys
import tempfile
import threading
import time
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

    pystan builds the model (compiling it at most once) and parses the draws; the chains themselves run through
    httpstan's sampler processes directly (:func:`_run_chain`), each read by its own thread, chain k with the Stan
    seed ``chain_seeds(seed)[k]``: the same draws as pystan's one-chain ``sample`` call with that seed, without its
    HTTP round trips, its 50 ms progress polls and httpstan's gzipped copy of every chain on disk."""
    import stan.fit

    start = time.perf_counter()
    first, *others = chain_seeds(seed, chains)
    built = build(first)  # the chains differ only in their seed
    _start_pystan_workers()

    arguments = _chain_arguments(built, draws=draws, warmup=warmup)

    def one_chain(chain_seed):
        output = _run_chain(built.model_name, {**arguments, "random_seed": chain_seed})
        return stan.fit.Fit((output,), 1, built.param_names, built.constrained_param_names, built.dims, warmup,
                            draws, 1, False)

    try:
        with _kill_samplers_on_ctrl_c(), \
                concurrent.futures.ThreadPoolExecutor(chains, thread_name_prefix="stan-chain") as pool:
            fits = list(pool.map(one_chain, [first, *others]))
    except RuntimeError as exc:
        raise SamplingError(f"Stan failed to sample: {exc}") from exc
    except KeyboardInterrupt:
        _stop_pystan_workers()
        raise

    # a single-chain fit gives (*dims, draws)
    raw = {name: np.stack([np.moveaxis(fit[name], -1, 0) for fit in fits])
           for name in names if name in fits[0].param_names}
    sampler = {name: np.stack([fit[name].reshape(draws) for fit in fits]) for name in SAMPLER_STATS}
    return raw, sampler, time.perf_counter() - start


SERVICE = "hmc_nuts_diag_e_adapt"  # the function pystan's ``sample`` calls


def _chain_arguments(built, *, draws: int, warmup: int) -> dict:
    """What pystan's ``sample(num_chains=1, ...)`` passes to Stan for a chain, its ``random_seed`` aside: the data,
    chain id 1, no initial values, and httpstan's (CmdStan's) defaults for everything else."""
    import httpstan.models
    from httpstan.services import arguments

    given = {"data": built.data, "init": {}, "chain": 1, "num_samples": draws, "num_warmup": warmup,
             "random_seed": None}  # set per chain
    module = httpstan.models.import_services_extension_module(built.model_name)
    defaults = {name: arguments.lookup_default(arguments.Method.SAMPLE, name)
                for name in arguments.function_arguments(SERVICE, module) if name not in given}
    return {**given, **defaults}


DIAGNOSTIC_STREAM = b'{"version":1,"topic":"diagnostic"'


def _run_chain(model_name: str, arguments: dict) -> bytes:
    """Run one chain in httpstan's sampler processes and return its output: Stan's writers each send JSON lines
    through their own connection to a Unix socket.  The diagnostic writer's stream (the unconstrained values,
    momenta and gradients of every iteration, three times the size of the draws, which httpstan cannot switch off)
    is read and dropped; the sample writer's and the logger's are kept.  A non-zero return code is raised with
    Stan's error messages, as httpstan does."""
    import httpstan.services_stub as services

    service = services._make_lazy_function_wrapper(SERVICE, model_name)
    with tempfile.TemporaryDirectory(prefix="bayescompare-") as folder, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        address = os.path.join(folder, "stan.sock")
        listener.bind(address)
        listener.listen(4)  # Stan's three writers and its logger
        done = services.executor.submit(service, address, **arguments)
        kept: dict[socket.socket, bytearray | None] = {}  # None: the diagnostic stream
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(listener, selectors.EVENT_READ)
                while True:
                    streams_open = len(selector.get_map()) - 1
                    # An open stream ends when its sampler does, even by a crash: wait for it without a timeout.
                    # Once every stream has ended, take any writer still queued, then stop.
                    events = selector.select(None if streams_open else 0 if kept else 0.01)
                    for key, _ in events:
                        if key.fileobj is listener:
                            conn = listener.accept()[0]
                            kept[conn] = bytearray()
                            selector.register(conn, selectors.EVENT_READ)
                        else:
                            _read(key.fileobj, kept, selector)
                    if not events and not streams_open and (kept or done.done()):
                        break
        finally:
            for conn in kept:
                conn.close()
    output = b"".join(bytes(stream) for stream in kept.values() if stream is not None)
    try:
        code = done.result()
    except concurrent.futures.BrokenExecutor:  # a sampler process died (or Ctrl-C killed it)
        raise
    except Exception as exc:  # a C++ exception of Stan's, as pybind11 passes it on
        raise RuntimeError(f"{exc} {_stan_messages(output)}".strip()) from exc
    if code != 0:
        raise RuntimeError(_stan_messages(output) or f"Stan returned error code {code}")
    return output


def _read(conn: socket.socket, kept: dict, selector: selectors.BaseSelector) -> None:
    """Read what a writer sent; drop the diagnostic stream once its first bytes show it."""
    data = conn.recv(1 << 16)
    if not data:
        selector.unregister(conn)
        return
    stream = kept[conn]
    if stream is not None:
        stream += data
        if len(stream) >= len(DIAGNOSTIC_STREAM) and stream.startswith(DIAGNOSTIC_STREAM):
            kept[conn] = None


def _stan_messages(output: bytes) -> str:
    """Stan's error messages in a chain's logger stream, then its first four warnings (httpstan's choice)."""
    errors, warnings = [], []
    for line in output.splitlines():
        if b'"topic":"logger"' in line:
            text = json.loads(line)["values"][-1]
            if text.startswith("error:"):
                errors.append(text.removeprefix("error:").strip())
            elif text.startswith("warn:"):
                warnings.append(text.removeprefix("warn:").strip())
    return " ".join([*errors, *warnings[:4]]).strip()


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
    """Make Ctrl-C stop sampling at once.  httpstan's sampler processes ignore SIGINT and would run Stan to the
    end, with the chain threads reading their output until then; killing the samplers first closes every stream,
    and whatever the chain threads then raise about the broken pool is reported as the interrupt it is.  Left alone
    where SIGINT is not the default (pool workers that ignore it, other handlers) or outside the main thread."""
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
