"""Fit step for many models: one job per pair of models in parallel worker processes.

Workers are spawned (Stan's backends do not survive a fork of a used process), ignore Ctrl-C from their very start
(the parent handles it and stops them), and stop the pystan sampler processes they started when they exit or are
terminated.  :func:`started` spawns them ahead of the work, so that their start-up (importing the package, MLflow
and the Stan backend: about 4 s each) overlaps the caller's own work, e.g. fetching the scores.  Stan programs are
compiled by the parent before the tasks start, so each worker loads them from the on-disk cache.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.util
import os
import signal
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from ..vocabulary.progress import Countdown, Progress, notify
from .pools import pool_processes

__all__ = ["run_all", "started", "worker_count"]


def worker_count(jobs: int | None, tasks: int) -> int:
    """``jobs`` (default: one per CPU), at most one per CPU and per task."""
    cpus = os.cpu_count() or 1
    return max(1, min(jobs or cpus, cpus, tasks))


@contextlib.contextmanager
def started(jobs: int | None, tasks: int, warm_up: Callable[[], Any]) -> Iterator[ProcessPoolExecutor | None]:
    """Up to ``jobs`` worker processes for ``tasks`` tasks (:func:`worker_count`), spawned now and starting up while
    the caller goes on: each runs ``warm_up`` first (a module-level function of the caller's, so that importing it
    loads what the tasks need); ``None`` when one process is enough (the tasks then run in this one).  Leaving the block
    waits for the tasks given to :func:`run_all`; an error or Ctrl-C in it stops the workers at once."""
    workers = worker_count(jobs, tasks)
    if workers == 1:
        yield None
        return
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init)
    try:
        with _ctrl_c_ignored_by_new_workers():
            for _ in range(workers):  # each submit spawns a worker while none is idle
                pool.submit(warm_up)
        yield pool
    except BaseException:  # Ctrl-C or a failed task: stop the others now instead of running them to the end
        _abandon(pool)
        raise
    pool.shutdown(wait=True)


def run_all(fn: Callable[..., Any], tasks: Iterable[tuple[Hashable, tuple]], *, total: int,
            pool: ProcessPoolExecutor | None, progress: Progress | None = None, stage: str = "sampling",
            what: str = "pairs") -> dict:
    """``{key: fn(*args)}`` for each of the ``total`` ``(key, args)`` of ``tasks``, in the worker processes of
    ``pool`` (:func:`started`; ``None``: in this process), in the order given; ``progress`` hears ``stage`` with
    "3/10 pairs done, about 20 s left" as each task ends (:class:`~..vocabulary.progress.Countdown`).  ``tasks`` may be
    a generator that prepares each task: with a pool, each one is handed to the workers as soon as it is ready, so
    they start while the next are prepared; in this process, every task is prepared before the first runs (so that
    a bad one is refused before any work).  The processes are spawned, so a script calling this with several jobs
    needs the usual ``if __name__ == "__main__":`` guard."""
    results: dict = {}
    countdown = Countdown(total, what)
    if pool is None:
        for key, args in list(tasks):
            results[key] = fn(*args)
            notify(progress, stage, countdown.detail(len(results)))
        return results
    futures = {pool.submit(fn, *args): key for key, args in tasks}
    pending = set(futures)
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            results[futures[future]] = future.result()
        notify(progress, stage, countdown.detail(len(results)))
    return {key: results[key] for key in futures.values()}


def _abandon(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and SIGTERM the workers (each stops its pystan sampler processes first)."""
    processes = list(pool_processes(pool).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(10)


@contextlib.contextmanager
def _ctrl_c_ignored_by_new_workers():
    """Ignore SIGINT while the pool spawns its workers (``submit`` starts them): a spawned process inherits the
    ignored signal and Python then installs no KeyboardInterrupt handler, so a Ctrl-C that arrives while a worker is
    still importing cannot make it print a traceback.  Only the main thread can change signal handlers; elsewhere
    this does nothing."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:  # None: set outside Python
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_init() -> None:
    """Start-up of a worker.  pystan samples in its own process pool, which a finalizer shuts down before the
    worker joins its children at exit (it would hang otherwise); SIGTERM (from :func:`_abandon`) stops the samplers
    first.  Ctrl-C is the parent's to handle."""
    from . import pystan_backend

    multiprocessing.util.Finalize(None, pystan_backend.shutdown, exitpriority=100)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_terminate)


def _worker_terminate(signum, frame) -> None:
    from . import pystan_backend

    pystan_backend.kill_samplers()  # no lock taken: the handler may have interrupted the pool's own code
    os._exit(128 + signum)
