"""From posterior draws to a two-model test's answer, shared by every test: which outcome is most probable, the
posterior odds and their evidence grade, the verdict, HDIs and one-number summaries, and the MCMC diagnostics."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from ..sampling import convergence
from ..sampling.sampler import Fit
from ..vocabulary.outcomes import divergent_transitions

HDI_PROB = 0.95
RHAT_LIMIT = 1.01
#: The notice arviz (0.22 and later) gives once a day as it is imported, a FutureWarning of five lines about its own
#: coming refactor: nothing the user can act on, and nothing about this package's use of it.
ARVIZ_NOTICE = r"\s*ArviZ is undergoing a major refactor"


def arviz():
    """The ``arviz`` module, for every use of it in the package: imported here, without its daily notice
    (:data:`ARVIZ_NOTICE`), which would otherwise reach the terminal or the server's log on a day's first comparison.
    Only that warning is filtered; arviz's other warnings still show."""
    if "arviz" not in sys.modules:
        warnings.filterwarnings("ignore", message=ARVIZ_NOTICE, category=FutureWarning, module="arviz")
    import arviz as az

    return az


def winner_fractions(areas: np.ndarray) -> tuple[float, float, float]:
    """P(left), P(rope), P(right): the fraction of draws in which each area is the largest (steps 2-3).

    Ties follow the authors' R driver: rope wins only if strictly largest, then left if strictly largest, and
    every remaining case (a tie) counts as right.  Ties have probability zero except under numerical saturation.
    """
    left, rope, right = areas.T
    rope_wins = (rope > left) & (rope > right)
    left_wins = ~rope_wins & (left > rope) & (left > right)
    right_wins = ~rope_wins & ~left_wins
    n = len(areas)
    return float(left_wins.sum() / n), float(rope_wins.sum() / n), float(right_wins.sum() / n)


def grade(odds: float) -> str:
    """Evidence grade of posterior odds ≥ 1 (Table "odds", after Raftery 1995)."""
    return "strong" if odds > 20 else "positive" if odds > 3 else "weak"


def posterior_odds(probs: dict[str, float], draws: int) -> dict[str, float]:
    """Odds between the three outcomes.  A half-draw correction keeps them finite when an outcome never occurs."""
    count = {k: v * draws + 0.5 for k, v in probs.items()}
    return {
        "a_better/b_better": count["a_better"] / count["b_better"],
        "a_better/rope": count["a_better"] / count["rope"],
        "rope/b_better": count["rope"] / count["b_better"],
    }


def evidence(odds: dict[str, float]) -> dict[str, str]:
    """``"strong for a_better"`` etc. for each pair of :func:`posterior_odds`."""
    out = {}
    for key, value in odds.items():
        first, second = key.split("/")
        favoured, ratio = (first, value) if value >= 1 else (second, 1 / value)
        out[key] = f"{grade(ratio)} for {favoured}"
    return out


def decide(probs: dict[str, float], threshold: float) -> str:
    """The decision rule of step 4: the most probable outcome (``a_better``, ``equivalent`` or ``b_better``) when
    its probability reaches ``threshold``, else ``inconclusive``."""
    best = max(probs, key=probs.get)
    if probs[best] < threshold:
        return "inconclusive"
    return "equivalent" if best == "rope" else best


def verdict_opening(probs: dict[str, float], model_a: str, model_b: str, threshold: float) -> str:
    """The words of :func:`verdict`'s sentence that the probabilities decide, before the evidence grade (which the
    number of draws decides too)."""
    best = max(probs, key=probs.get)
    if probs[best] >= threshold:
        return {"a_better": f"{model_a} is practically better", "b_better": f"{model_b} is practically better",
                "rope": f"{model_a} and {model_b} are practically equivalent"}[best] + " ("
    return (f"inconclusive: {_outcome(best, model_a, model_b)} is the most probable outcome "
            f"(P = {probs[best]:.2f} < {threshold:g}), ")


def _outcome(outcome: str, model_a: str, model_b: str) -> str:
    return {"a_better": f"{model_a} better", "b_better": f"{model_b} better", "rope": "practical equivalence"}[outcome]


def verdict(probs: dict[str, float], odds: dict[str, float], model_a: str, model_b: str, threshold: float):
    """(decision, sentence).  The decision rule of step 4 (:func:`decide`): an outcome is declared when its
    probability exceeds ``threshold``; otherwise the result is inconclusive and the odds say which way it leans."""
    ranked = sorted(probs, key=probs.get, reverse=True)
    best, runner_up = ranked[0], ranked[1]
    ratio = {**odds, **{f"{b}/{a}": 1 / v for k, v in odds.items() for a, b in [k.split("/")]}}[f"{best}/{runner_up}"]
    opening, decision = verdict_opening(probs, model_a, model_b, threshold), decide(probs, threshold)
    if decision != "inconclusive":
        return decision, f"{opening}{grade(ratio)} evidence)"
    return decision, f"{opening}{grade(ratio)} evidence over {_outcome(runner_up, model_a, model_b)} (odds {ratio:.1f})"


def hdi(samples: np.ndarray, prob: float) -> np.ndarray:
    """(2, ...): the narrowest interval holding floor(prob n) + 1 of the n draws along axis 0, for every column at
    once (the rule of R's HDInterval, which bbtcomp uses, and of ArviZ's ``hdi``, which takes one column at a
    time); prob = 1 gives the range."""
    ordered = np.sort(samples, axis=0)
    n = len(ordered)
    width = min(int(np.floor(prob * n)), n - 1)
    best = np.argmin(ordered[width:] - ordered[: n - width], axis=0)[None]
    return np.concatenate([np.take_along_axis(ordered, best, 0), np.take_along_axis(ordered, best + width, 0)])


def describe(values: np.ndarray) -> dict[str, float]:
    """mean, sd, median and 95% HDI of draws."""
    flat = values.ravel()
    low, high = hdi(flat, HDI_PROB)
    return {
        "mean": float(flat.mean()),
        "sd": float(flat.std()),
        "median": float(np.median(flat)),
        "hdi_low": float(low),
        "hdi_high": float(high),
    }


def rhat_max(fit: Fit) -> float:
    """The largest rank-normalised R-hat over all parameters (Vehtari et al. 2021)."""
    return _largest_rhat(convergence.stacked(fit.draws))


def diagnostics(fit: Fit, rhat: float | None = None) -> dict:
    """R-hat (rank-normalised; ``rhat``, when :func:`rhat_max` was already computed), bulk and tail ESS over all
    parameters, divergences and tree-depth saturation."""
    draws = convergence.stacked(fit.draws)
    rhat = _largest_rhat(draws) if rhat is None else rhat
    ess_bulk = _over_judged(convergence.ess_bulk(draws), np.min)
    ess_tail = _over_judged(convergence.ess_tail(draws), np.min)
    divergences = int(fit.sampler["divergent__"].sum())
    saturated = int((fit.sampler["treedepth__"] >= fit.max_treedepth).sum())
    warnings = []
    if not rhat <= RHAT_LIMIT:
        warnings.append(f"R-hat {rhat:.3f} > {RHAT_LIMIT}: the chains disagree; run more draws")
    if divergences:
        warnings.append(f"{divergent_transitions(divergences)}: the posterior may be biased")
    return {
        "rhat_max": rhat,
        "ess_bulk_min": ess_bulk,
        "ess_tail_min": ess_tail,
        "divergences": divergences,
        "treedepth_hits": saturated,
        "leapfrog_per_draw": float(fit.sampler["n_leapfrog__"].mean()),
        "sampling_seconds": fit.seconds,
        "compile_seconds": fit.compile_seconds,
        "backend": fit.backend,
        "warnings": warnings,
    }


def _largest_rhat(draws: np.ndarray) -> float:
    return _over_judged(convergence.rhat(draws), np.max)


def _over_judged(values: np.ndarray, pick) -> float:
    """``pick`` (np.max, np.min) over the parameters the diagnostic could judge (NaN: too few chains or draws), as
    arviz's own summaries skip NaN; NaN when none could be."""
    judged = values[~np.isnan(values)]
    return float(pick(judged)) if judged.size else float("nan")
