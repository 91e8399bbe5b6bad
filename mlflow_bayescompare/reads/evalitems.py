"""What an evaluation item is to the reader of evaluation runs: where its pairing key, cluster and suite come from
(``--pair-key``, ``--cluster``, ``--suite``), the canonical key of its inputs, and the units a run's reader returns.

A field is ``inputs.<name>``, a field of the item's inputs (the trace's inputs, dotted for a nested field; a column
of an evaluation table), or ``tag:<name>``, a tag of the item's trace.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..vocabulary.errors import InputError

__all__ = ["ItemField", "parse_field", "as_text", "canonical", "inputs_key", "Units", "UNIT_COLUMNS",
           "SCORE_ROW_COLUMNS"]

#: a unit is one trace, or one row of an evaluation table, or one (item, repeat) of a long table
UNIT_COLUMNS = ["unit", "order", "inputs", "tags", "default_item", "case", "cluster", "suite"]
#: one value of one scorer on one unit
SCORE_ROW_COLUMNS = ["unit", "scorer", "value", "source"]
_KINDS = {"inputs.": "inputs", "tag:": "tag"}


@dataclass(frozen=True)
class ItemField:
    """One field of ``option`` (``pair_key``, ``cluster`` or ``suite``): ``kind`` ``inputs`` or ``tag``, and its
    ``name``."""

    option: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"inputs.{self.name}" if self.kind == "inputs" else f"tag:{self.name}"

    def read(self, inputs: Any, tags: dict | None) -> str | None:
        """The item's value of the field, as text (None when it has none, or an empty one)."""
        value = (tags or {}).get(self.name) if self.kind == "tag" else _field(inputs, self.name)
        text = None if value is None else as_text(value)
        return text or None


def _field(inputs: Any, name: str) -> Any:
    """``inputs[name]``, else the dotted path ``name`` walked through nested mappings."""
    if not isinstance(inputs, dict):
        return None
    if name in inputs:
        return inputs[name]
    head, dot, rest = name.partition(".")
    return _field(inputs.get(head), rest) if dot else None


def parse_field(text: str | None, option: str) -> ItemField | None:
    """The field ``text`` names (None for None), or an :class:`InputError` saying the grammar."""
    if text is None:
        return None
    for prefix, kind in _KINDS.items():
        if isinstance(text, str) and text.startswith(prefix) and text[len(prefix):].strip():
            return ItemField(option, kind, text[len(prefix):])
    raise InputError(f"{option} must be inputs.<field> (a field of the items' inputs, e.g. inputs.question) or "
                     f"tag:<name> (a tag of their traces); got {text!r}")


def as_text(value: Any) -> str:
    """A value of a field as text: a string as it is, anything else as canonical JSON (``3``, ``true``)."""
    return value if isinstance(value, str) else canonical(value)


def canonical(inputs: Any) -> str:
    """The canonical JSON of ``inputs``: keys sorted, no spaces, characters as they are (so ``{"b": 1, "a": 2}``
    and ``{"a":2,"b":1}`` are one text)."""
    return json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def inputs_key(inputs: Any) -> str:
    """The pairing key of an item by its inputs: the first 16 hex digits of the SHA-256 of :func:`canonical`."""
    return hashlib.sha256(canonical(inputs).encode("utf-8")).hexdigest()[:16]


@dataclass
class Units:
    """What one run's reader found: its units (:data:`UNIT_COLUMNS`: ``order`` sorts a unit's repeats, ``inputs``
    and ``tags`` are what fields are read from, ``default_item`` the key of the kind's own rule, ``case`` the
    ``@mlflow.test`` case, ``cluster``/``suite`` those a long table names), their values (:data:`SCORE_ROW_COLUMNS`),
    the scorers whose units had no value, by count, and what the reader noticed."""

    units: pd.DataFrame
    scores: pd.DataFrame
    errored: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, units: list[dict], scores: list[tuple], errored: dict[str, int] | None = None,
           notes: list[str] | None = None) -> Units:
        # values as MLflow returned them: a column of ints and floats stays so (not all floats)
        values = pd.DataFrame(scores, columns=SCORE_ROW_COLUMNS, dtype=object)
        return cls(pd.DataFrame(units, columns=UNIT_COLUMNS), values, dict(errored or {}), list(notes or []))
