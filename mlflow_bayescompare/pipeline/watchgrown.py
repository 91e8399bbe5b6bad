"""A later look at CV runs without the work the first look did once (issue 41: "a look on a grown run costs reading
the new runs plus milliseconds"): :func:`read_grown` reads the two models' runs as :func:`.watchsources.read_cv`
does, by what the first look found and kept in the watch run's state tag (:func:`.watchsources.reading_state`: the
layout, the model and dataset keys, the dataset), and by what each source run gave at the last look (``kept``: the
watch run's ``watch_reads.json``, :mod:`..runs.watchrun`).

* With ``kept``, only the runs that can be new or changed are listed: those ended since the last look's read began
  (less :data:`.watchsources.CLOCK_MARGIN_MS` for the clocks of the machines that log and read) and those still
  RUNNING (two searches, MLflow's filter has no OR; of every model, the two kept), and one search lists the deleted
  runs, so that a run an earlier look read and deleted since is named.  A listed run whose listing says what it said
  then (its status, end time and the metric's latest step, timestamp and value: its signature) keeps its kept scores,
  and so does a kept run not listed; only the others' histories are read (one bulk call,
  :func:`..reads.fetch.fetch_histories`).  Such a read says how many runs it took unread
  (:attr:`.watchsources.WatchData.reused`).
* Without ``kept``, every run is listed (one search per model) and every history read.  This is the read the look
  makes before it keeps or returns anything but ``continue`` (:mod:`.watchlook`): MLflow keeps no mark of a metric
  logged again at an earlier step (the run's end time, status and latest value stay as they were: the latest value
  is the one at the highest step), so only the histories prove an earlier score unchanged, and the digests of
  earlier looks then refuse a changed one, naming the runs that hold the first changed repeat.  A score logged
  again into an earlier run is so refused at the latest at the look that would decide; a look that continues
  before may not see it.
* What it does not read as the full read would (another layout, keys read beside the run, a run whose steps,
  ``cv_folds`` or ``cv_repeats`` do not make whole repeats, a run of a model without the dataset key) makes it
  answer why, and the look reads through :func:`.watchsources.read_cv`, whose checks refuse or accept as before.
"""

from __future__ import annotations

import time

import numpy as np

from ..reads.collect import check_filter, run_keys
from ..reads.fetch import fetch_histories
from ..reads.identify import and_clauses, guard, is_comparison, search_runs, top_level
from ..sequential import Design
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.options import PairOptions, SourceOptions
from .watchsources import CLOCK_MARGIN_MS, READS_VERSION, STATE_VERSION, WatchData, paired_runs

__all__ = ["read_grown"]

#: the kinds of key read from the run itself (the listing holds them)
_READ_KINDS = ("tag", "param", "run-name")


def read_grown(client, design: Design, source: SourceOptions, pair: PairOptions, experiment_ids: list[str],
               state: dict, kept: dict | None = None, progress=None) -> WatchData | str:
    """The paired repeats so far, read by ``state`` and ``kept`` (the module's docstring); or why the full read is
    needed."""
    if state.get("v") != STATE_VERSION:
        return f"the watch run's state is of another version than {STATE_VERSION}"
    if state.get("layout") != "steps":
        return f"runs of the {state.get('layout')} layout are read whole"
    model_key, dataset_key = run_keys(state["model_key"], state["dataset_key"])
    a, b, dataset, metric = pair.model_a, pair.model_b, state["dataset"], source.metric
    clauses = [model_key.equals_clause(m) for m in (a, b)]
    if model_key.kind not in _READ_KINDS or dataset_key.kind not in _READ_KINDS or not all(clauses):
        return f"the keys {model_key} and {dataset_key} are not read from the runs' listing"
    check_filter(source.filter_string)
    read_at = int(time.time() * 1000)
    kept = kept if kept and kept.get("v") == READS_VERSION else None
    before = kept["runs"] if kept else {}
    listed, gone = _listed(client, experiment_ids, source.filter_string, model_key, (a, b), kept)
    runs = [r for r in top_level(listed) if r.data.tags.get(T.PARENT) not in before]
    if any(dataset_key.read(r) is None for r in runs):
        return f"a run of '{a}' or '{b}' has no {dataset_key.described}"
    unlisted = set(before) - gone - {r.info.run_id for r in listed}
    entries = {run_id: before[run_id] for run_id in unlisted}
    fresh = []
    for r in (r for r in runs if dataset_key.read(r) == dataset and metric in r.data.metrics):
        now = _listing(r, model_key.read(r), metric)
        same = before.get(r.info.run_id, {})
        if all(same.get(k) == v for k, v in now.items()):
            entries[r.info.run_id] = same
        else:
            fresh.append((r, now))
    problem = _read_fresh(client, fresh, metric, int(design.folds), entries, progress)
    if problem:
        return problem
    per_model = {m: sorted((i for i, e in entries.items() if e["model"] == m), key=lambda i: (
        entries[i]["start_time"], i)) for m in sorted({a, b})}
    scores = {m: [np.asarray(entries[i]["scores"], dtype=np.float64) for i in ids] for m, ids in per_model.items()}
    counts = {m: [entries[i]["repeats"] for i in ids] for m, ids in per_model.items()}
    data = paired_runs(design, metric, pair, dataset, experiment_ids, per_model, counts, scores, state)
    data.reads = {"v": READS_VERSION, "read_at": read_at, "runs": entries}
    data.reused = len(entries) - len(fresh)
    return data


def _listed(client, experiment_ids: list[str], filter_string: str, model_key, models: tuple[str, str],
            kept: dict | None):
    """The runs of the two models to read but comparisons: every one (a search per model), or with ``kept`` those
    ended since its read began, less the margin, or still running (a search each, of every model's runs: few, and
    one search fewer than per model); and (with ``kept``) the kept runs deleted since."""
    if kept is None:
        filters, gone = [and_clauses(filter_string, model_key.equals_clause(m)) for m in models], set()
    else:
        since = int(kept["read_at"]) - CLOCK_MARGIN_MS  # no comparison (a watch run is RUNNING between looks)
        filters = [and_clauses(filter_string, f"tags.`{T.KIND}` IS NULL", when)
                   for when in (f"attributes.end_time >= {since}", "attributes.status = 'RUNNING'")]
        gone = {r.info.run_id for r in search_runs(client, experiment_ids, filter_string, deleted=True)}
        gone &= set(kept["runs"])
    listed = {r.info.run_id: r for f in filters for r in search_runs(client, experiment_ids, f)}
    return [r for r in listed.values() if not is_comparison(r) and model_key.read(r) in models], gone


def _listing(run, model: str, metric: str) -> dict:
    """What the listing says of a source run: its model, start time and signature (status, end time, the metric's
    latest step, timestamp and value), as kept."""
    step, timestamp, value = mlflow_internals.latest_metric(run, metric)
    return {"model": model, "start_time": run.info.start_time,
            "signature": [run.info.status, run.info.end_time, step, timestamp, value]}


def _read_fresh(client, fresh: list, metric: str, folds: int, entries: dict, progress) -> str | None:
    """Read the histories of the ``fresh`` runs (run, listing) into ``entries``: their repeats and scores; or why
    a run is not read so."""
    if not fresh:
        return None
    ids = [r.info.run_id for r, _ in fresh]
    with guard(client):
        history, _ = fetch_histories(client, ids, metric, {run_id: folds for run_id in ids}, progress=progress)
    values = {run_id: group.to_numpy() for run_id, group in history.groupby("run_id", sort=False)[["step", "value"]]}
    for r, listing in fresh:
        count = _whole_repeats(r, values.get(r.info.run_id), folds)
        if count is None:
            return f"run {r.info.run_id} does not hold whole repeats of {folds} folds as its params say"
        entries[r.info.run_id] = {**listing, "repeats": count, "scores": values[r.info.run_id][:, 1].tolist()}
    return None


def _whole_repeats(run, steps_values: np.ndarray | None, folds: int) -> int | None:
    """The run's repeats when its steps are 0 … folds × repeats - 1 with finite values, ``cv_repeats`` (when
    logged) says as many and ``cv_folds`` (when logged) is ``folds``; else None."""
    params = run.data.params
    if steps_values is None or params.get("cv_folds", str(folds)).strip() != str(folds):
        return None
    steps = steps_values[:, 0]
    count, extra = divmod(len(steps), folds)
    logged = params.get("cv_repeats", str(count) if count else "1").strip()
    if extra or not count or logged != str(count) or not np.array_equal(steps, np.arange(len(steps))):
        return None
    return count if np.isfinite(steps_values[:, 1]).all() else None
