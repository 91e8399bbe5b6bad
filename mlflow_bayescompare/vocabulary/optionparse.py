"""Options from their users: keywords of the Python API (:func:`build`, :func:`from_keywords`), the fields of the
command line or the JSON API (:func:`parse_fields`), and the command line's declaration (:func:`click_options`),
all from the specs of :mod:`.optionspec`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InputError
from .optionspec import Option

__all__ = ["public_name", "defaults", "build", "from_keywords", "parse_fields", "click_options", "checked_click_option"]


def public_name(f: dataclasses.Field, origin: str = "json") -> str:
    """The name users give an option: ``--model-tag`` on the command line, ``model_tag`` in JSON (and as the
    command function's keyword), the field's own name in Python."""
    if origin == "python":
        return f.name
    name = f.metadata["option"].public or f.name
    return "--" + name.replace("_", "-") if origin == "cli" else name


def defaults(cls) -> dict[str, Any]:
    """The defaults of an options class, by field name (the page's form shows these)."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def build(cls, base=None, /, **values):
    """An options object of ``cls`` from ``base`` (or the defaults) with ``values`` (field names) replaced."""
    if base is None:
        return cls(**values)
    if not isinstance(base, cls):
        raise InputError(f"expected {cls.__name__}, got {type(base).__name__}")
    return dataclasses.replace(base, **values) if values else base


def from_keywords(keywords: Mapping[str, Any], *classes_and_bases: tuple[type, Any]) -> tuple:
    """One object per ``(class, base)``: the base object (or the defaults) with the keywords that name its fields
    replaced.  Keywords no class has are a ``TypeError`` (as for any function); every invalid value of every class
    is reported at once in one :class:`InputError`."""
    owners = {f.name: cls for cls, _ in classes_and_bases for f in dataclasses.fields(cls)}
    unknown = sorted(set(keywords) - set(owners))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    built, problems = [], []
    for cls, base in classes_and_bases:
        try:
            built.append(build(cls, base, **{k: v for k, v in keywords.items() if owners[k] is cls}))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems, header="invalid options:")
    return tuple(built)


def parse_fields(fields: Mapping[str, Any], classes: Iterable[type], *, origin: str = "json",
                 exclude: Iterable[str] = ()) -> tuple:
    """Build one object of each of ``classes`` from public field names (``origin`` "json" or "cli"), reporting
    unknown fields and every invalid value at once.  Fields absent or ``None`` take the defaults, as do the fields
    named in ``exclude`` (which a request may not set); a flag field is given as a boolean (true sets its
    ``flag_value``)."""
    classes, exclude = list(classes), set(exclude)
    known = {public_name(f): (cls, f) for cls in classes for f in dataclasses.fields(cls)
             if not _excluded(cls, f, exclude)}
    problems = [f"unknown field {_shown(str(k)[:60], origin)}; accepted: {', '.join(sorted(known))}"
                for k in fields if k not in known][:20]
    values: dict[type, dict[str, Any]] = {cls: {} for cls in classes}
    for key, raw in fields.items():
        if key not in known or raw is None:
            continue
        cls, f = known[key]
        spec: Option = f.metadata["option"]
        if spec.is_flag:
            if not isinstance(raw, bool):
                problems.append(f"{_shown(key, origin)} must be true or false; got {raw!r}")
                continue
            if not raw:
                continue
            raw = spec.flag_value
        values[cls][f.name] = raw
    built = []
    for cls in classes:
        try:
            built.append(cls(**values[cls]))
        except InputError as exc:
            names = {f.name: public_name(f) for f in dataclasses.fields(cls)}
            problems += [_rename(p, names, origin) for p in exc.problems]
    if problems:
        raise InputError(problems, header="invalid request:" if origin == "json" else "invalid options:")
    return tuple(built)


def _excluded(cls, f: dataclasses.Field, exclude: set[str]) -> bool:
    """Whether ``exclude`` names the field, alone (``"sensitivity"``) or with its class (``"RankOptions.seed"``)."""
    return f.name in exclude or f"{cls.__name__}.{f.name}" in exclude


def _shown(name: str, origin: str) -> str:
    """A public name as the user wrote it: ``--model-tag`` on the command line, ``'model_tag'`` in JSON."""
    return "--" + name.replace("_", "-") if origin == "cli" else f"'{name}'"


def _rename(problem: str, names: dict[str, str], origin: str) -> str:
    """A problem worded with a field name (``"chains must be ..."``), reworded with the name the user gave:
    ``Invalid value for '--chains': must be ...`` (``'chains'`` in JSON)."""
    for name in sorted(names, key=len, reverse=True):
        if problem.startswith(name + " "):
            shown, rest = _shown(names[name], origin), problem[len(name) + 1:]
            if rest == "is required":
                return f"Missing {'option' if origin == 'cli' else 'field'} '{shown.strip(chr(39))}'"
            return f"Invalid value for '{shown.strip(chr(39))}': {rest}"
    return problem


# --------------------------------------------------------------------------------------------------- command line


def click_options(*classes, exclude: Iterable[str] = (), required: bool = True):
    """A decorator declaring one command-line option per field of ``classes`` (except ``exclude``), the required
    ones first (``--help`` lists them first), then the others in the classes' order.

    Values arrive as given (strings, booleans for flags, tuples for repeatable names): :func:`parse_fields` with
    ``origin="cli"`` validates them, so the command line and the JSON API share one set of rules and messages.
    ``required=False``: click requires none (a command whose required options depend on another, ``watch``'s on
    its test; :func:`parse_fields` names the missing ones).
    """
    import click

    exclude = set(exclude)

    def decorate(fn):
        fields = [f for cls in classes for f in dataclasses.fields(cls)
                  if not _excluded(cls, f, exclude) and f.metadata["option"].cli]
        for f in reversed(sorted(fields, key=lambda f: not f.metadata["option"].required)):
            fn = _click_option(click, f, required)(fn)
        return fn

    return decorate


def checked_click_option(cls, name: str, **overrides):
    """A command-line option for the int or float field ``name`` of ``cls``, with its help and its default, typed
    and bounded as its spec says, so that click checks it at once: for a command whose values do not pass through
    :func:`parse_fields` (``demo``).  ``overrides`` are click's keywords (e.g. another default)."""
    import click

    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    spec: Option = f.metadata["option"]
    bounded = {"int": click.IntRange, "float": click.FloatRange}[spec.kind]
    declared = dict(type=bounded(spec.low, spec.high, min_open=spec.low_open, max_open=spec.high_open),
                    default=f.default, show_default=True, help=spec.help)
    return click.option(public_name(f, "cli"), spec.public or f.name, **{**declared, **overrides})


_METAVARS = {"int": "INTEGER", "float": "NUMBER", "numbers": "NUMBER[,NUMBER...]", "pair": "LOW,HIGH",
             "str": "TEXT", "strings": "TEXT", "per_metric": "VALUE|METRIC=VALUE,..."}


def _click_option(click, f: dataclasses.Field, required: bool = True):
    spec: Option = f.metadata["option"]
    flag, dest = public_name(f, "cli"), spec.public or f.name
    if spec.is_flag:
        return click.option(flag, dest, is_flag=True, default=None, help=spec.help)
    default = None if f.default in (dataclasses.MISSING, None, "", ()) else f.default
    if isinstance(default, tuple):
        default = ",".join(f"{v:g}" for v in default)
    metavar = "[" + "|".join(spec.choices) + "]" if spec.kind == "choice" else \
        _METAVARS[spec.kind].replace("METRIC", spec.per.upper())
    return click.option(flag, dest, multiple=spec.kind == "strings", required=spec.required and required,
                        default=None if default is None else str(default), show_default=default is not None,
                        metavar=metavar, help=spec.help, envvar=spec.envvar, show_envvar=spec.envvar is not None)
