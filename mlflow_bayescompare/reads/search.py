"""Read a scikit-learn parameter search as ``mlflow.sklearn.autolog()`` logs it: a GridSearchCV or RandomizedSearchCV
fit is a parent run (tag ``estimator_name``) whose params are the search's own (``cv``, ``param_grid`` …) and whose
artifact ``cv_results.csv`` is the search's ``cv_results_``: one row per candidate, its setting in the ``param_<name>``
columns and its score on every split in ``split<i>_test_<scorer>``.

:func:`read_search` turns it into the scores the pipeline reads (:class:`.collect.CollectedScores`, layout
``search``): one dataset (the search's data), one model per candidate, named by its setting in the form
``C=1, kernel=rbf``; :meth:`Search.resolve` turns the names a user gives (``best``: the search's best candidate)
into candidates.  The splits' kind comes from the ``cv`` param (:func:`split_scheme`): an int, None (5), a
KFold-like splitter or LeaveOneOut is k-fold (ρ = 1/folds, repeats for Repeated*KFold), a ShuffleSplit-like one
repeated hold-out (ρ = n_test/(n_train + n_test), from its test_size and train_size); anything else needs
``--folds`` or ``--rho``.
"""

from __future__ import annotations

import ast
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from mlflow.exceptions import MlflowException

from ..vocabulary import mlflow_internals
from ..vocabulary.errors import InputError
from .collect import SCORE_COLUMNS, CollectedScores

__all__ = ["Search", "read_search", "split_scheme", "SEARCH_ESTIMATORS", "CV_RESULTS", "BEST"]

SEARCH_ESTIMATORS = ("GridSearchCV", "RandomizedSearchCV")
CV_RESULTS = "cv_results.csv"
#: the name that stands for the search's best candidate (rank 1 on the metric)
BEST = "best"
_HEADER = "Cannot read the scikit-learn search:"
_KFOLD = re.compile(r"^(Repeated)?(Stratified|Group|StratifiedGroup)?KFold\(")
_SHUFFLE = re.compile(r"^(Stratified|Group)?ShuffleSplit\(")
#: what autolog logs cv_results.csv for, and why it may be missing
MISSING_CV_RESULTS = (f"mlflow.sklearn.autolog() logs {CV_RESULTS} for every GridSearchCV and RandomizedSearchCV fit, "
                      "whatever its settings (none turns it off; max_tuning_runs only limits the child runs), unless "
                      "logging it failed (autolog then warns 'Failed to log parameter search results as an "
                      "artifact'): fit the search again under mlflow.sklearn.autolog()")


@dataclass(frozen=True)
class Search:
    """A search run read: its candidates (in the order of ``cv_results_``), the best one, the ``cv`` it split by,
    the folds (k-fold) or ρ with its reason (hold-out splits), and the scores in the pipeline's form."""

    run_id: str
    experiment_id: str
    candidates: list[str]
    best: str
    cv: str
    folds: int | None
    rho: tuple[float, str] | None
    collected: CollectedScores

    def resolve(self, given: Sequence[str]) -> list[str]:
        """The candidates named by ``given`` (every one when empty): exact settings or ``best``, each once.  Names
        already split at their commas (as a list of models is) are joined back into the settings they spell."""
        if not given:
            return list(self.candidates)
        names, unknown, pending = [], [], []
        for fragment in given:
            pending.append(fragment.strip())
            joined = ", ".join(pending)
            if joined == BEST or joined in self.candidates:
                names.append(self.best if joined == BEST else joined)
                pending = []
            elif not any(c.startswith(joined + ",") for c in self.candidates):
                unknown.append(joined)
                pending = []
        unknown += [", ".join(pending)] if pending else []
        problems = [f"no candidate '{u}' in search run {self.run_id}" for u in unknown]
        if problems:
            problems.append(f"candidates: {'; '.join(self.candidates)} (and '{BEST}' = {self.best})")
        problems += [f"{n} is named twice{f' ({BEST} is {n})' if n == self.best else ''}: name different candidates"
                     for n in sorted({n for n in names if names.count(n) > 1})]
        if problems:
            raise InputError(problems, header=_HEADER)
        return names


def read_search(client, run_id: str, metric: str, *, folds: int | None = None, rho=None) -> Search:
    """The search run ``run_id``: its ``cv_results.csv`` read for the scorer ``metric`` (``score`` or the search's
    ``scoring`` name for a one-scorer search, a scorer's name for a multi-metric one), its splits' kind from its
    ``cv`` param unless ``folds`` or ``rho`` (the options') say.  Every problem is an :class:`InputError`."""
    run = _search_run(client, run_id)
    table = _cv_results(client, run)
    scores = _split_scores(table, metric, run.data.params.get("scoring", "None"), run_id)
    cv = run.data.params.get("cv", "None")
    if folds is not None:
        _check_folds(folds, cv, scores.shape[1])
    k, hold_out = (folds, None) if folds is not None or rho is not None else split_scheme(cv, scores.shape[1])
    if k is None and hold_out is None and rho is None:
        raise InputError(f"the search's splits cannot be told from its cv param {cv!r}: give --folds K for k-fold "
                         "cross-validation (rho = 1/K), or --rho for other splits (n_test/(n_train + n_test) for "
                         "repeated hold-out)", header=_HEADER)
    names = [_setting(row) for _, row in table.iterrows()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"candidates with the same setting in {CV_RESULTS}: {'; '.join(twice)}", header=_HEADER)
    rank = pd.to_numeric(table[f"rank_test_{scores.name}"], errors="coerce")
    dataset = run.data.tags.get("mlflow.runName") or run_id
    tidy = _tidy(scores, names, dataset, run, k, metric)
    collected = CollectedScores(tidy, "search", {dataset: k} if k else {}, [run.info.experiment_id],
                                {n: [run_id] for n in names}, metric, "artifact")
    return Search(run_id, run.info.experiment_id, names, names[int(rank.idxmin())], cv, k, hold_out, collected)


def split_scheme(cv: str, splits: int) -> tuple[int | None, tuple[float, str] | None]:
    """(folds, None) for k-fold splits, (None, (ρ, reason)) for repeated hold-out, (None, None) when ``cv`` (the
    search's param, as autolog logs it: an int, ``None`` or the splitter's repr) does not tell; ``splits``: the
    number of splits cv_results holds (leave-one-out is k-fold with k = that)."""
    text = cv.strip()
    if text == "None":  # scikit-learn's default: 5-fold
        return 5, None
    if text == "LeaveOneOut()":
        return splits, None
    if text.isdigit() and int(text) >= 2:
        return int(text), None
    if _KFOLD.match(text):
        k = _argument(text, "n_splits")
        return (int(k), None) if k is not None and k >= 2 else (None, None)
    if _SHUFFLE.match(text):
        return None, _hold_out(text)
    return None, None


def _check_folds(folds: int, cv: str, splits: int) -> None:
    """``folds`` (the options') stands in for a ``cv`` param that does not tell the splits: it may not contradict
    one that does, and must split the search's ``splits`` into whole repeats."""
    told, hold_out = split_scheme(cv, splits)
    given = f"--folds {folds} (folds={folds})"
    if told is not None and told != folds:
        problem = f"{given} contradicts the search's cv param {cv!r}, {told} folds per repeat"
    elif hold_out is not None:
        problem = (f"{given} contradicts the search's cv param {cv!r}, repeated hold-out splits (rho = "
                   f"{hold_out[0]:g})")
    elif splits % folds:
        problem = f"the search's {splits} splits are not a whole number of repeats of {given}"
    else:
        return
    raise InputError(f"{problem}; leave --folds out to use the search's own splits", header=_HEADER)


# ------------------------------------------------------------------------------------------------ reading


def _search_run(client, run_id: str):
    """The run, if it is a parameter search autolog logged; else the problem, named."""
    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            raise
        raise InputError(f"no run '{run_id}'", header=_HEADER) from None
    estimator = run.data.tags.get("estimator_name")
    if estimator not in SEARCH_ESTIMATORS:
        what = f"its estimator_name tag is {estimator!r}" if estimator else "it has no estimator_name tag"
        raise InputError(f"run {run_id} is not a scikit-learn parameter search logged by mlflow.sklearn.autolog() "
                         f"({what}): give the parent run of a {' or '.join(SEARCH_ESTIMATORS)} fit", header=_HEADER)
    return run


def _cv_results(client, run) -> pd.DataFrame:
    """The run's ``cv_results.csv``, the settings' columns read as text (``1`` stays ``1``, not ``1.0``)."""
    with tempfile.TemporaryDirectory(prefix="bayescompare-search-") as tmp:
        path = mlflow_internals.download_top_artifact(client, run, CV_RESULTS, tmp)
        if path is None:
            raise InputError(f"search run {run.info.run_id} has no {CV_RESULTS} artifact, which holds each "
                             f"candidate's score on every split: {MISSING_CV_RESULTS}", header=_HEADER)
        head = pd.read_csv(path, nrows=0).columns
        return pd.read_csv(path, dtype={c: str for c in head if c.startswith("param_")}, keep_default_na=False,
                           na_values={c: [""] for c in head if not c.startswith("param_")})


def _split_scores(table: pd.DataFrame, metric: str, scoring: str, run_id: str) -> pd.DataFrame:
    """The (candidates × splits) scores of the scorer ``metric``, the frame named by the scorer's column suffix."""
    scorers = sorted({c.split("_test_", 1)[1] for c in table.columns if re.match(r"split\d+_test_", c)})
    name = metric if metric in scorers else "score" if scorers == ["score"] and metric in ("score", scoring) else None
    if name is None:
        hint = (("'score'" + (f" (or its scoring, {scoring!r})" if scoring != "None" else "")) if scorers == ["score"]
                else " or ".join(repr(s) for s in scorers))
        raise InputError(f"search run {run_id} has no scorer {metric!r} in {CV_RESULTS}: give --metric {hint}",
                         header=_HEADER)
    columns = sorted((c for c in table.columns if re.fullmatch(rf"split\d+_test_{re.escape(name)}", c)),
                     key=lambda c: int(c[5:c.index("_")]))
    scores = table[columns].apply(pd.to_numeric, errors="coerce")
    scores.name = name
    return scores


def _setting(row: pd.Series) -> str:
    """``C=1, kernel=rbf``: a candidate's parameters as its ``params`` cell writes them (a dict of literals; values
    as ``str`` gives them), else as the ``param_<name>`` columns hold them (e.g. an estimator in a pipeline's grid,
    which is no literal; a number there may read ``1.0`` for ``1``)."""
    try:
        params = ast.literal_eval(row["params"])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        params = {column[len("param_"):]: value for column, value in row.items()
                  if column.startswith("param_") and isinstance(value, str) and value != ""}
    return ", ".join(f"{name}={value}" for name, value in params.items())


def _tidy(scores: pd.DataFrame, names: list[str], dataset: str, run, folds: int | None, metric: str) -> pd.DataFrame:
    """The pipeline's tidy scores: split i is repeat i // folds, fold i % folds (run-major, as scikit-learn's
    repeated splitters order them); without folds, each split is its own fold of one repeat."""
    n = scores.shape[1]
    split = pd.Series(range(n))
    rows = pd.DataFrame({
        "dataset": dataset, "model": [m for m in names for _ in range(n)],
        "repeat": list(split // folds if folds else split * 0) * len(names),
        "fold": list(split % folds if folds else split) * len(names),
        "score": scores.to_numpy().ravel(), "run_id": run.info.run_id, "start_time": run.info.start_time,
        "folds": folds if folds else float("nan")})
    return rows[SCORE_COLUMNS]


def _argument(text: str, name: str) -> float | None:
    """A number argument ``name=…`` of a splitter's repr, or None."""
    found = re.search(rf"\b{name}=([0-9.eE+-]+|None)", text)
    return None if found is None or found.group(1) == "None" else float(found.group(1))


def _hold_out(text: str) -> tuple[float, str] | None:
    """ρ = n_test/(n_train + n_test) of a ShuffleSplit-like repr, from its test_size and train_size (fractions or
    counts; scikit-learn's default test_size is 0.1, the train set the rest), with its reason; None when not told."""
    test, train = _argument(text, "test_size"), _argument(text, "train_size")
    test = 0.1 if test is None and train is None else test
    if test is None or (train is not None and (test < 1) != (train < 1)):
        return None  # counts against fractions: the dataset's size would be needed
    if train is None:
        if test >= 1:
            return None
        train = 1 - test
    return test / (train + test), f"n_test/(n_train+n_test) from {text}"
