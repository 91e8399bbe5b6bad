"""The server worker's shared state: its settings, a client on its own store, its job runner, and its paths."""

from __future__ import annotations

from typing import Any

from flask import request

from ..vocabulary import mlflow_internals
from ..vocabulary.console import redact_uri
from .jobs import JobRunner, Settings

__all__ = ["settings", "store_client", "runner", "started_runner", "prefix", "base_path", "loopback_uri",
           "public_message"]

_state: dict[str, Any] = {}


def settings() -> Settings:
    if "settings" not in _state:
        _state["settings"] = Settings.from_env()
    return _state["settings"]


def store_client():
    """An in-process client on the server's own backend store (reads, job records; no artifacts)."""
    from mlflow import MlflowClient

    if "client" not in _state:
        _state["client"] = MlflowClient(settings().backend_store_uri or None)
    return _state["client"]


def runner() -> JobRunner:
    if "runner" not in _state:
        _state["runner"] = JobRunner(settings(), store_client)
    return _state["runner"]


def started_runner() -> JobRunner | None:
    """The job runner if this worker has started one (the shutdown handlers must not start one)."""
    return _state.get("runner")


def prefix() -> str:
    """MLflow's ``--static-prefix`` ('' without one)."""
    return mlflow_internals.static_prefix()


def base_path() -> str:
    return prefix() + "/bayescompare"


def loopback_uri() -> str:
    """How the job processes reach this server: ``MLFLOW_BAYESCOMPARE_TRACKING_URI``, else the local address the
    request arrived on (the listening socket), plus the static prefix."""
    if settings().tracking_uri:
        return settings().tracking_uri.rstrip("/")
    env = request.environ
    host = env.get("SERVER_NAME") or "127.0.0.1"
    if host in ("0.0.0.0", "", "::", "[::]"):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    scheme = env.get("wsgi.url_scheme", "http")
    return f"{scheme}://{host}:{env.get('SERVER_PORT', '5000')}{prefix()}"


def public_message(message: str) -> str:
    """A message as users may see it: the backend store URI (which may hold a password) replaced by the server's
    public URL, and credentials stripped from the job's tracking URI."""
    for uri in {settings().backend_store_uri, redact_uri(settings().backend_store_uri)} - {None, ""}:
        message = message.replace(uri, request.host_url.rstrip("/") + prefix())
    if settings().tracking_uri:
        message = message.replace(settings().tracking_uri, redact_uri(settings().tracking_uri))
    return message
