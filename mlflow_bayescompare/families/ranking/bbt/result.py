"""The result of a ranking of several models by the Bayesian Bradley-Terry model (Wainer 2023), and the summaries
of its posterior that make it.

Orientation.  The strengths ``beta`` are greater for better models whatever the metric's direction (scores of a
lower-is-better metric are negated first), and P(i beats j) = inv_logit(beta_i - beta_j) (Sec. 4: logit(i > j) =
beta_i - beta_j).  Each pair is reported once, oriented so that ``better`` has posterior mean P(win) >= 0.5.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.special import expit

from ....sampling import sampler
from ....shared import posterior_summary
from ....vocabulary.console import log
from ....vocabulary.options import RankOptions
from ....vocabulary.outcomes import json_safe, jsonable
from ....vocabulary.versions import versions
from ..common import SAMPLE_STATS, CredibleRule, RankedModels, credible, rank_table, ranks

__all__ = ["RankingResult", "summarise", "pair_table", "ppc_table", "replicate_wins", "PPC_LEVELS"]

#: the HDI levels of the posterior predictive check (bbtcomp's ``table_ppc``; 1 is the range of the replicates)
PPC_LEVELS = (0.5, 0.9, 0.95, 1.0)


@dataclass
class RankingResult(RankedModels):
    """A ranking of K models on their wins across datasets.

    Attributes:
        models: the models, in the order given.
        pairs: one row per pair, ``better`` first (posterior mean P(win) >= 0.5), rows in the order of the ranking:
            better, worse, p_win (posterior mean of P(better beats worse) on a new dataset, the paper's *strong*
            interpretation, Sec. 5.5.1), p_win_low, p_win_high (its HDI), p_above_half (P(p_win > 0.5), the *weak*
            interpretation), p_in_rope (P(p_win in the rope), Sec. 5.5), credible (p_above_half
            >= 1 − (1 − threshold)/2: :attr:`rule`, :func:`..common.credible`);
            with Davidson's model also p_tie (posterior mean P(tie)), p_win then being P(win | no tie).
        ranking: one row per model, best first (by posterior mean strength, as bbtcomp orders its tables): model,
            p_best (posterior probability of the largest strength), mean_rank, rank_low, rank_high (HDI of the
            rank, 1 = best), strength, strength_sd (posterior mean and sd of beta; the strengths sum to zero).
        wins: per pair (model order): model_a, model_b, wins_a, wins_b, ties counted over the datasets, and
            wins_a_post, wins_b_post, ties_post, the counts the model sees once the ties are handled.
        ppc: posterior predictive check of the wins (bbtcomp's ``table_ppc``, Sec. 5.4): hdi, proportion (of the
            pairs whose observed wins_a_post lie in that HDI of their replicates), and ties under Davidson's model.
        diagnostics: rhat_max, ess_bulk_min, ess_tail_min, divergences, treedepth_hits, leapfrog_per_draw,
            sampling_seconds, compile_seconds, backend, parameterisation, warnings.
        settings: the options, the datasets, the seed, the backend and the package versions.
        draws: beta (chains, draws, K), sigma (chains, draws), nu (Davidson's model only), wins_rep (chains, draws,
            pairs): replicated wins_a_post.
        sampler: Stan's sampler columns, (chains, draws) each.
        stan_data: the data block given to ``stan/bbt.stan``.
    """

    model: ClassVar[str] = "bbt"
    #: credible: P(P(win) > 0.5) reaches the threshold (Sec. 7.1, *above.50*)
    rule: ClassVar[CredibleRule] = CredibleRule("p_above_half", "P(P(win) > 0.5) < {level:g}")

    models: list[str]
    pairs: pd.DataFrame
    ranking: pd.DataFrame
    wins: pd.DataFrame
    ppc: pd.DataFrame
    diagnostics: dict[str, Any]
    settings: dict[str, Any]
    draws: dict[str, np.ndarray] = field(repr=False)
    sampler: dict[str, np.ndarray] = field(repr=False)
    stan_data: dict[str, Any] = field(repr=False)

    @property
    def seed(self) -> int:
        return self.settings["seed"]

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run's CSV tables by name."""
        return {"ranking": self.ranking, "pairs": self.pairs, "wins": self.wins, "ppc": self.ppc}

    def p_win_matrix(self) -> pd.DataFrame:
        """Posterior mean P(row beats column), K x K in the ranking's order (NaN on the diagonal)."""
        return _square(self, "p_win", lambda p: 1 - p)

    def p_in_rope_matrix(self) -> pd.DataFrame:
        """P(P(win) in the rope), K x K in the ranking's order (NaN on the diagonal)."""
        return _square(self, "p_in_rope", lambda p: p)

    def to_inference_data(self):
        """The posterior (beta, sigma, nu, p_win and rank per draw), Stan's sampler statistics, and the replicated
        and observed wins, as an :class:`arviz.InferenceData`."""
        az = posterior_summary.arviz()
        beta = self.draws["beta"]
        i, j = np.triu_indices(len(self.models), 1)
        posterior = {"beta": beta, "sigma": self.draws["sigma"], "p_win": expit(beta[..., i] - beta[..., j]),
                     "rank": ranks(beta)}
        if "nu" in self.draws:
            posterior["nu"] = self.draws["nu"]
        stats = {SAMPLE_STATS[k]: v for k, v in self.sampler.items() if k in SAMPLE_STATS}
        stats["diverging"] = stats["diverging"].astype(bool)
        pairs = [f"{a} vs {b}" for a, b in zip(self.wins["model_a"], self.wins["model_b"])]
        return az.from_dict(
            posterior=posterior, sample_stats=stats, posterior_predictive={"wins_a": self.draws["wins_rep"]},
            observed_data={"wins_a": self.wins["wins_a_post"].to_numpy()},
            coords={"model": list(self.models), "pair": pairs},
            dims={"beta": ["model"], "rank": ["model"], "p_win": ["pair"], "wins_a": ["pair"]},
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (no draws)."""
        out = {"models": self.models, "best": self.best, "ranking": self.ranking.to_dict(orient="records"),
               "pairs": self.pairs.to_dict(orient="records"), "wins": self.wins.to_dict(orient="records"),
               "ppc": self.ppc.to_dict(orient="records"), "diagnostics": self.diagnostics,
               "settings": self.settings}
        return json_safe(json.loads(json.dumps(out, default=jsonable)))


def _square(res: RankingResult, column: str, mirrored) -> pd.DataFrame:
    order = res.order
    out = pd.DataFrame(np.nan, index=order, columns=order)
    for row in res.pairs.itertuples(index=False):
        value = getattr(row, column)
        out.loc[row.better, row.worse], out.loc[row.worse, row.better] = value, mirrored(value)
    return out


# ------------------------------------------------------------------------------------------------ summaries


def summarise(models: list[str], table: pd.DataFrame, run: sampler.Run, opts: RankOptions, *, form: str,
              extra: dict, stan_data: dict) -> RankingResult:
    """The :class:`RankingResult` of a fit of ``stan/bbt.stan`` to ``table`` (see :func:`.engine.win_table`)."""
    draws = {"beta": run.draws["beta"], "sigma": run.draws["sigma"]}
    if "nu" in run.draws:
        draws["nu"] = run.draws["nu"][..., 0]
    ranking = rank_table(draws["beta"], models, opts.hdi_prob)
    pairs = pair_table(draws, models, list(ranking["model"]), opts.rope, opts.hdi_prob, opts.threshold)
    rng = np.random.default_rng(opts.seed)
    draws["wins_rep"], ties_rep = replicate_wins(draws, models, table, rng)
    ppc = ppc_table(draws["wins_rep"], table["wins_a_post"].to_numpy(), ties_rep, table["ties_post"].to_numpy())
    posterior = sampler.Fit({k: draws[k] for k in ("beta", "sigma", "nu") if k in draws}, run.sampler, run.backend,
                        run.seconds, compile_seconds=run.compile_seconds)
    diagnostics = {**posterior_summary.diagnostics(posterior), "parameterisation": form}
    for warning in diagnostics["warnings"]:
        log.warning(warning)
    settings = {**opts.to_dict(), **extra, "models": list(models), "backend": run.backend, "versions": versions()}
    return RankingResult(list(models), pairs, ranking, table, ppc, diagnostics, settings, draws, run.sampler,
                         stan_data)


def pair_table(draws: dict[str, np.ndarray], models: list[str], order: list[str], rope: tuple[float, float],
               hdi_prob: float, threshold: float) -> pd.DataFrame:
    """One row per pair, better first, in the ranking's order (Sec. 5.5; bbtcomp's ``table_pwin``)."""
    position = {m: k for k, m in enumerate(order)}
    index = np.array([models.index(m) for m in order])
    beta = draws["beta"].reshape(-1, len(models))[:, index]
    i, j = np.triu_indices(len(models), 1)
    diff = beta[:, i] - beta[:, j]
    flip = expit(diff).mean(axis=0) < 0.5
    diff[:, flip] *= -1
    better = np.where(flip, j, i)
    p = expit(diff)
    low, high = posterior_summary.hdi(p, hdi_prob)
    table = pd.DataFrame({"better": [order[k] for k in better], "worse": [order[k] for k in np.where(flip, i, j)],
                          "p_win": p.mean(axis=0), "p_win_low": low, "p_win_high": high,
                          "p_above_half": (p > 0.5).mean(axis=0),
                          "p_in_rope": ((p >= rope[0]) & (p <= rope[1])).mean(axis=0)})
    table["credible"] = credible(table, RankingResult.rule, threshold)
    if "nu" in draws:
        nu = draws["nu"].reshape(-1, 1)
        table["p_tie"] = (np.exp(nu) / (2 * np.cosh(diff / 2) + np.exp(nu))).mean(axis=0)
    keys = [(position[b], position[w]) for b, w in zip(table["better"], table["worse"])]
    return table.iloc[sorted(range(len(keys)), key=keys.__getitem__)].reset_index(drop=True)


def replicate_wins(draws: dict[str, np.ndarray], models: list[str], table: pd.DataFrame,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """Replicated wins_a_post (chains, draws, pairs) per posterior draw, and the replicated ties under Davidson's
    model (else None): binomial on the pair's decisive games, or multinomial win / loss / tie."""
    index = {m: k for k, m in enumerate(models)}
    a, b = table["model_a"].map(index).to_numpy(), table["model_b"].map(index).to_numpy()
    diff = draws["beta"][..., a] - draws["beta"][..., b]
    decisive = (table["wins_a_post"] + table["wins_b_post"]).to_numpy()
    if "nu" not in draws:
        return rng.binomial(decisive, expit(diff)), None
    weights = np.stack([np.exp(diff / 2), np.exp(-diff / 2), np.broadcast_to(np.exp(draws["nu"])[..., None],
                                                                             diff.shape)], axis=-1)
    counts = rng.multinomial(decisive + table["ties_post"].to_numpy(), weights / weights.sum(-1, keepdims=True))
    return counts[..., 0], counts[..., 2]


def ppc_table(wins_rep: np.ndarray, wins: np.ndarray, ties_rep: np.ndarray | None, ties: np.ndarray) -> pd.DataFrame:
    """Per HDI level, the proportion of pairs whose observed count lies in that HDI of its replicates (Sec. 5.4)."""
    def covered(rep, observed):
        flat = rep.reshape(-1, rep.shape[-1])
        return [float(np.mean((observed >= low) & (observed <= high)))
                for low, high in (posterior_summary.hdi(flat, level) for level in PPC_LEVELS)]

    out = pd.DataFrame({"hdi": PPC_LEVELS, "proportion": covered(wins_rep, wins)})
    if ties_rep is not None:
        out["ties"] = covered(ties_rep, ties)
    return out
