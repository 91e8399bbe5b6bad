"""What kind of evaluation run a run is, read from what MLflow left in it (:func:`run_kind`), and the evaluation
runs of an experiment (:func:`evaluation_runs`, for the server's page to pick from).  Reads only."""

from __future__ import annotations

from ..vocabulary import mlflow_internals as mi
from ..vocabulary import tags as T
from .eval_tables import LONG_TABLES
from .eval_traces import linked_traces

__all__ = ["KINDS", "label", "run_kind", "evaluation_runs"]

#: the kinds of evaluation run: ``mlflow.genai.evaluate``'s traces, ``mlflow.models.evaluate``'s table, a long table
KINDS = ("genai", "classic", "table")


def label(run) -> str:
    """``'name' (id)``, or the id of a run without a name."""
    return f"'{run.info.run_name}' ({run.info.run_id})" if run.info.run_name else run.info.run_id


def run_kind(client, run, table_artifact: str | None = None) -> tuple[str, str | None] | str:
    """The run's kind (:data:`KINDS`) and the artifact it is read from, ``(kind, artifact)``, or what is wrong,
    naming the run: read from ``table_artifact`` when given, else a genai evaluation's run tag, a long table, one
    ``eval_results_table.json``, or the traces linked to the run."""
    if table_artifact is not None:
        if table_artifact not in mi.top_artifacts(client, run):
            return f"run {label(run)} has no artifact {table_artifact!r}"
        return ("classic" if table_artifact.endswith(mi.EVAL_TABLE) else "table"), table_artifact
    if run.data.tags.get(mi.RUN_TYPE_TAG) in mi.EVALUATION_RUN_TYPES:
        return "genai", None
    names = mi.top_artifacts(client, run)
    long = next((n for n in LONG_TABLES if n in names), None)
    if long is not None:
        return "table", long
    tables = sorted(n for n in names if n.endswith(mi.EVAL_TABLE))
    if len(tables) > 1:
        return f"run {label(run)} holds several evaluation tables ({', '.join(tables)}): name one (table_artifact)"
    if tables:
        return "classic", tables[0]
    if linked_traces(client, run, limit=1):
        return "genai", None
    return (f"run {label(run)} is not an evaluation run: no traces of mlflow.genai.evaluate, no {mi.EVAL_TABLE} "
            f"of mlflow.models.evaluate, no long table ({', '.join(LONG_TABLES)}; another one: table_artifact)")


def evaluation_runs(client, experiment_id: str, max_results: int = 100) -> list[dict]:
    """The evaluation runs among the experiment's latest ``max_results`` runs (the package's own runs left out),
    newest first, as :func:`.evaluations.read_evaluations` reads them: run id, name, kind, the artifact read (a
    table's), start time.  Reads only (a run's tags, its top-level artifacts, one trace)."""
    runs = client.search_runs([str(experiment_id)], f"tags.`{T.KIND}` IS NULL AND attributes.status != 'RUNNING'",
                              max_results=max_results, order_by=["attributes.start_time DESC"])
    out = []
    for run in runs:
        found = run_kind(client, run)
        if isinstance(found, tuple):
            out.append({"run_id": run.info.run_id, "name": run.info.run_name or "", "kind": found[0],
                        "artifact": found[1], "start_time": run.info.start_time})
    return out
