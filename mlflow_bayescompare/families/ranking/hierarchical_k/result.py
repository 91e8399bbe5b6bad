"""The result of the hierarchical ranking of k models (``stan/hierarchical_k.stan``) and the summaries of its
posterior, in metric units.

The ranking (P(best), ranks, effects, the joint claim) reads the joint fit.  Every pair, and every row against the
reference, is the two-model hierarchical test's question asked of that pair's own fit (:func:`.engine.pair_tests`; the
joint fit itself when there are two models): per posterior draw of (δ, C, ν), the next dataset's contrast θ_j − θ_l
is t_ν(δ_j − δ_l, s_jl) with s_jl² = C_jj + C_ll − 2 C_jl, and that Student-t's masses above, inside and below the rope
(± the metric rope) are the three outcomes' probabilities.  A pair's P(better / rope / worse) is, as the paper's test
(Sec. "The inference of the test", steps 2-3) and ``compare`` take it, the fraction of draws in which each mass is the
largest; the masses averaged over the draws are the probabilities of each outcome on the next dataset
(``next_better`` ..., in the tables only).  P(best) on the next dataset, and the joint claim "no model is better than
<control>", read simulated next datasets of the joint fit: θ = δ + √λ F u per draw, F F' = C.

A pair is *credible* by the rankings' one rule (:func:`..common.credible`): its order was read off the posterior, so its
P(better) must reach 1 − (1 − threshold)/2.  Orientation: the better model of a pair (the larger posterior mean δ of
its fit, whatever the metric's direction) first; the difference to the leader is the leader's pair's.
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

__all__ = ["HierarchicalRankingResult", "summarise", "metric_draws", "ranked_order", "PairFit", "pair_fit",
           "PairSource", "pair_fit_of_test", "three_way", "versus_table", "NEXT_PER_DRAW"]

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
        pairs: one row per pair in the ranking's order, better first, read off the pair's own fit
            (``settings['pairs_from']``): better, worse, difference (δ_better − δ_worse, metric units), hdi_low,
            hdi_high, p_better, p_rope, p_worse (the two-model test's statistic; NaN for a pair not tested),
            next_better, next_rope, next_worse (the outcomes' probabilities on the next dataset), p_above
            (P(δ_better > δ_worse)), credible (:attr:`rule`, :func:`..common.credible`).
        versus: one row per model but the reference (``settings['vs_reference']``, the leader unless ``vs`` names
            one): model, reference, p_better, p_rope, p_worse, next_better, next_rope, next_worse (the model
            against the reference), difference, hdi_low, hdi_high, verdict (:data:`..common.VERDICTS`).
        diagnostics: R-hat, ESS, divergences, ..., parameterisation, warnings (the joint fit's, then each pair's
            fit's, named by its pair); ``pair_tests``: the worst of the pairs' own fits.
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


def summarise(scores, inputs, run: sampler.Run, opts: RankOptions, *, form: str,
              pair_fits: dict[frozenset[str], PairFit | None] | None = None) -> HierarchicalRankingResult:
    """The result of a fit of ``stan/hierarchical_k.stan`` (:mod:`.hierarchical_k`), in metric units: the ranking
    from the joint fit, the pairs and the rows against the reference from each pair's own fit (``pair_fits``,
    :func:`.engine.pair_tests`), or from the joint fit when it has two models (it is then the pair's fit)."""
    models = list(scores.models)
    draws = metric_draws(inputs, run)
    rng = np.random.default_rng(opts.seed)
    nexts = next_datasets(draws, rng)
    ranking = _ranking(draws, nexts, models, opts)
    order = list(ranking["model"])
    source = PairSource(draws, models, pair_fits)
    pairs = _pairs(source, order, opts)
    to_leader = versus_table(source, order, order[0], opts)
    gaps = to_leader.set_index("model")
    ranking["diff_to_leader"] = [gaps["difference"].get(m, 0.0) for m in order]
    ranking["diff_low"] = [gaps["hdi_low"].get(m, 0.0) for m in order]
    ranking["diff_high"] = [gaps["hdi_high"].get(m, 0.0) for m in order]
    not_worse = dict(zip(to_leader["model"], to_leader["p_better"] + to_leader["p_rope"]))
    ranking["p_not_worse_than_leader"] = [not_worse.get(m, 1.0) for m in order]
    reference = order[0] if opts.vs in (None, "best") else opts.vs
    versus = to_leader if reference == order[0] else versus_table(source, order, reference, opts)
    fit = sampler.Fit({k: run.draws[k] for k in ("d", "sigma0", "nu", "Omega")}, run.sampler, run.backend, run.seconds,
                      compile_seconds=run.compile_seconds)
    diagnostics = {**posterior_summary.diagnostics(fit), "parameterisation": form}
    if pair_fits:
        diagnostics["pair_tests"] = source.diagnostics()
        diagnostics["warnings"] += diagnostics["pair_tests"].pop("warnings")
    for warning in diagnostics["warnings"]:
        log.warning(warning)
    if inputs.patched:
        diagnostics["warnings"].append(f"no residual variation across folds on {', '.join(inputs.patched[:12])}: "
                                       "their noise was taken as U(±rope)")
    if inputs.ragged_note():
        diagnostics["warnings"].append(inputs.ragged_note())
    fitted = inputs.scores
    settings = {**opts.to_dict(), "model": HierarchicalRankingResult.model, "vs_reference": reference,
                "pairs_from": "each pair's own fit" if pair_fits else "the joint fit",
                "datasets": list(fitted.datasets), "models": models, "folds": list(fitted.fold_counts),
                **({"lacking": fitted.lacking()} if fitted.lacking() else {}),
                **({"datasets_left_out": dict.fromkeys(inputs.left_out, "fewer than two models")}
                   if inputs.left_out else {}),
                "rho": sorted(set(np.round(inputs.rho, 6).tolist())), "scale": inputs.scale,
                "backend": run.backend, "versions": versions()}
    return HierarchicalRankingResult(models, ranking, pairs, versus, diagnostics, settings, draws, run.sampler,
                                     inputs.stan_data)


def metric_draws(inputs, run: sampler.Run) -> dict[str, np.ndarray]:
    """A fit's draws in oriented metric units: delta (chains, draws, k), sigma0, nu and the covariance of the models'
    effects C = H Ω H' (chains, draws, k, k)."""
    basis = inputs.basis
    delta = inputs.scale * run.draws["d"] @ basis.T
    omega = run.draws["Omega"].reshape(*delta.shape[:2], len(basis) - 1, len(basis) - 1)
    return {"delta": delta, "sigma0": inputs.scale * run.draws["sigma0"].reshape(delta.shape[:2]),
            "nu": run.draws["nu"], "covariance": inputs.scale**2 * basis @ omega @ basis.T}


def ranked_order(scores, inputs, run: sampler.Run, opts: RankOptions) -> list[str]:
    """The models in the ranking's order (:func:`..common.rank_table`) of the joint fit ``run``."""
    return list(rank_table(metric_draws(inputs, run)["delta"], list(scores.models), opts.hdi_prob)["model"])


@dataclass
class PairFit:
    """A pair's own fit (:func:`.engine.pair_tests`): its two models, its draws in metric units (:func:`metric_draws`)
    and its diagnostics."""

    models: list[str]
    draws: dict[str, np.ndarray]
    diagnostics: dict[str, Any]


def pair_fit_of_test(test, greater_is_better: bool) -> PairFit:
    """The :class:`PairFit` of the two-model hierarchical test's result ``test`` (a matrix's pair, compare's fit of
    the same model): per draw the next dataset's difference is t_ν(δ0, σ0) (Sec. "The inference of the test"), so
    δ = ±δ0/2 and C = diag(σ0²/2, σ0²/2) give the pair its δ0 and its spread σ0, oriented so that greater is
    better (the test's draws are a − b in metric units); a Gaussian population (no ν drawn) is ν = ∞."""
    sign = 1.0 if greater_is_better else -1.0
    half = sign * np.asarray(test.draws["delta0"]) / 2
    variance = np.asarray(test.draws["sigma0"]) ** 2 / 2
    zero = np.zeros_like(variance)
    return PairFit([test.model_a, test.model_b], {
        "delta": np.stack([half, -half], axis=-1),
        "covariance": np.stack([np.stack([variance, zero], -1), np.stack([zero, variance], -1)], -2),
        "nu": np.asarray(test.draws["nu"]) if "nu" in test.draws else np.full_like(variance, np.inf)},
        {**test.diagnostics, "warnings": list(test.diagnostics.get("warnings") or [])})


def pair_fit(scores, inputs, run: sampler.Run, form: str) -> PairFit:
    """The :class:`PairFit` of a fit of the program to a pair's scores."""
    fit = sampler.Fit({k: run.draws[k] for k in ("d", "sigma0", "nu", "Omega")}, run.sampler, run.backend, run.seconds)
    return PairFit(list(scores.models), metric_draws(inputs, run),
                   {**posterior_summary.diagnostics(fit), "parameterisation": form,
                    "datasets": len(inputs.scores.datasets)})


@dataclass
class PairSource:
    """Where a ranking reads its pairs: the joint fit's draws, or each pair's own fit (``fits``, when given)."""

    draws: dict[str, np.ndarray]
    models: list[str]
    fits: dict[frozenset[str], PairFit | None] | None = None

    def contrasts(self, first: list[str], second: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """δ_first − δ_second per draw (draws, pairs), the next dataset's spread of each pair (draws, pairs) and ν
        (draws, 1 or pairs); NaN for a pair its own fit could not test."""
        if not self.fits:
            return _contrasts(self.draws, self.models, first, second)
        columns = []
        size = self.draws["delta"].shape[0] * self.draws["delta"].shape[1]
        for a, b in zip(first, second):
            fit = self.fits[frozenset((a, b))]
            columns.append(_contrasts(fit.draws, fit.models, [a], [b]) if fit else (np.full((size, 1), np.nan),) * 3)
        if not columns:
            return (np.empty((size, 0)),) * 3
        return tuple(np.concatenate(parts, axis=1) for parts in zip(*columns))

    def diagnostics(self) -> dict[str, Any]:
        """The pair fits' worst diagnostics, and a warning per pair whose fit has one (named by its pair)."""
        fitted = {pair: fit for pair, fit in self.fits.items() if fit}
        values = [fit.diagnostics for fit in fitted.values()]
        warnings = [f"the pair {' vs '.join(sorted(pair))}: {w}" for pair, fit in fitted.items()
                    for w in fit.diagnostics["warnings"]]
        untested = [" vs ".join(sorted(pair)) for pair, fit in self.fits.items() if not fit]
        if untested:
            warnings.append(f"not tested, sharing fewer than two datasets: {', '.join(untested)}")
        return {"fits": len(values), "rhat_max": max((v["rhat_max"] for v in values), default=float("nan")),
                "ess_bulk_min": min((v["ess_bulk_min"] for v in values), default=float("nan")),
                "divergences": sum(v["divergences"] for v in values),
                "sampling_seconds": sum(v["sampling_seconds"] for v in values), "warnings": warnings}


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
    """The ranking table (see :class:`HierarchicalRankingResult`) but the columns read from the pairs: the difference
    to the leader and whether a model is not worse than it (:func:`summarise`)."""
    sign = 1.0 if opts.greater_is_better else -1.0
    table = rank_table(draws["delta"], models, opts.hdi_prob)
    index = [models.index(m) for m in table["model"]]
    best_next = np.bincount(nexts.argmax(axis=1), minlength=len(models)) / len(nexts)
    others = nexts[:, index]
    rivals = np.stack([np.delete(others, j, axis=1).max(axis=1) for j in range(len(models))], axis=1)
    return pd.DataFrame({
        "model": table["model"], "p_best": table["p_best"], "p_best_next": best_next[index],
        "mean_rank": table["mean_rank"], "rank_low": table["rank_low"], "rank_high": table["rank_high"],
        "effect": sign * table["strength"], "diff_to_leader": 0.0, "diff_low": 0.0, "diff_high": 0.0,
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
    untested = np.isnan(loc).all(axis=0)  # a pair its own fit could not test: no probabilities
    better, rope_wins, worse = (np.where(untested, np.nan, x) for x in (better, rope_wins, worse))
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


def _pairs(source: PairSource, order: list[str], opts: RankOptions) -> pd.DataFrame:
    """One row per pair in the ranking's order, the better model (the larger mean δ of the pair's fit) first."""
    first = [order[i] for i in range(len(order)) for _ in order[i + 1:]]
    second = [w for i in range(len(order)) for w in order[i + 1:]]
    loc, _, _ = source.contrasts(first, second)
    flip = np.nanmean(loc, axis=0) < 0 if loc.size else np.zeros(0, bool)
    better = [b if f else a for a, b, f in zip(first, second, flip)]
    worse = [a if f else b for a, b, f in zip(first, second, flip)]
    loc, spread, nu = source.contrasts(better, worse)
    p = three_way(loc, spread, nu, opts.metric_rope)
    sign = 1.0 if opts.greater_is_better else -1.0
    low, high = posterior_summary.hdi(sign * loc, opts.hdi_prob)
    return pd.DataFrame({"better": better, "worse": worse, "difference": sign * loc.mean(axis=0), "hdi_low": low,
                         "hdi_high": high, **p, "p_above": (loc > 0).mean(axis=0),
                         "credible": credible(p, HierarchicalRankingResult.rule, opts.threshold)})


def versus_table(source: PairSource, order: list[str], reference: str, opts: RankOptions) -> pd.DataFrame:
    """Every model but ``reference`` (in the ranking's order) against it on the next dataset, with a verdict."""
    others = [m for m in order if m != reference]
    loc, spread, nu = source.contrasts(others, [reference] * len(others))
    p = three_way(loc, spread, nu, opts.metric_rope)
    sign = 1.0 if opts.greater_is_better else -1.0
    low, high = posterior_summary.hdi(sign * loc, opts.hdi_prob)
    verdicts = [VERDICTS[verdict(b, r, w, opts.threshold)] for b, r, w in zip(p["p_better"], p["p_rope"],
                                                                              p["p_worse"])]
    return pd.DataFrame({"model": others, "reference": reference, **p, "difference": sign * loc.mean(axis=0),
                         "hdi_low": low, "hdi_high": high, "verdict": verdicts})
