"""The result of the joint correlated-t ranking of k models on the folds of one dataset (:mod:`.engine`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ....shared import posterior_summary
from ....vocabulary.outcomes import json_ready
from ..common import CredibleRule, RankedModels, better_matrix, ranks

__all__ = ["JointRankingResult"]


@dataclass
class JointRankingResult(RankedModels):
    """The joint correlated-t ranking of k models on the folds of one dataset.

    Attributes:
        models: the models, in the order given.
        ranking: one row per model, best first: model, p_best (posterior probability of the best mean), mean_rank,
            rank_low, rank_high (HDI of the rank at ``hdi_prob``, 1 = best), mean (posterior mean of the model's
            score: its fold mean), diff_to_leader, diff_low, diff_high (posterior mean of μ_model − μ_leader in
            metric units and its 95% interval; 0 for the leader).
        pairs: one row per pair in the ranking's order, ``better`` (the larger posterior mean, by the direction)
            first: better, worse, difference (μ_better − μ_worse in metric units), hdi_low, hdi_high (95%), scale
            (of its Student-t posterior), p_better, p_rope, p_worse (beyond the rope, inside it, the other side),
            p_above (P(better really is better), no rope), credible (:attr:`rule`).
        scores: the fold scores, one row per fold (repeat · folds + fold), one column per model.
        draws: μ (chains, draws, k) in metric units.
        diagnostics: warnings, mc_se_max (Monte-Carlo standard error of P(best)), sampling_seconds.
        settings: the options, rho and its reason, folds, n, the seed, the dataset, the versions; with ``vs``, the
            reference (``vs_reference``).
        versus: with ``vs``, one row per model but the reference (the leader, or the model ``vs`` names), in the
            ranking's order: model, reference, p_better, p_rope, p_worse (on this dataset), difference, hdi_low,
            hdi_high (95%), verdict (:data:`..common.VERDICTS`); else None.
    """

    model: ClassVar[str] = "joint-t"
    #: credible: P(better by more than the rope) ≥ 1 − (1 − threshold)/2 (:func:`..common.level`); the posterior is a
    #: symmetric Student-t, so the ``threshold`` HDI of the difference lies beyond the rope (Kruschke's HDI+ROPE rule)
    rule: ClassVar[CredibleRule] = CredibleRule(
        "p_better", "the {threshold:.0%} HDI of their difference reaches into the rope ±{rope:g}")

    models: list[str]
    ranking: pd.DataFrame
    pairs: pd.DataFrame
    scores: pd.DataFrame
    diagnostics: dict[str, Any]
    settings: dict[str, Any]
    draws: np.ndarray = field(repr=False)
    versus: pd.DataFrame | None = None

    def better_matrix(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """P(row better than column by more than the rope) and P(rope), k × k in the ranking's order."""
        return better_matrix(self.order, self.pairs)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run's CSV tables by name."""
        return {"ranking": self.ranking, "pairs": self.pairs, "cv_scores": self.scores,
                **({"versus": self.versus} if self.versus is not None else {})}

    def to_inference_data(self):
        """The draws of μ and of the ranks, as an :class:`arviz.InferenceData`."""
        az = posterior_summary.arviz()
        sign = 1.0 if self.settings["greater_is_better"] else -1.0
        return az.from_dict(posterior={"mu": self.draws, "rank": ranks(sign * self.draws)},
                            coords={"model": list(self.models)}, dims={"mu": ["model"], "rank": ["model"]})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (no draws)."""
        return json_ready({"model": self.model, "models": self.models, "best": self.best,
                           "ranking": self.ranking.to_dict(orient="records"),
                           "pairs": self.pairs.to_dict(orient="records"), "diagnostics": self.diagnostics,
                           "settings": self.settings,
                           **({"versus": self.versus.to_dict(orient="records")} if self.versus is not None else {})})
