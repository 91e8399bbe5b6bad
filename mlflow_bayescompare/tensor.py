"""The CV tensor: paired per-fold score differences of model A and model B on each dataset, validated."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import InputError

TABLE_COLUMNS = ["dataset", "repeat", "fold", "score_a", "score_b", "diff", "run_id_a", "run_id_b"]
# problem kinds that make a dataset incomplete (dropped by drop_incomplete=True); others always raise
_DROPPABLE = {"one_model", "folds", "fold_count", "nonfinite", "too_few"}


@dataclass
class CVTensor:
    """Per-dataset differences ``score_a - score_b`` in run-major order (repeat * folds + fold)."""

    model_a: str
    model_b: str
    datasets: list[str]
    diffs: list[np.ndarray]
    folds: list[int | None]
    metric: str | None = None
    table: pd.DataFrame | None = None


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
            problems.append(f"dataset '{name}': non-finite {label} at positions {_ranges(bad)}")
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
            why = (" (folds = 1 makes ρ = 1/folds = 1: the scores would be perfectly correlated; use k-fold "
                   "cross-validation, k >= 2, or pass rho directly for hold-out splits)") if k == 1 else ""
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
              on_duplicate="error") -> CVTensor:
    """Pair two models' scores from a tidy table (one row per dataset, model, repeat, fold).

    ``repeat_col``, ``run_id_col``, ``time_col`` and ``folds_col`` (the run's fold count, e.g. from the
    ``cv_folds`` param) are used when present.  Without a repeat column, ``fold`` is the global index
    ``repeat * folds + fold`` and is split when the fold count is known.  ``folds`` is an int or a dict
    dataset -> int.  ``on_duplicate="latest"`` keeps the latest run (by ``time_col``) per model and dataset.
    """
    model_a, model_b = str(model_a), str(model_b)
    t = _Tidy(df, model_a, model_b, folds, dataset_col, model_col, repeat_col, fold_col, score_col,
              run_id_col, time_col, folds_col, on_duplicate)
    t.check()
    problems = t.problems
    fatal = [msg for ds, kind, msg in problems if ds is None or kind not in _DROPPABLE]
    if fatal or (problems and not drop_incomplete):
        raise InputError([msg for _, _, msg in problems],
                         header=f"Cannot compare '{model_a}' with '{model_b}':")
    if problems:
        bad = list(dict.fromkeys(ds for ds, _, _ in problems))
        if len(bad) == len(t.datasets):
            raise InputError([m for _, _, m in problems], header="Every dataset is incomplete; nothing to compare:")
        warnings.warn(f"dropping {len(bad)} incomplete dataset(s): " + "; ".join(m for _, _, m in problems),
                      stacklevel=2)
        t.drop(bad)
    return t.tensor()


class _Tidy:
    """Working state of ``from_tidy``: normalised rows of the two models and the problems found."""

    def __init__(self, df, model_a, model_b, folds, dataset_col, model_col, repeat_col, fold_col,
                 score_col, run_id_col, time_col, folds_col, on_duplicate):
        self.a, self.b = model_a, model_b
        self.problems: list[tuple[str | None, str, str]] = []
        if on_duplicate not in ("error", "latest"):
            raise InputError(f"on_duplicate must be 'error' or 'latest', got {on_duplicate!r}")
        if on_duplicate == "latest" and not time_col:
            raise InputError("on_duplicate='latest' needs time_col, the column that orders the runs")
        if not isinstance(df, pd.DataFrame):
            raise InputError(f"expected a pandas DataFrame, got {type(df).__name__}")
        need = [dataset_col, model_col, fold_col, score_col] + ([time_col] if time_col else [])
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise InputError(f"missing column(s) {', '.join(map(repr, missing))}; "
                             f"columns present: {', '.join(map(repr, map(str, df.columns)))}")
        self.has_repeat = repeat_col in df.columns
        self.has_runs = run_id_col in df.columns
        models = df[model_col].astype(str)
        present = list(dict.fromkeys(models))
        global_problems = []
        if model_a == model_b:
            global_problems.append(f"model_a and model_b are both '{model_a}'; compare two different models")
        for m in dict.fromkeys((model_a, model_b)):
            if m not in present:
                global_problems.append(f"model '{m}' has no scores; models present: {', '.join(present) or 'none'}")
        if global_problems:
            raise InputError(global_problems, header=f"Cannot compare '{model_a}' with '{model_b}':")

        sel = models.isin([model_a, model_b]).to_numpy()
        d = pd.DataFrame({
            "dataset": df[dataset_col].astype(str).to_numpy()[sel],
            "model": models.to_numpy()[sel],
            "repeat": df[repeat_col].to_numpy()[sel] if self.has_repeat else 0,
            "fold": df[fold_col].to_numpy()[sel],
            "score": df[score_col].to_numpy()[sel],
            "run_id": df[run_id_col].to_numpy()[sel] if self.has_runs else None,
            "time": df[time_col].to_numpy()[sel] if time_col else 0,
            "k": pd.to_numeric(df[folds_col], errors="coerce").to_numpy()[sel]
            if folds_col in df.columns else np.nan,
        })
        self.datasets = list(dict.fromkeys(d["dataset"]))
        self.d = self._numeric(d)
        self._apply_folds_arg(folds)
        if on_duplicate == "latest" and self.has_runs:
            self._keep_latest()

    def add(self, ds, kind, msg):
        self.problems.append((ds, kind, msg))

    def _where(self, rows: pd.DataFrame) -> list[tuple[str, str]]:
        """(dataset, "dataset 'x' model 'y' repeat r fold f (run z)") for each row."""
        fold = " fold " + rows["label"].astype(str)
        rep = " repeat " + rows["repeat"].astype(str) if self.has_repeat else ""
        run = " (run " + rows["run_id"].astype(str) + ")" if self.has_runs else ""
        text = "dataset '" + rows["dataset"] + "' model '" + rows["model"] + "'" + rep + fold + run
        return list(zip(rows["dataset"], text))

    def _numeric(self, d: pd.DataFrame) -> pd.DataFrame:
        """Coerce repeat/fold to int and score to float; report values that are neither."""
        for col in ("repeat", "fold"):
            v = pd.to_numeric(d[col], errors="coerce")
            bad = v.isna() | (v % 1 != 0)
            for row in d.loc[bad, ["dataset", "model", col]].itertuples(index=False):
                self.add(row[0], "type", f"dataset '{row[0]}' model '{row[1]}': {col} {row[2]!r} is not an integer")
            d[col] = v.where(~bad, -1).astype(np.int64)
        d["label"] = d["fold"]
        score = pd.to_numeric(d["score"], errors="coerce")
        bad = score.isna() & d["score"].notna()
        for (ds, where), val in zip(self._where(d[bad]), d.loc[bad, "score"]):
            self.add(ds, "type", f"{where}: score {val!r} is not a number")
        d["score"] = score.astype(np.float64)
        return d

    def _apply_folds_arg(self, folds):
        """Fill the fold count ``k`` from ``folds`` (int or dict dataset -> int) where rows carry none."""
        if folds is None:
            return
        k = self.d["dataset"].map({str(key): v for key, v in folds.items()}) if isinstance(folds, dict) else folds
        k = pd.to_numeric(pd.Series(k, index=self.d.index), errors="coerce").astype(float)
        self.d["k"] = self.d["k"].fillna(k)

    def _keep_latest(self):
        runs = self.d.groupby(["dataset", "model", "run_id"], sort=False)["time"].max().reset_index()
        latest = runs.sort_values("time", kind="stable").groupby(["dataset", "model"]).tail(1)
        self.d = self.d[self.d["run_id"].isin(latest["run_id"])].reset_index(drop=True)

    # ------------------------------------------------------------------------------------------ checks

    def check(self):
        if self.has_runs:
            runs = self.d.groupby(["dataset", "model"], sort=False)["run_id"].unique()
            for (ds, m), ids in runs[runs.map(len) > 1].items():
                self.add(ds, "duplicate", f"dataset '{ds}': model '{m}' has {len(ids)} runs "
                         f"({', '.join(map(str, ids))}); delete or filter out the extra runs, "
                         "or keep the latest (on_duplicate='latest')")
        self._check_fold_counts()
        self._split_global_index()
        key = ["dataset", "model", "repeat", "fold"]
        dup = self.d[self.d.duplicated(key, keep="first")].drop_duplicates(key)
        two_runs = {ds for ds, kind, _ in self.problems if kind == "duplicate"}
        dup = dup[~dup["dataset"].isin(two_runs)]
        for ds, where in self._where(dup):
            self.add(ds, "duplicate", f"{where}: more than one score")
        # MLflow stores ±inf as ±1.7976931348623157e308 (the largest double): count that as infinite too
        score = self.d["score"]
        nonfinite = self.d[~np.isfinite(score) | (np.abs(score) >= np.finfo(np.float64).max)]
        for (ds, where), val in zip(self._where(nonfinite), nonfinite["score"]):
            shown = val if not np.isfinite(val) or np.isnan(val) else np.copysign(np.inf, val)
            note = "" if shown is val else f" (MLflow stores inf as {val:g})"
            self.add(ds, "nonfinite", f"{where}: score is {shown}{note}")
        self._check_pairs()

    def _check_fold_counts(self):
        """Fold count per (dataset, model): ``k`` if known, else (with repeats) the number of fold labels."""
        d = self.d
        k_bad = d["k"].notna() & ((d["k"] % 1 != 0) | (d["k"] < 2))
        for (ds, where), k in zip(self._where(d[k_bad]), d.loc[k_bad, "k"]):
            self.add(ds, "type", f"{where}: fold count {k:g} is not an integer >= 2")
        d.loc[k_bad, "k"] = np.nan
        g = d.groupby(["dataset", "model"], sort=False)
        counts = g["k"].agg(["min", "max"])
        if self.has_repeat:
            n_labels = g["fold"].nunique().astype(float)
            counts = counts.fillna({"min": n_labels, "max": n_labels})
        for (ds, m), row in counts[counts["min"] != counts["max"]].dropna().iterrows():
            self.add(ds, "fold_count", f"dataset '{ds}': model '{m}' runs disagree on the fold count "
                                       f"({row['min']:g} vs {row['max']:g})")
        per_ds = counts["max"].unstack("model").reindex(columns=[self.a, self.b])
        differ = per_ds.notna().all(axis=1) & (per_ds[self.a] != per_ds[self.b])
        for ds, row in per_ds[differ].iterrows():
            self.add(ds, "fold_count", f"dataset '{ds}': fold count differs: '{self.a}' uses "
                                       f"{row[self.a]:g} folds, '{self.b}' uses {row[self.b]:g}")
        self.k = per_ds.max(axis=1)  # dataset -> folds (NaN if unknown)

    def _split_global_index(self):
        """Without a repeat column, turn the global fold index into (repeat, fold) where folds are known."""
        if self.has_repeat:
            return
        k = self.d["dataset"].map(self.k)
        known = k.notna() & (self.d["fold"] >= 0)
        kk = k[known].astype(np.int64)
        self.d.loc[known, "repeat"] = self.d.loc[known, "fold"] // kk
        self.d.loc[known, "fold"] = self.d.loc[known, "fold"] % kk

    def _check_pairs(self):
        """Datasets present for one model only, missing or extra folds, fewer than 2 pairs."""
        d = self.d.drop_duplicates(["dataset", "model", "repeat", "fold"])
        models = d.groupby("dataset", sort=False)["model"].unique()
        for ds, ms in models[models.map(len) < 2].items():
            other = self.b if ms[0] == self.a else self.a
            self.add(ds, "one_model", f"dataset '{ds}': only model '{ms[0]}' has scores, '{other}' has none")
        d = d[d["dataset"].isin(models[models.map(len) == 2].index)]
        skip = {ds for ds, kind, _ in self.problems if kind == "fold_count"}
        d = d[~d["dataset"].isin(skip)]
        grid = self._expected_grid(d)
        have = d.assign(present=True).set_index(["dataset", "repeat", "fold", "model"])["present"]
        have = have.unstack("model").reindex(index=grid, columns=[self.a, self.b])
        for m in (self.a, self.b):
            lacks = have.index[have[m].isna()].to_frame(index=False)
            for ds, rows in lacks.groupby("dataset", sort=False):
                self.add(ds, "folds", f"dataset '{ds}': model '{m}' lacks {self._folds_text(ds, rows)}")
        extra = d[~d.set_index(["dataset", "repeat", "fold"]).index.isin(grid)]
        for (ds, m), rows in extra.groupby(["dataset", "model"], sort=False):
            self.add(ds, "folds", f"dataset '{ds}': model '{m}' has extra {self._folds_text(ds, rows)} "
                                  f"beyond {self.k[ds]:g} folds")
        n = have.notna().all(axis=1).groupby(level="dataset", sort=False).sum()
        for ds in n[n < 2].index:
            self.add(ds, "too_few", f"dataset '{ds}': {int(n[ds])} paired score(s); need at least 2")

    def _expected_grid(self, d: pd.DataFrame) -> pd.MultiIndex:
        """Per dataset: every repeat seen x every fold label seen (only the first k labels if k is known)."""
        names = ["dataset", "repeat", "fold"]
        parts = []
        for ds, rows in d.groupby("dataset", sort=False):
            folds = np.unique(rows["fold"])
            k = self.k.get(ds, np.nan)
            if not np.isnan(k):
                folds = np.arange(int(k)) if not self.has_repeat else folds[: int(k)]
            parts.append(pd.MultiIndex.from_product([[ds], np.unique(rows["repeat"]), folds], names=names))
        if not parts:
            return pd.MultiIndex.from_arrays([[], [], []], names=names)
        return parts[0].append(parts[1:])

    def _folds_text(self, ds: str, rows: pd.DataFrame) -> str:
        """'folds 3, 17' (global index, or labels of a single repeat) or 'repeat 1 folds 3-5; repeat 2 fold 1'."""
        if not self.has_repeat:
            k = self.k.get(ds, np.nan)
            g = rows["fold"] if np.isnan(k) else rows["repeat"] * int(k) + rows["fold"]
            return _plural("fold", np.sort(g.to_numpy()))
        reps = rows.groupby("repeat")["fold"].apply(np.sort)
        if len(reps) == 1 and self.d.loc[self.d["dataset"] == ds, "repeat"].nunique() == 1:
            return _plural("fold", reps.iloc[0])
        return "; ".join(f"repeat {r} {_plural('fold', f)}" for r, f in reps.items())

    def drop(self, datasets: list[str]):
        self.d = self.d[~self.d["dataset"].isin(datasets)]
        self.datasets = [ds for ds in self.datasets if ds not in set(datasets)]

    # ------------------------------------------------------------------------------------------ output

    def tensor(self) -> CVTensor:
        wide = self.d.pivot(index=["dataset", "repeat", "fold"], columns="model", values=["score", "run_id"])
        wide = wide.reindex(self.datasets, level="dataset")
        order = pd.Categorical(wide.index.get_level_values("dataset"), categories=self.datasets)
        wide = wide.iloc[np.lexsort((wide.index.get_level_values("fold"),
                                     wide.index.get_level_values("repeat"), order.codes))]
        table = pd.DataFrame({
            "dataset": wide.index.get_level_values("dataset"),
            "repeat": wide.index.get_level_values("repeat").astype(np.int64),
            "fold": wide.index.get_level_values("fold").astype(np.int64),
            "score_a": wide[("score", self.a)].to_numpy(np.float64),
            "score_b": wide[("score", self.b)].to_numpy(np.float64),
            "run_id_a": wide[("run_id", self.a)].to_numpy(),
            "run_id_b": wide[("run_id", self.b)].to_numpy(),
        })
        table.insert(5, "diff", table["score_a"] - table["score_b"])
        groups = table.groupby("dataset", sort=False)["diff"]
        diffs = [g.to_numpy(np.float64) for _, g in groups]
        folds = [None if np.isnan(self.k.get(ds, np.nan)) else int(self.k[ds]) for ds in self.datasets]
        return CVTensor(self.a, self.b, list(self.datasets), diffs, folds, table=table)


# ---------------------------------------------------------------------------------------------- text


def _ranges(idx) -> str:
    """'3, 7-9, 17' from sorted integers."""
    idx = [int(i) for i in idx]
    out, start = [], None
    for i, v in enumerate(idx):
        if start is None:
            start = v
        if i + 1 == len(idx) or idx[i + 1] != v + 1:
            out.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ", ".join(out)


def _plural(word: str, idx) -> str:
    return f"{word}{'s' if len(idx) > 1 else ''} {_ranges(idx)}"
