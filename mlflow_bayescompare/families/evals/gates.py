"""Gates on a comparison of evaluation runs: claims about one system on several scorers at once, as one posterior
probability, for a test (pytest, or a test function MLflow runs) or a pipeline step.

A claim per scorer is :mod:`.claims`' (``a-better``, ``not-worse``, ``equivalent``: the outcomes of
:data:`.claims.CLAIMS`, here read about ``system``, B by default).  In each posterior draw every scorer's mean
difference falls in one outcome (beyond or inside its rope); the draws share the items' Dirichlet weights
(:mod:`.weights`), so the probability that every claim holds together, and optionally that the system is better on
at least one scorer, is the share of draws in which it does.  One scorer's claim about A is exactly
:func:`.claims.probability` of that scorer's result.

    result = compare_evaluations(table, "baseline", "candidate")
    require_better(result)          # candidate not worse on every scorer, and better on one: else AssertionError
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...vocabulary.claims import CLAIMS, Report
from ...vocabulary.errors import InputError
from ...vocabulary.outcomes import Orientation
from .result import EvalComparisonResult, EvalComparisons

__all__ = ["joint_probability", "check", "require", "require_better", "across", "ACROSS"]

#: the outcome a claim's probability names, by the name :data:`.claims.CLAIMS` gives it
_OUTCOME = {"p_a_better": "a_better", "p_rope": "rope", "p_b_better": "b_better"}
_WORDS = {"a-better": "better", "not-worse": "not worse", "equivalent": "practically equivalent"}


def joint_probability(result: EvalComparisonResult | EvalComparisons, claims: str | Mapping[str, str], *,
                      system: str | None = None, better_on: Sequence[str] = ()) -> float:
    """P(every scorer's claim holds for ``system``, and ``system`` is better on at least one of ``better_on``).

    ``claims``: one claim of :data:`.claims.CLAIMS` for every scorer, or scorer → claim.  ``system``: the system the
    claims are about (default: B, the candidate)."""
    by_scorer, a, b = _parts(result)
    system = b if system is None else system
    if system not in (a, b):
        raise InputError(f"the claims are about {system!r}, which is neither {a!r} nor {b!r}")
    claims = {s: claims for s in by_scorer} if isinstance(claims, str) else dict(claims)
    _check_names(claims, better_on, by_scorer)
    mine, other = ("b_better", "a_better") if system == b else ("a_better", "b_better")
    swap = {"a_better": mine, "b_better": other, "rope": "rope"}
    holds = np.ones(len(next(iter(by_scorer.values())).draws), dtype=bool)
    for scorer, claim in claims.items():
        wanted = [swap[_OUTCOME[name]] for name in CLAIMS[claim]]
        holds &= np.isin(_outcomes(by_scorer[scorer]), wanted)
    if better_on:
        holds &= np.any([_outcomes(by_scorer[s]) == mine for s in better_on], axis=0)
    return float(holds.mean())


def check(result: EvalComparisonResult | EvalComparisons, claims: str | Mapping[str, str] = "not-worse", *,
          system: str | None = None, better_on: Sequence[str] = (), threshold: float | None = None) -> Report:
    """The :class:`.claims.Report` of :func:`joint_probability` at ``threshold`` (default: the result's)."""
    by_scorer, a, b = _parts(result)
    system = b if system is None else system
    threshold = next(iter(by_scorer.values())).settings["threshold"] if threshold is None else threshold
    probability = joint_probability(result, claims, system=system, better_on=better_on)
    claims = {s: claims for s in by_scorer} if isinstance(claims, str) else dict(claims)
    grouped: dict[str, list[str]] = {}
    for scorer, claim in claims.items():
        grouped.setdefault(claim, []).append(scorer)
    said = "; ".join(f"{_WORDS[c]} on {', '.join(s)}" for c, s in grouped.items())
    if better_on:
        said += f"; better on at least one of {', '.join(better_on)}"
    return Report(f"{system} vs {a if system == b else b}: {said}", probability, threshold)


def require(result, claims: str | Mapping[str, str] = "not-worse", *, system: str | None = None,
            better_on: Sequence[str] = (), threshold: float | None = None) -> Report:
    """:func:`check`, raising ``AssertionError`` with the report's failure message when the claim is not
    supported (so a pytest test or an MLflow test function fails with it); the report otherwise."""
    report = check(result, claims, system=system, better_on=better_on, threshold=threshold)
    if not report.supported:
        raise AssertionError(report.failure())
    return report


def require_better(result, system: str | None = None, *, not_worse: Sequence[str] | None = None,
                   better_on: Sequence[str] | None = None, threshold: float | None = None) -> Report:
    """Require ``system`` (default B) not worse than the other on every scorer of ``not_worse`` (default: all)
    and better on at least one of ``better_on`` (default: those of ``not_worse``), jointly at ``threshold``."""
    by_scorer, _, _ = _parts(result)
    gated = list(by_scorer) if not_worse is None else list(not_worse)
    return require(result, {s: "not-worse" for s in gated}, system=system,
                   better_on=gated if better_on is None else list(better_on), threshold=threshold)


#: the claims about B across every scorer that the reports and the run's metrics show, by their metric's name
ACROSS = {"p_b_not_worse_on_all": "not worse on every scorer",
          "p_b_improves": "not worse on every scorer, and better on at least one"}


def across(result) -> dict[str, float]:
    """The probabilities of :data:`ACROSS` (about B), by their words."""
    by_scorer, _, _ = _parts(result)
    return {ACROSS["p_b_not_worse_on_all"]: joint_probability(result, "not-worse"),
            ACROSS["p_b_improves"]: joint_probability(result, "not-worse", better_on=list(by_scorer))}


def _parts(result) -> tuple[dict[str, EvalComparisonResult], str, str]:
    """The scorers' results and the systems of a result of :func:`.engine.compare_evaluations` (or of an outcome of
    the pipeline that holds one: its ``result``)."""
    result = getattr(result, "result", result)
    if isinstance(result, EvalComparisons):
        return result.by_scorer, result.system_a, result.system_b
    if isinstance(result, EvalComparisonResult):
        return {result.scorer: result}, result.model_a, result.model_b
    raise InputError(f"a gate reads the result of compare_evaluations; got {type(result).__name__}")


def _check_names(claims: dict, better_on: Sequence[str], by_scorer: dict) -> None:
    if isinstance(better_on, str):
        raise InputError(f"better_on is a list of scorers; got the string {better_on!r}", header="invalid claim:")
    problems = [f"unknown claim {c!r} for scorer {s!r}: choose one of {', '.join(CLAIMS)}"
                for s, c in claims.items() if c not in CLAIMS]
    problems += [f"scorer {s!r} is not in the result ({', '.join(by_scorer)})"
                 for s in [*claims, *better_on] if s not in by_scorer]
    if problems:
        raise InputError(problems, header="invalid claim:")


def _outcomes(result: EvalComparisonResult) -> np.ndarray:
    """Each draw's outcome (``a_better``, ``rope``, ``b_better``) of one scorer, by its rope and direction."""
    d, rope = result.draws, result.rope
    left, right = Orientation(result.greater_is_better).sides[0], Orientation(result.greater_is_better).sides[2]
    return np.where(d > rope, left, np.where(d < -rope, right, "rope"))
