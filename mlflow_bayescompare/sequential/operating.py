"""A design's operating characteristics, by simulation: its stopping rule applied at every look to data drawn with
a known difference, in every scenario of :mod:`.scenarios`, at three truths — no difference (δ = 0), a difference
at the rope's edge (δ = rope) and a clear one (δ = ``clear``, default 2·rope), always in A's favour (the rule is
symmetric).

A **false decision** is an answer the truth contradicts: with |δ| < rope (no difference), "A better" or "B better";
with δ at or beyond the rope's edge, "equivalent" or the wrong model better.  At the edge δ = rope both "A better"
and "equivalent" sit on their claims' boundary; only "equivalent" is counted there, as a fixed-size test at the
threshold gives each about 1 − threshold.  The design's false-decision rate is the largest over scenarios and
truths; it is compared with its nominal level (``nominal_error``, default 1 − threshold), and the smallest
threshold of a grid that keeps every simulated rate within it is offered.  The comparison with a fixed size: the
smallest size whose single look at the design's threshold decides "A better" at the clear difference as often as
the sequential design does, against the sequential design's expected size.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from ..vocabulary.errors import InputError
from ..vocabulary.outcomes import Orientation, json_ready
from . import rule
from .confseq import cs_decision
from .design import Design
from .report import oc_lines
from .scenarios import SCENARIOS, Paths, simulate

__all__ = ["Cell", "FixedSize", "OperatingCharacteristics", "operating_characteristics", "TRUTHS"]

#: The truths simulated, by name: δ in ropes (``clear`` is the ``clear=`` argument)
TRUTHS = ("no difference", "rope edge", "clear")


@dataclass(frozen=True)
class Cell:
    """One scenario at one truth: the share of each answer, the false-decision rate and its Monte Carlo standard
    error, the stopping size (mean, median, 90th percentile; in the design's unit), the share that ran to the budget,
    and the confidence sequence's time-uniform coverage and the share of each answer it reaches alone."""

    scenario: str
    truth: str
    difference: float
    answers: dict[str, float]
    false_decision: float
    standard_error: float
    mean_size: float
    median_size: float
    p90_size: float
    at_budget: float
    cs_coverage: float | None
    cs_answers: dict[str, float] | None


@dataclass(frozen=True)
class FixedSize:
    """The fixed-size comparison of the same power, in one scenario: the sequential design's P("A better") at the
    clear difference (at ``threshold``: the one offered when the design's exceeds its level), the smallest fixed size
    with at least that power (None: not within the budget) at ``fixed_threshold``, the one that keeps a single look
    there within the same level in every scenario, and the sequential design's expected sizes at the clear
    difference and at no difference."""

    scenario: str
    threshold: float
    power: float
    fixed_size: int | None
    fixed_threshold: float | None
    mean_size_clear: float
    mean_size_none: float


@dataclass(frozen=True)
class OperatingCharacteristics:
    """What :func:`operating_characteristics` reports (its :meth:`lines` say it in sentences)."""

    fingerprint: str
    test: str
    unit: str
    threshold: float
    nominal_error: float
    replicates: int
    seed: int
    clear: float
    scenarios: dict[str, str]
    cells: tuple[Cell, ...]
    false_decision: float
    exceeds: bool
    offered_threshold: float | None
    offered_by_scenario: dict[str, float | None]
    cells_at_offered: tuple[Cell, ...]
    fixed_size: tuple[FixedSize, ...]
    seconds: float

    def worst(self, cells: tuple[Cell, ...] | None = None) -> Cell:
        """The cell of the largest false-decision rate."""
        return max(cells or self.cells, key=lambda c: c.false_decision)

    def lines(self) -> list[str]:
        """The report in sentences: the rate against its level, the threshold offered, the stopping sizes, the
        saving against a fixed size and the confidence sequence's coverage."""
        return oc_lines(self)

    def to_dict(self) -> dict:
        return json_ready(asdict(self))


def operating_characteristics(design: Design, *, replicates: int = 4000, seed: int = 0, clear: float | None = None,
                              thresholds=None) -> OperatingCharacteristics:
    """Simulate ``design`` (``replicates`` runs per scenario and truth, from ``seed``) and summarise it.
    ``thresholds``: the grid searched for the threshold offered (default: the nominal error down to 1/50 of it,
    in 35 steps even in log(1 − threshold), and the design's own threshold)."""
    started = time.perf_counter()
    clear = _checked(design, 2 * design.rope if clear is None else clear, replicates)
    rng = np.random.default_rng(seed)
    sign = 1.0 if design.greater_is_better else -1.0  # A's favour on the paper's axis of a − b
    truths = dict(zip(TRUTHS, (0.0, design.rope, clear)))
    paths = {(scenario, truth): simulate(design, scenario, sign * delta, replicates, rng)
             for scenario in SCENARIOS[design.test] for truth, delta in truths.items()}
    cells = _cells(design, paths, truths, design.threshold)
    grid = _grid(design) if thresholds is None else np.sort(np.asarray(thresholds, dtype=float))
    rates = _rates(design, paths, truths, grid)
    offered = _offer(grid, np.max(list(rates.values()), axis=0), design.nominal_error)
    worst = max(c.false_decision for c in cells)
    exceeds = worst > design.nominal_error
    chosen = offered if exceeds and offered is not None else design.threshold
    single = _single_look_thresholds(design, paths, truths, grid)
    return OperatingCharacteristics(
        fingerprint=design.fingerprint, test=design.test, unit=design.unit, threshold=design.threshold,
        nominal_error=design.nominal_error, replicates=replicates, seed=seed, clear=clear,
        scenarios=SCENARIOS[design.test], cells=cells, false_decision=worst, exceeds=exceeds,
        offered_threshold=offered,
        offered_by_scenario={s: _offer(grid, r, design.nominal_error) for s, r in rates.items()},
        cells_at_offered=() if offered in (None, design.threshold) else _cells(design, paths, truths, offered),
        fixed_size=tuple(_fixed_size(design, paths, s, chosen, single) for s in SCENARIOS[design.test]),
        seconds=time.perf_counter() - started)


def _offer(grid: np.ndarray, rates: np.ndarray, level: float) -> float | None:
    """The smallest threshold of ``grid`` from which every larger one keeps ``rates`` within ``level``."""
    keeps = np.flatnonzero(np.logical_and.accumulate((rates <= level)[::-1])[::-1])
    return float(grid[keeps[0]]) if keeps.size else None


def _checked(design: Design, clear, replicates) -> float:
    """The clear difference, once it and the replicates are known to make sense for the design."""
    problems = []
    if isinstance(replicates, bool) or not isinstance(replicates, (int, np.integer)) or replicates < 100:
        problems.append(f"replicates must be a whole number of at least 100; got {replicates!r}")
    try:
        clear = float(clear)
    except (TypeError, ValueError):
        clear = float("nan")
    widest = design.planning_sd**2 if design.test == "eval-binary" else design.half_range
    if not design.rope < clear < widest:
        limit = (f"the share of items on which the models disagree, planning_sd² = {widest:.4g}"
                 if design.test == "eval-binary" else f"the widest difference of two scores, {widest:g}")
        problems.append(f"clear must lie between the rope {design.rope:g} and {limit}; got {clear!r}")
    if problems:
        raise InputError(problems, header="Cannot simulate the design:")
    return clear


def _grid(design: Design) -> np.ndarray:
    """Thresholds from 1 − nominal_error to 1 − nominal_error/50, even in log(1 − threshold), with the design's."""
    steps = 1 - design.nominal_error * np.logspace(0, -np.log10(50), 35)
    return np.unique(np.append(steps[steps > 0.5], design.threshold))


def _false_sides(difference: float, rope: float, greater_is_better: bool) -> tuple[int, ...]:
    """The paper's sides a truth in A's favour contradicts (see the module's docstring)."""
    if difference < rope:
        return rule.LEFT, rule.RIGHT
    return (rule.ROPE, rule.LEFT) if greater_is_better else (rule.ROPE, rule.RIGHT)


def _gated_masses(design: Design, p: Paths) -> np.ndarray:
    """The posterior masses where the design's gate lets them decide (gate ``both``: where the confidence sequence
    decides the same side; else 0)."""
    if design.gate == "bayes":
        return p.masses
    cs = cs_decision(p.cs_low, p.cs_high, design.rope)
    return np.where(cs[None] == np.array([rule.LEFT, rule.ROPE, rule.RIGHT])[:, None, None], p.masses, 0.0)


def _stops(masses: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(look index, side) of every replicate's first decision at each threshold: (thresholds, replicates) each.
    A side decides at its first look whose probability reaches the threshold (its running maximum does)."""
    running = np.maximum.accumulate(masses, axis=-1)  # (3, replicates, looks)
    looks = masses.shape[-1]
    first = (running[..., None] < thresholds).sum(axis=2)  # (3, replicates, thresholds): looks before it decides
    side = np.argmin(first, axis=0)  # one side at most reaches a threshold > 0.5 at any look
    index = np.min(first, axis=0)
    decided = index < looks
    codes = np.array([rule.LEFT, rule.ROPE, rule.RIGHT])[side]
    return np.where(decided, index, looks - 1).T, np.where(decided, codes, rule.NONE).T


def _rates(design: Design, paths: dict, truths: dict, grid: np.ndarray) -> dict[str, np.ndarray]:
    """Each scenario's largest false-decision rate over its truths, at each threshold of ``grid``."""
    worst = {}
    for (scenario, truth), p in paths.items():
        _, sides = _stops(_gated_masses(design, p), grid)
        wrong = np.isin(sides, _false_sides(truths[truth], design.rope, design.greater_is_better)).mean(axis=1)
        worst[scenario] = np.maximum(worst.get(scenario, 0), wrong)
    return worst


def _single_look_thresholds(design: Design, paths: dict, truths: dict, grid: np.ndarray) -> np.ndarray:
    """For a single look at each of the design's sizes, the threshold of ``grid`` it needs to keep every simulated
    false-decision rate within the nominal error (:func:`_offer`; NaN where none does)."""
    worst = np.zeros((len(design.looks), len(grid)))
    for (_, truth), p in paths.items():
        masses = _gated_masses(design, p)
        wrong = np.zeros(masses.shape[1:] + grid.shape, dtype=bool)  # (replicates, looks, thresholds)
        for side in _false_sides(truths[truth], design.rope, design.greater_is_better):
            wrong |= masses[side - 1][..., None] >= grid
        worst = np.maximum(worst, wrong.mean(axis=0))
    offers = [_offer(grid, row, design.nominal_error) for row in worst]
    return np.array([np.nan if t is None else t for t in offers])


def _cells(design: Design, paths: dict, truths: dict, threshold: float) -> tuple[Cell, ...]:
    return tuple(_cell(design, p, scenario, truth, truths[truth], threshold) for (scenario, truth), p in paths.items())


def _cell(design: Design, p: Paths, scenario: str, truth: str, difference: float, threshold: float) -> Cell:
    index, sides = (v[0] for v in _stops(_gated_masses(design, p), np.array([threshold])))
    sizes = np.asarray(design.looks)[index]
    wrong = np.isin(sides, _false_sides(difference, design.rope, design.greater_is_better)).mean()
    cs_coverage = cs_answers = None
    if p.covered is not None:
        _, cs_sides = rule.first_decision(cs_decision(p.cs_low, p.cs_high, design.rope))
        cs_coverage, cs_answers = float(p.covered.mean()), _shares(cs_sides, design.greater_is_better)
    return Cell(scenario, truth, difference, _shares(sides, design.greater_is_better), float(wrong),
                float(np.sqrt(wrong * (1 - wrong) / len(sides))), float(sizes.mean()),
                float(np.quantile(sizes, 0.5, method="inverted_cdf")),
                float(np.quantile(sizes, 0.9, method="inverted_cdf")), float((sizes == design.max_size).mean()),
                cs_coverage, cs_answers)


def _shares(sides: np.ndarray, greater_is_better: bool) -> dict[str, float]:
    """The share of each answer (``inconclusive``: no look decided)."""
    outcomes = Orientation(greater_is_better).sides
    words = {rule.NONE: "inconclusive", **{code: ("equivalent" if outcomes[code - 1] == "rope" else outcomes[code - 1])
                                          for code in (rule.LEFT, rule.ROPE, rule.RIGHT)}}
    return {word: float((sides == code).mean()) for code, word in sorted(words.items(), key=lambda kv: kv[1])}


def _fixed_size(design: Design, paths: dict, scenario: str, threshold: float, single: np.ndarray) -> FixedSize:
    """The smallest single look, at the threshold that keeps its own false decisions within the nominal error in
    every scenario (``single``, by size), that decides "A better" at the clear difference at least as often as the
    sequential design at ``threshold`` (see the module)."""
    masses = _gated_masses(design, paths[(scenario, "clear")])
    favoured = rule.RIGHT if design.greater_is_better else rule.LEFT
    index, sides = (v[0] for v in _stops(masses, np.array([threshold])))
    power = float((sides == favoured).mean())
    enough = np.flatnonzero((masses[favoured - 1] >= single).mean(axis=0) >= power)  # NaN thresholds never decide
    sizes = np.asarray(design.looks)
    none_index, _ = (v[0] for v in _stops(_gated_masses(design, paths[(scenario, "no difference")]),
                                         np.array([threshold])))
    return FixedSize(scenario, threshold, power, int(sizes[enough[0]]) if enough.size else None,
                     float(single[enough[0]]) if enough.size else None, float(sizes[index].mean()),
                     float(sizes[none_index].mean()))
