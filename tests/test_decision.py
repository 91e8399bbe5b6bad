"""The rankings' one rule for a credible pair (families/ranking/decision.py, issue 38): the two-sided threshold, the
same in the joint model of one dataset, Bradley-Terry and the hierarchical model of k models, and its calibration
where it is cheap to measure (the joint model, closed form; the hierarchical model's: benchmarks/bench_pairs.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mlflow_bayescompare.families.ranking import decision
from mlflow_bayescompare.families.ranking.engine import rank_models
from mlflow_bayescompare.families.ranking.hierarchical_k_result import verdict
from mlflow_bayescompare.families.ranking.result import pair_table


def test_the_threshold_of_a_pair_ordered_after_the_fact_is_two_sided():
    assert decision.oriented_threshold(0.95) == pytest.approx(0.975)
    assert decision.oriented_threshold(0.9) == pytest.approx(0.95)
    assert list(decision.credible(np.array([0.95, 0.974, 0.975, 0.99]), 0.95)) == [False, False, True, True]
    assert decision.rule_words(0.95).startswith("P(better) ≥ 0.975 (two-sided at 0.95")


def test_bradley_terry_calls_a_pair_credible_by_the_same_rule():
    # strengths whose draws put P(P(win) > 0.5) of m1 over m2 at 0.96 and of m1 over m3 at 0.99: the one-sided
    # reading (≥ 0.95) would call both credible, the rule only the second
    n = 10_000
    rng = np.random.default_rng(0)
    first = np.where(np.arange(n) < 0.96 * n, 1.0, -1.0)
    second = np.where(np.arange(n) < 0.99 * n, 3.0, -1.0)
    beta = np.stack([first + second, second, np.zeros(n)], axis=-1)[rng.permutation(n)][None]
    table = pair_table({"beta": beta}, ["m1", "m2", "m3"], ["m1", "m2", "m3"], (0.45, 0.55), 0.95, 0.95)
    rows = table.set_index(["better", "worse"])
    assert rows.loc[("m1", "m2"), "p_above_half"] == pytest.approx(0.96)
    assert not rows.loc[("m1", "m2"), "credible"]
    assert rows.loc[("m1", "m3"), "p_above_half"] == pytest.approx(0.99) and rows.loc[("m1", "m3"), "credible"]


def test_the_joint_model_of_one_dataset_calls_credible_what_its_hdi_places_beyond_the_rope():
    # on one dataset a pair's posterior is Student-t (the correlated t-test's): P(better) ≥ 0.975 is exactly "the
    # central 95% interval lies beyond the rope", Kruschke's rule; pairs on both sides of the boundary
    rng = np.random.default_rng(5)
    folds = 10
    noise = rng.normal(0, 0.01, (folds, 4))
    shifts = np.array([0.0, 0.0125, 0.0155, 0.03])
    wide = pd.DataFrame(0.8 + shifts + noise, columns=["a", "b", "c", "d"])
    result = rank_models(wide.assign(dataset="one"), dataset="dataset", folds=folds, seed=1, metric_rope=0.005)
    pairs = result.pairs
    t = stats.t(folds - 1, loc=pairs["difference"], scale=pairs["scale"])
    hdi_beyond = t.ppf(0.025) > 0.005
    assert list(pairs["credible"]) == list(hdi_beyond)
    assert list(pairs["credible"]) == list(pairs["p_better"] >= 0.975)
    between = pairs[(pairs["p_better"] >= 0.95) & (pairs["p_better"] < 0.975)]
    assert len(pairs[pairs["credible"]]) and not between.empty and not between["credible"].any()


def test_the_hierarchical_verdict_against_a_reference_reads_better_and_worse_two_sided():
    # better and worse are available on both sides of a pair: each at 0.975; equivalent, not-worse and not-better
    # at the threshold itself
    assert verdict(0.97, 0.02, 0.01, 0.95) == "not-worse"
    assert verdict(0.98, 0.01, 0.01, 0.95) == "better"
    assert verdict(0.01, 0.02, 0.97, 0.95) == "not-better"
    assert verdict(0.02, 0.96, 0.02, 0.95) == "equivalent"
    assert verdict(0.5, 0.2, 0.3, 0.95) == "undecided"
