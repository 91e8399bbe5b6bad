"""The Stan programs and where they run: which file, which prior variant, which backend, where it is cached.

Each program is one ``.stan`` file in ``stan/`` (:data:`PROGRAMS`); the same file serves both backends:

* **cmdstanpy**, when a CmdStan installation is found (``cmdstanpy.cmdstan_path()`` succeeds); the executable is
  compiled once into the per-user cache directory (:mod:`.cmdstan_backend`);
* **pystan** otherwise, where its wheels exist (Linux x86-64, macOS): they carry stanc and the Stan headers, so it
  needs no download.  httpstan caches the compiled extension in its own per-user cache (:mod:`.pystan_backend`).
"""

from __future__ import annotations

import os
import platform
from contextvars import ContextVar
from pathlib import Path

import numpy as np

from ..vocabulary.console import log
from ..vocabulary.errors import InputError
from ..vocabulary.options import PRIORS
from ..vocabulary.progress import Progress, notify

__all__ = ["STAN_DIR", "PROGRAMS", "STAN_FILE", "program_file", "program_code", "prior_code", "cache_dir",
           "cmdstan_available", "pystan_available", "resolve_backend", "announce_compile", "SAID_FOR_ALL",
           "chain_seeds"]

#: True in the threads of a compile of several programs at once (:class:`.sampler.Compiles`), which says in one line
#: what it compiles: :func:`announce_compile` then leaves out each program's own line
SAID_FOR_ALL: ContextVar[bool] = ContextVar("bayescompare_compiles_said", default=False)


def _stan_dir() -> Path:
    """The ``.stan`` files: the package data ``mlflow_bayescompare/stan/`` of an installed wheel (pyproject's
    ``package-dir`` maps the repository's top-level ``stan/`` there), else ``stan/`` beside the package in a source
    checkout (an editable install)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "stan"
    return installed if installed.is_dir() else package.parent / "stan"


STAN_DIR = _stan_dir()
#: the Stan programs by name; a new program only needs its file in ``stan/`` and a line here
PROGRAMS = {
    "hierarchical": STAN_DIR / "hierarchical.stan",  # the hierarchical test (Corani et al. 2017)
    "bbt": STAN_DIR / "bbt.stan",  # the Bayesian Bradley-Terry ranking (Wainer 2023; ranking.py)
    "hierarchical_k": STAN_DIR / "hierarchical_k.stan",  # the hierarchical model of k models (families/ranking/)
}
STAN_FILE = PROGRAMS["hierarchical"]


def program_file(program: str) -> Path:
    """The ``.stan`` file of a program named in :data:`PROGRAMS`."""
    if program not in PROGRAMS:
        raise InputError(f"unknown Stan program {program!r}: choose one of {', '.join(PROGRAMS)}")
    return PROGRAMS[program]


def program_code(program: str = "hierarchical") -> str:
    return program_file(program).read_text()


def prior_code(prior: str) -> int:
    """The hierarchical program's ``nu_prior`` flag of a prior as :class:`~.options.FitOptions` cleaned it: its
    position in :data:`~.options.PRIORS`."""
    return PRIORS.index(prior)


def cache_dir() -> Path:
    """Per-user cache directory (``$MLFLOW_BAYESCOMPARE_CACHE``, else ``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    root = os.environ.get("MLFLOW_BAYESCOMPARE_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    ) / "mlflow-bayescompare"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cmdstan_available() -> bool:
    try:
        import cmdstanpy

        cmdstanpy.cmdstan_path()
        return True
    except Exception:  # no CmdStan installation, or cmdstanpy missing
        return False


def pystan_available() -> bool:
    """pystan and httpstan import (they are installed only where httpstan publishes wheels)."""
    try:
        import httpstan  # noqa: F401

        import stan  # noqa: F401

        return True
    except ImportError:
        return False


def _install_cmdstan() -> str:
    """How to install CmdStan on this machine (cmdstanpy's installer; on Windows with its C++ toolchain)."""
    if platform.system() == "Windows":
        return "`python -m cmdstanpy.install_cmdstan --compiler` (it also installs the C++ toolchain)"
    return "`python -m cmdstanpy.install_cmdstan` (it needs a C++ compiler and make)"


def resolve_backend(backend: str = "auto") -> str:
    """The backend that samples for a backend option (:data:`~.options.BACKENDS`, as the options checked it):
    ``auto`` → pystan where it is installed (the backend the test suite runs), else cmdstanpy when CmdStan is
    installed (Windows, Linux aarch64: where pystan has no wheels)."""
    if backend in ("auto", "pystan") and pystan_available():
        return "pystan"
    if backend in ("auto", "cmdstanpy") and cmdstan_available():
        return "cmdstanpy"
    install = f"install CmdStan with {_install_cmdstan()}, or set CMDSTAN to an existing installation"
    if backend == "cmdstanpy":
        raise InputError(f"backend 'cmdstanpy' needs a CmdStan installation (none found): {install}; backend "
                         "'pystan' works without one where it is installed")
    missing = "backend 'pystan' is not installed" if backend == "pystan" else \
        "no Stan backend found: neither CmdStan nor pystan is installed"
    raise InputError(f"{missing} (pystan's wheels exist for Linux x86-64 and macOS only); for backend "
                     f"'cmdstanpy', {install}")


def announce_compile(program: str, cache: Path, progress: Progress | None = None) -> None:
    """Say, once per compile, that ``program`` is being compiled: the stage ``compiling`` and one log line (unless
    :data:`SAID_FOR_ALL`)."""
    notify(progress, "compiling")
    if not SAID_FOR_ALL.get():
        log.info("compiling the Stan program %s once (a few minutes); later runs reuse the cache in %s",
                 program, cache)


def chain_seeds(seed: int, chains: int) -> list[int]:
    """One Stan seed per chain, drawn from numpy's ``SeedSequence(seed)``: distinct chains, and no two seeds share
    a chain (seed + k would make the fits of seeds 1 and 2 share three of four chains)."""
    state = np.random.SeedSequence(seed).generate_state(chains, dtype=np.uint64)
    return [int(s % (2**31 - 2)) + 1 for s in state]
