"""``compare_evaluations`` and ``rank_evaluations``: is system B really better than system A on the same evaluation
items, and which of k systems is best, from the tidy table of :mod:`.pairing`.

Each scorer gets the paired model of its kind (:mod:`.models`); every scorer and system shares the items' (or
clusters') Dirichlet weights in a draw (:mod:`.weights`), so that one decision over several scorers is one posterior
(:mod:`.gates`).  The probabilities are posterior masses of the mean difference over the population the items
(clusters) were drawn from, beyond or inside the rope; the verdict is the package's one rule
(:func:`.posterior_summary.verdict`, Benavoli et al. 2017, "Time for a change", JMLR 18).  No MCMC, no compile:
1,000 items × 5 scorers decide in 0.09 s of CPU, 100,000 × 5 in 5.7 s (benchmarks/bench_evals_speed.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...shared import posterior_summary
from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.options import draw_seed
from ...vocabulary.versions import versions
from . import details
from .kinds import Kind
from .models import DRAWS, PRIOR_ALPHA, scorer_group
from .pairing import MIN_OVERLAP, Aligned, ScorerValues, align, listed
from .planning import units_to_decide
from .result import EvalComparisonResult, EvalComparisons, EvalRanking, ScorerRanking, three_way
from .weights import weighted_means

__all__ = ["compare_evaluations", "rank_evaluations", "FEW_CLUSTERS", "MAX_DRAWS"]

#: below this many clusters, a warning: few independent units, and the answer is conservative (benchmarks/README.md,
#: "clusters": 0-2.1% of equal systems called different with 5 or 10 clusters)
FEW_CLUSTERS = 10
MAX_DRAWS = 1_000_000
_SIDE = ("above", "inside", "below")  # of B − A, in the order of (p_left, p_rope, p_right)
_OF_SYSTEM = {"b_better": "better", "a_better": "worse", "equivalent": "equivalent", "inconclusive": "inconclusive"}


def compare_evaluations(table: pd.DataFrame, system_a: str, system_b: str, scorers: str | Sequence[str] | None = None,
                        *, rope: float | Mapping[str, float] | None = None, kinds: Mapping | None = None,
                        direction: str | Mapping[str, str] | None = None, cluster: bool = True,
                        threshold: float = 0.95, draws: int = DRAWS, seed: int | None = None,
                        alpha: float = PRIOR_ALPHA,
                        min_overlap: float = MIN_OVERLAP) -> EvalComparisonResult | EvalComparisons:
    """Compare system B with system A, scorer by scorer, on the items both were evaluated on.

    Args:
        table: the tidy table of :mod:`.pairing` (system, item, repeat, scorer, value, cluster, suite).
        system_a, system_b: the baseline A and the candidate B; differences are B − A.
        scorers: one scorer (a str: the result is an :class:`EvalComparisonResult`) or several (a list, or None for
            every scorer both systems have: an :class:`EvalComparisons`).
        rope: the half-width of practical equivalence in the scorer's units, one for all or scorer → rope; default
            per kind (:data:`.kinds.DEFAULT_ROPE` of the scale's span: 0.01 of a pass rate, 0.04 of a 1-5 rating,
            0.01 in log units ≈ 1% of a latency).
        kinds: scorer → a kind of :data:`.kinds.KINDS` or the ordinal levels in order, overriding detection.
        direction: ``higher`` or ``lower`` is better, for all or scorer → direction (default: lower for resources
            such as latency and cost, :func:`.kinds.is_resource`).
        cluster: use the items' clusters when the table has them (False: treat items as independent).
        threshold: the probability at which an outcome is declared.
        draws, seed: posterior draws and their seed (None: a fresh one, recorded in ``settings``).
        alpha: the Dirichlet prior of a discrete score, per cell of a 2×2 table (:data:`.models.PRIOR_ALPHA`).
        min_overlap: the share of the smaller system's items that must be paired.
    """
    _check(threshold, draws, alpha)
    aligned = align(table, (system_a, system_b), scorers, kinds, direction, min_overlap)
    ropes = _ropes(rope, aligned)
    seed = draw_seed() if seed is None else int(seed)
    means, atoms = _draw(aligned, cluster, draws, seed, alpha)
    settings = {"threshold": threshold, "draws": draws, "seed": seed, "alpha": alpha, "cluster": cluster,
                "min_overlap": min_overlap, "versions": versions()}
    results = {scorer: _comparison(aligned, scorer, m, ropes[scorer], threshold, atoms, settings)
               for scorer, m in zip(aligned.scorers, means)}
    if isinstance(scorers, str):
        return results[scorers]
    return EvalComparisons(aligned.systems[0], aligned.systems[1], results, _counts(aligned, atoms),
                           list(aligned.warnings), settings)


def rank_evaluations(table: pd.DataFrame, systems: Sequence[str] | None = None,
                     scorers: str | Sequence[str] | None = None, *, vs: str | None = None,
                     rope: float | Mapping[str, float] | None = None, kinds: Mapping | None = None,
                     direction: str | Mapping[str, str] | None = None, cluster: bool = True, threshold: float = 0.95,
                     draws: int = DRAWS, seed: int | None = None, alpha: float = PRIOR_ALPHA,
                     min_overlap: float = MIN_OVERLAP) -> EvalRanking:
    """Rank k systems evaluated on the same items: per scorer P(best) of each system, its mean score, and every
    system against ``vs`` (a system, or None/``best`` for the leader, the system of the highest posterior mean).
    ``systems`` default to every system of the table; the other arguments as for :func:`compare_evaluations`."""
    _check(threshold, draws, alpha)
    if systems is None:
        systems = list(pd.unique(table["system"].astype(str))) if isinstance(table, pd.DataFrame) else []
    elif isinstance(systems, str):
        raise InputError(f"systems is a list of systems; got the string {systems!r}")
    aligned = align(table, systems, scorers, kinds, direction, min_overlap)
    if vs not in (None, "best") and vs not in aligned.systems:
        raise InputError(f"vs names {vs!r}, which is not among the systems ranked ({listed(aligned.systems)})")
    ropes = _ropes(rope, aligned)
    seed = draw_seed() if seed is None else int(seed)
    means, atoms = _draw(aligned, cluster, draws, seed, alpha)
    k = len(aligned.systems)
    rankings = {scorer: _ranking(aligned, scorer, m[:, :k], ropes[scorer], vs, threshold)
                for scorer, m in zip(aligned.scorers, means)}
    settings = {"threshold": threshold, "draws": draws, "seed": seed, "alpha": alpha, "cluster": cluster,
                "vs": vs, "rope": ropes, "min_overlap": min_overlap, "versions": versions()}
    return EvalRanking(list(aligned.systems), rankings, _counts(aligned, atoms), list(aligned.warnings), settings)


# --------------------------------------------------------------------------------------------------- steps


def _check(threshold: float, draws: int, alpha: float) -> None:
    problems = []
    if not 0 < threshold < 1:
        problems.append(f"threshold must lie between 0 and 1; got {threshold!r}")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or not 100 <= draws <= MAX_DRAWS:
        problems.append(f"draws must be a whole number from 100 to {MAX_DRAWS}; got {draws!r}")
    if not (isinstance(alpha, (int, float)) and 0 <= alpha < np.inf):
        problems.append(f"alpha must be a number >= 0; got {alpha!r}")
    if problems:
        raise InputError(problems, header="invalid settings:")


def _ropes(rope, aligned: Aligned) -> dict[str, float]:
    """Each scorer's rope: given (for all, or by scorer), else its kind's default."""
    given = rope if isinstance(rope, Mapping) else {}
    stray = sorted(set(given) - set(aligned.scorers))
    problems = [f"rope names scorers not compared: {listed(stray)}"] if stray else []
    out = {}
    for scorer, scores in aligned.scorers.items():
        value = given.get(scorer) if isinstance(rope, Mapping) else rope
        value = scores.kind.default_rope if value is None else value
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not 0 < value < np.inf:
            problems.append(f"rope of scorer {scorer!r} must be a number > 0; got {value!r}")
        else:
            out[scorer] = float(value)
    if problems:
        raise InputError(problems, header="invalid settings:")
    return out


def _draw(aligned: Aligned, cluster: bool, draws: int, seed: int, alpha: float) -> tuple[list[np.ndarray], dict]:
    """Every scorer's means (draws × systems [+ superiority]) under shared weights, and what the atoms are."""
    clustered = cluster and aligned.clusters is not None
    atoms = aligned.clusters if clustered else np.arange(len(aligned.items))
    n_atoms = int(atoms.max()) + 1
    rng = np.random.default_rng(seed)
    groups = [scorer_group(s.values, s.kind, atoms, n_atoms, rng, alpha) for s in aligned.scorers.values()]
    return weighted_means(groups, draws, rng), {"codes": atoms, "count": n_atoms, "clustered": clustered}


def _counts(aligned: Aligned, atoms: dict) -> dict:
    return {"items": len(aligned.items), "clusters": atoms["count"] if atoms["clustered"] else None,
            "items_per_system": aligned.items_per_system,
            "unpaired": {s: {"count": len(v), "items": v} for s, v in aligned.unpaired.items()},
            "suites": None if aligned.suites is None else int(len(set(aligned.suites)))}


def _comparison(aligned: Aligned, scorer: str, means: np.ndarray, rope: float, threshold: float, atoms: dict,
                settings: dict) -> EvalComparisonResult:
    scores = aligned.scorers[scorer]
    kind, (a, b) = scores.kind, aligned.systems
    d = means[:, 1] - means[:, 0]
    w = three_way(d, rope, kind.greater_is_better, a, b, threshold)
    complete = scores.complete
    units = len(np.unique(atoms["codes"][complete]))
    unit = "clusters" if atoms["clustered"] else "items"
    leading = _SIDE[int(np.argmax([w["p_left"], w["p_rope"], w["p_right"]]))]
    warnings = _warnings(scorer, scores, units, atoms["clustered"], aligned.systems)
    return EvalComparisonResult(
        model_a=a, model_b=b, greater_is_better=kind.greater_is_better, rope=rope, p_left=w["p_left"],
        p_rope=w["p_rope"], p_right=w["p_right"], next_probs=np.array([[w["p_left"], w["p_rope"], w["p_right"]]]),
        verdict=w["verdict"], decision=w["decision"], odds=w["odds"], evidence=w["evidence"], scorer=scorer,
        kind={**kind.to_dict(), "units": kind.units}, difference=_difference(d, kind),
        means={a: _mean(means[:, 0], kind), b: _mean(means[:, 1], kind)},
        superiority=posterior_summary.describe(means[:, 2]),
        counts={"items": int(complete.sum()), "clusters": units if atoms["clustered"] else None,
                "missing": {s: {"count": len(v), "items": v} for s, v in scores.missing.items()},
                "unpaired": {s: len(v) for s, v in aligned.unpaired.items()},
                "outcomes": details.outcomes(scores.values, kind.greater_is_better),
                "table": details.pass_fail_table(scores)},
        repeats=details.repeats(scores, aligned.systems), baseline=details.baseline(scores),
        more_items=units_to_decide(d, rope, threshold, units, leading, unit) if w["decision"] == "inconclusive"
        else None, warnings=warnings, settings={**settings, "rope": rope}, draws=d)


def _difference(d: np.ndarray, kind: Kind) -> dict[str, float]:
    out = posterior_summary.describe(d)
    if kind.name == "log":
        for name in ("mean", "hdi_low", "hdi_high"):
            out[f"ratio_{name}"] = float(np.exp(out[name]))
            out[f"percent_{name}"] = float(100 * np.expm1(out[name]))
    return out


def _mean(m: np.ndarray, kind: Kind) -> dict[str, float]:
    """A system's mean score (a log kind's geometric mean) with its HDI."""
    out = posterior_summary.describe(np.exp(m) if kind.name == "log" else m)
    return {k: out[k] for k in ("mean", "sd", "hdi_low", "hdi_high")}


def _warnings(scorer: str, scores: ScorerValues, units: int, clustered: bool, systems) -> list[str]:
    out = [f"scorer {scorer!r}: {len(v)} paired item(s) have no value for {s} (missing or errored: {listed(v)}); "
           "compared on the rest" for s, v in scores.missing.items() if v]
    if clustered and units < FEW_CLUSTERS:
        out.append(f"scorer {scorer!r}: only {units} clusters: the answer rests on few independent units (with the "
                   "prior's pseudo-clusters weighing as much as the data, it leans to 'inconclusive')")
    for warning in out:
        log.warning(warning)
    return out


def _ranking(aligned: Aligned, scorer: str, means: np.ndarray, rope: float, vs: str | None,
             threshold: float) -> ScorerRanking:
    kind, systems = aligned.scorers[scorer].kind, list(aligned.systems)
    oriented = means if kind.greater_is_better else -means
    p_best = np.bincount(np.argmax(oriented, axis=1), minlength=len(systems)) / len(means)
    ranks = (-oriented).argsort(axis=1).argsort(axis=1) + 1
    scores = np.exp(means) if kind.name == "log" else means  # a log kind's geometric means
    low, high = posterior_summary.hdi(scores, posterior_summary.HDI_PROB)
    table = pd.DataFrame({"system": systems, "p_best": p_best, "mean": scores.mean(axis=0), "hdi_low": low,
                          "hdi_high": high, "mean_rank": ranks.mean(axis=0), "_order": oriented.mean(axis=0)})
    table = table.sort_values("_order", ascending=False, kind="stable").drop(columns="_order").reset_index(drop=True)
    reference = table["system"].iloc[0] if vs in (None, "best") else vs
    rows = []
    for system in table["system"]:
        if system == reference:
            continue
        d = means[:, systems.index(system)] - means[:, systems.index(reference)]
        w = three_way(d, rope, kind.greater_is_better, reference, system, threshold)
        hdi = posterior_summary.hdi(d, posterior_summary.HDI_PROB)
        rows.append({"system": system, "reference": reference, "difference": float(d.mean()),
                     "hdi_low": float(hdi[0]), "hdi_high": float(hdi[1]), "p_better": w["probs"]["b_better"],
                     "p_rope": w["probs"]["rope"], "p_worse": w["probs"]["a_better"],
                     "decision": _OF_SYSTEM[w["decision"]], "verdict": w["verdict"]})
    versus = pd.DataFrame(rows)
    return ScorerRanking(scorer, {**kind.to_dict(), "units": kind.units}, rope, reference, table, versus,
                         _statement(scorer, reference, versus, threshold), means)


def _statement(scorer: str, reference: str, versus: pd.DataFrame, threshold: float) -> str:
    """The versus table in one sentence; when nothing is decided, which system comes closest."""
    decided = versus[versus["decision"] != "inconclusive"]
    if decided.empty:
        top = versus.loc[versus[["p_better", "p_rope", "p_worse"]].max(axis=1).idxmax()]
        word = max(("p_better", "better than"), ("p_rope", "practically equivalent to"), ("p_worse", "worse than"),
                   key=lambda pair: top[pair[0]])
        return (f"{scorer}: no system is decided better, worse or practically equivalent against {reference!r} at "
                f"P >= {threshold:g}; the nearest is {top['system']!r}, {word[1]} {reference!r} with P = "
                f"{top[word[0]]:.2f}")
    said = [f"{r.system!r} {'practically equivalent to' if r.decision == 'equivalent' else r.decision + ' than'} "
            f"{reference!r}" for r in decided.itertuples()]
    rest = len(versus) - len(decided)
    return f"{scorer}: " + "; ".join(said) + (f"; {rest} undecided" if rest else "")
