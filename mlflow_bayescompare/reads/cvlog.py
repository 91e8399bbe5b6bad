"""Log one model's per-fold CV scores on one dataset as an MLflow run that ``collect`` reads (steps layout)."""

from __future__ import annotations

import time

import numpy as np
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunStatus

from ..vocabulary import mlflow_internals
from ..vocabulary.errors import InputError


def log_cv_scores(model: str, dataset: str, scores, *, metric: str = "accuracy", folds: int, repeats: int = 1,
                  experiment_id: str | None = None, run_name: str | None = None, params: dict | None = None,
                  tags: dict | None = None, client: MlflowClient | None = None) -> str:
    """Log ``scores`` (run-major: repeat * folds + fold) as ``metric`` with step = global fold index.

    The run gets tags ``model`` and ``dataset`` and params ``cv_folds`` and ``cv_repeats``, and the summary metrics
    ``<metric>_mean`` and ``<metric>_std`` (MLflow's runs table shows a stepped metric's *last* value, the last
    fold's; these are what to sort by there); returns its id.
    ``experiment_id`` defaults to the active experiment, ``client`` to ``MlflowClient()``.
    """
    values = _validated(model, dataset, scores, metric, folds, repeats)
    client = client or MlflowClient()
    if experiment_id is None:
        experiment_id = mlflow_internals.active_experiment_id()
    all_tags = {**(tags or {}), "model": str(model), "dataset": str(dataset)}
    run = client.create_run(str(experiment_id), tags=all_tags, run_name=run_name or f"{model} on {dataset}")
    run_id = run.info.run_id
    _, mean, std = _metric_keys(metric)
    try:
        now = int(time.time() * 1000)
        all_params = {**(params or {}), "cv_folds": int(folds), "cv_repeats": int(repeats)}
        client.log_batch(
            run_id,
            metrics=[Metric(metric, float(v), now, step) for step, v in enumerate(values)]
            + [Metric(mean, float(np.mean(values)), now, 0),
               Metric(std, float(np.std(values, ddof=1)) if values.size > 1 else 0.0, now, 0)],
            params=[Param(str(k), str(v)) for k, v in all_params.items()],
        )
    except BaseException:
        mlflow_internals.end_run(client, run_id, RunStatus.to_string(RunStatus.FAILED))
        raise
    mlflow_internals.end_run(client, run_id, RunStatus.to_string(RunStatus.FINISHED))
    return run_id


def _metric_keys(metric: str) -> tuple[str, str, str]:
    """The keys a run of :func:`log_cv_scores` logs: the metric per fold, its mean and its standard deviation."""
    return metric, f"{metric}_mean", f"{metric}_std"


def _validated(model, dataset, scores, metric, folds, repeats) -> np.ndarray:
    """Scores as float64, after checking every argument; all problems in one InputError."""
    where = f"model '{model}' on dataset '{dataset}'"
    problems = []
    for name, value in (("model", model), ("dataset", dataset), ("metric", metric)):
        if not str(value).strip():
            problems.append(f"{name} must be a non-empty string")
    if str(metric).strip() and not all(map(mlflow_internals.is_valid_key, _metric_keys(metric))):
        problems.append(f"metric {metric!r} is not a key MLflow accepts, with its summaries: "
                        f"{', '.join(map(repr, _metric_keys(metric)))}")
    for name, value, low in (("folds", folds, 2), ("repeats", repeats, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            problems.append(f"{name} must be an integer >= {low}, got {value!r}")
    try:
        values = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(problems + ["scores must be numbers"], header=f"Cannot log scores of {where}:") from None
    if values.ndim != 1:
        problems.append(f"scores must be 1-D (one score per fold), got shape {values.shape}")
    elif not problems and values.size != folds * repeats:
        problems.append(f"got {values.size} scores but folds * repeats = {folds} * {repeats} = {folds * repeats}")
    if values.ndim == 1 and not np.isfinite(values).all():
        bad = np.flatnonzero(~np.isfinite(values))
        problems.append("non-finite scores at fold index " + ", ".join(f"{i} ({values[i]})" for i in bad[:20])
                        + (f" and {bad.size - 20} more" if bad.size > 20 else ""))
    if problems:
        raise InputError(problems, header=f"Cannot log scores of {where}:")
    return values
