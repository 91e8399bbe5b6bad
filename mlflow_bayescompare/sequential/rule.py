"""The stopping rule, written once for a look and for the simulation: a look decides the side whose posterior
probability reaches the threshold, and the answer is the first look that decides (the design then stops), else
``continue`` before the budget and ``inconclusive`` at it.  Sides are coded in the paper's orientation of
δ = a − b (left: δ < −rope, rope, right: δ > rope); :func:`answer_word` orients them.
"""

from __future__ import annotations

import numpy as np

from ..vocabulary.outcomes import Orientation

__all__ = ["NONE", "LEFT", "ROPE", "RIGHT", "ANSWERS", "decide", "gated", "first_decision", "answer_word"]

NONE, LEFT, ROPE, RIGHT = 0, 1, 2, 3
#: The answers of a look, in the product's decision words (:data:`.result.DECISION_COLORS`) and ``continue``.
ANSWERS = ("continue", "a_better", "b_better", "equivalent", "inconclusive")


def decide(p_left, p_rope, p_right, threshold: float) -> np.ndarray:
    """The side whose probability reaches ``threshold`` (> 0.5, so at most one does), else :data:`NONE`; arrays
    broadcast.  The rule of :func:`.posterior_summary.verdict` (a probability ≥ the threshold decides)."""
    return np.select([np.asarray(p_right) >= threshold, np.asarray(p_left) >= threshold,
                      np.asarray(p_rope) >= threshold], [RIGHT, LEFT, ROPE], NONE)


def gated(bayes: np.ndarray, cs: np.ndarray | None, gate: str) -> np.ndarray:
    """The decision a design takes: the posterior's, or (gate ``both``) the posterior's where the confidence
    sequence decides the same side."""
    return bayes if gate == "bayes" else np.where(bayes == cs, bayes, NONE)


def first_decision(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(look index, side) of the first look that decides, along the last axis; the last look and :data:`NONE`
    where none does."""
    decided = codes != NONE
    index = np.where(decided.any(axis=-1), decided.argmax(axis=-1), codes.shape[-1] - 1)
    return index, np.take_along_axis(codes, index[..., None], axis=-1)[..., 0]


def answer_word(side: int, greater_is_better: bool, at_budget: bool) -> str:
    """A decided side as an answer (``a_better``, ``b_better``, ``equivalent``), or ``inconclusive`` at the budget
    and ``continue`` before it."""
    if side == NONE:
        return "inconclusive" if at_budget else "continue"
    outcome = Orientation(greater_is_better).sides[side - 1]
    return "equivalent" if outcome == "rope" else outcome
