"""The simulated data of the operating characteristics (mlflow_bayescompare.sequential.scenarios) have the
moments their models say: the mean difference is the truth, the spread of the mean and of the differences follow the
correlation of each scenario (the test's equicorrelation, a repeat effect, clusters), and the confidence sequence
covers the right target on them."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_bayescompare.sequential.design import Design
from mlflow_bayescompare.sequential.scenarios import CLUSTER_SIZE, ICC, draw

SD, RHO, REPEATS, FOLDS = 0.02, 0.1, 6, 10


@pytest.mark.parametrize("scenario, shared, repeat", [
    ("assumed", RHO, 0.0), ("repeats", 0.0, RHO), ("misspecified", RHO, RHO * (1 - RHO))])
def test_cross_validation_differences_have_the_scenarios_correlation(scenario, shared, repeat):
    """At the budget (n = 60 folds): Var(x̄) = σ²(shared + repeat/r + rest/n) and E[s²] = n(σ² − Var(x̄))/(n − 1),
    over 20000 runs, to 4 standard errors (s² to 2%; 5% with Student-t(3) noise, whose s² averages slowly); the mean
    is the truth."""
    design = Design(test="correlated-t", folds=FOLDS, min_size=REPEATS, max_size=REPEATS, planning_sd=SD,
                    cs_check=True)
    (n, mean, variance), (low, high, covered) = draw(design, scenario, 0.01, 20_000, np.random.default_rng(1))
    n = REPEATS * FOLDS
    var_mean = SD**2 * (shared + repeat / REPEATS + (1 - shared - repeat) / n)
    assert mean[:, -1].mean() == pytest.approx(0.01, abs=4 * np.sqrt(var_mean / 20_000))
    assert mean[:, -1].var() == pytest.approx(var_mean, rel=4 * np.sqrt(2 / 20_000))
    expected_s2 = n * (SD**2 - var_mean) / (n - 1)
    assert variance[:, -1].mean() == pytest.approx(expected_s2, rel=0.05 if scenario == "misspecified" else 0.02)
    assert covered.mean() >= 0.95


@pytest.mark.parametrize("scenario, spread", [("assumed", 0.015), ("misspecified", 0.0)])
def test_datasets_spread_around_the_truth_as_planned(scenario, spread):
    """hierarchical: each dataset's mean at the budget is δ0 + τz_i plus its correlated-t noise, so over datasets and
    runs Var(x̄_i) = τ² + Var(one dataset's x̄) (the dataset's noise sd σ, or σ times a factor of mean square 1: with
    τ = 0 that factor alone is seen), and the datasets' means are independent; 4000 runs of 5 datasets, to 4
    standard errors (twice that with Student-t noise)."""
    design = Design(test="hierarchical", folds=FOLDS, min_size=REPEATS, max_size=REPEATS, planning_sd=SD,
                    dataset_count=5, planning_spread=spread)
    (n, mean, variance), sequence = draw(design, scenario, 0.01, 4000, np.random.default_rng(5))
    assert mean.shape == variance.shape == (4000, 1, 5) and n.shape == (4000, 1) and sequence == (None,) * 3
    shared, repeat = (RHO, 0.0) if scenario == "assumed" else (RHO, RHO * (1 - RHO))
    var_mean = spread**2 + SD**2 * (shared + repeat / REPEATS + (1 - shared - repeat) / (REPEATS * FOLDS))
    means = mean[:, -1]
    assert means.mean() == pytest.approx(0.01, abs=4 * np.sqrt(var_mean / means.size))
    assert means.var() == pytest.approx(var_mean, rel=4 * np.sqrt(2 / means.size) * (2 if scenario != "assumed"
                                                                                         else 1))
    assert np.corrcoef(means[:, 0], means[:, 1])[0, 1] == pytest.approx(0, abs=4 / np.sqrt(4000))


@pytest.mark.parametrize("scenario", ["iid", "clustered"])
def test_pass_fail_items_disagree_at_the_planned_rate_and_cluster_as_said(scenario):
    """wins − losses over n items has mean nδ and variance n(D − δ²)·(1 + (m − 1)·ICC) (m = 10, ICC = 0.1: the
    design effect 1.9) when clustered, 1 when not; D = planning_sd²."""
    design = Design(test="eval-binary", min_size=1000, max_size=1000, planning_sd=0.5, rope=0.02, cs_check=True)
    (wins, losses, n), (low, high, covered) = draw(design, scenario, 0.04, 10_000, np.random.default_rng(2))
    net, disagree = (wins - losses)[:, -1], 0.25
    effect = 1 + (CLUSTER_SIZE - 1) * ICC if scenario == "clustered" else 1
    assert ((wins + losses)[:, -1] / 1000).mean() == pytest.approx(disagree, abs=0.002)
    assert net.mean() / 1000 == pytest.approx(0.04, abs=0.001)
    assert net.var() / 1000 == pytest.approx((disagree - 0.04**2) * effect, rel=0.06)
    assert covered.mean() >= 0.95


@pytest.mark.parametrize("scenario", ["iid", "clustered"])
def test_continuous_items_have_the_planned_spread_and_cluster_as_said(scenario):
    """n·Var(d̄) = Var(d)·n/(n − 1) + (m − 1)·ICC·σ² with clusters (their effect's covariance), Var(d) without; the
    item variance is σ², less the Student-t(3) tails clipped at the scores' range when clustered (15% at σ = 0.2)."""
    design = Design(test="eval-continuous", min_size=500, max_size=500, planning_sd=0.2, rope=0.02, cs_check=True)
    (n, mean, variance, reach), (low, high, covered) = draw(design, scenario, -0.03, 10_000,
                                                            np.random.default_rng(3))
    within = (CLUSTER_SIZE - 1) * ICC * 0.04 if scenario == "clustered" else 0.0
    assert mean[:, -1].mean() == pytest.approx(-0.03, abs=4 * 0.2 * np.sqrt(2 / 500 / 10_000))
    assert mean[:, -1].var() * 500 == pytest.approx(variance[:, -1].mean() * 500 / 499 + within, rel=0.06)
    assert variance[:, -1].mean() / 0.04 == pytest.approx(0.85 if scenario == "clustered" else 1.0, abs=0.02)
    assert covered.mean() >= 0.95
    # the reach of the family's prior: the largest |difference| so far, within the scores' range
    assert (reach[:, -1] >= np.sqrt(variance[:, -1])).all() and (reach[:, -1] <= 1).all()
