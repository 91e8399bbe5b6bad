"""The hierarchical test's stand-in (mlflow_bayescompare.sequential.standin), which simulates a ``hierarchical``
design's operating characteristics: its quadrature against a brute-force 2-D grid of the same model (Normal random
effects, δ0 flat, σ0 uniform up to 1000·sd(x̄), each dataset's mean known with its Nadeau-Bengio variance), the
offset c(σ0) at which the right area of N(δ0, σ0) overtakes the rope's, and a design's simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mlflow_bayescompare.sequential import Design, operating_characteristics
from mlflow_bayescompare.sequential.standin import standin_masses, winning_offset

ROPE, RHO, N = 0.01, 0.1, 30


def _brute_force(xbar, variances):
    """The same posterior on a dense 2-D grid of (δ0, σ0): δ0 at 2000 midpoints of (-0.1, 0.1), flat where the
    likelihood is; σ0 at 1200 points even in log σ0 from 1e-5 to 0.3 (beyond which the likelihood of 5 datasets
    falls as σ0⁻⁴), weighted σ0 for its flat prior; the winner of the three areas of N(δ0, σ0) found at every node,
    without the stand-in's closed form in δ0, its offset c(σ0) or its quadrature."""
    se2 = variances * (1 / N + RHO / (1 - RHO))
    delta0 = (np.arange(2000) + 0.5) / 2000 * 0.2 - 0.1
    sigma0 = np.exp(np.linspace(np.log(1e-5), np.log(0.3), 1200))[:, None]
    log_like = sum(stats.norm.logpdf(x, delta0, np.sqrt(sigma0**2 + v)) for x, v in zip(xbar, se2))
    weight = np.exp(log_like + np.log(sigma0) - log_like.max())
    weight /= weight.sum()
    left, right = stats.norm.cdf((-ROPE - delta0) / sigma0), stats.norm.sf((ROPE - delta0) / sigma0)
    rope = 1 - left - right
    wins = np.select([(rope > left) & (rope > right), (left > rope) & (left > right)], [1, 0], 2)
    return np.array([weight[wins == k].sum() for k in range(3)])


@pytest.mark.parametrize("centre", [0.0, 0.006, 0.015])
def test_the_quadrature_agrees_with_a_brute_force_grid(centre):
    """Five datasets leave σ0 loosely known, so its prior shows: σ0 ~ 1/σ0 instead of flat moves these masses by
    0.05 to 0.07, far beyond the tolerance (they agree within 0.0003)."""
    rng = np.random.default_rng(7)
    xbar = rng.normal(centre, 0.006, 5)
    variances = rng.uniform(0.5, 2, 5) * 0.02**2
    expected = _brute_force(xbar, variances)
    assert np.array(standin_masses(xbar, variances, N, RHO, ROPE)) == pytest.approx(expected, abs=0.002)


def test_the_offset_is_where_the_right_area_overtakes_the_rope():
    sigma0 = np.array([0.001, 0.005, 0.01, 0.02])
    c = winning_offset(sigma0, ROPE)
    right = stats.norm.sf((ROPE - c) / sigma0)
    rope = stats.norm.cdf((ROPE - c) / sigma0) - stats.norm.cdf((-ROPE - c) / sigma0)
    assert right == pytest.approx(rope, abs=2e-4) and np.all(np.diff(c) < 0)
    # from Φ(rope/σ0) = 2/3 on the rope's area is never the largest: c = 0
    assert winning_offset(np.array([ROPE / 0.43, 0.1]), ROPE) == pytest.approx([0, 0])


def test_paths_and_looks_broadcast_as_one_look_at_a_time():
    rng = np.random.default_rng(3)
    means, variances = rng.normal(0.01, 0.01, (4, 3, 6)), rng.uniform(1e-4, 9e-4, (4, 3, 6))
    counts = np.array([20, 30, 40])[:, None]
    together = standin_masses(means, variances, counts, RHO, ROPE)
    for path in range(4):
        for at, n in enumerate((20, 30, 40)):
            alone = standin_masses(means[path, at], variances[path, at], n, RHO, ROPE)
            assert [side[path, at] for side in together] == pytest.approx(alone, abs=1e-12)


def test_a_hierarchical_design_is_simulated_in_seconds_with_sensible_rates():
    design = Design(test="hierarchical", folds=10, min_size=2, max_size=8, planning_sd=0.03, dataset_count=6,
                    planning_spread=0.005, rope=0.01)
    oc = operating_characteristics(design, replicates=400, seed=1)
    cells = {(c.scenario, c.truth): c for c in oc.cells}
    assert set(oc.scenarios) == {"assumed", "misspecified"} and oc.unit == "repeats"
    # with no difference almost no run says a model is better; with a clear one most say A is
    assert cells[("assumed", "no difference")].answers["a_better"] < 0.02
    assert cells[("assumed", "clear")].answers["a_better"] > 0.5
    assert oc.seconds < 10
