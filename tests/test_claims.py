"""The claims a result can be required to support (:mod:`mlflow_bayescompare.vocabulary.claims`): each claim's
probability, the decision at the threshold (a probability equal to the threshold supports the claim), the claims a
ranking model answers, and the words of the reports."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlflow_bayescompare import correlated_t_test, rank_models, require
from mlflow_bayescompare.families import RANKING_MODELS
from mlflow_bayescompare.vocabulary import claims
from mlflow_bayescompare.vocabulary.errors import InputError

PROBABILITIES = {"p_a_better": 0.7, "p_rope": 0.25, "p_b_better": 0.05}


def test_a_probability_equal_to_the_threshold_supports_the_claim():
    assert claims.Report("a-better", 0.95, 0.95).supported
    assert not claims.Report("a-better", float(np.nextafter(0.95, 0)), 0.95).supported
    assert claims.Report("a-better", 0.95, 0.95).line() == "Claim 'a-better': probability 0.950 ≥ 0.95 → supported"
    below = claims.Report("best=rf", 0.9, 0.95)
    assert below.line() == "Claim 'best=rf': probability 0.900 < 0.95 → NOT supported"
    assert below.failure() == "claim 'best=rf' not supported: P(best) is 0.900 < 0.95"


def test_require_on_a_result_holds_at_its_own_probability():
    """The public ``require`` on a real result (the correlated t-test: closed form): a threshold equal to the claim's
    probability holds, the next float above it does not."""
    rng = np.random.default_rng(1)
    fold = rng.normal(0.8, 0.03, 20)
    res = correlated_t_test(fold + 0.01 + rng.normal(0, 0.01, 20), fold + rng.normal(0, 0.01, 20), folds=10)
    p = claims.probability(res, "not-worse")
    assert 0.5 < p < 1 and p == pytest.approx(res.p_a_better + res.p_rope)
    assert require(res, "not-worse", threshold=p) and not require(res, "not-worse", threshold=np.nextafter(p, 1))


def test_a_comparisons_claims_add_up_its_outcomes():
    assert claims.probability(PROBABILITIES, "a-better") == 0.7
    assert claims.probability(PROBABILITIES, "not-worse") == pytest.approx(0.95)
    assert claims.probability(PROBABILITIES, "equivalent") == 0.25
    with pytest.raises(InputError, match="unknown claim 'b-better': choose one of a-better, not-worse, equivalent"):
        claims.probability(PROBABILITIES, "b-better")
    checked = claims.reports(PROBABILITIES, "not-worse", 0.95)
    assert checked[None].supported and claims.reports_dict(checked)["supported"] is True


def test_a_rankings_claims_read_its_table_and_name_its_models():
    rng = np.random.default_rng(2)
    fold = rng.normal(0.8, 0.02, 10)
    shifts = (("rf", 0.03), ("svm", 0.0), ("knn", -0.03))
    frame = pd.DataFrame({m: fold + s + rng.normal(0, 0.01, 10) for m, s in shifts})
    res = rank_models(frame.assign(db="one"), dataset="db", folds=10, seed=1)  # the joint model: closed form
    p_best = dict(zip(res.ranking["model"], res.ranking["p_best"]))
    assert claims.probability(res, " best = rf ") == p_best["rf"]
    with pytest.raises(InputError, match="claim 'none-better=rf' needs the hierarchical model's ranking"):
        claims.probability(res, "none-better=rf")
    with pytest.raises(InputError, match="--require best=xgb: no such model among rf, svm, knn"):
        claims.probability(res, "best=xgb")
    with pytest.raises(InputError, match="expected best=MODEL or none-better=MODEL or not-worse-than-best=MODEL"):
        claims.best_claim("best")


@pytest.mark.parametrize("claim", ["best=rf", "none-better=rf", "not-worse-than-best=rf"])
@pytest.mark.parametrize("model", list(RANKING_MODELS))
def test_a_ranking_model_answers_the_claims_of_its_row(claim, model):
    answered = RANKING_MODELS[model].claims
    if claim.partition("=")[0] + "=" in answered:
        claims.check_answered(claim, model, answered)
    else:
        with pytest.raises(InputError, match=f"needs the hierarchical model's ranking .*ranked by {model}"):
            claims.check_answered(claim, model, answered)
    assert "best=" in answered
