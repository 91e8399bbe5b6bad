"""Checks of the two models' rows before pairing: each check finds one kind of problem and returns it as data.

:func:`find_problems` runs every check in a fixed order and returns a list of :class:`Problem`.  Problems of one kind
for one (dataset, model) make one line that names the folds as ranges ("folds 0-199", "repeats 0-9 folds 0-9").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

__all__ = [
    "Problem", "Rows", "find_problems", "check_types", "check_duplicate_runs", "check_fold_counts", "dataset_folds",
    "split_global_index", "check_duplicate_scores", "check_nonfinite", "check_one_model", "check_missing_folds",
    "check_extra_folds", "check_too_few", "ranges", "plural",
]

_MAX_VALUES = 5  # distinct bad values named in one line
_KEY = ["dataset", "model", "repeat", "fold"]


@dataclass(frozen=True)
class Problem:
    """One problem: its dataset (None if it concerns no single dataset), its kind and the message for the user.

    Kinds: ``type``, ``duplicate``, ``fold_count``, ``nonfinite``, ``one_model``, ``folds``, ``too_few``.
    """

    dataset: str | None
    kind: str
    message: str


@dataclass(frozen=True)
class Rows:
    """The two models' rows, numeric, and what is known about them.

    ``d`` has dataset, model, repeat, fold (-1 if not an integer), score (NaN if not a number), run_id, time, k
    (the run's fold count, NaN if unknown or invalid), the values as given (raw_repeat, raw_fold, raw_score,
    given_k) and masks of those that are bad (bad_repeat, bad_fold, bad_score, bad_k).  ``k`` maps dataset -> fold
    count (NaN if unknown) once :func:`find_problems` has found it.
    """

    d: pd.DataFrame
    model_a: str
    model_b: str
    datasets: list[str]
    has_repeat: bool
    has_runs: bool
    k: pd.Series | None = None


# ---------------------------------------------------------------------------------------------- checks


def find_problems(rows: Rows) -> tuple[Rows, list[Problem]]:
    """Every problem, in a fixed order, and the rows with fold counts known and global fold indexes split."""
    problems = check_types(rows) + check_duplicate_runs(rows) + check_fold_counts(rows)
    rows = split_global_index(replace(rows, k=dataset_folds(rows)))
    problems += check_duplicate_scores(rows, skip=_datasets_with(problems, "duplicate_runs"))
    problems += check_nonfinite(rows) + check_one_model(rows)
    pairs = _pair_up(rows, skip=_datasets_with(problems, "fold_count"))
    problems += check_missing_folds(rows, pairs) + check_extra_folds(rows, pairs) + check_too_few(pairs)
    return rows, problems


def _datasets_with(problems: list[Problem], kind: str) -> set[str]:
    """Datasets that have a problem of ``kind``."""
    return {p.dataset for p in problems if p.kind == kind}


def check_types(rows: Rows) -> list[Problem]:
    """Repeat and fold labels that are not integers, scores that are not numbers, fold counts below 2."""
    d, out = rows.d, []
    for col in ("repeat", "fold"):
        bad = d[d[f"bad_{col}"]]
        for (ds, m), vals in bad.groupby(["dataset", "model"], sort=False)[f"raw_{col}"]:
            shown = list(dict.fromkeys(map(_show, vals)))
            what = (f"{col} {shown[0]} is not an integer" if len(shown) == 1 else
                    f"{col} values {_some(shown)} are not integers")
            out.append(Problem(ds, "type", f"dataset '{ds}' model '{m}': {what}"))
    bad = d[d["bad_score"]]
    out += _per_model(rows, "type", bad, bad["raw_score"].map(lambda v: f"score {_show(v)} is not a number"))
    bad = d[d["bad_k"]]
    what = bad["given_k"].map(lambda k: f"fold count {k:g} is not an integer >= 2")
    return out + _per_model(rows, "type", bad, what, at=False)


def check_duplicate_runs(rows: Rows) -> list[Problem]:
    """A model with more than one run on a dataset."""
    if not rows.has_runs:
        return []
    runs = rows.d.groupby(["dataset", "model"], sort=False)["run_id"].unique()
    return [Problem(ds, "duplicate_runs",
                    f"dataset '{ds}': model '{m}' has {len(ids)} runs ({', '.join(map(str, ids))})")
            for (ds, m), ids in runs[runs.map(len) > 1].items()]


def _fold_counts(rows: Rows) -> pd.DataFrame:
    """Least and most folds per (dataset, model): ``k`` if known, else (with repeats) the number of fold labels."""
    g = rows.d.groupby(["dataset", "model"], sort=False)
    counts = g["k"].agg(["min", "max"])
    if rows.has_repeat:
        n_labels = g["fold"].nunique().astype(float)
        counts = counts.fillna({"min": n_labels, "max": n_labels})
    return counts


def _folds_per_dataset(rows: Rows, counts: pd.DataFrame) -> pd.DataFrame:
    """dataset x [model_a, model_b]: the most folds each model uses."""
    return counts["max"].unstack("model").reindex(columns=[rows.model_a, rows.model_b])


def check_fold_counts(rows: Rows) -> list[Problem]:
    """Runs of one model that disagree on the fold count, and models that use different fold counts."""
    a, b = rows.model_a, rows.model_b
    counts = _fold_counts(rows)
    out = [Problem(ds, "fold_count", f"dataset '{ds}': model '{m}' runs disagree on the fold count "
                                     f"({row['min']:g} vs {row['max']:g})")
           for (ds, m), row in counts[counts["min"] != counts["max"]].dropna().iterrows()]
    per_ds = _folds_per_dataset(rows, counts)
    differ = per_ds.notna().all(axis=1) & (per_ds[a] != per_ds[b])
    return out + [Problem(ds, "fold_count", f"dataset '{ds}': fold count differs: '{a}' uses {row[a]:g} folds, "
                                            f"'{b}' uses {row[b]:g}")
                  for ds, row in per_ds[differ].iterrows()]


def dataset_folds(rows: Rows) -> pd.Series:
    """dataset -> fold count (the larger of the two models'; NaN if unknown)."""
    return _folds_per_dataset(rows, _fold_counts(rows)).max(axis=1)


def split_global_index(rows: Rows) -> Rows:
    """Without a repeat column, the global fold index split into (repeat, fold) where the fold count is known."""
    if rows.has_repeat:
        return rows
    d = rows.d.copy()
    k = d["dataset"].map(rows.k)
    known = k.notna() & (d["fold"] >= 0)
    kk = k[known].astype(np.int64)
    d.loc[known, "repeat"] = d.loc[known, "fold"] // kk
    d.loc[known, "fold"] = d.loc[known, "fold"] % kk
    return replace(rows, d=d)


def check_duplicate_scores(rows: Rows, skip: set[str]) -> list[Problem]:
    """More than one score for one (dataset, model, repeat, fold), on datasets not in ``skip``."""
    d = rows.d[~rows.d["dataset"].isin(skip)]
    dup = d[d.duplicated(_KEY, keep="first")].drop_duplicates(_KEY)
    return _per_model(rows, "duplicate", dup, pd.Series("more than one score", index=dup.index))


def check_nonfinite(rows: Rows) -> list[Problem]:
    """NaN or infinite scores (values that are not numbers at all are left to :func:`check_types`).

    MLflow stores ±inf as ±1.7976931348623157e308 (the largest double): that counts as infinite too.
    """
    d, score = rows.d, rows.d["score"]
    bad = d[(~np.isfinite(score) | (np.abs(score) >= np.finfo(np.float64).max)) & ~d["bad_score"]]

    def what(v: float) -> str:
        if not np.isfinite(v):
            return f"score is {v}"
        return f"score is {np.copysign(np.inf, v)} (MLflow stores inf as {v:g})"

    return _per_model(rows, "nonfinite", bad, bad["score"].map(what))


# ---------------------------------------------------------------------------------------------- pairing


@dataclass(frozen=True)
class _Pairs:
    """The rows of datasets both models have (fold counts agreeing), the expected grid and which cells each fills."""

    d: pd.DataFrame
    grid: pd.MultiIndex
    have: pd.DataFrame  # grid x [model_a, model_b], True where present


def check_one_model(rows: Rows) -> list[Problem]:
    """Datasets present for one model only."""
    models = rows.d.groupby("dataset", sort=False)["model"].unique()
    out = []
    for ds, ms in models[models.map(len) < 2].items():
        other = rows.model_b if ms[0] == rows.model_a else rows.model_a
        out.append(Problem(ds, "one_model", f"dataset '{ds}': only model '{ms[0]}' has scores, '{other}' has none"))
    return out


def _pair_up(rows: Rows, skip: set[str]) -> _Pairs:
    """The datasets both models have, except ``skip``, laid on their expected (dataset, repeat, fold) grid."""
    d = rows.d.drop_duplicates(_KEY)
    both = d.groupby("dataset", sort=False)["model"].nunique() == 2
    d = d[d["dataset"].isin(both.index[both]) & ~d["dataset"].isin(skip)]
    grid = _expected_grid(rows, d)
    have = d.assign(present=True).set_index(["dataset", "repeat", "fold", "model"])["present"]
    return _Pairs(d, grid, have.unstack("model").reindex(index=grid, columns=[rows.model_a, rows.model_b]))


def _expected_grid(rows: Rows, d: pd.DataFrame) -> pd.MultiIndex:
    """Per dataset (in order of appearance): every repeat seen x every fold label seen, in sorted order; only the
    first k labels if the fold count k is known, and then, without a repeat column, the folds 0..k-1."""
    names = ["dataset", "repeat", "fold"]
    k = rows.k.reindex(pd.unique(d["dataset"])).astype(float)
    folds = d[["dataset", "fold"]].drop_duplicates().sort_values("fold", kind="stable")
    limit = folds["dataset"].map(k).astype(float).fillna(np.inf)
    folds = folds[folds.groupby("dataset", sort=False).cumcount() < limit]
    if not rows.has_repeat:
        known = k.dropna().astype(np.int64)
        folds = pd.concat([folds[~folds["dataset"].isin(known.index)],
                           pd.DataFrame({"dataset": np.repeat(known.index.to_numpy(), known.to_numpy()),
                                         "fold": np.concatenate([np.arange(n) for n in known] or [[]])})])
    grid = d[["dataset", "repeat"]].drop_duplicates().merge(folds, on="dataset")
    order = grid["dataset"].map(pd.Series(np.arange(len(k)), index=k.index))
    grid = grid.assign(order=order).sort_values(["order", "repeat", "fold"], kind="stable")
    return pd.MultiIndex.from_frame(grid[names].astype(d[names].dtypes.to_dict()))


def check_missing_folds(rows: Rows, pairs: _Pairs) -> list[Problem]:
    """Folds of the expected grid that a model lacks."""
    out = []
    for m in (rows.model_a, rows.model_b):
        lacks = pairs.have.index[pairs.have[m].isna()].to_frame(index=False)
        for ds, part in lacks.groupby("dataset", sort=False):
            out.append(Problem(ds, "folds", f"dataset '{ds}': model '{m}' lacks {_positions(rows, ds, part)}"))
    return out


def check_extra_folds(rows: Rows, pairs: _Pairs) -> list[Problem]:
    """Folds beyond the fold count."""
    extra = pairs.d[~pairs.d.set_index(["dataset", "repeat", "fold"]).index.isin(pairs.grid)]
    return [Problem(ds, "folds", f"dataset '{ds}': model '{m}' has extra {_positions(rows, ds, part)} "
                                 f"beyond {rows.k[ds]:g} folds")
            for (ds, m), part in extra.groupby(["dataset", "model"], sort=False)]


def check_too_few(pairs: _Pairs) -> list[Problem]:
    """Datasets with fewer than 2 paired scores."""
    n = pairs.have.notna().all(axis=1).groupby(level="dataset", sort=False).sum()
    return [Problem(ds, "too_few", f"dataset '{ds}': {int(n[ds])} paired score(s); need at least 2")
            for ds in n[n < 2].index]


# ---------------------------------------------------------------------------------------------- text


def _per_model(rows: Rows, kind: str, bad: pd.DataFrame, what: pd.Series, at=True) -> list[Problem]:
    """One problem per (dataset, model) of the ``bad`` rows: "dataset 'x' model 'y' (run z): <what> at <folds>",
    one "<what> at <folds>" (or, unless ``at``, "<what>") per distinct ``what``, at most ``_MAX_VALUES``."""
    out = []
    for (ds, m), part in bad.assign(what=what).groupby(["dataset", "model"], sort=False):
        found = [f"{w} at {_positions(rows, ds, p)}" if at else w for w, p in part.groupby("what", sort=False)]
        if len(found) > _MAX_VALUES:
            found = found[:_MAX_VALUES] + [f"{len(found) - _MAX_VALUES} more values"]
        runs = list(dict.fromkeys(map(str, part["run_id"]))) if rows.has_runs else []
        where = f" ({'runs' if len(runs) > 1 else 'run'} {', '.join(runs)})" if runs else ""
        out.append(Problem(ds, kind, f"dataset '{ds}' model '{m}'{where}: {'; '.join(found)}"))
    return out


def _positions(rows: Rows, ds: str, part: pd.DataFrame) -> str:
    """'folds 3, 17' (global index, or a dataset with one repeat) or 'repeat 1 folds 3-5; repeats 2-3 fold 1'."""
    if not rows.has_repeat:
        k = np.nan if rows.k is None else rows.k.get(ds, np.nan)
        g = part["fold"] if np.isnan(k) else part["repeat"] * int(k) + part["fold"]
        return plural("fold", np.unique(g))
    folds_of = part.groupby("repeat")["fold"].agg(lambda f: tuple(np.unique(f)))
    if len(folds_of) == 1 and rows.d.loc[rows.d["dataset"] == ds, "repeat"].nunique() == 1:
        return plural("fold", folds_of.iloc[0])
    repeats_of: dict[tuple, list] = {}
    for r, folds in folds_of.items():
        repeats_of.setdefault(folds, []).append(r)
    return "; ".join(f"{plural('repeat', r)} {plural('fold', f)}" for f, r in repeats_of.items())


def _show(v) -> str:
    """repr of a value as the user wrote it (numpy scalars as plain Python values)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _some(shown: list[str]) -> str:
    """The first ``_MAX_VALUES`` values, and how many more."""
    more = f" and {len(shown) - _MAX_VALUES} more" if len(shown) > _MAX_VALUES else ""
    return ", ".join(shown[:_MAX_VALUES]) + more


def ranges(idx) -> str:
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


def plural(word: str, idx) -> str:
    """'fold 3' or 'folds 3-5, 9'."""
    return f"{word}{'s' if len(idx) > 1 else ''} {ranges(idx)}"
