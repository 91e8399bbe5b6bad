"""Fit step for many models on a Ray cluster: the shape of :mod:`.workers` (:func:`started`, :func:`run_all`), with
Ray actors in place of worker processes.

Each actor is one long-lived Ray worker process (one CPU of the cluster): it imports the package once, and the Stan
program its first pair loads (or compiles, on a node that has none in its cache) stays loaded for every later pair,
with the backend's sampler processes.  The driver hands each actor a pair's data and gets its result back; it alone
talks to MLflow, after the last pair.  A worker process or node that dies is restarted and its pair given again
(:data:`RETRIES` times: the fits are seeded, so a retried pair gives the same numbers); past that the work fails,
naming the pair and Ray's reason, and nothing is logged.  An error, Ctrl-C or SIGTERM in the driver kills the
actors, which ends their running pairs and every pair still queued.

Ray's token authentication (Ray 2.52; on by default for the clusters ``ray.init`` starts from 2.59, for all from
2.61) is Ray's own business: Ray reads ``RAY_AUTH_MODE`` and the token (``RAY_AUTH_TOKEN_PATH``, a file, or
``RAY_AUTH_TOKEN``) from the environment, here and in whatever this process starts (a local cluster, the server's
job processes), which inherit it.  Nothing here puts them on a command line: Ray keeps a driver's command line in
its cluster's job table, which every client of the cluster may read.  A driver the cluster refuses is told which
variables to set (:data:`TOKEN_HINT`).

Ray is imported here only, and only once the engine is chosen: the package never needs it otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import platform
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..vocabulary.console import log, redact_uri
from ..vocabulary.errors import BayesCompareError, InputError, SamplingError
from ..vocabulary.progress import Countdown, Progress, notify
from ..vocabulary.versions import versions
from . import programs

__all__ = ["Cluster", "started", "run_all", "worker_versions", "version_problems", "INSTALL", "TOKEN_HINT",
           "CONNECT_SECONDS", "RETRIES"]

INSTALL = 'pip install "mlflow-bayescompare[ray]"'
#: what a driver refused by a cluster may lack: Ray's token (its environment variables, read by Ray itself here and
#: in whatever this process starts; a command line would show it to every client of the cluster, in its job table)
TOKEN_HINT = ("; a cluster with token authentication (Ray's default from 2.61) takes a driver with its token: "
              "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH (a file holding it) or RAY_AUTH_TOKEN in this "
              "environment, never on a command line")
CONNECT_SECONDS = 30  # an address that does not answer fails within this
START_SECONDS = 600  # the actors' start (a worker process each, importing the package) must end within this
RETRIES = 3  # restarts of a dead actor, and retries of the pair it was fitting
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")  # a terminal's colour codes (ANSI SGR)
IN_FLIGHT = 2  # pairs given to an actor at once: one fitting, the next waiting, so no actor idles between pairs


@dataclass
class Cluster:
    """The connection of :func:`started`: Ray's module, the actors that fit the pairs, and the cluster's address
    as messages show it (without credentials)."""

    ray: Any
    actors: list
    address: str


class _PairWorker:
    """A Ray actor: one worker process that runs the driver's pair fits, one at a time, keeping what they load."""

    def __init__(self, warm_up: Callable[[], Any]):
        warm_up()

    def versions(self) -> dict[str, str]:
        return worker_versions()

    def call(self, fn: Callable[..., Any], args: tuple) -> Any:
        return fn(*args)


@contextlib.contextmanager
def started(jobs: int | None, tasks: int, warm_up: Callable[[], Any], *, address: str | None = None,
            progress: Progress | None = None) -> Iterator[Cluster]:
    """Up to ``jobs`` actors (default: one per CPU of the cluster) for ``tasks`` tasks on the Ray cluster at
    ``address`` (default: Ray's choice: ``RAY_ADDRESS``, a cluster started on this machine, or a new local one),
    each running ``warm_up`` first (a module-level function).  Refused before any work (an :class:`InputError`):
    Ray not installed, an address that does not answer within :data:`CONNECT_SECONDS`, a cluster whose Python,
    package or Stan programs differ from this driver's.  Leaving the block, or an error or Ctrl-C in it, kills
    the actors (and so their running and queued pairs)."""
    ray = _import_ray()
    shown = redact_uri(address) if address else "Ray's default address"
    owned = _connect(ray, address, shown)
    actors: list = []
    try:
        count = max(1, min(jobs or int(ray.cluster_resources().get("CPU", 1)), tasks))
        notify(progress, "sampling", f"starting {count} Ray worker{'s' if count != 1 else ''} at {shown}")
        remote = ray.remote(_PairWorker).options(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES,
                                                 scheduling_strategy="SPREAD")
        actors = [remote.remote(warm_up) for _ in range(count)]
        _check_versions(ray, actors, shown)
        yield Cluster(ray, actors, shown)
    finally:
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if owned:
            ray.shutdown()


def run_all(fn: Callable[..., Any], tasks: Iterable[tuple[Hashable, tuple]], *, total: int, pool: Cluster,
            progress: Progress | None = None, stage: str = "sampling", what: str = "pairs") -> dict:
    """``{key: fn(*args)}`` for each of the ``total`` ``(key, args)`` of ``tasks``, on the actors of ``pool``, in
    the order given; as :func:`.workers.run_all`.  Each task is handed to an actor as soon as one is free; an
    error a task raises is raised here (this package's own as it is), and a pair whose actor died more than
    :data:`RETRIES` times fails the work, naming the pair and why."""
    ray, countdown = pool.ray, Countdown(total, what)
    free = [actor for _ in range(IN_FLIGHT) for actor in pool.actors]
    pending: dict = {}
    order: list = []
    results: dict = {}
    tasks = iter(tasks)
    while True:
        while free and (task := next(tasks, None)) is not None:
            key, args = task
            actor = free.pop(0)
            pending[actor.call.remote(fn, args)] = key, actor
            order.append(key)
        if not pending:
            return {key: results[key] for key in order}
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            key, actor = pending.pop(ref)
            results[key] = _value(ray, ref, key, pool.address)
            free.append(actor)
        notify(progress, stage, countdown.detail(len(results)))


def worker_versions() -> dict[str, str]:
    """What must match between the driver and the cluster's workers for a pair to give the same numbers: Python,
    this package, its Stan programs."""
    code = "".join(programs.program_code(name) for name in sorted(programs.PROGRAMS))
    return {"Python": platform.python_version(),
            "mlflow-bayescompare": versions().get("mlflow-bayescompare", "unknown"),
            "Stan programs": hashlib.sha256(code.encode()).hexdigest()[:12]}


def version_problems(driver: dict[str, str], workers: Iterable[dict[str, str]]) -> list[str]:
    """Each way the workers' :func:`worker_versions` differ from the driver's, once."""
    problems = []
    for worker in workers:
        for name, mine in driver.items():
            problem = f"{name} {worker.get(name, 'missing')} on the cluster, {mine} here"
            if worker.get(name) != mine and problem not in problems:
                problems.append(problem)
    return problems


# ------------------------------------------------------------------------------------------------------ steps


def _import_ray():
    try:
        import ray
    except ImportError:
        raise InputError(f"--engine ray needs Ray, which is not installed here: {INSTALL}") from None
    return ray


def _connect(ray, address: str | None, shown: str) -> bool:
    """Connect this process to the cluster (unless it is connected already; then False: not ours to shut down),
    within :data:`CONNECT_SECONDS`, or an :class:`InputError` naming the address.  A cluster Ray starts for this
    process (no address, none in ``RAY_ADDRESS``, or ``local``) is started in the calling thread: Ray's processes
    die with the thread that started them (their parent-death signal)."""
    if ray.is_initialized():
        return False
    with _keep_signal_handlers():  # Ray's core worker puts its own (abort) handler on SIGTERM, from any thread
        if (address or os.environ.get("RAY_ADDRESS") or "local") == "local":
            try:
                _init(ray, address)
            except Exception as exc:
                raise InputError(f"could not start Ray on this machine: {_first_lines(exc)}") from None
            log.info("fitting on a Ray cluster started on this machine")
            return True
        return _join(ray, address, shown)


def _join(ray, address: str | None, shown: str) -> bool:
    """Connect to the cluster at ``address`` (or ``RAY_ADDRESS``) from a helper thread, within
    :data:`CONNECT_SECONDS`; an :class:`InputError` naming the address otherwise."""
    deadline = time.monotonic() + CONNECT_SECONDS
    if address:
        _probe(address, shown)
    outcome: list = []

    def init():
        try:
            outcome.append(_init(ray, address))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=init, name="bayescompare-ray-connect", daemon=True)
    thread.start()
    thread.join(max(1.0, deadline - time.monotonic()))
    if not outcome:
        raise InputError(f"the Ray cluster at {shown} did not accept this driver within {CONNECT_SECONDS} s")
    if isinstance(outcome[0], BaseException):
        hint = "" if isinstance(outcome[0], ray.exceptions.AuthenticationError) else TOKEN_HINT
        raise InputError(f"could not connect to the Ray cluster at {shown}: {_first_lines(outcome[0])}{hint}") \
            from None
    log.info("fitting on the Ray cluster at %s", shown)
    return True


def _init(ray, address: str | None):
    """``ray.init``, its notice that a thread other than the main one sets no SIGTERM handler kept quiet."""
    with _quiet(logging.getLogger("ray._private.worker")):
        return ray.init(address=address, log_to_driver=False, logging_level="ERROR", include_dashboard=False,
                        configure_logging=False)


@contextlib.contextmanager
def _keep_signal_handlers():
    """The process's SIGTERM and SIGINT handlers as they were before the block, set again after it (from the main
    thread): ``ray.init`` in any thread puts Ray's own on SIGTERM (its C++ core worker's, which aborts the process:
    exit 134), and the command line's own handler (stop the work, log nothing, exit 143) must stay."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in saved.items():
            if handler is not None:
                signal.signal(number, handler)


@contextlib.contextmanager
def _quiet(logger: logging.Logger):
    """``logger`` at ERROR for the block.  ``ray.init`` outside the main thread warns that it sets no SIGTERM
    handler: on purpose, as the command line's own handler (stop the work, log nothing) must stay."""
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _probe(address: str, shown: str) -> None:
    """A TCP connection to the address's host and port (``host:port``, ``ray://host:port``), so that a wrong address
    fails in seconds rather than after Ray's own minutes of retries.  ``auto`` and ``local`` are Ray's words."""
    if address in ("auto", "local"):
        return
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise InputError(f"the Ray address {shown} is not host:port or ray://host:port")
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_SECONDS / 3):
            pass
    except OSError as exc:
        raise InputError(f"the Ray cluster at {shown} does not answer: {exc.strerror or exc}") from None


def _check_versions(ray, actors: list, shown: str) -> None:
    """Every actor started, on the same Python, package and Stan programs as this driver; else say what differs,
    before any pair is handed out."""
    try:
        found = ray.get([actor.versions.remote() for actor in actors], timeout=START_SECONDS)
    except ray.exceptions.GetTimeoutError:
        raise InputError(f"the Ray cluster at {shown} started no worker within {START_SECONDS} s (are its CPUs "
                         "busy?)") from None
    except ray.exceptions.RayError as exc:
        if _missing_package(exc):
            raise InputError(f"the Ray cluster at {shown} could not start a worker: mlflow-bayescompare "
                             f"{worker_versions()['mlflow-bayescompare']} (or one of its dependencies) is not "
                             f"installed on every node: {_first_lines(exc)}") from None
        raise SamplingError(f"the Ray cluster at {shown} could not start its workers: one died while starting, "
                            f"{RETRIES + 1} times (killed, out of memory, or its node lost?): {_first_lines(exc)}") \
            from None
    problems = version_problems(worker_versions(), found)
    if problems:
        raise InputError(problems, header=f"the Ray cluster at {shown} differs from this driver (install the same "
                                          "versions on every node):")


def _missing_package(error: BaseException) -> bool:
    """Did a worker fail to start because an import failed in it (its creation task raised an ``ImportError``,
    which Ray hands back as text when the worker could not even load the actor's class), rather than because its
    process died (killed, out of memory: a failure at run time, not of the installation)?"""
    if not getattr(error, "actor_init_failed", False):
        return False
    return any(isinstance(e, ImportError) for e in (getattr(error, "cause", None), error.__cause__)) \
        or any(word in str(error) for word in ("ModuleNotFoundError", "ImportError", "No module named"))


def _value(ray, ref, key, shown: str) -> Any:
    """The result of a pair, or the error that ended it."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BayesCompareError):
            raise cause from None
        raise SamplingError(f"{_named(key)} failed on the Ray cluster at {shown}: {_first_lines(cause or exc)}") \
            from None
    except ray.exceptions.RayError as exc:  # the actor died more often than it is restarted, or its node
        raise SamplingError(f"{_named(key)} was not fitted: its Ray worker died {RETRIES + 1} times (restarted and "
                            f"the pair retried each time): {_first_lines(exc)}") from None


def _named(key) -> str:
    return f"the pair {key[0]} vs {key[1]}" if isinstance(key, tuple) and len(key) == 2 else f"task {key}"


def _first_lines(exc: BaseException, lines: int = 3) -> str:
    """The error's first lines, as one, without the terminal colours Ray puts in its messages."""
    text = _COLOURS.sub("", str(exc)).strip() or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines()[:lines])
