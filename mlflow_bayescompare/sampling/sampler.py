"""Run a Stan program on either backend and return its draws in one layout.

:func:`run` samples any program of :data:`.programs.PROGRAMS` and returns its raw draws; :func:`sample` runs the
hierarchical program and puts δ_i back together (:class:`Fit`); :func:`compile_program` compiles a program ahead of
its first fit, :func:`compile_programs` (:class:`Compiles`) several at once.  A backend announces a compile through
the ``progress`` hook (stage ``compiling``, then ``sampling`` once it is built) and one log line.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..vocabulary.console import log
from ..vocabulary.outcomes import counted
from ..vocabulary.progress import Progress, notify
from . import programs

__all__ = ["Run", "Fit", "HIERARCHICAL_DRAWS", "MAX_TREEDEPTH", "run", "sample", "compile_program", "compile_programs",
           "Compiles", "cache_directories", "backend_module"]

#: what :class:`Fit` keeps of the hierarchical program (``delta`` assembled from Stan's ``delta`` and ``delta_w``)
HIERARCHICAL_DRAWS = ("delta0", "sigma0", "nu_minus_one", "gamma_alpha", "gamma_beta")
MAX_TREEDEPTH = 10


@dataclass
class Run:
    """A program's raw draws.  ``draws[name]`` is ``(chains, draws, *dims)`` for every parameter, transformed
    parameter and generated quantity the program declares (Stan arrays of size zero left out); ``sampler[name]``
    is ``(chains, draws)`` for each of Stan's sampler columns (``lp__``, ``accept_stat__``, ``stepsize__``,
    ``treedepth__``, ``n_leapfrog__``, ``divergent__``, ``energy__``).  ``seconds`` is the sampling time (the data
    bound to the model, the chains run and read), ``compile_seconds`` the compile's (0 when cached)."""

    draws: dict[str, np.ndarray]
    sampler: dict[str, np.ndarray]
    backend: str
    seconds: float
    compile_seconds: float


@dataclass
class Fit:
    """The hierarchical program's posterior: ``draws[name]`` ``(chains, draws)`` for each of
    :data:`HIERARCHICAL_DRAWS` the prior has, and ``delta`` ``(chains, draws, q)``; ``sampler`` as in :class:`Run`;
    ``seconds`` the sampling time, ``compile_seconds`` the compile's (0 when cached)."""

    draws: dict[str, np.ndarray]
    sampler: dict[str, np.ndarray]
    backend: str
    seconds: float
    max_treedepth: int = MAX_TREEDEPTH
    compile_seconds: float = 0.0

    @property
    def divergences(self) -> int:
        return int(self.sampler["divergent__"].sum())


def compile_program(program: str = "hierarchical", backend: str = "auto", progress: Progress | None = None) -> float:
    """Compile ``program`` for ``backend`` (or find it in the cache) without data; the seconds spent compiling,
    0 when it was cached.  Call it ahead of the first fit: at a server's start-up, before spawning workers."""
    return backend_module(programs.resolve_backend(backend)).compile_program(program, progress)


def cache_directories(backend: str = "auto") -> list:
    """The folders that hold ``backend``'s compiled programs (the ones to keep in a CI cache)."""
    return backend_module(programs.resolve_backend(backend)).cache_directories()


def compile_programs(names: Iterable[str], backend: str = "auto", progress: Progress | None = None) -> dict[str, float]:
    """Compile the programs ``names`` for ``backend`` at once (or find them in the cache); the seconds each took,
    0 when it was cached."""
    with Compiles(names, backend, progress) as compiles:
        return compiles.wait()


class Compiles:
    """Stan programs compiling at once, each on a thread of its own waiting for its compile (pystan compiles each in
    a process of its own; cmdstanpy one after the other), from the moment this is created; :meth:`wait` for them.
    One log line says what compiles (``compiling 3 Stan programs at once (…)``), and the stage ``compiling`` its
    count; the seconds each took are reported by the first fit of that program in this process
    (:attr:`Run.compile_seconds`), not lost to the cache.  Used as a context manager, a failure or an interruption
    (Ctrl-C, SIGTERM) kills the compiles still running.  The threads are daemons: one waiting for another process's
    compile lock does not hold up this one's exit."""

    def __init__(self, names: Iterable[str], backend: str = "auto", progress: Progress | None = None):
        names = list(dict.fromkeys(names))
        for name in names:
            programs.program_file(name)  # an unknown name is refused before anything starts
        self.backend = programs.resolve_backend(backend)
        self.engine = backend_module(self.backend)
        self._progress, self._announced, self._lock = progress, False, threading.Lock()
        self._detail: str | None = None
        self._stopped = threading.Event()  # set by a failure or an interruption: start no compile after it
        self.futures = {name: concurrent.futures.Future() for name in names}
        threading.Thread(target=self._start, name="stan-compiles", daemon=True).start()

    def _start(self) -> None:
        """Look which programs the cache lacks, say so in one line, then compile every program at once."""
        try:
            missing = [name for name in self.futures if not self.engine.is_compiled(name)]
        except Exception:  # the look failed: the compiles say what is wrong
            missing = list(self.futures)
        if missing:
            self._detail = counted(len(missing), "Stan program")
            log.info("compiling %s at once (%s), once per machine: a few minutes; later runs reuse the cache in %s",
                     self._detail, ", ".join(missing), self.engine.cache_directories()[0])
        for name in self.futures:
            threading.Thread(target=self._compile, args=(name,), name=f"stan-compile-{name}", daemon=True).start()

    def _compile(self, name: str) -> None:
        programs.SAID_FOR_ALL.set(True)  # this thread's context only: the line above said it
        try:
            if self._stopped.is_set():
                raise KeyboardInterrupt(f"the compile of {name} was stopped before it started")
            seconds = self.engine.compile_program(name, self._announce)
            if seconds:
                _COMPILED_AHEAD[(self.backend, name)] = seconds
            self.futures[name].set_result(seconds)
        except BaseException as exc:
            self.futures[name].set_exception(exc)

    def _announce(self, stage: str, detail: str | None = None) -> None:
        """A backend's progress (the stage ``compiling``), passed on to the progress hook of the moment."""
        with self._lock:
            self._announced = True
            progress = self._progress
        notify(progress, stage, self._detail or detail)

    def wait(self, progress: Progress | None = None) -> dict[str, float]:
        """The seconds each program took (0: cached) once every compile has ended; the first failure is raised as
        soon as it happens.  ``progress`` (when given) hears the compiles from now on: the stage ``compiling`` at
        once if one was announced before and is still running."""
        with self._lock:
            self._progress = progress or self._progress
            announced = self._announced
        if progress is not None and announced and not all(f.done() for f in self.futures.values()):
            notify(progress, "compiling", self._detail)
        done, _ = concurrent.futures.wait(self.futures.values(), return_when=concurrent.futures.FIRST_EXCEPTION)
        for future in done:
            if future.exception() is not None:
                raise future.exception()
        return {name: future.result() for name, future in self.futures.items()}

    def __enter__(self) -> Compiles:
        return self

    def __exit__(self, kind, exc, traceback) -> None:
        if kind is not None:
            self._stopped.set()
            self.engine.kill_compilers()


#: (backend, program) → the seconds its compile took ahead of its first fit (:class:`Compiles`), which that fit
#: reports as its compile time
_COMPILED_AHEAD: dict[tuple[str, str], float] = {}


def run(program: str, stan_data: dict, *, chains: int, draws: int, warmup: int, seed: int, backend: str = "auto",
        progress: Progress | None = None, adapt_delta: float | None = None) -> Run:
    """Sample ``program`` (a name in :data:`.programs.PROGRAMS`) given ``stan_data``: ``chains`` chains of ``draws``
    draws after ``warmup``, reproducibly from ``seed``; compiled first if it is not in the cache.  ``adapt_delta``
    is the step-size adaptation's target acceptance rate (``None``: Stan's default, 0.8)."""
    name = programs.resolve_backend(backend)
    engine = backend_module(name)
    compile_seconds = engine.compile_program(program, progress)
    if compile_seconds:
        notify(progress, "sampling")
    compile_seconds = compile_seconds or _COMPILED_AHEAD.pop((name, program), 0.0)
    start = time.perf_counter()
    values, sampler = engine.sample(program, stan_data, chains=chains, draws=draws, warmup=warmup, seed=seed,
                                    adapt_delta=adapt_delta)
    seconds = time.perf_counter() - start
    values = {key: value for key, value in values.items() if value.size}
    return Run(values, sampler, name, seconds, compile_seconds)


def sample(stan_data: dict, *, chains: int, draws: int, warmup: int, seed: int, backend: str = "auto",
           progress: Progress | None = None, adapt_delta: float | None = None) -> Fit:
    """Sample the posterior of ``stan/hierarchical.stan`` given ``stan_data`` (see :mod:`.prepare`);
    ``adapt_delta`` as in :func:`run`."""
    raw = run("hierarchical", stan_data, chains=chains, draws=draws, warmup=warmup, seed=seed, backend=backend,
              progress=progress, adapt_delta=adapt_delta)
    out = {name: raw.draws[name].reshape(chains, draws) for name in HIERARCHICAL_DRAWS if name in raw.draws}
    # put δ_i back together: centred ones as sampled, δ0 + σ0 sinh(w_i) for the rest
    centred = np.asarray(stan_data["idx_c"], dtype=int) - 1
    noncentred = np.asarray(stan_data["idx_nc"], dtype=int) - 1
    empty = np.empty((chains, draws, 0))
    delta = np.empty((chains, draws, stan_data["q"]))
    delta[..., centred] = raw.draws.get("delta", empty)
    delta[..., noncentred] = (out["delta0"][..., None]
                              + out["sigma0"][..., None] * np.sinh(raw.draws.get("delta_w", empty)))
    out["delta"] = delta
    return Fit(out, raw.sampler, raw.backend, raw.seconds, compile_seconds=raw.compile_seconds)


def backend_module(name: str):
    """The module that samples on a resolved backend (:func:`.programs.resolve_backend`): :mod:`.pystan_backend`
    or :mod:`.cmdstan_backend`, imported on first use (each imports its own Stan interface)."""
    if name == "cmdstanpy":
        from . import cmdstan_backend

        return cmdstan_backend
    from . import pystan_backend

    return pystan_backend
