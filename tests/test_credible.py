"""The one credible rule of the rankings (:func:`mlflow_bayescompare.families.ranking.common.credible`, issue 38):
a pair's order is read off the data, so every ranking model calls it credible when its probability reaches
1 − (1 − threshold)/2.  The pairs table's ``credible`` column (``pairs.csv``, the reports) and the pairs the
critical-difference diagram reads (``credible_pairs``) follow it, written out here without ``credible``, on fitted
rankings whose pairs lie on both sides of it (BBT's and the hierarchical model's with a pair between 0.5 and the
level; the joint model's with a pair whose interval leaves 0 but not the rope).  Its calibration, too slow for a
test, is ``benchmarks/bench_pairs.py calibration``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mlflow_bayescompare import rank_models
from mlflow_bayescompare.families.ranking.bbt.result import pair_table
from mlflow_bayescompare.families.ranking.common import CredibleRule, credible, level, rule_words, verdict
from mlflow_bayescompare.simulation import rankings

THRESHOLD = 0.95
LEVEL = 0.975


def _expected_pairs(pairs: pd.DataFrame, held) -> set[frozenset]:
    return {frozenset((b, w)) for b, w, ok in zip(pairs["better"], pairs["worse"], held) if ok}


def test_the_rule_is_the_models_probability_reaching_the_two_sided_level():
    """The level of a pair ordered after the fact is 1 − (1 − threshold)/2 (the level itself holds), whatever the
    model's column."""
    pairs = pd.DataFrame({"p": [0.5, 0.6, 0.9499, 0.95, 0.97, 0.975, 0.99]})
    rule = CredibleRule("p", "words")
    assert credible(pairs, rule, THRESHOLD).tolist() == [False, False, False, False, False, True, True]
    assert (level(0.95), level(0.9), rule.level(0.8)) == (pytest.approx(LEVEL), pytest.approx(0.95), pytest.approx(0.9))
    assert rule_words(THRESHOLD) == "P(better) ≥ 0.975 (two-sided at 0.95: the order was read off the data)"


def test_the_hierarchical_verdict_against_a_reference_reads_better_and_worse_two_sided():
    # better and worse are on offer on both sides of a pair: each at 0.975; equivalent, not-worse and not-better
    # at the threshold itself
    assert verdict(0.97, 0.02, 0.01, THRESHOLD) == "not-worse"
    assert verdict(0.98, 0.01, 0.01, THRESHOLD) == "better"
    assert verdict(0.01, 0.02, 0.97, THRESHOLD) == "not-better"
    assert verdict(0.01, 0.01, 0.98, THRESHOLD) == "worse"
    assert verdict(0.02, 0.96, 0.02, THRESHOLD) == "equivalent"
    assert verdict(0.5, 0.2, 0.3, THRESHOLD) == "undecided"


# ------------------------------------------------------------------------------------------------ the joint model


def _one_dataset(greater_is_better: bool = True) -> pd.DataFrame:
    """Four models on the ten folds of one dataset: a − b ≈ 0.014 (its interval leaves 0, not the rope 0.01), a, b and
    c far above d."""
    rng = np.random.default_rng(0)
    fold = rng.normal(0.8, 0.02, 10)
    shifts = {"a": 0.05, "b": 0.034, "c": 0.03, "d": 0.0}
    sign = 1 if greater_is_better else -1
    return pd.DataFrame({m: sign * (fold + s + rng.normal(0, 0.004, 10)) for m, s in shifts.items()}).assign(db="one")


@pytest.mark.parametrize("greater_is_better", [True, False])
def test_the_joint_models_credible_pairs_have_their_interval_beyond_the_rope(greater_is_better):
    rope = 0.01
    res = rank_models(_one_dataset(greater_is_better), dataset="db", folds=10, metric_rope=rope, seed=1,
                      greater_is_better=greater_is_better)
    assert res.model == "joint-t"
    pairs, df = res.pairs, res.settings["n"] - 1
    for threshold in (THRESHOLD, 0.8):
        low, high = stats.t.interval(threshold, df, loc=pairs["difference"], scale=pairs["scale"])
        held = (low > rope) if greater_is_better else (high < -rope)
        if threshold == THRESHOLD:
            assert pairs["credible"].tolist() == held.tolist()
        assert res.credible_pairs(threshold) == _expected_pairs(pairs, held), threshold
    a_b = pairs.set_index(["better", "worse"]).loc[("a", "b")]
    hdi = stats.t.interval(THRESHOLD, df, loc=a_b["difference"], scale=a_b["scale"])
    sign = 1 if greater_is_better else -1
    assert 0 < min(sign * np.array(hdi)) < rope and not a_b["credible"]  # leaves 0, reaches into the rope
    assert a_b["p_better"] > THRESHOLD  # a one-sided P(better) at the threshold would call it credible
    assert pairs["credible"].tolist() == (pairs["p_better"] >= LEVEL).tolist()
    assert pairs["credible"].sum() >= 3 and frozenset(("a", "b")) not in res.credible_pairs()
    assert res.not_credible_rule(THRESHOLD) == f"the 95% HDI of their difference reaches into the rope ±{rope:g}"


# ------------------------------------------------------------------------------------------------ BBT


@pytest.fixture(scope="module")
def bbt():
    """bbtcomp's worked example (tests/data/README.md), as tests/test_ranking.py reads it, with fewer draws."""
    ss = pd.read_csv(Path(__file__).parent / "data" / "wainer_ll.csv").iloc[:80, :6]
    return rank_models(ss, dataset="db", seed=1, model="bbt", draws=500, warmup=500)


def test_bbts_credible_pairs_are_above_half_at_the_level(bbt):
    pairs = bbt.pairs
    between = (pairs["p_above_half"] > 0.5) & (pairs["p_above_half"] < LEVEL)
    assert between.sum() >= 2 and (pairs["p_above_half"] >= LEVEL).sum() >= 2  # pairs on both sides
    assert pairs["credible"].tolist() == (pairs["p_above_half"] >= LEVEL).tolist()
    for threshold in (THRESHOLD, 0.8, 0.99):
        assert bbt.credible_pairs(threshold) == _expected_pairs(pairs, pairs["p_above_half"] >= 1 - (1 - threshold) / 2)
    assert bbt.not_credible_rule(THRESHOLD) == "P(P(win) > 0.5) < 0.975"


def test_bbts_pairs_table_holds_a_pair_between_the_threshold_and_the_level_not_credible():
    # strengths whose draws put P(P(win) > 0.5) of m1 over m2 at 0.96 and of m1 over m3 at 0.99: the one-sided
    # reading (≥ 0.95) would call both credible, the rule only the second
    n = 10_000
    rng = np.random.default_rng(0)
    first = np.where(np.arange(n) < 0.96 * n, 1.0, -1.0)
    second = np.where(np.arange(n) < 0.99 * n, 3.0, -1.0)
    beta = np.stack([first + second, second, np.zeros(n)], axis=-1)[rng.permutation(n)][None]
    rows = pair_table({"beta": beta}, ["m1", "m2", "m3"], ["m1", "m2", "m3"], (0.45, 0.55), 0.95,
                      THRESHOLD).set_index(["better", "worse"])
    assert rows.loc[("m1", "m2"), "p_above_half"] == pytest.approx(0.96) and not rows.loc[("m1", "m2"), "credible"]
    assert rows.loc[("m1", "m3"), "p_above_half"] == pytest.approx(0.99) and rows.loc[("m1", "m3"), "credible"]


# ------------------------------------------------------------------------------------------------ hierarchical


@pytest.mark.slow  # the hierarchical model of four models on eight datasets, sampled
def test_the_hierarchical_models_credible_pairs_have_p_better_at_the_level():
    scenario = rankings.Scenario(means=(0.02, 0.01, 0.0, -0.02), datasets=8, folds=5)
    res = rank_models(rankings.scores(scenario, np.random.default_rng(5)), seed=2, draws=500, warmup=500, chains=2)
    assert res.model == "hierarchical"
    pairs = res.pairs
    between = (pairs["p_better"] > 0.5) & (pairs["p_better"] < LEVEL)
    assert between.any() and (pairs["p_better"] >= LEVEL).any()  # pairs on both sides
    assert pairs["credible"].tolist() == (pairs["p_better"] >= LEVEL).tolist()
    for threshold in (THRESHOLD, 0.7):
        assert res.credible_pairs(threshold) == _expected_pairs(pairs, pairs["p_better"] >= 1 - (1 - threshold) / 2)
    assert res.not_credible_rule(THRESHOLD) == f"P(better by more than ±{res.settings['metric_rope']:g}) < 0.975"


def test_the_diagram_reads_the_rule_not_a_copy(bbt):
    """The diagram's pairs follow the pairs table's probabilities (a table changed after the fit, as a cached or
    edited result would be), not a credible column kept beside them."""
    changed = bbt.pairs.assign(p_above_half=np.linspace(0.55, 1.0, len(bbt.pairs)))
    res = dataclasses.replace(bbt, pairs=changed)
    assert res.credible_pairs() == _expected_pairs(changed, changed["p_above_half"] >= LEVEL)
