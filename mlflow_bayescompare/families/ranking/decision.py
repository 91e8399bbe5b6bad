"""The one rule that calls a ranking's pair *credible* (issue 38), whatever the model that ranked.

A ranking orders each pair after seeing the data: the better model (by its posterior) comes first, and the pair is
called credible when P(first better) reaches a threshold.  Either model of a pair could have come first, so under
equal models the claim is available on both sides: read at a threshold t it is a test of size up to 2(1 − t)
(10% at t = 0.95, measured in ``benchmarks/bench_pairs.py``), not 1 − t.  A pair oriented after the fact is
therefore called credible when P(first better) ≥ 1 − (1 − t)/2 (0.975 at t = 0.95): the two-sided threshold, the
claim ``a-better`` of ``compare --require`` at t had its direction been chosen before seeing the data.

Each ranking model feeds it its own P(first better): the hierarchical model of k models the two-model test's
statistic (the share of draws in which the next dataset's mass beyond the rope is the largest), the joint model of
one dataset the correlated t-test's mass beyond the rope (the rule is then Kruschke's: the t HDI of the difference
lies beyond the rope), Bradley-Terry P(P(win) > 1/2).
"""

from __future__ import annotations

__all__ = ["oriented_threshold", "credible", "rule_words"]


def oriented_threshold(threshold: float) -> float:
    """1 − (1 − t)/2: the level a probability of a claim whose direction was read off the data must reach."""
    return 1 - (1 - threshold) / 2


def credible(p_first_better, threshold: float):
    """Whether a pair oriented after seeing the data is credible: P(first better) ≥ :func:`oriented_threshold`
    (a number, or an array of them)."""
    return p_first_better >= oriented_threshold(threshold)


def rule_words(threshold: float) -> str:
    """The rule in words, for the screens: ``P(better) ≥ 0.975 (two-sided at 0.95: the order was read off the
    data)``."""
    return (f"P(better) ≥ {oriented_threshold(threshold):g} (two-sided at {threshold:g}: the order was read off the "
            "data)")
