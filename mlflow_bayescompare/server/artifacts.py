"""Reading a finished job run's artifacts the way MLflow's ``/get-artifact`` reads them (the proxied artifact
root or the run's own repository: :func:`.mlflow_internals.run_artifact_location`): its ``report.html`` to serve
inline, the ranking table of a ranking or matrix run for the JSON API (a ranking on several metrics: each
metric's, in its folder ``<metric>/``), and a watch run's registered design and looks (:mod:`..runs.watchrun`)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
from mlflow.exceptions import MlflowException

from ..runs.watchrun import DESIGN_JSON, LOOKS_JSON
from ..vocabulary import mlflow_internals
from ..vocabulary.keys import metric_folder
from .requests import ApiError

__all__ = ["MAX_REPORT_BYTES", "read_report", "read_ranking", "read_versus", "read_watch", "RANKING_COLUMNS",
           "VERSUS_COLUMNS"]

MAX_REPORT_BYTES = 50 * 1024 * 1024
#: the columns of a ranking row in the JSON API, best first (``ranking.csv`` of a ranking run, or of a matrix run
#: of three or more models), those the ranking has: ``strength`` (BBT), the mean score (the joint model of one
#: dataset), P(best) on the next dataset and the effect (the hierarchical model), and the difference to the leader
#: with its interval
RANKING_COLUMNS = ("model", "p_best", "p_best_next", "mean_rank", "rank_low", "rank_high", "strength", "mean",
                   "effect", "diff_to_leader", "diff_low", "diff_high")
#: the columns of a row of a ranking's table against a reference (``versus.csv``, ``vs``; the joint model of one
#: dataset has no ``next_*``)
VERSUS_COLUMNS = ("model", "reference", "p_better", "p_rope", "p_worse", "next_better", "next_rope", "next_worse",
                  "difference", "hdi_low", "hdi_high", "verdict")


def read_report(run, name: str = "report.html") -> bytes:
    """The bytes of the finished run's ``report.html``; 404 when it has none, 413 when too large to show."""
    if run.info.status != "FINISHED":
        raise ApiError(404, "the comparison has not finished")
    with tempfile.TemporaryDirectory(prefix="bayescompare-report-") as tmp:
        path = Path(_download(run, name, tmp))
        if path.stat().st_size > MAX_REPORT_BYTES:
            raise ApiError(413, f"{name} is too large to show inline")
        return path.read_bytes()


def read_ranking(run, metric: str | None = None) -> list[dict] | None:
    """The ranking of a finished ranking or matrix run (``ranking.csv``; of one ``metric`` of a ranking on several:
    ``<metric>/ranking.csv``), best first; None when the run has none (a matrix of two models ranks no more than its
    pair)."""
    return _read_table(run, _in_folder("ranking.csv", metric), RANKING_COLUMNS, "p_best")


def read_versus(run, metric: str | None = None) -> list[dict] | None:
    """The table of every model against the reference of a finished hierarchical ranking asked with ``vs``
    (``versus.csv``, or ``<metric>/versus.csv``); None when the run has none."""
    return _read_table(run, _in_folder("versus.csv", metric), VERSUS_COLUMNS, "verdict")


def read_watch(run) -> dict | None:
    """A watch run's path for the JSON API: its registered design (``design.json``) and every look so far
    (``looks.json``: size, the three probabilities, the answers, the confidence sequence's bounds), the unit, the
    answer and the source runs read; None before its first look is kept."""
    with tempfile.TemporaryDirectory(prefix="bayescompare-watch-") as tmp:
        try:
            design = json.loads(Path(_download(run, DESIGN_JSON, tmp)).read_text(encoding="utf-8"))
            looks = json.loads(Path(_download(run, LOOKS_JSON, tmp)).read_text(encoding="utf-8"))
        except ApiError:
            return None
    keep = ("unit", "answer", "answer_words", "size", "available", "rows", "sources", "notes")
    return {"design": design, "fingerprint": looks.get("fingerprint"), **{k: looks.get(k) for k in keep}}


def _in_folder(name: str, metric: str | None) -> str:
    """The artifact ``name`` of the run, or of one metric of a decision on several (its folder)."""
    return name if metric is None else f"{metric_folder(metric)}/{name}"


def _read_table(run, name: str, known: tuple[str, ...], required: str) -> list[dict] | None:
    """The rows of the run's CSV table ``name``, its ``known`` columns only; None without it or its ``required``
    column."""
    texts = {"model": str, "reference": str, "verdict": str}
    with tempfile.TemporaryDirectory(prefix="bayescompare-table-") as tmp:
        try:
            table = pd.read_csv(_download(run, name, tmp), dtype=texts, keep_default_na=False,
                                na_values={c: [""] for c in known if c not in texts})
        except ApiError:
            return None
    if required not in table.columns:
        return None
    columns = [c for c in known if c in table.columns]
    table = table[columns].astype(object).where(table[columns].notna(), None)
    return table.to_dict(orient="records")


def _download(run, path: str, destination: str) -> str:
    repo, located = mlflow_internals.run_artifact_location(run, path)
    try:
        return mlflow_internals.download_artifact(repo, located, destination)
    except (OSError, MlflowException) as exc:
        raise ApiError(404, f"the run has no {Path(path).name} artifact") from exc
