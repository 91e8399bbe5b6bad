"""The result of the hierarchical ranking of k models (``stan/hierarchical_k.stan``) and the summaries of its
posterior, in metric units.

Every pair is the two-model hierarchical test's question asked of the joint posterior.  Per posterior draw of
(δ, Ω, ν), the next dataset's contrast θ_j − θ_l is t_ν(δ_j − δ_l, s_jl) with s_jl² = C_jj + C_ll − 2 C_jl, C = H Ω H'
the covariance of the models' effects (the program's header: each pair its own spread), and that Student-t's masses
above, inside and below the rope (± the metric rope) are the three outcomes' probabilities.  A pair's P(better /
rope / worse) is, as the paper's test (Sec. "The inference of the test", steps 2-3) and this package's ``compare``
take it, the fraction of draws in which each mass is the largest; the masses averaged over the draws are the
probabilities of each outcome on the next dataset (``next_better`` ..., in the tables only).  The population's
answers (P(best), ranks, the expected difference and its HDI) read δ itself.  P(best) on the next dataset, and the
joint claim "no model is better than <control>", read simulated next datasets: θ = δ + √λ F u per draw, F F' = C.

A pair is *credible* by the rankings' one rule (:func:`..common.credible`): its order was read off the posterior, so its
P(better) must reach 1 − (1 − threshold)/2.  It is compare's question answered by one model of every model, not
compare's fit of the pair alone: :data:`.report.DIFFERS` says how far apart the two were measured.
Orientation: the better model (the larger posterior mean δ, whatever the metric's direction) first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import special

from ....sampling import sampler
from ....shared import posterior_summary
from ....vocabulary.console import log
from ....vocabulary.options import RankOptions
from ....vocabulary.outcomes import json_ready
from ....vocabulary.versions import versions
from ..common import SAMPLE_STATS, VERDICTS, CredibleRule, RankedModels, better_matrix, credible, rank_table, verdict

__all__ = ["HierarchicalRankingResult", "summarise", "three_way", "versus_table", "NEXT_PER_DRAW"]

#: simulated next datasets per posterior draw (P(best) on the next dataset, the joint claim)
NEXT_PER_DRAW = 8


@dataclass
class HierarchicalRankingResult(RankedModels):
    """The hierarchical ranking of k models across datasets.

    Attributes:
        models: the models, in the order given.
        ranking: one row per model, best first (posterior mean δ): model, p_best (P(largest δ): the population),
            p_best_next (P(best score on the next dataset)), mean_rank, rank_low, rank_high (of δ, HDI at
            ``hdi_prob``), effect (posterior mean δ in metric units, relative to the models' average),
            diff_to_leader, diff_low, diff_high (δ_model − δ_leader, metric units, its HDI), p_none_better (P(no
            other model better by more than the rope on the next dataset), from simulated next datasets: the claim
            ``none-better=<model>``), p_not_worse_than_leader (p_better + p_rope of the model against the leader,
            the claim ``not-worse`` of ``compare``: the claim ``not-worse-than-best=<model>``; 1 for the leader).
        pairs: one row per pair in the ranking's order, better first: better, worse, difference (δ_better −
            δ_worse, metric units), hdi_low, hdi_high, p_better, p_rope, p_worse (the two-model test's statistic),
            next_better, next_rope, next_worse (the outcomes' probabilities on the next dataset), p_above
            (P(δ_better > δ_worse)), credible (:attr:`rule`, :func:`..common.credible`).
        versus: one row per model but the reference (``settings['vs_reference']``, the leader unless ``vs`` names
            one): model, reference, p_better, p_rope, p_worse, next_better, next_rope, next_worse (the model
            against the reference), difference, hdi_low, hdi_high, verdict (:data:`..common.VERDICTS`).
        diagnostics: R-hat, ESS, divergences, ..., parameterisation, warnings.
        settings: the options, the datasets fitted, on a ragged grid the datasets each model lacks among them
            (``lacking``) and those left out for holding fewer than two models (``datasets_left_out``), rho,
            scale, the seed, the backend, the versions.
        draws: delta (chains, draws, k) in oriented metric units (greater is better), sigma0 (metric units), nu,
            covariance (chains, draws, k, k): C = H Ω H', the covariance of the models' effects (metric units²).
    """

    model: ClassVar[str] = "hierarchical"
    #: credible: P(better by more than the rope) reaches 1 − (1 − threshold)/2 (the claim ``a-better`` of ``compare``
    #: at the threshold, its side read off the data: :func:`..common.level`)
    rule: ClassVar[CredibleRule] = CredibleRule("p_better", "P(better by more than ±{rope:g}) < {level:g}")

    models: list[str]
    ranking: pd.DataFrame
    pairs: pd.DataFrame
    versus: pd.DataFrame
    diagnostics: dict[str, Any]
    settings: dict[str, Any]
    draws: dict[str, np.ndarray] = field(repr=False)
    sampler: dict[str, np.ndarray] = field(repr=False)
    stan_data: dict[str, Any] = field(repr=False)

    @property
    def seed(self) -> int:
        return self.settings["seed"]

    def better_matrix(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """P(row better than column by more than the rope) and P(rope), in the ranking's order."""
        return better_matrix(self.order, self.pairs)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run's CSV tables by name."""
        return {"ranking": self.ranking, "pairs": self.pairs, "versus": self.versus}

    def to_inference_data(self):
        """The posterior (δ, σ0, ν, the effects' covariance C and the ranks of δ) and Stan's sampler statistics, as
        an InferenceData."""
        import arviz as az

        delta = self.draws["delta"]
        ranks = delta.shape[-1] - np.argsort(np.argsort(delta, axis=-1), axis=-1)
        stats = {SAMPLE_STATS[k]: v for k, v in self.sampler.items() if k in SAMPLE_STATS}
        stats["diverging"] = stats["diverging"].astype(bool)
        return az.from_dict(posterior={"delta": delta, "sigma0": self.draws["sigma0"], "nu": self.draws["nu"],
                                       "covariance": self.draws["covariance"], "rank": ranks}, sample_stats=stats,
                            coords={"model": list(self.models), "other": list(self.models)},
                            dims={"delta": ["model"], "rank": ["model"], "covariance": ["model", "other"]})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (no draws)."""
        return json_ready({"model": self.model, "models": self.models, "best": self.best,
                           "ranking": self.ranking.to_dict(orient="records"),
                           "pairs": self.pairs.to_dict(orient="records"),
                           "versus": self.versus.to_dict(orient="records"), "diagnostics": self.diagnostics,
                           "settings": self.settings})


# ------------------------------------------------------------------------------------------------ summaries


def summarise(scores, inputs, run: sampler.Run, opts: RankOptions, *, form: str) -> HierarchicalRankingResult:
    """The result of a fit of ``stan/hierarchical_k.stan`` (:mod:`.hierarchical_k`), in metric units."""
    models = list(scores.models)
    basis = inputs.basis
    delta = inputs.scale * run.draws["d"] @ basis.T
    omega = run.draws["Omega"].reshape(*delta.shape[:2], len(basis) - 1, len(basis) - 1)
    draws = {"delta": delta, "sigma0": inputs.scale * run.draws["sigma0"].reshape(delta.shape[:2]),
             "nu": run.draws["nu"], "covariance": inputs.scale**2 * basis @ omega @ basis.T}
    rng = np.random.default_rng(opts.seed)
    nexts = next_datasets(draws, rng)
    ranking = _ranking(draws, nexts, models, opts)
    pairs = _pairs(draws, models, list(ranking["model"]), opts)
    order = list(ranking["model"])
    to_leader = versus_table(draws, models, order, order[0], opts)
    not_worse = dict(zip(to_leader["model"], to_leader["p_better"] + to_leader["p_rope"]))
    ranking["p_not_worse_than_leader"] = [not_worse.get(m, 1.0) for m in order]
    reference = order[0] if opts.vs in (None, "best") else opts.vs
    versus = to_leader if reference == order[0] else versus_table(draws, models, order, reference, opts)
    fit = sampler.Fit({k: run.draws[k] for k in ("d", "sigma0", "nu", "Omega")}, run.sampler, run.backend, run.seconds,
                      compile_seconds=run.compile_seconds)
    diagnostics = {**posterior_summary.diagnostics(fit), "parameterisation": form}
    for warning in diagnostics["warnings"]:
        log.warning(warning)
    if inputs.patched:
        diagnostics["warnings"].append(f"no residual variation across folds on {', '.join(inputs.patched[:12])}: "
                                       "their noise was taken as U(±rope)")
    if inputs.ragged_note():
        diagnostics["warnings"].append(inputs.ragged_note())
    fitted = inputs.scores
    settings = {**opts.to_dict(), "model": HierarchicalRankingResult.model, "vs_reference": reference,
                "datasets": list(fitted.datasets), "models": models, "folds": list(fitted.fold_counts),
                **({"lacking": fitted.lacking()} if fitted.lacking() else {}),
                **({"datasets_left_out": dict.fromkeys(inputs.left_out, "fewer than two models")}
                   if inputs.left_out else {}),
                "rho": sorted(set(np.round(inputs.rho, 6).tolist())), "scale": inputs.scale,
                "backend": run.backend, "versions": versions()}
    return HierarchicalRankingResult(models, ranking, pairs, versus, diagnostics, settings, draws, run.sampler,
                                     inputs.stan_data)


def next_datasets(draws: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """(draws · NEXT_PER_DRAW, k): the models' θ on simulated next datasets, NEXT_PER_DRAW per posterior draw:
    θ = δ + √λ F u, F F' the effects' covariance C (a factor from its eigen-decomposition), u ~ N(0, I)."""
    k = draws["delta"].shape[-1]
    values, vectors = np.linalg.eigh(draws["covariance"].reshape(-1, k, k))
    factor = np.repeat(vectors * np.sqrt(np.clip(values, 0, None))[:, None, :], NEXT_PER_DRAW, axis=0)
    delta = np.repeat(draws["delta"].reshape(-1, k), NEXT_PER_DRAW, axis=0)
    nu = np.repeat(draws["nu"].ravel(), NEXT_PER_DRAW)
    lam = 1 / rng.gamma(nu / 2, 2 / nu)
    return delta + np.sqrt(lam)[:, None] * np.einsum("dkj,dj->dk", factor, rng.standard_normal((len(nu), k)))


def _ranking(draws, nexts: np.ndarray, models: list[str], opts: RankOptions) -> pd.DataFrame:
    """The ranking table (see :class:`HierarchicalRankingResult`)."""
    sign = 1.0 if opts.greater_is_better else -1.0
    table = rank_table(draws["delta"], models, opts.hdi_prob)
    index = [models.index(m) for m in table["model"]]
    delta = draws["delta"].reshape(-1, len(models))[:, index]
    best_next = np.bincount(nexts.argmax(axis=1), minlength=len(models)) / len(nexts)
    gaps = sign * (delta - delta[:, :1])
    low, high = posterior_summary.hdi(gaps, opts.hdi_prob)
    others = nexts[:, index]
    rivals = np.stack([np.delete(others, j, axis=1).max(axis=1) for j in range(len(models))], axis=1)
    return pd.DataFrame({
        "model": table["model"], "p_best": table["p_best"], "p_best_next": best_next[index],
        "mean_rank": table["mean_rank"], "rank_low": table["rank_low"], "rank_high": table["rank_high"],
        "effect": sign * table["strength"], "diff_to_leader": gaps.mean(axis=0), "diff_low": low, "diff_high": high,
        "p_none_better": (rivals - others <= opts.metric_rope).mean(axis=0),
    })


def three_way(loc: np.ndarray, spread: np.ndarray, nu: np.ndarray, rope: float) -> dict[str, np.ndarray]:
    """Per column of ``loc`` (draws, pairs): ``p_better``, ``p_rope``, ``p_worse``, the fraction of draws in which
    t_ν(loc, spread)'s mass above the rope, inside it or below it is the largest (the two-model test's statistic,
    :func:`...shared.posterior_summary.winner_fractions`), and ``next_better``, ``next_rope``, ``next_worse``, those
    masses averaged over the draws (the probabilities of each outcome on the next dataset)."""
    above = special.stdtr(nu, (loc - rope) / spread)
    below = special.stdtr(nu, (-rope - loc) / spread)
    inside = 1 - above - below
    winners = [posterior_summary.winner_fractions(np.column_stack(areas))
               for areas in zip(below.T, inside.T, above.T)]
    worse, rope_wins, better = np.array(winners).T if winners else np.empty((3, 0))
    return {"p_better": better, "p_rope": rope_wins, "p_worse": worse, "next_better": above.mean(axis=0),
            "next_rope": inside.mean(axis=0), "next_worse": below.mean(axis=0)}


def _contrasts(draws, models: list[str], first: list[str], second: list[str]) -> tuple[np.ndarray, ...]:
    """δ_first − δ_second per draw (draws, pairs), the next dataset's spread √(C_aa + C_bb − 2 C_ab) of each pair
    (draws, pairs) and ν (draws, 1)."""
    k = len(models)
    delta, cov = draws["delta"].reshape(-1, k), draws["covariance"].reshape(-1, k, k)
    a, b = [models.index(m) for m in first], [models.index(m) for m in second]
    spread = np.sqrt(np.clip(cov[:, a, a] + cov[:, b, b] - 2 * cov[:, a, b], 0, None))
    return delta[:, a] - delta[:, b], spread, draws["nu"].reshape(-1, 1)


def _pairs(draws, models: list[str], order: list[str], opts: RankOptions) -> pd.DataFrame:
    """One row per pair, better first, in the ranking's order."""
    better = [order[i] for i in range(len(order)) for _ in order[i + 1:]]
    worse = [w for i in range(len(order)) for w in order[i + 1:]]
    loc, spread, nu = _contrasts(draws, models, better, worse)
    p = three_way(loc, spread, nu, opts.metric_rope)
    sign = 1.0 if opts.greater_is_better else -1.0
    low, high = posterior_summary.hdi(sign * loc, opts.hdi_prob)
    return pd.DataFrame({"better": better, "worse": worse, "difference": sign * loc.mean(axis=0), "hdi_low": low,
                         "hdi_high": high, **p, "p_above": (loc > 0).mean(axis=0),
                         "credible": credible(p, HierarchicalRankingResult.rule, opts.threshold)})


def versus_table(draws, models: list[str], order: list[str], reference: str, opts: RankOptions) -> pd.DataFrame:
    """Every model but ``reference`` (in the ranking's order) against it on the next dataset, with a verdict."""
    others = [m for m in order if m != reference]
    loc, spread, nu = _contrasts(draws, models, others, [reference] * len(others))
    p = three_way(loc, spread, nu, opts.metric_rope)
    sign = 1.0 if opts.greater_is_better else -1.0
    low, high = posterior_summary.hdi(sign * loc, opts.hdi_prob)
    verdicts = [VERDICTS[verdict(b, r, w, opts.threshold)] for b, r, w in zip(p["p_better"], p["p_rope"],
                                                                              p["p_worse"])]
    return pd.DataFrame({"model": others, "reference": reference, **p, "difference": sign * loc.mean(axis=0),
                         "hdi_low": low, "hdi_high": high, "verdict": verdicts})
