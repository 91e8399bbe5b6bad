"""The paper's real-data results (Sec. "Sensitivity analysis on real-world data sets", Table
"posterior-hier-jua", hierarchical column) reproduced on its own per-fold data, seeded, default backend.

Orientation of the paper's table: for the pair "A–B", x = acc(A) − acc(B), *left* means B is more accurate.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlflow_bayescompare import hierarchical_test

DATA = Path(__file__).parent / "data" / "uci_classification.csv"
NAMES = {1: "nbc", 2: "aode", 3: "hnb", 4: "j48", 5: "j48gr"}
# pair: (left, rope, right) of the hierarchical model with the paper's priors, and the signed-rank p-value
PAPER = {
    ("nbc", "hnb"): ((1.00, 0.00, 0.00), 0.00),
    ("nbc", "j48"): ((0.80, 0.02, 0.18), 0.46),
    ("nbc", "j48gr"): ((0.84, 0.02, 0.14), 0.39),
    ("hnb", "j48"): ((0.03, 0.10, 0.87), 0.07),
    ("hnb", "j48gr"): ((0.03, 0.07, 0.90), 0.08),
    ("j48", "j48gr"): ((0.00, 1.00, 0.00), 0.00),
}


@pytest.fixture(scope="module")
def accuracies():
    df = pd.read_csv(DATA).sort_values(["ClassifierID", "DatasetID", "Key.Run", "Key.Fold"])
    return {NAMES[c]: g["Percent.correct"].to_numpy().reshape(54, 100) for c, g in df.groupby("ClassifierID")}


@pytest.mark.parametrize("pair", list(PAPER), ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.slow
def test_reproduces_paper_table(accuracies, pair):
    a, b = pair
    (left, rope, right), signed_rank = PAPER[pair]
    res = hierarchical_test(accuracies[a], accuracies[b], rope=0.01, folds=10, seed=2017, model_a=a, model_b=b)
    assert res.p_left == pytest.approx(left, abs=0.03)
    assert res.p_rope == pytest.approx(rope, abs=0.03)
    assert res.p_right == pytest.approx(right, abs=0.03)
    assert res.p_left + res.p_rope + res.p_right == pytest.approx(1.0)
    # greater is better: right is "a better"
    assert (res.p_a_better, res.p_b_better) == (res.p_right, res.p_left)
    assert res.signed_rank_p == pytest.approx(signed_rank, abs=0.01)
    # split R-hat maximised over ~60 parameters fluctuates by about ±0.005 at 4000 well-mixed draws.  j48-j48gr
    # is the exception: ν ≈ 1.2 and σ0 tiny make some δ_i bimodal (shrunk to δ0, or left at their own mean), so
    # chains may disagree by a few hundredths; the result must then say so.
    rhat = res.diagnostics["rhat_max"]
    assert rhat <= (1.06 if pair == ("j48", "j48gr") else 1.015)
    assert (rhat > 1.01) == any("R-hat" in w for w in res.diagnostics["warnings"])
    assert res.diagnostics["divergences"] == 0
    assert len(res.shrinkage) == 54 and res.shrinkage["dataset"].is_unique
    # shrinkage estimates stay within the range of the MLEs and pull towards the centre
    mle, shrunk = res.shrinkage["mle"], res.shrinkage["shrunk"]
    assert shrunk.std() <= mle.std() + 1e-9


def test_same_seed_same_result_and_lower_is_better_flips(accuracies):
    a, b = accuracies["nbc"][:10], accuracies["hnb"][:10]
    kwargs = dict(rope=0.01, folds=10, seed=5, chains=2, draws=400, warmup=400)
    first = hierarchical_test(a, b, **kwargs)
    again = hierarchical_test(a, b, **kwargs)
    assert first.to_dict() == {**again.to_dict(), "diagnostics": first.to_dict()["diagnostics"]}
    np.testing.assert_array_equal(first.draws["delta0"], again.draws["delta0"])
    # errors instead of accuracies: 1 - acc; lower is better; the same conclusion within Monte-Carlo error (800 draws)
    errors = hierarchical_test(1 - a, 1 - b, greater_is_better=False, **kwargs)
    assert errors.p_a_better == pytest.approx(first.p_a_better, abs=0.07)
    assert errors.p_b_better == pytest.approx(first.p_b_better, abs=0.07)
    assert (errors.p_left, errors.p_right) == (errors.p_a_better, errors.p_b_better)
