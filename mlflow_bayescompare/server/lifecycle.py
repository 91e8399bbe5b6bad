"""What a server worker does when it starts and when it stops.

At start-up, two pieces of housekeeping run in the background, each done by one process per host at a time:
the sweep of runs left RUNNING by a server that is gone (:func:`.owners.sweep_stale`), and the compile of the Stan
programs (in a spawned process), so the first comparison does not wait for it; a job that needs a program while it
compiles waits for that compile (the backends compile a program once per host), with the stage ``compiling``.

On SIGTERM or SIGINT (and at exit), the worker ends the runs of its jobs FAILED with that reason and kills their
processes, then lets the server's own handler shut it down as usual.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable

from .jobs import JobRunner, Settings
from .locks import try_lock
from .owners import sweep_stale

__all__ = ["start", "stopping", "sweep_in_background", "compile_in_background", "install_shutdown_handlers"]

_logger = logging.getLogger(__name__)
_STOP_TIMEOUT = 20.0  # seconds a stopping worker gives itself to record why its jobs ended
_children: list[multiprocessing.Process] = []  # the start-up compile
#: set once the worker stops (SIGTERM, SIGINT, exit): status requests that wait for a job's change answer at once
stopping = threading.Event()


def start(settings: Settings, store: Callable, runner: Callable[[], JobRunner | None]) -> None:
    """The worker's start-up: the sweep and the compile in the background (as the settings say), and the
    shutdown handlers.  ``runner()`` is the worker's job runner, or None when it has none yet."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    if settings.sweep:
        sweep_in_background(store, settings)
    if settings.compile:
        compile_in_background()
    install_shutdown_handlers(runner)


def sweep_in_background(store: Callable, settings: Settings) -> threading.Thread:
    """Run :func:`.owners.sweep_stale` once in a daemon thread; one worker process per host does it at a time."""

    def sweep():
        try:
            with try_lock(settings.state_dir / "sweep.lock") as locked:
                if locked:
                    sweep_stale(store(), settings.stale_after)
        except Exception:  # never take the server down for housekeeping
            _logger.exception("bayescompare: the sweep of stale comparison runs failed")

    return _thread(sweep, "bayescompare-sweep")


def compile_in_background() -> threading.Thread | None:
    """Compile the Stan programs in a spawned process unless another process of this host is compiling."""

    def compile_():
        try:
            from ..sampling.programs import cache_dir

            with try_lock(cache_dir() / "compile-start.lock") as first:
                if not first:
                    return  # another worker or server of this host does it
                # not a daemon: the backend compiles in a process of its own; stopped with the worker's jobs
                process = multiprocessing.get_context("spawn").Process(target=_compile_programs,
                                                                       name="bayescompare-compile")
                process.start()
                _children.append(process)
                process.join()
        except Exception:
            _logger.exception("bayescompare: the start-up compile of the Stan programs failed")

    return _thread(compile_, "bayescompare-compile")


def _compile_programs() -> None:
    """In the compile process: compile every Stan program, all at once.  The backends compile a program once per
    host (a job that needs it meanwhile waits for this compile, with the stage ``compiling``)."""
    from ..sampling.programs import PROGRAMS
    from ..sampling.sampler import compile_programs
    from ..vocabulary.console import install_cli_handler, log

    install_cli_handler()  # its lines go to the server's log
    for program, seconds in compile_programs(PROGRAMS, backend="auto").items():
        if seconds:
            log.info("compiled the Stan program %s at start-up in %.0f s", program, seconds)


def _thread(target: Callable[[], None], name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


# --------------------------------------------------------------------------------------------------- stop


def install_shutdown_handlers(runner: Callable[[], JobRunner | None]) -> None:
    """On SIGTERM and SIGINT (main thread only) and at exit, stop this worker's jobs, then chain to the handler
    that was there before (the server's own graceful shutdown)."""
    atexit.register(_stop_jobs, runner, "its worker process exited")
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)
        signal.signal(signum, _handler(runner, previous))


def _handler(runner: Callable[[], JobRunner | None], previous):
    def handle(signum, frame):
        _stop_jobs(runner, signal.Signals(signum).name)
        if callable(previous):
            previous(signum, frame)
        elif previous in (signal.SIG_DFL, None):
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    return handle


def _stop_jobs(runner: Callable[[], JobRunner | None], why: str) -> None:
    """Stop the start-up compile, and the worker's jobs from a helper thread (a signal may have interrupted the main
    thread inside a store call), waiting for it at most :data:`_STOP_TIMEOUT` seconds."""
    stopping.set()
    for child in _children:
        if child.is_alive():
            child.terminate()
    jobs = runner()
    if jobs is None:
        return
    helper = threading.Thread(target=jobs.stop, args=(why,), name="bayescompare-stop")
    helper.start()
    helper.join(_STOP_TIMEOUT)
