"""The posteriors a look reads (mlflow_bayescompare.sequential.posteriors): the correlated t-test's from sufficient
statistics equal the engine's; the paired 2x2 Dirichlet's closed-form masses (the simulation's) against adaptive
quadrature of the same integral, against Dirichlet draws (which check the reduction to one integral) and against the
evaluation family's own draws (what a look reads); the Bayesian bootstrap's Normal with the family's prior against
the family's draws, and Rubin's own moments without it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from mlflow_bayescompare import correlated_t_test
from mlflow_bayescompare.families.evals.models import continuous_draws, pass_fail_draws
from mlflow_bayescompare.families.evals.result import sides
from mlflow_bayescompare.sequential.design import Design
from mlflow_bayescompare.sequential.posteriors import (
    EVAL_POSTERIORS,
    LOOK_DRAWS,
    LOOK_SEED,
    bootstrap_masses,
    correlated_t_masses,
    eval_binary,
    eval_continuous,
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
        closed = paired_binary_masses(np.sum(a > b), np.sum(a < b), len(a), 1.0, rope)
        np.testing.assert_allclose(closed, drawn, atol=0.003)  # 4 draw-SEs at most
        # the evaluation family's model is this posterior: its draws (200 000 of them) agree to 4 SEs
        family = sides(pass_fail_draws(a, b, draws=200_000, seed=3).difference, rope)
        np.testing.assert_allclose(closed, family, atol=0.0045)


def test_vectorised_masses_equal_one_at_a_time_and_a_table_with_no_disagreement_is_no_difference():
    rng = np.random.default_rng(2)
    wins, losses = rng.binomial(300, 0.1, (40, 5)), rng.binomial(300, 0.08, (40, 5))
    together = np.array(paired_binary_masses(wins, losses, 300, 1.0, 0.02))
    alone = np.array([[paired_binary_masses(w, lo, 300, 1.0, 0.02) for w, lo in zip(rw, rl)]
                      for rw, rl in zip(wins, losses)])
    np.testing.assert_array_equal(together, np.moveaxis(alone, -1, 0))
    left, middle, right = paired_binary_masses(0, 0, 500, 1.0, 0.02)
    assert left == right and middle > 0.99


def test_the_bootstrap_masses_are_the_evaluation_familys_posterior():
    """The closed form the simulation reads, Normal with the two exact moments of the family's Bayesian bootstrap
    with its prior (4 pseudo-observations at 0, 0, ±R), against the family's own draws (what a look reads) at n = 200
    differences of skewness 1.4 (the Normal misses the skew by up to 0.012 there) and at n = 20, where the prior
    weighs; without the prior (alpha=0) the moments are Rubin's, d̄ and σ̂²/(n + 1), against Dirichlet(1, …, 1)
    weights drawn."""
    rng = np.random.default_rng(5)
    for n, tolerance in ((200, 0.015), (20, 0.03)):
        d = np.clip(rng.gamma(2.0, 0.05, n) - 0.08, -1, 1)
        a = np.clip(0.5 + d / 2, 0, 1)
        b = a - d
        drawn = -continuous_draws(a, b, draws=200_000, seed=1).difference  # the family draws B − A
        closed_mean = n * d.mean() / (n + 4)
        assert drawn.mean() == pytest.approx(closed_mean, abs=4 * drawn.std() / np.sqrt(200_000))
        for rope in (0.005, 0.02, 0.03):
            closed = bootstrap_masses(n, d.mean(), d.var(), np.abs(d).max(), rope)
            np.testing.assert_allclose(closed, sides(-drawn, rope), atol=tolerance)
    d = np.clip(rng.gamma(2.0, 0.05, 200) - 0.08, -1, 1)
    means = rng.dirichlet(np.ones(200), 100_000) @ d
    assert means.var() == pytest.approx(d.var() / 201, rel=0.02)
    rubin = bootstrap_masses(200, d.mean(), d.var(), np.abs(d).max(), 0.02, alpha=0)
    np.testing.assert_allclose(rubin, sides(-means, 0.02), atol=0.015)
    np.testing.assert_array_equal(bootstrap_masses(10, 0.05, 0.0, 0.05, 0.02, alpha=0), (0, 0, 1))  # a point mass


def test_a_look_reads_the_evaluation_familys_draws_from_a_fixed_seed():
    """What a look reads for the evaluation tests is the family's posterior itself, drawn from LOOK_SEED, so an
    earlier look read again gives the same probabilities; the design's prior reaches the pass/fail model."""
    rng = np.random.default_rng(8)
    a = rng.binomial(1, 0.7, 300)
    b = np.where(rng.random(300) < 0.85, a, 1 - a)
    family = sides(pass_fail_draws(a, b, alpha=0.5, draws=LOOK_DRAWS, seed=LOOK_SEED).difference, 0.02)
    design = Design(test="eval-binary", min_size=100, max_size=300, planning_sd=0.4, rope=0.02,
                    prior_concentration=0.5)
    assert posterior_for(design)(a, b, 0.02) == family == eval_binary(a, b, 0.02, 0.5)
    assert EVAL_POSTERIORS == {"eval-binary": eval_binary, "eval-continuous": eval_continuous}
    x, y = rng.random(300), rng.random(300)
    assert eval_continuous(x, y, 0.02) == eval_continuous(x, y, 0.02)
    closed = bootstrap_masses(300, (x - y).mean(), (x - y).var(), np.abs(x - y).max(), 0.02)
    np.testing.assert_allclose(eval_continuous(x, y, 0.02), closed, atol=0.03)  # 4000 draws: ±0.008 each
