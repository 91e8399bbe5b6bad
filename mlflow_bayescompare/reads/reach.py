"""Is the tracking server there?  One quick look before any MLflow call, so that a server that is down, or a URI
that names no server, is told in seconds instead of after MLflow's retries (about 4 minutes by default)."""

from __future__ import annotations

import threading

import requests

from ..vocabulary.console import connection_cause, redact_uri
from ..vocabulary.errors import InputError

__all__ = ["CONNECT_TIMEOUT", "ANSWER_TIMEOUT", "DEADLINE", "GATEWAY_DOWN", "check_reachable"]

CONNECT_TIMEOUT = 5.0  # seconds to open the connection
ANSWER_TIMEOUT = 10.0  # seconds for each read of the answer
DEADLINE = CONNECT_TIMEOUT + ANSWER_TIMEOUT  # seconds for the whole look: name, connection, status and headers
#: what a proxy or gateway answers for a server behind it that is down or does not answer (MLflow's own /health
#: answers 200 whenever its process runs)
GATEWAY_DOWN = (502, 503, 504)


def check_reachable(tracking_uri: str | None) -> None:
    """Raise :class:`InputError` naming the (redacted) URI and the cause when the ``http(s)`` tracking server does
    not answer a plain ``GET <uri>/health`` within :data:`DEADLINE` seconds in all (an answer that trickles in, a
    byte at a time, is no answer).  Any HTTP answer will do (401 and 404 too: something answers there, and MLflow's
    own calls will tell what is wrong), its body unread, and so does a TLS handshake this look cannot check (MLflow
    has settings of its own for certificates), except a gateway's answer that the server behind it is not there
    (:data:`GATEWAY_DOWN`: MLflow would retry it for minutes).  The look sends no credentials.  Other stores are not
    looked at."""
    uri = redact_uri(str(tracking_uri or ""))
    if not uri.startswith(("http://", "https://")):
        return
    answer: dict = {}
    look = threading.Thread(target=_look, args=(f"{uri.rstrip('/')}/health", answer), name="bayescompare-reach",
                            daemon=True)
    look.start()
    look.join(DEADLINE)
    if look.is_alive():  # left to end on its own (its reads time out): a daemon never holds the process
        raise _unreachable(uri, f"no answer within {DEADLINE:g} s")
    error = answer.get("error")
    if isinstance(error, requests.exceptions.SSLError):
        return
    if isinstance(error, requests.exceptions.InvalidURL):
        raise InputError(f"the tracking URI {uri} is not a valid URL") from None
    if isinstance(error, requests.RequestException):
        raise _unreachable(uri, f"no answer within {DEADLINE:g} s" if isinstance(error, requests.Timeout)
                           else connection_cause(error)) from None
    if error is not None:
        raise error
    if answer["status"] in GATEWAY_DOWN:
        raise _unreachable(uri, f"HTTP {answer['status']} {answer['reason']}".strip())


def _look(url: str, answer: dict) -> None:
    """``GET url`` into ``answer``: its status and reason once the headers are in (the body is not read), or the
    error."""
    try:
        with requests.get(url, timeout=(CONNECT_TIMEOUT, ANSWER_TIMEOUT), allow_redirects=False, stream=True) as got:
            answer.update(status=got.status_code, reason=got.reason)
    except BaseException as exc:  # handed to the caller's thread
        answer["error"] = exc


def _unreachable(uri: str, cause: str) -> InputError:
    return InputError(f"the MLflow tracking server at {uri} is unreachable: {cause}. Is it running, and is the URI "
                      "right?")
