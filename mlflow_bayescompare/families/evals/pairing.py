"""The input contract of the evaluation comparisons, and the paired per-scorer arrays made from it.

The table (the evaluation-run reader writes it): one row per (system, item, repeat, scorer), columns

=========  ======================================================================================================
system     str: the system evaluated (a run, a prompt version, a model)
item       str: the pairing key (the same question asked of every system)
repeat     int: which evaluation of the item (0 when each is evaluated once)
scorer     str: the scorer or judge (``correctness``, ``latency``)
value      the raw value: bool, int, float or str; None or NaN for a missing or errored assessment
cluster    str: the item's group of related items (passage, template, conversation); "" for none
suite      str: the item's evaluation suite (a dataset); "" for none
=========  ======================================================================================================

``repeat``, ``cluster`` and ``suite`` may be left out (0, "", "").  Items are paired by ``(suite, item)``.  Only
the items every system has are compared; the others are counted and named per system (:attr:`Aligned.unpaired`),
with a warning, and a pairing below :data:`MIN_OVERLAP` of the smaller system's items is refused.  An item with an
empty cluster is a cluster of its own.  Repeats of an item are averaged per system and scorer (Miller 2024, "Adding
error bars to evals", Sec. 3: resampling), their counts and spread kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.outcomes import counted
from .kinds import Kind, as_numbers, detect

__all__ = ["COLUMNS", "OPTIONAL", "MIN_OVERLAP", "MIN_ITEMS", "ScorerValues", "Aligned", "align", "listed"]

COLUMNS = ("system", "item", "repeat", "scorer", "value", "cluster", "suite")
#: the columns a table may leave out, and the value they then take
OPTIONAL = {"repeat": 0, "cluster": "", "suite": ""}
#: the smallest share of the smaller system's items that must be paired
MIN_OVERLAP = 0.5
#: the fewest paired items a comparison takes
MIN_ITEMS = 2
#: names listed in one message
LISTED = 12
_HEADER = "Cannot compare these evaluations:"


def listed(names: Sequence[str], limit: int = LISTED) -> str:
    """The first ``limit`` names, quoted and comma-separated, then how many more."""
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(repr(str(n)) for n in list(names)[:limit]) + more


@dataclass
class ScorerValues:
    """One scorer's values on the paired items: ``values`` (items × systems) the mean over an item's repeats, NaN
    where the system has none; ``repeats`` how many were averaged; ``within`` their variance (ddof 1; NaN below 2);
    ``missing`` per system, the paired items it has no value for (an errored or absent assessment)."""

    kind: Kind
    values: np.ndarray
    repeats: np.ndarray
    within: np.ndarray
    missing: dict[str, list[str]]

    @property
    def complete(self) -> np.ndarray:
        """Per item: every system has a value."""
        return ~np.isnan(self.values).any(axis=1)


@dataclass
class Aligned:
    """The paired items of several systems: their names, clusters (codes; None when no item has one) and suites
    (None when no item has one), each scorer's :class:`ScorerValues`, and per system the items it lacks."""

    systems: tuple[str, ...]
    items: np.ndarray
    clusters: np.ndarray | None
    suites: np.ndarray | None
    scorers: dict[str, ScorerValues]
    unpaired: dict[str, list[str]]
    items_per_system: dict[str, int]
    warnings: list[str] = field(default_factory=list)


def align(table: pd.DataFrame, systems: Sequence[str], scorers: Sequence[str] | None = None,
          kinds: Mapping | None = None, direction: str | Mapping[str, str] | None = None,
          min_overlap: float = MIN_OVERLAP) -> Aligned:
    """The paired per-scorer arrays of ``systems`` (in that order) from the tidy ``table`` (module docstring).

    ``scorers``: those to compare (default: every scorer all the systems have); ``kinds``: scorer → declared kind
    (:func:`.kinds.detect`); ``direction``: ``higher``/``lower`` for every scorer, or scorer → direction."""
    systems = tuple(str(s) for s in systems)
    frame = _checked(table, systems)
    scorers = _scorers(frame, systems, scorers)
    for name, given in (("kinds", kinds or {}), ("direction", direction if isinstance(direction, Mapping) else {})):
        stray = sorted(set(given) - set(scorers))
        if stray:
            raise InputError(f"{name} names scorers not compared: {listed(stray)} (scorers: {listed(scorers)})",
                             header=_HEADER)
    frame = frame[frame["scorer"].isin(scorers)]
    _refuse_duplicates(frame)
    key = frame["item"] if not frame["suite"].ne("").any() else frame["suite"] + "/" + frame["item"]
    codes, names = pd.factorize(key)
    system_codes = pd.Categorical(frame["system"], categories=systems).codes
    present = np.zeros((len(names), len(systems)), dtype=bool)
    present[codes, system_codes] = True
    paired = present.all(axis=1)
    unpaired = {s: [str(n) for n in names[~present[:, j] & present.any(axis=1)]] for j, s in enumerate(systems)}
    counts = dict(zip(systems, present.sum(axis=0).tolist()))
    warnings = _overlap(int(paired.sum()), counts, unpaired, min_overlap)
    position = np.cumsum(paired) - 1  # an item's row among the paired items
    keep = paired[codes]
    frame, rows, system_codes = frame[keep], position[codes[keep]], system_codes[keep]
    items = np.asarray(names[paired], dtype=object)
    where = lambda i: f"item {frame['item'].iloc[i]!r} of system {frame['system'].iloc[i]!r}"
    values = {}
    for scorer in scorers:
        mine = np.flatnonzero((frame["scorer"] == scorer).to_numpy())
        raw, named = frame["value"].iloc[mine], (lambda i, m=mine: where(m[i]))
        chosen = direction.get(scorer) if isinstance(direction, Mapping) else direction
        kind = detect(raw, scorer, named, (kinds or {}).get(scorer), chosen)
        x = as_numbers(raw, kind, scorer, named)
        values[scorer] = _per_item(x, rows[mine], system_codes[mine], len(items), systems, items, kind)
    return Aligned(systems, items, _groups(frame, rows, items, "cluster"), _suites(frame, rows, items), values,
                   unpaired, counts, warnings)


# --------------------------------------------------------------------------------------------------- checks


def _checked(table, systems: tuple[str, ...]) -> pd.DataFrame:
    """The table's rows of ``systems`` with every column of :data:`COLUMNS` (names as str, repeats as int)."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"the evaluations must be a pandas DataFrame with columns {', '.join(COLUMNS)}; got "
                         f"{type(table).__name__}", header=_HEADER)
    lacking = [c for c in COLUMNS if c not in table.columns and c not in OPTIONAL]
    if lacking:
        raise InputError(f"the table lacks the column(s) {', '.join(lacking)} (it has {', '.join(map(str, table))})",
                         header=_HEADER)
    if len(set(systems)) < len(systems) or len(systems) < 2:
        raise InputError(f"name at least two different systems; got {listed(systems)}", header=_HEADER)
    found = pd.unique(table["system"].astype(str))
    absent = [s for s in systems if s not in set(found)]
    if absent:
        raise InputError(f"system(s) {listed(absent)} not in the table (its systems: {listed(sorted(found))})",
                         header=_HEADER)
    frame = table[table["system"].astype(str).isin(systems)]
    out = pd.DataFrame({c: frame[c].astype(str) for c in ("system", "item", "scorer")})
    out["value"] = frame["value"].astype(object)
    for column in ("cluster", "suite"):
        out[column] = frame[column].fillna("").astype(str) if column in frame else ""
    out["repeat"] = _repeats(frame["repeat"]) if "repeat" in frame else 0
    return out.reset_index(drop=True)


def _repeats(column: pd.Series) -> np.ndarray:
    read = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(read) | (read != np.round(read))
    if bad.any():
        raise InputError(f"column repeat holds values that are not whole numbers: {listed(column[bad].astype(str))}",
                         header=_HEADER)
    return read.astype(np.int64)


def _scorers(frame: pd.DataFrame, systems: tuple[str, ...], asked) -> list[str]:
    """The scorers asked for, each held by every system; by default every scorer all systems hold."""
    held = {s: set(frame.loc[frame["system"] == s, "scorer"].unique()) for s in systems}
    common = set.intersection(*held.values())
    if asked is None:
        if not common:
            each = "; ".join(f"{s}: {listed(sorted(h))}" for s, h in held.items())
            raise InputError(f"the systems share no scorer ({each})", header=_HEADER)
        return sorted(common)
    asked = [asked] if isinstance(asked, str) else list(asked)
    problems = [f"scorer {name!r} is not held by system(s) {listed([s for s in systems if name not in held[s]])}"
                for name in asked if name not in common]
    if len(set(asked)) < len(asked) or not asked:
        problems.append(f"name each scorer once; got {listed(asked)}")
    if problems:
        raise InputError(problems, header=_HEADER)
    return asked


def _refuse_duplicates(frame: pd.DataFrame) -> None:
    twice = frame.duplicated(["system", "suite", "item", "repeat", "scorer"], keep=False)
    if twice.any():
        rows = frame[twice].drop_duplicates(["system", "suite", "item", "repeat", "scorer"])
        named = [f"item {r.item!r} repeat {r.repeat} of scorer {r.scorer!r}, system {r.system!r}"
                 for r in rows.head(3).itertuples()]
        raise InputError(f"{len(rows)} (system, item, repeat, scorer) rows appear more than once: {'; '.join(named)}"
                         " (number the repeats, or drop the copies)", header=_HEADER)


def _overlap(paired: int, counts: dict[str, int], unpaired: dict[str, list[str]], min_overlap: float) -> list[str]:
    """Refuse too few paired items; a warning naming the unpaired ones per system."""
    smaller = min(counts.values())
    share = paired / smaller if smaller else 0.0
    about = f"{counted(paired, 'item')} paired ({', '.join(f'{s} has {n}' for s, n in counts.items())})"
    if paired < MIN_ITEMS:
        raise InputError(f"{about}: a comparison needs at least {MIN_ITEMS}", header=_HEADER)
    if share < min_overlap:
        raise InputError(f"{about}: {share:.0%} of the smaller system's items, below {min_overlap:.0%}; were they "
                         "evaluated on the same dataset? (min_overlap sets the share)", header=_HEADER)
    if not any(unpaired.values()):
        return []
    lacking = "; ".join(f"{len(v)} not evaluated for {s} ({listed(v)})" for s, v in unpaired.items() if v)
    warning = f"{about}; left out as unpaired: {lacking}"
    log.warning(warning)
    return [warning]


# --------------------------------------------------------------------------------------------------- shaping


def _per_item(x: np.ndarray, rows: np.ndarray, system_codes: np.ndarray, n: int, systems, items,
              kind: Kind) -> ScorerValues:
    """The mean, count and variance of each (item, system)'s repeats, by bincount (fast on a million rows)."""
    k = len(systems)
    valid = ~np.isnan(x)
    key = (rows * k + system_codes)[valid]
    counts = np.bincount(key, minlength=n * k)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.bincount(key, weights=x[valid], minlength=n * k) / counts
        squares = np.bincount(key, weights=(x[valid] - means[key]) ** 2, minlength=n * k)
        within = np.where(counts > 1, squares / (counts - 1), np.nan)
    means[counts == 0] = np.nan
    shape = (n, k)
    missing = {s: [str(i) for i in items[counts.reshape(shape)[:, j] == 0]] for j, s in enumerate(systems)}
    return ScorerValues(kind, means.reshape(shape), counts.reshape(shape), within.reshape(shape), missing)


def _groups(frame: pd.DataFrame, rows: np.ndarray, items: np.ndarray, column: str) -> np.ndarray | None:
    """Each paired item's cluster as a code 0..C-1 (an item without one is its own); None when no item has one.
    An item given two clusters is refused."""
    labels = frame[column]
    if not labels.ne("").any():
        return None
    pairs = pd.DataFrame({"row": rows, "label": (frame["suite"] + "/" + labels).where(labels.ne(""), "")})
    pairs = pairs.drop_duplicates()
    twice = pairs["row"].duplicated(keep=False)
    if twice.any():
        bad = sorted(set(items[pairs.loc[twice, "row"]]))
        raise InputError(f"item(s) {listed(bad)} carry more than one {column} (an item belongs to one)",
                         header=_HEADER)
    label = np.empty(len(items), dtype=object)
    label[pairs["row"].to_numpy()] = pairs["label"].to_numpy()
    own = label == ""
    label[own] = ["\x00" + str(i) for i in items[own]]  # a cluster of its own
    return pd.factorize(label)[0]


def _suites(frame: pd.DataFrame, rows: np.ndarray, items: np.ndarray) -> np.ndarray | None:
    """Each paired item's suite (items are keyed by suite, so one each); None when no item has one."""
    if not frame["suite"].ne("").any():
        return None
    suite = np.empty(len(items), dtype=object)
    suite[rows] = frame["suite"].to_numpy()
    return suite
