"""How a command of the command line ends when SIGTERM comes: as Ctrl-C does, with exit status 143, its samplers and
workers stopped and a run being logged ended FAILED (:func:`stop_on_sigterm`, :func:`stopped_wins`)."""

from __future__ import annotations

import contextlib
import signal
import threading

import click

__all__ = ["StoppedBySigterm", "stop_on_sigterm", "stopped_wins"]


class StoppedBySigterm(SystemExit):
    """The exit of a command stopped by SIGTERM: its status, and its text where a failed run records the reason."""

    def __str__(self) -> str:
        return "stopped by SIGTERM"


def stop_on_sigterm() -> None:
    """SIGTERM (``kill``, ``timeout``, a CI runner or a scheduler stopping the command) ends it as Ctrl-C does
    instead of at once: Stan's sampler processes are killed, a matrix's workers are stopped
    (:mod:`.sampling.workers`) and a
    run being logged ends FAILED, none of which happens when Python dies of the signal.  Exit status 128 + 15."""
    _SIGTERM["stopped"] = None
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, frame):
        from .sampling.pystan_backend import stop_samplers

        stop_samplers()
        stopped = _SIGTERM["stopped"] = StoppedBySigterm(128 + signum)
        click.echo(f"Error: {stopped}.", err=True)
        raise stopped

    signal.signal(signal.SIGTERM, stop)


_SIGTERM: dict[str, StoppedBySigterm | None] = {"stopped": None}  # the stop of this command, once SIGTERM came


@contextlib.contextmanager
def stopped_wins():
    """Once SIGTERM has stopped the command, it ends with the stop's status whatever the stop became on its way
    out: raised inside a library's call, it may come out as that library's own exit (Ray's ``ray.wait`` turns it into
    ``SystemExit(1)``) or error."""
    try:
        yield
    except BaseException as exc:
        stopped = _SIGTERM["stopped"]
        if stopped is not None and exc is not stopped:
            raise stopped from None
        raise
