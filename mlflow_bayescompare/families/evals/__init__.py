"""Comparing evaluation runs (issue 39): is system B really better than system A on the same evaluation items, and
which of k systems is best; paired per item, exact for small samples, no MCMC.

Modules: :mod:`.pairing` (the input table and the paired arrays), :mod:`.kinds` (pass/fail, ordinal, continuous,
log; detected from the values), :mod:`.weights` (Dirichlet weights over items or clusters: the Bayesian bootstrap,
Rubin 1981), :mod:`.models` (the model of each kind), :mod:`.engine` (:func:`compare_evaluations`,
:func:`rank_evaluations`), :mod:`.result`, :mod:`.gates` (joint claims across scorers), :mod:`.planning` (the items
that would decide an inconclusive answer), :mod:`.suites` (the hierarchical model across suites), :mod:`.details`.
"""

from .engine import compare_evaluations, rank_evaluations
from .gates import check, joint_probability, require, require_better
from .result import EvalComparisonResult, EvalComparisons, EvalRanking, ScorerRanking
from .suites import suite_inputs

__all__ = ["compare_evaluations", "rank_evaluations", "EvalComparisonResult", "EvalComparisons", "EvalRanking",
           "ScorerRanking", "joint_probability", "check", "require", "require_better", "suite_inputs"]
