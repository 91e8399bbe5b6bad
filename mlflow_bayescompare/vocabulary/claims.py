"""The claims a result can be required to support (``--require``, the API's ``require``), written once: a
comparison's claims about model A, and a ranking's ``best=<model>``, ``none-better=<model>`` and
``not-worse-than-best=<model>``; their posterior probability, the decision at a
threshold, and the report of it (JSON and text) that the command line, the Python API and the server give."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .optionspec import PerMetric

__all__ = ["CLAIMS", "BEST", "RANKING_CLAIMS", "EVAL_CLAIMS", "IMPROVES", "EVAL_CLAIM_WORDS", "Report", "EvalClaim",
           "report", "reports", "reports_dict", "probability", "best_claim", "best_model", "check_answered",
           "eval_claim"]

#: a comparison's claims about model A: the outcomes of the posterior whose probabilities add up to each
CLAIMS = {"a-better": ("p_a_better",), "not-worse": ("p_a_better", "p_rope"), "equivalent": ("p_rope",)}
#: a ranking's claim ``best=<model>``: P(that model is the best of all)
BEST = "best="
#: a ranking's claims about one model, by prefix: the column of the ranking table that holds their probability.
#: ``none-better=<control>``: no model better than the control by more than the rope on the next dataset;
#: ``not-worse-than-best=<model>``: the model not worse than the leader by more than the rope (``not-worse`` of a
#: comparison, of the model against the leader).  The last two need the hierarchical model's ranking.
RANKING_CLAIMS = {BEST: "p_best", "none-better=": "p_none_better",
                  "not-worse-than-best=": "p_not_worse_than_leader"}
#: a comparison of evaluation runs' claims about the candidate B, per scorer (``compare-evals --require``): the claim
#: of :data:`CLAIMS` each one is, said of B
EVAL_CLAIMS = {"better": "a-better", "not-worse": "not-worse", "equivalent": "equivalent"}
#: across scorers: B not worse than A on every gated scorer, and better on at least one of them
IMPROVES = "improves"
EVAL_CLAIM_WORDS = (*EVAL_CLAIMS, IMPROVES)


@dataclass(frozen=True)
class Report:
    """A claim, its posterior probability and the threshold it must reach."""

    claim: str
    probability: float
    threshold: float

    @property
    def supported(self) -> bool:
        return bool(self.probability >= self.threshold)

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "threshold": self.threshold, "probability": self.probability,
                "supported": self.supported}

    def line(self) -> str:
        """``Claim 'not-worse': probability 0.970 ≥ 0.95 → supported``."""
        return (f"Claim '{self.claim}': probability {self.probability:.3f} {'≥' if self.supported else '<'} "
                f"{self.threshold:g} → {'supported' if self.supported else 'NOT supported'}")

    def failure(self) -> str:
        """Why the claim is not supported."""
        what = "P(best)" if self.claim.startswith(BEST) else "its probability"
        return f"claim '{self.claim}' not supported: {what} is {self.probability:.3f} < {self.threshold:g}"


@dataclass(frozen=True)
class EvalClaim:
    """A claim about the candidate B of a comparison of evaluation runs, resolved on its scorers: ``claims`` (scorer
    → the claim of :data:`CLAIMS` that must hold for B) and ``better_on`` (B must be better on at least one of
    these: :data:`IMPROVES`); all of it at once, as one posterior probability."""

    text: str
    claims: dict[str, str]
    better_on: tuple[str, ...]


def eval_claim(given: str | PerMetric, scorers: Sequence[str]) -> EvalClaim:
    """The claim ``given`` (a word of :data:`EVAL_CLAIM_WORDS` for every scorer, or ``scorer=word,...`` with at most
    one bare word for the scorers not named) on the ``scorers`` compared; an :class:`InputError` naming a scorer not
    compared, or :data:`IMPROVES` given for one scorer (it is said across scorers)."""
    named, bare = (dict(given.values), given.default) if isinstance(given, PerMetric) else ({}, given)
    problems = [f"--require names scorer {s!r}, which is not compared (scorers: {', '.join(map(repr, scorers))})"
                for s in named if s not in scorers]
    problems += [f"--require {IMPROVES} is said across scorers (B not worse on every one, better on one): give it "
                 f"alone, not for scorer {s!r}" for s, word in named.items() if word == IMPROVES]
    if problems:
        raise InputError(problems, header="invalid claim:")
    gated = {**({s: bare for s in scorers} if bare else {}), **named}
    claims = {s: EVAL_CLAIMS["not-worse" if word == IMPROVES else word] for s, word in gated.items()}
    return EvalClaim(str(given), claims, tuple(gated) if bare == IMPROVES else ())


def report(outcome, claim: str, threshold: float) -> Report:
    """``claim`` about ``outcome`` at ``threshold`` (:func:`probability`)."""
    return Report(claim, probability(outcome, claim), threshold)


def reports(outcome, claim: str, threshold: float) -> dict[str | None, Report]:
    """``claim`` about each metric of a decision on several metrics (its ``by_metric`` outcomes: the claim must hold
    on every one), or about ``outcome`` alone (keyed ``None``)."""
    by_metric = getattr(outcome, "by_metric", None)
    if isinstance(by_metric, dict):
        return {metric: report(one, claim, threshold) for metric, one in by_metric.items()}
    return {None: report(outcome, claim, threshold)}


def reports_dict(checked: dict[str | None, Report]) -> dict[str, Any]:
    """The JSON of :func:`reports`: the claim's report; on several metrics the claim, its threshold, whether it holds
    on every metric and each metric's report (``metrics``)."""
    if None in checked:
        return checked[None].to_dict()
    first = next(iter(checked.values()))
    return {"claim": first.claim, "threshold": first.threshold, "supported": all(c.supported for c in checked.values()),
            "metrics": {m: c.to_dict() for m, c in checked.items()}}


def probability(outcome, claim: str) -> float:
    """The posterior probability of ``claim``: a comparison's (:data:`CLAIMS`; ``outcome`` is a two-model result, an
    outcome or a mapping such as a run's metrics) or a ranking's ``best=<model>`` (``outcome`` has a ``ranking``
    table)."""
    if "=" in claim:
        claim = best_claim(claim)
        column = RANKING_CLAIMS[claim.partition("=")[0] + "="]
        if column not in outcome.ranking.columns:
            raise InputError(_needs_hierarchical(claim))
        values = dict(zip(outcome.ranking["model"].astype(str), outcome.ranking[column]))
        return float(values[best_model(claim, list(values))])
    if claim not in CLAIMS:
        raise InputError(f"unknown claim {claim!r}: choose one of {', '.join(CLAIMS)} (a comparison) or "
                         f"{', '.join(k + '<model>' for k in RANKING_CLAIMS)} (a ranking)")
    if isinstance(outcome, Mapping):
        return sum(outcome[name] for name in CLAIMS[claim])
    return sum(getattr(outcome, name) for name in CLAIMS[claim])


def check_answered(claim: str, ranking_model: str, answered: Sequence[str]) -> None:
    """A ranking's claim that ``ranking_model`` answers, by the prefixes of :data:`RANKING_CLAIMS` it answers
    (``answered``: its row of the family table; ``best=`` every model, the others the hierarchical model alone); an
    :class:`InputError` otherwise."""
    claim = best_claim(claim)
    if claim.partition("=")[0] + "=" not in answered:
        raise InputError(_needs_hierarchical(claim) + f"; these models are ranked by {ranking_model}")


def _needs_hierarchical(claim: str) -> str:
    return (f"claim {claim!r} needs the hierarchical model's ranking (model hierarchical, on fold scores across "
            "datasets)")


def best_model(claim: str, models: Sequence[str]) -> str:
    """The model of a ranking's claim (``best=<model>``, :data:`RANKING_CLAIMS`), one of ``models`` (those ranked);
    an :class:`InputError` naming them when it is none."""
    cleaned = best_claim(claim)
    key, _, model = cleaned.partition("=")
    if model not in models:
        raise InputError(f"--require {cleaned}: no such model among {', '.join(models)}")
    return model


def best_claim(value: str) -> str:
    """A ranking's claim (``best=<model>``, ``none-better=<model>``, ``not-worse-than-best=<model>``) cleaned of
    spaces; an :class:`InputError` when ``value`` is none of them."""
    key, _, model = value.partition("=")
    if key.strip() + "=" not in RANKING_CLAIMS or not model.strip():
        raise InputError(f"Invalid value for '--require': expected {' or '.join(k + 'MODEL' for k in RANKING_CLAIMS)}"
                         f"; got {value!r}")
    return key.strip() + "=" + model.strip()
