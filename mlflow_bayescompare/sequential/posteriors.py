"""The posteriors a look reads: the masses P(δ < −rope), P(|δ| ≤ rope), P(δ > rope) of the mean difference
δ = a − b (the paper's left, rope, right; :class:`~.result.Orientation` turns them into outcomes).

* ``correlated-t``: the Bayesian correlated t-test (Corani & Benavoli, Machine Learning 100, 2015): Student-t with
  n − 1 degrees of freedom, location x̄, scale² = (1/n + ρ/(1 − ρ)) s², by the product's own functions
  (:mod:`..families.correlated_t.formula`: ``correlated_t_posterior``, ``correlated_t_scale``,
  ``correlated_t_masses``).
* ``eval-binary`` and ``eval-continuous``: at a look, the evaluation family's own models (:data:`EVAL_POSTERIORS`,
  :func:`..families.evals.models.pass_fail_draws` and ``continuous_draws``: what ``compare_evaluations`` answers
  with), :data:`LOOK_DRAWS` draws from the fixed :data:`LOOK_SEED`, so that a look read again on the same items
  gives the same probabilities.  The simulation needs thousands of designs in seconds, so it reads the same
  posteriors in closed form, vectorised (:func:`paired_binary_masses`, :func:`bootstrap_masses`); the family draws
  them and holds no closed form, so these are the only ones (``tests/test_sequential_posteriors.py`` checks each
  against the family's draws).

  - pass/fail: the family's Dirichlet(α + counts) over the paired 2×2 table (both pass, A only, B only, both fail;
    α = the design's ``prior_concentration``, the family's ``PRIOR_ALPHA`` = 1 by default).  With
    S = p_A-only + p_B-only ~ Beta(a + b, c) and U = p_A-only / S ~ Beta(a, b) independent (the aggregation and
    neutrality of the Dirichlet), δ = S(2U − 1) and P(δ > r) = ∫ P(U > (1 + r/s)/2) f_S(s) ds over s > r: one
    integral of Beta tail probabilities, by Gauss quadrature, exact to ~1e-8 (checked against adaptive quadrature
    and Dirichlet draws);
  - continuous: the family's Bayesian bootstrap (Rubin, Annals of Statistics 9, 1981) with its prior: δ = Σ w_k x_k
    over the n differences (weight 1 each) and 4 pseudo-observations of weight α = ``PRIOR_ALPHA`` at 0, 0, +R and
    −R (R the largest |difference| so far: :func:`..families.evals.models.scale`), w ~ Dirichlet.  Its exact two
    moments: with A = n + 4α, mean μ = Σ d_i / A and variance [Σ (d_i − μ)² + α(4μ² + 2R²)] / (A(A + 1)) (the
    variance of a Dirichlet-weighted mean); the simulation takes δ as Normal with them (the exact law's skew
    vanishes as 1/√n: within 0.015 of the family's draws at n = 200 differences of skewness 1.4).

A Monte Carlo look of :data:`LOOK_DRAWS` = 4000 draws estimates a probability near a threshold of 0.994 to ± 0.0012,
about 0.07 standard deviations of the z-score that crosses it: the crossing rate of the simulated rule grows by ~2%
of itself (0.050 → 0.051), below the simulation's own Monte Carlo error.
"""

from __future__ import annotations

from functools import partial
from typing import Protocol

import numpy as np
from scipy import special

from ..families.correlated_t import formula
from ..families.evals.models import DRAWS, PRIOR_ALPHA, continuous_draws, pass_fail_draws
from ..families.evals.result import sides
from .design import Design

__all__ = ["Posterior", "correlated_t_masses", "paired_binary_masses", "bootstrap_masses", "eval_binary",
           "eval_continuous", "EVAL_POSTERIORS", "LOOK_DRAWS", "LOOK_SEED", "posterior_for"]

#: the evaluation family's draws at a look (its default: the count the package's sampled tests summarise)
LOOK_DRAWS = DRAWS
#: their seed: fixed, so that an earlier look read again gives the probabilities it gave
LOOK_SEED = 0


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


def bootstrap_masses(count, mean, variance, reach, rope: float, alpha: float = PRIOR_ALPHA):
    """The masses of the evaluation family's Bayesian bootstrap with its prior (the module's docstring) from n, the
    differences' mean d̄, their variance σ̂² (with 1/n) and reach R (the largest |difference|), as a Normal with its
    exact two moments; a point mass where the variance is 0.  Arrays broadcast; ``alpha=0`` is Rubin's own."""
    count, mean = np.asarray(count, dtype=float), np.asarray(mean, dtype=float)
    total = count + 4 * alpha
    centre = count * mean / total
    spread = count * np.asarray(variance, dtype=float) + count * (mean - centre) ** 2 \
        + alpha * (4 * centre**2 + 2 * np.asarray(reach, dtype=float) ** 2)
    sd = np.sqrt(spread / (total * (total + 1)))
    point = sd == 0
    unit = np.where(point, 1.0, sd)
    left = np.where(point, centre < -rope, special.ndtr((-rope - centre) / unit))
    right = np.where(point, centre > rope, special.ndtr((centre - rope) / unit))
    return left, 1 - left - right, right


def eval_binary(scores_a, scores_b, rope: float, concentration: float = PRIOR_ALPHA) -> tuple[float, float, float]:
    """The :class:`Posterior` of ``eval-binary`` at a look (pass = 1, fail = 0): the evaluation family's Dirichlet
    over the paired 2×2 table (:func:`..families.evals.models.pass_fail_draws`)."""
    draws = pass_fail_draws(scores_a, scores_b, alpha=concentration, draws=LOOK_DRAWS, seed=LOOK_SEED)
    return sides(draws.difference, rope)


def eval_continuous(scores_a, scores_b, rope: float) -> tuple[float, float, float]:
    """The :class:`Posterior` of ``eval-continuous`` at a look: the evaluation family's Bayesian bootstrap of the
    paired items with its prior (:func:`..families.evals.models.continuous_draws`)."""
    draws = continuous_draws(scores_a, scores_b, draws=LOOK_DRAWS, seed=LOOK_SEED)
    return sides(draws.difference, rope)


#: The evaluation tests' posteriors at a look: the evaluation family's models (``compare_evaluations``'), drawn.
EVAL_POSTERIORS = {"eval-binary": eval_binary, "eval-continuous": eval_continuous}


def posterior_for(design: Design) -> Posterior:
    """The :class:`Posterior` of a design's test (not ``hierarchical``'s: a Stan fit).  For ``correlated-t`` the
    scores are per fold, run-major, and the posterior is the product's correlated t-test's (ρ from the design)."""
    if design.test == "correlated-t":
        return partial(_correlated_t, rho=design.correlation)
    if design.test == "hierarchical":
        raise ValueError("the hierarchical test's posterior is a Stan fit, which this package does not hold: pass it "
                         "(pipeline.watchhier.stan_posterior)")
    if design.test == "eval-binary":
        return partial(EVAL_POSTERIORS["eval-binary"], concentration=design.prior_concentration)
    return EVAL_POSTERIORS[design.test]


def _correlated_t(scores_a, scores_b, rope: float, rho: float) -> tuple[float, float, float]:
    posterior = formula.correlated_t_posterior(np.asarray(scores_a, float) - np.asarray(scores_b, float), rho)
    return formula.correlated_t_masses(*posterior, rope)
