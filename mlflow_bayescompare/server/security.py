"""Cross-site request protection and the pages' security headers.

CSRF: a double-submit token.  Every page view (and ``GET …/api/csrf``) sets the cookie ``bayescompare_csrf``
(``SameSite=Strict``, ``HttpOnly``, scoped to the plugin's path) and hands the same token to the page; a
state-changing request must send it back in the header ``X-BayesCompare-CSRF``, must not come from a foreign
``Origin`` and must not be marked ``Sec-Fetch-Site: cross-site`` / ``same-site``.  A foreign site can neither read
the cookie nor set the header, so it cannot forge the request.
"""

from __future__ import annotations

import hmac
import re
import secrets
from urllib.parse import urlsplit

from flask import Request, Response

from ..vocabulary import mlflow_internals

__all__ = ["COOKIE", "HEADER", "PAGE_CSP", "REPORT_CSP", "token_for", "set_cookie", "csrf_problem"]

COOKIE = "bayescompare_csrf"
HEADER = "X-BayesCompare-CSRF"
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{32,128}$")

#: the page: its own script and style files only (no inline script), frames of its own origin (the report)
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")
#: the report: sandboxed without scripts, inline styles and data: images only.  ``allow-same-origin`` (never with
#: ``allow-scripts``) lets the page that frames it measure its height; nothing in it can run.
REPORT_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
              "frame-ancestors 'self'; sandbox allow-same-origin allow-popups allow-popups-to-escape-sandbox")


def token_for(request: Request) -> tuple[str, bool]:
    """The request's CSRF token and whether it is new (then the response must set the cookie)."""
    current = request.cookies.get(COOKIE, "")
    if _TOKEN_RE.match(current):
        return current, False
    return secrets.token_urlsafe(32), True


def set_cookie(response: Response, token: str, path: str, secure: bool) -> None:
    response.set_cookie(COOKIE, token, path=path, httponly=True, samesite="Strict", secure=secure,
                        max_age=12 * 3600)


def _allowed_origins() -> list[str]:
    return [o.rstrip("/") for o in mlflow_internals.cors_allowed_origins() if o != "*"]


def csrf_problem(request: Request) -> str | None:
    """Why a state-changing request is refused, or None when it carries the token and comes from this site."""
    site = request.headers.get("Sec-Fetch-Site")
    if site and site not in ("same-origin", "none"):
        return f"cross-site request refused (Sec-Fetch-Site: {site[:40]})"
    origin = request.headers.get("Origin")
    if origin is not None:
        parts = urlsplit(origin)
        same_host = bool(parts.netloc) and parts.netloc.lower() == (request.host or "").lower()
        if not same_host and origin.rstrip("/") not in _allowed_origins():
            return f"cross-origin request refused (Origin: {origin[:200]})"
    cookie = request.cookies.get(COOKIE, "")
    sent = request.headers.get(HEADER, "")
    if not cookie or not sent:
        return (f"missing CSRF token: send the cookie {COOKIE} and the header {HEADER} with the same value "
                "(GET the page or …/bayescompare/api/csrf to obtain them)")
    if not hmac.compare_digest(cookie.encode(), sent.encode()):
        return f"CSRF token mismatch: the header {HEADER} does not match the cookie {COOKIE}"
    return None
