"""How an option is specified and checked: the :class:`Option` spec each options field carries in its metadata, the
one validation that cleans a value or says what is wrong with it, and :class:`OptionsBase`, which every options
class of :mod:`.options` extends (validation on construction, ``to_params()``, ``to_dict()``)."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InputError

__all__ = ["Option", "OptionsBase", "PerMetric", "option", "required_option", "clean_field", "MAX_NAME"]

MAX_NAME = 500  # longest experiment, model, metric or tag name accepted


@dataclass(frozen=True)
class Option:
    """The spec of one option.

    ``kind`` is int, float, bool, str, choice, strings (a tuple of names), numbers (a number or a tuple of them),
    pair (two floats, low < high) or per_metric (one value for every metric, or ``METRIC=VALUE,...``: a
    :class:`PerMetric`; its values are floats, or choices when ``choices`` are given; ``per`` names what it is given
    per, ``metric`` or ``scorer``, in its messages).
    ``public`` is its name on the command line (``--`` + dashes) and in the JSON API (underscores) when it differs
    from the field's.  A ``flag`` option is a command-line/JSON switch that sets the field to ``flag_value``.
    """

    help: str
    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    public: str | None = None
    flag_value: Any = None
    required: bool = False
    nullable: bool = False
    max_length: int = MAX_NAME
    cli: bool = True  # offered on the command line (False: Python API only)
    envvar: str | None = None  # the environment variable the command line reads when the option is not given
    per: str = "metric"  # what a per_metric option is given per (its messages name it): metric, or scorer

    @property
    def is_flag(self) -> bool:
        return self.flag_value is not None


def option(default, help: str, kind: str, **spec) -> Any:
    """A dataclass field with a default and its :class:`Option` spec."""
    return field(default=default, metadata={"option": Option(help, kind, **spec)})


def required_option(help: str, kind: str, **spec) -> Any:
    """A field without a default: ``None`` until given, and an error if it stays so."""
    return field(default=None, metadata={"option": Option(help, kind, required=True, **spec)})


@dataclass(frozen=True)
class PerMetric:
    """An option given per metric (``accuracy=0.01,fit_time=0.5``): ``values`` by metric, and ``default`` for the
    metrics it does not name (a bare value among them, else the option's default)."""

    values: tuple[tuple[str, Any], ...]
    default: Any = None

    def get(self, metric: str, fallback: Any) -> Any:
        """The value for ``metric``."""
        named = dict(self.values)
        if metric in named:
            return named[metric]
        return fallback if self.default is None else self.default

    def __str__(self) -> str:
        bare = [] if self.default is None else [str(self.default)]
        return ",".join(bare + [f"{m}={v}" for m, v in self.values])


# --------------------------------------------------------------------------------------------------- validation


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _real(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _number_text(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def _range_text(spec: Option) -> str:
    low = "" if spec.low is None else f"{'>' if spec.low_open else '>='} {_number_text(spec.low)}"
    high = "" if spec.high is None else f"{'<' if spec.high_open else '<='} {_number_text(spec.high)}"
    return " and ".join(part for part in (low, high) if part)


def _in_range(number: float, spec: Option) -> bool:
    if spec.low is not None and (number <= spec.low if spec.low_open else number < spec.low):
        return False
    return not (spec.high is not None and (number >= spec.high if spec.high_open else number > spec.high))


def _clean(spec: Option, value: Any) -> tuple[Any, str | None]:
    """``(clean value, None)`` or ``(None, what is wrong)`` for one value of one option."""
    if value is None:
        return None, (None if spec.nullable else "is required")
    kind = spec.kind
    if kind in ("int", "float"):
        number = _whole(value) if kind == "int" else _real(value)
        what = "a whole number" if kind == "int" else "a finite number"
        if number is None or not _in_range(number, spec):
            return None, f"must be {what}{' ' + _range_text(spec) if _range_text(spec) else ''}; got {value!r}"
        return number, None
    if kind == "bool":
        return (value, None) if isinstance(value, bool) else (None, f"must be true or false; got {value!r}")
    if kind == "choice":
        key = value.replace(" ", "").lower() if isinstance(value, str) else None
        key = spec.aliases.get(key, key)
        if key not in spec.choices:
            return None, f"must be one of {', '.join(spec.choices)}; got {value!r}"
        return key, None
    if kind == "str":
        return _clean_name(spec, value)
    if kind == "strings":
        values = [value] if isinstance(value, (str, numbers.Integral)) and not isinstance(value, bool) else value
        if not isinstance(values, (list, tuple)):
            return None, f"must be a list of names; got {value!r}"
        cleaned = []
        for item in values:
            text, problem = _clean_name(spec, str(item) if isinstance(item, numbers.Integral)
                                        and not isinstance(item, bool) else item)
            if problem:
                return None, problem
            cleaned.append(text)
        if spec.high is not None and len(cleaned) > spec.high:
            return None, f"takes at most {_number_text(spec.high)} names; got {len(cleaned)}"
        return tuple(cleaned), None
    if kind == "pair":
        return _clean_pair(spec, value)
    if kind == "numbers":
        return _clean_numbers(spec, value)
    if kind == "per_metric":
        return _clean_per_metric(spec, value)
    raise TypeError(f"unknown option kind {kind!r}")


def clean_field(cls, name: str, value: Any) -> Any:
    """One field's value of the options class ``cls``, cleaned as constructing it would (an :class:`InputError`
    naming the field when it is invalid): for a value used on its own, such as a claim given to a gate."""
    spec = next(f for f in dataclasses.fields(cls) if f.name == name).metadata["option"]
    cleaned, problem = _clean(spec, value)
    if problem:
        raise InputError([f"{spec.public or name} {problem}"], header=f"invalid {cls._what}:")
    return cleaned


def _clean_name(spec: Option, value: Any) -> tuple[str | None, str | None]:
    if not isinstance(value, str):
        return None, f"must be a string; got {value!r}"
    if "\x00" in value:
        return None, "contains a NUL character"
    if len(value) > spec.max_length:
        return None, f"is longer than {spec.max_length} characters"
    if not _is_text(value):
        return None, f"is not text that UTF-8 can encode (it holds a lone surrogate); got {value[:60]!r}"
    if spec.required and not value.strip():
        return None, "must not be empty"
    return value, None


def _is_text(value: str) -> bool:
    """Whether ``value`` can be written as UTF-8 (what MLflow's stores and its REST API need)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean_numbers(spec: Option, value: Any) -> tuple[float | tuple[float, ...] | None, str | None]:
    """One number, or one per dataset (a list, or ``a,b,c`` on the command line)."""
    if isinstance(value, str) and "," in value:
        value = value.split(",")
    if isinstance(value, (list, tuple, np.ndarray)):
        numbers_ = [_real(v) for v in value]
        if not numbers_ or any(n is None or not _in_range(n, spec) for n in numbers_):
            return None, f"must be numbers {_range_text(spec)}; got {value!r}"
        return tuple(numbers_), None
    number = _real(value)
    if number is None or not _in_range(number, spec):
        return None, f"must be a number {_range_text(spec)} (or one per dataset); got {value!r}"
    return number, None


def _clean_per_metric(spec: Option, value: Any) -> tuple[Any, str | None]:
    """One value, or ``METRIC=VALUE`` entries (a string ``a=1,b=2`` or a mapping) with at most one bare value, the
    one of the metrics not named: a bare value alone is returned as itself, the rest as a :class:`PerMetric`.  An
    entry is split at its last ``=`` (a value holds none; a scorer's name may: ``<img src=x>=0.05``)."""
    one = dataclasses.replace(spec, kind="choice" if spec.choices else "float")
    if isinstance(value, PerMetric):  # cleaned before: checked again, as given
        entries = [*value.values, *([(None, value.default)] if value.default is not None else [])]
    elif isinstance(value, Mapping):
        entries = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, str) and "=" in value:
        entries = [tuple(part.rsplit("=", 1)) if "=" in part else (None, part) for part in value.split(",")]
    else:
        return _clean(one, value)
    named, default = {}, None
    for metric, raw in entries:
        cleaned, problem = _clean(one, raw.strip() if isinstance(raw, str) else raw)
        metric = metric.strip() if isinstance(metric, str) else None
        where = "" if metric is None else f" for {spec.per} {metric!r}"
        if problem:
            return None, f"{problem}{where}"
        if metric is None:
            if default is not None:
                return None, f"takes one value for the metrics it does not name; got two in {value!r}"
            default = cleaned
        elif not metric:
            return None, f"names an empty {spec.per} in {value!r}; write {spec.per.upper()}=VALUE,..."
        elif metric in named:
            return None, f"names {spec.per} {metric!r} twice"
        else:
            named[metric] = cleaned
    return PerMetric(tuple(named.items()), default), None


def _clean_pair(spec: Option, value: Any) -> tuple[tuple[float, float] | None, str | None]:
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, (list, tuple)) or len(parts) != 2:
        return None, f"must be two numbers LOW,HIGH; got {value!r}"
    low, high = (_real(p) for p in parts)
    if low is None or high is None or not (_in_range(low, spec) and _in_range(high, spec)) or not low < high:
        return None, f"must be two numbers LOW,HIGH with {_range_text(spec)} and LOW < HIGH; got {value!r}"
    return (low, high), None


class OptionsBase:
    """Validation and conversions shared by every options class (a mixin of frozen dataclasses)."""

    def __post_init__(self) -> None:
        problems = []
        for f in dataclasses.fields(self):
            spec: Option = f.metadata["option"]
            value, problem = _clean(spec, getattr(self, f.name))
            if problem:
                problems.append(f"{f.name} {problem}")
            else:
                object.__setattr__(self, f.name, value)
        problems += self._cross_checks()
        if problems:
            raise InputError(problems, header=f"invalid {self._what}:")

    _what = "options"

    def _cross_checks(self) -> list[str]:
        """Problems between fields (run after the fields' own checks, so values may still be unclean)."""
        return []

    def to_params(self) -> dict[str, str]:
        """The options as MLflow run params (strings); unset optional values are left out."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None or value == ():
                continue
            out[f.name] = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
                for f in dataclasses.fields(self)}
