"""Fit step for many models: one job per pair of models in parallel worker processes.

Workers are spawned (Stan's backends do not survive a fork of a used process), ignore Ctrl-C from their very start
(the parent handles it and stops them), and stop the pystan sampler processes they started when they exit or are
terminated.  Stan programs are compiled by the parent before the workers start, so each worker loads them from the
on-disk cache.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.util
import os
import signal
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable, Hashable, Mapping

from .progress import Progress, notify

__all__ = ["run_all", "worker_count"]


def worker_count(jobs: int | None, tasks: int) -> int:
    """``jobs`` (default: one per CPU), at most one per CPU and per task."""
    cpus = os.cpu_count() or 1
    return max(1, min(jobs or cpus, cpus, tasks))


def run_all(fn: Callable[..., Any], tasks: Mapping[Hashable, tuple], *, jobs: int | None = None,
            progress: Progress | None = None, stage: str = "sampling", what: str = "pairs") -> dict:
    """``{key: fn(*args)}`` for every ``key: args`` of ``tasks``, in up to ``jobs`` processes (default: one per
    CPU); ``progress`` hears ``stage`` with "3/10 pairs done" as each task ends.  The processes are spawned, so a
    script calling this with several jobs needs the usual ``if __name__ == "__main__":`` guard."""
    total = len(tasks)
    workers = worker_count(jobs, total)
    results: dict = {}
    if workers == 1:
        for key, args in tasks.items():
            results[key] = fn(*args)
            notify(progress, stage, f"{len(results)}/{total} {what} done")
        return results
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init)
    try:
        with _ctrl_c_ignored_by_new_workers():
            futures = {pool.submit(fn, *args): key for key, args in tasks.items()}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                results[futures[future]] = future.result()
            notify(progress, stage, f"{len(results)}/{total} {what} done")
    except BaseException:  # Ctrl-C or a failed task: stop the others now instead of running them to the end
        _abandon(pool)
        raise
    pool.shutdown(wait=True)
    return {key: results[key] for key in tasks}


def _abandon(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and SIGTERM the workers (each stops its pystan sampler processes first)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
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

    pystan_backend.stop_samplers()
    os._exit(128 + signum)
