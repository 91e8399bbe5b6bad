"""The figure of a :class:`~.engine.SignedRankResult`: its Dirichlet draws on the probability simplex
(:func:`...shared.figures.plot_simplex`, which the hierarchical test's report shows too)."""

from __future__ import annotations

from matplotlib.figure import Figure

from ...shared.figures import plot_simplex
from .engine import SignedRankResult

__all__ = ["all_figures"]


def all_figures(res: SignedRankResult) -> dict[str, Figure]:
    """The report's one figure, keyed ``simplex``."""
    return {"simplex": plot_simplex(res)}
