"""The Bayesian correlated t-test on one dataset (Corani & Benavoli, Machine Learning 2015): against baycomp, the
correlation ρ, scikit-learn's example "Statistical comparison of models using grid search", its limits and inputs,
and its report, figure and run bundle.  baycomp is a test-only oracle (the ``test`` extra); no Stan, no server."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from servers import require_module

from mlflow_bayescompare import CorrelatedTTestResult, correlated_t_test
from mlflow_bayescompare.families.correlated_t import plots, report
from mlflow_bayescompare.families.correlated_t.engine import ODDS_DRAWS
from mlflow_bayescompare.families.correlated_t.run import bundle as correlated_t_bundle
from mlflow_bayescompare.scores.tensor import FOLDS_ONE, from_arrays
from mlflow_bayescompare.shared.figures import figure_png
from mlflow_bayescompare.shared.markdown import escape as md_escape
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError


@pytest.fixture(scope="module")
def baycomp():
    """baycomp, the test-only oracle (the ``test`` extra): where it is missing the tests that read it fail under
    ``MLFLOW_BAYESCOMPARE_REQUIRE_SERVICES=1`` (``.ci/run``), and are skipped elsewhere."""
    return require_module("baycomp", "baycomp, the correlated t-test's oracle, is not installed: pip install -e "
                                      "'.[test]'")


def paired_scores(seed: int, n: int, shift: float, spread: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    """Per-fold scores of two models sharing each fold's difficulty (the folds' correlation), A − B ≈ ``shift``."""
    rng = np.random.default_rng(seed)
    fold = rng.normal(0.8, 0.05, n)
    return fold + shift + rng.normal(0, spread, n), fold + rng.normal(0, spread, n)


# ---------------------------------------------------------------------------------------------- baycomp


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("folds", [2, 5, 10])
@pytest.mark.parametrize("repeats", [1, 3, 10])
def test_equals_baycomps_correlated_t_test(baycomp, seed, folds, repeats):
    """baycomp takes the runs (repeats) and derives ρ = 1/folds from n / runs; it works on y − x, so x = b, y = a is
    our x = a − b.  Its masses and its posterior (mean, variance, df) to 1e-6, on both sides of the rope and inside."""
    n = folds * repeats
    for shift in (-0.03, 0.0, 0.004, 0.02):
        a, b = paired_scores(seed, n, shift)
        for rope in (0.005, 0.01, 0.05):
            for greater in (True, False):
                ours = correlated_t_test(a, b, folds=folds, rope=rope, greater_is_better=greater)
                theirs = baycomp.CorrelatedTTest.probs(b, a, rope=rope, runs=repeats)
                np.testing.assert_allclose((ours.p_left, ours.p_rope, ours.p_right), theirs, rtol=0, atol=1e-6)
                mean, var, df = baycomp.CorrelatedTTest.compute_statistics(b, a, runs=repeats)
                assert (ours.df, ours.loc, ours.scale**2) == pytest.approx((df, mean, var), rel=1e-9, abs=1e-12)
                better = ours.p_a_better if greater else ours.p_b_better  # A better: a − b above the rope
                assert better == pytest.approx(theirs[2], abs=1e-6)


def test_the_correlation_corrects_the_scale():
    """A wrong ρ changes the answer: on 10 × 10-fold scores the scale is s·√(1/n + ρ/(1 − ρ)) with ρ = 1/10, 3.5
    times the uncorrected s/√n (ρ = 0), and the probability of B better with it (from about 1e-7 to 0.06); hold-out
    splits of 90 + 10 give the same ρ."""
    a, b = paired_scores(7, 100, 0.01)
    s = np.std(a - b, ddof=1)
    corrected = correlated_t_test(a, b, folds=10)
    assert corrected.rho == 0.1 and corrected.rho_reason == "1/folds with folds=10"
    assert corrected.scale == pytest.approx(s * np.sqrt(1 / 100 + 1 / 9), rel=1e-12)
    assert corrected.sd == pytest.approx(s, rel=1e-12)
    independent = correlated_t_test(a, b, rho=0)
    assert independent.rho_reason == "given" and independent.scale == pytest.approx(s / 10, rel=1e-12)
    assert corrected.scale / independent.scale == pytest.approx(np.sqrt(1 + 100 / 9))
    assert independent.p_left < 1e-6 and corrected.p_left > 0.05
    holdout = correlated_t_test(a, b, n_train=90, n_test=10)
    assert holdout.rho_reason == "n_test/(n_train+n_test) = 10/(90+10) = 0.1"
    assert (holdout.p_left, holdout.p_rope, holdout.p_right) == pytest.approx(
        (corrected.p_left, corrected.p_rope, corrected.p_right), abs=1e-12)
    given = correlated_t_test(a, b, folds=10, rho=0.25)  # rho overrides folds, as for the hierarchical test
    assert given.rho == 0.25 and given.scale == pytest.approx(s * np.sqrt(1 / 100 + 1 / 3), rel=1e-12)


# ---------------------------------------------------------------------------------------------- scikit-learn


@pytest.fixture(scope="module")
def grid_search_scores() -> dict[str, np.ndarray]:
    """The per-fold ROC AUC of the four SVC candidates of scikit-learn's example "Statistical comparison of models
    using grid search" (examples/model_selection/plot_grid_search_stats.py), regenerated with its seeds: 100 moons
    (noise 0.352, random_state 1), a 10 × 10 RepeatedStratifiedKFold (random_state 0), SVC(random_state=0)."""
    from sklearn.datasets import make_moons
    from sklearn.model_selection import GridSearchCV, RepeatedStratifiedKFold
    from sklearn.svm import SVC

    X, y = make_moons(n_samples=100, noise=0.352, random_state=1)
    cv = RepeatedStratifiedKFold(n_splits=10, n_repeats=10, random_state=0)
    grid = [{"kernel": ["linear"]}, {"kernel": ["poly"], "degree": [2, 3]}, {"kernel": ["rbf"]}]
    search = GridSearchCV(SVC(random_state=0), grid, scoring="roc_auc", cv=cv).fit(X, y)
    results = search.cv_results_
    names = ["_".join(str(v) for v in p.values()) for p in results["params"]]
    return {name: np.array([results[f"split{i}_test_score"][j] for i in range(100)]) for j, name in enumerate(names)}


@pytest.mark.slow  # a 10 x 10 CV grid search of scikit-learn
def test_reproduces_scikit_learns_grid_search_example(grid_search_scores):
    """The numbers the example prints, as scikit-learn's rendered gallery shows them
    (scikit-learn.github.io, dev/_sources/auto_examples/model_selection/plot_grid_search_stats.rst.txt):
    "Probability of rbf being more accurate than linear: 0.773", "... being practically equivalent: 0.432", the
    95% credible interval [-0.016445, 0.036445], and the pairwise table's worse/better/rope probabilities
    (rbf-linear 0.068/0.500/0.432, rbf-3_poly 0.018/0.882/0.100, linear-3_poly 0.063/0.750/0.187).

    Which statistic: the example's posterior is Student-t(n − 1, x̄, (1/n + n_test/n_train) σ̂²) with n = 100
    differences; n_test/n_train = 10/90 is ρ/(1 − ρ) for ρ = n_test/(n_train + n_test) = 1/10 = 1/folds, so it is
    ours with folds=10, no rho= needed.  Its first number is P(μ > 0), without a rope (1 − cdf(0) here); the rope
    probabilities are our three masses with rope 0.01."""
    scores = grid_search_scores
    assert [round(scores[m].mean(), 4) for m in ("rbf", "linear", "3_poly", "2_poly")] == [0.94, 0.93, 0.9044, 0.6852]
    best = correlated_t_test(scores["rbf"], scores["linear"], folds=10, rope=0.01, model_a="rbf", model_b="linear")
    assert 1 - best.cdf(0) == pytest.approx(0.773, abs=0.01)
    assert best.p_rope == pytest.approx(0.432, abs=0.01)
    assert (best.mean_difference["hdi_low"], best.mean_difference["hdi_high"]) == pytest.approx(
        (-0.016445, 0.036445), abs=1e-5)
    printed = {("rbf", "linear"): (0.068, 0.432, 0.500), ("rbf", "3_poly"): (0.018, 0.100, 0.882),
               ("linear", "3_poly"): (0.063, 0.187, 0.750)}
    for (a, b), (worse, rope, better) in printed.items():
        res = correlated_t_test(scores[a], scores[b], folds=10, rope=0.01, model_a=a, model_b=b)
        assert (res.p_b_better, res.p_rope, res.p_a_better) == pytest.approx((worse, rope, better), abs=0.01)
        assert res.decision == "inconclusive"
    assert correlated_t_test(scores["3_poly"], scores["2_poly"], folds=10).decision == "a_better"


# ---------------------------------------------------------------------------------------------- limits and inputs


def test_constant_differences_are_a_point_mass(caplog):
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        res = correlated_t_test(diffs=np.full(10, 0.1), folds=10, model_a="rf", model_b="svm")
    assert (res.p_left, res.p_rope, res.p_right) == (0.0, 0.0, 1.0) and res.decision == "a_better"
    assert res.scale == 0 and res.sd == 0 and res.loc == 0.1
    assert res.mean_difference == {"mean": 0.1, "hdi_low": 0.1, "hdi_high": 0.1}
    assert (res.cdf(0.0999), res.cdf(0.1)) == (0.0, 1.0) and res.nadeau_bengio_p == 0.0
    assert "point mass at 0.1" in res.diagnostics["warnings"][0] and "'rf better'" in res.diagnostics["warnings"][0]
    assert any("zero variance" in r.getMessage() for r in caplog.records)
    json.dumps(res.to_dict(), allow_nan=False)
    inside = correlated_t_test(diffs=np.zeros(6), folds=3)
    assert (inside.p_left, inside.p_rope, inside.p_right) == (0.0, 1.0, 0.0) and inside.decision == "equivalent"
    lower = correlated_t_test(diffs=np.full(4, -0.5), folds=2, greater_is_better=False)
    assert lower.p_a_better == 1.0 and "'A better'" in lower.diagnostics["warnings"][0]
    assert plots.plot_posterior(res).axes


@pytest.mark.parametrize("kwargs, problem", [
    (dict(diffs=[0.02]), "dataset 'dataset 0': 1 score(s); need at least 2"),
    (dict(diffs=[0.1, 0.2, 0.3], folds=2), "dataset 'dataset 0': 3 scores is not a whole number of repeats of 2 folds"),
    (dict(diffs=[0.1, 0.2], folds=1), f"dataset 'dataset 0': folds must be an integer >= 2, got 1 ({FOLDS_ONE})"),
    (dict(diffs=[0.1, 0.2], folds=0), "dataset 'dataset 0': folds must be an integer >= 2, got 0"),
    (dict(scores_a=[0.8, np.nan, 0.7, 0.9], scores_b=[0.7, 0.7, np.inf, 0.8], folds=2, dataset="iris"),
     "dataset 'iris': non-finite score at positions 1-2"),
    (dict(scores_a=[0.8, 0.7, 0.6], scores_b=[0.8, 0.7], folds=3),
     "dataset 'dataset 0': 3 scores for 'A' but 2 for 'B'"),
    (dict(diffs=[0.1, 0.2]), "the number of cross-validation folds is unknown: pass folds=K (ρ = 1/K is the "
                             "correlation between folds), n_train and n_test for repeated hold-out splits, or rho=ρ "
                             "directly"),
    (dict(diffs=np.ones((3, 10)), folds=10), "diffs must be 1-D, the per-fold scores of one dataset; got shape (3, 10) "
                                             "(across datasets use hierarchical_test on the per-fold scores or "
                                             "signed_rank_test on the per-dataset means)"),
    (dict(diffs=[0.1, 0.2], rho=(0.1, 0.2)), "rho has 2 values for 1 dataset"),
    (dict(diffs=[0.1, 0.2], n_train=90), "n_test must be a whole number >= 1 (the size of each split's test set); "
                                         "got None"),
    (dict(diffs=[0.1, 0.2], folds=2, n_train=90, n_test=10), "n_train and n_test describe repeated hold-out splits "
                                                              "and folds=2 k-fold cross-validation: give one"),
])
def test_bad_inputs_are_named(kwargs, problem):
    with pytest.raises(InputError) as e:
        correlated_t_test(**kwargs)
    assert e.value.problems == [problem]
    assert str(e.value).startswith("Cannot run the Bayesian correlated t-test:\n  - ")


def test_rho_out_of_range_and_tensors_of_several_datasets_are_refused():
    with pytest.raises(InputError, match="rho must be a number >= 0 and < 1"):
        correlated_t_test(diffs=[0.1, 0.2], rho=1.0)
    tensor = from_arrays(np.ones((3, 10)), np.zeros((3, 10)), folds=10)
    with pytest.raises(InputError) as e:
        correlated_t_test(tensor, folds=10)
    assert e.value.problems == [
        "the correlated t-test compares two models on one dataset, not 3; across datasets use hierarchical_test on "
        "the per-fold scores or signed_rank_test on the per-dataset means",
        "a CVTensor carries its folds; pass folds= only with arrays"]


def test_tensor_arrays_and_diffs_give_one_answer_and_orientation_swaps():
    a, b = paired_scores(3, 30, 0.012)
    by_scores = correlated_t_test(a, b, folds=10, model_a="rf", model_b="svm", dataset="iris")
    by_diffs = correlated_t_test(diffs=a - b, folds=10)
    by_tensor = correlated_t_test(from_arrays([a], [b], folds=10, datasets=["iris"], model_a="rf", model_b="svm"))
    for res in (by_diffs, by_tensor):
        assert (res.p_left, res.p_rope, res.p_right) == (by_scores.p_left, by_scores.p_rope, by_scores.p_right)
    assert (by_tensor.model_a, by_tensor.dataset, by_tensor.folds) == ("rf", "iris", 10)
    swapped = correlated_t_test(b, a, folds=10, model_a="svm", model_b="rf")
    assert (swapped.p_left, swapped.p_right) == pytest.approx((by_scores.p_right, by_scores.p_left), abs=1e-12)
    lower = correlated_t_test(a, b, folds=10, model_a="rf", model_b="svm", greater_is_better=False)
    assert (lower.p_a_better, lower.p_b_better) == (by_scores.p_b_better, by_scores.p_a_better)
    assert lower.odds["a_better/b_better"] == pytest.approx(1 / by_scores.odds["a_better/b_better"])


def test_result_shape_odds_and_json():
    a, b = paired_scores(4, 50, 0.06)
    res = correlated_t_test(a, b, folds=5, model_a="rf", model_b="svm", dataset="adult", threshold=0.9)
    assert isinstance(res, CorrelatedTTestResult) and res.test == "correlated-t"
    assert res.next_probs.shape == (1, 3) and res.next_probs.sum() == pytest.approx(1)
    assert (res.n, res.folds, res.df) == (50, 5, 49) and res.decision == "a_better" and res.p_a_better > 0.9
    probs = res.probabilities
    expected = (probs["a_better"] * ODDS_DRAWS + 0.5) / (probs["rope"] * ODDS_DRAWS + 0.5)
    assert ODDS_DRAWS == 4000 and res.odds["a_better/rope"] == pytest.approx(expected)
    assert res.evidence["a_better/b_better"].endswith("for a_better")
    assert list(res.scores.columns) == ["dataset", "repeat", "fold", "score_a", "score_b", "diff", "run_id_a",
                                       "run_id_b"]
    assert res.scores["repeat"].max() == 9 and res.scores["fold"].max() == 4
    out = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert set(out) == {"test", "model_a", "model_b", "greater_is_better", "rope", "p_a_better", "p_rope",
                        "p_b_better", "p_left", "p_right", "verdict", "decision", "odds", "evidence", "dataset", "n",
                        "folds", "df", "loc", "scale", "rho", "rho_reason", "sd", "mean_difference",
                        "nadeau_bengio_p", "diagnostics", "settings", "scores"}
    settings = out["settings"]
    assert settings["test"] == "correlated-t" and settings["threshold"] == 0.9 and settings["folds"] == 5
    assert settings["rho_reason"] == "1/folds with folds=5" and "numpy" in settings["versions"]
    assert len(out["scores"]) == 50 and 0 < out["nadeau_bengio_p"] < 0.05


# ---------------------------------------------------------------------------------------------- report, figure, run


def test_report_plot_and_bundle(tmp_path):
    a, b = paired_scores(5, 30, 0.01)
    res = correlated_t_test(a, b, folds=10, model_a="rf", model_b="svm", dataset="iris")
    markdown = str(report.render_markdown(res, "accuracy"))
    assert f"**{md_escape(res.verdict)}**" in markdown
    assert md_escape("ρ = 0.1 (1/folds with folds=10)") in markdown
    assert md_escape("Bayesian correlated t-test (Corani & Benavoli 2015)") in markdown
    assert "| outcome (Bayesian correlated t-test) | probability |" in markdown
    assert "| rf better | " in markdown and "| posterior odds | value | evidence |" in markdown
    png = figure_png(plots.plot_posterior(res))
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    page = report.render_html(res, "accuracy", png)
    assert page.startswith("<!DOCTYPE html>") and 'src="data:image/png;base64,' in page
    assert "<script" not in page and "http" not in page and "<link" not in page
    with correlated_t_bundle(res, metric="accuracy", experiment_ids=["7"], directory=tmp_path / "run") as bundle:
        files = {str(p.relative_to(bundle.directory)) for p in bundle.directory.rglob("*") if p.is_file()}
        assert files == {"report.md", "report.html", "summary.json", "cv_differences.csv", "plots/posterior.png",
                         "plots/posterior.svg"}
        assert json.loads((bundle.directory / "summary.json").read_text())["test"] == "correlated-t"
        assert (bundle.directory / "report.md").read_text() == markdown
    assert bundle.name == "rf vs svm · accuracy"
    assert bundle.tags[T.TEST] == "correlated-t" and bundle.tags[T.KIND] == "comparison"
    assert bundle.tags[T.DECISION] == res.decision and bundle.tags[T.DIAGNOSTICS] == "ok"
    assert bundle.params["rho"] == "0.1" and bundle.params["rho_reason"] == "1/folds with folds=10"
    assert bundle.params["folds"] == "10" and "version.numpy" in bundle.params
    assert bundle.metrics["p_a_better"] == res.p_a_better and bundle.metrics["rho"] == 0.1
    without = correlated_t_bundle(res, metric="accuracy", experiment_ids=["7"], figures=False)
    with without:
        assert not (without.directory / "report.html").exists() and not (without.directory / "plots").exists()
        assert without.tags[T.REPORT] == T.NO_REPORT
