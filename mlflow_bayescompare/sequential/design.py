"""The registered design of a stop-when-decided comparison: what grows (a dataset's cross-validation repeats, or an
evaluation's items), the posterior that answers, the rope and threshold of the decision, the sizes at which it is
read (the looks) and the budget, the anytime-valid cross-check, and the planning value its error rates are simulated
under.  A design is registered before the first look; its canonical JSON (``design.json``) and that JSON's sha256
(:attr:`Design.fingerprint`) identify it, and a later look under a different design is refused, naming every field
that changed (:func:`check_unchanged`).

A design is an options class of the product (:class:`~.optionspec.OptionsBase`): each field carries its
:class:`~.optionspec.Option` spec (help, bounds, choices, its command-line and JSON name), so the ``watch`` command
can declare its options with :func:`~.optionparse.click_options` and read a request with
:func:`~.optionparse.parse_fields`, and every bad value is named at once in one :class:`~.errors.InputError`.

To add a test (e.g. ``hierarchical`` across datasets): a name in :data:`TESTS`, its unit in :data:`UNITS`, its
posterior in :mod:`.posteriors` and its scenarios in :mod:`.scenarios`; the JSON of the designs already registered
does not change.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..families.correlated_t import formula
from ..vocabulary.errors import InputError
from ..vocabulary.optionspec import OptionsBase, option, required_option

__all__ = ["Design", "TESTS", "UNITS", "CV_TESTS", "GATES", "SCHEMA", "MAX_LOOKS", "from_json", "changes",
           "check_unchanged"]

#: What grows, and the posterior that answers at each look.
TESTS = ("correlated-t", "hierarchical", "eval-binary", "eval-continuous")
#: What a design's sizes count, by test (``hierarchical``: the repeats of every dataset).
UNITS = {"correlated-t": "repeats", "hierarchical": "repeats", "eval-binary": "items", "eval-continuous": "items"}
#: The tests that read cross-validation runs (the others read evaluation runs).
CV_TESTS = ("correlated-t", "hierarchical")
#: Fields added after :data:`SCHEMA` 1: left out of ``design.json`` while unset, so that the designs registered
#: without them keep their fingerprints.
_LATER = ("dataset_count", "planning_spread")
#: What a look's decision needs: the Bayesian answer alone, or the Bayesian answer and the confidence sequence's.
GATES = ("bayes", "both")
#: The version of ``design.json``'s fields (a field added later keeps the fingerprints of the designs without it).
SCHEMA = 1
#: The most looks a design may take (each is simulated for its error rates).
MAX_LOOKS = 500
_MAX_SIZE = {"repeats": 10_000, "items": 1_000_000}
_HEADER = "invalid design:"


@dataclass(frozen=True)
class Design(OptionsBase):
    """A stop-when-decided design (see the module's docstring).  Sizes count :attr:`unit`: repeats of ``folds``-fold
    cross-validation for ``correlated-t``, items for the evaluation tests."""

    _what = "design"

    test: str = required_option("What grows and which posterior answers: correlated-t (one dataset's cross-validation "
                                "repeats; Corani & Benavoli 2015), hierarchical (the repeats of several datasets; "
                                "the hierarchical test of Corani et al. 2017, fitted by Stan at each look), "
                                "eval-binary (paired pass/fail items; a Dirichlet over the paired 2x2 table) or "
                                "eval-continuous (paired scores per item; the Bayesian bootstrap, Rubin 1981).",
                                "choice", choices=TESTS)
    rope: float = option(0.01, "Half-width of the region of practical equivalence, in metric units (pass-rate units "
                               "for eval-binary).", "float", low=0, low_open=True)
    threshold: float = option(0.95, "Posterior probability at which a look decides.", "float", low=0.5, high=1,
                              low_open=True, high_open=True)
    nominal_error: float | None = option(None, "The false-decision rate the design promises (default 1 - "
                                               "threshold); the simulation checks it.", "float", low=0, high=0.5,
                                         low_open=True, nullable=True)
    greater_is_better: bool = option(True, "The metric is a loss or error (lower is better).", "bool",
                                     public="lower_is_better", flag_value=False)
    min_size: int = required_option("Size of the first look (repeats or items).", "int", low=1)
    max_size: int = required_option("The budget: size of the last look (repeats or items).", "int", low=1)
    look_every: int | None = option(None, "Look every this many repeats or items from min_size (default 1; the "
                                          "budget is always a look).", "int", low=1, nullable=True)
    look_at: tuple[int, ...] | None = option(None, "Look at these sizes instead (ascending, from min_size, the last "
                                                   "one max_size).", "numbers", low=1, nullable=True)
    folds: int | None = option(None, "correlated-t, hierarchical: folds per repeat (the correlation rho = "
                                     "1/folds); without it (rho given) each repeat is one hold-out split.", "int",
                               low=2, high=10_000, nullable=True)
    rho: float | None = option(None, "correlated-t, hierarchical: the correlation between folds instead of "
                                     "1/folds (0 for independent hold-out splits).", "float", low=0, high=1,
                               high_open=True, nullable=True)
    prior_concentration: float | None = option(None, "eval-binary: the Dirichlet prior's concentration on each cell "
                                                     "of the paired 2x2 table (default 1, uniform).", "float", low=0,
                                               low_open=True, nullable=True)
    dataset_count: int | None = option(None, "hierarchical: the number of datasets the watch reads (the error "
                                             "rates are simulated with this many; a look that reads another number "
                                             "is refused).", "int", low=3, high=1000, nullable=True)
    planning_spread: float | None = option(None, "hierarchical: the expected standard deviation of the datasets' "
                                                 "mean differences around their mean (the interaction of model and "
                                                 "dataset), from a pilot or earlier runs: the error rates are "
                                                 "simulated with it.", "float", low=0, nullable=True)
    score_range: tuple[float, float] = option((0.0, 1.0), "The range every score lies in (the confidence sequence "
                                                          "needs bounded differences).", "pair")
    planning_sd: float = required_option("The expected standard deviation of one difference (a fold's for "
                                         "correlated-t and hierarchical, an item's for the evaluations; for "
                                         "pass/fail, the square root of the fraction of items on which the models "
                                         "disagree), from a pilot or earlier runs: the error rates are simulated "
                                         "with it.", "float", low=0, low_open=True)
    cs_check: bool = option(False, "Compute the anytime-valid confidence sequence beside the posterior (on "
                                   "request: it rarely decides over tens of repeats; see the README).", "bool",
                            public="cs", flag_value=True)
    cs_alpha: float = option(0.05, "The confidence sequence's error level (it covers with 1 - alpha at every look "
                                   "at once).", "float", low=0, high=0.5, low_open=True)
    gate: str = option("bayes", "What decides: the posterior alone (bayes) or the posterior and the confidence "
                                "sequence agreeing (both).", "choice", choices=GATES)

    @property
    def unit(self) -> str:
        """``repeats`` or ``items``: what the sizes count."""
        return UNITS[self.test]

    @property
    def looks(self) -> tuple[int, ...]:
        """The sizes at which the design looks, ascending; the last is the budget."""
        if self.look_at:
            return self.look_at
        return tuple(range(self.min_size, self.max_size, self.look_every)) + (self.max_size,)

    @property
    def correlation(self) -> float:
        """ρ of the correlated t-test: ``rho`` when given, else 1/folds
        (:func:`..families.correlated_t.formula.correlation`)."""
        return formula.correlation(self.folds, self.rho, None, None, header=_HEADER)[0]

    @property
    def half_range(self) -> float:
        """The largest absolute difference of two scores: the width of :attr:`score_range`."""
        low, high = self.score_range
        return high - low

    def canonical_json(self) -> str:
        """``design.json``: every field (those of :data:`_LATER` when set) and the :data:`SCHEMA`, keys sorted, no
        spaces, non-ASCII kept."""
        fields = {k: v for k, v in self.to_dict().items() if not (k in _LATER and v is None)}
        return json.dumps({"schema": SCHEMA, **fields}, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)

    @property
    def fingerprint(self) -> str:
        """The sha256 (hex) of :meth:`canonical_json` in UTF-8."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    def _cross_checks(self) -> list[str]:
        if not isinstance(self.test, str) or self.test not in TESTS:  # its own check said so
            return []
        problems = self._fill_defaults() + self._test_fields() + self._sizes()
        if isinstance(self.rope, float) and isinstance(self.score_range, tuple):
            if self.rope >= self.half_range:
                problems.append(f"rope {self.rope:g} must be smaller than the widest difference of two scores, "
                                f"{self.half_range:g} (score_range {self.score_range[0]:g},{self.score_range[1]:g})")
        if self.gate == "both" and self.cs_check is False:
            problems.append("gate 'both' needs the confidence sequence: ask for it (cs) or use gate 'bayes'")
        return problems

    def _fill_defaults(self) -> list[str]:
        """The defaults that depend on other fields, written into the design (its JSON is then canonical)."""
        if self.nominal_error is None and isinstance(self.threshold, float):
            object.__setattr__(self, "nominal_error", round(1 - self.threshold, 12))
        if self.look_every is None and not self.look_at:
            object.__setattr__(self, "look_every", 1)
        if self.prior_concentration is None and self.test == "eval-binary":
            object.__setattr__(self, "prior_concentration", 1.0)
        return []

    def _test_fields(self) -> list[str]:
        """The fields one test needs and the others must leave unset."""
        problems, cv = self._hierarchical_fields(), self.test in CV_TESTS
        if cv and self.folds is None and self.rho is None:
            problems.append(f"{self.test} needs folds (the folds of each repeat: rho = 1/folds) or rho")
        if cv and self.folds is None and isinstance(self.min_size, int) and self.min_size < 2:
            problems.append("with rho and no folds each repeat is one split: min_size must be at least 2 (the "
                            "correlated t-test needs two differences)")
        for name in ("folds", "rho"):
            if not cv and getattr(self, name) is not None:
                problems.append(f"{name} applies to correlated-t and hierarchical only, not {self.test}")
        if self.test != "eval-binary" and self.prior_concentration is not None:
            problems.append(f"prior_concentration applies to eval-binary only, not {self.test} (the correlated "
                            "t-test's prior and the Bayesian bootstrap's have no setting)")
        if self.test == "eval-binary":
            if self.score_range != (0.0, 1.0):
                problems.append("eval-binary scores are pass (1) or fail (0): leave score_range at 0,1")
            sd, rope = self.planning_sd, self.rope
            if isinstance(sd, float) and isinstance(rope, float) and sd**2 <= rope:
                problems.append(f"planning_sd² = {self.planning_sd**2:.4g} is the fraction of items on which the "
                                f"models disagree; it must exceed the rope {self.rope:g} (the pass rates cannot "
                                "differ by more than it)")
        if isinstance(self.planning_sd, float) and isinstance(self.score_range, tuple):
            if self.planning_sd > self.half_range:
                problems.append(f"planning_sd {self.planning_sd:g} exceeds the widest difference of two scores "
                                f"{self.half_range:g}")
        return problems

    def _hierarchical_fields(self) -> list[str]:
        """``hierarchical`` needs its planning values (dataset_count, planning_spread) and has no confidence sequence;
        the other tests leave those fields unset."""
        if self.test != "hierarchical":
            return [f"{name} applies to hierarchical only, not {self.test}" for name in _LATER
                    if getattr(self, name) is not None]
        problems = [f"hierarchical needs {name} (the {what}): the error rates are simulated with it"
                    for name, what in (("dataset_count", "number of datasets read"),
                                       ("planning_spread", "spread of the datasets' mean differences"))
                    if getattr(self, name) is None]
        if self.cs_check:
            problems.append("the confidence sequence covers one dataset's repeats or one evaluation's items, not "
                            "the datasets of hierarchical: leave cs unset")
        return problems

    def _sizes(self) -> list[str]:
        """min_size ≤ max_size within the unit's bounds, and one schedule of looks within them."""
        if not (isinstance(self.min_size, int) and isinstance(self.max_size, int) and self.max_size >= 1):
            return []  # their own checks said so
        unit, problems = self.unit, []
        if self.min_size > self.max_size:
            problems.append(f"min_size {self.min_size} exceeds max_size {self.max_size}")
        if self.max_size > _MAX_SIZE[unit]:
            problems.append(f"max_size {self.max_size} exceeds {_MAX_SIZE[unit]} {unit}")
        if unit == "items" and self.min_size < 2:
            problems.append(f"min_size must be at least 2 items for {self.test}; got {self.min_size}")
        if self.look_at and self.look_every is not None:
            problems.append("give look_every or look_at, not both")
        elif self.look_at:
            problems += self._explicit_looks()
        elif isinstance(self.look_every, int) and not problems:
            count = -(-(self.max_size - self.min_size) // self.look_every) + 1
            if count > MAX_LOOKS:
                problems.append(f"looking every {self.look_every} {unit} from {self.min_size} to {self.max_size} "
                                f"is {count} looks; at most {MAX_LOOKS}: look less often")
        return problems

    def _explicit_looks(self) -> list[str]:
        """``look_at``: whole, ascending sizes from min_size to max_size (cleaned to a tuple of ints)."""
        sizes = self.look_at if isinstance(self.look_at, tuple) else (self.look_at,)
        if not all(isinstance(s, float) and s.is_integer() for s in sizes):
            return [f"look_at must be whole numbers of {self.unit}; got {self.look_at!r}"]
        sizes = tuple(int(s) for s in sizes)
        problems = []
        if any(b <= a for a, b in zip(sizes, sizes[1:])):
            problems.append(f"look_at must be strictly ascending; got {', '.join(map(str, sizes))}")
        if sizes[0] < self.min_size:
            problems.append(f"look_at's first look {sizes[0]} is before min_size {self.min_size}")
        if sizes[-1] != self.max_size:
            problems.append(f"look_at's last look must be the budget max_size {self.max_size}; got {sizes[-1]}")
        if len(sizes) > MAX_LOOKS:
            problems.append(f"look_at has {len(sizes)} looks; at most {MAX_LOOKS}")
        object.__setattr__(self, "look_at", sizes)
        return problems


def from_json(text: str) -> Design:
    """The design of a ``design.json`` (:meth:`Design.canonical_json`, or the same fields in any layout)."""
    try:
        fields = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InputError(f"design.json is not JSON: {exc}", header=_HEADER) from None
    if not isinstance(fields, dict):
        raise InputError(f"design.json must hold an object of the design's fields; got {type(fields).__name__}",
                         header=_HEADER)
    schema = fields.pop("schema", None)
    known = {f.name for f in dataclasses.fields(Design)}
    problems = [f"unknown field {name!r}" for name in sorted(set(fields) - known)]
    if schema != SCHEMA:
        problems.append(f"design.json's schema is {schema!r}; this version reads schema {SCHEMA}")
    if problems:
        raise InputError(problems, header=_HEADER)
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return Design(**fields)


def changes(registered: Design, new: Design) -> list[str]:
    """Every field whose value differs between two designs: ``threshold: 0.95 → 0.99``, in the fields' order."""
    old_fields, new_fields = registered.to_dict(), new.to_dict()
    return [f"{name}: {_shown(old_fields[name])} → {_shown(new_fields[name])}" for name in old_fields
            if old_fields[name] != new_fields[name]]


def check_unchanged(registered: Design, new: Design) -> None:
    """Refuse a look under a design that is not the registered one, naming every field that changed."""
    changed = changes(registered, new)
    if changed:
        raise InputError(changed, header=f"a later look with a different design is refused: the registered design "
                                         f"({registered.fingerprint[:12]}) differs in",
                         footer=["Register a new design (a new comparison) to change it."])


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
