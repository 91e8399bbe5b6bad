"""Is the tracking server there?  One quick look before any MLflow call, so that a server that is down, or a URI
that names no server, is told in seconds instead of after MLflow's retries (about 4 minutes by default)."""

from __future__ import annotations

import requests

from ..vocabulary.console import connection_cause, redact_uri
from ..vocabulary.errors import InputError

__all__ = ["CONNECT_TIMEOUT", "ANSWER_TIMEOUT", "GATEWAY_DOWN", "check_reachable"]

CONNECT_TIMEOUT = 5.0  # seconds to open the connection
ANSWER_TIMEOUT = 10.0  # seconds for the first byte of the answer
#: what a proxy or gateway answers for a server behind it that is down or does not answer (MLflow's own /health
#: answers 200 whenever its process runs)
GATEWAY_DOWN = (502, 503, 504)


def check_reachable(tracking_uri: str | None) -> None:
    """Raise :class:`InputError` naming the (redacted) URI and the cause when the ``http(s)`` tracking server does
    not answer a plain ``GET <uri>/health`` in time.  Any HTTP answer will do (401 and 404 too: something answers
    there, and MLflow's own calls will tell what is wrong), and so does a TLS handshake this look cannot check (MLflow
    has settings of its own for certificates), except a gateway's answer that the server behind it is not there
    (:data:`GATEWAY_DOWN`: MLflow would retry it for minutes).  The look sends no credentials.  Other stores are not
    looked at."""
    uri = redact_uri(str(tracking_uri or ""))
    if not uri.startswith(("http://", "https://")):
        return
    try:
        answer = requests.get(f"{uri.rstrip('/')}/health", timeout=(CONNECT_TIMEOUT, ANSWER_TIMEOUT),
                              allow_redirects=False)
    except requests.exceptions.SSLError:
        return
    except requests.exceptions.InvalidURL:
        raise InputError(f"the tracking URI {uri} is not a valid URL") from None
    except requests.RequestException as exc:
        cause = f"no answer within {CONNECT_TIMEOUT:g} + {ANSWER_TIMEOUT:g} s" \
            if isinstance(exc, requests.Timeout) else connection_cause(exc)
        raise _unreachable(uri, cause) from None
    if answer.status_code in GATEWAY_DOWN:
        raise _unreachable(uri, f"HTTP {answer.status_code} {answer.reason}".strip())


def _unreachable(uri: str, cause: str) -> InputError:
    return InputError(f"the MLflow tracking server at {uri} is unreachable: {cause}. Is it running, and is the URI "
                      "right?")
