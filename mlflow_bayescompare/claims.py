"""The claims a result can be required to support (``--require``, the API's ``require``), written once: a
comparison's claims about model A, and a ranking's ``best=<model>``; their posterior probability, the decision at a
threshold, and the report of it (JSON and text) that the command line, the Python API and the server give."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InputError

__all__ = ["CLAIMS", "BEST", "Report", "report", "probability", "best_claim", "best_model"]

#: a comparison's claims about model A: the outcomes of the posterior whose probabilities add up to each
CLAIMS = {"a-better": ("p_a_better",), "not-worse": ("p_a_better", "p_rope"), "equivalent": ("p_rope",)}
#: a ranking's claim ``best=<model>``: P(that model is the best of all)
BEST = "best="


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


def report(outcome, claim: str, threshold: float) -> Report:
    """``claim`` about ``outcome`` at ``threshold`` (:func:`probability`)."""
    return Report(claim, probability(outcome, claim), threshold)


def probability(outcome, claim: str) -> float:
    """The posterior probability of ``claim``: a comparison's (:data:`CLAIMS`; ``outcome`` is a two-model result, an
    outcome or a mapping such as a run's metrics) or a ranking's ``best=<model>`` (``outcome`` has a ``ranking``
    table)."""
    if claim.startswith(BEST):
        p_best = dict(zip(outcome.ranking["model"].astype(str), outcome.ranking["p_best"]))
        return float(p_best[best_model(claim, list(p_best))])
    if claim not in CLAIMS:
        raise InputError(f"unknown claim {claim!r}: choose one of {', '.join(CLAIMS)} (a comparison) or "
                         f"{BEST}<model> (a ranking)")
    if isinstance(outcome, Mapping):
        return sum(outcome[name] for name in CLAIMS[claim])
    return sum(getattr(outcome, name) for name in CLAIMS[claim])


def best_model(claim: str, models: Sequence[str]) -> str:
    """The model of the claim ``best=<model>``, one of ``models`` (those ranked); an :class:`InputError` naming them
    when it is none."""
    model = best_claim(claim)[len(BEST):]
    if model not in models:
        raise InputError(f"--require best={model}: no such model among {', '.join(models)}")
    return model


def best_claim(value: str) -> str:
    """``best=<model>`` cleaned of spaces; an :class:`InputError` when ``value`` is not of that form."""
    key, _, model = value.partition("=")
    if key.strip() != BEST[:-1] or not model.strip():
        raise InputError(f"Invalid value for '--require': expected best=MODEL; got {value!r}")
    return BEST + model.strip()
