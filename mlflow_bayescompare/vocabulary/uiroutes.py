"""Routes of MLflow's web UI: the one place that knows its hash router and which of its two views a link opens.

MLflow 3's UI has two views, chosen with the toggle at its top left (the browser remembers the choice) or by the
``workflowType`` query parameter of a route: *GenAI*, the default, which lists every run of an experiment under
"Evaluations", and *Model training*, which lists them under "Runs", beside the training runs.  Tags play no part:
MLflow 3.17 derives an experiment's kind from the view, and neither ``mlflow.experimentKind`` on the experiment nor a
run tag moves a run out of "Evaluations" (checked in Chromium).  A comparison belongs with the training runs it
compares, so every link this package writes opens the model-training view.

One link opens the GenAI view on purpose: MLflow's own side-by-side comparison of two evaluation runs
(:func:`evaluation_comparison_route`), the view a comparison of evaluation runs stands beside.
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["VIEW", "run_route", "experiment_route", "evaluation_comparison_route"]

#: the query of every route: MLflow's model-training view
VIEW = "workflowType=machine_learning"


def experiment_route(experiment_id: object) -> str:
    """``#/experiments/<id>?workflowType=machine_learning``."""
    return f"#/experiments/{quote(str(experiment_id), safe='')}?{VIEW}"


def run_route(run_id: object, experiment_id: object = None) -> str:
    """The route of a run; ``#/runs/<id>`` (which MLflow redirects to the run's experiment, dropping the view) when
    the experiment is not known."""
    run = quote(str(run_id), safe="")
    if experiment_id is None or str(experiment_id) in ("", "nan", "None", "<NA>"):
        return f"#/runs/{run}"
    return f"#/experiments/{quote(str(experiment_id), safe='')}/runs/{run}?{VIEW}"


def evaluation_comparison_route(experiment_id: object, run_a: object, run_b: object) -> str:
    """MLflow 3.17's side-by-side view of two evaluation runs, trace by trace: the experiment's "Evaluations" tab
    (``/experiments/:experimentId/evaluation-runs``) with the runs in the query parameters its "Compare" button
    sets, ``selectedRunUuid`` (shown first: A) and ``compareToRunUuid`` (B) (``onCompare`` of the evaluation-runs
    page, ``mlflow/server/js/build/static/js/6598.*.chunk.js`` of 3.17.2)."""
    return (f"#/experiments/{quote(str(experiment_id), safe='')}/evaluation-runs?"
            f"selectedRunUuid={quote(str(run_a), safe='')}&compareToRunUuid={quote(str(run_b), safe='')}")
