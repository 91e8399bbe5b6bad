"""The posteriors a look reads (mlflow_bayescompare.sequential.posteriors): the correlated t-test's from sufficient
statistics equal the engine's; the paired 2x2 Dirichlet's masses against adaptive quadrature of the same integral
and against Dirichlet draws (which check the reduction to one integral); the Bayesian bootstrap's Normal stand-in
against the bootstrap's own draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from mlflow_bayescompare import correlated_t_test
from mlflow_bayescompare.sequential.design import Design
from mlflow_bayescompare.sequential.posteriors import (
    bayesian_bootstrap,
    bootstrap_masses,
    correlated_t_masses,
    paired_binary,
    paired_binary_masses,
    posterior_for,
)


def test_the_correlated_t_masses_from_sufficient_statistics_are_the_engines():
    rng = np.random.default_rng(4)
    for folds, repeats, shift, rope in ((10, 3, 0.01, 0.01), (5, 1, -0.02, 0.005), (2, 10, 0.0, 0.02)):
        x = shift + rng.normal(0, 0.02, folds * repeats)
        engine = correlated_t_test(diffs=x, folds=folds, rope=rope)
        ours = correlated_t_masses(len(x), x.mean(), x.var(ddof=1), 1 / folds, rope)
        np.testing.assert_allclose(ours, (engine.p_left, engine.p_rope, engine.p_right), rtol=0, atol=1e-12)
        design = Design(test="correlated-t", folds=folds, min_size=1, max_size=repeats, planning_sd=0.02, rope=rope)
        assert posterior_for(design)(x, np.zeros_like(x), rope) == (engine.p_left, engine.p_rope, engine.p_right)


def _quad_beyond(a: float, b: float, c: float, rope: float) -> float:
    """P(p_A-only − p_B-only > rope) under Dirichlet(a, b, c): ∫ P(U > (1 + r/s)/2) f_S(s) ds by adaptive quadrature."""
    def integrand(s):
        return stats.beta.sf((1 + rope / s) / 2, a, b) * stats.beta.pdf(s, a + b, c)
    mode = min(max((a + b) / (a + b + c), rope * 1.0001), 0.9999)
    return integrate.quad(integrand, rope, 1, points=[mode], epsabs=1e-13, epsrel=1e-11, limit=500)[0]


@pytest.mark.parametrize("wins, losses, items, concentration, rope", [
    (3, 1, 10, 1.0, 0.05), (30, 20, 200, 1.0, 0.03), (310, 280, 3000, 1.0, 0.02), (0, 0, 5, 0.5, 0.1),
    (100, 2, 150, 1.0, 0.3), (3, 2, 5, 0.5, 0.02), (14, 16, 30, 0.5, 0.1), (1000, 900, 20000, 2.0, 0.01),
])
def test_the_paired_binary_masses_equal_adaptive_quadrature(wins, losses, items, concentration, rope):
    """Both sides (the left by the Beta's symmetry), from a few items to thousands, priors below and above 1."""
    left, middle, right = paired_binary_masses(wins, losses, items, concentration, rope)
    a, b, c = concentration + wins, concentration + losses, 2 * concentration + items - wins - losses
    assert float(right) == pytest.approx(_quad_beyond(a, b, c, rope), abs=1e-7)
    assert float(left) == pytest.approx(_quad_beyond(b, a, c, rope), abs=1e-7)
    assert float(left + middle + right) == pytest.approx(1, abs=1e-12)


def test_the_paired_binary_masses_equal_dirichlet_draws():
    """The reduction to one integral (aggregation and neutrality of the Dirichlet) against draws of the whole
    4-cell table: the 2x2 counts of two models' pass/fail, A − B = A-only − B-only."""
    rng = np.random.default_rng(11)
    a = rng.binomial(1, 0.7, 120)
    b = np.where(rng.random(120) < 0.8, a, 1 - a)
    table = [np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0)), np.sum((a == 0) & (b == 1)),
             np.sum((a == 0) & (b == 0))]
    draws = rng.dirichlet(np.array(table) + 1.0, 400_000)
    delta = draws[:, 1] - draws[:, 2]
    for rope in (0.01, 0.04):
        drawn = ((delta < -rope).mean(), (np.abs(delta) <= rope).mean(), (delta > rope).mean())
        np.testing.assert_allclose(paired_binary(a, b, rope), drawn, atol=0.003)  # 4 draw-SEs at most


def test_vectorised_masses_equal_one_at_a_time_and_a_table_with_no_disagreement_is_no_difference():
    rng = np.random.default_rng(2)
    wins, losses = rng.binomial(300, 0.1, (40, 5)), rng.binomial(300, 0.08, (40, 5))
    together = np.array(paired_binary_masses(wins, losses, 300, 1.0, 0.02))
    alone = np.array([[paired_binary_masses(w, lo, 300, 1.0, 0.02) for w, lo in zip(rw, rl)]
                      for rw, rl in zip(wins, losses)])
    np.testing.assert_array_equal(together, np.moveaxis(alone, -1, 0))
    left, middle, right = paired_binary(np.ones(500), np.ones(500), 0.02)
    assert left == right and middle > 0.99


def test_the_bootstrap_stand_in_is_the_bayesian_bootstraps_law():
    """Normal(d̄, σ̂²/(n + 1)) against Rubin's Bayesian bootstrap drawn (Dirichlet(1, …, 1) weights on the items) at
    n = 200 differences of skewness 1.4 (the Normal misses the skew by up to 0.012 there); the two moments are the
    bootstrap's exactly."""
    rng = np.random.default_rng(5)
    d = np.clip(rng.gamma(2.0, 0.05, 200) - 0.08, -1, 1)
    weights = rng.dirichlet(np.ones(200), 100_000)
    means = weights @ d
    assert means.mean() == pytest.approx(d.mean(), abs=2e-4)
    assert means.var() == pytest.approx(d.var() / 201, rel=0.02)
    for rope in (0.005, 0.02, 0.03):
        drawn = ((means < -rope).mean(), (np.abs(means) <= rope).mean(), (means > rope).mean())
        np.testing.assert_allclose(bayesian_bootstrap(d, np.zeros(200), rope), drawn, atol=0.015)
    np.testing.assert_array_equal(bootstrap_masses(10, 0.05, 0.0, 0.02), (0, 0, 1))  # constant: a point mass
