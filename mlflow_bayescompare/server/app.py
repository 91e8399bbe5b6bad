"""``mlflow server --app-name bayescompare`` (and ``bayescompare-auth``): MLflow's server plus the plugin's page/API.

Both factories add the plugin's Flask routes to MLflow's own Flask app (before it is mounted at ``/``), then return
what the chosen server needs: a FastAPI (ASGI) app under uvicorn, the Flask (WSGI) app under gunicorn/waitress —
the shape of MLflow's ``mlflow.server.auth.create_app``.
"""

from __future__ import annotations

import logging
import os

from flask import Flask
from mlflow.server import app as mlflow_flask_app

from . import jobs, security, views

_logger = logging.getLogger(__name__)


def _register(app: Flask) -> None:
    if "bayescompare" not in app.blueprints:  # idempotent: endpoint names are global
        app.register_blueprint(views.create_blueprint())
        if os.environ.get("MLFLOW_BAYESCOMPARE_SWEEP", "true").lower() not in ("0", "false", "no"):
            jobs.sweep_in_background(views.store_client, views.settings())


def _server_app(app: Flask):
    if os.environ.get("_MLFLOW_SGI_NAME") == "uvicorn":
        from mlflow.server.fastapi_app import create_fastapi_app

        return create_fastapi_app(app)
    return app


def create_app(app: Flask = mlflow_flask_app):
    """The MLflow server with ``/bayescompare/`` added."""
    _register(app)
    return _server_app(app)


def create_app_with_auth(app: Flask = mlflow_flask_app):
    """``bayescompare`` layered with MLflow's basic-auth: logins and experiment permissions apply to the page and
    the API, and comparisons run with the requesting user's credentials."""
    from mlflow.server import auth

    security.AUTH_ENABLED = True
    _register(app)
    return auth.create_app(app)
