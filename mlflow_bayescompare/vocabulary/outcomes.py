"""What every two-model result shares (:class:`TwoModelResult`) and the vocabulary every report of one uses.

Orientation.  ``x = score_a - score_b`` throughout (the paper's x_i, eq. mvn).  In the paper's words *left* is
``delta < -rope`` and *right* is ``delta > rope``; with ``greater_is_better=True`` right means "A is better" and
left "B is better", with ``greater_is_better=False`` the other way round.  :class:`Orientation` is the one place that
turns the paper's sides into outcomes; the page, the reports and the plots show the outcomes in the order of
:data:`OUTCOMES`, in the colours of :data:`COLORS`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

__all__ = ["counted", "names_listed", "OUTCOMES", "COLORS", "ARVIZ_STATS", "DECISION_COLORS", "Orientation",
           "outcome_label", "TwoModelResult", "combined_line", "divergent_transitions", "jsonable", "json_safe",
           "json_ready"]


def names_listed(names) -> str:
    """Names side by side as every message lists them: ``a, b, c``; ``a; b`` when a name holds a comma (a search's
    candidate ``C=1, kernel=rbf``), so that no name reads as two."""
    names = [str(n) for n in names]
    return ("; " if any("," in n for n in names) else ", ").join(names)


def counted(n: int, noun: str) -> str:
    """``1 dataset``, ``3 datasets``: a count and its noun, as every message and report writes them."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


#: The outcomes of a comparison, in the one order every table, bar and legend shows them.
OUTCOMES = ("a_better", "rope", "b_better")
#: Their colours everywhere: model A blue, model B orange, practical equivalence grey.
COLORS = {"a_better": "#2b6cb0", "rope": "#7a8794", "b_better": "#d9822b"}
#: Colours of the decisions (``equivalent`` is the rope's; an inconclusive result is amber).
DECISION_COLORS = {"a_better": COLORS["a_better"], "b_better": COLORS["b_better"], "equivalent": COLORS["rope"],
                   "inconclusive": "#b7791f"}


#: Stan's sampler statistics by the names arviz gives them.
ARVIZ_STATS = {"divergent__": "diverging", "treedepth__": "tree_depth", "energy__": "energy",
               "stepsize__": "step_size", "n_leapfrog__": "n_steps", "accept_stat__": "acceptance_rate"}


def outcome_label(outcome: str, model_a: str, model_b: str) -> str:
    """``"rf better"``, ``"practically equivalent"`` or ``"svm better"``."""
    return {"a_better": f"{model_a} better", "rope": "practically equivalent", "b_better": f"{model_b} better"}[outcome]


@dataclass(frozen=True)
class Orientation:
    """The paper's sides of ``x = a - b`` as outcomes: right (x > rope) is A better when greater is better."""

    greater_is_better: bool

    @property
    def sides(self) -> tuple[str, str, str]:
        """The outcomes of the paper's (left, rope, right), e.g. ``("b_better", "rope", "a_better")``."""
        return ("b_better", "rope", "a_better") if self.greater_is_better else ("a_better", "rope", "b_better")

    def orient(self, left, rope, right) -> dict[str, Any]:
        """``{"a_better": .., "rope": .., "b_better": ..}`` from values given in the paper's order."""
        by_side = dict(zip(self.sides, (left, rope, right)))
        return {outcome: by_side[outcome] for outcome in OUTCOMES}


@dataclass
class TwoModelResult:
    """What the result of every two-model test has (:class:`HierarchicalResult`, :class:`.SignedRankResult`,
    :class:`.CorrelatedTTestResult`):
    the paper's P(left), P(rope), P(right) of x = a − b, the sampled points of the probability simplex they come
    from, and the answers built on them, oriented as outcomes.  ``test`` names the test."""

    test: ClassVar[str]

    model_a: str
    model_b: str
    greater_is_better: bool
    rope: float
    p_left: float
    p_rope: float
    p_right: float
    next_probs: np.ndarray = field(repr=False)
    verdict: str
    decision: str
    odds: dict[str, float]
    evidence: dict[str, str]

    @property
    def orientation(self) -> Orientation:
        return Orientation(self.greater_is_better)

    @property
    def probabilities(self) -> dict[str, float]:
        """``{"a_better": .., "rope": .., "b_better": ..}`` on the next dataset."""
        return self.orientation.orient(self.p_left, self.p_rope, self.p_right)

    @property
    def p_a_better(self) -> float:
        return self.probabilities["a_better"]

    @property
    def p_b_better(self) -> float:
        return self.probabilities["b_better"]

    def common_dict(self) -> dict[str, Any]:
        """The keys of ``to_dict`` that every test's result has."""
        return {"test": self.test, "model_a": self.model_a, "model_b": self.model_b,
                "greater_is_better": self.greater_is_better, "rope": self.rope, "p_a_better": self.p_a_better,
                "p_rope": self.p_rope, "p_b_better": self.p_b_better, "p_left": self.p_left, "p_right": self.p_right,
                "verdict": self.verdict, "decision": self.decision, "odds": self.odds, "evidence": self.evidence}


#: What each decision says of model A in the line of a decision on several metrics (:func:`combined_line`); an
#: inconclusive metric is said of the pair
_OF_A = {"a_better": "better", "equivalent": "practically equivalent", "b_better": "worse"}


def combined_line(model_a: str, model_b: str, decisions: dict[str, str]) -> str:
    """One decision on several metrics, from each metric's decision, in the order the metrics were asked:
    ``rf vs svm: rf is practically equivalent on accuracy and roc_auc, and better on fit_time.``; the metrics on
    which the pair is undecided said of the pair: ``rf vs svm: rf is better on fit_time; undecided on accuracy.``"""
    grouped: dict[str, list[str]] = {}
    for metric, decision in decisions.items():
        grouped.setdefault(decision, []).append(metric)
    said = [f"{_OF_A[decision]} on {_and(metrics)}" for decision, metrics in grouped.items() if decision in _OF_A]
    parts = ([f"{model_a} is {_and(said, ', and ')}"] if said else []) + \
        ([f"undecided on {_and(grouped['inconclusive'])}"] if "inconclusive" in grouped else [])
    return f"{model_a} vs {model_b}: {'; '.join(parts)}."


def _and(items: list[str], final: str = " and ") -> str:
    """``a``, ``a and b``, ``a, b and c`` (``final`` before the last)."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + final + items[-1]


def divergent_transitions(count: int) -> str:
    """The count of divergences as warnings, gates and notes word it: ``1 divergent transition``, ``3 divergent
    transitions``."""
    return f"{count} divergent transition{'s' if count != 1 else ''}"


def jsonable(value: Any) -> Any:
    """``json.dumps(default=...)`` for numpy values; anything else becomes its string."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def json_ready(out: dict[str, Any]) -> dict[str, Any]:
    """``out`` as JSON has it: numpy values as Python's, NaN and infinities as None."""
    return json_safe(json.loads(json.dumps(out, default=jsonable)))


def json_safe(value: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by None, recursively; keys become strings."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
