"""The pystan backend: every use of pystan's and httpstan's insides, in this one module.

pystan compiles a program (into httpstan's cache, once) and binds the data; the chains then run through httpstan's
sampler processes directly, each read by its own thread, chain k with the Stan seed ``chain_seeds(seed)[k]``: the
same draws as pystan's one-chain ``sample`` call with that seed, without its HTTP round trips, its 50 ms progress
polls and httpstan's gzipped copy of every chain on disk.

Tested with pystan 3.10.0 and httpstan 4.13.0 (pystan 3.9 / httpstan 4.12 and httpstan 4.17 have the same names;
read, not run).  What is used beyond their public API:

* ``httpstan.services_stub.executor``: httpstan's pool of sampler processes (forked; SIGINT ignored by
  ``services_stub.init_worker``).  Replaced by a pool of this module's own, whose processes also start with SIGTERM
  at its default; started here before the chain threads exist, replaced after a crash or Ctrl-C, shut down at the
  exit of a process that sampled;
* ``httpstan.services_stub._make_lazy_function_wrapper``: the picklable call of a model's service function;
* the sampler pool's processes (:func:`.pools.pool_processes`, the standard library's insides), killed on Ctrl-C;
* ``httpstan.services.arguments`` (``function_arguments``, ``lookup_default``, ``Method``) and
  ``httpstan.models.import_services_extension_module``: a service's arguments and CmdStan's defaults;
* the writers' wire format (``stan_services.cpp``, ``socket_writer.hpp``): one connection to a Unix socket per
  writer, JSON lines, the diagnostic stream opening with ``{"version":1,"topic":"diagnostic"``, logger messages
  starting ``error:`` / ``warn:``;
* ``httpstan.models.calculate_model_name`` and ``httpstan.cache`` (``list_model_names``, ``model_directory``,
  ``delete_model_directory``): the compiled-model cache.  httpstan names a compiled program by a hash of its code,
  httpstan's version, the platform and the Python version and executable as spelled (``sys.executable``); that
  function is replaced by :func:`model_name`, the same hash of a canonical interpreter (:func:`interpreter_key`);
* ``stan.common.HttpstanClient`` (its ``base_url``) and httpstan's ``POST /models``: a compile without data, asked
  through an aiohttp session of this module's, without a time limit; ``httpstan.compile``'s ``subprocess.run`` of
  stanc and its one-second limit, raised in the compile process;
* ``stan.build``, which returns None when Ctrl-C interrupts it (it swallows the ``KeyboardInterrupt``);
* ``stan.fit.Fit``'s constructor (outputs, chains, param names, constrained names, dims, warmup, draws, thin,
  save_warmup): parsing one chain's output;
* ``stan.model.ConsoleIO`` (clikit's ``ConsoleIO``, with clikit's ``Input``/``Output`` and null streams):
  swapped for a silent console while pystan builds;
* setuptools' ``build/`` folder, which httpstan's compile leaves in the working directory (``build/temp.*/`` then
  the path of the model's folder, holding its object file), and setuptools' use of ``CFLAGS`` and ``LDFLAGS``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from functools import cache
from pathlib import Path

import numpy as np

from ..vocabulary.errors import SamplingError
from ..vocabulary.progress import Progress
from . import programs
from .pools import pool_processes

PR_SET_PDEATHSIG = 1  # prctl's option number (linux/prctl.h)

__all__ = ["SERVICE", "COMPILED_LIST", "SUPERSEDED_DAYS", "NO_DEBUG_INFO", "STANC_SECONDS", "model_name",
           "interpreter_key", "canonical_model_names", "compile_program", "is_compiled", "cache_directories",
           "kill_compilers", "drop_build_leftovers", "build", "sample", "run_chains", "quiet", "stop_samplers",
           "kill_samplers", "shutdown", "forget_superseded"]

SERVICE = "hmc_nuts_diag_e_adapt"  # the function pystan's ``sample`` calls
SUPERSEDED_DAYS = 7  # a compiled model of an earlier .stan file goes once unused for this long
COMPILED_LIST = "pystan-models.txt"  # in cache_dir(): the httpstan models this package compiled
DIAGNOSTIC_STREAM = b'{"version":1,"topic":"diagnostic"'
_pool: concurrent.futures.ProcessPoolExecutor | None = None  # the sampler pool given to httpstan (_new_pool)

_lock = threading.Lock()
_compiled: set[str] = set()  # httpstan model names known to be compiled
_compiling: dict[str, threading.Lock] = {}  # one lock per model name: two programs compile at once
_compilers: set[subprocess.Popen] = set()  # the compile processes running (kill_compilers)
#: added to the compile process's compiler flags: no debug information, which no loaded model uses (``-g0`` for the
#: program's own code; the linker's ``-S`` for the 45 MB of it that httpstan's prebuilt object brings)
NO_DEBUG_INFO = {"CFLAGS": "-g0", "LDFLAGS": "-Wl,-S"}
STANC_SECONDS = 120  # stanc's time limit in a compile (httpstan's own: 1 s)


def interpreter_key() -> str:
    """The interpreter a compiled program belongs to, however it was started: the real path of ``sys.executable``
    (``python``, ``python3``, a console script's ``python3.11`` and a virtual environment's link to it are one
    interpreter) and the real path of the httpstan installation, to whose libraries the compiled module links by
    absolute path (its RUNPATH): two installations of httpstan, in two virtual environments, still compile apart."""
    import httpstan

    return f"{os.path.realpath(sys.executable)}\n{os.path.realpath(Path(httpstan.__file__).parent)}"


def model_name(program_code: str) -> str:
    """httpstan's name of a compiled program (``models/<id>``): httpstan's own hash (the code, httpstan's version,
    the platform, the word size and the Python version) with :func:`interpreter_key` where httpstan hashes
    ``sys.executable`` as spelled, which made ``compile`` run through the console script (``python3``) useless to a
    ``python train.py`` that then compiled again, for minutes."""
    import base64
    import hashlib

    import httpstan

    digest = hashlib.blake2b(digest_size=5)  # httpstan's: a collision expected after a million models
    for part in (program_code, httpstan.__version__, sys.platform, str(sys.maxsize), sys.version, interpreter_key()):
        digest.update(part.encode())
    return f"models/{base64.b32encode(digest.digest()).decode().lower()}"


def canonical_model_names() -> None:
    """Have httpstan (its compile, its cache look-ups) and pystan (``stan.build``) name programs by
    :func:`model_name`; every entry of this module into them calls this first, as the compile process does."""
    import httpstan.models

    httpstan.models.calculate_model_name = model_name


def compile_program(program: str = "hierarchical", progress: Progress | None = None) -> float:
    """Compile ``program`` into httpstan's cache unless it is there; the seconds spent compiling, or waiting for
    another process's compile of it (0 when cached).  Threads may compile different programs at once."""
    canonical_model_names()
    code = programs.program_code(program)
    name = model_name(code)
    with _lock:
        model_lock = _compiling.setdefault(name, threading.Lock())
    with model_lock:
        if name in _compiled:
            return 0.0
        seconds = _compile(program, code, name, progress)
        _compiled.add(name)
    with _lock:  # the cache's housekeeping, once per model and process, one thread at a time
        if seconds:
            forget_superseded(name)
        drop_build_leftovers()
    return seconds


def is_compiled(program: str) -> bool:
    """Whether ``program`` is in httpstan's cache (a look, no compile), by its name :func:`model_name`."""
    import httpstan.cache

    canonical_model_names()
    name = model_name(programs.program_code(program))
    return name in _compiled or name in httpstan.cache.list_model_names()


def cache_directories() -> list[Path]:
    """Where compiled programs are kept: httpstan's cache (the models) and :func:`.programs.cache_dir` (their compile
    locks and the list of the models this package compiled)."""
    import httpstan.cache

    return [httpstan.cache.cache_directory(), programs.cache_dir()]


def _compile(program: str, code: str, name: str, progress: Progress | None) -> float:
    """Compile under a lock file in :func:`.programs.cache_dir`: httpstan's compile of a model first deletes its
    folder, so two at once (a server's start-up compile and a job's) would break each other, and a model is in the
    cache only once its compile has ended.  The compile runs in a new process (:func:`_run_compiler`)."""
    import fcntl

    import httpstan.cache

    where, start, announced = httpstan.cache.model_directory(name), time.perf_counter(), False
    with open(_lock_file(name.rsplit("/", 1)[-1]), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process compiles it: wait for that
            programs.announce_compile(program, where, progress)
            announced = True
            fcntl.flock(lock, fcntl.LOCK_EX)
        if name in httpstan.cache.list_model_names():
            return time.perf_counter() - start if announced else 0.0
        if not announced:
            programs.announce_compile(program, where, progress)
        returncode, stdout, stderr = _run_compiler(code)
    answer = stdout.strip().splitlines()[-1:] if returncode == 0 else []
    status, message = json.loads(answer[0]) if answer else (None, stderr.strip()[-2000:])
    if status != 201:
        raise SamplingError(f"pystan could not compile {programs.program_file(program).name}: {message}")
    return time.perf_counter() - start


def _lock_file(model_id: str) -> Path:
    """The compile lock of httpstan's model ``models/<model_id>``."""
    return programs.cache_dir() / f"compile-{model_id}.lock"


def _run_compiler(code: str) -> tuple[int, str, str]:
    """Run :func:`compile_main` on ``code`` in a new process: its return code, stdout and stderr.  It runs in a
    temporary folder, deleted with what setuptools leaves there (its ``build/`` folder, with the model's object
    file: 40 to 90 MB that no loaded model needs), and without debug information (:data:`NO_DEBUG_INFO`).  The
    process is listed for :func:`kill_compilers` while it runs, and killed if this thread is interrupted."""
    package_root = str(Path(__file__).resolve().parents[1])  # importable even when run from a source tree
    paths = [package_root, os.environ.get("PYTHONPATH")]
    flags = {key: f"{os.environ.get(key, '')} {value}".strip() for key, value in NO_DEBUG_INFO.items()}
    env = {**os.environ, **flags, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    with tempfile.TemporaryDirectory(prefix="bayescompare-build-") as build:
        process = subprocess.Popen([sys.executable, "-c", f"import {__name__} as m; m.compile_main()"], cwd=build,
                                   env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        _compilers.add(process)
        try:
            stdout, stderr = process.communicate(code)
        except BaseException:
            process.kill()
            process.wait()
            raise
        finally:
            _compilers.discard(process)
    return process.returncode, stdout, stderr


def kill_compilers() -> None:
    """Kill this process's compile processes (a failed or interrupted :class:`~.sampler.Compiles`); takes no lock.
    Their models stay out of the cache, and the next compile of each starts afresh."""
    for process in list(_compilers):
        with contextlib.suppress(OSError):
            process.kill()


def drop_build_leftovers() -> None:
    """Delete the object files (40 to 90 MB a model) that earlier versions of this package left in
    :func:`.programs.cache_dir`'s ``build/`` folder, where they compiled: no loaded model needs them.  A model's
    folder goes only under its compile lock (an earlier version may be compiling that model), and ``build/`` as a
    whole only when none of it is in use."""
    build = programs.cache_dir() / "build"
    with contextlib.ExitStack() as held:
        folders = list(build.glob("temp.*/**/models/*"))
        free = [folder for folder in folders if _locked_now(held, folder.name)]
        for folder in free if len(free) < len(folders) else [build]:
            shutil.rmtree(folder, ignore_errors=True)


def _locked_now(held: contextlib.ExitStack, model_id: str) -> bool:
    """Take the compile lock of a model if it is free, held until ``held`` closes; whether it was."""
    import fcntl

    lock = held.enter_context(open(_lock_file(model_id), "w"))
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def compile_main() -> None:
    """The compile process of :func:`_compile`: the program's code on stdin, httpstan's answer to ``POST /models``
    (``[status, message]``) as the last line on stdout.  A process of its own, started afresh (not a
    multiprocessing child, which would re-run the caller's ``__main__``: a script without the ``if __name__ ==
    "__main__":`` guard then waited forever on its own compile lock), because httpstan's compile holds the
    interpreter's lock for the whole minute, which would freeze the progress display and every other thread of the
    caller.  On a busy machine a compile may take longer than pystan's session allows (aiohttp's default, 5 minutes):
    the request has no time limit, and stanc more than httpstan's one second (:func:`_patient_stanc`)."""
    import asyncio

    import aiohttp
    import stan.common

    async def post(code: str):
        async with stan.common.HttpstanClient() as client, \
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session, \
                session.post(f"{client.base_url}/models", json={"program_code": code}) as response:
            message = "" if response.status == 201 else await response.text()
            with contextlib.suppress(ValueError, KeyError, TypeError):  # JSON but for an exception httpstan let by
                message = json.loads(message)["message"]
            return response.status, message

    code = sys.stdin.read()
    canonical_model_names()
    _patient_stanc()
    with quiet():
        answer = asyncio.run(post(code))
    print(json.dumps(answer), flush=True)


def _patient_stanc() -> None:
    """Give stanc :data:`STANC_SECONDS` where httpstan gives it one second: on a busy machine (two compiles starting
    at once on two cores shared with other work) it took longer, and the compile failed with ``TimeoutExpired``.
    For the compile process, which does nothing else."""
    import httpstan.compile

    def run(*args, **kwargs):
        return subprocess.run(*args, **{**kwargs, "timeout": STANC_SECONDS})

    httpstan.compile.subprocess = types.SimpleNamespace(**{**vars(subprocess), "run": run})


def build(program: str, data: dict, seed: int | None = None):
    """pystan's ``stan.model.Model`` of ``program`` bound to ``data``, compiling the program first if needed."""
    import httpstan.cache

    import stan

    compile_program(program)  # and canonical_model_names(), which stan.build reads
    with _lock, quiet():
        try:
            built = stan.build(programs.program_code(program), data=data, random_seed=seed)
        except (RuntimeError, ValueError) as exc:
            raise SamplingError(f"pystan could not build {programs.program_file(program).name}: {exc}") from exc
    if built is None:  # stan.build swallows Ctrl-C (KeyboardInterrupt) and returns None: pass it on
        raise KeyboardInterrupt
    with contextlib.suppress(OSError):  # the folder dates the model's last use (forget_superseded)
        os.utime(httpstan.cache.model_directory(built.model_name))
    return built


def forget_superseded(compiled: str) -> None:
    """Delete the compiled models (kept by httpstan forever: 1 to 2 MB each, 47 to 90 MB when compiled by earlier
    versions) of earlier versions of the programs: those listed in :func:`.programs.cache_dir` as compiled by this
    package, neither ``compiled`` nor a current program's, once unused for ``SUPERSEDED_DAYS`` (each build dates its
    model's folder; earlier versions of the package dated its ``fits``), which spares another installed version
    still in use.  Nothing else is touched."""
    import httpstan.cache

    listing = programs.cache_dir() / COMPILED_LIST
    with contextlib.suppress(OSError, UnicodeDecodeError):  # housekeeping: never a reason to fail a fit
        current = {model_name(programs.program_code(p)) for p in programs.PROGRAMS}
        known = listing.read_text().split() if listing.exists() else []
        keep = []
        for name in dict.fromkeys(known):
            if name == compiled or not re.fullmatch(r"models/[a-z0-9]+", name):  # a damaged line names nothing
                continue
            directory = httpstan.cache.model_directory(name)
            if not directory.exists():
                continue
            last_used = max(path.stat().st_mtime for path in (directory, directory / "fits") if path.exists())
            if name not in current and time.time() - last_used > SUPERSEDED_DAYS * 86400:
                httpstan.cache.delete_model_directory(name)
            if directory.exists():
                keep.append(name)
        listing.write_text("".join(f"{name}\n" for name in [*keep, compiled]))


@contextlib.contextmanager
def quiet():
    """Keep pystan's console chatter (its build and sampling progress, stanc's warnings about this package's own
    programs, the sampler's informational messages) off the user's terminal: failures still arrive as exceptions,
    and the diagnostics report what matters.  Anything else written to stdout goes to stderr, so ``--json`` output
    stays clean.  pystan's console is swapped for the whole process, unless a swap is in place already (a nested
    or concurrent call, which then leaves the first to restore it) or pystan's console is not clikit's."""
    import stan.model
    from clikit.io import ConsoleIO

    swap = getattr(stan.model, "ConsoleIO", None) is ConsoleIO
    if swap:
        stan.model.ConsoleIO = _silent_console()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if swap:
            stan.model.ConsoleIO = ConsoleIO


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



def sample(program: str, stan_data: dict, *, chains: int, draws: int, warmup: int, seed: int,
           adapt_delta: float | None = None) -> tuple[dict, dict]:
    """Sample ``program`` given ``stan_data``: ``(draws, sampler)`` as :func:`run_chains` gives them, chain k with
    the Stan seed ``chain_seeds(seed, chains)[k]``."""

    seeds = programs.chain_seeds(seed, chains)
    return run_chains(build(program, stan_data, seeds[0]), seeds=seeds, draws=draws, warmup=warmup,
                      adapt_delta=adapt_delta)


def run_chains(built, *, seeds: list[int], draws: int, warmup: int,
               adapt_delta: float | None = None) -> tuple[dict, dict]:
    """One chain per seed of the built pystan model, each through httpstan's sampler processes (:func:`_run_chain`)
    on its own thread.  Returns ``draws[name]`` ``(chains, draws, *dims)`` for every name the program declares
    and ``sampler[name]`` ``(chains, draws)`` for each of Stan's sampler columns (``lp__``, ``divergent__`` …)."""
    import stan.fit

    arguments = _chain_arguments(built, draws=draws, warmup=warmup, adapt_delta=adapt_delta)

    def one_chain(chain_seed):
        output = _run_chain(built.model_name, {**arguments, "random_seed": chain_seed})
        return stan.fit.Fit((output,), 1, built.param_names, built.constrained_param_names, built.dims, warmup,
                            draws, 1, False)

    try:
        with _kill_samplers_on_ctrl_c():
            _start_samplers()
            with concurrent.futures.ThreadPoolExecutor(len(seeds), thread_name_prefix="stan-chain") as pool:
                fits = list(pool.map(one_chain, seeds))
    except RuntimeError as exc:
        raise SamplingError(f"Stan failed to sample: {exc}") from exc
    except KeyboardInterrupt:
        stop_samplers()
        raise
    shapes = dict(zip(built.param_names, built.dims))

    def stacked(name, dims):  # a single-chain fit gives (*dims, draws)
        return np.stack([np.moveaxis(fit[name], -1, 0).reshape(draws, *dims) for fit in fits])

    return ({name: stacked(name, shapes[name]) for name in built.param_names},
            {name: stacked(name, ()) for name in fits[0].sample_and_sampler_param_names})


def _chain_arguments(built, *, draws: int, warmup: int, adapt_delta: float | None = None) -> dict:
    """What pystan's ``sample(num_chains=1, ...)`` passes to Stan for a chain, its ``random_seed`` aside: the data,
    chain id 1, no initial values, and httpstan's (CmdStan's) defaults for everything else; ``adapt_delta``, when
    given, is the step-size adaptation's target acceptance rate (httpstan's ``delta``, CmdStan's default 0.8)."""
    import httpstan.models
    from httpstan.services import arguments

    given = {"data": built.data, "init": {}, "chain": 1, "num_samples": draws, "num_warmup": warmup,
             "random_seed": None}  # set per chain
    if adapt_delta is not None:
        given["delta"] = adapt_delta
    module = httpstan.models.import_services_extension_module(built.model_name)
    defaults = {name: arguments.lookup_default(arguments.Method.SAMPLE, name)
                for name in arguments.function_arguments(SERVICE, module) if name not in given}
    return {**given, **defaults}


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
            _read_streams(listener, kept, done)
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


def _read_streams(listener: socket.socket, kept: dict, done: concurrent.futures.Future) -> None:
    """Accept the writers' connections and read them until every stream has ended (a selector: epoll has no limit
    of 1024 file descriptors, which ``select`` and httpstan's own reader have)."""
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
                return


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



def _start_samplers() -> None:
    """httpstan forks its sampler processes when its pool is first used: have that happen here, before the chain
    threads exist (a process forked while other threads run can crash), in a pool of this module's own
    (:func:`_new_pool`).  A pool broken by a sampler process that died earlier is replaced, so one crash does not
    fail every later fit of a long-running process."""
    import httpstan.services_stub as services

    if services.executor is not _pool:
        _new_pool(services)
    try:
        _fork_samplers(services).result()
    except concurrent.futures.BrokenExecutor:
        stop_samplers()
        _fork_samplers(services).result()


def _fork_samplers(services) -> concurrent.futures.Future:
    with _stop_signals_held():  # the pool forks every sampler process in its first ``submit``
        return services.executor.submit(int)


@contextlib.contextmanager
def _stop_signals_held():
    """Hold Ctrl-C and SIGTERM while httpstan's pool forks its sampler processes, and deliver them once it is done.
    The pool forks inside ``submit``, holding its lock, and lists each new process only after the fork: a handler
    that stopped the samplers there would miss that process, which would outlive this one holding its pipes open,
    or wait forever for the lock.  Only the main thread runs signal handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    previous = {signum: handler for signum, handler in previous.items() if handler is not None}  # None: not Python's
    for signum in previous:
        signal.signal(signum, lambda received, frame: held.append(received))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in held:
            signal.raise_signal(signum)


def _new_pool(services) -> None:
    """Give httpstan a new pool of sampler processes (started on first use), each started by
    :func:`_sampler_start`."""
    global _pool
    _pool = services.executor = concurrent.futures.ProcessPoolExecutor(
        mp_context=multiprocessing.get_context("fork"), initializer=_sampler_start)


def _sampler_start() -> None:
    """A sampler process's start-up: Ctrl-C ignored (httpstan's own start-up) and SIGTERM back to its default, so
    that no handler of the process that forked it (a command's or a matrix worker's stop, the hold of
    :func:`_stop_signals_held`) runs in it; and on Linux, killed when the process that forked it dies, however it
    dies (:func:`_die_with_parent`)."""
    import httpstan.services_stub as services

    services.init_worker()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()


def _die_with_parent() -> None:
    """Linux's ``PR_SET_PDEATHSIG``: SIGKILL this process when the thread that forked it ends (the one that started
    the pool: a fit's).  A sampler process outliving a killed parent would run its chain to the end and keep the
    parent's inherited sockets open: a Ray worker killed mid-pair would then look alive to its raylet, which would
    never restart it.  Elsewhere nothing is done."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_samplers() -> None:
    """Kill httpstan's sampler processes (after Ctrl-C or SIGTERM: they ignore SIGINT and would run Stan to the
    end) and give httpstan a fresh pool for later fits.  Does nothing where pystan never sampled."""
    services = sys.modules.get("httpstan.services_stub")
    if services is None:
        return
    old = services.executor
    kill_samplers()
    with contextlib.suppress(Exception):
        old.shutdown(wait=False, cancel_futures=True)
    _new_pool(services)


def kill_samplers() -> None:
    """SIGKILL httpstan's sampler processes, taking no lock, so that a signal handler may call it; their pool is
    then broken, and :func:`stop_samplers` replaces it."""
    services = sys.modules.get("httpstan.services_stub")
    for proc in pool_processes(getattr(services, "executor", None)).values():
        with contextlib.suppress(Exception):
            proc.kill()


def shutdown() -> None:
    """Shut httpstan's sampler pool down and wait for its processes: for the exit of a process that sampled and
    would otherwise wait for them forever (a multiprocessing child joins its non-daemon children)."""
    services = sys.modules.get("httpstan.services_stub")
    if services is not None:
        services.executor.shutdown(wait=True)


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
        kill_samplers()
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
