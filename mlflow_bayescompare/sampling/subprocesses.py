"""Tasks shared by worker processes that are new Pythons on this one's ``sys.path`` (the ranking's pairs,
:mod:`.pair_gibbs`): nothing forked, so no thread or sampler pool of this process is copied half-way, and no
``__main__`` imported again, so a script that calls this needs no ``if __name__ == "__main__":`` guard (unlike
:mod:`.workers`' spawned pools).  Why processes: in threads, numpy's many short calls wait for each other's GIL (two
threads sampled 60 pairs each in 6.6 s against 4.0 s for one alone; two processes in 4.5 s, start-up included).

A worker reads its tasks from its standard input (pickled), writes progress and results to its standard output
(print's output goes to its standard error), and ends when its standard input closes: when this process ends, or
closes it on an error or Ctrl-C (and kills it).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["run"]


def run(function: Callable[..., Any], tasks: list[tuple], weights: list[float], cores: int,
        report: Callable[[int, int], None] | None = None) -> list:
    """``[function(*task) for task in tasks]``, the tasks shared by ``cores`` worker processes, the heaviest first to
    the least loaded (``weights``); in this process when ``cores`` is 1 or there is no Python to start (embedded).
    ``function`` is a module-level function; the first task's is called with ``report=``, whose calls
    (``report(done, total)``) are heard here.  A task's exception is raised here as a ``RuntimeError`` naming it, at
    once: the other workers are stopped."""
    if cores == 1 or len(tasks) == 1 or not sys.executable:
        return [function(*task, report=report if at == 0 else None) for at, task in enumerate(tasks)]
    loads, jobs = [0.0] * cores, [[] for _ in range(cores)]
    for at in sorted(range(len(tasks)), key=lambda n: -weights[n]):
        least = loads.index(min(loads))
        jobs[least].append(at)
        loads[least] += weights[at]
    jobs = [job for job in jobs if job]
    start = f"import json, sys; sys.path[:] = json.loads(sys.argv[1]); from {__name__} import _serve; _serve()"
    errors = [tempfile.TemporaryFile() for _ in jobs]  # a worker's standard error, read if it dies
    workers = [subprocess.Popen([sys.executable, "-c", start, json.dumps(sys.path)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=error) for error in errors]
    results: list = [None] * len(tasks)
    finished = [False] * len(jobs)
    pool = concurrent.futures.ThreadPoolExecutor(len(jobs), thread_name_prefix="worker-relay")
    try:
        futures = [pool.submit(_drive, workers[n], errors[n], (function.__module__, function.__qualname__),
                               [tasks[at] for at in job], report, job.index(0) if 0 in job else None)
                   for n, job in enumerate(jobs)]
        concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
        for n, future in sorted(enumerate(futures), key=lambda item: not item[1].done()):  # a failure first
            for at, result in zip(jobs[n], future.result()):
                results[at] = result
            finished[n] = True
    finally:
        for worker, done in zip(workers, finished):
            if not done and worker.poll() is None:
                worker.kill()
            with contextlib.suppress(OSError):
                worker.stdin.close()
        pool.shutdown(wait=True)
        for worker, error in zip(workers, errors):
            worker.wait()
            worker.stdout.close()
            error.close()
    return results


def _drive(worker: subprocess.Popen, error, function: tuple[str, str], tasks: list[tuple],
           report: Callable[[int, int], None] | None, reporting: int | None) -> list:
    """Give ``worker`` its tasks, relay the progress of its task at ``reporting`` (``None``: none) to ``report``,
    return its results."""
    reporting = reporting if report is not None else None
    try:
        pickle.dump((function, tasks, reporting), worker.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        worker.stdin.flush()
    except OSError:  # it ended before reading: the next read says why
        pass
    while True:
        try:
            kind, value = pickle.load(worker.stdout)
        except EOFError:
            worker.wait()
            error.seek(0)
            tail = error.read().decode(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(f"a worker process ended (exit code {worker.returncode})"
                               + "".join(f": {line}" for line in tail)) from None
        if kind == "progress":
            report(*value)
        elif kind == "error":
            raise RuntimeError(f"a worker process failed: {value}")
        else:
            return value


def _serve() -> None:
    """A worker process (:func:`run`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    (module, name), tasks, reporting = pickle.load(sys.stdin.buffer)
    threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()

    def send(kind: str, value) -> None:
        pickle.dump((kind, value), channel, protocol=pickle.HIGHEST_PROTOCOL)
        channel.flush()

    try:
        function = getattr(importlib.import_module(module), name)
        results = [function(*task, report=(lambda *done: send("progress", done)) if at == reporting else None)
                   for at, task in enumerate(tasks)]
    except Exception as failure:  # noqa: BLE001 - any failure goes to the parent, which raises it
        send("error", f"{type(failure).__name__}: {failure}")
    else:
        send("done", results)
    sys.stderr.flush()
    os._exit(0)  # no interpreter shutdown to wait for: it took 0.5 s after a ranking's pairs (the parent waits on it)
