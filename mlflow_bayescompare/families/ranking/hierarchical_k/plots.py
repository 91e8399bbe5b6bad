"""The figures of the hierarchical ranking of k models (:class:`~.result.HierarchicalRankingResult`): the
critical-difference diagram, the matrix of P(better by more than the rope) with P(rope), P(best) and each model's
difference to the leader (:mod:`..plots`: what every ranking's figures share)."""

from __future__ import annotations

from matplotlib.figure import Figure

from ..plots import better_matrix, critical_difference, leader_gaps, p_best
from .result import HierarchicalRankingResult

__all__ = ["all_figures"]


def all_figures(res: HierarchicalRankingResult) -> dict[str, Figure]:
    """The figures by name: ``critical_difference``, ``better_matrix``, ``p_best`` and ``leader_gaps``."""
    gaps = "δ(model) − δ({leader}) across datasets, metric units: posterior mean and {hdi_prob:.0%} HDI"
    return {"critical_difference": critical_difference(res), "better_matrix": better_matrix(res),
            "p_best": p_best(res, "mean effect δ across datasets"), "leader_gaps": leader_gaps(res, gaps)}
