"""The layouts of per-fold scores in MLflow runs, and their readers: steps (one value per fold, as the metric's
steps), keys (``<metric>_fold_<i>``), children (one child run per fold), and means (one score per run).
:func:`detect` tells the layout from the runs; :data:`READERS` read the folds of each; :mod:`.collect` turns what
they read into the tidy table."""

from __future__ import annotations

import re

import pandas as pd

from ..vocabulary import tags as T
from ..vocabulary.errors import InputError
from .fetch import fetch_histories
from .identify import Identified, guard, search_runs

__all__ = ["detect", "READERS", "read_means", "check_single_values", "metrics_present", "tag", "tag_equals",
           "LAYOUT_SHAPES"]


def detect(client, experiment_ids, found: Identified, metric, folds, progress) -> tuple[str, tuple | None]:
    """The layout, and in the means layout the scores it read to tell: keys if fold keys exist, else children if
    runs have child runs, else (the metric present) means if the fold count is unknown (no ``folds``, no run with
    the param ``cv_folds``) and every run holds one value of the metric, else steps."""
    runs, fold_key = found.runs, re.compile(rf"{re.escape(metric)}_fold_\d+")
    if any(fold_key.fullmatch(k) for r in runs for k in r.data.metrics):
        return "keys", None
    first_per_model = {found.model(r): r for r in runs}.values()
    for r in first_per_model:
        if search_runs(client, experiment_ids, tag_equals(T.PARENT, r.info.run_id), limit=1):
            return "children", None
    if any(metric in r.data.metrics for r in runs):
        if folds is None and not any("cv_folds" in r.data.params for r in runs):
            raw, method = read_means(client, runs, metric, progress)
            if not raw["run_id"].duplicated().any():
                return "means", (raw, method)
        return "steps", None
    raise InputError(f"metric '{metric}' not found (as steps, '{metric}_fold_<i>' keys, child runs or one value "
                     f"per run); "
                     f"metrics present: {', '.join(metrics_present(runs)) or 'none'}")


LAYOUT_SHAPES = {"steps": "one value per fold, as the metric's steps", "keys": "'<metric>_fold_<i>' keys",
                  "children": "one child run per fold", "means": "one value per run"}


def metrics_present(runs) -> list[str]:
    """The metrics the runs hold, fold keys folded into their metric (what a problem says is there)."""
    return sorted({re.sub(r"_fold_\d+$", "", k) for r in runs for k in r.data.metrics})


# ---------------------------------------------------------------------------------------------- the readers
# each returns (DataFrame[run_id, repeat, fold, score], fetch method); fold is global when repeat is -1


def read_keys(client, experiment_ids, runs, metric, run_folds, progress):
    """The per-fold scores as ``<metric>_fold_<i>`` keys of each run."""
    pattern = re.compile(rf"{re.escape(metric)}_fold_(\d+)")
    rows = [(r.info.run_id, int(m.group(1)), v) for r in runs for k, v in r.data.metrics.items()
            if (m := pattern.fullmatch(k))]
    return pd.DataFrame(rows, columns=["run_id", "fold", "score"]), "search"


def read_children(client, experiment_ids, runs, metric, run_folds, progress):
    """The per-fold scores as one child run per fold (tags ``fold`` and optionally ``repeat``)."""
    parents = {r.info.run_id for r in runs}
    children = search_runs(client, experiment_ids, f"{tag(T.PARENT)} IS NOT NULL AND {tag('fold')} IS NOT NULL",
                           progress=progress)
    rows, problems = [], []
    for c in children:
        tags = c.data.tags
        if tags[T.PARENT] not in parents or metric not in c.data.metrics:
            continue
        try:
            rows.append((tags[T.PARENT], int(tags.get("repeat", -1)), int(tags["fold"]), c.data.metrics[metric]))
        except ValueError:
            problems.append(f"child run {c.info.run_id} of run {tags[T.PARENT]}: tags fold={tags['fold']!r}"
                            f" / repeat={tags.get('repeat')!r} are not integers")
    if problems:
        raise InputError(problems, header="Cannot read the per-fold child runs:")
    return pd.DataFrame(rows, columns=["run_id", "repeat", "fold", "score"]), "search"


def read_steps(client, experiment_ids, runs, metric, run_folds, progress):
    """The per-fold scores as the metric's steps (its history, read in bulk)."""
    run_ids = [r.info.run_id for r in runs if metric in r.data.metrics]
    sizes = {rid: k * reps for rid, (k, reps) in run_folds.items()}
    with guard(client):
        hist, method = fetch_histories(client, run_ids, metric, sizes, progress=progress)
    return hist.rename(columns={"step": "fold", "value": "score"})[["run_id", "fold", "score"]], method


def read_means(client, runs, metric, progress):
    """One row per value of the metric's history (the latest per step), at fold 0."""
    run_ids = [r.info.run_id for r in runs if metric in r.data.metrics]
    with guard(client):
        hist, method = fetch_histories(client, run_ids, metric, {rid: 1 for rid in run_ids}, progress=progress)
    return hist.assign(fold=0).rename(columns={"value": "score"})[["run_id", "fold", "score"]], method


def check_single_values(raw: pd.DataFrame, found: Identified, metric) -> None:
    """The means layout takes one value per run: name every run holding several (at different steps)."""
    counts = raw["run_id"].value_counts()
    several = {r.info.run_id: r for r in found.runs if counts.get(r.info.run_id, 0) > 1}
    if several:
        problems = [f"run {rid} (model '{found.model(r)}', dataset '{found.dataset(r)}') holds "
                    f"{counts[rid]} values of '{metric}'" for rid, r in list(several.items())[:10]]
        more = [f"and {len(several) - 10} more run(s)"] if len(several) > 10 else []
        raise InputError(problems + more, header=f"The means layout takes one '{metric}' value per run; per-fold "
                                                 "scores need the steps layout with their fold count (pass --folds K "
                                                 "(folds=K) or log the run param 'cv_folds'):")


def tag(key: str) -> str:
    """A tag key in a filter string (``tags.`key```); a key MLflow filters cannot express is refused."""
    if "`" in key:
        raise InputError(f"tag key {key!r} contains a backtick, which MLflow filters cannot express")
    return f"tags.`{key}`"


def tag_equals(key: str, value: str) -> str:
    """``tags.`key` = 'value'``, quoted with whichever quote the value lacks (MLflow has no escapes)."""
    if "'" not in value:
        return f"{tag(key)} = '{value}'"
    if '"' not in value:
        return f'{tag(key)} = "{value}"'
    return f"{tag(key)} IS NOT NULL"  # both quotes: match client-side


#: the reader of each layout of per-fold scores
READERS = {"steps": read_steps, "keys": read_keys, "children": read_children}
