"""Every option of the package, its default, its allowed values and its help, written once.

Options come in frozen dataclasses, one per concern:

* :class:`SourceOptions`: where the scores are and how to read them (experiments, metric, layout, tags, filter, ...);
* :class:`FitOptions`: the two-model tests (the hierarchical test of Corani et al. 2017 and the Bayesian
  signed-rank test): rope, direction, prior, threshold, the MCMC settings and the hyper-prior bounds;
* :class:`PairOptions`: the two models of a comparison and the claim to require;
* :class:`ModelsOptions`: the models of a matrix or ranking;
* :class:`RankOptions`: the ranking of many models (the Bayesian Bradley-Terry model of Wainer 2023).

Each field carries an :class:`Option` spec in its metadata.  Constructing an object validates it and cleans the
values (numpy numbers become Python numbers, lists become tuples, prior aliases their canonical name); every problem
is reported at once in one :class:`~.errors.InputError`.  :func:`parse_fields` builds the objects of a request from
the command line's or the JSON API's fields, :func:`click_options` declares the command-line options from the same
specs, and ``to_params()`` gives a run's params.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from .errors import InputError

__all__ = [
    "Option", "SourceOptions", "FitOptions", "PairOptions", "ModelsOptions", "RankOptions", "parse_fields", "click_options",
    "build", "from_keywords", "defaults", "public_name", "PRIORS", "PRIOR_ALIASES", "BACKENDS", "LAYOUTS", "TESTS", "CLAIMS",
]

#: ν priors of the hierarchical test (paper, Table "prior-nu"); aliases map to these names.
PRIORS = ("hierarchical", "gamma(2,0.1)", "gamma(1,0.0345)", "gaussian")
PRIOR_ALIASES = {"juarez-steel": "gamma(2,0.1)", "kruschke": "gamma(1,0.0345)", "normal": "gaussian"}
BACKENDS = ("auto", "cmdstanpy", "pystan")
LAYOUTS = ("auto", "steps", "keys", "children")
TESTS = ("auto", "hierarchical", "signed-rank")
CLAIMS = ("a-better", "not-worse", "equivalent")
MAX_NAME = 500  # longest experiment, model, metric or tag name accepted
MAX_FILTER = 2000


@dataclass(frozen=True)
class Option:
    """The spec of one option.

    ``kind`` is int, float, bool, str, choice, strings (a tuple of names), numbers (a number or a tuple of them) or
    pair (two floats, low < high).
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

    @property
    def is_flag(self) -> bool:
        return self.flag_value is not None


def _option(default, help: str, kind: str, **spec) -> Any:
    return field(default=default, metadata={"option": Option(help, kind, **spec)})


def _required(help: str, kind: str, **spec) -> Any:
    """A field without a default: ``None`` until given, and an error if it stays so."""
    return field(default=None, metadata={"option": Option(help, kind, required=True, **spec)})


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
        key = str(value).replace(" ", "").lower() if isinstance(value, str) else value
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
    raise TypeError(f"unknown option kind {kind!r}")


def _clean_name(spec: Option, value: Any) -> tuple[str | None, str | None]:
    if not isinstance(value, str):
        return None, f"must be a string; got {value!r}"
    if "\x00" in value:
        return None, "contains a NUL character"
    if len(value) > spec.max_length:
        return None, f"is longer than {spec.max_length} characters"
    if spec.required and not value.strip():
        return None, "must not be empty"
    return value, None


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


def _clean_pair(spec: Option, value: Any) -> tuple[tuple[float, float] | None, str | None]:
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, (list, tuple)) or len(parts) != 2:
        return None, f"must be two numbers LOW,HIGH; got {value!r}"
    low, high = (_real(p) for p in parts)
    if low is None or high is None or not (_in_range(low, spec) and _in_range(high, spec)) or not low < high:
        return None, f"must be two numbers LOW,HIGH with {_range_text(spec)} and LOW < HIGH; got {value!r}"
    return (low, high), None


class _Options:
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


# --------------------------------------------------------------------------------------------------- the options


@dataclass(frozen=True)
class SourceOptions(_Options):
    """Where the per-fold scores are and how to read them from MLflow."""

    _what = "source options"

    metric: str = _required("Per-fold metric to compare, e.g. accuracy.", "str")
    experiment_names: tuple[str, ...] = _option((), "Source experiment by name (repeatable).", "strings",
                                                public="experiment_name", high=20)
    experiment_ids: tuple[str, ...] = _option((), "Source experiment by id (repeatable).", "strings",
                                              public="experiment_id", high=20)
    layout: str = _option("auto", "How the per-fold scores are logged.", "choice", choices=LAYOUTS)
    model_tag: str = _option("model", "Run tag naming the model.", "str")
    dataset_tag: str = _option("dataset", "Run tag naming the dataset.", "str")
    filter_string: str = _option("", "Extra MLflow search filter, e.g. \"params.version = '2'\".", "str",
                                 public="filter", max_length=MAX_FILTER)
    folds: int | None = _option(None, "Folds per repeat, when runs lack the param cv_folds.", "int", low=2,
                                high=10_000, nullable=True)
    on_duplicate: str = _option("error", "When a model has several runs on a dataset, use the latest.", "choice",
                                choices=("error", "latest"), public="latest", flag_value="latest")
    drop_incomplete: bool = _option(False, "Drop datasets with missing folds (with a warning).", "bool",
                                    flag_value=True)
    target_experiment: str | None = _option(None, "Log the result into this experiment (name or id; created if "
                                                  "there is none); default: the first source.", "str",
                                            nullable=True)

    def _cross_checks(self) -> list[str]:
        problems = []
        for name in ("model_tag", "dataset_tag"):
            value = getattr(self, name)
            if isinstance(value, str) and "`" in value:
                problems.append(f"{name} contains a backtick, which MLflow's filters cannot express; got {value!r}")
            elif isinstance(value, str) and not value.strip():
                problems.append(f"{name} must not be empty")
        return problems


@dataclass(frozen=True)
class FitOptions(_Options):
    """The settings of the two-model tests (Corani et al. 2017; Benavoli et al. 2017 for the signed-rank test)."""

    _what = "test settings"

    rope: float = _option(0.01, "Half-width of the region of practical equivalence, in metric units.", "float",
                          low=0, low_open=True)
    greater_is_better: bool = _option(True, "The metric is a loss or error (lower is better).", "bool",
                                      public="lower_is_better", flag_value=False)
    test: str = _option("auto", "Which test: the hierarchical test on per-fold scores, the signed-rank test on "
                                "per-dataset means, or auto (signed-rank when every run holds one score).",
                        "choice", choices=TESTS)
    prior: str = _option("hierarchical", "Prior on the degrees of freedom ν of the hierarchical test.", "choice",
                         choices=PRIORS, aliases=PRIOR_ALIASES)
    threshold: float = _option(0.95, "Probability at which an outcome is declared.", "float", low=0, high=1,
                               low_open=True, high_open=True)
    rho: float | tuple[float, ...] | None = _option(
        None, "Correlation between folds, one value or one per dataset (default 1/folds; 0 for independent "
              "hold-out splits).", "numbers", low=0, high=1, high_open=True, nullable=True)
    chains: int = _option(4, "MCMC chains.", "int", low=1, high=64)
    draws: int = _option(1000, "Posterior draws per chain, after the warm-up.", "int", low=10, high=1_000_000)
    warmup: int = _option(1000, "Warm-up iterations per chain.", "int", low=10, high=1_000_000)
    seed: int | None = _option(None, "Seed of every random choice (for reproducible probabilities).", "int", low=0,
                               high=2**32 - 1, nullable=True)
    backend: str = _option("auto", "Stan backend: cmdstanpy when CmdStan is installed, else pystan.", "choice",
                           choices=BACKENDS)
    sensitivity: bool = _option(False, "Also report the conclusion under other priors and ropes.", "bool",
                                flag_value=True)
    std_upper_bound: float = _option(1000.0, "Upper bounds of σ_i and σ0, in multiples of the data's spread.",
                                     "float", low=0, low_open=True)
    alpha_bounds: tuple[float, float] = _option((0.5, 5.0), "Bounds of the uniform prior on α (ν' ~ Gamma(α, β)).",
                                                "pair", low=0, low_open=True)
    beta_bounds: tuple[float, float] = _option((0.05, 0.15), "Bounds of the uniform prior on β.", "pair", low=0,
                                               low_open=True)


@dataclass(frozen=True)
class PairOptions(_Options):
    """The two models of a comparison, and the claim about A that must hold (``--require``)."""

    _what = "models"

    model_a: str = _required("Model A (value of the model tag).", "str")
    model_b: str = _required("Model B.", "str")
    claim: str | None = _option(None, "Exit 1 unless the posterior supports this claim about A at the threshold.",
                                "choice", choices=CLAIMS, public="require", nullable=True)

    def _cross_checks(self) -> list[str]:
        if self.model_a is not None and self.model_a == self.model_b:
            return [f"model A and model B are both {self.model_a!r}; compare two different models"]
        return []


@dataclass(frozen=True)
class ModelsOptions(_Options):
    """The models of a matrix or a ranking; none means every model found."""

    _what = "models"

    models: tuple[str, ...] = _option((), "Models to compare (comma-separated; default: every model found).",
                                      "strings", high=200)

    def __post_init__(self) -> None:
        """``"a,b,c"`` (or a list of such) is three models."""
        given = [self.models] if isinstance(self.models, str) else self.models
        if isinstance(given, (list, tuple)) and all(isinstance(m, str) for m in given):
            split = tuple(m.strip() for item in given for m in item.split(",") if m.strip())
            object.__setattr__(self, "models", split)
        super().__post_init__()

    def _cross_checks(self) -> list[str]:
        repeated = sorted({m for m in self.models if self.models.count(m) > 1})
        return [f"models listed more than once: {', '.join(repeated)}"] if repeated else []


@dataclass(frozen=True)
class RankOptions(_Options):
    """The settings of the Bayesian Bradley-Terry ranking of several models (Wainer 2023; bbtcomp's defaults)."""

    _what = "ranking settings"

    greater_is_better: bool = _option(True, "The metric is a loss or error (lower is better).", "bool",
                                      public="lower_is_better", flag_value=False)
    local_rope: str = _option("paired", "When a dataset is a tie between two models: paired (|mean of the fold "
                                        "differences| <= factor x their sd), unpaired (|difference of the means| <= "
                                        "factor x the root mean square of the two sds) or off (equal means only).",
                              "choice", choices=("paired", "unpaired", "off"))
    local_rope_factor: float = _option(0.4, "The local ROPE's factor d_min (an effect size).", "float", low=0)
    ties: str = _option("spread", "How ties enter the model: spread (half of them, rounded up, to each model), "
                                  "add (all to each), forget (dropped) or davidson (Davidson's tie model).",
                        "choice", choices=("spread", "add", "forget", "davidson"))
    hyper_prior: str = _option("lognormal", "Prior of sigma, the spread of the strengths: LogNormal(0, scale), "
                                            "half-Cauchy(0, scale) or half-normal(0, scale).", "choice",
                               choices=("lognormal", "cauchy", "normal"),
                               aliases={"0": "lognormal", "1": "lognormal", "2": "cauchy", "3": "normal",
                                        "half-cauchy": "cauchy", "half-normal": "normal"})
    hyper_scale: float = _option(0.5, "Scale of the prior of sigma.", "float", low=0, low_open=True)
    rope: tuple[float, float] = _option((0.45, 0.55), "Region of practical equivalence of P(win).", "pair", low=0,
                                        high=1)
    hdi_prob: float = _option(0.89, "Probability mass of the reported highest-density intervals.", "float", low=0,
                              high=1, low_open=True, high_open=True)
    threshold: float = _option(0.95, "Two models differ credibly when P(P(win) > 0.5) reaches this.", "float",
                               low=0.5, high=1, high_open=True)
    drop_incomplete: bool = _option(False, "Drop datasets on which a model lacks scores (with a warning).", "bool",
                                    flag_value=True)
    skip_missing: bool = _option(False, "Where a model lacks a score (NaN or no row), its pairs count no game on "
                                        "what it lacks (the paper's missing data; bbtcomp's NA handling).", "bool",
                                 flag_value=True)
    chains: int = _option(FitOptions.chains, "MCMC chains.", "int", low=1, high=64)
    draws: int = _option(FitOptions.draws, "Posterior draws per chain, after the warm-up.", "int", low=10,
                         high=1_000_000)
    warmup: int = _option(FitOptions.warmup, "Warm-up iterations per chain.", "int", low=10, high=1_000_000)
    seed: int | None = _option(None, "Seed of every random choice (for reproducible probabilities).", "int", low=0,
                               high=2**32 - 1, nullable=True)
    backend: str = _option(FitOptions.backend, "Stan backend: cmdstanpy when CmdStan is installed, else pystan.",
                           "choice", choices=BACKENDS)

    def _cross_checks(self) -> list[str]:
        problems = []
        if self.drop_incomplete is True and self.skip_missing is True:
            problems.append("drop_incomplete and skip_missing exclude each other: choose one")
        low, high = self.rope if isinstance(self.rope, tuple) and len(self.rope) == 2 else (0.0, 1.0)
        if isinstance(low, float) and isinstance(high, float) and not low < 0.5 < high:
            problems.append(f"rope must contain 0.5 (P(win) of two equal models); got {low:g},{high:g}")
        return problems


# --------------------------------------------------------------------------------------------------- building


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


def click_options(*classes, exclude: Iterable[str] = ()):
    """A decorator declaring one command-line option per field of ``classes`` (except ``exclude``).

    Values arrive as given (strings, booleans for flags, tuples for repeatable names): :func:`parse_fields` with
    ``origin="cli"`` validates them, so the command line and the JSON API share one set of rules and messages.
    """
    import click

    exclude = set(exclude)

    def decorate(fn):
        for cls in reversed(classes):
            for f in reversed(dataclasses.fields(cls)):
                if not _excluded(cls, f, exclude) and f.metadata["option"].cli:
                    fn = _click_option(click, f)(fn)
        return fn

    return decorate


_METAVARS = {"int": "INTEGER", "float": "NUMBER", "numbers": "NUMBER[,NUMBER...]", "pair": "LOW,HIGH",
             "str": "TEXT", "strings": "TEXT"}


def _click_option(click, f: dataclasses.Field):
    spec: Option = f.metadata["option"]
    flag, dest = public_name(f, "cli"), spec.public or f.name
    if spec.is_flag:
        return click.option(flag, dest, is_flag=True, default=None, help=spec.help)
    default = None if f.default in (dataclasses.MISSING, None, "", ()) else f.default
    if isinstance(default, tuple):
        default = ",".join(f"{v:g}" for v in default)
    metavar = "[" + "|".join(spec.choices) + "]" if spec.kind == "choice" else _METAVARS[spec.kind]
    return click.option(flag, dest, multiple=spec.kind == "strings", required=spec.required,
                        default=None if default is None else str(default), show_default=default is not None,
                        metavar=metavar, help=spec.help)
