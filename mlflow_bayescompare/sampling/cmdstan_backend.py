"""The cmdstanpy backend: each program compiled once into the per-user cache directory and sampled by CmdStan.

Used when a CmdStan installation is found (see :func:`.programs.resolve_backend`).  The executable lives in
``cache_dir()/cmdstan-<digest of the program>/``, so a changed ``.stan`` file compiles anew and nothing is written
to the working directory.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

import numpy as np

from ..vocabulary.errors import SamplingError
from ..vocabulary.progress import Progress
from . import programs

__all__ = ["compile_program", "is_compiled", "cache_directories", "kill_compilers", "sample"]

_lock = threading.Lock()  # also keeps compiles one at a time: two makes in one CmdStan tree would race on its files
_models: dict = {}  # program -> cmdstanpy.CmdStanModel, once per process


def compile_program(program: str = "hierarchical", progress: Progress | None = None) -> float:
    """Compile ``program`` unless its executable is in the cache; the seconds spent compiling (0 when cached)."""
    import cmdstanpy

    with _lock:
        if program in _models:
            return 0.0
        source, stan_file, exe = _files(program)
        stan_file.parent.mkdir(exist_ok=True)
        if not stan_file.exists():
            stan_file.write_text(source.read_text())
        cached = exe.exists()
        if not cached:
            programs.announce_compile(program, stan_file.parent, progress)
        start = time.perf_counter()
        try:
            _models[program] = cmdstanpy.CmdStanModel(stan_file=str(stan_file), exe_file=str(exe) if cached else None)
        except Exception as exc:
            raise SamplingError(f"CmdStan could not compile {source.name}: {exc}") from exc
        return 0.0 if cached else time.perf_counter() - start


def is_compiled(program: str) -> bool:
    """Whether ``program``'s executable is in the cache (a look, no compile)."""
    return program in _models or _files(program)[2].exists()


def _files(program: str):
    """The program's ``.stan`` file, its copy in the cache (a folder named by its code's digest) and executable."""
    source = programs.program_file(program)
    digest = hashlib.sha256(source.read_text().encode()).hexdigest()[:16]
    stan_file = programs.cache_dir() / f"cmdstan-{digest}" / source.name
    return source, stan_file, stan_file.with_suffix(".exe" if os.name == "nt" else "")


def cache_directories() -> list:
    """Where compiled programs are kept: the executables in :func:`.programs.cache_dir`."""
    return [programs.cache_dir()]


def kill_compilers() -> None:
    """Nothing to kill from here: cmdstanpy runs CmdStan's ``make`` itself (Ctrl-C at a terminal reaches it)."""


def sample(program: str, stan_data: dict, *, chains: int, draws: int, warmup: int, seed: int,
           adapt_delta: float | None = None) -> tuple[dict, dict]:
    """Sample ``program`` given ``stan_data`` (CmdStan's own seeding: ``seed`` with chain ids 1 … ``chains``):
    ``draws[name]`` ``(chains, draws, *dims)`` for every variable in CmdStan's output, ``sampler[name]``
    ``(chains, draws)`` for each of its sampler columns (``lp__``, ``divergent__`` …).  ``adapt_delta``: the
    step-size adaptation's target acceptance rate (``None``: CmdStan's default, 0.8)."""
    compile_program(program)
    try:
        fit = _models[program].sample(
            data=stan_data, chains=chains, parallel_chains=min(chains, os.cpu_count() or 1), iter_sampling=draws,
            iter_warmup=warmup, seed=seed, adapt_delta=adapt_delta, show_progress=False, show_console=False,
        )
    except RuntimeError as exc:
        raise SamplingError(f"Stan failed to sample: {exc}") from exc
    values = {}
    for name in fit.metadata.stan_vars:
        value = fit.stan_variable(name)  # (chains * draws, *dims), chain after chain
        values[name] = value.reshape(chains, draws, *value.shape[1:])
    sampler = {name: np.asarray(value).T.reshape(chains, draws) for name, value in fit.method_variables().items()}
    return values, sampler
