"""What the API and the page show: run summaries, the list of past comparisons, the 202 of an accepted job, and
the page form's defaults (from the option specs, never written in the HTML)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from flask import Response

from .. import tags as T
from ..options import LAYOUTS, PRIORS, FitOptions, SourceOptions, defaults
from ..result import json_safe
from .context import base_path, prefix
from .jobs import Settings

__all__ = ["json_response", "summarise_run", "list_comparisons", "accepted", "status_path", "report_path",
           "form_fields"]

_RUNNING = ("RUNNING", "SCHEDULED")
_CLAIMS = {"a-better": lambda a, rope: a, "not-worse": lambda a, rope: a + rope, "equivalent": lambda a, rope: rope}


def json_response(obj: Any, status: int = 200) -> Response:
    resp = Response(json.dumps(json_safe(obj)), status=status, mimetype="application/json")
    resp.headers["Cache-Control"] = "no-store"
    return resp


def status_path(run_id: str) -> str:
    return f"{base_path()}/api/comparisons/get?run_id={run_id}"


def report_path(run_id: str) -> str:
    return f"{base_path()}/report?run_id={run_id}"


def _run_url(experiment_id: str, run_id: str) -> str:
    return f"{prefix()}/#/experiments/{experiment_id}/runs/{run_id}"


def summarise_run(run) -> dict[str, Any]:
    """The JSON view of a job run (comparison, matrix or ranking): status, stage, probabilities, verdict, error,
    links."""
    tags, metrics, info = run.data.tags, run.data.metrics, run.info
    status = "RUNNING" if info.status in _RUNNING else "FINISHED" if info.status == "FINISHED" else "FAILED"
    kind = tags.get(T.KIND)
    out: dict[str, Any] = {
        "run_id": info.run_id,
        "experiment_id": info.experiment_id,
        "kind": kind,
        "name": info.run_name,
        "status": status,
        "stage": tags.get(T.STAGE) or ("done" if status == "FINISHED" else None),
        "metric": tags.get(T.METRIC),
        "model_a": tags.get(T.MODEL_A),
        "model_b": tags.get(T.MODEL_B),
        "p_a_better": metrics.get("p_a_better"),
        "p_rope": metrics.get("p_rope"),
        "p_b_better": metrics.get("p_b_better"),
        "verdict": tags.get(T.VERDICT),
        "decision": tags.get(T.DECISION),
        "diagnostics": tags.get(T.DIAGNOSTICS),
        "error": tags.get(T.ERROR) or ("the run was killed" if info.status == "KILLED" else None),
        "start_time": info.start_time,
        "end_time": info.end_time,
        "parent_run_id": tags.get(T.PARENT),
        "run_url": _run_url(info.experiment_id, info.run_id),
        "report_url": report_path(info.run_id) if status == "FINISHED" and kind == "comparison" else None,
    }
    if kind in ("matrix", "ranking"):
        out["models"] = [m for m in (tags.get(T.MODELS) or "").split(",") if m]
        out["best"] = tags.get(T.BEST)
        if out["best"] and status == "FINISHED":
            out["verdict"] = f"best: {out['best']}"
    claim = _claim(tags.get(T.REQUIRE), out["p_a_better"], out["p_rope"])
    if claim:
        out["require"] = claim
    return out


def _claim(recorded: str | None, p_a: float | None, p_rope: float | None) -> dict[str, Any] | None:
    """``{"claim", "threshold", "probability", "supported"}`` of a ``<claim>@<threshold>`` tag, once finished."""
    if not recorded or p_a is None:
        return None
    name, _, threshold = recorded.partition("@")
    if name not in _CLAIMS:
        return None
    probability = _CLAIMS[name](p_a, p_rope or 0.0)
    return {"claim": name, "threshold": float(threshold), "probability": probability,
            "supported": probability >= float(threshold)}


def list_comparisons(client, experiment_ids: list[str], limit: int) -> list[dict[str, Any]]:
    """The latest ``limit`` job runs (of every kind) of the experiments, newest first."""
    rows = []
    for start in range(0, len(experiment_ids), 100):
        chunk = experiment_ids[start:start + 100]
        for kind in T.KINDS:
            runs = client.search_runs(chunk, f"tags.`{T.KIND}` = '{kind}'", max_results=limit,
                                      order_by=["attributes.start_time DESC"])
            rows += [summarise_run(r) for r in runs]
    rows.sort(key=lambda r: r["start_time"] or 0, reverse=True)
    return rows[:limit]


def accepted(run_id: str, experiment_id: str) -> Response:
    """202 for a job accepted: where to follow it."""
    resp = json_response({"run_id": run_id, "experiment_id": experiment_id, "status": "RUNNING", "stage": "queued",
                          "status_url": status_path(run_id), "run_url": _run_url(experiment_id, run_id)}, 202)
    resp.headers["Location"] = status_path(run_id)
    return resp


def form_fields(settings: Settings) -> dict[str, dict[str, Any]]:
    """The page form's fields: default value and bounds of each, from the option specs and the server's limits."""
    values = {**defaults(SourceOptions), **defaults(FitOptions)}
    specs = {f.name: f.metadata["option"] for cls in (SourceOptions, FitOptions) for f in dataclasses.fields(cls)}
    server_high = {"chains": settings.max_chains, "draws": settings.max_draws}
    out = {}
    for name in ("rope", "seed", "chains", "draws", "threshold", "prior", "layout", "model_tag", "dataset_tag"):
        spec, high = specs[name], server_high.get(name)
        value = values[name]
        if high is not None and value is not None:
            value = min(value, high)
        out[name] = {"value": "" if value is None else value, "min": spec.low, "max": high or spec.high,
                     "help": spec.help}
    out["prior"]["choices"], out["layout"]["choices"] = PRIORS, LAYOUTS
    out["filter"] = {"value": values["filter_string"], "max_length": specs["filter_string"].max_length,
                     "help": specs["filter_string"].help}
    out["target_experiment"] = {"value": "", "max_length": specs["target_experiment"].max_length,
                                "help": specs["target_experiment"].help}
    return out
