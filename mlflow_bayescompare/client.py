"""A Python client of the server app's JSON API (``mlflow server --app-name bayescompare``): start a comparison, a
matrix, a ranking or a comparison of evaluation runs as a job, read its status, wait for its result.

    from mlflow_bayescompare.client import BayesCompareClient, JobFailed

    api = BayesCompareClient("http://127.0.0.1:5000")  # MLflow's address, with its --static-prefix if it has one
    run_id = api.start("comparison", {"experiment_name": "cv", "metric": "accuracy", "model_a": "rf",
                                      "model_b": "svm", "rope": 0.01, "seed": 1})
    try:
        state = api.wait(run_id, timeout=900)
    except JobFailed as exc:
        print(exc.state["error"])
    else:
        print(state["verdict"], state["p_a_better"], state["p_rope"], state["p_b_better"])

A comparison of evaluation runs is ``api.start("evals", {"run_a": …, "run_b": …, "scorers": …, "rope": …})`` (the
fields of ``compare-evals``), and :meth:`BayesCompareClient.evaluation_runs` lists an experiment's evaluation runs.
A job's fields are the command line's options with ``_`` for ``-`` (README, *JSON API*); a status is the JSON of
``GET …/api/comparisons/get``.  Behind MLflow's basic-auth, give ``auth=(user, password)``: the credentials travel
in the ``Authorization`` header and appear in no message.  The client takes the CSRF token once (``GET …/api/csrf``
sets the cookie and names the header that must repeat it, the double submit every POST needs) and keeps both in its
:attr:`BayesCompareClient.session`, which also serves the routes it does not wrap (the list, the choices, reports).
"""

from __future__ import annotations

import time
from typing import Any

import requests

from .vocabulary.console import redact_uri
from .vocabulary.errors import BayesCompareError

__all__ = ["BayesCompareClient", "RequestRefused", "JobFailed", "JobTimeout", "KINDS", "MAX_WAIT"]

#: the route that starts each kind of job, under ``…/bayescompare/api``
KINDS = {"comparison": "comparisons", "matrix": "matrix", "ranking": "rankings", "evals": "evals"}
#: the longest a status request may wait on the server for the job's change (``?wait=``; the server cuts more to it)
MAX_WAIT = 30.0


class RequestRefused(BayesCompareError):
    """The server refused a request (``status``: its HTTP status; ``errors``: every problem it listed) or could not
    be reached (``status`` None)."""

    def __init__(self, message: str, status: int | None = None, errors: list[str] | None = None):
        super().__init__(message)
        self.status = status
        self.errors = errors or [message]


class JobFailed(BayesCompareError):
    """A job ended FAILED; ``state`` is its last status, ``state["error"]`` the reason."""

    def __init__(self, message: str, state: dict[str, Any]):
        super().__init__(message)
        self.state = state


class JobTimeout(BayesCompareError, TimeoutError):
    """A job still RUNNING when :meth:`BayesCompareClient.wait` gave up; ``state`` is its last status."""

    def __init__(self, message: str, state: dict[str, Any]):
        super().__init__(message)
        self.state = state


class BayesCompareClient:
    """The JSON API of the bayescompare app served at ``url`` (MLflow's base URL, static prefix included)."""

    def __init__(self, url: str, auth: tuple[str, str] | None = None, *, timeout: float = 60):
        self.url = url.rstrip("/")
        self.timeout = timeout  # seconds per HTTP request
        self.session = requests.Session()
        self.session.auth = auth
        csrf = self._call("GET", "csrf", "read the CSRF token", 200)
        self.session.headers[csrf["header"]] = csrf["csrf_token"]

    def start(self, kind: str, body: dict[str, Any]) -> str:
        """Start a job of ``kind`` (comparison, matrix, ranking or evals) with the fields ``body``; its run id.  Raises
        :class:`RequestRefused` with the server's reasons when the request is refused (nothing is then written)."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind of job {kind!r}: one of {', '.join(KINDS)}")
        return self._call("POST", KINDS[kind], f"start a {kind}", 202, json=body)["run_id"]

    def evaluation_runs(self, experiment_id: str) -> list[dict[str, Any]]:
        """The experiment's evaluation runs (run id, name, kind, start time), newest first: those a comparison of
        evaluation runs (``start("evals", …)``) reads."""
        return self._call("GET", "evaluation-runs", f"list the evaluation runs of experiment {experiment_id}", 200,
                          params={"experiment_id": experiment_id})["runs"]

    def status(self, run_id: str, wait: float = 0) -> dict[str, Any]:
        """The job's status: ``status`` (RUNNING, FINISHED or FAILED), ``stage``, ``kind``, the probabilities,
        ``verdict``, ``error``, ``run_url``, ``report_url`` …; with ``wait`` (seconds, at most
        :data:`MAX_WAIT`), once its status or stage has changed, or after ``wait`` seconds (the server's long
        poll), and at once when it is not RUNNING."""
        params = {"run_id": run_id, **({"wait": f"{min(wait, MAX_WAIT):.3f}"} if wait > 0 else {})}
        return self._call("GET", "comparisons/get", f"status of run {run_id}", 200, params=params,
                          timeout=self.timeout + max(0.0, wait))

    def wait(self, run_id: str, timeout: float = 600, poll: float = 1.0) -> dict[str, Any]:
        """Follow the job until it has FINISHED and return its status; raises :class:`JobFailed` when it FAILED,
        :class:`JobTimeout` when it is still RUNNING after ``timeout`` seconds.  Each status request waits on the
        server for the next change (:meth:`status`'s ``wait``), so the end is seen as it is written; a server that
        answers at once with nothing changed (one without the long poll, or gunicorn's sync workers) is asked again
        every ``poll`` seconds."""
        deadline, seen = time.monotonic() + timeout, None
        while True:
            asked, wait = time.monotonic(), max(0.0, min(MAX_WAIT, deadline - time.monotonic()))
            state = self.status(run_id, wait=wait)
            kind = state.get("kind") or "job"
            if state["status"] == "FINISHED":
                return state
            if state["status"] == "FAILED":
                raise JobFailed(f"{kind} {run_id} FAILED: {state.get('error') or 'no reason recorded'}", state)
            left = deadline - time.monotonic()
            if left <= 0:
                raise JobTimeout(f"{kind} {run_id} still RUNNING (stage {state.get('stage')}) after {timeout:g} s",
                                 state)
            now = (state["status"], state.get("stage"))
            if now == seen and time.monotonic() - asked < wait / 2:  # not held: the server has no long poll
                time.sleep(min(poll, left))
            seen = now

    def _call(self, method: str, route: str, what: str, expected: int, timeout: float | None = None,
              **kwargs) -> dict[str, Any]:
        """One request to ``…/bayescompare/api/<route>``; its JSON when the status is ``expected``."""
        url = f"{self.url}/bayescompare/api/{route}"
        try:
            resp = self.session.request(method, url, timeout=timeout or self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise RequestRefused(f"{what}: cannot reach {redact_uri(self.url)}: {redact_uri(str(exc))}") from None
        try:
            body = resp.json()
        except ValueError:
            body = None
        if resp.status_code == expected and isinstance(body, dict):
            return body
        if isinstance(body, dict) and "error" in body:
            raise RequestRefused(f"{what}: HTTP {resp.status_code}: {body['error']}", resp.status_code,
                                 body.get("errors"))
        text = " ".join(resp.text.split())  # MLflow's own answer (basic-auth's 401), or a page of another server
        if not text or text.startswith("<") or len(text) > 300:
            text = resp.reason or "no answer"
        hint = (f"; is {redact_uri(self.url)} an `mlflow server --app-name bayescompare` (with its static prefix)?"
                if resp.status_code == 404 or resp.ok else "")
        raise RequestRefused(f"{what}: HTTP {resp.status_code}: {text}{hint}", resp.status_code)
