"""One look: the data so far under a registered design → ``continue``, ``a_better``, ``b_better``, ``equivalent``
or ``inconclusive`` (at the budget), with the probabilities behind it and the confidence sequence beside them.

The data are read at the design's scheduled sizes only (the error rates the simulation reports hold for those):
every scheduled look up to the data's size is evaluated, in order, and the first that decides is the answer (the
design stopped there; later data do not undo it).  Units past the budget are not read, and for ``correlated-t`` a
repeat counts once all its folds are in.  For ``hierarchical`` the scores are one row per dataset, each the same
number of repeats (a repeat counts once every dataset has it), and the posterior is given (a Stan fit: the pipeline's;
this package holds no Stan).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..vocabulary.errors import InputError
from ..vocabulary.outcomes import Orientation, json_ready
from . import rule
from .confseq import confidence_sequence, cs_decision
from .design import CV_TESTS, Design
from .posteriors import Posterior, posterior_for

__all__ = ["Look", "LookRow", "look"]

_HEADER = "Cannot look:"


@dataclass(frozen=True)
class LookRow:
    """One scheduled look: its size, the oriented probabilities, what the posterior and the confidence sequence
    (None without ``cs_check``) decide there, and the sequence's bounds of the mean difference a − b."""

    size: int
    p_a_better: float
    p_rope: float
    p_b_better: float
    bayes_answer: str
    cs_low: float | None
    cs_high: float | None
    cs_answer: str | None


@dataclass(frozen=True)
class Look:
    """The answer at the data so far.  ``size`` is the look it is read at: the first look that decided, else the
    last look reached (0 before the first); ``available`` the units the data hold (complete repeats, or items);
    ``rows`` every look reached; ``notes`` what was left unread."""

    answer: str
    size: int
    available: int
    unit: str
    rows: tuple[LookRow, ...]
    fingerprint: str
    notes: tuple[str, ...]

    @property
    def row(self) -> LookRow | None:
        """The look the answer is read at (None before the first)."""
        return next((r for r in self.rows if r.size == self.size), None)

    def to_dict(self) -> dict:
        return json_ready({**asdict(self), "row": None if self.row is None else asdict(self.row)})


def look(design: Design, scores_a=None, scores_b=None, *, diffs=None, posterior: Posterior | None = None) -> Look:
    """The answer of ``design`` at the paired scores so far, in arrival order (per fold, run-major, for
    ``correlated-t``; per item for the evaluations), or their differences ``diffs`` = a − b.  ``posterior`` replaces
    the design's (:func:`.posteriors.posterior_for`), e.g. the evaluation family's."""
    a, b = _paired(design, scores_a, scores_b, diffs)
    group = (design.folds or 1) if design.test in CV_TESTS else 1
    available, notes = _available(design, a.shape[-1], group)
    sizes = [s for s in design.looks if s <= available]
    posterior = posterior or posterior_for(design)
    low = high = None
    if design.cs_check and sizes:
        read = available * group
        units = (a[:read] - b[:read]).reshape(-1, group).mean(axis=1)  # the sequence's independent units
        low, high = confidence_sequence(units, design.cs_alpha, design.half_range, sizes)
    orient = Orientation(design.greater_is_better).orient
    rows, answer, size = [], "continue", 0
    for i, size in enumerate(sizes):
        masses = posterior(a[..., : size * group], b[..., : size * group], design.rope)
        bayes = int(rule.decide(*masses, design.threshold))
        cs = None if low is None else int(cs_decision(low[i], high[i], design.rope))
        at_budget = size == design.max_size
        rows.append(LookRow(size, *orient(*masses).values(), _word(design, bayes),
                            None if low is None else float(low[i]), None if high is None else float(high[i]),
                            None if cs is None else _word(design, cs)))
        decided = int(rule.gated(np.array(bayes), None if cs is None else np.array(cs), design.gate))
        answer = rule.answer_word(decided, design.greater_is_better, at_budget)
        if decided != rule.NONE:
            break
    return Look(answer, size, available, design.unit, tuple(rows), design.fingerprint, tuple(notes))


def _word(design: Design, side: int) -> str:
    """A look's side in words (``continue`` where it decides nothing: the design's budget aside)."""
    return rule.answer_word(side, design.greater_is_better, at_budget=False)


def _available(design: Design, count: int, group: int) -> tuple[int, list[str]]:
    """Complete units in ``count`` scores, capped at the budget, and what is left unread."""
    units, notes = count // group, []
    if count % group:
        notes.append(f"the last {count % group} of {count} folds are an incomplete repeat of {group} folds; "
                     "it counts once complete")
    if units > design.max_size:
        notes.append(f"{units - design.max_size} {design.unit} past the budget of {design.max_size} are not read")
        units = design.max_size
    if units < design.min_size:
        notes.append(f"the first look is at {design.min_size} {design.unit}; the data hold {units}")
    return units, notes


def _paired(design: Design, scores_a, scores_b, diffs) -> tuple[np.ndarray, np.ndarray]:
    """The two score vectors (with ``diffs``: a = diffs, b = 0), checked: 1-D, paired, finite, within
    ``score_range`` (pass = 1 / fail = 0 for eval-binary), every bad value named by its position."""
    if (diffs is None) == (scores_a is None or scores_b is None):
        raise InputError("give scores_a and scores_b, or diffs", header=_HEADER)
    given = {"diffs": diffs} if diffs is not None else {"scores_a": scores_a, "scores_b": scores_b}
    problems, vectors = [], {}
    for name, value in given.items():
        try:
            vectors[name] = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            problems.append(f"{name} holds non-numeric values")
            continue
        rows = design.test == "hierarchical"
        if vectors[name].ndim != 1 + rows:
            problems.append(f"{name} must be {'2-D (a row per dataset, ' if rows else '1-D ('}one score per "
                            f"{_where(design)}); got shape {vectors[name].shape}")
        elif rows and len(vectors[name]) != design.dataset_count:
            problems.append(f"{name} holds {len(vectors[name])} datasets; the design was registered for "
                            f"{design.dataset_count} (its error rates were simulated with them)")
    if not problems and diffs is None and vectors["scores_a"].shape != vectors["scores_b"].shape:
        problems.append(f"scores_a has {_count(vectors['scores_a'])} and scores_b {_count(vectors['scores_b'], '')}: "
                        "they must be paired")
    if not problems:
        for name, v in vectors.items():
            problems += _bad_values(design, name, v, diffs is not None)
    if problems:
        raise InputError(problems, header=_HEADER)
    if diffs is not None:
        return vectors["diffs"], np.zeros_like(vectors["diffs"])
    return vectors["scores_a"], vectors["scores_b"]


def _bad_values(design: Design, name: str, v: np.ndarray, difference: bool) -> list[str]:
    """The first few values that are not finite, or outside the scores' range, by position."""
    low, high = (-design.half_range, design.half_range) if difference else design.score_range
    bad = ~np.isfinite(v) | (v < low) | (v > high)
    if design.test == "eval-binary":
        bad |= ~np.isin(v, (-1.0, 0.0, 1.0) if difference else (0.0, 1.0))
    flat = v.ravel()
    shown = [f"{name} at {_where(design, i, v.shape[-1])} is {flat[i]:g}" for i in np.flatnonzero(bad)[:5]]
    if bad.sum() > 5:
        shown.append(f"{name} has {int(bad.sum())} such values in all")
    if shown:
        expected = ("pass (1) or fail (0)" if design.test == "eval-binary"
                    else f"finite and within [{low:g}, {high:g}]")
        shown[0] += f" (each must be {expected})"
    return shown


def _count(scores: np.ndarray, unit: str = " scores") -> str:
    return f"{scores.size}{unit}" if scores.ndim < 2 else f"{len(scores)} datasets of {scores.shape[-1]}{unit}"


def _where(design: Design, index: int | None = None, width: int = 0) -> str:
    """``fold``, or ``repeat 2 fold 3`` / ``dataset 4 repeat 2 fold 3`` / ``item 17`` for a position in the scores
    (flat, rows of ``width``; 0-based in, 1-based out)."""
    if design.test in CV_TESTS:
        folds = design.folds or 1
        if index is None:
            return "fold"
        row, index = divmod(index, width) if design.test == "hierarchical" else (None, index)
        return ("" if row is None else f"dataset {row + 1} ") + f"repeat {index // folds + 1} fold {index % folds + 1}"
    return "item" if index is None else f"item {index + 1}"
