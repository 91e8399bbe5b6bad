"""The items of evaluation runs that hold a table: the per-example table ``mlflow.models.evaluate`` logs
(``eval_results_table.json``), and a plain long table any harness can log (:data:`LONG_TABLES`).

``eval_results_table.json`` is ``{"columns": [...], "data": [[...], ...]}`` (``MlflowClient.log_table``, pandas'
``orient="split"``): one row per example, its input columns, target and prediction, then ``<metric>/score`` (and
``<metric>/justification`` for a judge) per metric with per-example scores, and ``latency`` / ``token_count`` when
asked for (``models.evaluation.default_evaluator.DefaultEvaluator._log_eval_table``).  Its rows are the items, in
the order of the evaluated data: two runs on the same data pair row by row.

A long table has one row per (item, scorer[, repeat]): columns ``item``, ``scorer``, ``value``, and optionally
``repeat`` (an integer from 0; without it, an item's rows of one scorer are its repeats in the table's order),
``cluster``, ``suite`` and ``source``; any other column is a field of the item's inputs (``--pair-key
inputs.<column>``).  CSV, JSON (``mlflow.log_table``'s split layout, or a list of records) or Parquet.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from ..vocabulary import mlflow_internals as mi
from ..vocabulary.errors import InputError
from .evalitems import Units

__all__ = ["LONG_TABLES", "LONG_COLUMNS", "TABLE_FORMATS", "read_eval_table", "read_long_table", "scalar"]

#: the artifacts read as a run's long table when none is named, the first found
LONG_TABLES = ("eval_scores.json", "eval_scores.csv", "eval_scores.parquet")
#: a long table's required and optional columns
LONG_COLUMNS = {"required": ("item", "scorer", "value"), "optional": ("repeat", "cluster", "suite", "source")}
TABLE_FORMATS = (".csv", ".json", ".parquet")
_SCORE, _JUSTIFICATION, _PLAIN_METRICS = "/score", "/justification", ("latency", "token_count")


def read_eval_table(client, run, name: str) -> Units:
    """The run's ``mlflow.models.evaluate`` table ``name`` as units (one a row, item ``row <i>``) and the per-row
    values of its metrics (``CODE``, or ``LLM_JUDGE`` for a metric with justifications)."""
    frame = _frame(client, run, name)
    prefix = name[: -len(mi.EVAL_TABLE)]
    metrics = {c: c[: -len(_SCORE)] for c in frame.columns if c.endswith(_SCORE)}
    metrics.update({f"{prefix}{m}": f"{prefix}{m}" for m in _PLAIN_METRICS if f"{prefix}{m}" in frame.columns})
    if not metrics:
        raise InputError(f"run {run.info.run_id}: its {name} holds no per-example metric (no '<metric>/score' "
                         f"column); columns: {', '.join(map(str, frame.columns))}")
    inputs = [c for c in frame.columns if c not in metrics and not c.endswith(_JUSTIFICATION)]
    units, scores, errored = [], [], {}
    for i, row in enumerate(frame.to_dict("records")):
        unit = f"row {i}"
        units.append({"unit": unit, "order": i, "inputs": {c: row[c] for c in inputs}, "tags": {},
                      "default_item": unit, "case": None, "cluster": None, "suite": None})
        for column, scorer in metrics.items():
            value = scalar(row[column])
            if value is None:
                errored[scorer] = errored.get(scorer, 0) + 1
            else:
                source = "LLM_JUDGE" if f"{scorer}{_JUSTIFICATION}" in frame.columns else "CODE"
                scores.append((unit, scorer, value, source))
    return Units.of(units, scores, errored)


def read_long_table(client, run, name: str) -> Units:
    """The run's long table ``name`` as units (one an (item, repeat)) and its values."""
    frame = _frame(client, run, name)
    where = f"run {run.info.run_id}: its long table {name}"
    absent = [c for c in LONG_COLUMNS["required"] if c not in frame.columns]
    if absent:
        raise InputError(f"{where} lacks the column(s) {', '.join(absent)}; it has "
                         f"{', '.join(map(str, frame.columns)) or 'none'} (columns: item, scorer, value[, repeat, "
                         "cluster, suite, source])")
    frame = frame.assign(item=frame["item"].map(_text), scorer=frame["scorer"].map(_text))
    frame["repeat"] = _repeats(frame, where)
    extra = [c for c in frame.columns if c not in (*LONG_COLUMNS["required"], "repeat")]
    units, scores, errored, seen = [], [], {}, set()
    for row in frame.to_dict("records"):
        unit = f"{row['item']}\x1f{row['repeat']}"
        if unit not in seen:
            seen.add(unit)
            units.append({"unit": unit, "order": row["repeat"], "inputs": {c: row[c] for c in extra}, "tags": {},
                          "default_item": row["item"] or None, "case": None,
                          "cluster": _text(row.get("cluster")), "suite": _text(row.get("suite"))})
        value = scalar(row["value"])
        if value is None:
            errored[row["scorer"]] = errored.get(row["scorer"], 0) + 1
        else:
            scores.append((unit, row["scorer"], value, _text(row.get("source"))))
    return Units.of(units, scores, errored)


def _repeats(frame: pd.DataFrame, where: str) -> pd.Series:
    """Each row's repeat: the ``repeat`` column (integers from 0, one row per (item, repeat, scorer)), or the
    row's rank among the rows of its (item, scorer)."""
    if "repeat" not in frame.columns:
        return frame.groupby(["item", "scorer"], sort=False).cumcount()
    repeat = pd.to_numeric(frame["repeat"], errors="coerce")
    bad = frame.index[repeat.isna() | (repeat < 0) | (repeat % 1 != 0)]
    if len(bad):
        raise InputError(f"{where}: 'repeat' must be an integer from 0; rows {', '.join(map(str, bad[:10]))} "
                         f"hold {', '.join(repr(frame.loc[i, 'repeat']) for i in bad[:10])}")
    repeat = repeat.astype("int64")
    twice = frame.assign(repeat=repeat).duplicated(["item", "repeat", "scorer"], keep=False)
    if twice.any():
        shown = frame.assign(repeat=repeat)[twice].drop_duplicates(["item", "repeat", "scorer"]).head(10)
        raise InputError(f"{where} holds several rows of one (item, repeat, scorer): "
                         + "; ".join(f"item {r.item!r}, repeat {r.repeat}, scorer {r.scorer!r}"
                                     for r in shown.itertuples()))
    return repeat


def _frame(client, run, name: str) -> pd.DataFrame:
    """The table artifact ``name`` of the run, read by its extension."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise InputError(f"the table artifact {name!r} must end in {', '.join(TABLE_FORMATS)}")
    with tempfile.TemporaryDirectory(prefix="bayescompare-evals-") as tmp:
        path = mi.download_top_artifact(client, run, name, tmp)
        if path is None:
            raise InputError(f"run {run.info.run_id} has no artifact {name!r}")
        try:
            return _parse(path, suffix)
        except (ValueError, TypeError, ImportError, OSError) as exc:
            raise InputError(f"run {run.info.run_id}: its artifact {name!r} cannot be read as a table "
                             f"({type(exc).__name__}: {str(exc)[:200]})") from None


def _parse(path: str, suffix: str) -> pd.DataFrame:
    if suffix == ".csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    if suffix == ".parquet":
        return pd.read_parquet(path)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, dict) and "columns" in data and "data" in data:
        return pd.DataFrame(data["data"], columns=data["columns"])
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return pd.DataFrame.from_records(data)
    raise ValueError('expected {"columns": [...], "data": [[...], ...]} or a list of records')


def scalar(value: Any) -> Any:
    """A table's value as Python reads it: numpy scalars as Python's, CSV text as a bool (``true``/``false``), an
    int or a float when it reads as one; None for a missing value (None, NaN, empty text)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            number = kind(text)
        except ValueError:
            continue
        return None if number != number else number  # NaN
    return value


def _text(value: Any) -> str:
    """A name column's value as text ('' when missing)."""
    value = scalar(value) if not isinstance(value, str) else value
    return "" if value is None else str(value)
