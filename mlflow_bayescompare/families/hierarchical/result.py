"""The result of the hierarchical test (Corani et al. 2017): :class:`HierarchicalResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...shared.posterior_summary import arviz
from ...vocabulary.outcomes import ARVIZ_STATS, TwoModelResult, json_ready

__all__ = ["HierarchicalResult"]


@dataclass
class HierarchicalResult(TwoModelResult):
    """Summary of one hierarchical test of model A against model B on q datasets.

    Attributes (probabilities refer to the *next* dataset, Sec. "The inference of the test"):
        p_left, p_rope, p_right: the paper's P(left), P(rope), P(right); they sum to 1.
        p_a_better, p_b_better: the same, oriented by ``greater_is_better``.
        next_probs: (draws, 3) array of the per-draw Student-t areas left of / inside / right of the rope,
            the points of the probability simplex.
        delta0_probs: ``{"a_better", "rope", "b_better"}``: the posterior mass of δ0, the mean difference across
            datasets, beyond / inside the rope (the statistic of the authors' simulation studies; also
            ``p_delta0_a_better`` …).
        verdict: one sentence, e.g. "A is practically better (strong evidence)".
        decision: "a_better", "b_better", "equivalent" or "inconclusive" under the threshold rule.
        odds: posterior odds between the outcomes, e.g. ``{"a_better/b_better": 12.0, ...}`` (Sec. "Interpreting
            posterior odds"); ``evidence`` grades each one weak / positive / strong (Table "odds").
        shrinkage: one row per dataset in input order: dataset, n, rho, mle, shrunk, hdi_low, hdi_high,
            p_left, p_rope, p_right, p_a_better, p_b_better, and the per-dataset baselines
            nb_t_p (Nadeau-Bengio corrected t-test p-value), bct_p_left, bct_p_rope, bct_p_right (Bayesian
            correlated t-test).
        delta0, sigma0, nu: posterior summaries (mean, sd, median, hdi_low, hdi_high), in score units.
        signed_rank_p: two-sided Wilcoxon signed-rank p-value on the per-dataset mean differences.
        diagnostics: rhat_max, ess_bulk_min, ess_tail_min, divergences, treedepth_hits, sampling_seconds,
            parameterisation (how δ_i was sampled, and whether the other form was tried), warnings (list of str).
        settings: everything needed to reproduce the run (rope, rho, prior, chains, draws, seed, backend, ...).
        draws: posterior draws in score units, ``name -> array (chains, draws, ...)``: delta0, sigma0, nu
            (absent for the Gaussian prior), delta (chains, draws, q).
        stan_data: the data block passed to ``stan/hierarchical.stan`` (scaled units).
        sensitivity: optional table of the conclusion under other ropes and priors (``None`` if not asked):
            prior, rope, p_a_better, p_rope, p_b_better, decision; ``sensitivity_note`` says in one sentence
            whether the conclusion is stable.
    """

    test: ClassVar[str] = "hierarchical"

    shrinkage: pd.DataFrame
    delta0: dict[str, float]
    sigma0: dict[str, float]
    nu: dict[str, float] | None
    signed_rank_p: float
    diagnostics: dict[str, Any]
    settings: dict[str, Any]
    draws: dict[str, np.ndarray] = field(repr=False)
    stan_data: dict[str, Any] = field(repr=False)
    delta0_probs: dict[str, float] = field(default_factory=dict)
    sample_stats: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    sensitivity: pd.DataFrame | None = None
    sensitivity_note: str | None = None

    @property
    def n_datasets(self) -> int:
        """The datasets compared (one row each in :attr:`shrinkage`)."""
        return len(self.shrinkage)

    @property
    def p_delta0_a_better(self) -> float:
        """Posterior mass of δ0, the mean difference across datasets, on A's side of the rope."""
        return self.delta0_probs["a_better"]

    @property
    def p_delta0_rope(self) -> float:
        """Posterior mass of δ0 inside the rope."""
        return self.delta0_probs["rope"]

    @property
    def p_delta0_b_better(self) -> float:
        """Posterior mass of δ0 on B's side of the rope."""
        return self.delta0_probs["b_better"]

    def to_inference_data(self):
        """The posterior draws as an :class:`arviz.InferenceData` (score units), with the sampler's statistics
        (divergences, tree depth, energy, step size …) as ``sample_stats`` so arviz can re-audit the fit."""
        az = arviz()
        stats = {ARVIZ_STATS[k]: np.asarray(v) for k, v in self.sample_stats.items() if k in ARVIZ_STATS}
        if "diverging" in stats:
            stats["diverging"] = stats["diverging"].astype(bool)
        return az.from_dict(
            posterior=self.draws,
            sample_stats=stats or None,
            coords={"dataset": list(self.shrinkage["dataset"].astype(str))},
            dims={"delta": ["dataset"]},
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (no draws)."""
        return json_ready({
            **self.common_dict(),
            "p_delta0_a_better": self.delta0_probs.get("a_better"),
            "p_delta0_rope": self.delta0_probs.get("rope"),
            "p_delta0_b_better": self.delta0_probs.get("b_better"),
            "delta0": self.delta0,
            "sigma0": self.sigma0,
            "nu": self.nu,
            "signed_rank_p": self.signed_rank_p,
            "diagnostics": self.diagnostics,
            "settings": self.settings,
            "shrinkage": self.shrinkage.to_dict(orient="records"),
            "sensitivity": None if self.sensitivity is None else self.sensitivity.to_dict(orient="records"),
            "sensitivity_note": self.sensitivity_note,
        })
