"""The paired models of evaluation runs (``families/evals/models.py``) against independent references: the 2×2
Dirichlet's probabilities by numerical integration over its Beta marginals, its Beta marginals, the mid-p value of
McNemar's exact test, a paired frequentist bootstrap, the moments of a Dirichlet-weighted mean (every kind, items and
clusters), and the Bayesian bootstrap's mean and variance (Rubin 1981)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from mlflow_bayescompare.families.evals.kinds import Kind
from mlflow_bayescompare.families.evals.models import continuous_draws, ordinal_draws, paired_draws, pass_fail_draws
from mlflow_bayescompare.vocabulary.errors import InputError

DRAWS = 100_000


def paired_table(n11: int, n10: int, n01: int, n00: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-item pass (1) / fail (0) of A and B making the paired 2×2 table (A's result first)."""
    a = np.r_[np.ones(n11 + n10), np.zeros(n01 + n00)]
    b = np.r_[np.ones(n11), np.zeros(n10), np.ones(n01), np.zeros(n00)]
    return a, b


def p_above(n10: int, n01: int, rest: int, alpha: float, rope: float) -> float:
    """P(p01 − p10 > rope) under (p01, p10, p_same) ~ Dirichlet(n01 + α, n10 + α, rest + 2α), by quadrature:
    p10 ~ Beta(b, a + c), and given p10 = t, p01 / (1 − t) ~ Beta(a, c)."""
    a, b, c = n01 + alpha, n10 + alpha, rest + 2 * alpha
    inner = lambda t: stats.beta.pdf(t, b, a + c) * stats.beta.sf((t + rope) / (1 - t), a, c)
    return integrate.quad(inner, 0, (1 - rope) / 2, epsabs=1e-10, limit=200)[0]


def dirichlet_moments(shapes: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Mean and variance of Σ p_j v_j for p ~ Dirichlet(shapes): μ = Σ a_j v_j / A and
    Var = Σ a_j (v_j − μ)² / (A (A + 1))."""
    total = shapes.sum()
    mean = (shapes * values).sum() / total
    return mean, (shapes * (values - mean) ** 2).sum() / (total * (total + 1))


TABLES = [(30, 3, 9, 8), (5, 0, 3, 2), (10, 1, 7, 2), (40, 6, 6, 48)]


@pytest.mark.parametrize("table", TABLES)
def test_the_2x2_dirichlet_equals_its_integral(table):
    """P(B − A > rope) and P(B − A < −rope) of the draws against the quadrature of the Dirichlet at α = 1, within
    5 Monte Carlo standard errors; on the small tables the prior α = 1/2 is further from the draws than that (the
    test would catch it)."""
    n11, n10, n01, n00 = table
    draws = pass_fail_draws(*paired_table(*table), draws=DRAWS, seed=1).difference
    same = n11 + n00
    for rope in (0.0, 0.01, 0.05):
        for drawn, exact, other in (
                ((draws > rope).mean(), p_above(n10, n01, same, 1.0, rope), p_above(n10, n01, same, .5, rope)),
                ((draws < -rope).mean(), p_above(n01, n10, same, 1.0, rope), p_above(n01, n10, same, .5, rope))):
            tolerance = 5 * np.sqrt(max(exact * (1 - exact), 1e-4) / DRAWS)
            assert drawn == pytest.approx(exact, abs=tolerance)
            if table != (40, 6, 6, 48) and rope == 0.0:
                assert abs(other - drawn) > tolerance


@pytest.mark.parametrize("table", TABLES)
def test_the_2x2_dirichlet_at_rope_0_is_mcnemars_mid_p(table):
    """With α = 1, P(p01 < p10) = P(Beta(n01 + 1, n10 + 1) < 1/2) is exactly the one-sided mid-p value of McNemar's
    exact test, P(X > n01) + P(X = n01)/2, X ~ Binomial(n01 + n10, 1/2); the draws agree.  Exact McNemar's p-value is
    larger by P(X = n01)/2 (its discreteness): the Bayesian answer decides a little more readily."""
    n11, n10, n01, n00 = table
    m = n01 + n10
    mid_p = stats.binom.sf(n01, m, 0.5) + 0.5 * stats.binom.pmf(n01, m, 0.5)
    assert stats.beta.cdf(0.5, n01 + 1, n10 + 1) == pytest.approx(mid_p, abs=1e-12)
    draws = pass_fail_draws(*paired_table(*table), draws=DRAWS, seed=2).difference
    assert (draws < 0).mean() == pytest.approx(mid_p, abs=5 * np.sqrt(max(mid_p * (1 - mid_p), 1e-4) / DRAWS))
    exact_p = stats.binomtest(n01, m, 0.5, alternative="greater").pvalue
    assert exact_p - mid_p == pytest.approx(0.5 * stats.binom.pmf(n01, m, 0.5), abs=1e-12)


def resampled(rng: np.random.Generator, n11: int, n10: int, n01: int, n00: int, times: int = 20_000) -> np.ndarray:
    """The paired (percentile) bootstrap of B − A: items resampled with replacement, counted by cell."""
    n = n11 + n10 + n01 + n00
    counts = rng.multinomial(n, np.array([n11 + n00, n10, n01]) / n, size=times)
    return (counts[:, 2] - counts[:, 1]) / n


def test_where_the_paired_bootstrap_differs_and_where_it_agrees():
    """B passes 3 items A fails, never the reverse, 47 ties (50 items): the percentile paired bootstrap never
    resamples a sign it has not seen, so P*(B − A <= 0) = (47/50)^50 = 0.045 calls B better at 5%; McNemar's exact
    one-sided p is 0.125 and the posterior P(B better) = 1 − 0.5^4 = 0.9375 < 0.95: undecided, as three discordant
    items warrant.  With many discordant items (n10 = 40, n01 = 70 of 500) the three agree to 0.001."""
    rng = np.random.default_rng(3)
    boot = resampled(rng, 20, 0, 3, 27)
    assert (boot <= 0).mean() == pytest.approx((47 / 50) ** 50, abs=0.005) and (boot <= 0).mean() < 0.05
    assert stats.binomtest(3, 3, 0.5, alternative="greater").pvalue == 0.125
    draws = pass_fail_draws(*paired_table(20, 0, 3, 27), draws=DRAWS, seed=4).difference
    assert (draws > 0).mean() == pytest.approx(1 - 0.5**4, abs=0.004) and (draws > 0).mean() < 0.95
    a, b = paired_table(300, 40, 70, 90)
    boot = resampled(rng, 300, 40, 70, 90)
    mcnemar = stats.binomtest(70, 110, 0.5, alternative="greater").pvalue
    posterior = (pass_fail_draws(a, b, draws=DRAWS, seed=5).difference <= 0).mean()
    assert (boot <= 0).mean() == pytest.approx(posterior, abs=0.001) and posterior == pytest.approx(mcnemar, abs=0.001)


def test_the_pass_rates_have_their_beta_marginals():
    """A's pass rate p11 + p10 ~ Beta(n11 + n10 + 2α, n01 + n00 + 2α), B's p11 + p01 likewise (the Dirichlet's
    aggregation property): Kolmogorov-Smirnov distance of the draws below its 1% critical value."""
    n11, n10, n01, n00 = 12, 4, 9, 5
    draws = pass_fail_draws(*paired_table(n11, n10, n01, n00), draws=20_000, seed=6)
    for drawn, (passed, failed) in ((draws.mean_a, (n11 + n10, n01 + n00)), (draws.mean_b, (n11 + n01, n10 + n00))):
        distance = stats.kstest(drawn, stats.beta(passed + 2, failed + 2).cdf).statistic
        assert distance < 1.63 / np.sqrt(len(drawn))


def test_the_bayesian_bootstrap_has_rubins_mean_and_variance():
    """Without pseudo-observations (α = 0), the posterior of the mean of n values has mean x̄ and variance
    (1/(n + 1)) (1/n) Σ (x − x̄)² (Rubin 1981, Sec. 2), on items and on clusters of equal size (the ratio estimator
    is then the Bayesian bootstrap of the clusters' means)."""
    rng = np.random.default_rng(7)
    x = rng.gamma(2.0, size=30)
    drawn = continuous_draws(np.zeros(30), x, alpha=0, draws=DRAWS, seed=8).difference
    n = len(x)
    assert drawn.mean() == pytest.approx(x.mean(), abs=5 * x.std() / np.sqrt(n * DRAWS))
    assert drawn.var() == pytest.approx(((x - x.mean()) ** 2).sum() / (n * (n + 1)), rel=0.02)
    clusters = np.repeat(np.arange(6), 5)
    means = x.reshape(6, 5).mean(axis=1)
    drawn = continuous_draws(np.zeros(30), x, clusters, alpha=0, draws=DRAWS, seed=9).difference
    assert drawn.var() == pytest.approx(((means - means.mean()) ** 2).sum() / (6 * 7), rel=0.02)


def test_every_kind_has_the_moments_of_its_dirichlet():
    """Items and pseudo-observations together are one Dirichlet, so the mean difference's mean and variance are
    the closed form of a Dirichlet-weighted mean: pass/fail (α per cell of the 2×2 table), ordinal 1-5 (4α spread
    over the 25 cells of the joint table), continuous (α at each corner of the square of side R, the largest
    difference), and over equal clusters with pseudo-clusters of their size."""
    rng = np.random.default_rng(10)
    a5, b5 = rng.integers(1, 6, size=(2, 40)).astype(float)
    ordinal_cells = np.subtract.outer(np.arange(1, 6), np.arange(1, 6)).ravel() * -1.0
    x = rng.normal(0.2, 1.0, size=(2, 40))
    reach = np.abs(x[1] - x[0]).max()
    cases = [
        (pass_fail_draws(*paired_table(11, 3, 8, 18), draws=DRAWS, seed=11), np.r_[np.zeros(29), -np.ones(3),
         np.ones(8)], np.full(4, 1.0), np.array([0.0, 1, -1, 0])),
        (ordinal_draws(a5, b5, range(1, 6), draws=DRAWS, seed=12), b5 - a5, np.full(25, 4 / 25), ordinal_cells),
        (continuous_draws(*x, draws=DRAWS, seed=13), x[1] - x[0], np.full(4, 1.0), np.array([0, reach, -reach, 0])),
    ]
    for draws, d, prior_shapes, prior_values in cases:
        mean, var = dirichlet_moments(np.r_[np.ones(len(d)), prior_shapes], np.r_[d, prior_values])
        assert draws.difference.mean() == pytest.approx(mean, abs=5 * np.sqrt(var / DRAWS))
        assert draws.difference.var() == pytest.approx(var, rel=0.025)
    clusters = np.repeat(np.arange(8), 5)
    d = (b5 - a5).reshape(8, 5).mean(axis=1)
    drawn = ordinal_draws(a5, b5, range(1, 6), clusters, draws=DRAWS, seed=14).difference
    mean, var = dirichlet_moments(np.r_[np.ones(8), np.full(25, 4 / 25)], np.r_[d, ordinal_cells])
    assert drawn.mean() == pytest.approx(mean, abs=5 * np.sqrt(var / DRAWS))
    assert drawn.var() == pytest.approx(var, rel=0.025)


def test_superiority_counts_ties_half():
    """P(B better on an item) + ½ P(tie): its posterior mean is (n_B + n_tie/2 + 2α) / (n + 4α) (the pseudo-
    observations are symmetric); with lower-is-better a lower B counts as better."""
    a, b = paired_table(11, 3, 8, 18)
    draws = pass_fail_draws(a, b, draws=DRAWS, seed=15)
    expected = (8 + 29 / 2 + 2) / (40 + 4)
    assert draws.superiority.mean() == pytest.approx(expected, abs=0.002)
    lower = pass_fail_draws(a, b, greater_is_better=False, draws=DRAWS, seed=15)
    assert lower.superiority.mean() == pytest.approx((3 + 29 / 2 + 2) / 44, abs=0.002)


def test_a_two_level_scale_is_the_pass_fail_model_and_the_log_scale_a_ratio():
    """An ordinal scale of two levels is the 2×2 table (the same draws from one seed); the log scale's difference
    is the log of the ratio of the geometric means, its posterior mean (with α = 0) their log-ratio."""
    a, b = paired_table(9, 2, 6, 3)
    assert np.array_equal(ordinal_draws(a, b, (0, 1), seed=16).difference, pass_fail_draws(a, b, seed=16).difference)
    rng = np.random.default_rng(17)
    slow, fast = rng.lognormal(0.0, 0.4, 50), rng.lognormal(-0.2, 0.4, 50)
    drawn = continuous_draws(slow, fast, log=True, alpha=0, draws=DRAWS, seed=18).difference
    ratio = np.exp(np.log(fast).mean()) / np.exp(np.log(slow).mean())
    assert np.exp(drawn.mean()) == pytest.approx(ratio, rel=0.002)
    with pytest.raises(InputError, match="positive"):
        continuous_draws(slow, fast - 2, log=True)


def test_missing_values_leave_their_item_out_and_equal_scores_give_a_point_mass():
    """An item with a missing value (NaN) is left out of the table (the moments of the table without it);
    identical values on every item give a point mass at 0 without pseudo-observations (α = 0), and with them a
    symmetric posterior centred on 0."""
    a, b = paired_table(10, 2, 5, 3)
    drawn = pass_fail_draws(np.r_[a, np.nan, 1.0], np.r_[b, 1.0, np.nan], draws=DRAWS, seed=19).difference
    mean, var = dirichlet_moments(np.r_[np.ones(20), np.ones(4)], np.r_[b - a, 0, 1, -1, 0])
    assert drawn.mean() == pytest.approx(mean, abs=5 * np.sqrt(var / DRAWS))
    assert drawn.var() == pytest.approx(var, rel=0.025)
    same = np.ones(20)
    assert np.all(paired_draws(same, same, Kind("continuous", True), alpha=0, seed=20).difference == 0)
    drawn = pass_fail_draws(same, same, draws=DRAWS, seed=21).difference
    assert abs(drawn.mean()) < 0.002 and (drawn > 0).mean() == pytest.approx((drawn < 0).mean(), abs=0.01)
