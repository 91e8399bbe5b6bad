"""The score reader of every ranking: :func:`read_scores` turns a table of scores (tidy, wide, or per-dataset means)
into :class:`Scores`, oriented so that greater is better, every problem reported at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.options import ModelsOptions
from .common import HEADER, listed

__all__ = ["Scores", "read_scores", "pick_models"]


@dataclass(frozen=True)
class Scores:
    """Scores of K models on q datasets, greater is better: ``blocks[d]`` is an array (rows, K) of dataset d, its rows
    paired across the models (folds; a single row when only the means are known), NaN where a score is missing (a
    model missing on a dataset: its whole column).  ``fold_counts``: each dataset's folds per repeat of its
    cross-validation, None where unknown (ρ = 1/folds of the hierarchical and joint models); ``folds`` the one
    dataset's, of the joint model (:mod:`.joint`); ``pair_tests``: see the field."""

    models: list[str]
    datasets: list[str]
    blocks: list[np.ndarray]
    folds: int | None = None
    fold_counts: tuple[int | None, ...] = ()
    #: the pairs already fitted alone by the hierarchical model (a matrix's pair tests), by pair: the hierarchical
    #: ranking takes their rows from these instead of fitting them again (:func:`.hierarchical_k.engine.pair_tests`)
    pair_tests: Any = None

    def lacking(self) -> dict[str, list[str]]:
        """The datasets on which each model has no score, by model (the models that lack none left out)."""
        out = {m: [d for d, b in zip(self.datasets, self.blocks) if np.isnan(b[:, j]).all()]
               for j, m in enumerate(self.models)}
        return {m: ds for m, ds in out.items() if ds}


def read_scores(data, *, models=None, dataset: str | None = None, greater_is_better: bool = True,
                drop_incomplete: bool = False, skip_missing: bool = False, folds: int | None = None) -> Scores:
    """The scores of :func:`.engine.rank_models`'s ``data``, checked: every problem is reported at once.  A model
    without scores on a dataset is kept as a NaN column (the model that ranks decides: :func:`.engine.ranking_model`);
    a model with some of a dataset's scores missing (NaN, or no row) is an error unless ``drop_incomplete`` (drop the
    dataset, with a warning) or ``skip_missing`` (keep them as NaN: :func:`.bbt.engine.outcomes` counts no game
    there).  On one dataset, ``folds`` (or the table's own, see :func:`.engine.rank_models`) is kept for the joint
    model."""
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"scores must be a pandas DataFrame (tidy, wide or per-dataset means); got "
                         f"{type(data).__name__}")
    columns = set(map(str, data.columns))
    rows = _tidy_rows(data, dataset or "dataset") if {"model", "score"} <= columns else _wide_rows(data, dataset)
    problems: list[str] = []
    names = pick_models(rows, models, problems)
    rows = rows[rows["model"].isin(names)]
    problems += _bad_values(rows)
    grid = rows.pivot(index=["dataset", "row"], columns="model", values="score").reindex(columns=names)
    datasets = list(pd.unique(rows["dataset"]))
    lacking, lines, partial = _missing(grid, rows, names)
    if lacking and skip_missing:
        log.warning("%d dataset(s) lack some scores; pairs count no game where one is missing (Bradley-Terry's "
                    "rule for missing results): %s", len(lacking), listed(lacking))
    elif lacking and drop_incomplete:
        log.warning("dropped %d dataset(s) on which a model lacks scores: %s", len(lacking), listed(lacking))
        datasets = [d for d in datasets if d not in lacking]
    elif partial:
        problems += [*lines, "drop_incomplete=True drops those datasets; skip_missing=True counts no game where a "
                             "score is missing (the paper's rule for missing results)"]
    if not problems and not datasets:
        problems.append("a ranking needs scores on a dataset at least; every dataset was dropped")
    if problems:
        raise InputError(problems, header=HEADER)
    sign = 1.0 if greater_is_better else -1.0
    blocks = [sign * grid.loc[d].to_numpy(dtype=float) for d in datasets]
    counts = tuple(_fold_count(part, folds) for part in _dataset_parts(data, dataset, datasets))
    return Scores(names, datasets, blocks, counts[0] if len(datasets) == 1 else None, counts)


def _dataset_parts(data: pd.DataFrame, dataset: str | None, datasets: list[str]) -> list[pd.DataFrame]:
    """The rows of ``data`` of each dataset (the whole table when it has no dataset column: a means table)."""
    column = dataset or "dataset"
    if column not in data.columns:
        return [data.iloc[:0]] * len(datasets)
    names = data[column].astype(str)
    return [data[names == d] for d in datasets]


def _fold_count(data: pd.DataFrame, folds: int | None) -> int | None:
    """The folds of one dataset's cross-validation: ``folds``, else the table's ``folds`` column (one value), else
    the count of fold labels when a ``repeat`` column pairs them; None when unknown."""
    if folds is not None:
        return int(folds)
    if "folds" in data.columns:
        given = pd.to_numeric(data["folds"], errors="coerce").dropna().unique()
        return int(given[0]) if len(given) == 1 else None
    if {"repeat", "fold"} <= set(data.columns) and len(data):
        return int(data["fold"].nunique())
    return None


def _tidy_rows(data: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """dataset, model, row (the fold's key), score (NaN: missing) and bad (inf or not a number) of a tidy table."""
    if dataset not in data.columns:
        raise InputError(f"no dataset column {dataset!r} in the tidy table (columns: "
                         f"{', '.join(map(str, data.columns))}); name it with dataset=", header=HEADER)
    data = data.reset_index(drop=True)
    keys = [c for c in ("repeat", "fold") if c in data.columns]
    score = pd.to_numeric(data["score"], errors="coerce")
    rows = pd.DataFrame({"dataset": data[dataset].astype(str), "model": data["model"].astype(str),
                         "row": list(zip(*(data[k] for k in keys))) if keys else 0, "score": score,
                         "bad": np.isinf(score) | (score.isna() & data["score"].notna())})
    twice = rows[rows.duplicated(["dataset", "model", "row"], keep=False)]
    if len(twice):
        found = twice.groupby("model", sort=False)["dataset"].unique()
        raise InputError([f"model {m!r} has several scores for one {'/'.join(keys) or 'dataset'} on "
                          f"{listed(list(ds))}" for m, ds in found.items()], header=HEADER)
    return rows


def _wide_rows(data: pd.DataFrame, dataset: str | None) -> pd.DataFrame:
    """The rows of :func:`_tidy_rows` from a wide table: its rows are folds paired by their order within a dataset;
    without a dataset column each row is one dataset, named by the index."""
    if dataset is not None and dataset not in data.columns:
        raise InputError(f"no dataset column {dataset!r} (columns: {', '.join(map(str, data.columns))})",
                         header=HEADER)
    frame = data.rename(columns=str)
    if dataset is None:
        if not frame.index.is_unique:
            raise InputError("the rows' index repeats names: give the dataset column with dataset=", header=HEADER)
        frame = frame.assign(_dataset=frame.index.astype(str), _row=0)
    else:
        frame = frame.assign(_dataset=frame[dataset].astype(str)).drop(columns=dataset)
        frame = frame.assign(_row=frame.groupby("_dataset", sort=False).cumcount())
    texts = [c for c in frame.columns if c not in ("_dataset", "_row") and not pd.api.types.is_numeric_dtype(frame[c])]
    if texts:
        hint = "; name the dataset column with dataset=" if dataset is None else ""
        raise InputError([f"column {c!r} is not numeric: every column but the dataset's must hold one model's "
                          f"scores{hint}" for c in texts], header=HEADER)
    long = frame.melt(id_vars=["_dataset", "_row"], var_name="model", value_name="score")
    long = long.rename(columns={"_dataset": "dataset", "_row": "row"}).astype({"score": float})
    return long.assign(bad=np.isinf(long["score"]))


def pick_models(rows: pd.DataFrame, models, problems: list[str]) -> list[str]:
    """The models ranked: those asked (``models``) among those found in ``rows``, else every one found, in order of
    appearance; what is wrong is added to ``problems`` (a ranking needs three models at least)."""
    found = list(pd.unique(rows["model"]))
    try:
        asked = list(ModelsOptions(models=models or ()).models)
    except InputError as exc:
        problems += exc.problems
        asked = []
    unknown = [m for m in asked if m not in found]
    if unknown:
        problems.append(f"models not in the data: {', '.join(unknown)} (found: {', '.join(found)})")
    names = [m for m in asked if m in found] or found
    if len(names) < 3:
        problems.append(f"a ranking needs at least 3 models; got {len(names)} ({', '.join(names)}): compare two "
                        "models with the two-model test (the command `compare`; in Python, compare_runs or "
                        "hierarchical_test)")
    return names


def _bad_values(rows: pd.DataFrame) -> list[str]:
    """One line per model with infinite or non-numeric scores (always an error, unlike a NaN)."""
    return [f"model {model!r} has infinite or non-numeric scores on {listed(pd.unique(part['dataset']))}"
            for model, part in rows[rows["bad"]].groupby("model", sort=False)]


def _missing(grid: pd.DataFrame, rows: pd.DataFrame, names: list[str]) -> tuple[list[str], list[str], bool]:
    """The datasets on which a model lacks a score (no row, or NaN), the lines that say so, per model, and whether a
    model lacks some of a dataset's scores but not all."""
    size = grid.groupby(level="dataset", sort=False).size()

    def count(part: pd.DataFrame) -> pd.DataFrame:
        table = part.groupby(["dataset", "model"], sort=False).size().unstack(fill_value=0)
        return table.reindex(index=size.index, columns=names, fill_value=0)

    given, nan = count(rows), count(rows[rows["score"].isna() & ~rows["bad"]])
    lines = []
    for model in names:
        none, some, nans = given[model] == 0, (given[model] > 0) & (given[model] < size), nan[model] > 0
        if none.any():
            lines.append(f"model {model!r} has no scores on {none.sum()} of {len(size)} datasets: "
                         f"{listed(size.index[none])}")
        if some.any():
            lines.append(f"model {model!r} lacks rows (folds) on {some.sum()} dataset(s): "
                         f"{listed(f'{d} ({given.at[d, model]} of {size[d]} rows)' for d in size.index[some])}")
        if nans.any():
            lines.append(f"model {model!r} has NaN scores on {nans.sum()} dataset(s): "
                         f"{listed(f'{d} ({nan.at[d, model]} of {size[d]} rows)' for d in size.index[nans])}")
    gaps = given.lt(size, axis=0) | (nan > 0)
    partial = gaps & (given > 0) & (nan < given)
    return list(size.index[gaps.any(axis=1)]), lines, bool(partial.to_numpy().any())

