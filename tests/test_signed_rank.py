"""The Bayesian signed-rank test (Benavoli et al., JMLR 2017): against baycomp on the paper's data, its limits, its
orientation and its inputs.  baycomp is a test-only oracle (the ``test`` extra)."""

from __future__ import annotations

import json
import logging
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from servers import require_module

from mlflow_bayescompare.families.hierarchical import plots
from mlflow_bayescompare.families.signed_rank import report
from mlflow_bayescompare.families.signed_rank.engine import (
    PRIOR_STRENGTH,
    SignedRankResult,
    signed_rank_test,
    walsh_regions,
)
from mlflow_bayescompare.scores.tensor import from_arrays
from mlflow_bayescompare.shared.markdown import escape as md_escape
from mlflow_bayescompare.vocabulary.errors import InputError

baycomp = require_module("baycomp", "baycomp is the test's oracle (pip install baycomp)")

NAMES = {1: "nbc", 2: "aode", 3: "hnb", 4: "j48", 5: "j48gr"}
ROPE = 0.01
SAMPLES = 50_000  # baycomp's default; ours: 4 chains × 12 500 draws


@pytest.fixture(scope="module")
def means(uci) -> pd.DataFrame:
    """The paper's per-dataset mean accuracies (10 × 10-fold CV), one column per classifier."""
    return uci.groupby(["DatasetID", "ClassifierID"])["Percent.correct"].mean().unstack().rename(columns=NAMES)


def tolerance(p: float, q: float) -> float:
    """Four standard errors of the difference of two independent Monte-Carlo estimates of one probability from
    ``SAMPLES`` draws each, sd √(p(1 − p)(2 / SAMPLES)), with p at least 1 / SAMPLES: at most 0.013 (p = 0.5)."""
    p = min(max((p + q) / 2, 1 / SAMPLES), 1 - 1 / SAMPLES)
    return 4 * np.sqrt(p * (1 - p) * 2 / SAMPLES)


# ---------------------------------------------------------------------------------------------- baycomp


@pytest.mark.parametrize("a, b", list(combinations(NAMES.values(), 2)))
def test_probabilities_match_baycomp_on_the_paper_data(means, a, b):
    """All 10 pairs of the paper's five classifiers, on their 54 per-dataset means."""
    ours = signed_rank_test(means[a], means[b], model_a=a, model_b=b, rope=ROPE, seed=1, chains=4, draws=12_500)
    # baycomp's left is "its first argument better" (it works on y - x): x = b, y = a is our x = a - b
    theirs = baycomp.SignedRankTest.probs(means[b].to_numpy(), means[a].to_numpy(), rope=ROPE, nsamples=SAMPLES,
                                          random_state=2)
    assert ours.settings["samples"] == SAMPLES and ours.settings["prior_strength"] == PRIOR_STRENGTH
    for mine, reference in zip((ours.p_left, ours.p_rope, ours.p_right), theirs):
        assert abs(mine - reference) <= tolerance(mine, reference), (a, b, mine, reference)
    if (a, b) == ("nbc", "hnb"):
        assert ours.decision == "b_better" and ours.p_b_better > 0.99
    if (a, b) == ("j48", "j48gr"):
        assert ours.decision == "equivalent" and ours.p_rope == 1.0


@pytest.mark.parametrize("prior", [PRIOR_STRENGTH, 1.0])
def test_same_dirichlet_weights_give_baycomps_samples(means, prior):
    """With baycomp's own Dirichlet draws, the sampled (θ_left, θ_rope, θ_right) agree to rounding, including
    Walsh averages exactly on the rope's edge (counted half)."""
    diffs = np.r_[(means["nbc"] - means["j48"]).to_numpy(), 0.02, 0.01, -0.01, -0.02]
    assert np.any(diffs[:, None] + diffs[None, :] == 2 * ROPE)
    weights = np.random.RandomState(7).dirichlet(np.r_[prior, np.ones(diffs.size)], 3000)
    reference = baycomp.SignedRankTest.sample(np.zeros_like(diffs), diffs, rope=ROPE, prior=prior, nsamples=3000,
                                              random_state=7)
    np.testing.assert_allclose(walsh_regions(diffs, ROPE, weights), reference, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------- limits


def test_equal_scores_and_differences_inside_the_rope_give_the_rope(caplog):
    zero = signed_rank_test(diffs=np.zeros(8), seed=1)
    assert (zero.p_left, zero.p_rope, zero.p_right) == (0.0, 1.0, 0.0)
    assert np.all(zero.next_probs[:, 1] == 1) and zero.decision == "equivalent"
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        inside = signed_rank_test(diffs=np.linspace(-ROPE, ROPE, 9), seed=1)
    assert inside.p_rope == 1.0
    assert any("every mean difference is inside the rope" in w for w in inside.diagnostics["warnings"])
    assert any("every mean difference is inside the rope" in r.getMessage() for r in caplog.records)


def test_differences_beyond_the_rope_closed_form():
    """All z_i > 2r: every Walsh average but the prior's (z_0 + z_0)/2 = 0 is right of the rope, so
    θ_rope = w_0², θ_right = 1 − w_0² and P(rope) = P(w_0 > 1/√2), w_0 ~ Beta(s, q)."""
    samples = 200_000
    for q, s in ((2, PRIOR_STRENGTH), (3, 1.0)):
        res = signed_rank_test(diffs=np.linspace(0.03, 0.3, q), seed=3, chains=2, draws=samples // 2,
                               prior_strength=s)
        exact = stats.beta(s, q).sf(1 / np.sqrt(2))
        assert res.p_left == 0 and abs(res.p_rope - exact) < 4 * np.sqrt(exact * (1 - exact) / samples)
        assert any("only" in w and "datasets" in w for w in res.diagnostics["warnings"])
    many = signed_rank_test(diffs=-np.linspace(0.05, 0.2, 20), seed=1)
    assert many.p_left == 1.0 and many.decision == "b_better" and many.diagnostics["warnings"] == []


def test_lower_is_better_swaps_a_and_b_exactly(means):
    kwargs = dict(model_a="nbc", model_b="j48", rope=ROPE, seed=5)
    higher = signed_rank_test(means["nbc"], means["j48"], **kwargs)
    lower = signed_rank_test(means["nbc"], means["j48"], greater_is_better=False, **kwargs)
    assert (lower.p_left, lower.p_rope, lower.p_right) == (higher.p_left, higher.p_rope, higher.p_right)
    assert (lower.p_a_better, lower.p_b_better) == (higher.p_b_better, higher.p_a_better)
    assert lower.odds["a_better/b_better"] == pytest.approx(1 / higher.odds["a_better/b_better"])
    assert higher.decision == "inconclusive" and "j48 better is the most probable" in higher.verdict
    assert "nbc better is the most probable" in lower.verdict
    flipped = {"a_better": "b_better", "rope": "rope", "b_better": "a_better"}
    assert lower.datasets["outcome"].tolist() == higher.datasets["outcome"].map(flipped).tolist()


# ---------------------------------------------------------------------------------------------- result and inputs


def test_result_shape_seed_and_json(means):
    res = signed_rank_test(means["hnb"], means["j48"], datasets=means.index, model_a="hnb", model_b="j48")
    assert isinstance(res, SignedRankResult) and res.test == "signed-rank"
    assert res.next_probs.shape == (4000, 3) and np.allclose(res.next_probs.sum(axis=1), 1)
    assert sum(res.probabilities.values()) == pytest.approx(1)
    again = signed_rank_test(means["hnb"], means["j48"], datasets=means.index, model_a="hnb", model_b="j48",
                             seed=res.settings["seed"])
    assert np.array_equal(again.next_probs, res.next_probs)
    table = res.datasets
    assert list(table.columns) == ["dataset", "score_a", "score_b", "diff", "outcome"] and len(table) == 54
    np.testing.assert_allclose(table["diff"], means["hnb"] - means["j48"])
    out = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert set(out) == {"test", "model_a", "model_b", "greater_is_better", "rope", "p_a_better", "p_rope",
                        "p_b_better", "p_left", "p_right", "verdict", "decision", "odds", "evidence",
                        "signed_rank_p", "diagnostics", "settings", "datasets"}
    assert out["settings"]["test"] == "signed-rank" and out["datasets"][0]["dataset"] == "1"
    assert 0 < out["signed_rank_p"] < 1 and out["diagnostics"]["mc_se_max"] < 0.008
    assert plots.plot_simplex(res).axes  # the samples are the points of the probability simplex


def test_the_description_escapes_the_odds_once(means):
    """The odds' names in the run description are escaped once for Markdown: ``a_better`` shows as written, not as
    the text ``a&#95;better`` (escaped twice, the entity's own ``&`` escaped again)."""
    res = signed_rank_test(means["hnb"], means["j48"], datasets=means.index, model_a="hnb", model_b="j48")
    markdown = str(report.render_markdown(res, "accuracy"))
    assert f"| {md_escape('a_better/b_better')} |" in markdown and "&amp;#" not in markdown


def test_the_means_table_writes_each_column_with_one_number_of_decimals(means):
    """The per-dataset means of the report (the run description's table and the HTML page's): the two models' means
    with one number of decimals, the differences with one, no exponent and no negative zero."""
    res = signed_rank_test(means["hnb"], means["j48"], datasets=means.index, model_a="hnb", model_b="j48")
    markdown = str(report.render_markdown(res, "accuracy"))
    table = markdown[markdown.index("| dataset | hnb | j48 | difference |"):].split("\n\n")[0].splitlines()[2:]
    rows = [[cell.strip() for cell in line.strip("|").split("|")[1:]] for line in table]
    assert len(rows) == len(means)
    decimals = [{len(row[column].rpartition(".")[2]) for row in rows} for column in range(3)]
    assert decimals[0] == decimals[1] and len(decimals[0]) == len(decimals[2]) == 1, decimals
    assert not [row for row in rows if any("e" in cell or cell.startswith("-0.0") and float(cell) == 0
                                            for cell in row)]


def test_diffs_tensors_and_means_give_one_answer(means):
    a, b = means["nbc"].to_numpy(), means["aode"].to_numpy()
    by_scores = signed_rank_test(a, b, seed=2)
    by_diffs = signed_rank_test(diffs=a - b, seed=2)
    assert by_diffs.datasets["score_a"].isna().all()
    # a per-fold tensor is averaged per dataset: two folds whose mean is the dataset's score
    tensor = from_arrays(np.column_stack([a - 0.01, a + 0.01]), np.column_stack([b, b]), folds=2)
    by_tensor = signed_rank_test(tensor, seed=2)
    for res in (by_diffs, by_tensor):
        assert (res.p_left, res.p_rope, res.p_right) == pytest.approx((by_scores.p_left, by_scores.p_rope,
                                                                      by_scores.p_right), abs=1e-12)


def test_bad_inputs_are_named_at_once():
    with pytest.raises(InputError) as e:
        signed_rank_test([0.8, np.nan, 0.7, 0.9], [0.7, 0.7, np.inf, 0.8], datasets=["a", "b", "c", "d"],
                         model_a="rf", model_b="svm")
    assert e.value.problems == ["dataset 'b': score of 'rf' is nan", "dataset 'c': score of 'svm' is inf"]
    with pytest.raises(InputError, match=r"1 dataset \('iris'\): the signed-rank test .* needs at least 2"):
        signed_rank_test([0.9], [0.8], datasets=["iris"])
    with pytest.raises(InputError) as e:
        signed_rank_test(np.ones((3, 10)), [0.8, 0.7, 0.6], model_a="m", model_b="m")
    assert e.value.problems == [
        "scores_a must be 1-D, one score per dataset; got shape (3, 10) (for per-fold scores use hierarchical_test, "
        "or pass a CVTensor to average its folds)", "model_a and model_b are both 'm'; compare two different models"]
    with pytest.raises(InputError) as e:
        signed_rank_test([0.8, 0.7, 0.6], [0.8, 0.7], datasets=["x", "x"])
    assert e.value.problems == ["scores_a has 3 datasets but scores_b has 2", "datasets has 2 names for 3 datasets"]
    with pytest.raises(InputError, match="prior_strength must be a finite number > 0"):
        signed_rank_test(diffs=[0.1, 0.2], prior_strength=0)
    with pytest.raises(InputError, match="rope"):
        signed_rank_test(diffs=[0.1, 0.2], rope=-1)
