"""The results of comparing evaluation runs: one scorer (:class:`EvalComparisonResult`), several scorers in one
decision (:class:`EvalComparisons`) and k systems (:class:`EvalRanking`).

Orientation.  The family reports the difference **B − A** (the candidate B against the baseline A, in the scorer's
units), while the probabilities keep the package's sides of x = a − b (:class:`.result.Orientation`): the paper's
*left* is B − A > rope, its *right* B − A < −rope, so ``p_a_better``, ``p_b_better``, the odds, the verdict
(:func:`.posterior_summary.verdict`, Benavoli et al. 2017: an outcome is declared when its posterior probability
reaches the threshold) and the claims of :mod:`.claims` read as for every other test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...shared import posterior_summary
from ...vocabulary.outcomes import Orientation, TwoModelResult, combined_line, json_ready

__all__ = ["EvalComparisonResult", "EvalComparisons", "ScorerRanking", "EvalRanking", "three_way", "sides",
           "swapped"]


def sides(difference: np.ndarray, rope: float) -> tuple[float, float, float]:
    """The package's (p_left, p_rope, p_right) of x = a − b from draws of B − A: P(B − A > rope), inside, below."""
    above, below = float(np.mean(difference > rope)), float(np.mean(difference < -rope))
    return above, 1.0 - above - below, below


def three_way(difference: np.ndarray, rope: float, greater_is_better: bool, system_a: str, system_b: str,
              threshold: float) -> dict[str, Any]:
    """From draws of B − A: the sides, the oriented probabilities, odds, evidence, decision and verdict (the
    package's one rule, :func:`.posterior_summary.verdict`)."""
    p_left, p_rope, p_right = sides(difference, rope)
    probs = Orientation(greater_is_better).orient(p_left, p_rope, p_right)
    odds = posterior_summary.posterior_odds(probs, len(difference))
    decision, sentence = posterior_summary.verdict(probs, odds, system_a, system_b, threshold)
    return {"p_left": p_left, "p_rope": p_rope, "p_right": p_right, "probs": probs, "odds": odds,
            "evidence": posterior_summary.evidence(odds), "decision": decision, "verdict": sentence}


#: a decision about A read as one about B
_SWAP = {"a_better": "b_better", "b_better": "a_better", "equivalent": "equivalent", "inconclusive": "inconclusive"}


def swapped(decision: str) -> str:
    """The same decision with A and B exchanged."""
    return _SWAP[decision]


@dataclass
class EvalComparisonResult(TwoModelResult):
    """One scorer's paired comparison of system A (``model_a``) with system B (``model_b``) on the same items.

    Attributes (beyond :class:`.result.TwoModelResult`'s probabilities, odds, verdict and decision):
        scorer: the scorer's name; kind: its kind, direction, levels, units and how they were chosen.
        difference: B − A in the scorer's units (a log kind: log units, with ``ratio_*`` = B/A of the geometric
            means and ``percent_*``): mean, sd, median, hdi_low, hdi_high (95% HDI).
        means: per system its mean score (pass rate; geometric mean for a log kind): mean, sd, hdi_low, hdi_high.
        superiority: P(B better on an item) + ½ P(tie), its posterior summary.
        counts: items (paired for this scorer), clusters (the atoms of the Dirichlet; None without clusters),
            missing (per system, the paired items with no value), unpaired (per system, the items it lacks),
            outcomes (items on which B is better, A is better, tied) and, for pass/fail without repeats, the 2×2
            table n11, n10, n01, n00 (A's result first).
        repeats: per system the repeats averaged per item (min, mean, max) and ``noise_share``, the share of the
            per-item differences' variance the repeats' own noise carries (None without repeats).
        baseline: a frequentist paired test on the same items, ignoring clusters: McNemar's exact test, Wilcoxon's
            signed-rank test or the paired t-test, its two-sided p-value.
        more_items: when inconclusive, about how many more items (clusters) would decide it (:mod:`.planning`).
        draws: the posterior draws of B − A (the joint claims of :mod:`.gates` read them).
    """

    test: ClassVar[str] = "paired-evals"

    scorer: str
    kind: dict[str, Any]
    difference: dict[str, float]
    means: dict[str, dict[str, float]]
    superiority: dict[str, float]
    counts: dict[str, Any]
    repeats: dict[str, Any]
    baseline: dict[str, Any]
    more_items: dict[str, Any] | None
    warnings: list[str]
    settings: dict[str, Any]
    draws: np.ndarray = field(repr=False)

    @property
    def system_a(self) -> str:
        return self.model_a

    @property
    def system_b(self) -> str:
        return self.model_b

    def line(self) -> str:
        """``correctness: B − A = +0.06 (pass rate), 95% HDI [+0.01, +0.11]; B is practically better (...)``."""
        d = self.difference
        return (f"{self.scorer}: {self.model_b} − {self.model_a} = {d['mean']:+.3g} ({self.kind['units']}), 95% HDI "
                f"[{d['hdi_low']:+.3g}, {d['hdi_high']:+.3g}]; {self.verdict}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the keys every two-model result has, and this family's (the draws left out)."""
        return json_ready({**self.common_dict(), "scorer": self.scorer, "kind": self.kind,
                           "difference": self.difference, "means": self.means, "superiority": self.superiority,
                           "counts": self.counts, "repeats": self.repeats, "baseline": self.baseline,
                           "more_items": self.more_items, "warnings": self.warnings, "settings": self.settings})


@dataclass
class EvalComparisons:
    """Several scorers' comparisons of A with B in one decision, their draws sharing the items' (clusters')
    Dirichlet weights, so a statement about several scorers is one posterior probability (:mod:`.gates`).

    Attributes:
        system_a, system_b: the systems; by_scorer: each scorer's :class:`EvalComparisonResult`, in the order
        asked; counts: the items and clusters paired, and per system the items it lacks; warnings; settings.
    """

    system_a: str
    system_b: str
    by_scorer: dict[str, EvalComparisonResult]
    counts: dict[str, Any]
    warnings: list[str]
    settings: dict[str, Any]

    @property
    def by_metric(self) -> dict[str, EvalComparisonResult]:
        """:attr:`by_scorer` under the name :func:`.claims.reports` reads (a claim per scorer)."""
        return self.by_scorer

    @property
    def decisions(self) -> dict[str, str]:
        return {scorer: r.decision for scorer, r in self.by_scorer.items()}

    def line(self) -> str:
        """``B vs A: B is better on correctness, and practically equivalent on latency.`` (B, the candidate, first)."""
        return combined_line(self.system_b, self.system_a, {s: swapped(d) for s, d in self.decisions.items()})

    def to_dict(self) -> dict[str, Any]:
        return json_ready({"test": EvalComparisonResult.test, "system_a": self.system_a, "system_b": self.system_b,
                           "line": self.line(), "decisions": self.decisions, "counts": self.counts,
                           "warnings": self.warnings, "settings": self.settings,
                           "scorers": {s: r.to_dict() for s, r in self.by_scorer.items()}})


@dataclass
class ScorerRanking:
    """k systems on one scorer.

    Attributes:
        ranking: one row per system, best first: system, p_best (P(its mean is the best)), mean, hdi_low, hdi_high
            (its mean score, a log kind's geometric mean, 95% HDI), mean_rank (1 = best).
        versus: one row per other system against ``reference``: system, reference, difference (system −
            reference, the scorer's units, log units for a log kind), hdi_low, hdi_high, p_better, p_rope,
            p_worse (of the system), decision (better, worse, equivalent, inconclusive) and the verdict sentence.
        statement: the versus table in one plain sentence, saying so when no system is decided.
        draws: (draws, k) the systems' mean scores, in the order of ``systems``.
    """

    scorer: str
    kind: dict[str, Any]
    rope: float
    reference: str
    ranking: pd.DataFrame
    versus: pd.DataFrame
    statement: str
    draws: np.ndarray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"scorer": self.scorer, "kind": self.kind, "rope": self.rope, "reference": self.reference,
                "ranking": self.ranking.to_dict(orient="records"), "versus": self.versus.to_dict(orient="records"),
                "statement": self.statement}


@dataclass
class EvalRanking:
    """k systems on the same items: per scorer a :class:`ScorerRanking`, the Dirichlet weights shared by every
    system and scorer in a draw.  ``counts``, ``warnings`` and ``settings`` as for :class:`EvalComparisons`."""

    systems: list[str]
    by_scorer: dict[str, ScorerRanking]
    counts: dict[str, Any]
    warnings: list[str]
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return json_ready({"test": EvalComparisonResult.test, "systems": self.systems, "counts": self.counts,
                           "warnings": self.warnings, "settings": self.settings,
                           "scorers": {s: r.to_dict() for s, r in self.by_scorer.items()}})
