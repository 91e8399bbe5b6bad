"""Read scores from MLflow runs into a tidy table: per-fold scores in three layouts (steps, keys, children), or one
score per (model, dataset) (means)."""

from __future__ import annotations

import difflib
import re
from contextlib import contextmanager
from dataclasses import dataclass

import pandas as pd
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from mlflow.utils.search_utils import SearchUtils

from ..console import redact_uri
from ..errors import BayesCompareError, InputError
from ..options import LAYOUTS
from ..progress import Progress, notify
from ..scores.tensor import FOLDS_ONE, CVTensor, DatasetMeans, dataset_means, from_tidy, means_from_tidy
from . import tags as T
from .fetch import fetch_histories

# fetch_histories moved to .fetch; it is re-exported here for the callers that import it from collect
__all__ = ["SCORE_COLUMNS", "CollectedScores", "resolve_experiments", "discover",
           "collect_scores", "fetch_histories"]

PAGE = 10_000
SCORE_COLUMNS = ["dataset", "model", "repeat", "fold", "score", "run_id", "start_time", "folds"]


@dataclass
class CollectedScores:
    """Tidy per-fold scores (columns ``SCORE_COLUMNS``; ``folds`` is the run's fold count) and how they were read.

    In the means layout every (model, dataset) has one score, at repeat 0 and fold 0, with ``folds`` 1.
    """

    scores: pd.DataFrame
    layout: str
    folds: dict[str, int]
    experiment_ids: list[str]
    runs_by_model: dict[str, list[str]]
    metric: str
    fetch_method: str  # "bulk" (server endpoint), "store" (store bulk call), "threads", "search" (no history)

    def tensor(self, model_a: str, model_b: str, **kwargs) -> CVTensor:
        """Pair two models' per-fold scores (keyword arguments go to ``from_tidy``, e.g. ``on_duplicate``)."""
        if self.layout == "means":
            raise InputError(f"the runs hold one '{self.metric}' score per model and dataset (the means layout), but "
                             "the hierarchical test needs the per-fold scores: use the signed-rank test "
                             "(--test signed-rank), or log every fold's score")
        tensor = from_tidy(self.scores, model_a, model_b, time_col="start_time", **kwargs)
        tensor.metric = self.metric
        return tensor

    def means(self, model_a: str, model_b: str, *, drop_incomplete: bool = False,
              on_duplicate: str = "error") -> DatasetMeans:
        """The two models' score per dataset: as logged (means layout), or their paired fold scores averaged after
        the tensor's checks (other layouts).  Problems are reported as by :meth:`tensor`."""
        if self.layout == "means":
            means = means_from_tidy(self.scores, model_a, model_b, time_col="start_time",
                                    drop_incomplete=drop_incomplete, on_duplicate=on_duplicate)
        else:
            means = dataset_means(self.tensor(model_a, model_b, drop_incomplete=drop_incomplete,
                                              on_duplicate=on_duplicate))
        means.metric = self.metric
        return means


# ---------------------------------------------------------------------------------------------- public


def resolve_experiments(client: MlflowClient, names=(), ids=()) -> list[str]:
    """Experiment ids for the given names and ids, in order; unknown or deleted ones raise one InputError."""
    out, problems = [], []
    for name in names:
        with _guard(client):
            exp = client.get_experiment_by_name(name)
        if exp is None or exp.lifecycle_stage != "active":
            problems.append(f"no experiment named '{name}'{_did_you_mean(client, name)}")
        else:
            out.append(exp.experiment_id)
    for eid in ids:
        try:
            exp = client.get_experiment(str(eid))
        except MlflowException as e:
            if e.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
                raise _unreachable(client, e) from e
            exp = None
        if exp is None or exp.lifecycle_stage != "active":
            problems.append(f"no experiment with id '{eid}'")
        else:
            out.append(exp.experiment_id)
    if problems:
        raise InputError(problems, header=f"Unknown experiment(s) at {redact_uri(client.tracking_uri)}:")
    if not out:
        raise InputError("name at least one experiment (by name or id)")
    return list(dict.fromkeys(out))


def _did_you_mean(client: MlflowClient, name: str) -> str:
    """``; did you mean 'x'?`` for the active experiments (that the client may read) named close to ``name``."""
    with _guard(client):
        names = [e.name for e in client.search_experiments(max_results=1000)]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def discover(client: MlflowClient, experiment_ids: list[str], *, model_tag="model", dataset_tag="dataset") -> dict:
    """Models, datasets and metric names (fold keys folded into their base name; the ``<metric>_mean`` and
    ``<metric>_std`` summaries of a metric left out) found in the experiments."""
    flt = f"{_tag(model_tag)} IS NOT NULL AND {_tag(dataset_tag)} IS NOT NULL"
    runs = _top_level([r for r in _search(client, experiment_ids, flt) if not _is_comparison(r)])
    children = _search(client, experiment_ids, f"{_tag(T.PARENT)} IS NOT NULL AND {_tag('fold')} IS NOT NULL",
                       limit=1000)
    metrics = {re.sub(r"_fold_\d+$", "", k) for r in [*runs, *children] for k in r.data.metrics}
    metrics -= {f"{m}_{summary}" for m in metrics for summary in ("mean", "std")}  # log_cv_scores' summaries
    return {
        "models": sorted({r.data.tags[model_tag] for r in runs}),
        "datasets": sorted({r.data.tags[dataset_tag] for r in runs}),
        "metrics": sorted(metrics),
        "runs": len(runs),
    }


def collect_scores(client: MlflowClient, experiment_ids: list[str], metric: str, models: list[str] | None = None,
                   *, filter_string: str = "", layout: str = "auto", model_tag: str = "model",
                   dataset_tag: str = "dataset", folds: int | None = None,
                   progress: Progress | None = None) -> CollectedScores:
    """Read every per-fold score of ``metric`` for ``models`` (all tagged models if None), or in the means layout
    the one score of each run.

    Runs count when tagged with both ``model_tag`` and ``dataset_tag``; comparison runs are skipped.
    ``folds`` overrides the runs' ``cv_folds`` param.  ``progress`` (see :mod:`.progress`) hears the ``fetching``
    stage: runs listed, metric histories read.
    """
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    if folds is not None and (not float(folds).is_integer() or int(folds) < 2):
        raise InputError(f"folds must be an integer >= 2, got {folds!r}")
    _check_filter(filter_string)
    runs = _model_runs(client, experiment_ids, models, filter_string, model_tag, dataset_tag, progress=progress)
    read, asked = None, layout
    if layout == "auto":
        layout, read = _detect(client, experiment_ids, runs, metric, model_tag, folds, progress)
    if layout == "means":
        raw, method = read or _read_means(client, runs, metric, progress)
        _check_single_values(raw, runs, metric, model_tag, dataset_tag)
        run_folds = {r.info.run_id: (1, 1) for r in runs}
    else:
        run_folds = _run_folds(runs, folds, model_tag, dataset_tag)
        fetch = {"steps": _read_steps, "keys": _read_keys, "children": _read_children}[layout]
        raw, method = fetch(client, experiment_ids, runs, metric, run_folds, progress)
        if folds is not None:
            _check_whole_repeats(raw, runs, int(folds), model_tag, dataset_tag)
    if raw.empty:
        raise InputError(f"metric '{metric}' not found in the {layout} layout ({_LAYOUT_SHAPES[layout]}); "
                         f"metrics present: {', '.join(_metrics_present(runs)) or 'none'}"
                         + ("; layout 'auto' tells the layout from the runs" if asked != "auto" else ""))
    scores = _tidy(raw, runs, run_folds, model_tag, dataset_tag)
    by_model: dict[str, list[str]] = {}
    for r in runs:
        by_model.setdefault(r.data.tags[model_tag], []).append(r.info.run_id)
    ds_folds = scores.drop_duplicates("dataset").set_index("dataset")["folds"].astype(int).to_dict()
    return CollectedScores(scores, layout, ds_folds, list(experiment_ids), by_model, metric, method)


# ---------------------------------------------------------------------------------------------- runs


def _model_runs(client, experiment_ids, models, filter_string, model_tag, dataset_tag, *,
                progress: Progress | None = None) -> list:
    """Top-level runs of the wanted models having both tags; errors for missing models or tags."""
    if models is None:
        runs = _search(client, experiment_ids, _and(filter_string, f"{_tag(model_tag)} IS NOT NULL"),
                       progress=progress)
    else:
        runs = [r for m in dict.fromkeys(models) for r in _search(
            client, experiment_ids, _and(filter_string, _tag_equals(model_tag, m)), progress=progress)]
        # names with both quote kinds are matched client-side, so one run may come back for several models
        runs = list({r.info.run_id: r for r in runs if r.data.tags.get(model_tag) in models}.values())
    runs = _top_level([r for r in runs if not _is_comparison(r)])
    untagged = [r.info.run_id for r in runs if dataset_tag not in r.data.tags]
    problems = []
    if untagged:
        problems.append(f"{len(untagged)} run(s) have tag '{model_tag}' but no tag '{dataset_tag}' "
                        f"(e.g. {', '.join(untagged[:5])}); tag them or filter them out")
    found = {r.data.tags[model_tag] for r in runs}
    absent = [m for m in (models or []) if m not in found]
    if absent:
        present = discover(client, experiment_ids, model_tag=model_tag, dataset_tag=dataset_tag)["models"]
        matching = f" that matches the filter {filter_string!r}" if filter_string.strip() else ""
        problems += [f"model '{m}' is in no run tagged '{model_tag}'{matching}; models present: "
                     f"{', '.join(present) or 'none'}" for m in absent]
    if not runs and not problems:
        problems.append(f"no run in experiment(s) {', '.join(experiment_ids)} has tags '{model_tag}' and "
                        f"'{dataset_tag}'" + (f" and matches {filter_string!r}" if filter_string else ""))
    if problems:
        raise InputError(problems, header="Cannot collect scores:")
    return runs


def _run_folds(runs, folds, model_tag, dataset_tag) -> dict[str, tuple[int, int]]:
    """run id -> (folds, repeats) from ``folds`` or the params ``cv_folds`` / ``cv_repeats``.  ``folds`` stands in
    for a param that is missing or unreadable, and may not contradict one that is readable."""
    out, problems, unknown, contradicted = {}, [], [], {}
    for r in runs:
        p, rid = r.data.params, r.info.run_id
        logged = _int_param(p, "cv_folds", rid, problems if folds is None else [])
        if folds is not None and logged not in (None, int(folds)):
            contradicted.setdefault(logged, []).append(r)
        k = folds if folds is not None else logged
        reps = _int_param(p, "cv_repeats", rid, problems) or 1
        if k is None and "cv_folds" not in p:
            unknown.append(rid)
        elif k is not None:
            out[rid] = (int(k), reps)
    if unknown:
        problems.append(f"the number of folds is unknown for {len(unknown)} run(s) (e.g. {', '.join(unknown[:5])}): "
                        "pass --folds K (folds=K) or log the run param 'cv_folds'")
    problems += [f"--folds {folds} (folds={folds}) contradicts the param cv_folds={logged} logged by "
                 f"{_places(rs, model_tag, dataset_tag)}; leave --folds out to use the logged folds"
                 for logged, rs in sorted(contradicted.items())]
    if problems:
        raise InputError(problems, header="Cannot tell the cross-validation folds:")
    return out


def _places(runs, model_tag, dataset_tag, shown: int = 3) -> str:
    """"dataset 'd' model 'm', … and N more runs" for ``runs``."""
    named = sorted(f"dataset '{r.data.tags[dataset_tag]}' model '{r.data.tags[model_tag]}'" for r in runs)[:shown]
    return ", ".join(named) + (f" and {len(runs) - shown} more runs" if len(runs) > shown else "")


def _check_whole_repeats(raw: pd.DataFrame, runs, folds: int, model_tag, dataset_tag) -> None:
    """Where ``folds`` stands in for the param ``cv_folds`` (:func:`_run_folds`), each dataset's fold scores must
    make whole repeats of it: the most scores a run logs (a global index: its highest + 1) a multiple of
    ``folds``; the folds per repeat (runs whose children are tagged ``repeat``) ``folds`` exactly."""
    assumed = {r.info.run_id: r for r in runs if _int_param(r.data.params, "cv_folds", r.info.run_id, []) is None}
    part = raw[raw["run_id"].isin(assumed)]
    per_repeat = part["repeat"] >= 0 if "repeat" in part else pd.Series(False, index=part.index)
    problems = []
    for labelled, rows in ((False, part[~per_repeat]), (True, part[per_repeat])):
        rows = rows.assign(dataset=rows["run_id"].map(lambda rid: assumed[rid].data.tags[dataset_tag]))
        for dataset, top in rows.sort_values("fold", kind="stable").groupby("dataset").last().iterrows():
            count, run = int(top["fold"]) + 1, assumed[top["run_id"]]
            where = f"dataset '{dataset}' (model '{run.data.tags[model_tag]}', run {run.info.run_id})"
            if labelled and count != folds:
                problems.append(f"{where} holds {count} folds per repeat, not --folds {folds} (folds={folds})")
            elif not labelled and count % folds:
                problems.append(f"{where} logs {count} fold scores: not a whole number of repeats of --folds "
                                f"{folds} (folds={folds})")
    if problems:
        raise InputError(problems, header="Cannot tell the cross-validation folds:")


def _int_param(params: dict, key: str, run_id: str, problems: list[str]) -> int | None:
    if key not in params:
        return None
    try:
        value = float(params[key])
    except ValueError:
        value = None
    low = 2 if key == "cv_folds" else 1
    if value is None or not value.is_integer() or value < low:
        why = f"not a whole number >= {low}"
        if key == "cv_folds" and value == 1:
            why += f" ({FOLDS_ONE}; give the folds (--folds K) if the param is wrong)"
        problems.append(f"run {run_id}: param '{key}' is {params[key]!r}, {why}")
        return None
    return int(value)


def _detect(client, experiment_ids, runs, metric, model_tag, folds, progress) -> tuple[str, tuple | None]:
    """The layout, and in the means layout the scores it read to tell: keys if fold keys exist, else children if
    runs have child runs, else (the metric present) means if the fold count is unknown (no ``folds``, no run with
    the param ``cv_folds``) and every run holds one value of the metric, else steps."""
    fold_key = re.compile(rf"{re.escape(metric)}_fold_\d+")
    if any(fold_key.fullmatch(k) for r in runs for k in r.data.metrics):
        return "keys", None
    first_per_model = {r.data.tags[model_tag]: r for r in runs}.values()
    for r in first_per_model:
        if _search(client, experiment_ids, _tag_equals(T.PARENT, r.info.run_id), limit=1):
            return "children", None
    if any(metric in r.data.metrics for r in runs):
        if folds is None and not any("cv_folds" in r.data.params for r in runs):
            raw, method = _read_means(client, runs, metric, progress)
            if not raw["run_id"].duplicated().any():
                return "means", (raw, method)
        return "steps", None
    raise InputError(f"metric '{metric}' not found (as steps, '{metric}_fold_<i>' keys, child runs or one value "
                     f"per run); "
                     f"metrics present: {', '.join(_metrics_present(runs)) or 'none'}")


_LAYOUT_SHAPES = {"steps": "one value per fold, as the metric's steps", "keys": "'<metric>_fold_<i>' keys",
                  "children": "one child run per fold", "means": "one value per run"}


def _metrics_present(runs) -> list[str]:
    return sorted({re.sub(r"_fold_\d+$", "", k) for r in runs for k in r.data.metrics})


def _top_level(runs) -> list:
    """Drop runs whose parent is also in the list (per-fold children that copy the tags)."""
    ids = {r.info.run_id for r in runs}
    return [r for r in runs if r.data.tags.get(T.PARENT) not in ids]


def _is_comparison(run) -> bool:
    return run.data.tags.get(T.KIND) in T.KINDS


# ---------------------------------------------------------------------------------------------- layouts
# each returns (DataFrame[run_id, repeat, fold, score], fetch method); fold is global when repeat is -1


def _read_keys(client, experiment_ids, runs, metric, run_folds, progress):
    pattern = re.compile(rf"{re.escape(metric)}_fold_(\d+)")
    rows = [(r.info.run_id, int(m.group(1)), v) for r in runs for k, v in r.data.metrics.items()
            if (m := pattern.fullmatch(k))]
    return pd.DataFrame(rows, columns=["run_id", "fold", "score"]), "search"


def _read_children(client, experiment_ids, runs, metric, run_folds, progress):
    parents = {r.info.run_id for r in runs}
    children = _search(client, experiment_ids, f"{_tag(T.PARENT)} IS NOT NULL AND {_tag('fold')} IS NOT NULL",
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


def _read_steps(client, experiment_ids, runs, metric, run_folds, progress):
    run_ids = [r.info.run_id for r in runs if metric in r.data.metrics]
    sizes = {rid: k * reps for rid, (k, reps) in run_folds.items()}
    with _guard(client):
        hist, method = fetch_histories(client, run_ids, metric, sizes, progress=progress)
    return hist.rename(columns={"step": "fold", "value": "score"})[["run_id", "fold", "score"]], method


def _read_means(client, runs, metric, progress):
    """One row per value of the metric's history (the latest per step), at fold 0."""
    run_ids = [r.info.run_id for r in runs if metric in r.data.metrics]
    with _guard(client):
        hist, method = fetch_histories(client, run_ids, metric, {rid: 1 for rid in run_ids}, progress=progress)
    return hist.assign(fold=0).rename(columns={"value": "score"})[["run_id", "fold", "score"]], method


def _check_single_values(raw: pd.DataFrame, runs, metric, model_tag, dataset_tag) -> None:
    """The means layout takes one value per run: name every run holding several (at different steps)."""
    counts = raw["run_id"].value_counts()
    several = {r.info.run_id: r for r in runs if counts.get(r.info.run_id, 0) > 1}
    if several:
        problems = [f"run {rid} (model '{r.data.tags[model_tag]}', dataset '{r.data.tags[dataset_tag]}') holds "
                    f"{counts[rid]} values of '{metric}'" for rid, r in list(several.items())[:10]]
        more = [f"and {len(several) - 10} more run(s)"] if len(several) > 10 else []
        raise InputError(problems + more, header=f"The means layout takes one '{metric}' value per run; per-fold "
                                                 "scores need the steps layout with their fold count (pass --folds K "
                                                 "(folds=K) or log the run param 'cv_folds'):")


def _tidy(raw: pd.DataFrame, runs, run_folds, model_tag, dataset_tag) -> pd.DataFrame:
    """Attach dataset, model, start time and folds to the raw scores; split global fold indexes; sort by dataset."""
    info = pd.DataFrame([(r.info.run_id, r.data.tags[dataset_tag], r.data.tags[model_tag], r.info.start_time,
                          run_folds[r.info.run_id][0]) for r in runs],
                        columns=["run_id", "dataset", "model", "start_time", "folds"])
    df = raw.merge(info, on="run_id", how="inner")
    if "repeat" not in df:
        df["repeat"] = -1
    is_global = df["repeat"] < 0
    df.loc[is_global, "repeat"] = df.loc[is_global, "fold"] // df.loc[is_global, "folds"]
    df.loc[is_global, "fold"] = df.loc[is_global, "fold"] % df.loc[is_global, "folds"]
    df = df.sort_values(["dataset", "model", "repeat", "fold"], kind="stable", ignore_index=True)
    return df[SCORE_COLUMNS].astype({"repeat": "int64", "fold": "int64", "score": "float64"})


# ---------------------------------------------------------------------------------------------- search


def _search(client, experiment_ids, filter_string, limit=None, progress: Progress | None = None) -> list:
    """Every run matching the filter (paged ``PAGE`` at a time), or the first ``limit``."""
    runs, token = [], None
    with _guard(client):
        while True:
            page = client.search_runs(list(experiment_ids), filter_string, max_results=limit or PAGE,
                                      page_token=token)
            runs += page
            token = page.token
            if token:
                notify(progress, "fetching", f"listed {len(runs)} runs")
            if not token or limit:
                return runs


def _check_filter(filter_string: str):
    try:
        SearchUtils.parse_search_filter(filter_string)
    except MlflowException as e:
        raise InputError(f"invalid filter string {filter_string!r}: {e.message}") from e


def _tag(key: str) -> str:
    if "`" in key:
        raise InputError(f"tag key {key!r} contains a backtick, which MLflow filters cannot express")
    return f"tags.`{key}`"


def _tag_equals(key: str, value: str) -> str:
    """``tags.`key` = 'value'``, quoted with whichever quote the value lacks (MLflow has no escapes)."""
    if "'" not in value:
        return f"{_tag(key)} = '{value}'"
    if '"' not in value:
        return f'{_tag(key)} = "{value}"'
    return f"{_tag(key)} IS NOT NULL"  # both quotes: match client-side


def _and(*clauses: str) -> str:
    return " AND ".join(c for c in clauses if c.strip())


@contextmanager
def _guard(client):
    """Turn a failing MLflow call (e.g. an unreachable server) into a message naming the tracking URI."""
    try:
        yield
    except MlflowException as e:
        raise _unreachable(client, e) from e


def _unreachable(client, e: MlflowException) -> BayesCompareError:
    return BayesCompareError(f"MLflow at {redact_uri(client.tracking_uri)} failed: {redact_uri(e.message)}")
