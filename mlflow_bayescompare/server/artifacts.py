"""Reading a comparison's ``report.html`` the way MLflow's ``/get-artifact`` reads artifacts (MLflow-internal:
the proxied artifact root or the run's own repository), to serve it inline."""

from __future__ import annotations

import tempfile
from pathlib import Path

from mlflow.exceptions import MlflowException

from .requests import ApiError

__all__ = ["MAX_REPORT_BYTES", "read_report"]

MAX_REPORT_BYTES = 50 * 1024 * 1024


def read_report(run, name: str = "report.html") -> bytes:
    """The bytes of the finished run's ``report.html``; 404 when it has none, 413 when too large to show."""
    if run.info.status != "FINISHED":
        raise ApiError(404, "the comparison has not finished")
    with tempfile.TemporaryDirectory(prefix="bayescompare-report-") as tmp:
        path = Path(_download(run, name, tmp))
        if path.stat().st_size > MAX_REPORT_BYTES:
            raise ApiError(413, f"{name} is too large to show inline")
        return path.read_bytes()


def _download(run, path: str, destination: str) -> str:
    from mlflow.server import handlers

    uri = run.info.artifact_uri
    if handlers._is_servable_proxied_run_artifact_root(uri):
        repo = handlers._get_artifact_repo_mlflow_artifacts()
        path = handlers._get_proxied_run_artifact_destination_path(proxied_artifact_root=uri, relative_path=path)
    else:
        repo = handlers._get_artifact_repo(run)
    try:
        return repo.download_artifacts(path, dst_path=destination)
    except (OSError, MlflowException) as exc:
        raise ApiError(404, f"the run has no {Path(path).name} artifact") from exc
