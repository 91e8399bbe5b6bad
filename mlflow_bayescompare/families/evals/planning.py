"""About how many items would decide an inconclusive comparison, at the spread observed.

The approximation, stated: the items to come look like those seen (the same mean difference m and the same spread
per item), so the posterior of the mean difference stays centred at m while its standard deviation s shrinks as
1/√n (a normal approximation of the Bayesian bootstrap, whose variance is (1/(n + 1)) (1/n) Σ (x − x̄)², Rubin
1981).  With n units seen (items, or clusters of the average size), the units N that put the probability of the
leading outcome at the threshold t solve

* B or A better: (|m| − rope) / (s √(n/N)) = Φ⁻¹(t), so N = n (Φ⁻¹(t) s / (|m| − rope))², when |m| > rope;
* practically equivalent: Φ((rope − m)/σ) − Φ((−rope − m)/σ) = t for σ = s √(n/N), when |m| < rope.

When m sits on the side opposite the leading outcome, or at the rope's edge, no number of such items decides it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

__all__ = ["ASSUMES", "units_to_decide"]

ASSUMES = ("the items to come look like these (the same mean difference and spread per item), and the posterior "
           "sd shrinks as 1/sqrt(n) (normal approximation)")


def units_to_decide(difference: np.ndarray, rope: float, threshold: float, units: int, leading: str,
                    unit: str = "items") -> dict:
    """How many ``unit`` (``items`` or ``clusters``) in all, and how many more than ``units``, would bring the
    probability of the ``leading`` side of the difference draws (``above``: > rope, ``below``: < −rope,
    ``inside``) to ``threshold`` (module docstring); ``total`` is None when none would."""
    m, s = float(np.mean(difference)), float(np.std(difference))
    z = stats.norm.ppf(threshold)
    total = None
    if s == 0:
        total = units
    elif leading in ("above", "below") and (m if leading == "above" else -m) > rope:
        total = math.ceil(units * (z * s / (abs(m) - rope)) ** 2)
    elif leading == "inside" and abs(m) < rope:
        inside = lambda sigma: stats.norm.cdf((rope - m) / sigma) - stats.norm.cdf((-rope - m) / sigma) - threshold
        sigma = optimize.brentq(inside, 1e-12 * rope, 10 * rope)
        total = math.ceil(units * (s / sigma) ** 2)
    out = {"leading": leading, "unit": unit, "seen": units, "total": total,
           "more": None if total is None else max(total - units, 0), "assumes": ASSUMES}
    if total is None:
        out["note"] = ("the observed mean difference sits at the rope's edge or on the other side: more such "
                       f"{unit} would not decide it")
    return out
