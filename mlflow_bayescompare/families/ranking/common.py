"""What every ranking model shares (:mod:`.bbt`, :mod:`.joint`, :mod:`.hierarchical_k`): the answers every result
reads from its ranking table (:class:`RankedModels`), the rank table of draws, the matrix of a pairs table, how
problems name many datasets, and the one credible rule (:func:`credible`).

**The credible rule** (issue 38).  Every ranking reports its pairs once, the better model first, and calls a pair's
difference *credible* when the probability that its better model is better reaches a level set by the threshold t.
The pair's order is read off the data: either model could have come first, so with equal models a claim at t is on
offer on both sides of every pair and comes true up to twice as often as 1 − t (issue 27's program called 10% of
equal pairs credible at t = 0.95, ``benchmarks/bench_pairs.py``).  Every ranking model therefore calls a pair credible
when its probability reaches :func:`level`, 1 − (1 − t)/2 (0.975 at 0.95): the claim ``a-better`` of ``compare
--require`` at t, had its side been named before the data.  Each model feeds the rule its own probability
(:class:`CredibleRule`: the pairs table's column); the pairs table's ``credible`` column, the critical-difference
diagram's bars (:meth:`RankedModels.credible_pairs`) and every screen's words (:func:`rule_words`) read it.

* BBT (Wainer 2023, Sec. 7.1): P(P(better beats worse) > 0.5) (``p_above_half``);
* the hierarchical model of k models: P(better by more than the rope), the two-model test's statistic
  (``p_better``);
* the joint model of one dataset: P(better by more than the rope) (``p_better``); its posterior is a symmetric
  Student-t, so the rule is Kruschke's: the t HDI of the difference lies beyond the rope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...shared import posterior_summary
from ...vocabulary.outcomes import ARVIZ_STATS, names_listed

__all__ = ["CredibleRule", "credible", "level", "rule_words", "RankedModels", "rank_table", "ranks", "better_matrix",
           "listed", "lacking_lines", "HEADER", "MAX_LISTED", "SAMPLE_STATS", "VERDICTS", "verdict"]

#: the header of a problem with the models ranked (the score reader's and the router's)
HEADER = "cannot rank the models:"
#: datasets named in one problem before "and N more"
MAX_LISTED = 12
#: Stan's sampler columns under ArviZ's names, the log density among them
SAMPLE_STATS = {"lp__": "lp", **ARVIZ_STATS}
#: the verdicts of the ``--vs`` table, by the claim that reached the threshold (:mod:`...vocabulary.claims`' words):
#: the hierarchical model's on the next dataset, the joint model's on its one dataset
VERDICTS = {"better": "better", "equivalent": "practically equivalent", "worse": "worse",
            "not-worse": "not worse (better or equivalent)", "not-better": "not better (worse or equivalent)",
            "undecided": "undecided"}


def level(threshold: float) -> float:
    """1 − (1 − threshold)/2: the level a pair's probability must reach, its order having been read off the data."""
    return 1 - (1 - threshold) / 2


def rule_words(threshold: float, probability: str = "P(better)") -> str:
    """The rule in words, for the screens: ``P(better) ≥ 0.975 (two-sided at 0.95: the order was read off the
    data)``."""
    return f"{probability} ≥ {level(threshold):g} (two-sided at {threshold:g}: the order was read off the data)"


@dataclass(frozen=True)
class CredibleRule:
    """A ranking model's credible rule (see the module's docstring): ``column``, the pairs table's probability that
    the better model is better; ``words``, the rule's negation, the diagram's bars, formatted with ``threshold``,
    ``level`` (:func:`level`) and ``rope`` (the rope in metric units)."""

    column: str
    words: str

    def level(self, threshold: float) -> float:
        """The probability :attr:`column` must reach at ``threshold`` (:func:`level`)."""
        return level(threshold)


def credible(pairs: pd.DataFrame, rule: CredibleRule, threshold: float) -> pd.Series:
    """The one credible rule of every ranking: per row of ``pairs``, whether its ``rule.column`` reaches
    :func:`level` of ``threshold``."""
    return pairs[rule.column] >= rule.level(threshold)


class RankedModels:
    """What every ranking's result answers from its ``ranking`` table (one row per model, best first) and its
    ``pairs`` table (one row per pair, better first), by its model's :attr:`rule`."""

    rule: ClassVar[CredibleRule]
    ranking: pd.DataFrame
    pairs: pd.DataFrame
    settings: dict[str, Any]

    @property
    def order(self) -> list[str]:
        """The models, best first."""
        return list(self.ranking["model"])

    @property
    def best(self) -> str:
        """The model most probably best (the first of :attr:`order`)."""
        return str(self.order[0])

    def credible_pairs(self, threshold: float | None = None) -> set[frozenset]:
        """The pairs that differ credibly by :func:`credible` at ``threshold`` (default: the result's)."""
        threshold = self.settings["threshold"] if threshold is None else threshold
        held = credible(self.pairs, self.rule, threshold)
        return {frozenset((better, worse)) for better, worse in self.pairs.loc[held, ["better", "worse"]].to_numpy()}

    def not_credible_rule(self, threshold: float) -> str:
        """The rule of the critical-difference diagram's bars, in words."""
        return self.rule.words.format(threshold=threshold, level=level(threshold),
                                      rope=self.settings.get("metric_rope"))


def verdict(p_better: float, p_rope: float, p_worse: float, threshold: float) -> str:
    """The strongest claim that reaches its level: better or worse (either could be claimed, so at :func:`level`),
    equivalent, then not-worse, not-better (at ``threshold``)."""
    oriented = level(threshold)
    for name, probability, needed in (("better", p_better, oriented), ("equivalent", p_rope, threshold),
                                      ("worse", p_worse, oriented), ("not-worse", p_better + p_rope, threshold),
                                      ("not-better", p_worse + p_rope, threshold)):
        if probability >= needed:
            return name
    return "undecided"


def listed(items) -> str:
    """The first :data:`MAX_LISTED` items (:func:`~...vocabulary.outcomes.names_listed`), then how many more."""
    items = list(items)
    more = f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else ""
    return names_listed(items[:MAX_LISTED]) + more


def lacking_lines(lacking: dict) -> list[str]:
    """What each model lacks (``{model: datasets}``), a line per model: ``'j48' lacks uci20, uci21``."""
    return [f"'{model}' lacks {listed(datasets)}" for model, datasets in lacking.items()]


def ranks(draws: np.ndarray) -> np.ndarray:
    """Rank of each model per draw (along the last axis), 1 = the largest value."""
    k = draws.shape[-1]
    return k - np.argsort(np.argsort(draws, axis=-1), axis=-1)


def rank_table(beta: np.ndarray, models: list[str], hdi_prob: float) -> pd.DataFrame:
    """One row per model, best first: p_best, mean_rank, its HDI, and the strength's posterior mean and sd.  Best
    first is by P(best), then mean rank, then strength: the order the headline's "most probably best" reads, with
    P(best) never rising down the table (a model with a higher mean but a narrower posterior can be the best less
    often; the joint model of a search's candidates showed it)."""
    flat = beta.reshape(-1, beta.shape[-1])
    drawn = ranks(flat)
    low, high = posterior_summary.hdi(drawn, hdi_prob)
    table = pd.DataFrame({"model": models, "p_best": (drawn == 1).mean(axis=0), "mean_rank": drawn.mean(axis=0),
                          "rank_low": low, "rank_high": high, "strength": flat.mean(axis=0),
                          "strength_sd": flat.std(axis=0)})
    return table.sort_values(["p_best", "mean_rank", "strength"], ascending=[False, True, False],
                             kind="stable").reset_index(drop=True)


def better_matrix(order: list[str], pairs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """P(row better than column by more than the rope) and P(rope), k × k in ``order``, from a pairs table whose rows
    hold ``better``, ``worse``, ``p_better``, ``p_rope`` and ``p_worse`` (the joint and the hierarchical models')."""
    better = pd.DataFrame(np.nan, index=order, columns=order)
    rope = better.copy()
    for r in pairs.itertuples(index=False):
        better.loc[r.better, r.worse], better.loc[r.worse, r.better] = r.p_better, r.p_worse
        rope.loc[r.better, r.worse] = rope.loc[r.worse, r.better] = r.p_rope
    return better, rope
