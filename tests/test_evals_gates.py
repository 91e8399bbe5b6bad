"""Gates on compared evaluation runs (``families/evals/gates.py``): one scorer's claim is :func:`.claims.probability`
of its result, about A or (swapped) about B; a claim on several scorers is one joint probability read off the
shared draws; ``require`` and ``require_better`` fail a test with the claims' own message."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlflow_bayescompare.families.evals import check, compare_evaluations, joint_probability, require, require_better
from mlflow_bayescompare.simulation.evals import simulate, to_table
from mlflow_bayescompare.vocabulary import claims
from mlflow_bayescompare.vocabulary.errors import InputError


@pytest.fixture(scope="module")
def comparison():
    """B better on correctness (pass/fail) and a 1-5 rating, a little slower (latency), on 150 items."""
    rng = np.random.default_rng(11)
    frames = []
    for kind, effect in (("pass_fail", 0.6), ("latency", -0.05), ("ordinal", 0.4)):
        values, clusters = simulate(rng, items=150, kind=kind, effect=effect)
        frames.append(to_table(values, clusters, scorer={"pass_fail": "correct"}.get(kind, kind)))
    return compare_evaluations(pd.concat(frames), "A", "B", seed=12, rope={"latency": 0.05})


def test_one_scorers_claim_is_the_claims_probability(comparison):
    for scorer, result in comparison.by_scorer.items():
        for claim in claims.CLAIMS:
            assert joint_probability(comparison, {scorer: claim}, system="A") == pytest.approx(
                claims.probability(result, claim), abs=1e-12)
            swapped = {"p_a_better": result.p_b_better, "p_rope": result.p_rope, "p_b_better": result.p_a_better}
            assert joint_probability(comparison, {scorer: claim}) == pytest.approx(
                claims.probability(swapped, claim), abs=1e-12)


def test_a_joint_claim_is_read_off_the_shared_draws(comparison):
    """P(B better on correctness and not worse on latency) is the share of draws where both hold: within the
    Fréchet bounds of its parts, and not their product (the scorers share the items' weights)."""
    by = comparison.by_scorer
    both = joint_probability(comparison, {"correct": "a-better", "latency": "not-worse"})
    first, second = by["correct"].p_b_better, by["latency"].p_b_better + by["latency"].p_rope
    assert max(0.0, first + second - 1) <= both <= min(first, second)
    direct = ((by["correct"].draws > 0.01) & (by["latency"].draws <= 0.05)).mean()
    assert both == pytest.approx(direct, abs=1e-12)


def test_identical_scorers_share_every_draw():
    """Two continuous scorers with the same values get the same draws (no pseudo-observations differ): their joint
    claim has the probability of either."""
    values, clusters = simulate(np.random.default_rng(13), items=80, kind="continuous", effect=0.2)
    frame = pd.concat([to_table(values, clusters, scorer=name) for name in ("x", "y")])
    result = compare_evaluations(frame, "A", "B", seed=14, alpha=0)
    np.testing.assert_array_equal(result.by_scorer["x"].draws, result.by_scorer["y"].draws)
    assert joint_probability(result, "a-better") == pytest.approx(result.by_scorer["x"].p_b_better)


def test_require_better_passes_and_fails_with_the_claims_message(comparison):
    report = require_better(comparison, not_worse=["correct", "ordinal"], better_on=["correct"])
    assert report.supported and report.claim == ("B vs A: not worse on correct, ordinal; better on at least one "
                                                 "of correct")
    with pytest.raises(AssertionError, match=r"claim 'A vs B: not worse on correct, latency, ordinal; better on at "
                                             r"least one of correct, latency, ordinal' not supported: its probability "
                                             r"is 0.0\d\d < 0.95"):
        require_better(comparison, system="A")
    assert check(comparison, {"ordinal": "equivalent"}, threshold=0.5).threshold == 0.5
    assert require(comparison.by_scorer["correct"], "a-better").probability >= 0.95


@pytest.mark.parametrize("arguments, message", [
    ({"claims": {"correct": "best"}}, "unknown claim 'best' for scorer 'correct'"),
    ({"claims": {"rouge": "not-worse"}}, "scorer 'rouge' is not in the result"),
    ({"claims": "not-worse", "better_on": "correct"}, "better_on is a list of scorers"),
    ({"claims": "not-worse", "system": "C"}, "the claims are about 'C', which is neither 'A' nor 'B'"),
])
def test_bad_claims_are_refused(comparison, arguments, message):
    with pytest.raises(InputError, match=message):
        joint_probability(comparison, **arguments)
