"""One look (mlflow_bayescompare.sequential.look, with the rule of .rule): its probabilities are the correlated
t-test's own at the look's size, its answer the rule's, the first look that decides stays the answer, only whole
repeats and scheduled sizes up to the budget are read, the confidence sequence is shown beside and can gate, another
posterior can be plugged in, and bad data are refused naming where."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_bayescompare import correlated_t_test
from mlflow_bayescompare.sequential import rule
from mlflow_bayescompare.sequential.confseq import confidence_sequence
from mlflow_bayescompare.sequential.design import Design
from mlflow_bayescompare.sequential.look import look
from mlflow_bayescompare.vocabulary.errors import InputError

CV = dict(test="correlated-t", folds=10, min_size=2, max_size=30, planning_sd=0.02, rope=0.01)


def _folds(seed: int, repeats: int, shift: float, sd: float = 0.02, extra: int = 0) -> np.ndarray:
    return shift + np.random.default_rng(seed).normal(0, sd, repeats * 10 + extra)


@pytest.mark.parametrize("greater_is_better", [True, False])
def test_each_look_holds_the_correlated_t_tests_own_probabilities(greater_is_better):
    design = Design(**CV, greater_is_better=greater_is_better, cs_check=False)
    x = _folds(0, 6, 0.004)
    result = look(design, diffs=x)
    assert [r.size for r in result.rows] == list(range(2, 7)) and result.answer == "continue"
    for row in result.rows:
        engine = correlated_t_test(diffs=x[: row.size * 10], folds=10, rope=0.01, greater_is_better=greater_is_better)
        assert (row.p_a_better, row.p_rope, row.p_b_better) == pytest.approx(
            (engine.p_a_better, engine.p_rope, engine.p_b_better), abs=1e-12)
        assert row.bayes_answer == ("continue" if engine.decision == "inconclusive" else engine.decision)


def test_the_first_look_that_decides_is_the_answer_and_later_data_do_not_undo_it():
    design = Design(**CV, cs_check=False)
    x = _folds(1, 12, 0.03)
    first = look(design, diffs=x[:30])
    assert first.answer == "a_better" and first.size == 2 and first.row.p_a_better >= 0.95
    x[30:] = -0.05  # later repeats that would say B is better
    assert look(design, diffs=x).answer == "a_better" and look(design, diffs=x).size == 2


def test_only_whole_repeats_scheduled_sizes_and_the_budget_are_read():
    design = Design(**{**CV, "look_every": 4, "max_size": 10}, cs_check=False)  # looks at 2, 6, 10
    x = _folds(2, 13, 0.0, sd=0.05, extra=7)
    result = look(design, diffs=x)
    assert (result.answer, result.available, [r.size for r in result.rows]) == ("inconclusive", 10, [2, 6, 10])
    assert any("incomplete repeat" in n for n in result.notes) and any("past the budget" in n for n in result.notes)
    early = look(design, diffs=x[:15])
    assert (early.answer, early.size, early.rows, early.row) == ("continue", 0, (), None)
    assert any("the first look is at 2 repeats; the data hold 1" in n for n in early.notes)
    noisy = look(Design(**{**CV, "max_size": 3}, cs_check=False), diffs=_folds(3, 3, 0.0, sd=0.2))
    assert (noisy.answer, noisy.size) == ("inconclusive", 3)  # nothing decided by the budget


def test_the_confidence_sequence_is_shown_beside_and_gate_both_needs_it_to_agree():
    rng = np.random.default_rng(4)
    a = rng.binomial(1, 0.75, 3000)
    b = np.where(rng.random(3000) < 0.7, a, 1 - a) * (rng.random(3000) < 0.9)  # B passes less often
    bayes = Design(test="eval-binary", min_size=100, max_size=3000, look_every=100, planning_sd=0.55, rope=0.02,
                   cs_check=True)
    both = Design(**{**bayes.to_dict(), "gate": "both", "look_at": None, "score_range": (0, 1)})
    alone, gated = look(bayes, a, b), look(both, a, b)
    assert alone.answer == gated.answer == "a_better" and gated.size > alone.size
    row = gated.row
    assert row.bayes_answer == row.cs_answer == "a_better" and row.cs_low > 0.02
    low, high = confidence_sequence(a - b, 0.05, 1.0, bayes.looks[: len(gated.rows)])
    assert (row.cs_low, row.cs_high) == pytest.approx((low[-1], high[-1]))
    assert all(r.cs_answer != "a_better" for r in gated.rows[:-1])
    saved = gated.to_dict()
    assert saved["row"]["size"] == gated.size and len(saved["rows"]) == len(gated.rows)
    assert saved["fingerprint"] == both.fingerprint != bayes.fingerprint


def test_another_posterior_can_be_plugged_in():
    design = Design(test="eval-continuous", min_size=10, max_size=40, look_every=10, planning_sd=0.2, rope=0.05)
    seen = []

    def fixed(scores_a, scores_b, rope):
        seen.append((len(scores_a), rope))
        return (0.0, 0.2, 0.8) if len(scores_a) < 30 else (0.0, 0.01, 0.99)

    result = look(design, np.full(35, 0.6), np.full(35, 0.5), posterior=fixed)
    assert seen == [(10, 0.05), (20, 0.05), (30, 0.05)] and (result.answer, result.size) == ("a_better", 30)


def test_the_rule_decides_at_the_threshold_and_orients_the_answer():
    assert rule.decide(0.01, 0.04, 0.95, 0.95) == rule.RIGHT and rule.decide(0.02, 0.04, 0.94, 0.95) == rule.NONE
    assert rule.decide(0.01, 0.96, 0.03, 0.95) == rule.ROPE
    assert rule.answer_word(rule.RIGHT, False, False) == "b_better" and rule.answer_word(rule.LEFT, True, 0) == \
        "b_better"
    assert [rule.answer_word(rule.NONE, True, at_budget) for at_budget in (False, True)] == ["continue",
                                                                                             "inconclusive"]
    index, side = rule.first_decision(np.array([[0, 0, 2, 3], [0, 0, 0, 0]]))
    assert index.tolist() == [2, 3] and side.tolist() == [rule.ROPE, rule.NONE]


@pytest.mark.parametrize("args, problem", [
    (dict(diffs=[0.1, np.nan] + [0.0] * 18),
     "diffs at repeat 1 fold 2 is nan (each must be finite and within [-1, 1])"),
    (dict(scores_a=[0.5] * 20, scores_b=[0.5] * 19), "scores_a has 20 scores and scores_b 19: they must be paired"),
    (dict(scores_a=[[0.5]] * 20, scores_b=[[0.5]] * 20), "scores_a must be 1-D (one score per fold)"),
    (dict(scores_a=[1.5] + [0.5] * 19, scores_b=[0.5] * 20), "scores_a at repeat 1 fold 1 is 1.5"),
    (dict(scores_a=["x"] * 20, scores_b=[0.5] * 20), "scores_a holds non-numeric values"),
    (dict(scores_a=[0.5] * 20), "give scores_a and scores_b, or diffs"),
])
def test_bad_data_are_refused_naming_where(args, problem):
    with pytest.raises(InputError, match="^Cannot look:") as caught:
        look(Design(**CV), **args)
    assert any(problem in p for p in caught.value.problems), caught.value.problems


def test_pass_fail_items_must_be_passes_or_fails():
    design = Design(test="eval-binary", min_size=2, max_size=10, planning_sd=0.5, rope=0.05)
    with pytest.raises(InputError) as caught:
        look(design, [1, 0, 0.5, 1, 1, 1, 1], [1, 0, 1, 1, 1, 1, 2])
    assert caught.value.problems == ["scores_a at item 3 is 0.5 (each must be pass (1) or fail (0))",
                                     "scores_b at item 7 is 2 (each must be pass (1) or fail (0))"]
