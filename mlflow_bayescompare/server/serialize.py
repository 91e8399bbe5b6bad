"""What the API and the page show: run summaries, the list of past comparisons, the 202 of an accepted job, and
the page form's defaults (from the option specs, never written in the HTML)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from flask import Response

from ..vocabulary import tags as T
from ..vocabulary.claims import CLAIMS, Report, report, reports_dict
from ..vocabulary.keys import metric_key
from ..vocabulary.options import (
    LAYOUTS,
    PRIORS,
    EvalOptions,
    FitOptions,
    MatrixOptions,
    RankOptions,
    SourceOptions,
    defaults,
    direction_word,
)
from ..vocabulary.outcomes import COLORS, json_safe
from ..vocabulary.uiroutes import evaluation_comparison_route, run_route
from .context import base_path, prefix
from .jobs import Settings

__all__ = ["json_response", "summarise_run", "list_comparisons", "child_runs", "accepted", "status_path",
           "report_path", "form_fields", "colors_css", "FORM_SETTINGS"]

_RUNNING = ("RUNNING", "SCHEDULED")
_PROBABILITIES = ("p_a_better", "p_rope", "p_b_better")
#: the settings of a run that the page's form shows (the options' field names), from its params or its job request
FORM_SETTINGS = ("experiment_ids", "metric", "rope", "metric_rope", "greater_is_better", "direction", "seed", "chains",
                 "draws", "threshold", "prior", "layout", "model_key", "dataset_key", "filter_string",
                 "target_experiment", "sensitivity", "model", "vs")
#: the settings a decision on several metrics may log per metric (``<metric>/<param>``), as the form writes them
_PER_METRIC_SETTINGS = {"rope": "rope", "metric_rope": "metric_rope", "greater_is_better": "direction"}


def json_response(obj: Any, status: int = 200) -> Response:
    resp = Response(json.dumps(json_safe(obj)), status=status, mimetype="application/json")
    resp.headers["Cache-Control"] = "no-store"
    return resp


def status_path(run_id: str) -> str:
    return f"{base_path()}/api/comparisons/get?run_id={run_id}"


def report_path(run_id: str) -> str:
    return f"{base_path()}/report?run_id={run_id}"


def _has_report(tags: dict[str, str], models: list[str]) -> bool:
    """Whether a finished run holds a ``report.html``: a comparison unless it is a matrix's pair run without one
    (:data:`~..tags.REPORT`), a ranking, a matrix of three or more models (one of two has only its pair's)."""
    kind = tags.get(T.KIND)
    return (kind == "comparison" and tags.get(T.REPORT) != T.NO_REPORT) or kind == "ranking" or \
        (kind == "matrix" and len(models) >= 3)


def _run_url(experiment_id: str, run_id: str) -> str:
    return f"{prefix()}/{run_route(run_id, experiment_id)}"


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
        "skipped": [s for s in (tags.get(T.SKIPPED) or "").split(",") if s],  # e.g. compiling, when cached
        "job": T.JOB_REQUEST in tags,  # a job of the server, whose stages were recorded (not a run of the CLI)
        "metric": tags.get(T.METRIC),
        "model_a": tags.get(T.MODEL_A),
        "model_b": tags.get(T.MODEL_B),
        **{p: metrics.get(p) for p in _PROBABILITIES},
        "verdict": tags.get(T.VERDICT),
        "decision": tags.get(T.DECISION),
        "diagnostics": tags.get(T.DIAGNOSTICS),
        "test": tags.get(T.TEST),
        "error": tags.get(T.ERROR) or ("the run was killed" if info.status == "KILLED" else None),
        "start_time": info.start_time,
        "end_time": info.end_time,
        "parent_run_id": tags.get(T.PARENT),
        "run_url": _run_url(info.experiment_id, info.run_id),
        "report_url": None,
        "settings": _settings(run),
    }
    several = _run_metrics(run)
    if len(several) > 1:  # one decision on several metrics: its verdict is the combined line
        out["metrics"] = [_metric_summary(kind, tags, metrics, m) for m in several]
    if kind in ("matrix", "ranking"):
        out["models"] = T.split_names(tags.get(T.MODELS))
        out["best"] = tags.get(T.BEST)
        out["ranking_model"] = tags.get(T.RANKING)  # hierarchical, bbt, or joint-t on one dataset
        if out["best"] and status == "FINISHED" and len(several) == 1:
            out["verdict"] = f"best: {out['best']}"
    if status == "FINISHED" and _has_report(tags, out.get("models", [])):
        out["report_url"] = report_path(info.run_id)
    claim = _claim(tags.get(T.REQUIRE), out.get("metrics", [out])) or _eval_claim(tags.get(T.REQUIRE), metrics)
    if claim:
        out["require"] = claim
    if T.SOURCE_RUNS in tags:  # a comparison of evaluation runs: the runs it read, MLflow's own view of the two
        out.update(_evaluation_runs(tags))
    return out


def _evaluation_runs(tags: dict[str, str]) -> dict[str, Any]:
    """The evaluation runs a comparison read, and the address of MLflow's own side-by-side view of run A and run B
    when they share an experiment (:func:`~..vocabulary.uiroutes.evaluation_comparison_route`)."""
    experiments = [e for e in (tags.get(T.SOURCE_EXPERIMENTS) or "").split(",") if e]
    pair = tags.get(T.RUN_A), tags.get(T.RUN_B)
    same = all(pair) and len(experiments) == 1
    return {"source_runs": [r for r in tags[T.SOURCE_RUNS].split(",") if r],
            "compare_url": f"{prefix()}/{evaluation_comparison_route(experiments[0], *pair)}" if same else None}


def _eval_claim(recorded: str | None, metrics: dict[str, float]) -> dict[str, Any] | None:
    """The claim of a comparison of evaluation runs (``<claim>@<threshold>``; its joint probability the run's
    ``p_require``), once the run holds it."""
    name, _, threshold = (recorded or "").rpartition("@")
    if not name or "p_require" not in metrics:
        return None
    return Report(name, metrics["p_require"], float(threshold)).to_dict()


def _run_metrics(run) -> list[str]:
    """The metrics of a job run (its ``bayescompare.metric``, comma-separated), in the order asked."""
    return [m for m in (run.data.tags.get(T.METRIC) or "").split(",") if m]


def _metric_summary(kind: str | None, tags: dict[str, str], metrics: dict[str, float], metric: str) -> dict[str, Any]:
    """One metric of a decision on several: a comparison's probabilities (``<metric>/p_a_better``, ...), verdict,
    decision and test; a ranking's best model and ranking model.  A tag every metric shares is logged once, as it
    is (:mod:`..runs.several`)."""
    def shared(tag: str) -> str | None:
        return tags.get(T.metric_tag(tag, metric), tags.get(tag))

    if kind != "comparison":
        return {"metric": metric, "best": shared(T.BEST), "ranking_model": shared(T.RANKING)}
    return {"metric": metric, **{p: metrics.get(metric_key(metric, p)) for p in _PROBABILITIES},
            "verdict": tags.get(T.metric_tag(T.VERDICT, metric)),
            "decision": tags.get(T.metric_tag(T.DECISION, metric)), "test": shared(T.TEST)}


def _claim(recorded: str | None, summaries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The report (:mod:`..vocabulary.claims`) of a ``<claim>@<threshold>`` tag on the probabilities of the run's
    summary, or of each of its metrics (it must hold on every one), once they are there."""
    name, _, threshold = (recorded or "").partition("@")
    if name not in CLAIMS or any(s.get(p) is None for s in summaries for p in CLAIMS[name]):
        return None
    return reports_dict({s.get("metric") if len(summaries) > 1 else None: report(s, name, float(threshold))
                         for s in summaries})


def _settings(run) -> dict[str, Any]:
    """The run's :data:`FORM_SETTINGS`: its params (as logged), overridden by the request of a server job (typed),
    and the source experiments and metric of its tags."""
    tags, params = run.data.tags, run.data.params
    out: dict[str, Any] = {k: params[k] for k in FORM_SETTINGS if k in params}
    out.update(_per_metric_params(params, _run_metrics(run)))
    out["experiment_ids"] = [e for e in (tags.get(T.SOURCE_EXPERIMENTS) or "").split(",") if e]
    out["metric"] = tags.get(T.METRIC)
    try:
        request = json.loads(tags.get(T.JOB_REQUEST) or "{}")
    except ValueError:  # cut to fit its tag: the params and tags say enough
        request = {}
    if isinstance(request, dict):
        out.update({k: request[k] for k in FORM_SETTINGS if request.get(k) is not None})
    return out


def _per_metric_params(params: dict[str, str], metrics: list[str]) -> dict[str, str]:
    """The rope and direction of a decision on several metrics that logged them per metric (``<metric>/rope``, when
    they differ), as the form and the options write them: ``accuracy=0.01,fit_time=0.5``, ``fit_time=lower``."""
    out = {}
    for param, setting in _PER_METRIC_SETTINGS.items():
        given = {m: params[metric_key(m, param)] for m in metrics if metric_key(m, param) in params}
        if given:
            out[setting] = ",".join(f"{m}={direction_word(v == 'True') if setting == 'direction' else v}"
                                    for m, v in given.items())
    return out


def list_comparisons(client, experiment_ids: list[str], limit: int) -> list[dict[str, Any]]:
    """The latest ``limit`` job runs (of every kind) of the experiments that are not a matrix's pair, newest first,
    each with its experiment's name; a matrix's pairs are its ``pairs``."""
    rows = []
    for start in range(0, len(experiment_ids), 100):
        chunk = experiment_ids[start:start + 100]
        for kind in T.KINDS:
            runs = client.search_runs(chunk, f"tags.`{T.KIND}` = '{kind}' AND tags.`{T.PARENT}` IS NULL",
                                      max_results=limit, order_by=["attributes.start_time DESC"])
            rows += [summarise_run(r) for r in runs]
    rows.sort(key=lambda r: r["start_time"] or 0, reverse=True)
    rows = rows[:limit]
    names = {e: client.get_experiment(e).name for e in {row["experiment_id"] for row in rows}}
    for row in rows:
        row["experiment_name"] = names[row["experiment_id"]]
        if row["kind"] == "matrix":
            row["pairs"] = child_runs(client, row["experiment_id"], row["run_id"])
    return rows


def child_runs(client, experiment_id: str, run_id: str) -> list[dict[str, Any]]:
    """The pairs of a matrix run (its child comparison runs), in the order of their names."""
    children = client.search_runs([experiment_id], f"tags.`{T.PARENT}` = '{run_id}'", max_results=1000,
                                  order_by=["attributes.run_name ASC"])
    return [summarise_run(c) for c in children]


def accepted(run_id: str, experiment_id: str) -> Response:
    """202 for a job accepted: where to follow it."""
    resp = json_response({"run_id": run_id, "experiment_id": experiment_id, "status": "RUNNING", "stage": "queued",
                          "status_url": status_path(run_id), "run_url": _run_url(experiment_id, run_id)}, 202)
    resp.headers["Location"] = status_path(run_id)
    return resp


def colors_css() -> str:
    """The page's outcome colours as CSS custom properties (``--a_better``, ``--rope``, ``--b_better``), from
    :data:`..vocabulary.outcomes.COLORS`, the colours of the reports and plots."""
    return ":root { " + " ".join(f"--{outcome}: {color};" for outcome, color in COLORS.items()) + " }\n"


def form_fields(settings: Settings) -> dict[str, dict[str, Any]]:
    """The page form's fields: default value and bounds of each, from the option specs and the server's limits."""
    values = {**defaults(SourceOptions), **defaults(FitOptions)}
    specs = {f.name: f.metadata["option"] for cls in (SourceOptions, FitOptions) for f in dataclasses.fields(cls)}
    server_high = {"chains": settings.max_chains, "draws": settings.max_draws}
    out = {}
    for name in ("rope", "seed", "chains", "draws", "threshold", "prior", "layout", "model_key", "dataset_key",
                 "sensitivity", "greater_is_better", "direction"):
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
    vs = next(f.metadata["option"] for f in dataclasses.fields(RankOptions) if f.name == "vs")
    out["vs"] = {"help": vs.help, "max_length": vs.max_length}  # the page's "Rank against"
    refresh = next(f.metadata["option"] for f in dataclasses.fields(MatrixOptions) if f.name == "refresh")
    out["refresh"] = {"value": defaults(MatrixOptions)["refresh"], "help": refresh.help}  # "fit every pair again"
    out["evals"] = {f.name: {"value": "" if f.default is None else f.default, "help": f.metadata["option"].help,
                             "min": f.metadata["option"].low, "max": f.metadata["option"].high}
                    for f in dataclasses.fields(EvalOptions)}  # "Compare evaluation runs"
    return out
