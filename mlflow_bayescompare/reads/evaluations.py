"""Read evaluation runs as MLflow records them, with nothing re-logged and nothing written, into one tidy table:
one row per (system, item, repeat, scorer) (:data:`EVAL_COLUMNS`), and what was read (:class:`EvaluationRead`).

Three kinds of run (every run of one read is of one kind):

* ``genai``: ``mlflow.genai.evaluate`` (or ``@mlflow.test``): its traces and their assessments (:mod:`.eval_traces`);
* ``classic``: ``mlflow.models.evaluate``: its ``eval_results_table.json`` (:mod:`.eval_tables`);
* ``table``: a long table (``item, scorer, value[, repeat, cluster, suite, source]``) any harness logs.

The items of two or more runs are paired by the first rule that applies (:data:`PAIRINGS`): the field ``pair_key``
names (``inputs.<field>`` or ``tag:<name>``); the ``@mlflow.test`` case (trace tag ``mlflow.test.name``, the pytest
node id with its case id) when every trace carries one; else the kind's own key: the canonical inputs of a trace
(the rule of MLflow's UI, which matches two runs' rows by their request: see the README), the row of a classic
table, the ``item`` of a long table.  Several units with one key in one run are its repeats, numbered from 0 in
time (traces) or table order.  Items that are not in every run are left out of the table, counted and listed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pandas as pd
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from ..vocabulary.console import log
from ..vocabulary.errors import InputError
from ..vocabulary.progress import Progress, notify
from .eval_runs import KINDS, label, run_kind
from .eval_tables import read_eval_table, read_long_table
from .eval_traces import LATENCY, read_traces
from .evalitems import ItemField, Units, canonical, parse_field
from .identify import guard
from .reach import check_reachable

__all__ = ["EVAL_COLUMNS", "KINDS", "PAIRINGS", "MIN_OVERLAP", "RunRead", "EvaluationRead", "read_evaluations"]

EVAL_COLUMNS = ["system", "item", "repeat", "scorer", "value", "source", "cluster", "suite"]
#: how items were paired, in the order the rules are tried
PAIRINGS = {"pair-key": "the field pair_key names", "test-case": "the @mlflow.test case (trace tag mlflow.test.name)",
            "inputs": "the canonical JSON of each trace's inputs", "row": "the row of mlflow.models.evaluate's table",
            "item": "the long table's item column"}
#: fewer items in every run than this share of the smallest run's is refused (below 1, a warning lists the rest)
MIN_OVERLAP = 0.5
_THREADS = 4
_SHOWN = 10
_PREVIEW = 200


@dataclass
class RunRead:
    """One run as read: its ``system`` (the label in the table: its name, or its id when the name is empty or
    shared), ``kind``, the ``artifact`` read (a table's), ``units`` read (traces, or rows), the scorers' units with
    no value (``errored``: an error instead of one, or an empty cell), ``without_key`` (units lacking the pairing
    key, left out), its ``items`` and ``scorers`` (those with a value)."""

    run_id: str
    name: str
    experiment_id: str
    kind: str
    system: str
    artifact: str | None
    units: int
    errored: dict[str, int]
    without_key: int
    items: int
    scorers: list[str]
    notes: list[str] = field(default_factory=list)


@dataclass
class EvaluationRead:
    """What :func:`read_evaluations` read: the runs in order, the ``pairing`` rule used (a key of
    :data:`PAIRINGS`) and the ``pair_key`` field, the ``scorers`` in the table, the items of each system left out
    because another run lacks them (``unpaired``), each item's inputs (canonical JSON, cut to 200 characters) and
    the warnings given; ``arrival``: each system's items in the order they came (traces by time, a table's rows
    in order), which a sequential look reads them in."""

    runs: list[RunRead]
    pairing: str
    pair_key: str | None
    scorers: list[str]
    unpaired: dict[str, list[str]]
    inputs: dict[str, str]
    notes: list[str] = field(default_factory=list)
    arrival: dict[str, list[str]] = field(default_factory=dict)

    @property
    def systems(self) -> list[str]:
        return [r.system for r in self.runs]


def read_evaluations(run_ids: Sequence[str], *, pair_key: str | None = None, cluster: str | None = None,
                     suite: str | None = None, scorers: Sequence[str] | None = None,
                     table_artifact: str | None = None, tracking_uri: str | None = None,
                     can_read: Callable[[str], bool] | None = None, progress: Progress | None = None,
                     read_genai=read_traces) -> tuple[pd.DataFrame, EvaluationRead]:
    """The scores of two or more evaluation runs, paired by item (see the module's docstring), as a table of
    :data:`EVAL_COLUMNS` (``value`` as MLflow returned it; ``cluster``/``suite`` '' when none), and what was read.

    ``scorers``: those to read (default: those every run has; ``latency`` asks for traces' latency in ms);
    ``cluster``/``suite``/``pair_key``: ``inputs.<field>`` or ``tag:<name>``; ``table_artifact``: the table to read
    (a name ending in ``eval_results_table.json`` is read as ``mlflow.models.evaluate``'s, any other as a long
    table); ``can_read(experiment_id)``: whether the caller may read the run (a run it may not read is "not found",
    as a missing one); ``read_genai``: the reader of genai runs (a watch's: :mod:`.eval_kept`).  Every problem is
    an :class:`InputError` naming the run, scorer or item."""
    fields = {name: parse_field(text, name) for name, text in
              (("pair_key", pair_key), ("cluster", cluster), ("suite", suite))}
    ids, wanted = _run_ids(run_ids), _scorer_names(scorers)
    client = MlflowClient(tracking_uri)
    check_reachable(client.tracking_uri)
    with guard(client):
        runs = _runs(client, ids, can_read)
        kinds = _kinds(client, runs, table_artifact)
        read = _read_all(client, runs, kinds, LATENCY in (wanted or ()), progress, read_genai)
    systems = _systems(runs)
    _check_not_empty(runs, kinds, read)
    pairing = _pairing(kinds[0][0], fields["pair_key"], read)
    keyed = [_keyed(units, pairing, fields, system) for units, system in zip(read, systems)]
    _check_keyed(runs, keyed, fields["pair_key"])
    table = pd.concat([_scored(units, k) for units, k in zip(read, keyed)], ignore_index=True)
    table, notes = _one_per_item(table, fields)
    scorers_read = _chosen_scorers(table, systems, wanted)
    unpaired, more = _paired_items(keyed, systems, pairing)
    notes += more
    table = table[table["scorer"].isin(scorers_read) & ~table["item"].isin(_left_out(unpaired))]
    table = _ordered(table, systems, scorers_read)
    runs_read = [_run_read(run, kind, system, units, k, table) for run, kind, system, units, k
                 in zip(runs, kinds, systems, read, keyed)]
    for r in runs_read:
        notes += [f"run '{r.system}': {note}" for note in r.notes]
    for note in notes:
        log.warning("%s", note)
    inputs = _inputs_preview(keyed, set(table["item"]))
    arrival = {system: list(pd.unique(k["item"].dropna())) for system, k in zip(systems, keyed)}
    return table, EvaluationRead(runs_read, pairing, None if fields["pair_key"] is None else str(fields["pair_key"]),
                                 scorers_read, unpaired, inputs, notes, arrival)


# ---------------------------------------------------------------------------------------------- the runs


def _run_ids(run_ids) -> list[str]:
    if isinstance(run_ids, str) or not all(isinstance(r, str) and r.strip() for r in run_ids):
        raise InputError(f"run_ids must be a list of run ids; got {run_ids!r}")
    ids = [r.strip() for r in run_ids]
    twice = sorted({r for r in ids if ids.count(r) > 1})
    if twice:
        raise InputError(f"run(s) named more than once: {', '.join(twice)}")
    if len(ids) < 2:
        raise InputError(f"name at least two evaluation runs to compare; got {len(ids)}")
    return ids


def _scorer_names(scorers) -> list[str] | None:
    if scorers is None:
        return None
    if isinstance(scorers, str) or not all(isinstance(s, str) and s for s in scorers) or not scorers:
        raise InputError(f"scorers must be a list of scorer names; got {scorers!r}")
    return list(dict.fromkeys(scorers))


def _runs(client, ids: list[str], can_read) -> list:
    """The runs, in order; a run that does not exist, is deleted or may not be read is "not found", in the same
    words for each."""
    runs, absent = [], []
    for rid in ids:
        try:
            run = client.get_run(rid)
        except MlflowException as exc:
            if exc.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "PERMISSION_DENIED"):
                raise
            run = None
        if run is None or run.info.lifecycle_stage != "active" \
                or (can_read is not None and not can_read(run.info.experiment_id)):
            absent.append(f"run '{rid}' not found")
        else:
            runs.append(run)
    if absent:
        raise InputError(absent, header="Cannot read the evaluation runs:")
    return runs


def _kinds(client, runs, table_artifact: str | None) -> list[tuple[str, str | None]]:
    """Each run's kind and the artifact it is read from; one error naming every run that is not an evaluation run,
    or runs of several kinds."""
    found = [run_kind(client, run, table_artifact) for run in runs]
    problems = [f for f in found if isinstance(f, str)]
    if problems:
        raise InputError(problems, header="Cannot read the evaluation runs:")
    if len({kind for kind, _ in found}) > 1:
        raise InputError([f"run {label(run)}: {kind}" + (f" ({artifact})" if artifact else "")
                          for run, (kind, artifact) in zip(runs, found)],
                         header="The runs are evaluations of different kinds, whose items do not pair "
                                "(genai: mlflow.genai.evaluate's traces; classic: mlflow.models.evaluate's table; "
                                "table: a long table):")
    return found


def _read_all(client, runs, kinds, latency: bool, progress: Progress | None, read_genai) -> list[Units]:
    """Every run's units, a few runs at once."""
    def one(pair):
        run, (kind, artifact) = pair
        if kind == "genai":
            return read_genai(client, run, latency=latency)
        return (read_eval_table if kind == "classic" else read_long_table)(client, run, artifact)

    notify(progress, "fetching", f"reading {len(runs)} evaluation runs")
    out = []
    with ThreadPoolExecutor(min(_THREADS, len(runs))) as pool:
        for done, units in enumerate(pool.map(one, zip(runs, kinds)), 1):
            out.append(units)
            notify(progress, "fetching", f"read {done}/{len(runs)} evaluation runs ({len(units.units)} items)")
    return out


def _systems(runs) -> list[str]:
    names = [r.info.run_name or "" for r in runs]
    return [n if n and names.count(n) == 1 else r.info.run_id for n, r in zip(names, runs)]


def _check_not_empty(runs, kinds, read: list[Units]) -> None:
    """An evaluation run without items is said plainly, not compared as empty."""
    problems = [f"run {label(run)} holds no per-item data: " + (
        "no trace is linked to it (MLflow writes traces asynchronously: if the evaluation has just ended, read it "
        "again; MLflow 3.17 logs none when MLFLOW_GENAI_EVAL_SKIP_TRACE_VALIDATION=True)" if kind == "genai"
        else f"its table {artifact} has no rows") for run, (kind, artifact), units in zip(runs, kinds, read)
        if units.units.empty]
    if problems:
        raise InputError(problems, header="Cannot compare the evaluation runs:")


# ---------------------------------------------------------------------------------------------- the items


def _pairing(kind: str, pair_key: ItemField | None, read: list[Units]) -> str:
    if pair_key is not None:
        return "pair-key"
    if kind == "genai" and all(units.units["case"].notna().all() for units in read):
        return "test-case"
    return {"genai": "inputs", "classic": "row", "table": "item"}[kind]


def _keyed(units: Units, pairing: str, fields: dict[str, ItemField | None], system: str) -> pd.DataFrame:
    """The run's units with their ``item`` (None without a key), ``repeat``, ``cluster``, ``suite`` and
    ``system``, in the order of their repeats."""
    u = units.units.copy()
    if pairing == "pair-key":
        u["item"] = [fields["pair_key"].read(i, t) for i, t in zip(u["inputs"], u["tags"])]
    elif pairing == "test-case":
        several = u.groupby("case")["default_item"].nunique() > 1
        u["item"] = [f"{c} · {d}" if several[c] else c for c, d in zip(u["case"], u["default_item"])]
    else:
        u["item"] = u["default_item"]
    for name in ("cluster", "suite"):
        spec = fields[name]
        values = [spec.read(i, t) for i, t in zip(u["inputs"], u["tags"])] if spec else list(u[name])
        u[name] = [v or "" for v in values]
    order = u["order"].tolist()  # (time, id) tuples: Python's order, read once (not a frame lookup per item)
    u = u.iloc[sorted(range(len(u)), key=order.__getitem__)]
    u["repeat"] = u.groupby("item", sort=False, dropna=False).cumcount().astype("int64")
    return u.assign(system=system)


def _check_keyed(runs, keyed: list[pd.DataFrame], pair_key: ItemField | None) -> None:
    """A run none of whose units has a pairing key is an error naming it and the key."""
    problems = [f"run {label(run)}: none of its {len(k)} items carries {pair_key or 'inputs'}"
                for run, k in zip(runs, keyed) if k["item"].isna().all()]
    if problems:
        raise InputError(problems, header="Cannot pair the items:")


def _scored(units: Units, keyed: pd.DataFrame) -> pd.DataFrame:
    """The values of the run's units that have an item, with the units' keys."""
    have = keyed[keyed["item"].notna()]
    table = units.scores.merge(have[["unit", "system", "item", "repeat", "cluster", "suite"]], on="unit")
    return table[EVAL_COLUMNS]


def _one_per_item(table: pd.DataFrame, fields) -> tuple[pd.DataFrame, list[str]]:
    """Each item's one cluster and suite across runs and repeats (an item holding two is an error naming it);
    items without one get ''."""
    notes = []
    for name in ("cluster", "suite"):
        named = table[table[name] != ""].groupby("item")[name].unique()
        several = named[named.map(len) > 1]
        if len(several):
            raise InputError([f"item {item!r}: {', '.join(map(repr, values))}"
                              for item, values in several.head(_SHOWN).items()],
                             header=f"Items with several values of {name} ({fields[name] or name}):")
        first = {item: str(values[0]) for item, values in named.items()}
        table[name] = [first.get(item, "") for item in table["item"]]
        lacking = table.loc[table[name] == "", "item"].nunique()
        if fields[name] is not None and lacking:
            notes.append(f"{lacking} item(s) carry no {fields[name]}: their {name} is ''")
    return table, notes


def _chosen_scorers(table: pd.DataFrame, systems: list[str], wanted: list[str] | None) -> list[str]:
    """The scorers asked for (each must be in every run), else those every run has (the others said)."""
    have = {s: set(table.loc[table["system"] == s, "scorer"]) for s in systems}
    every = set.intersection(*have.values())
    if wanted is None:
        partial = sorted(set.union(*have.values()) - every)
        if not every:
            raise InputError([f"run '{s}': {', '.join(sorted(have[s])) or 'no scorer with a value'}" for s in systems],
                             header="No scorer is in every run:")
        if partial:
            log.warning("scorers not in every run are left out: %s", ", ".join(
                f"{name!r} (in {', '.join(s for s in systems if name in have[s])})" for name in partial))
        return sorted(every)
    problems = [f"scorer {name!r} is in run(s) {', '.join(repr(s) for s in systems if name in have[s])} only"
                if any(name in have[s] for s in systems) else
                f"scorer {name!r} is in none of the runs (with a value)" for name in wanted if name not in every]
    if problems:
        raise InputError(problems + [f"run '{s}' has: {', '.join(sorted(have[s])) or 'none'}" for s in systems],
                         header="Scorers missing:")
    return wanted


def _paired_items(keyed: list[pd.DataFrame], systems: list[str], pairing: str) -> tuple[dict, list[str]]:
    """The items of each system not in every run; an error when the runs share none, or fewer than
    :data:`MIN_OVERLAP` of the smallest run's, a warning naming the others when some are left out."""
    items = {s: set(k["item"].dropna()) for s, k in zip(systems, keyed)}
    common = set.intersection(*items.values())
    smallest = min(len(v) for v in items.values())
    counts = ", ".join(f"'{s}' {len(items[s])}" for s in systems)
    hint = ("; if the runs evaluated the same items under other inputs, pair them by a field: pair_key "
            "inputs.<field> or tag:<name>") if pairing in ("inputs", "test-case") else ""
    if not common:
        raise InputError(f"the runs share no item (paired by {PAIRINGS[pairing]}); items per run: {counts}{hint}")
    if len(common) < MIN_OVERLAP * smallest:
        raise InputError(f"the runs share {len(common)} items, {len(common) / smallest:.0%} of the smallest run's "
                         f"{smallest} (at least {MIN_OVERLAP:.0%} needed; paired by {PAIRINGS[pairing]}); items per "
                         f"run: {counts}{hint}")
    unpaired = {s: sorted(items[s] - common) for s in systems}
    notes = [f"{len(v)} item(s) of run '{s}' are not in every run and are left out: "
             f"{', '.join(map(repr, v[:_SHOWN]))}{' …' if len(v) > _SHOWN else ''}"
             for s, v in unpaired.items() if v]
    return unpaired, notes


def _left_out(unpaired: dict[str, list[str]]) -> set[str]:
    return {item for items in unpaired.values() for item in items}


def _ordered(table: pd.DataFrame, systems: list[str], scorers: list[str]) -> pd.DataFrame:
    order = {"system": {s: i for i, s in enumerate(systems)}, "scorer": {s: i for i, s in enumerate(scorers)}}
    table = table.assign(_s=table["system"].map(order["system"]), _c=table["scorer"].map(order["scorer"]))
    table = table.sort_values(["_s", "item", "repeat", "_c"], kind="stable", ignore_index=True)
    return table[EVAL_COLUMNS].astype({"repeat": "int64", "value": object})


def _run_read(run, kind: tuple[str, str | None], system: str, units: Units, keyed: pd.DataFrame,
              table: pd.DataFrame) -> RunRead:
    mine, lacking = table[table["system"] == system], int(keyed["item"].isna().sum())
    notes = list(units.notes) + ([f"{lacking} of its {len(keyed)} {'traces' if kind[0] == 'genai' else 'rows'} "
                                  "have no pairing key and are left out"] if lacking else [])
    return RunRead(run.info.run_id, run.info.run_name or "", run.info.experiment_id, kind[0], system, kind[1],
                   len(keyed), dict(sorted(units.errored.items())), lacking, int(mine["item"].nunique()),
                   list(dict.fromkeys(mine["scorer"])), notes)


def _inputs_preview(keyed: list[pd.DataFrame], items: set[str]) -> dict[str, str]:
    out = {}
    for k in keyed:
        for item, inputs in zip(k["item"], k["inputs"]):
            if item in items and item not in out and inputs not in (None, {}):
                out[item] = canonical(inputs)[:_PREVIEW]
    return out
