"""One voice for every message the package gives a user.

Everything goes through the logger ``mlflow_bayescompare`` (:data:`log`): warnings about the data or the sampler,
notes about dropped datasets, and the progress lines of long work (:mod:`.progress`).  A library user sees them the
way their logging is configured (Python's last-resort handler prints warnings on stderr); the command line installs
:class:`CliHandler`, which prints each message once, on stderr, with the one prefix ``bayescompare:`` and the level
word for warnings and errors.  Third-party chatter (MLflow's database set-up lines) is kept out of that output;
ArviZ's daily notice about its own future is filtered where arviz is imported
(:func:`..shared.posterior_summary.arviz`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from . import mlflow_internals
from .uiroutes import run_route

__all__ = ["LOGGER_NAME", "PREFIX", "log", "about", "CliHandler", "RetryNotices", "install_cli_handler", "redact_uri",
           "connection_cause", "ui_address"]

LOGGER_NAME = "mlflow_bayescompare"
PREFIX = "bayescompare:"
log = logging.getLogger(LOGGER_NAME)

#: what the messages logged now are about (the metric being checked or fitted, of several): :func:`about`
_SUBJECT: ContextVar[str | None] = ContextVar("bayescompare_subject", default=None)


class _Subject(logging.Filter):
    """Names the subject of :func:`about` at the start of every message logged inside it."""

    def filter(self, record: logging.LogRecord) -> bool:
        subject = _SUBJECT.get()
        if subject:
            record.msg, record.args = f"{subject}: {record.getMessage()}", None
        return True


log.addFilter(_Subject())


@contextlib.contextmanager
def about(subject: str | None) -> Iterator[None]:
    """Every message logged inside starts with ``subject`` (``fit_time: …``: the metric of several it is about);
    ``None`` adds nothing."""
    token = _SUBJECT.set(subject)
    try:
        yield
    finally:
        _SUBJECT.reset(token)


#: loggers whose INFO lines are not the user's business on the command line
_THIRD_PARTY = ("mlflow", "alembic", "httpstan", "cmdstanpy", "stan", "matplotlib", "ray")


class CliHandler(logging.Handler):
    """``bayescompare: <message>`` on stderr; ``bayescompare: warning: <message>`` for warnings and errors.  Without
    a stream of its own it writes to whatever ``sys.stderr`` is when a message comes."""

    def __init__(self, stream=None):
        super().__init__()
        self.stream = stream
        #: called before a message is written: a live progress line on the same terminal clears itself
        self.before_message: Callable[[], None] | None = None

    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        return f"{PREFIX} {level}{record.getMessage()}"

    def emit(self, record: logging.LogRecord) -> None:
        stream = self.stream or sys.stderr
        try:
            if self.before_message is not None:
                self.before_message()
            stream.write(self.format(record) + "\n")
            stream.flush()
        except (OSError, ValueError):  # the terminal went away
            pass


class RetryNotices(logging.Handler):
    """Turns MLflow's silent retries (reported by urllib3: :func:`~.mlflow_internals.retry_notice`) into a warning
    of the package, ``MLflow did not answer (Connection refused); retrying (5 left)``, at most one every
    ``every`` seconds."""

    def __init__(self, every: float = 5.0):
        super().__init__(logging.DEBUG)
        self.every, self.last = every, float("-inf")

    def emit(self, record: logging.LogRecord) -> None:
        notice = mlflow_internals.retry_notice(record)
        if notice is None or time.monotonic() - self.last < self.every:
            return
        self.last = time.monotonic()
        error, left = notice
        cause = connection_cause(error) if error is not None else "it answered with an error status"
        log.warning(f"MLflow did not answer ({cause}); retrying" + (f" ({left} left)" if left is not None else ""))


def install_cli_handler(stream=None) -> CliHandler:
    """Print the package's messages as the command line does, say when MLflow retries, and keep third-party
    chatter out of the terminal."""
    for logger in (log, logging.getLogger(mlflow_internals.RETRY_LOGGER)):
        for handler in list(logger.handlers):
            if isinstance(handler, (CliHandler, RetryNotices)):
                logger.removeHandler(handler)
    handler = CliHandler(stream)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    retries = logging.getLogger(mlflow_internals.RETRY_LOGGER)
    retries.addHandler(RetryNotices())
    retries.setLevel(logging.DEBUG)  # urllib3 reports a retry on an error status at DEBUG
    # MLflow sets its loggers' level as it is imported, from this variable: quiet an import still to come, without
    # importing it now (seconds, before the command has printed anything), and one already done by the levels below
    os.environ["MLFLOW_LOGGING_LEVEL"] = "WARNING"
    for name in _THIRD_PARTY:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler


#: a URI's scheme, then its user information: everything up to the LAST ``@`` before the path (a password may hold
#: ``@``, ``:``, ``?`` or ``#`` unencoded; ``/`` ends the authority, so a password holding ``/`` must encode it)
_CREDENTIALS = re.compile(r"(\b[a-zA-Z][\w+.-]*://)[^/\s]*@")


def redact_uri(text: str | None) -> str | None:
    """``text`` without the user names and passwords its URIs may carry (``http://alice:PW@host`` →
    ``http://host``, ``http://u:pre@TAIL@host`` → ``http://host``), for every URI in it: every URI or message the
    package prints, logs, links or stores goes through here."""
    if not text:
        return text
    return _CREDENTIALS.sub(r"\1", str(text))


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^\"')\]]+)")


def connection_cause(error: BaseException) -> str:
    """Why a connection failed, in the system's few words (``Connection refused``, ``Name or service not known``),
    else the error's kind."""
    found = _ERRNO.search(str(error))
    if found:
        return found.group(1).strip()
    if "timeout" in type(error).__name__.lower():
        return "no answer in time"
    first = error.args[0] if error.args else None
    return str(first).rstrip(".") if isinstance(first, str) and len(first) < 60 else type(error).__name__


def ui_address(tracking_uri: str | None, experiment_id: str, run_id: str,
               route: str | None = None) -> tuple[str, str | None]:
    """The MLflow UI's full address of a run (or of another ``route`` of its UI), and for a local store the command
    that serves it (else ``None``)."""
    path = route or run_route(run_id, experiment_id)
    uri = redact_uri(tracking_uri) or ""
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/{path}", None
    store = f" --backend-store-uri {uri}" if uri else ""
    return (f"http://127.0.0.1:5000/{path}",
            f"mlflow server --app-name bayescompare{store} (the Bayesian comparison page is then at "
            "http://127.0.0.1:5000/bayescompare/)")
