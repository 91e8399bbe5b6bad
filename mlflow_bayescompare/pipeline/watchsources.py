"""What a watch (:mod:`.watch`) reads at a look: two models' cross-validation runs of one dataset as their repeats
came (:func:`read_cv`), or two evaluation runs as their items came (:func:`read_evals`), as paired scores in that
order, with the source runs they came from.

* CV runs are found and read as ``compare`` reads them (:func:`..reads.collect.collect_scores`: the experiments, the
  metric, the model and dataset keys, the layouts).  A model's runs on the dataset are its repeats in the order the
  runs started (a run of :func:`..reads.cvlog.log_cv_scores` per repeat, or a run of several repeats); repeat j of A
  pairs with repeat j of B, and a repeat one model has and the other not yet waits for it.  The paired repeats pass
  the product's checks of a comparison's folds (:func:`..scores.tensor.from_tidy`: missing, extra or non-finite
  folds, fold counts), with the design's ``folds`` as the runs' (a run whose ``cv_folds`` says otherwise is refused).
* Evaluation runs are read as :func:`..reads.evaluations.read_evaluations` reads them (genai traces, a classic table,
  a harness's long table), one scorer, its values as the evaluation family reads them
  (:func:`..families.evals.pairing.align`: pass words, repeats averaged); an item counts once both runs have a value
  for it, in the order it came to the later of the two (:attr:`~..reads.evaluations.EvaluationRead.arrival`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..families.evals.pairing import align, listed
from ..reads.collect import collect_scores
from ..reads.eval_traces import read_traces
from ..reads.evaluations import read_evaluations
from ..scores.tensor import from_tidy
from ..sequential import Design
from ..vocabulary.errors import InputError
from ..vocabulary.options import PairOptions, SourceOptions, WatchOptions
from ..vocabulary.outcomes import counted

__all__ = ["SourceRun", "WatchData", "STATE_VERSION", "READS_VERSION", "CLOCK_MARGIN_MS", "read_cv", "paired_repeats",
           "reading_state", "paired_runs", "source_runs", "read_evals"]

#: the version of what a CV watch keeps for its later looks (:func:`reading_state`)
STATE_VERSION = 1
#: the version of what a look keeps of each source run it read (``watch_reads.json``: CV runs, traces)
READS_VERSION = 1
#: how long before the last look's read a source (a run, a trace) may have ended or started and still be read again
#: as possibly new or changed: the clocks of the machines that log and read
CLOCK_MARGIN_MS = 10 * 60 * 1000

_KIND = {"eval-binary": "pass_fail", "eval-continuous": "continuous"}
_SHOWN = 5


@dataclass(frozen=True)
class SourceRun:
    """A run a look read: its id, side (``A`` or ``B``), model (or system) and what of it was read."""

    run_id: str
    side: str
    name: str
    read: str


@dataclass
class WatchData:
    """The paired scores so far, in the order they came (per fold, repeat after repeat; or per item), the names of
    the two sides, the metric or scorer, the dataset (CV), the source runs whose scores are paired, the source
    experiments, what the reading said and (CV) what a later look reads by (:func:`reading_state`); read by the
    watch run's state (:mod:`.watchgrown`), what each source run gave (``reads``, kept for the next look), how
    many runs' scores were taken from the last look's unread (``reused``) and the runs read whole whose earlier
    items are not as the last look kept them (``changed``: evaluation runs, :mod:`.watchevals`)."""

    model_a: str
    model_b: str
    measure: str
    dataset: str | None
    scores_a: np.ndarray
    scores_b: np.ndarray
    runs: list[SourceRun]
    experiment_ids: list[str]
    notes: list[str] = field(default_factory=list)
    state: dict | None = None
    reads: dict | None = None
    reused: int = 0
    changed: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- CV runs


def read_cv(client, design: Design, source: SourceOptions, pair: PairOptions, dataset: str | None,
            experiment_ids: list[str], progress=None) -> WatchData:
    """The two models' per-fold scores on one dataset so far, repeat after repeat (the module's docstring)."""
    a, b = pair.model_a, pair.model_b
    collected = collect_scores(client, experiment_ids, source.metric, [a, b], filter_string=source.filter_string,
                               layout=source.layout, model_key=source.model_key, dataset_key=source.dataset_key,
                               folds=design.folds, progress=progress)
    dataset = _dataset(collected.scores, a, b, dataset)
    state = reading_state(collected.layout, collected.model_key, collected.dataset_key, dataset)
    scores_a, scores_b, runs, notes = paired_repeats(collected.scores, design, pair, dataset)
    return WatchData(a, b, source.metric, dataset, scores_a, scores_b, runs, experiment_ids, notes, state)


def paired_repeats(scores: pd.DataFrame, design: Design, pair: PairOptions, dataset: str, repeats: int | None = None):
    """The pair's per-fold scores on ``dataset`` (tidy ``scores`` as :func:`collect_scores` reads them), their
    repeats paired in order (the first ``repeats`` only, when given): (scores A, scores B, the source runs read,
    notes)."""
    rows, ids, counts = _repeats_in_order(scores[scores["dataset"] == dataset])
    runs, notes, common = source_runs(pair, ids, counts, repeats)
    if common == 0:
        return np.empty(0), np.empty(0), runs, notes
    kept = rows[rows["repeat"] < common].rename(columns={"run_id": "source_run"})
    table = from_tidy(kept, pair.model_a, pair.model_b, folds=design.folds, run_id_col="no_run_ids",
                      time_col=None).table
    return table["score_a"].to_numpy(float), table["score_b"].to_numpy(float), runs, notes


def reading_state(layout: str, model_key: str, dataset_key: str, dataset: str) -> dict:
    """What a later look reads by (:mod:`.watchgrown`; kept in the watch run's state tag): the layout, the model and
    dataset keys, the dataset."""
    return {"v": STATE_VERSION, "layout": layout, "model_key": model_key, "dataset_key": dataset_key,
            "dataset": dataset}


def paired_runs(design: Design, metric: str, pair: PairOptions, dataset: str, experiment_ids: list[str],
                ids: dict[str, list[str]], counts: dict[str, list[int]], scores: dict[str, list[np.ndarray]],
                state: dict) -> WatchData:
    """The paired repeats of runs already checked (each model's run ids in their order, their repeat counts and
    their scores, run-major: repeat × folds + fold)."""
    a, b = pair.model_a, pair.model_b
    runs, notes, common = source_runs(pair, ids, counts)
    end = common * int(design.folds)
    x = {m: np.concatenate(scores[m])[:end] if scores.get(m) else np.empty(0) for m in (a, b)}
    return WatchData(a, b, metric, dataset, x[a], x[b], runs, experiment_ids, notes, state)


def source_runs(pair: PairOptions, ids: dict[str, list[str]], counts: dict[str, list[int]],
                repeats: int | None = None) -> tuple[list[SourceRun], list[str], int]:
    """The runs whose repeats are paired (the models in name order, each's runs in their order), the notes of the
    repeats one model has and the other not yet, and how many repeats are paired: repeat j of A pairs with repeat j
    of B; the first ``repeats`` only, when given."""
    a, b = pair.model_a, pair.model_b
    total = {m: sum(c) for m, c in counts.items()}
    common = min(total.get(a, 0), total.get(b, 0))
    notes = [f"model '{m}' has {counted(total[m] - common, 'repeat')} more than '{o}': "
             f"{'it waits' if total[m] - common == 1 else 'they wait'} for '{o}''s"
             for m, o in ((a, b), (b, a)) if total.get(m, 0) > common]
    common = common if repeats is None else min(common, repeats)
    runs = []
    for model in sorted(ids):
        offset = 0
        for run_id, count in zip(ids[model], counts[model]):
            read = f"repeat {offset + 1}" if count == 1 else f"repeats {offset + 1}-{offset + count}"
            if offset < common:
                runs.append(SourceRun(run_id, "A" if model == a else "B", str(model), read))
            offset += count
    return runs, notes, common


def _dataset(scores: pd.DataFrame, a: str, b: str, asked: str | None) -> str:
    """The dataset asked for (both models must have it), else the one dataset both have."""
    have = {m: list(dict.fromkeys(scores.loc[scores["model"] == m, "dataset"])) for m in (a, b)}
    shared = [d for d in have[a] if d in set(have[b])]
    if asked is not None:
        lacking = [m for m in (a, b) if asked not in have[m]]
        if lacking:
            raise InputError([f"model '{m}' has no scores on dataset '{asked}'; its datasets: "
                              f"{listed(have[m])}" for m in lacking], header="Cannot watch:")
        return asked
    if len(shared) != 1:
        raise InputError(f"models '{a}' and '{b}' share {counted(len(shared), 'dataset')}"
                         f"{': ' + listed(shared) if shared else ''}; a watch reads the repeats of one: name it "
                         "(--dataset)", header="Cannot watch:")
    return shared[0]


def _repeats_in_order(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]], dict[str, list[int]]]:
    """Each model's repeats numbered across its runs in the order the runs started (then by id); each model's run
    ids in that order and their repeat counts."""
    if rows.empty:
        return rows, {}, {}
    runs = rows.drop_duplicates("run_id")[["model", "run_id", "start_time"]].sort_values(
        ["model", "start_time", "run_id"], kind="stable")
    local = rows.groupby("run_id")["repeat"].rank(method="dense").astype("int64") - 1
    count = local.groupby(rows["run_id"]).max() + 1
    runs = runs.assign(count=runs["run_id"].map(count).to_numpy())
    runs["offset"] = runs.groupby("model")["count"].cumsum() - runs["count"]
    offset = rows["run_id"].map(runs.set_index("run_id")["offset"])
    ids = {str(m): list(g["run_id"]) for m, g in runs.groupby("model", sort=True)}
    counts = {str(m): [int(c) for c in g["count"]] for m, g in runs.groupby("model", sort=True)}
    return rows.assign(repeat=local + offset), ids, counts


# ---------------------------------------------------------------------------------------------- evaluation runs


def read_evals(design: Design, watch: WatchOptions, *, tracking_uri: str | None = None, can_read=None,
               progress=None, read_genai=read_traces) -> WatchData:
    """Two evaluation runs' values of one scorer on the items both hold so far, in the order they came (the
    module's docstring); ``read_genai``: the reader of genai runs (:mod:`.watchevals`)."""
    table, read = read_evaluations([watch.run_a, watch.run_b], pair_key=watch.pair_key,
                                   scorers=None if watch.scorer is None else [watch.scorer],
                                   table_artifact=watch.table_artifact, tracking_uri=tracking_uri,
                                   can_read=can_read, progress=progress, read_genai=read_genai)
    scorer = watch.scorer or _one_scorer(read.scorers)
    a, b = read.systems
    aligned = align(table, (a, b), [scorer], kinds={scorer: _KIND[design.test]})
    values = aligned.scorers[scorer]
    keys = _item_keys(table)
    order = _arrival_order(aligned.items, keys, read.arrival[a], read.arrival[b])
    complete = values.complete[order]
    order, notes = order[complete], list(read.notes)
    if (~complete).any():
        notes.append(f"{counted(int((~complete).sum()), 'item')} without a value of both runs are left out")
    _check_values(design, scorer, values, aligned.items, order, (a, b))
    x = values.values[order]
    runs = [SourceRun(r.run_id, side, r.system, f"{counted(len(order), 'item')} of scorer {scorer}")
            for side, r in zip("AB", read.runs)]
    return WatchData(a, b, scorer, None, x[:, 0], x[:, 1], runs, [read.runs[0].experiment_id], notes)


def _one_scorer(scorers: list[str]) -> str:
    if len(scorers) != 1:
        raise InputError(f"the runs share {counted(len(scorers), 'scorer')} ({listed(scorers)}); a watch compares "
                         "one: name it (--scorer)", header="Cannot watch:")
    return scorers[0]


def _item_keys(table: pd.DataFrame) -> dict[str, str]:
    """Each item's key in the evaluation family's arrays (``suite/item`` when the table has suites) → the item."""
    suites = table["suite"].ne("").any()
    return {(f"{s}/{i}" if suites else i): i for i, s in zip(table["item"], table["suite"])}


def _arrival_order(items: np.ndarray, keys: dict[str, str], arrived_a: list[str], arrived_b: list[str]) -> np.ndarray:
    """The positions of ``items`` in the order each came to the later of the two runs (then A's order)."""
    at_a, at_b = ({item: i for i, item in enumerate(arrived)} for arrived in (arrived_a, arrived_b))
    when = [(max(at_a[keys[k]], at_b[keys[k]]), at_a[keys[k]]) for k in items]
    return np.array(sorted(range(len(items)), key=when.__getitem__), dtype=np.int64)


def _check_values(design: Design, scorer: str, values, items: np.ndarray, order: np.ndarray, systems) -> None:
    """A pass/fail item evaluated several times (its mean is no pass or fail), or a value outside the design's
    score range, is refused naming the item and the run."""
    problems = []
    if design.test == "eval-binary":
        repeated = [i for i in order if (values.repeats[i] > 1).any()]
        if repeated:
            problems.append(f"scorer {scorer!r}: {counted(len(repeated), 'item')} evaluated more than once "
                            f"({listed([items[i] for i in repeated], _SHOWN)}); eval-binary takes one pass or fail "
                            "per item (eval-continuous compares their mean)")
    low, high = design.score_range
    for j, system in enumerate(systems):
        outside = [i for i in order if not low <= values.values[i, j] <= high]
        if outside:
            shown = ", ".join(f"{items[i]!r} ({values.values[i, j]:g})" for i in outside[:_SHOWN])
            problems.append(f"run '{system}', scorer {scorer!r}: {counted(len(outside), 'value')} outside the "
                            f"design's score_range {low:g},{high:g}: {shown}")
    if problems:
        raise InputError(problems, header="Cannot watch:")
