"""The kind of score a scorer gives, detected from its values or declared, and its values as numbers.

Kinds (:data:`KINDS`):

* ``pass_fail``: booleans, the words of :data:`PASS_WORDS` and :data:`FAIL_WORDS` (any case), 0/1 numbers; a
  numeric score declared ``pass_fail`` passes at ``>= 0.5`` (:data:`PASS_AT`);
* ``ordinal``: integers on a small scale (observed range at most :data:`MAX_ORDINAL_RANGE`, e.g. 1-5 or 0-10), or
  categories in a declared order (``kinds={"tone": ["rude", "neutral", "polite"]}``);
* ``continuous``: any other numbers (judge scores, ROUGE, token counts);
* ``log``: positive numbers compared on the log scale, so that the difference is the log of the ratio of the
  geometric means (latency, cost); detected for positive numbers of a scorer named like a resource
  (:data:`RESOURCE_WORDS`: ``latency``, ``execution_duration``, ``total_tokens``, ``cost_usd``), whose direction
  is then lower-is-better.

MLflow's pass rule.  ``EvaluationResult.passed`` of MLflow 3.17.2 (``mlflow/genai/evaluation/entities.py``,
``_assertion_outcome``) passes ``True`` and ``"yes"`` and fails ``False`` and ``"no"``; its judges turn a probability
into a pass at ``>= 0.5`` (``mlflow/genai/judges/typesafe.py``).  :func:`passes` agrees with both and adds
``"pass"``/``"true"`` (and ``"fail"``/``"false"``); a word it does not know is an :class:`InputError`, never a silent
fail, so the two rules never count one value differently.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...vocabulary.errors import InputError
from ...vocabulary.options import DIRECTIONS, EVAL_KINDS

__all__ = ["KINDS", "PASS_WORDS", "FAIL_WORDS", "PASS_AT", "MAX_ORDINAL_RANGE", "RESOURCE_WORDS", "DEFAULT_ROPE",
           "Kind", "detect", "as_numbers", "passes", "is_resource"]

KINDS = EVAL_KINDS  # the options name them (vocabulary/options.py)
PASS_WORDS = ("yes", "pass", "true")
FAIL_WORDS = ("no", "fail", "false")
#: a number passes at this value or above (MLflow's judges' rule for a probability)
PASS_AT = 0.5
#: integers spanning at most this many points are an ordinal scale (1-5, 0-10); wider ones are continuous
MAX_ORDINAL_RANGE = 10
#: words of a scorer's name (split at ``_ - . /`` and spaces) that make it a resource: lower is better, log scale
RESOURCE_WORDS = ("latency", "duration", "cost", "tokens", "seconds")
#: the rope's half-width as a share of the scale's span: 1 point of a pass rate, 0.04 of a 1-5 rating, 0.01 of a
#: continuous score, 1% of a resource (0.01 in log units): the package's default rope of 0.01 in a metric's units
DEFAULT_ROPE = 0.01
#: items named in one problem
SHOWN = 3


@dataclass(frozen=True)
class Kind:
    """A scorer's kind (one of :data:`KINDS`), direction, levels (pass/fail and ordinal) and how it was chosen."""

    name: str
    greater_is_better: bool
    levels: tuple | None = None
    source: str = "detected"

    @property
    def discrete(self) -> bool:
        return self.name in ("pass_fail", "ordinal")

    @property
    def values(self) -> np.ndarray | None:
        """The number each level stands for: 0/1 for pass/fail, a numeric level itself, else its position 1..K."""
        if self.levels is None:
            return None
        if all(_is_number(v) for v in self.levels):
            return np.array(self.levels, dtype=float)
        return np.arange(1.0, len(self.levels) + 1)

    @property
    def span(self) -> float:
        """The scale's span (1 for continuous and log scores): the unit of the default rope."""
        values = self.values
        return 1.0 if values is None else float(values.max() - values.min())

    @property
    def default_rope(self) -> float:
        return DEFAULT_ROPE * self.span

    @property
    def units(self) -> str:
        """What a difference of this kind is measured in."""
        return {"pass_fail": "pass rate", "ordinal": f"points of the {self.levels[0]}-{self.levels[-1]} scale"
                if self.levels else "points", "continuous": "the scorer's units",
                "log": "log units: the log of the ratio of geometric means"}[self.name]

    def to_dict(self) -> dict:
        return {"kind": self.name, "greater_is_better": self.greater_is_better,
                "levels": None if self.levels is None else list(self.levels), "source": self.source}


def is_resource(scorer: str) -> bool:
    """Whether a scorer's name holds a word of :data:`RESOURCE_WORDS` (``latency``, ``execution_duration``)."""
    return any(word in RESOURCE_WORDS for word in re.split(r"[\s_./-]+", scorer.lower()))


def passes(value) -> bool | None:
    """MLflow's pass rule (module docstring): True/False for a value it decides, None for one it does not."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        return True if word in PASS_WORDS else False if word in FAIL_WORDS else None
    if _is_number(value) and np.isfinite(value):
        return bool(value >= PASS_AT)
    return None


def detect(values: pd.Series, scorer: str, where: Callable[[int], str], declared=None,
           direction: str | None = None) -> Kind:
    """The kind of ``scorer`` from its raw ``values`` (every system's, so that all get one kind), or the one
    ``declared`` (a name of :data:`KINDS`, or the ordinal levels in order); ``where(i)`` names the row of value ``i``
    (``item 'q7' of system 'B'``) for the problems.  ``direction`` is ``higher`` or ``lower`` (default: lower for a
    resource, :func:`is_resource`)."""
    if direction is not None and direction not in DIRECTIONS:
        raise InputError(f"scorer {scorer!r}: direction must be one of {', '.join(DIRECTIONS)}; got {direction!r}")
    greater = DIRECTIONS[direction] if direction is not None else not is_resource(scorer)
    classes, numeric, words = _classified(values)
    present = classes != "missing"
    if not present.any():
        raise InputError(f"scorer {scorer!r} has no value on any item (every assessment missing or errored)")
    if declared is not None:
        return _declared(declared, scorer, greater, numeric[present & (classes == "number")])
    found = set(classes[present])
    if "other" in found:
        raise InputError(f"scorer {scorer!r}: values that are neither a boolean, a number nor a word, "
                         f"{_named(values, where, classes == 'other')}")
    if found <= {"bool", "text"}:
        unknown = (classes == "text") & ~np.isin(words, PASS_WORDS + FAIL_WORDS)
        if unknown.any():
            raise InputError(f"scorer {scorer!r}: categories with no known order, {_named(values, where, unknown)}: "
                             f"declare their order, kinds={{{scorer!r}: ['worst', ..., 'best']}}")
        return Kind("pass_fail", greater, (0, 1), "detected: booleans or pass/fail words")
    if found == {"number"}:
        return _numeric_kind(numeric[present], scorer, greater)
    firsts = [_named(values, where, classes == c, 1) for c in sorted(found)]
    raise InputError(f"scorer {scorer!r} mixes {' and '.join(sorted(found))} values ({'; '.join(firsts)}): declare "
                     f"kinds={{{scorer!r}: 'pass_fail'}} to apply MLflow's pass rule to all, or fix the scorer")


def as_numbers(values: pd.Series, kind: Kind, scorer: str, where: Callable[[int], str]) -> np.ndarray:
    """``values`` as floats of ``kind`` (pass 1, fail 0; an ordinal level's number; log of a resource), NaN where
    missing; an :class:`InputError` naming the rows whose value the kind cannot take."""
    classes, numeric, words = _classified(values)
    out = np.full(len(values), np.nan)
    if kind.name == "pass_fail":
        out[classes == "bool"] = numeric[classes == "bool"]
        out[classes == "number"] = numeric[classes == "number"] >= PASS_AT
        out[np.isin(words, PASS_WORDS)] = 1.0
        out[np.isin(words, FAIL_WORDS)] = 0.0
    elif kind.name == "ordinal":
        out = _levels(classes, numeric, words, kind)
    else:
        out[classes == "number"] = numeric[classes == "number"]
        if kind.name == "log":
            out[out <= 0] = np.nan
            out = np.log(out)
    bad = np.isnan(out) & (classes != "missing")
    if bad.any():
        what = {"pass_fail": "pass/fail", "continuous": "continuous (numbers)",
                "log": "log-scale (positive numbers)"}.get(kind.name) or f"ordinal levels {list(kind.levels)}"
        raise InputError(f"scorer {scorer!r} is {what}, but {_named(values, where, bad)} is not")
    return out


# --------------------------------------------------------------------------------------------------- helpers


def _is_number(value) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def _class_of(kind: type) -> str:
    if issubclass(kind, (bool, np.bool_)):
        return "bool"
    if issubclass(kind, (numbers.Real, np.number)):
        return "number"
    return "text" if issubclass(kind, str) else "other"


def _classified(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each value's class (bool, number, text, other, missing), its number (booleans 0/1, numeric words too; NaN
    otherwise) and its word (lower-case, stripped; "" otherwise).  A word that reads as a number is a number."""
    types = values.map(type)
    classes = types.map({t: _class_of(t) for t in types.unique()}).to_numpy(dtype=object)
    classes[pd.isna(values).to_numpy()] = "missing"
    numeric = np.full(len(values), np.nan)
    scalar = (classes == "bool") | (classes == "number")
    numeric[scalar] = values[scalar].astype(float).to_numpy()
    words = np.full(len(values), "", dtype=object)
    text = classes == "text"
    if text.any():
        words[text] = values[text].str.strip().str.lower().to_numpy()
        read = pd.to_numeric(pd.Series(words[text]), errors="coerce").to_numpy()
        as_number = np.flatnonzero(text)[~np.isnan(read)]
        numeric[as_number], classes[as_number], words[as_number] = read[~np.isnan(read)], "number", ""
    return classes, numeric, words


def _numeric_kind(x: np.ndarray, scorer: str, greater: bool) -> Kind:
    if is_resource(scorer) and (x > 0).all():
        return Kind("log", greater, None, "detected: positive numbers of a scorer named like a resource")
    if np.all(np.isfinite(x)) and np.all(x == np.round(x)):
        low, high = int(x.min()), int(x.max())
        if low >= 0 and high <= 1:
            return Kind("pass_fail", greater, (0, 1), "detected: numbers 0 and 1")
        if 0 < high - low <= MAX_ORDINAL_RANGE:
            return Kind("ordinal", greater, tuple(range(low, high + 1)),
                        f"detected: integers {low}-{high} (declare the scale if it is wider)")
    return Kind("continuous", greater, None, "detected: numbers")


def _declared(declared, scorer: str, greater: bool, x: np.ndarray) -> Kind:
    if isinstance(declared, str):
        if declared not in KINDS:
            raise InputError(f"scorer {scorer!r}: kind {declared!r} is none of {', '.join(KINDS)} (or a list of "
                             "ordinal levels in order)")
        if declared != "ordinal":
            return Kind(declared, greater, (0, 1) if declared == "pass_fail" else None, "declared")
        if not (x.size and np.all(np.isfinite(x)) and np.all(x == np.round(x)) and x.max() > x.min()):
            raise InputError(f"scorer {scorer!r} is declared ordinal without levels, and its values are not "
                             "integers of at least two levels: declare the levels in order, "
                             f"kinds={{{scorer!r}: [1, 2, 3, 4, 5]}}")
        return Kind("ordinal", greater, tuple(range(int(x.min()), int(x.max()) + 1)), "declared (observed levels)")
    if isinstance(declared, Sequence) and len(set(declared)) == len(declared) >= 2:
        levels = tuple(v.item() if isinstance(v, np.generic) else v for v in declared)
        return Kind("ordinal", greater, levels, "declared levels")
    raise InputError(f"scorer {scorer!r}: a declared kind is one of {', '.join(KINDS)} or a list of at least two "
                     f"distinct ordinal levels in order; got {declared!r}")


def _levels(classes: np.ndarray, numeric: np.ndarray, words: np.ndarray, kind: Kind) -> np.ndarray:
    """Each value's ordinal number: a numeric level matched by value, a category by its word (any case)."""
    values, out = kind.values, np.full(len(classes), np.nan)
    if all(_is_number(v) for v in kind.levels):
        index = {float(v): float(n) for v, n in zip(kind.levels, values)}
        found = pd.Series(numeric).map(index).to_numpy(dtype=float)
        out[classes == "number"] = found[classes == "number"]
    else:
        index = {str(v).strip().lower(): float(n) for v, n in zip(kind.levels, values)}
        found = pd.Series(words).map(index).to_numpy(dtype=float)
        out[classes == "text"] = found[classes == "text"]
    return out


def _named(values: pd.Series, where: Callable[[int], str], mask: np.ndarray, shown: int = SHOWN) -> str:
    """``'maybe' at item 'q7' of system 'B'`` for the first rows of ``mask``, and how many more."""
    rows = np.flatnonzero(mask)
    named = [f"{values.iloc[i]!r} at {where(i)}" for i in rows[:shown]]
    return ", ".join(named) + (f" and {len(rows) - shown} more" if len(rows) > shown else "")
