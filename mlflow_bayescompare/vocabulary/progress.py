"""The progress hook: how long work says where it is.

Every pipeline function that takes a while accepts ``progress``, a callable that receives a stage name from
:data:`STAGES` and an optional detail (``progress("sampling", "hnb vs j48 on 54 datasets")``).  The compile of a Stan
program is announced as the stage ``compiling`` by whichever backend compiles it.  The command line shows the stages
on a live line with the elapsed time (:class:`TerminalProgress`); the server records them in the run's stage tag.
"""

from __future__ import annotations

import os
import threading
import time
import unicodedata
from collections.abc import Callable

from .console import PREFIX, CliHandler, log

__all__ = ["STAGES", "Progress", "notify", "TerminalProgress", "Countdown", "CLOSED_FORM", "duration"]

#: Stages a comparison goes through, in order; ``failed`` may replace any of them.
STAGES = ("queued", "fetching", "compiling", "sampling", "reporting", "logging", "done", "failed")

Progress = Callable[..., None]  # progress(stage: str, detail: str | None = None)
#: how the detail of the stage ``sampling`` ends when nothing is sampled (a closed form): the live line then says
#: ``computing`` (the stage itself, the run's stage tag, stays ``sampling``)
CLOSED_FORM = "closed form"


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

    def above(self, echo: Callable[[str], None]) -> Callable[[str], None]:
        """``echo`` made to print its lines above the live line: the line cleared first, under the lock the ticker
        takes, so that the two never share a row."""
        def write(text: str) -> None:
            with self._lock:
                self.clear_line()
                echo(text)

        return write

    @staticmethod
    def _cli_handlers() -> list[CliHandler]:
        return [h for h in log.handlers if isinstance(h, CliHandler)]

    def text(self, columns: int | None = None) -> str:
        """``bayescompare: <stage> <detail> (<elapsed> s)``; within ``columns`` terminal columns the detail is cut
        short (ending in "…"), the stage and the elapsed time kept."""
        elapsed = time.monotonic() - self._stage_start
        closed_form = self.stage == "sampling" and CLOSED_FORM in (self.detail or "")
        head = f"{PREFIX} {'computing' if closed_form else self.stage}"
        detail, tail = f" {self.detail}" if self.detail else "", f" ({elapsed:.0f} s)"
        if columns is not None:
            detail = _fitted(detail, columns - _width(head) - _width(tail))
        return head + detail + tail

    def columns(self) -> int:
        """The terminal's width: ``$COLUMNS`` when set (as ``shutil.get_terminal_size`` reads it), else the width of
        the stream's terminal, else 80."""
        try:
            return max(int(os.environ["COLUMNS"]), 10)
        except (KeyError, ValueError):
            pass
        try:
            return max(os.get_terminal_size(self.stream.fileno()).columns, 10)
        except (AttributeError, OSError, ValueError):
            return 80

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
        # the live line one column short of the terminal: a wrapped line would leave its first row behind
        text = self.text(None if final else self.columns() - 1)
        try:
            if final:
                self.stream.write(text + "\n")
            else:
                self.stream.write("\r" + text + " " * max(self._width - _width(text), 0))
                self._width = _width(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth failing for
            log.debug("progress line not written")
        self._last_line = time.monotonic()


def _width(text: str) -> int:
    """The columns ``text`` takes on a terminal: two for a wide (East Asian) character, none for a combining one."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _fitted(text: str, columns: int) -> str:
    """``text`` cut to ``columns`` terminal columns, ending in "…" when cut."""
    if _width(text) <= columns:
        return text
    if columns < 1:
        return ""
    out, used = [], 1  # the ellipsis
    for c in text:
        used += _width(c)
        if used > columns:
            break
        out.append(c)
    return "".join(out) + "…"
