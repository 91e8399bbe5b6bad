"""A later look at CV runs without the work the first look did once (issue 41: "a look on a grown run costs reading
the new runs plus milliseconds"): :func:`read_grown` reads the two models' runs as :func:`.watchsources.read_cv`
does, in three MLflow calls and a few milliseconds of numpy, by what the first look found and kept in the watch run's
state tag (:func:`.watchsources.reading_state`: the layout, the model and dataset keys, the dataset).

* One search per model lists its runs (as :func:`..reads.identify.identify` does for a model key with a filter);
  one bulk call reads the metric's history of every listed run (:func:`..reads.fetch.fetch_histories`).  No key or
  layout is detected again, no other search is made, and the fold checks are numpy's on the runs' steps.
* Every run is read whole, the earlier ones too: MLflow keeps no mark of a metric logged again at an earlier step
  (the run's end time, status and latest value stay as they were: the latest value is the one at the highest
  step), so the only proof that an earlier score is unchanged is its history.  The look then checks the scores of
  every earlier look against their digests (:mod:`.watchlook`), and names the runs that hold the first changed
  repeat.
* What it does not read as the full read would (another layout, keys read beside the run, a run whose steps,
  ``cv_folds`` or ``cv_repeats`` do not make whole repeats, a run of a model without the dataset key) makes it
  answer why, and the look reads through :func:`.watchsources.read_cv`, whose checks refuse or accept as before.
"""

from __future__ import annotations

import numpy as np

from ..reads.collect import check_filter, run_keys
from ..reads.fetch import fetch_histories
from ..reads.identify import and_clauses, guard, is_comparison, search_runs, top_level
from ..sequential import Design
from ..vocabulary.options import PairOptions, SourceOptions
from .watchsources import STATE_VERSION, WatchData, paired_runs

__all__ = ["read_grown"]

#: the kinds of key read from the run itself (the listing holds them)
_READ_KINDS = ("tag", "param", "run-name")


def read_grown(client, design: Design, source: SourceOptions, pair: PairOptions, experiment_ids: list[str],
               state: dict, progress=None) -> WatchData | str:
    """The paired repeats so far, read by ``state`` (the module's docstring); or why the full read is needed."""
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
    listed = [r for clause in clauses for r in search_runs(client, experiment_ids,
                                                           and_clauses(source.filter_string, clause))]
    runs = top_level([r for r in {r.info.run_id: r for r in listed}.values() if not is_comparison(r)])
    if any(dataset_key.read(r) is None for r in runs):
        return f"a run of '{a}' or '{b}' has no {dataset_key.described}"
    runs = [r for r in runs if dataset_key.read(r) == dataset and metric in r.data.metrics]
    folds = int(design.folds)
    with guard(client):
        history, _ = fetch_histories(client, [r.info.run_id for r in runs], metric,
                                     {r.info.run_id: folds for r in runs}, progress=progress)
    values = {run_id: group.to_numpy() for run_id, group in history.groupby("run_id", sort=False)[["step", "value"]]}
    repeats = {}
    for r in runs:
        count = _whole_repeats(r, values.get(r.info.run_id), folds)
        if count is None:
            return f"run {r.info.run_id} does not hold whole repeats of {folds} folds as its params say"
        repeats[r.info.run_id] = count
    per_model = {m: sorted((r for r in runs if model_key.read(r) == m), key=lambda r: (r.info.start_time,
                                                                                       r.info.run_id))
                 for m in sorted({a, b})}
    scores = {m: [values[r.info.run_id][:, 1] for r in ordered] for m, ordered in per_model.items()}
    counts = {m: [repeats[r.info.run_id] for r in ordered] for m, ordered in per_model.items()}
    ids = {m: [r.info.run_id for r in ordered] for m, ordered in per_model.items()}
    return paired_runs(design, source.metric, pair, dataset, experiment_ids, ids, counts, scores, state)


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
