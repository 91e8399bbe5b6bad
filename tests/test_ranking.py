"""The Bayesian Bradley-Terry ranking (Wainer 2023, JMLR 24; package bbtcomp): its worked example, simulations with
known strengths, Stan's log density against the model written out, and bad inputs.

Stan runs for real, seeded; the fits are small (well under a second each once ``stan/bbt.stan`` is compiled).
"""

import dataclasses
import itertools
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats
from scipy.special import expit

from mlflow_bayescompare.families.ranking import plots as ranking_plots
from mlflow_bayescompare.families.ranking.bbt import plots as bbt_plots
from mlflow_bayescompare.families.ranking.bbt.engine import rank_wins, win_table
from mlflow_bayescompare.families.ranking.bbt.result import pair_table
from mlflow_bayescompare.families.ranking.engine import rank_models
from mlflow_bayescompare.families.ranking.scores import read_scores
from mlflow_bayescompare.sampling import programs, pystan_backend
from mlflow_bayescompare.shared.figures import figure_png
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.options import RankOptions

DATA = Path(__file__).parent / "data"

# bbtcomp's README, "Basic use": x <- bbtcomp(ss) with ss <- ll[1:80, 1:6] (paired local ROPE 0.4, ties spread)
WINS_PRE = {  # table_wintable(y$wintable, which = "pre"): alg1 alg2 win1 win2 ties
    ("lgbm", "svm"): (9, 5, 6), ("lgbm", "rf"): (7, 6, 7), ("lgbm", "dt"): (18, 2, 0), ("lgbm", "knn"): (11, 5, 4),
    ("svm", "rf"): (5, 11, 4), ("svm", "dt"): (13, 6, 1), ("svm", "knn"): (9, 3, 8), ("rf", "dt"): (14, 4, 2),
    ("rf", "knn"): (11, 5, 4), ("dt", "knn"): (6, 12, 2),
}
WINS_POST = {  # table_wintable(y$wintable): win1 win2 after "spread"
    ("lgbm", "svm"): (12, 8), ("lgbm", "rf"): (11, 10), ("lgbm", "dt"): (18, 2), ("lgbm", "knn"): (13, 7),
    ("svm", "rf"): (7, 13), ("svm", "dt"): (14, 7), ("svm", "knn"): (13, 7), ("rf", "dt"): (15, 5),
    ("rf", "knn"): (13, 7), ("dt", "knn"): (7, 13),
}
TABLE_PWIN = {  # table_pwin(x): pair -> (mean, above.50, in.rope)
    ("lgbm", "rf"): (0.53, 0.66, 0.49), ("lgbm", "svm"): (0.62, 0.96, 0.16), ("lgbm", "knn"): (0.68, 1.00, 0.02),
    ("lgbm", "dt"): (0.79, 1.00, 0.00), ("rf", "svm"): (0.59, 0.90, 0.26), ("rf", "knn"): (0.66, 0.99, 0.05),
    ("rf", "dt"): (0.77, 1.00, 0.00), ("svm", "knn"): (0.57, 0.85, 0.33), ("svm", "dt"): (0.69, 1.00, 0.02),
    ("knn", "dt"): (0.63, 0.97, 0.11),
}
HDI95 = {  # table_pwin(x, columns = c("median", "low", "high"), hdi = 0.95): pair -> (low, high)
    ("lgbm", "rf"): (0.40, 0.66), ("lgbm", "svm"): (0.48, 0.74), ("lgbm", "knn"): (0.56, 0.80),
    ("lgbm", "dt"): (0.69, 0.89), ("rf", "svm"): (0.47, 0.73), ("rf", "knn"): (0.53, 0.77), ("rf", "dt"): (0.66, 0.86),
    ("svm", "knn"): (0.43, 0.70), ("svm", "dt"): (0.57, 0.81), ("knn", "dt"): (0.50, 0.76),
}


@pytest.fixture(scope="module")
def ll() -> pd.DataFrame:
    """bbtcomp's ll: 4-fold CV of 16 classifiers on 132 datasets (tests/data/README.md)."""
    return pd.read_csv(DATA / "wainer_ll.csv")


@pytest.fixture(scope="module")
def ss(ll) -> pd.DataFrame:
    return ll.iloc[:80, :6]


@pytest.fixture(scope="module")
def worked(ss):
    return rank_models(ss, dataset="db", seed=1, model="bbt")


def _by_pair(table: pd.DataFrame) -> dict:
    return {(r.model_a, r.model_b): r for r in table.itertuples(index=False)}


# ------------------------------------------------------------------------------------------------ worked example


def test_worked_example_win_table_is_bbtcomps_exactly(worked):
    rows = _by_pair(worked.wins)
    assert set(rows) == set(WINS_PRE)
    for pair, (win1, win2, ties) in WINS_PRE.items():
        row = rows[pair]
        assert (row.wins_a, row.wins_b, row.ties) == (win1, win2, ties), pair
        assert (row.wins_a_post, row.wins_b_post, row.ties_post) == (*WINS_POST[pair], 0), pair


def test_worked_example_reproduces_table_pwin(worked):
    pairs = {(r.better, r.worse): r for r in worked.pairs.itertuples(index=False)}
    assert list(zip(worked.pairs["better"], worked.pairs["worse"])) == list(TABLE_PWIN)  # bbtcomp's order too
    for pair, (mean, above, rope) in TABLE_PWIN.items():
        row = pairs[pair]
        assert row.p_win == pytest.approx(mean, abs=0.03), pair
        assert row.p_above_half == pytest.approx(above, abs=0.03), pair
        assert row.p_in_rope == pytest.approx(rope, abs=0.03), pair
    wide = pair_table(worked.draws, worked.models, worked.order, (0.45, 0.55), 0.95, 0.95)
    for row in wide.itertuples(index=False):
        low, high = HDI95[(row.better, row.worse)]
        assert (row.p_win_low, row.p_win_high) == pytest.approx((low, high), abs=0.03)
    assert worked.order == ["lgbm", "rf", "svm", "knn", "dt"]
    d = worked.diagnostics
    assert d["divergences"] == 0 and d["rhat_max"] <= 1.01 and d["ess_bulk_min"] > 1000


def test_worked_example_posterior_predictive_check(worked):
    # table_ppc(y): 0.8, 1.0, 1.0, 1.0 at HDI 0.5, 0.9, 0.95, 1 (10 pairs: one pair either way at 0.5)
    assert list(worked.ppc["hdi"]) == [0.5, 0.9, 0.95, 1.0]
    assert worked.ppc["proportion"].iloc[0] == pytest.approx(0.8, abs=0.1)
    assert list(worked.ppc["proportion"].iloc[1:]) == [1.0, 1.0, 1.0]


def test_result_exports_and_plots(worked):
    out = worked.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["settings"]["seed"] == worked.seed == 1 and out["settings"]["ties"] == "spread"
    assert {"pystan", "arviz"} & set(out["settings"]["versions"])
    ranking = worked.ranking
    assert ranking["p_best"].sum() == pytest.approx(1.0)
    assert ranking["strength"].sum() == pytest.approx(0.0, abs=1e-9)  # the strengths are identified by sum 0
    assert ranking["rank_low"].between(1, 5).all() and (ranking["rank_low"] <= ranking["rank_high"]).all()
    idata = worked.to_inference_data()
    assert {"posterior", "sample_stats", "posterior_predictive", "observed_data"} <= set(idata.groups())
    assert list(idata.posterior["beta"].coords["model"].values) == worked.models
    assert idata.sample_stats["diverging"].dtype == bool
    assert idata.posterior["p_win"].shape[-1] == len(worked.wins)
    figures = bbt_plots.all_figures(worked)
    assert all(isinstance(f, Figure) for f in figures.values())
    assert figure_png(figures["critical_difference"])[:4] == b"\x89PNG"


def _overlapping(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i, j in itertools.combinations(range(len(boxes)), 2) if boxes[i].overlaps(boxes[j])]


def _drawn_ticks(locations, labels, limits) -> list:
    """The tick labels inside the axis's view (matplotlib also lists those just beyond it, which it does not draw)."""
    return [label for at, label in zip(locations, labels) if min(limits) <= at <= max(limits)]


@pytest.mark.slow
def test_plots_stay_readable_with_sixteen_models(ll):
    """All of Wainer's 16 classifiers: on every figure the tick labels of each axis, and the P(win) matrix's cell
    texts, overlap none of their neighbours and stay inside the figure."""
    figures = bbt_plots.all_figures(rank_models(ll, dataset="db", seed=2, skip_missing=True, model="bbt"))
    for name, fig in figures.items():
        canvas = FigureCanvasAgg(fig)
        canvas.draw()  # lays the figure out
        renderer = canvas.get_renderer()
        for ax in fig.axes:
            groups = [_drawn_ticks(ax.get_xticks(), ax.get_xticklabels(), ax.get_xlim()),
                      _drawn_ticks(ax.get_yticks(), ax.get_yticklabels(), ax.get_ylim()), ax.texts]
            for texts in groups:
                boxes = [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text()]
                assert not _overlapping(boxes), (name, [t.get_text() for t in texts][:4])
                assert all(fig.bbox.x0 <= b.x0 and b.x1 <= fig.bbox.x1 and fig.bbox.y0 <= b.y0 and
                           b.y1 <= fig.bbox.y1 for b in boxes), name
        if name != "critical_difference":
            labels = {t.get_text() for ax in fig.axes for t in ax.get_yticklabels()}
            assert set(ll.columns.drop("db")) <= {label.split("  (")[0] for label in labels}, name


def test_indistinct_groups_follow_the_threshold(worked):
    """Bars join the longest runs (by mean rank) whose pairs all have P(P(win) > 0.5) < threshold."""
    order = ["a", "b", "c", "d", "e"]
    credible = {("a", "c"), ("a", "d"), ("a", "e"), ("b", "d"), ("b", "e"), ("c", "e")}
    pairs = pd.DataFrame([{"better": x, "worse": y, "p_above_half": 0.99 if (x, y) in credible else 0.8}
                          for x, y in itertools.combinations(order, 2)])
    ranking = pd.DataFrame({"model": order, "mean_rank": [1.2, 2.0, 2.9, 4.1, 4.8]})
    res = dataclasses.replace(worked, pairs=pairs, ranking=ranking)
    assert ranking_plots.indistinct_groups(res) == [["a", "b"], ["b", "c"], ["c", "d"], ["d", "e"]]
    assert ranking_plots.indistinct_groups(res, threshold=0.999) == [order]
    assert ranking_plots.indistinct_groups(res, threshold=0.5) == []


def test_davidson_ties(ss):
    res = rank_models(ss, dataset="db", seed=2, ties="davidson", draws=500, warmup=500, model="bbt")
    assert (res.wins["ties_post"] == res.wins["ties"]).all()
    assert res.diagnostics["divergences"] == 0
    assert "nu" in res.draws and "ties" in res.ppc and "p_tie" in res.pairs
    # observed tie rate 38/200 = 0.19; the model's P(tie) of each pair is near it
    assert res.pairs["p_tie"].mean() == pytest.approx(0.19, abs=0.03)


# ------------------------------------------------------------------------------------------------ input forms


def test_input_forms_give_the_same_win_table(ss):
    reference = win_table(read_scores(ss, dataset="db"))
    tidy = ss.assign(fold=ss.groupby("db").cumcount()).melt(["db", "fold"], var_name="model", value_name="score")
    tidy = tidy.rename(columns={"db": "dataset"}).sample(frac=1, random_state=0)  # pairing is by key, not order
    pd.testing.assert_frame_equal(win_table(read_scores(tidy, models=list(ss.columns[1:]))), reference)
    lower = ss.assign(**{m: -ss[m] for m in ss.columns[1:]})  # a loss: the same outcomes, negated
    pd.testing.assert_frame_equal(win_table(read_scores(lower, dataset="db", greater_is_better=False)), reference)
    means = ss.groupby("db").mean()
    off = win_table(read_scores(ss, dataset="db"), local_rope="off")
    pd.testing.assert_frame_equal(win_table(read_scores(means)), off)  # means only: a tie is equal means
    tidy_means = means.reset_index().melt("db", var_name="model", value_name="score")
    pd.testing.assert_frame_equal(win_table(read_scores(tidy_means, dataset="db")), off)
    picked = read_scores(ss, dataset="db", models=["dt", "lgbm", "knn"])
    assert picked.models == ["dt", "lgbm", "knn"] and picked.blocks[0].shape == (4, 3)


def test_paired_and_unpaired_local_rope():
    """Eq. (dmin2) against eq. (dmin) on folds where a and b move together (paired sd small, unpaired sds large)."""
    folds = pd.DataFrame({"a": [0.80, 0.90, 0.70], "b": [0.75, 0.86, 0.64], "c": [0.70, 0.80, 0.75]})
    scores = read_scores(pd.concat([folds.assign(db="x"), folds.assign(db="y")]), dataset="db")
    # a - b: mean 0.05, sd 0.0100; unpaired rms sd 0.1051.  a - c: mean 0.05, sd 0.0866; rms 0.0791.  b - c: 0
    for rule in ("paired", "unpaired"):
        table = win_table(scores, local_rope=rule)
        assert list(table["wins_a"]) == [2, 2, 0] and list(table["ties"]) == [0, 0, 2]
    # factor 0.6: paired ties a - c (0.05 <= 0.052); unpaired ties a - b (0.05 <= 0.063), not a - c (0.047)
    assert list(win_table(scores, local_rope="paired", factor=0.6)["ties"]) == [0, 2, 2]
    assert list(win_table(scores, local_rope="unpaired", factor=0.6)["ties"]) == [2, 0, 2]
    assert list(win_table(scores, local_rope="off", factor=0.6)["ties"]) == [0, 0, 2]


# ------------------------------------------------------------------------------------------------ simulations


def _bt_wins(beta: np.ndarray, games: int, rng: np.random.Generator) -> pd.DataFrame:
    """Wins drawn from the Bradley-Terry model: ``games`` independent games per pair."""
    rows = []
    for i, j in itertools.combinations(range(len(beta)), 2):
        won = rng.binomial(games, expit(beta[i] - beta[j]))
        rows.append((f"m{i}", f"m{j}", won, games - won))
    return pd.DataFrame(rows, columns=["model_a", "model_b", "wins_a", "wins_b"])


def test_simulation_recovers_known_strengths():
    beta = np.array([1.0, 0.5, 0.0, -0.5, -1.0])
    res = rank_wins(_bt_wins(beta, 100, np.random.default_rng(3)), seed=3)
    assert res.order == ["m0", "m1", "m2", "m3", "m4"]
    assert res.ranking["strength"].to_numpy() == pytest.approx(beta, abs=0.15)
    assert res.ranking["p_best"].iloc[0] > 0.9
    top = res.pairs[(res.pairs["better"] == "m0") & (res.pairs["worse"] == "m4")].iloc[0]
    assert top.p_win == pytest.approx(expit(2.0), abs=0.03) and top.p_win_low < expit(2.0) < top.p_win_high
    assert res.diagnostics["divergences"] == 0


@pytest.mark.slow
def test_simulation_p_best_and_p_win_are_calibrated():
    """Strengths drawn from the paper's prior, one game per pair, 40 replicates: posterior probabilities must be
    calibrated.  For P(best), E[P(true best model is best)] = E[sum_k P(k best)^2]; for P(win), the true
    inv_logit(beta_better - beta_worse) averages to the posterior mean P(win) (both identities of the tower rule).

    Measured on these replicates: correct model +0.024 and +0.016; strengths' orientation reversed -0.34 and -0.31;
    a wrong prior, sigma ~ half-normal(0, 10): -0.087 and -0.118; sigma ~ half-normal(0, 0.2): +0.033 and +0.138.
    """
    rng = np.random.default_rng(2024)
    best_gap, win_gap, divergences = [], [], 0
    for replicate in range(40):
        beta = rng.normal(0, rng.lognormal(0, 0.5), 4)
        res = rank_wins(_bt_wins(beta, 1, rng), seed=replicate, draws=500, warmup=500)
        p_best = res.ranking.set_index("model")["p_best"]
        best_gap.append(p_best[f"m{np.argmax(beta)}"] - (p_best**2).sum())
        truth = {f"m{k}": b for k, b in enumerate(beta)}
        true_win = expit(res.pairs["better"].map(truth) - res.pairs["worse"].map(truth))
        win_gap.append(float((true_win - res.pairs["p_win"]).mean()))
        divergences += res.diagnostics["divergences"]
    assert abs(np.mean(best_gap)) < 0.06
    assert abs(np.mean(win_gap)) < 0.06
    assert divergences == 0


# ------------------------------------------------------------------------------------------------ the Stan program


@pytest.mark.parametrize("davidson,hyper_prior,centred", [(0, 0, 1), (1, 1, 0), (0, 2, 0), (1, 0, 1)])
def test_stan_log_density_is_the_model_written_out(davidson, hyper_prior, centred):
    """Stan's log density of stan/bbt.stan against the paper's model (eq. (mod1); Davidson's eq. (david)) written
    with scipy: binomial (or multinomial) games, beta = H z with H orthonormal, and the hyper-prior.  Compared as
    differences between parameter points (constants cancel)."""
    if not programs.pystan_available():
        pytest.skip("the log density is read through pystan")
    k, first, second = 4, [1, 1, 1, 2, 2, 3], [2, 3, 4, 3, 4, 4]
    wins1, wins2, ties = [5, 7, 9, 4, 6, 5], [3, 2, 1, 4, 2, 3], [2, 1, 0, 2, 2, 2]
    data = {"K": k, "N": 6, "first": first, "second": second, "wins_first": wins1, "wins_second": wins2,
            "ties": ties, "davidson": davidson, "hyper_prior": hyper_prior, "hyper_scale": 0.7, "nu_scale": 1.0,
            "centred": centred}
    model = pystan_backend.build("bbt", data, seed=1)
    prior = [stats.lognorm(0.7), stats.halfcauchy(scale=0.7), stats.halfnorm(scale=0.7)][hyper_prior]

    def reference(sigma, z, nu):
        beta = model.constrain_pars([np.log(sigma), *z, *([nu] * davidson)])[-k:]
        assert sum(beta) == pytest.approx(0, abs=1e-12) and np.dot(beta, beta) == pytest.approx(
            np.dot(z, z) * (1 if centred else sigma**2))
        out = prior.logpdf(sigma) + stats.norm.logpdf(z, 0, sigma if centred else 1).sum()
        for a, b, w1, w2, t in zip(first, second, wins1, wins2, ties):
            ba, bb = beta[a - 1], beta[b - 1]
            if davidson:
                weights = np.exp([ba, bb, nu + (ba + bb) / 2])
                out += stats.multinomial.logpmf([w1, w2, t], w1 + w2 + t, weights / weights.sum())
            else:
                out += stats.binom.logpmf(w1, w1 + w2, expit(ba - bb))
        return out + davidson * stats.norm.logpdf(nu, 0, 1.0)

    points = [(0.8, [0.3, -0.5, 0.2], -0.4), (1.7, [-1.0, 0.4, 0.9], 0.6), (0.3, [0.1, 0.2, -0.3], -1.5)]
    ours = [model.log_prob([np.log(s), *z, *([nu] * davidson)], adjust_transform=False) for s, z, nu in points]
    ref = [reference(*p) for p in points]
    for i in (1, 2):
        assert ours[i] - ours[0] == pytest.approx(ref[i] - ref[0], abs=1e-8)


# ------------------------------------------------------------------------------------------------ bad inputs


def _problems(excinfo) -> str:
    return str(excinfo.value)


def test_a_model_missing_on_some_datasets_is_named_or_dropped(ss, caplog):
    tidy = ss.melt("db", var_name="model", value_name="score").rename(columns={"db": "dataset"})
    tidy["fold"] = tidy.groupby(["dataset", "model"]).cumcount()
    gappy = tidy[~((tidy["model"] == "svm") & tidy["dataset"].isin(["auto", "bupa"]))
                 & ~((tidy["model"] == "dt") & (tidy["dataset"] == "biomed") & (tidy["fold"] == 3))].copy()
    gappy.loc[(gappy["model"] == "knn") & (gappy["dataset"] == "breast") & (gappy["fold"] < 2), "score"] = np.nan
    with pytest.raises(InputError) as excinfo:
        read_scores(gappy)
    text = _problems(excinfo)
    assert "model 'svm' has no scores on 2 of 20 datasets: auto, bupa" in text
    assert "model 'dt' lacks rows (folds) on 1 dataset(s): biomed (3 of 4 rows)" in text
    assert "model 'knn' has NaN scores on 1 dataset(s): breast (2 of 4 rows)" in text
    assert "drop_incomplete=True drops those datasets; skip_missing=True counts no game" in text
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        kept = read_scores(gappy, drop_incomplete=True)
    assert len(kept.datasets) == 16 and not {"auto", "bupa", "biomed", "breast"} & set(kept.datasets)
    assert "dropped 4 dataset(s) on which a model lacks scores: auto, biomed, breast, bupa" in caplog.text
    skipped = win_table(read_scores(gappy, skip_missing=True))  # the paper's rule: no game where a score lacks
    games = skipped.set_index(["model_a", "model_b"])[["wins_a", "wins_b", "ties"]].sum(axis=1)
    assert games[("lgbm", "svm")] == 18 and games[("lgbm", "rf")] == 20 and games[("dt", "knn")] == 20


def test_fewer_than_three_models_points_to_the_two_model_test(ss):
    with pytest.raises(InputError, match=r"at least 3 models; got 2 \(lgbm, svm\).*hierarchical_test"):
        rank_models(ss, dataset="db", models=["lgbm", "svm"], seed=1)


def test_every_pair_tied_is_an_error(ss):
    equal = ss.assign(**{m: ss["lgbm"] for m in ("svm", "rf", "dt", "knn")})
    with pytest.raises(InputError, match="every pair of models is tied on every dataset"):
        rank_models(equal, dataset="db", seed=1, model="bbt")


def test_a_single_dataset_goes_to_the_joint_model_which_needs_its_folds(ss):
    """One dataset is ranked by the joint correlated-t model of its folds (tests/test_joint_ranking.py), which
    refuses folds it cannot tell."""
    one = ss[ss["db"] == "auto"]
    with pytest.raises(InputError, match="one dataset .*\n  - the number of cross-validation folds is unknown"):
        rank_models(one, dataset="db", seed=1)
    assert rank_models(one, dataset="db", folds=len(one), seed=1).model == "joint-t"


def test_every_problem_is_reported_at_once(ss):
    first_folds = (ss["db"] == "breast") & (ss.groupby("db").cumcount() < 2)  # a whole model missing is no problem
    bad = ss.assign(rf=ss["rf"].where(~first_folds), dt=ss["dt"].replace(ss["dt"].iloc[5], np.inf))
    with pytest.raises(InputError) as excinfo:
        rank_models(bad, dataset="db", models=["lgbm", "rf", "dt", "xgb"], seed=1)
    text = _problems(excinfo)
    assert "models not in the data: xgb" in text
    assert "model 'dt' has infinite or non-numeric scores on analcatdata_boxing1" in text
    assert "model 'rf' has NaN scores on 1 dataset(s): breast (2 of 4 rows)" in text
    with pytest.raises(InputError, match="column 'db' is not numeric.*dataset="):
        rank_models(ss, seed=1)
    with pytest.raises(InputError, match="no dataset column 'name'"):
        rank_models(ss, dataset="name", seed=1)
    with pytest.raises(InputError, match="local_rope must be one of paired, unpaired, off"):
        rank_models(ss, dataset="db", local_rope="cohen")
    with pytest.raises(InputError, match="drop_incomplete and skip_missing exclude each other"):
        RankOptions(drop_incomplete=True, skip_missing=True)
