"""The figures of a BBT ranking (:class:`~.result.RankingResult`): the critical-difference diagram, the matrix of
P(win) with the rope's probability, and P(best) (:mod:`..plots`: what every ranking's figures share)."""

from __future__ import annotations

from matplotlib.figure import Figure

from ..plots import annotated_matrix, critical_difference, p_best
from .result import RankingResult

__all__ = ["all_figures", "pwin_matrix"]


def all_figures(res: RankingResult) -> dict[str, Figure]:
    """The figures by name: ``critical_difference``, ``pwin_matrix`` and ``p_best``."""
    return {"critical_difference": critical_difference(res), "pwin_matrix": pwin_matrix(res),
            "p_best": p_best(res, "strength")}


def pwin_matrix(res: RankingResult) -> Figure:
    """Posterior mean P(row beats column) on a new dataset, each cell with P(P(win) in the rope) below it."""
    low, high = res.settings["rope"]
    return annotated_matrix(res.order, res.p_win_matrix(), res.p_in_rope_matrix(), "RdBu", "P(win)",
                            f"P(row beats column) on a new dataset; in brackets P(in rope [{low:g}, {high:g}])")
