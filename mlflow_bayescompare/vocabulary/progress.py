"""The progress hook: how long work says where it is.

Every pipeline function that takes a while accepts ``progress``, a callable that receives a stage name from
:data:`STAGES` and an optional detail (``progress("sampling", "hnb vs j48 on 54 datasets")``).  The compile of a Stan
program is announced as the stage ``compiling`` by whichever backend compiles it.  The command line shows the stages
on a live line with the elapsed time (:class:`TerminalProgress`); the server records them in the run's stage tag.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable

from .console import PREFIX, CliHandler, log

__all__ = ["STAGES", "Progress", "notify", "TerminalProgress", "Countdown", "duration"]

#: Stages a comparison goes through, in order; ``failed`` may replace any of them.
STAGES = ("queued", "fetching", "compiling", "sampling", "reporting", "logging", "done", "failed")

Progress = Callable[..., None]  # progress(stage: str, detail: str | None = None)


def notify(progress: Progress | None, stage: str, detail: str | None = None) -> None:
    """Tell ``progress`` (if any) that the work has reached ``stage``."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    if progress is not None:
        progress(stage, detail)


class Countdown:
    """The detail of many tasks' progress: ``"3/10 pairs done, about 1 min 5 s left"``, the time left estimated from
    the pace since the countdown started."""

    def __init__(self, total: int, what: str = "pairs"):
        self.total, self.what = total, what
        self._start = time.monotonic()

    def detail(self, done: int) -> str:
        text = f"{done}/{self.total} {self.what} done"
        if not 0 < done < self.total:
            return text
        left = (time.monotonic() - self._start) / done * (self.total - done)
        return f"{text}, about {duration(left)} left"


def duration(seconds: float) -> str:
    """``1 min 5 s``: a time span as the progress line says it."""
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return " ".join(f"{value} {unit}" for value, unit in ((hours, "h"), (minutes, "min"), (seconds, "s"))
                    if value) or "0 s"


class TerminalProgress:
    """A progress hook for a terminal: the current stage, its detail and the elapsed time.

    On a TTY one live line is rewritten every second; otherwise (a log file, CI) a plain line is written when the
    stage changes and then every ``every`` seconds, so nothing stays silent for long.  Use it as a context manager;
    it ends the live line when the work ends.
    """

    def __init__(self, stream, *, every: float = 10.0, tick: float = 1.0):
        self.stream = stream
        self.live = bool(getattr(stream, "isatty", lambda: False)())
        self.every, self.tick = every, tick
        self.stage: str | None = None
        self.detail: str | None = None
        self._start = time.monotonic()
        self._stage_start = self._start
        self._last_line = self._start
        self._stop = threading.Event()
        self._lock = threading.RLock()  # a message written while the lock is held clears the line first
        self._thread: threading.Thread | None = None
        self._width = 0

    def __call__(self, stage: str, detail: str | None = None) -> None:
        with self._lock:
            changed = (stage, detail) != (self.stage, self.detail)
            if stage != self.stage:
                self._stage_start = time.monotonic()
            self.stage, self.detail = stage, detail
            if changed:
                self._write(final=not self.live)

    def __enter__(self) -> TerminalProgress:
        if self.live:  # the package's messages then start on a cleared line, not after the live one
            for handler in self._cli_handlers():
                handler.before_message = self.clear_line
        self._thread = threading.Thread(target=self._ticker, name="bayescompare-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for handler in self._cli_handlers():
            if handler.before_message == self.clear_line:
                handler.before_message = None
        with self._lock:
            if self.live and self._width:
                self.stream.write("\n")
                self.stream.flush()

    def clear_line(self) -> None:
        """Blank the live line and return to its start, so that a message takes the line; the next tick writes
        the progress again below it."""
        with self._lock:
            if self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self._width = 0

    @staticmethod
    def _cli_handlers() -> list[CliHandler]:
        return [h for h in log.handlers if isinstance(h, CliHandler)]

    def text(self, width: int | None = None) -> str:
        """``bayescompare: <stage> <detail> (<elapsed> s)``; within ``width`` characters, the detail cut short
        (``…``), the stage and the elapsed time kept."""
        elapsed = time.monotonic() - self._stage_start
        head, detail, tail = f"{PREFIX} {self.stage}", f" {self.detail}" if self.detail else "", f" ({elapsed:.0f} s)"
        room = None if width is None else width - len(head) - len(tail)
        if room is not None and len(detail) > room:
            detail = detail[: room - 1] + "…" if room > 1 else ""
        return head + detail + tail

    def _ticker(self) -> None:
        while not self._stop.wait(self.tick):
            with self._lock:
                if self.stage is None:
                    continue
                if self.live:
                    self._write(final=False)
                elif time.monotonic() - self._last_line >= self.every:
                    self._write(final=True)

    def _write(self, final: bool) -> None:
        """A whole line (``final``), or the live line rewritten in place, fitted to the terminal's width (a line
        that wraps cannot be rewritten in place)."""
        if self.stage is None:
            return
        text = self.text(None if final else shutil.get_terminal_size().columns - 1)
        try:
            if final:
                self.stream.write(text + "\n")
            else:
                self.stream.write("\r" + text.ljust(self._width))
                self._width = len(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth failing for
            log.debug("progress line not written")
        self._last_line = time.monotonic()
