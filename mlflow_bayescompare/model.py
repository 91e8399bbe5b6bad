"""The Stan program and its compiled forms: which file, which prior variant, which backend, where it is cached.

One ``.stan`` file (``stan/hierarchical.stan``) serves both backends:

* **cmdstanpy**, when a CmdStan installation is found (``cmdstanpy.cmdstan_path()`` succeeds); the executable is
  compiled once into the per-user cache directory;
* **pystan** otherwise: its wheels carry stanc and the Stan headers, so it needs no download.  httpstan caches the
  compiled extension in the per-user cache directory; its build step writes a ``build/`` folder into the current
  directory, so we build from inside our cache directory instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import threading
import time
from functools import cache
from pathlib import Path

from .errors import InputError, SamplingError

PACKAGE_DIR = Path(__file__).resolve().parent
STAN_FILE = PACKAGE_DIR / "stan" / "hierarchical.stan"

#: ν-prior variants of the paper's sensitivity analysis (Table "prior-nu"), mapped to the Stan data flag.
PRIORS = {
    "hierarchical": 0,  # ν' ~ Gamma(α, β), α ~ U(0.5, 5), β ~ U(0.05, 0.15)   (paper's default)
    "gamma(2,0.1)": 1,  # Juárez & Steel (2010)
    "gamma(1,0.0345)": 2,  # Kruschke (2013)
    "gaussian": 3,  # δ_i ~ N(δ0, σ0)
}
PRIOR_ALIASES = {"juarez-steel": "gamma(2,0.1)", "kruschke": "gamma(1,0.0345)", "normal": "gaussian"}
BACKENDS = ("auto", "cmdstanpy", "pystan")

_build_lock = threading.Lock()


def prior_code(prior: str) -> int:
    """The Stan ``nu_prior`` flag of a prior name (spaces and case ignored)."""
    key = prior.replace(" ", "").lower()
    key = PRIOR_ALIASES.get(key, key)
    if key not in PRIORS:
        raise InputError(f"unknown prior {prior!r}: choose one of {', '.join(PRIORS)}")
    return PRIORS[key]


def program_code() -> str:
    return STAN_FILE.read_text()


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


def resolve_backend(backend: str = "auto") -> str:
    """``auto`` → cmdstanpy when CmdStan is installed, else pystan."""
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "cmdstanpy" if cmdstan_available() else "pystan"
    if backend == "cmdstanpy" and not cmdstan_available():
        raise InputError(
            "backend 'cmdstanpy' needs a CmdStan installation (none found: run `python -m cmdstanpy.install_cmdstan` "
            "or set CMDSTAN); backend 'pystan' works without one"
        )
    return backend


def _announce_compile() -> None:
    print(
        "mlflow-bayescompare: compiling the Stan model once (about 1-2 minutes); later runs reuse the cache in "
        f"{cache_dir()}",
        file=sys.stderr,
        flush=True,
    )


@cache
def cmdstan_model():
    """The compiled :class:`cmdstanpy.CmdStanModel`, built at most once per process and cached on disk."""
    import cmdstanpy

    code = program_code()
    digest = hashlib.sha256(code.encode()).hexdigest()[:16]
    target = cache_dir() / f"cmdstan-{digest}"
    target.mkdir(exist_ok=True)
    stan_file = target / "hierarchical.stan"
    if not stan_file.exists():
        shutil.copyfile(STAN_FILE, stan_file)
    exe = target / "hierarchical"
    with _build_lock:
        if not exe.exists():
            _announce_compile()
        try:
            return cmdstanpy.CmdStanModel(stan_file=str(stan_file), exe_file=str(exe) if exe.exists() else None)
        except Exception as exc:
            raise SamplingError(f"CmdStan could not compile {STAN_FILE.name}: {exc}") from exc


_pystan_seen: set[str] = set()


def pystan_model(data: dict, seed: int):
    """A :class:`stan.model.Model` for ``data``.  pystan compiles per program (cached by httpstan on disk) but
    binds data at build time, so this is called per fit; the compile itself happens at most once."""
    import httpstan.cache
    import httpstan.models
    import stan

    code = program_code()
    name = httpstan.models.calculate_model_name(code)
    with _build_lock, quiet_pystan():
        compiling = name not in _pystan_seen and name not in httpstan.cache.list_model_names()
        if compiling:
            _announce_compile()
        try:
            with working_directory(cache_dir()) if compiling else contextlib.nullcontext():
                model = stan.build(code, data=data, random_seed=seed)
        except (RuntimeError, ValueError) as exc:
            raise SamplingError(f"pystan could not build {STAN_FILE.name}: {exc}") from exc
        _pystan_seen.add(name)
        with contextlib.suppress(OSError):  # the folder dates the model's last use (forget_superseded_pystan_models)
            os.utime(httpstan.cache.model_directory(name))
        if compiling:
            forget_superseded_pystan_models(name)
        return model


SUPERSEDED_DAYS = 7  # a compiled model of an earlier .stan file goes once unused for this long
COMPILED_LIST = "pystan-models.txt"  # in cache_dir(): the httpstan models this package compiled


def forget_superseded_pystan_models(current: str) -> None:
    """Delete the compiled models of earlier versions of the program.  httpstan keeps every model it compiles
    (about 110 MB each) forever, so each upgrade that changes the ``.stan`` file would leave one behind.  The models
    this package compiled are listed in :func:`cache_dir`; one that is not ``current`` goes once nothing has used it
    for ``SUPERSEDED_DAYS`` (every build for a fit dates the model's folder; earlier versions of this package wrote
    their fits into its ``fits`` folder instead).  The wait spares another installed version of the package still in
    use; anything else in httpstan's cache is never touched."""
    import httpstan.cache

    listing = cache_dir() / COMPILED_LIST
    with contextlib.suppress(OSError, UnicodeDecodeError):  # housekeeping: never a reason to fail a fit
        known = listing.read_text().split() if listing.exists() else []
        keep = []
        for name in dict.fromkeys(known):
            if name == current or not re.fullmatch(r"models/[a-z0-9]+", name):  # a damaged line names nothing
                continue
            directory = httpstan.cache.model_directory(name)
            if not directory.exists():
                continue
            last_used = max(path.stat().st_mtime for path in (directory, directory / "fits") if path.exists())
            if time.time() - last_used > SUPERSEDED_DAYS * 86400:
                httpstan.cache.delete_model_directory(name)
            if directory.exists():
                keep.append(name)
        listing.write_text("".join(f"{name}\n" for name in [*keep, current]))


@contextlib.contextmanager
def working_directory(path: Path):
    """Run pystan's build from ``path`` so its ``build/`` folder never lands in the user's directory."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@contextlib.contextmanager
def quiet_pystan():
    """Keep pystan's console chatter (its build and sampling progress, stanc's warnings about this package's own
    model, the sampler's informational messages) off the user's terminal: failures still arrive as exceptions, and
    the diagnostics report what matters.  Anything else written to stdout goes to stderr, so ``--json`` output
    stays clean.  pystan's console is swapped for the whole process while this is active."""
    import stan.model
    from clikit.io import ConsoleIO

    with swapped(stan.model, "ConsoleIO", ConsoleIO, _silent_console()), contextlib.redirect_stdout(sys.stderr):
        yield


@contextlib.contextmanager
def swapped(module, name: str, original, replacement):
    """``module.name`` is ``replacement`` for the duration, if it is ``original`` now: that is, for the pystan /
    httpstan internals this package was written for, and not again when a swap is already in place (a nested or
    concurrent call, which then leaves the first to restore it).  Otherwise nothing changes."""
    if getattr(module, name, None) is not original:
        yield
        return
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)


@cache
def _silent_console():
    """pystan's console class (clikit's ConsoleIO) with null streams wherever pystan does not pass its own."""
    from clikit.api.io import Input, Output
    from clikit.io import ConsoleIO
    from clikit.io.input_stream import NullInputStream
    from clikit.io.output_stream import NullOutputStream

    class SilentConsole(ConsoleIO):
        def __init__(self, input=None, output=None, error_output=None):
            super().__init__(input or Input(NullInputStream()), output or Output(NullOutputStream()),
                             error_output or Output(NullOutputStream()))

    return SilentConsole
