"""The result of a Bayesian correlated t-test (:func:`.correlated_t.engine.correlated_t_test`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd
from scipy import stats

from ...vocabulary.outcomes import TwoModelResult, json_ready

__all__ = ["CorrelatedTTestResult"]


@dataclass
class CorrelatedTTestResult(TwoModelResult):
    """Summary of one Bayesian correlated t-test of model A against model B on the per-fold scores of one dataset.

    Attributes (the same as :class:`.HierarchicalResult`'s where they apply):
        p_left, p_rope, p_right: the posterior masses of μ < −rope, |μ| ≤ rope and μ > rope; they sum to 1.
        p_a_better, p_b_better, probabilities: the same, oriented by ``greater_is_better``.
        next_probs: (1, 3) array, the one point (p_left, p_rope, p_right) of the probability simplex: the masses are
            exact, not sampled.
        verdict, decision, odds, evidence: as for the hierarchical test (odds read the masses as counts out of
            :data:`.engine.ODDS_DRAWS`).
        dataset, n, folds: the dataset's name, the number of differences and the folds (None for hold-out splits).
        df, loc, scale: the Student-t posterior of μ (n − 1, x̄ and √((1/n + ρ/(1 − ρ)) s²); scale 0 for constant
            differences).
        rho, rho_reason: the correlation between the differences and where it comes from ("1/folds with
            folds=10", "given", "n_test/(n_train+n_test) = ...").
        sd: the sample standard deviation s of the differences.
        mean_difference: mean, hdi_low, hdi_high: x̄ and the 95% highest-density (here: central) interval of μ.
        nadeau_bengio_p: two-sided p-value of the Nadeau-Bengio corrected t-test on the same differences.
        scores: one row per fold (dataset, repeat, fold, score_a, score_b, diff, run_id_a, run_id_b).
        diagnostics: warnings (list of str) and the seconds taken.
        settings: everything needed to reproduce the result (test, rope, threshold, rho, folds, versions, ...).
    """

    test: ClassVar[str] = "correlated-t"

    dataset: str
    n: int
    folds: int | None
    df: int
    loc: float
    scale: float
    rho: float
    rho_reason: str
    sd: float
    mean_difference: dict[str, float]
    nadeau_bengio_p: float
    scores: pd.DataFrame
    diagnostics: dict[str, Any]
    settings: dict[str, Any]

    @property
    def n_datasets(self) -> int:
        """The datasets compared: one."""
        return 1

    def cdf(self, value: float) -> float:
        """P(μ ≤ value) under the posterior (a step at x̄ for constant differences)."""
        if self.scale == 0:
            return float(value >= self.loc)
        return float(stats.t.cdf(value, self.df, loc=self.loc, scale=self.scale))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary: :meth:`.HierarchicalResult.to_dict`'s keys that apply, the posterior's
        parameters, ρ and its reason, and the per-fold scores."""
        return json_ready({
            **self.common_dict(),
            "dataset": self.dataset, "n": self.n, "folds": self.folds, "df": self.df, "loc": self.loc,
            "scale": self.scale, "rho": self.rho, "rho_reason": self.rho_reason, "sd": self.sd,
            "mean_difference": self.mean_difference, "nadeau_bengio_p": self.nadeau_bengio_p,
            "diagnostics": self.diagnostics, "settings": self.settings,
            "scores": self.scores.to_dict(orient="records"),
        })
