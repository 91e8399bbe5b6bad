"""``mlflow server --app-name bayescompare`` (and ``bayescompare-auth``): MLflow's server plus the plugin's page/API.

Both factories add the plugin's blueprint to MLflow's own Flask app (before it is mounted at ``/``), start the
worker's housekeeping (:mod:`.lifecycle`), then return what the chosen server needs: a FastAPI (ASGI) app under
uvicorn, the Flask (WSGI) app under gunicorn/waitress, the shape of MLflow's ``mlflow.server.auth.create_app``.
"""

from __future__ import annotations

from flask import Flask
from mlflow.server import app as mlflow_flask_app

from ..vocabulary import mlflow_internals
from . import context, lifecycle, permissions, routes

__all__ = ["create_app", "create_app_with_auth"]


def _register(app: Flask) -> None:
    if "bayescompare" not in app.blueprints:  # idempotent: endpoint names are global
        app.register_blueprint(routes.create_blueprint())
        lifecycle.start(context.settings(), context.store_client, context.started_runner)


def _server_app(app: Flask):
    if mlflow_internals.served_by_uvicorn():
        from mlflow.server.fastapi_app import create_fastapi_app

        return create_fastapi_app(app)
    return app


def create_app(app: Flask = mlflow_flask_app):
    """The MLflow server with ``/bayescompare/`` added."""
    _register(app)
    return _server_app(app)


def create_app_with_auth(app: Flask = mlflow_flask_app):
    """``bayescompare`` layered with MLflow's basic-auth: logins and experiment permissions apply to the page and
    the API (its routes registered with MLflow's validators), and comparisons run with the requesting user's
    credentials."""
    from mlflow.server import auth

    permissions.enable_basic_auth()
    _register(app)
    permissions.register_with_mlflow_auth(routes.mlflow_auth_routes())
    return auth.create_app(app)
