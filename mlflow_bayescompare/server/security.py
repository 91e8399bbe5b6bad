"""Cross-site request protection and (under ``bayescompare-auth``) MLflow basic-auth permissions.

CSRF: a double-submit token.  Every page view (and ``GET …/api/csrf``) sets the cookie ``bayescompare_csrf``
(``SameSite=Strict``, ``HttpOnly``, scoped to the plugin's path) and hands the same token to the page; a
state-changing request must send it back in the header ``X-BayesCompare-CSRF`` (or the form field ``csrf_token``),
must not come from a foreign ``Origin`` and must not be marked ``Sec-Fetch-Site: cross-site`` / ``same-site``.
A foreign site can neither read the cookie nor set the header, so it cannot forge the request.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
from urllib.parse import urlsplit

from flask import Request, Response

COOKIE = "bayescompare_csrf"
HEADER = "X-BayesCompare-CSRF"
FORM_FIELD = "csrf_token"
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{32,128}$")

#: set by ``create_app_with_auth`` in each worker process
AUTH_ENABLED = False


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
    raw = os.environ.get("MLFLOW_SERVER_CORS_ALLOWED_ORIGINS", "")
    return [o.strip().rstrip("/") for o in raw.split(",") if o.strip() and o.strip() != "*"]


def csrf_problem(request: Request) -> str | None:
    """Why a state-changing request is refused, or None when it carries the token and comes from this site."""
    site = request.headers.get("Sec-Fetch-Site")
    if site and site not in ("same-origin", "none"):
        return f"cross-site request refused (Sec-Fetch-Site: {site})"
    origin = request.headers.get("Origin")
    if origin is not None:
        parts = urlsplit(origin)
        same_host = bool(parts.netloc) and parts.netloc.lower() == (request.host or "").lower()
        if not same_host and origin.rstrip("/") not in _allowed_origins():
            return f"cross-origin request refused (Origin: {origin[:200]})"
    cookie = request.cookies.get(COOKIE, "")
    sent = request.headers.get(HEADER) or (request.form.get(FORM_FIELD, "") if request.form else "")
    if not cookie or not sent:
        return (f"missing CSRF token: send the cookie {COOKIE} and the header {HEADER} with the same value "
                "(GET the page or …/bayescompare/api/csrf to obtain them)")
    if not hmac.compare_digest(cookie.encode(), sent.encode()):
        return f"CSRF token mismatch: the header {HEADER} does not match the cookie {COOKIE}"
    return None


# ------------------------------------------------------------------------------------------------------ auth


def current_user(request: Request) -> str | None:
    if not AUTH_ENABLED:
        return None
    auth = request.authorization
    return auth.username if auth is not None else None


def credentials(request: Request) -> dict[str, str] | None:
    """Basic-auth credentials to run the job as the requesting user (None without auth)."""
    if not AUTH_ENABLED:
        return None
    auth = request.authorization
    if auth is None or auth.type != "basic" or auth.username is None:
        return None
    return {"username": auth.username, "password": auth.password or ""}


def _is_admin() -> bool:
    from mlflow.server import auth

    return bool(auth.sender_is_admin())


def can(request: Request, experiment_id: str, what: str = "read") -> bool:
    """May the requesting user ``read``/``update`` the experiment (always, without basic-auth)?"""
    if not AUTH_ENABLED:
        return True
    from mlflow.server import auth

    username = current_user(request)
    if username is None:
        return False
    if _is_admin():
        return True
    permission = auth._get_experiment_permission(str(experiment_id), username)
    return bool(permission.can_update if what == "update" else permission.can_read)


def grant_manage(request: Request, experiment_id: str) -> None:
    """Give the creator of a new experiment MANAGE on it, as MLflow's own create-experiment hook does."""
    if not AUTH_ENABLED:
        return
    from mlflow.server import auth

    username = current_user(request)
    if username:
        auth.store.grant_user_permission(username, "experiment", str(experiment_id), auth.MANAGE.name)
