"""The posteriors a look reads: the masses P(δ < −rope), P(|δ| ≤ rope), P(δ > rope) of the mean difference
δ = a − b (the paper's left, rope, right; :class:`~.result.Orientation` turns them into outcomes).

* ``correlated-t``: the Bayesian correlated t-test (Corani & Benavoli, Machine Learning 100, 2015): Student-t with
  n − 1 degrees of freedom, location x̄, scale² = (1/n + ρ/(1 − ρ)) s², by the product's own functions
  (:mod:`..families.correlated_t.formula`: ``correlated_t_posterior``, ``correlated_t_scale``,
  ``correlated_t_masses``).
* ``eval-binary`` and ``eval-continuous``: **stand-ins** until the evaluation family (``families/evals/``) is merged;
  the integrator swaps :data:`STAND_INS` for its functions (same :class:`Posterior` shape).  The simulation keeps
  the vectorised forms below (:func:`paired_binary_masses`, :func:`bootstrap_masses`), which it needs for speed.

  - pass/fail: a Dirichlet(α + counts) over the paired 2×2 table (both pass, A only, B only, both fail); with
    S = p_A-only + p_B-only ~ Beta(a + b, c) and U = p_A-only / S ~ Beta(a, b) independent (the aggregation and
    neutrality of the Dirichlet), δ = S(2U − 1) and P(δ > r) = ∫ P(U > (1 + r/s)/2) f_S(s) ds over s > r: one
    integral of Beta tail probabilities, by Gauss quadrature, exact to ~1e-8 (``tests/test_sequential_posteriors.py``
    checks it against adaptive quadrature and Dirichlet draws);
  - continuous: the Bayesian bootstrap (Rubin, Annals of Statistics 9, 1981): δ = Σ w_i d_i, w ~ Dirichlet(1, …, 1),
    whose mean is d̄ and variance σ̂²/(n + 1) (σ̂² with 1/n); the stand-in takes it as Normal with those two moments
    (the exact law's skew vanishes as 1/√n: checked against the bootstrap's draws to 0.015 at n = 200 differences of
    skewness 1.4; symmetric differences, as the simulation draws, do better).
"""

from __future__ import annotations

from functools import partial
from typing import Protocol

import numpy as np
from scipy import special

from ..families.correlated_t import formula
from .design import Design

__all__ = ["Posterior", "correlated_t_masses", "paired_binary_masses", "bootstrap_masses", "paired_binary",
           "bayesian_bootstrap", "STAND_INS", "posterior_for"]


class Posterior(Protocol):
    """From the paired scores so far (1-D, in arrival order) to P(δ < −rope), P(|δ| ≤ rope), P(δ > rope) of the
    mean difference δ = mean(a) − mean(b)."""

    def __call__(self, scores_a: np.ndarray, scores_b: np.ndarray, rope: float) -> tuple[float, float, float]: ...


def correlated_t_masses(count, mean, variance, rho: float, rope: float):
    """The correlated t-test's masses from the sufficient statistics of n differences (n, x̄, s² with ddof=1),
    arrays broadcast: the simulation's form of
    :func:`..families.correlated_t.formula.correlated_t_posterior` + masses."""
    scale = formula.correlated_t_scale(count, variance, rho)
    return formula.correlated_t_masses(np.asarray(count) - 1, mean, scale, rope)


#: Gauss-Hermite nodes (probabilists') mapped to S's quantiles, where S's law lies clear of the rope ...
_HERMITE_NODES, _HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(7)
_HERMITE_WEIGHTS = _HERMITE_WEIGHTS / _HERMITE_WEIGHTS.sum()
#: ... and Gauss-Legendre nodes from the rope, where S's law reaches it (few items disagree)
_LEGENDRE_NODES, _LEGENDRE_WEIGHTS = np.polynomial.legendre.leggauss(40)
_TAIL = 1e-10  # S's mass beyond the rope that counts as none, and left out of the Legendre window on the right


def paired_binary_masses(wins, losses, count, concentration: float, rope: float):
    """The Dirichlet posterior's masses from ``wins`` (items A passes and B fails), ``losses`` (B passes, A fails)
    and ``count`` items, arrays broadcast.  Only distinct (wins, losses, count) are integrated."""
    wins, losses, count = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (wins, losses, count)))
    base = int(count.max(initial=0)) + 1
    keys, inverse = np.unique((count.ravel() * base + wins.ravel()) * base + losses.ravel(), return_inverse=True)
    states, lost = np.divmod(keys, base)
    items, won = np.divmod(states, base)
    a, b, c = concentration + won, concentration + lost, 2 * concentration + items - won - lost
    left, right = np.empty(len(keys)), np.empty(len(keys))
    clear = special.betainc(a + b, c, rope) < _TAIL
    for rows, (s, weights) in ((clear, _hermite(a + b, c, clear)), (~clear, _legendre(a + b, c, ~clear, rope))):
        # δ > r is S(2U − 1) > r, i.e. U > (1 + r/S)/2 with U ~ Beta(a, b); δ < −r the same with 1 − U ~ Beta(b, a)
        x = (1 - rope / s) / 2
        right[rows] = (special.betainc(b[rows, None], a[rows, None], x) * weights).sum(axis=1)
        left[rows] = (special.betainc(a[rows, None], b[rows, None], x) * weights).sum(axis=1)
    left, right = left[inverse.ravel()].reshape(wins.shape), right[inverse.ravel()].reshape(wins.shape)
    return left, 1 - left - right, right


def _hermite(s1: np.ndarray, s2: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of E[g(S)], S ~ Beta(s1, s2), where S's law lies clear of the rope (P(S ≤ rope) <
    :data:`_TAIL`): 7 Gauss-Hermite nodes z, s = F_S⁻¹(Φ(z)); exact to ~1e-8 for the smooth g here."""
    nodes = special.betaincinv(s1[rows, None], s2[rows, None], special.ndtr(_HERMITE_NODES))
    return nodes, np.broadcast_to(_HERMITE_WEIGHTS, nodes.shape)


def _legendre(s1: np.ndarray, s2: np.ndarray, rows: np.ndarray, rope: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of E[g(S); S > rope], S ~ Beta(s1, s2), where S's law reaches the rope (few items
    disagree): 40 Gauss-Legendre nodes on (rope, F_S⁻¹(1 − tail)) in v, s = rope + width·v² (g may grow as
    √(s − rope) from the rope, where U's density is unbounded), weighted by S's density."""
    s1, s2 = s1[rows, None], s2[rows, None]
    width = np.maximum(1 - special.betaincinv(s2, s1, _TAIL) - rope, 0)
    v = (_LEGENDRE_NODES + 1) / 2
    s = np.minimum(rope + width * v**2, np.nextafter(1.0, 0.0))
    density = np.exp(special.xlogy(s1 - 1, s) + special.xlog1py(s2 - 1, -s) - special.betaln(s1, s2))
    return s, density * width * v * _LEGENDRE_WEIGHTS  # ds = 2·width·v dv and dv = du/2 on Legendre's [-1, 1]


def bootstrap_masses(count, mean, variance, rope: float):
    """The Bayesian bootstrap's masses from n, d̄ and σ̂² (with 1/n), as a Normal(d̄, σ̂²/(n + 1)); a point mass
    where σ̂ = 0.  Arrays broadcast."""
    mean = np.asarray(mean, dtype=float)
    sd = np.sqrt(np.asarray(variance, dtype=float) / (np.asarray(count) + 1))
    point = sd == 0
    unit = np.where(point, 1.0, sd)
    left = np.where(point, mean < -rope, special.ndtr((-rope - mean) / unit))
    right = np.where(point, mean > rope, special.ndtr((mean - rope) / unit))
    return left, 1 - left - right, right


def paired_binary(scores_a, scores_b, rope: float, concentration: float = 1.0) -> tuple[float, float, float]:
    """Stand-in :class:`Posterior` of ``eval-binary`` (pass = 1, fail = 0)."""
    a, b = np.asarray(scores_a), np.asarray(scores_b)
    masses = paired_binary_masses(np.sum(a > b), np.sum(a < b), len(a), concentration, rope)
    return tuple(float(m) for m in masses)


def bayesian_bootstrap(scores_a, scores_b, rope: float) -> tuple[float, float, float]:
    """Stand-in :class:`Posterior` of ``eval-continuous``."""
    d = np.asarray(scores_a, dtype=float) - np.asarray(scores_b, dtype=float)
    masses = bootstrap_masses(len(d), d.mean(), d.var(), rope)
    return tuple(float(m) for m in masses)


#: The evaluation tests' posteriors until the evaluation family is merged: replace these two entries by its
#: functions (wrapped to the :class:`Posterior` shape) and nothing else changes.
STAND_INS = {"eval-binary": paired_binary, "eval-continuous": bayesian_bootstrap}


def posterior_for(design: Design) -> Posterior:
    """The :class:`Posterior` of a design's test.  For ``correlated-t`` the scores are per fold, run-major, and the
    posterior is the product's correlated t-test's (ρ from the design)."""
    if design.test == "correlated-t":
        return partial(_correlated_t, rho=design.correlation)
    if design.test == "eval-binary":
        return partial(STAND_INS["eval-binary"], concentration=design.prior_concentration)
    return STAND_INS[design.test]


def _correlated_t(scores_a, scores_b, rope: float, rho: float) -> tuple[float, float, float]:
    posterior = formula.correlated_t_posterior(np.asarray(scores_a, float) - np.asarray(scores_b, float), rho)
    return formula.correlated_t_masses(*posterior, rope)
