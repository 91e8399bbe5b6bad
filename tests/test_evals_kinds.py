"""The kinds of score (``families/evals/kinds.py``): detected from the values, declared, turned into numbers by
MLflow's own pass rule, and every unusable value refused with its scorer and item named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mlflow.genai.evaluation.entities import _assertion_outcome

from mlflow_bayescompare.families.evals.kinds import as_numbers, detect, is_resource, passes
from mlflow_bayescompare.vocabulary.errors import InputError


def where(i: int) -> str:
    return f"item 'q{i}'"


def kind_of(values, scorer="score", declared=None, direction=None):
    series = pd.Series(values, dtype=object)
    kind = detect(series, scorer, where, declared, direction)
    return kind, as_numbers(series, kind, scorer, where)


@pytest.mark.parametrize("values, name, levels, numbers", [
    ([True, False, np.bool_(True), None], "pass_fail", (0, 1), [1, 0, 1, np.nan]),
    (["Yes", "no ", "PASS", "fail", "true", "False"], "pass_fail", (0, 1), [1, 0, 1, 0, 1, 0]),
    ([True, "no", False, "yes"], "pass_fail", (0, 1), [1, 0, 0, 1]),
    ([0, 1, 1.0, np.nan], "pass_fail", (0, 1), [0, 1, 1, np.nan]),
    ([1, 5, 3, np.int64(2)], "ordinal", (1, 2, 3, 4, 5), [1, 5, 3, 2]),
    (["4", " 2", 3], "ordinal", (2, 3, 4), [4, 2, 3]),
    ([0, 10, 7], "ordinal", tuple(range(11)), [0, 10, 7]),
    ([0, 11, 7], "continuous", None, [0, 11, 7]),
    ([3, 3, 3], "continuous", None, [3, 3, 3]),
    ([0.25, 0.9, 1.0], "continuous", None, [0.25, 0.9, 1.0]),
])
def test_kinds_are_detected_from_the_values(values, name, levels, numbers):
    kind, x = kind_of(values)
    assert (kind.name, kind.levels, kind.greater_is_better) == (name, levels, True)
    np.testing.assert_array_equal(x, numbers)


def test_a_resource_is_compared_on_the_log_scale_lower_being_better():
    """``latency``, ``execution_duration``, ``total_tokens``, ``cost_usd``: positive numbers on the log scale, lower
    is better (each overridable); a non-positive value makes it continuous; ``timeliness`` is no resource."""
    for scorer in ("latency", "execution_duration", "total_tokens", "cost_usd", "Latency/mean"):
        kind, x = kind_of([0.5, 2.0, 120], scorer)
        assert (kind.name, kind.greater_is_better) == ("log", False) and is_resource(scorer)
        np.testing.assert_allclose(x, np.log([0.5, 2.0, 120]))
    assert kind_of([0.0, 2.0, 120], "latency")[0].name == "continuous"
    assert not is_resource("timeliness")
    assert kind_of([0.5, 2.0], "latency", "continuous", "higher")[0].greater_is_better


def test_declared_kinds_override_detection():
    """A numeric score declared pass_fail passes at >= 0.5 (MLflow's judges' rule); declared levels order
    categories (any case) or widen a numeric scale; ``ordinal`` alone takes the observed integer levels."""
    kind, x = kind_of([0.2, 0.5, 0.49999, 0.93], declared="pass_fail")
    np.testing.assert_array_equal(x, [0, 1, 0, 1])
    kind, x = kind_of(["Rude", "polite", "neutral"], declared=["rude", "neutral", "polite"])
    assert kind.levels == ("rude", "neutral", "polite") and kind.span == 2
    np.testing.assert_array_equal(x, [1, 3, 2])
    kind, x = kind_of([2, 3, 4], declared=[1, 2, 3, 4, 5])
    assert kind.span == 4 and kind.default_rope == pytest.approx(0.04)
    assert kind_of([2, 4], declared="ordinal")[0].levels == (2, 3, 4)


def test_the_pass_rule_agrees_with_mlflows_where_mlflow_decides():
    """MLflow's ``EvaluationResult.passed`` (its ``_assertion_outcome``) decides booleans and yes/no: the same
    answers; MLflow's judges pass a probability at 0.5 and above."""
    for value in (True, False, np.bool_(True), np.bool_(False), "yes", "no", " Yes ", "NO"):
        assert passes(value) == _assertion_outcome(value, None, None, None)[0]
    assert passes(0.5) is True and passes(0.4999) is False and passes("pass") is True and passes("fail") is False
    assert passes("maybe") is None and passes(None) is None


@pytest.mark.parametrize("values, declared, message", [
    (["yes", "maybe", "no"], None, r"scorer 'score': categories with no known order, 'maybe' at item 'q1'"),
    ([True, 0.3, False], None, r"mixes bool and number values \(True at item 'q0' and 1 more; 0.3 at item 'q1'\)"),
    ([1, [1, 2], 3], None, r"neither a boolean, a number nor a word, \[1, 2\] at item 'q1'"),
    ([None, np.nan], None, r"scorer 'score' has no value on any item"),
    (["good", "bad", "awful"], ["bad", "good"], r"ordinal levels \['bad', 'good'\], but 'awful' at item 'q2'"),
    ([1, 7, 3], [1, 2, 3, 4, 5], r"but 7 at item 'q1' is not"),
    (["yes", "unsure"], "pass_fail", r"is pass/fail, but 'unsure' at item 'q1' is not"),
    ([1.5, 2.5], "ordinal", r"not integers of at least two levels: declare the levels in order"),
    ([3, 3], "ordinal", r"not integers of at least two levels: declare the levels in order"),
    ([1.5, -2.5], "log", r"is log-scale \(positive numbers\), but -2.5 at item 'q1' is not"),
    ([1, 2], "nominal", r"kind 'nominal' is none of pass_fail, ordinal, continuous, log"),
    ([1, 2], ["one"], r"a list of at least two distinct ordinal levels"),
])
def test_unusable_values_are_refused_naming_scorer_and_item(values, declared, message):
    with pytest.raises(InputError, match=message):
        kind_of(values, declared=declared)


def test_a_direction_must_be_higher_or_lower():
    with pytest.raises(InputError, match="direction must be one of higher, lower; got 'up'"):
        kind_of([1.0, 2.0], direction="up")
