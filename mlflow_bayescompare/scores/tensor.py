"""The CV tensor: paired per-fold score differences of model A and model B on each dataset, validated; and the
per-dataset means of two models (the means layout, or a tensor's folds averaged), validated the same way."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..vocabulary.console import log
from ..vocabulary.errors import InputError
from .tidy_checks import (
    Problem,
    Rows,
    check_duplicate_runs,
    check_duplicate_scores,
    check_nonfinite,
    check_one_model,
    check_types,
    find_problems,
    ranges,
)

__all__ = ["TABLE_COLUMNS", "MEANS_COLUMNS", "CVTensor", "DatasetMeans", "from_arrays", "from_tidy", "dataset_means",
           "means_from_tidy", "FOLDS_ONE", "left_out_note"]

TABLE_COLUMNS = ["dataset", "repeat", "fold", "score_a", "score_b", "diff", "run_id_a", "run_id_b"]
MEANS_COLUMNS = ["dataset", "score_a", "score_b", "diff", "n", "run_id_a", "run_id_b"]
_SHOWN = 10  # datasets named in one message
# problem kinds that make a dataset incomplete (dropped by drop_incomplete=True); others always raise
_DROPPABLE = {"one_model", "folds", "fold_count", "nonfinite", "too_few"}

#: Why one fold cannot be used, in the words every message about it uses.
FOLDS_ONE = ("folds = 1 makes ρ = 1/folds = 1: the scores would be perfectly correlated and carry no information "
             "about variability; the test needs k-fold cross-validation (k >= 2), and for independent repeated "
             "hold-out splits give rho instead (e.g. rho=0, or n_test/n_total)")



@dataclass
class CVTensor:
    """Per-dataset differences ``score_a - score_b`` in run-major order (repeat * folds + fold); ``left_out``: the
    datasets of either model that the pair does not compare, each with why (``no scores of 'b'``)."""

    model_a: str
    model_b: str
    datasets: list[str]
    diffs: list[np.ndarray]
    folds: list[int | None]
    metric: str | None = None
    table: pd.DataFrame | None = None
    left_out: dict[str, str] = field(default_factory=dict)


@dataclass
class DatasetMeans:
    """One score per dataset for model A and model B, and their differences ``diffs = scores_a - scores_b``.

    ``scores_a``/``scores_b`` are NaN where only the differences were given.  ``table`` has one row per dataset
    (``MEANS_COLUMNS``): the two scores, the difference, ``n`` (the paired scores averaged: 1 in the means layout)
    and the source runs.  ``left_out`` as :class:`CVTensor`'s.
    """

    model_a: str
    model_b: str
    datasets: list[str]
    scores_a: np.ndarray
    scores_b: np.ndarray
    diffs: np.ndarray
    table: pd.DataFrame
    metric: str | None = None
    left_out: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- arrays


def from_arrays(scores_a=None, scores_b=None, *, diffs=None, datasets=None, folds=None,
                model_a="A", model_b="B") -> CVTensor:
    """Build a tensor from 2-D arrays (datasets x scores) or lists of 1-D arrays, or from ``diffs=``."""
    problems: list[str] = []
    if str(model_a) == str(model_b):
        problems.append(f"model_a and model_b are both '{model_a}'; compare two different models")
    if diffs is not None and (scores_a is not None or scores_b is not None):
        raise InputError("pass either scores_a and scores_b, or diffs=, not both")
    if diffs is None and (scores_a is None or scores_b is None):
        raise InputError("pass both scores_a and scores_b, or diffs=")

    if diffs is not None:
        rows_d = _rows(diffs, "diffs", problems)
        rows_a = rows_b = None
        q = len(rows_d)
    else:
        rows_a, rows_b = _rows(scores_a, "scores_a", problems), _rows(scores_b, "scores_b", problems)
        q = len(rows_a)
        if len(rows_a) != len(rows_b):
            problems.append(f"scores_a has {len(rows_a)} datasets but scores_b has {len(rows_b)}")
    names = [f"dataset {i}" for i in range(q)] if datasets is None else [str(d) for d in datasets]
    if len(names) != q:
        problems.append(f"datasets names {len(names)} labels for {q} datasets")
    elif len(set(names)) != q:
        dup = sorted({n for n in names if names.count(n) > 1})
        problems.append(f"dataset names repeat: {', '.join(map(repr, dup))}")
    fold_list = _fold_list_arg(folds, names, problems)
    if problems:
        raise InputError(problems, header="Cannot build the CV tensor:")

    out_diffs = []
    for i, name in enumerate(names):
        if rows_a is not None:
            a, b = rows_a[i], rows_b[i]
            if len(a) != len(b):
                problems.append(f"dataset '{name}': {len(a)} scores for '{model_a}' but {len(b)} for '{model_b}'")
                continue
            d = a - b
            bad = np.flatnonzero(~np.isfinite(a) | ~np.isfinite(b))
            label = "score"
        else:
            d = rows_d[i]
            bad = np.flatnonzero(~np.isfinite(d))
            label = "diff"
        if bad.size:
            problems.append(f"dataset '{name}': non-finite {label} at positions {ranges(bad)}")
        if len(d) < 2:
            problems.append(f"dataset '{name}': {len(d)} score(s); need at least 2")
        k = fold_list[i]
        if k is not None and len(d) % k:
            problems.append(f"dataset '{name}': {len(d)} scores is not a whole number of repeats of {k} folds")
        out_diffs.append(d)
    if problems:
        raise InputError(problems, header="Cannot build the CV tensor:")
    table = _arrays_table(names, out_diffs, fold_list, rows_a, rows_b)
    return CVTensor(str(model_a), str(model_b), names, out_diffs, fold_list, table=table)


def _rows(x, what: str, problems: list[str]) -> list[np.ndarray]:
    """Split a 2-D array or a list of 1-D arrays into float64 rows; note non-numeric or mis-shaped input."""
    if isinstance(x, (pd.DataFrame, np.ndarray)) or not hasattr(x, "__len__"):
        arr = np.asarray(x)
        if arr.ndim != 2:
            problems.append(f"{what} must be 2-D (datasets x scores) or a list of 1-D arrays; got shape {arr.shape}")
            return []
        x = list(arr)
    rows = []
    for i, row in enumerate(x):
        try:
            r = np.asarray(row, dtype=np.float64)
        except (TypeError, ValueError):
            problems.append(f"{what}[{i}] holds non-numeric values")
            r = np.array([])
        if r.ndim != 1:
            problems.append(f"{what}[{i}] must be 1-D; got shape {r.shape}")
            r = r.ravel()
        rows.append(r)
    return rows


def _fold_list_arg(folds, names: list[str], problems: list[str]) -> list[int | None]:
    """Normalise ``folds`` (None, int, per-dataset list, or dict dataset -> int) to a per-dataset list."""
    if folds is None:
        return [None] * len(names)
    if isinstance(folds, dict):
        vals = [folds.get(n) for n in names]
    elif np.ndim(folds) == 0:
        vals = [folds] * len(names)
    else:
        vals = list(folds)
        if len(vals) != len(names):
            problems.append(f"folds has {len(vals)} entries for {len(names)} datasets")
            return [None] * len(names)
    out = []
    for name, k in zip(names, vals):
        if k is not None and (not float(k).is_integer() or int(k) < 2):
            why = f" ({FOLDS_ONE})" if k == 1 else ""
            problems.append(f"dataset '{name}': folds must be an integer >= 2, got {k!r}{why}")
            k = None
        out.append(None if k is None else int(k))
    return out


def _arrays_table(names, diffs, folds, rows_a, rows_b) -> pd.DataFrame:
    n = np.array([len(d) for d in diffs])
    pos = np.concatenate([np.arange(m) for m in n]) if len(n) else np.array([], dtype=int)
    k = np.repeat([f if f else m for f, m in zip(folds, n)], n).astype(int)
    nan = np.full(pos.size, np.nan)
    return pd.DataFrame({
        "dataset": np.repeat(names, n), "repeat": pos // k, "fold": pos % k,
        "score_a": np.concatenate(rows_a) if rows_a is not None and n.size else nan,
        "score_b": np.concatenate(rows_b) if rows_b is not None and n.size else nan,
        "diff": np.concatenate(diffs) if n.size else nan,
        "run_id_a": None, "run_id_b": None,
    })


# ---------------------------------------------------------------------------------------------- tidy


def from_tidy(df: pd.DataFrame, model_a: str, model_b: str, *, folds=None, dataset_col="dataset",
              model_col="model", repeat_col="repeat", fold_col="fold", score_col="score",
              run_id_col="run_id", time_col=None, folds_col="folds", drop_incomplete=False,
              on_duplicate="error", say_left_out=True) -> CVTensor:
    """Pair two models' scores from a tidy table (one row per dataset, model, repeat, fold).

    ``repeat_col``, ``run_id_col``, ``time_col`` and ``folds_col`` (the run's fold count, e.g. from the
    ``cv_folds`` param) are used when present.  Without a repeat column, ``fold`` is the global index
    ``repeat * folds + fold`` and is split when the fold count is known.  ``folds`` is an int or a dict
    dataset -> int.  ``on_duplicate="latest"`` keeps the latest run (by ``time_col``) per model and dataset.
    The datasets only one of the two models has are left out (``left_out``, with a warning unless ``say_left_out``
    is false: a matrix says once what each model lacks); none shared is an error.
    """
    cols = _Columns(dataset_col, model_col, repeat_col, fold_col, score_col, run_id_col, time_col, folds_col)
    rows = _normalise(df, str(model_a), str(model_b), cols, folds=folds, on_duplicate=on_duplicate)
    rows, left_out = _shared(rows, say_left_out)
    rows, problems = find_problems(rows)
    return replace(_pair(_keep_complete(rows, problems, drop_incomplete)), left_out=left_out)


@dataclass(frozen=True)
class _Columns:
    """Column names of a tidy score table; ``repeat``, ``run_id``, ``time`` and ``folds`` are used when present."""

    dataset: str
    model: str
    repeat: str
    fold: str
    score: str
    run_id: str
    time: str | None
    folds: str


def _normalise(df, model_a: str, model_b: str, cols: _Columns, *, folds=None, on_duplicate="error") -> Rows:
    """The rows of ``model_a`` and ``model_b``, with numeric repeat, fold, score and fold count ``k``.

    ``folds`` (an int or a dict dataset -> int) fills ``k`` where the rows carry none; ``on_duplicate="latest"``
    keeps the latest run (by ``cols.time``) per model and dataset.  Unusable input raises :class:`InputError`.
    """
    _check_setup(df, model_a, model_b, cols, on_duplicate)
    models = df[cols.model].astype(str)
    sel = models.isin([model_a, model_b]).to_numpy()

    def column(name, default):
        return df[name].to_numpy()[sel] if name and name in df.columns else default

    d = pd.DataFrame({"dataset": df[cols.dataset].astype(str).to_numpy()[sel], "model": models.to_numpy()[sel],
                      "raw_repeat": column(cols.repeat, 0), "raw_fold": column(cols.fold, None),
                      "raw_score": column(cols.score, None), "run_id": column(cols.run_id, None),
                      "time": column(cols.time, 0), "raw_k": column(cols.folds, np.nan)})
    d["repeat"], d["bad_repeat"] = _as_int(d["raw_repeat"])
    d["fold"], d["bad_fold"] = _as_int(d["raw_fold"])
    d["score"] = pd.to_numeric(d["raw_score"], errors="coerce").astype(np.float64)
    d["bad_score"] = d["score"].isna() & d["raw_score"].notna()
    d["given_k"] = pd.to_numeric(d["raw_k"], errors="coerce").astype(float).fillna(_folds_arg(d["dataset"], folds))
    d["bad_k"] = d["given_k"].notna() & ((d["given_k"] % 1 != 0) | (d["given_k"] < 2))
    d["k"] = d["given_k"].where(~d["bad_k"])
    datasets = list(pd.unique(d["dataset"]))  # in order of appearance
    if on_duplicate == "latest" and cols.run_id in df.columns:
        d = _keep_latest(d)
    return Rows(d, model_a, model_b, datasets, cols.repeat in df.columns, cols.run_id in df.columns)


def _check_setup(df, model_a: str, model_b: str, cols: _Columns, on_duplicate) -> None:
    """Options, columns and models that make any comparison impossible."""
    if on_duplicate not in ("error", "latest"):
        raise InputError(f"on_duplicate must be 'error' or 'latest', got {on_duplicate!r}")
    if on_duplicate == "latest" and not cols.time:
        raise InputError("on_duplicate='latest' needs time_col, the column that orders the runs")
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"expected a pandas DataFrame, got {type(df).__name__}")
    need = [cols.dataset, cols.model, cols.fold, cols.score] + ([cols.time] if cols.time else [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(map(repr, missing))}; "
                         f"columns present: {', '.join(map(repr, map(str, df.columns)))}")
    present = list(pd.unique(df[cols.model].astype(str)))
    problems = []
    if model_a == model_b:
        problems.append(f"model_a and model_b are both '{model_a}'; compare two different models")
    for m in dict.fromkeys((model_a, model_b)):
        if m not in present:
            problems.append(f"model '{m}' has no scores; models present: {', '.join(present) or 'none'}")
    if problems:
        raise InputError(problems, header=f"Cannot compare '{model_a}' with '{model_b}':")


def _folds_arg(datasets: pd.Series, folds) -> pd.Series:
    """The ``folds`` argument (None, an int, or a dict dataset -> int) as a fold count per row."""
    if isinstance(folds, dict):
        folds = datasets.map({str(key): v for key, v in folds.items()})
    return pd.to_numeric(pd.Series(folds, index=datasets.index), errors="coerce").astype(float)


def _as_int(raw: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Integer values (-1 where not an integer) and the mask of those that are not."""
    v = pd.to_numeric(raw, errors="coerce")
    bad = v.isna() | (v % 1 != 0)
    return v.where(~bad, -1).astype(np.int64), bad


def _shared(rows: Rows, say: bool = True) -> tuple[Rows, dict[str, str]]:
    """The rows of the datasets both models have, and the others (dataset -> why it is left out), said once (when
    ``say``); none shared is an :class:`InputError` naming each model's datasets."""
    have = rows.d.groupby("dataset", sort=False)["model"].unique()
    lone = {ds: ms[0] for ds, ms in have.items() if len(ms) < 2}
    if not lone:
        return rows, {}
    a, b = rows.model_a, rows.model_b
    left_out = {ds: f"no scores of '{b if m == a else a}'" for ds, m in lone.items()}
    shared = [ds for ds in rows.datasets if ds not in lone]
    if not shared:
        own = {m: [ds for ds, owner in lone.items() if owner == m] for m in (a, b)}
        raise InputError(f"'{a}' and '{b}' share no dataset: '{a}' has {_names(own[a])}; '{b}' has "
                         f"{_names(own[b])}", header=f"Cannot compare '{a}' with '{b}':")
    if say:
        log.warning("%s vs %s: %s", a, b, left_out_note(left_out, shared))
    return replace(rows, d=rows.d[~rows.d["dataset"].isin(lone)], datasets=shared), left_out


def left_out_note(left_out: dict[str, str], compared: list[str]) -> str:
    """``left out 2 datasets only one of the two models has: 'x' (no scores of 'b'), …; compared on the 4 both
    have`` (on one shared dataset, which tests can take it)."""
    shown = ", ".join(f"'{ds}' ({why})" for ds, why in list(left_out.items())[:_SHOWN])
    more = f" and {len(left_out) - _SHOWN} more" if len(left_out) > _SHOWN else ""
    note = (f"left out {len(left_out)} dataset{'s' if len(left_out) > 1 else ''} only one of the two models has: "
            f"{shown}{more}; compared on the {len(compared)} both have")
    if len(compared) == 1:
        note += (f" ('{compared[0]}'): one dataset, on which the correlated t-test compares the folds (the "
                 "hierarchical and signed-rank tests need two or more)")
    return note


def _names(datasets: list[str]) -> str:
    shown = ", ".join(f"'{d}'" for d in datasets[:_SHOWN])
    return (shown + (f" and {len(datasets) - _SHOWN} more" if len(datasets) > _SHOWN else "")) or "none"


def _keep_latest(d: pd.DataFrame) -> pd.DataFrame:
    """The rows of the latest run (by ``time``) of each model on each dataset."""
    runs = d.groupby(["dataset", "model", "run_id"], sort=False)["time"].max().reset_index()
    latest = runs.sort_values("time", kind="stable").groupby(["dataset", "model"]).tail(1)
    return d[d["run_id"].isin(latest["run_id"])].reset_index(drop=True)


def _keep_complete(rows: Rows, problems: list[Problem], drop_incomplete: bool) -> Rows:
    """Raise on any problem; with ``drop_incomplete``, drop (with a warning) datasets whose problems are droppable."""
    messages = [p.message for p in problems]
    fatal = [p for p in problems if p.dataset is None or p.kind not in _DROPPABLE]
    if fatal or (problems and not drop_incomplete):
        raise InputError(messages, header=f"Cannot compare '{rows.model_a}' with '{rows.model_b}':",
                         footer=_ways_on(problems, drop_incomplete))
    if not problems:
        return rows
    bad = list(dict.fromkeys(p.dataset for p in problems))
    if len(bad) == len(rows.datasets):
        raise InputError(messages, header="Every dataset is incomplete; nothing to compare:")
    log.warning("dropping %d incomplete dataset(s): %s", len(bad), "; ".join(messages))
    gone = set(bad)
    return replace(rows, d=rows.d[~rows.d["dataset"].isin(gone)], datasets=[d for d in rows.datasets if d not in gone])


def _ways_on(problems: list[Problem], drop_incomplete: bool) -> list[str]:
    """What the user can do about ``problems``, said once however many there are."""
    kinds = {p.kind for p in problems}
    ways = []
    if "duplicate_runs" in kinds:
        ways.append("to keep the latest run of each model on a dataset: --latest on the command line, "
                    "on_duplicate='latest' in Python (or delete or filter out the extra runs)")
    if not drop_incomplete and kinds & _DROPPABLE:
        ways.append("to leave out the datasets with missing or extra folds or scores: --drop-incomplete on the "
                    "command line, drop_incomplete=True in Python")
    return ways


def _pair(rows: Rows) -> CVTensor:
    """The paired table (datasets in first-seen order, then repeat and fold) and the per-dataset differences."""
    a, b = rows.model_a, rows.model_b
    wide = rows.d.pivot(index=["dataset", "repeat", "fold"], columns="model", values=["score", "run_id"])
    wide = wide.reindex(rows.datasets, level="dataset")
    order = pd.Categorical(wide.index.get_level_values("dataset"), categories=rows.datasets)
    wide = wide.iloc[np.lexsort((wide.index.get_level_values("fold"),
                                 wide.index.get_level_values("repeat"), order.codes))]
    table = pd.DataFrame({
        "dataset": wide.index.get_level_values("dataset"),
        "repeat": wide.index.get_level_values("repeat").astype(np.int64),
        "fold": wide.index.get_level_values("fold").astype(np.int64),
        "score_a": wide[("score", a)].to_numpy(np.float64),
        "score_b": wide[("score", b)].to_numpy(np.float64),
        "run_id_a": wide[("run_id", a)].to_numpy(),
        "run_id_b": wide[("run_id", b)].to_numpy(),
    })
    table.insert(5, "diff", table["score_a"] - table["score_b"])
    diffs = [g.to_numpy(np.float64) for _, g in table.groupby("dataset", sort=False)["diff"]]
    folds = [None if np.isnan(rows.k.get(ds, np.nan)) else int(rows.k[ds]) for ds in rows.datasets]
    return CVTensor(a, b, list(rows.datasets), diffs, folds, table=table)


# ---------------------------------------------------------------------------------------------- means


def dataset_means(tensor: CVTensor) -> DatasetMeans:
    """Each dataset's paired scores averaged: the per-dataset means x̄_i of a (checked) per-fold tensor."""
    table = tensor.table.groupby("dataset", sort=False).agg(
        score_a=("score_a", "mean"), score_b=("score_b", "mean"), diff=("diff", "mean"), n=("diff", "size"),
        run_id_a=("run_id_a", "first"), run_id_b=("run_id_b", "first"),
    ).reindex(tensor.datasets).reset_index()[MEANS_COLUMNS]
    return DatasetMeans(tensor.model_a, tensor.model_b, list(tensor.datasets), table["score_a"].to_numpy(np.float64),
                        table["score_b"].to_numpy(np.float64), table["diff"].to_numpy(np.float64), table,
                        metric=tensor.metric, left_out=dict(tensor.left_out))


def means_from_tidy(df: pd.DataFrame, model_a: str, model_b: str, *, time_col: str | None = None,
                    drop_incomplete=False, on_duplicate="error", say_left_out=True) -> DatasetMeans:
    """Pair two models' single scores per dataset from a tidy table (columns dataset, model, fold, score and,
    when present, repeat, run_id and ``time_col``), as the means layout of :mod:`.collect` gives them.

    A dataset present for one model only is left out, as by :func:`from_tidy` (``say_left_out`` as there).  The
    checks are the tensor's that apply to one score per (model, dataset): NaN or infinite scores (dropped with a
    warning under ``drop_incomplete``), two runs or two scores for one (model, dataset) (``on_duplicate="latest"``
    keeps the latest run by ``time_col``); every problem is reported at once in one :class:`InputError`.
    """
    cols = _Columns("dataset", "model", "repeat", "fold", "score", "run_id", time_col, folds="")
    rows = _normalise(df, str(model_a), str(model_b), cols, on_duplicate=on_duplicate)
    rows, left_out = _shared(rows, say_left_out)
    problems = check_types(rows) + check_duplicate_runs(rows)
    problems += check_duplicate_scores(rows, skip={p.dataset for p in problems if p.kind == "duplicate_runs"})
    problems += check_nonfinite(rows) + check_one_model(rows)
    # one score per (model, dataset): the fold the messages would name is always 0
    problems = [replace(p, message=p.message.replace(" at fold 0", "")) for p in problems]
    rows = _keep_complete(rows, problems, drop_incomplete)
    means = dataset_means(_pair(replace(rows, k=pd.Series(np.nan, index=rows.datasets, dtype=float))))
    return replace(means, left_out=left_out)
