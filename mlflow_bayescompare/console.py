"""One voice for every message the package gives a user.

Everything goes through the logger ``mlflow_bayescompare`` (:data:`log`): warnings about the data or the sampler,
notes about dropped datasets, and the progress lines of long work (:mod:`.progress`).  A library user sees them the
way their logging is configured (Python's last-resort handler prints warnings on stderr); the command line installs
:class:`CliHandler`, which prints each message once, on stderr, with the one prefix ``bayescompare:`` and the level
word for warnings and errors.  Third-party chatter (MLflow's database set-up lines, ArviZ's notices about its own
future) is kept out of that output.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import warnings

from .tracking.uiroutes import run_route

__all__ = ["LOGGER_NAME", "PREFIX", "log", "CliHandler", "install_cli_handler", "redact_uri", "ui_address"]

LOGGER_NAME = "mlflow_bayescompare"
PREFIX = "bayescompare:"
log = logging.getLogger(LOGGER_NAME)

#: loggers whose INFO lines are not the user's business on the command line
_THIRD_PARTY = ("mlflow", "alembic", "httpstan", "cmdstanpy", "stan", "matplotlib")


class CliHandler(logging.Handler):
    """``bayescompare: <message>`` on stderr; ``bayescompare: warning: <message>`` for warnings and errors.  Without
    a stream of its own it writes to whatever ``sys.stderr`` is when a message comes."""

    def __init__(self, stream=None):
        super().__init__()
        self.stream = stream

    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        return f"{PREFIX} {level}{record.getMessage()}"

    def emit(self, record: logging.LogRecord) -> None:
        stream = self.stream or sys.stderr
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except (OSError, ValueError):  # the terminal went away
            pass


def install_cli_handler(stream=None) -> CliHandler:
    """Print the package's messages as the command line does, and keep third-party chatter out of the terminal."""
    for handler in list(log.handlers):
        if isinstance(handler, CliHandler):
            log.removeHandler(handler)
    handler = CliHandler(stream)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    # MLflow sets its loggers' level as it is imported, from this variable: quiet an import still to come, without
    # importing it now (seconds, before the command has printed anything), and one already done by the levels below
    os.environ["MLFLOW_LOGGING_LEVEL"] = "WARNING"
    for name in _THIRD_PARTY:
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"arviz(\.|$)")
    return handler


_CREDENTIALS = re.compile(r"(\b[a-zA-Z][\w+.-]*://)[^/\s@]*@")


def redact_uri(text: str | None) -> str | None:
    """``text`` without the user names and passwords its URIs may carry (``http://alice:PW@host`` →
    ``http://host``): every URI or message the package prints, logs, links or stores goes through here."""
    if not text:
        return text
    return _CREDENTIALS.sub(r"\1", str(text))


def ui_address(tracking_uri: str | None, experiment_id: str, run_id: str) -> tuple[str, str | None]:
    """The MLflow UI's full address of a run, and for a local store the command that serves it (else ``None``)."""
    path = run_route(run_id, experiment_id)
    uri = redact_uri(tracking_uri) or ""
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/{path}", None
    store = f" --backend-store-uri {uri}" if uri else ""
    return (f"http://127.0.0.1:5000/{path}",
            f"mlflow server --app-name bayescompare{store} (the Bayesian comparison page is then at "
            "http://127.0.0.1:5000/bayescompare/)")
