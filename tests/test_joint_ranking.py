"""k models on one dataset: the joint correlated-t model of their fold scores (``families/ranking/joint.py``).  Its
closed form
against the correlated t-test (k = 2, and every pair of k = 5) and its draws against scipy's multivariate Student-t;
its calibration with equal models and its power with one better model, simulated with a known fold correlation; and
``rank``/``matrix`` on one dataset read from MLflow runs on a real sqlite store.  No Stan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow.entities import Metric
from scipy import stats
from uci_runs import artifact_paths, log_uci, uci_scores

from mlflow_bayescompare import correlated_t_test, rank_models
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.families.ranking.joint.engine import posterior_draws, rank_one_dataset
from mlflow_bayescompare.families.ranking.report import headline
from mlflow_bayescompare.families.ranking.scores import Scores
from mlflow_bayescompare.pipeline.compare import compare_matrix, rank_runs
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.options import RankOptions

MODELS = ("nbc", "aode", "hnb", "j48", "j48gr")
ONE = (20,)


def fold_scores(rng, means, folds=10, repeats=10, sd=0.03, model_correlation=0.5) -> np.ndarray:
    """(folds · repeats, k) scores Y = 1μ' + E, E ~ MN(0, M, Σ): fold correlation ρ = 1/folds (M compound
    symmetric), the models' scores on a fold correlated by ``model_correlation`` (Σ), sd ``sd``."""
    n, k = folds * repeats, len(means)
    m = np.full((n, n), 1 / folds) + (1 - 1 / folds) * np.eye(n)
    sigma = sd**2 * (model_correlation + (1 - model_correlation) * np.eye(k))
    return np.asarray(means) + np.linalg.cholesky(m) @ rng.standard_normal((n, k)) @ np.linalg.cholesky(sigma).T


def joint(y, greater_is_better=True, folds=10, **options):
    models = [f"m{i}" for i in range(y.shape[1])]
    sign = 1 if greater_is_better else -1
    return rank_one_dataset(Scores(models, ["d"], [sign * y], folds),
                            RankOptions(greater_is_better=greater_is_better, **{"seed": 1, **options}))


# ---------------------------------------------------------------------------------------------- the closed form


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("folds, repeats", [(2, 5), (5, 1), (10, 10)])
def test_with_two_models_it_is_the_correlated_t_test(seed, folds, repeats):
    """k = 2: the one pair's probabilities, difference and interval are the correlated t-test's (both directions,
    several ropes), and P(best) is its P(μ > 0) within Monte-Carlo error."""
    rng = np.random.default_rng(seed)
    y = fold_scores(rng, [0.805, 0.8], folds, repeats)
    for greater in (True, False):
        for rope in (0.002, 0.01):
            res = joint(y, greater, folds, metric_rope=rope)
            pair = res.pairs.iloc[0]
            a, b = (0, 1) if pair.better == "m0" else (1, 0)
            direct = correlated_t_test(y[:, a], y[:, b], folds=folds, rope=rope, greater_is_better=greater)
            assert (pair.p_better, pair.p_rope, pair.p_worse) == pytest.approx(
                (direct.p_a_better, direct.p_rope, direct.p_b_better), abs=1e-12)
            assert (pair.difference, pair.hdi_low, pair.hdi_high) == pytest.approx(tuple(
                direct.mean_difference[k] for k in ("mean", "hdi_low", "hdi_high")), abs=1e-12)
            p_best = res.ranking.set_index("model").loc[pair.better, "p_best"]
            exact = 1 - direct.cdf(0) if greater else direct.cdf(0)  # P(μ_better − μ_worse beyond 0)
            draws = res.settings["chains"] * res.settings["draws"]
            assert p_best == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / draws) + 1e-3)


def test_every_pair_of_five_models_is_that_pairs_correlated_t_test():
    """The ranking agrees with the pairs by construction: each of the 10 pairs is the correlated t-test of its
    differences, to the last digits."""
    y = fold_scores(np.random.default_rng(3), [0.80, 0.81, 0.79, 0.80, 0.83])
    res = joint(y, metric_rope=0.005)
    assert len(res.pairs) == 10
    for pair in res.pairs.itertuples():
        a, b = int(pair.better[1:]), int(pair.worse[1:])
        direct = correlated_t_test(y[:, a], y[:, b], folds=10, rope=0.005)
        assert (pair.p_better, pair.p_rope, pair.p_worse) == pytest.approx(
            (direct.p_a_better, direct.p_rope, direct.p_b_better), abs=1e-12)
    assert res.ranking["model"].iloc[0] == "m4" and res.ranking["diff_to_leader"].iloc[0] == 0


def test_the_draws_are_the_multivariate_student_t_of_the_closed_form():
    """Draws of μ against scipy.stats.multivariate_t with n − 1 degrees of freedom, location the fold means and
    shape S/(w(n − 1)), S = R'R/(1 − ρ), w = n/(1 + (n − 1)ρ): the same P(best) of every model and the same
    covariance, within Monte-Carlo error."""
    y = fold_scores(np.random.default_rng(5), [0.80, 0.805, 0.81, 0.80])
    n, rho, size = len(y), 0.1, 40_000
    residuals = y - y.mean(axis=0)
    shape = residuals.T @ residuals / (1 - rho) / (n / (1 + (n - 1) * rho) * (n - 1))
    oracle = stats.multivariate_t(loc=y.mean(axis=0), shape=shape, df=n - 1, seed=11).rvs(size)
    ours = posterior_draws(y, rho, size, np.random.default_rng(12))
    best = [np.bincount(np.argmax(d, axis=1), minlength=4) / size for d in (ours, oracle)]
    np.testing.assert_allclose(best[0], best[1], atol=4 * np.sqrt(0.25 / size) * np.sqrt(2))
    np.testing.assert_allclose(np.cov(ours.T), shape * (n - 1) / (n - 3), rtol=0.05)
    np.testing.assert_allclose(np.cov(oracle.T), shape * (n - 1) / (n - 3), rtol=0.05)


def test_constant_differences_and_unknown_folds():
    """Two models whose difference is the same on every fold: a point mass, with a warning; folds that cannot be
    told without rho are refused, with what to give."""
    y = fold_scores(np.random.default_rng(1), [0.8, 0.8, 0.8])
    y[:, 2] = y[:, 0] + 0.02
    res = joint(y)
    pair = res.pairs.set_index(["better", "worse"]).loc[("m2", "m0")]
    assert (pair.scale, pair.p_better, pair.credible) == (0, 1.0, True)
    assert any("m2 − m0 is 0.02 on every fold" in w for w in res.diagnostics["warnings"])
    with pytest.raises(InputError, match="the number of cross-validation folds is unknown"):
        joint(y, folds=None)
    assert joint(y, folds=None, rho=0.1).pairs.equals(res.pairs)


# ---------------------------------------------------------------------------------------------- simulation


def _share_credible(means, replicates, rope, seed):
    """The share of pairs called credibly different, and the share P(better) >= 0.95 on either side would call."""
    credible = naive = total = 0
    for rep in range(replicates):
        res = joint(fold_scores(np.random.default_rng([seed, rep]), means), metric_rope=rope, chains=1, draws=500)
        credible += res.pairs["credible"].sum()
        naive += ((res.pairs["p_better"] >= 0.95) | (res.pairs["p_worse"] >= 0.95)).sum()
        total += len(res.pairs)
    return credible / total, naive / total


@pytest.mark.slow  # 300 rankings of 5 models
def test_equal_models_are_not_called_different_more_than_one_minus_the_threshold():
    """k = 5 equal models, 10 × 10 folds correlated by ρ = 1/10, a rope (0.001) small beside the posterior's scale
    of a pair's difference (about 0.01): 3000 pairs.  At most 5% are called credibly different (the threshold HDI
    beyond the rope; measured 3.5%); the rule "P(better) >= 0.95" on either side would call 7.7%, which is why the
    ranking does not use it."""
    credible, naive = _share_credible([0.8] * 5, 300, rope=0.001, seed=7)
    assert credible <= 0.05 and credible > 0.02  # at the bound the rule sits near, not trivially under it
    assert naive > 0.06


@pytest.mark.slow  # 100 rankings of 5 models
def test_one_better_model_is_found():
    """One model 0.04 better than four equal ones (about four posterior sds of a pair's difference; rope 0.005): it
    leads in every replicate, with P(best) >= 0.9 in nearly all, and is credibly better than all four others in most
    (measured: 100, 97 and 83 of 100)."""
    leads = sure = above_all = 0
    for rep in range(100):
        y = fold_scores(np.random.default_rng([11, rep]), [0.8, 0.8, 0.84, 0.8, 0.8])
        res = joint(y, metric_rope=0.005, chains=1, draws=1000)
        top = res.ranking.iloc[0]
        leads += top["model"] == "m2"
        sure += top["model"] == "m2" and top["p_best"] >= 0.9
        above_all += res.pairs[res.pairs["better"] == "m2"]["credible"].sum() == 4
    assert leads == 100 and sure >= 90 and above_all >= 75, (leads, sure, above_all)


# ---------------------------------------------------------------------------------------------- from MLflow


@pytest.mark.slow  # four figures, PNG and SVG
def test_rank_on_one_dataset_logs_the_joint_model(client, tracking_uri, experiment_id):
    """rank_runs on five models' 10 × 10 folds of one dataset: the joint model (no Stan), its pairs the correlated
    t-tests of the logged folds, and a ranking run with its tables, figures (the critical-difference diagram
    included), reports and posterior."""
    log_uci(client, experiment_id, models=MODELS, datasets=ONE)
    outcome = rank_runs(experiment_ids=[experiment_id], metric="accuracy", tracking_uri=tracking_uri, seed=3,
                        metric_rope=0.5)  # the UCI scores are percentages
    res = outcome.result
    assert res.model == "joint-t" and res.settings["rho"] == 0.1 and res.settings["folds"] == 10
    scores = uci_scores(MODELS, ONE)
    for pair in res.pairs.itertuples():
        direct = correlated_t_test(scores[pair.better, "uci20"], scores[pair.worse, "uci20"], folds=10, rope=0.5)
        assert (pair.p_better, pair.p_rope, pair.p_worse) == pytest.approx(
            (direct.p_a_better, direct.p_rope, direct.p_b_better), abs=1e-12)
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED"
    assert (run.data.tags[T.KIND], run.data.tags[T.RANKING]) == ("ranking", "joint-t")
    assert run.data.tags[T.BEST] == res.ranking["model"].iloc[0]
    assert "(one dataset)" in run.data.tags[T.NOTE] and "Bayesian correlated t-test" in run.data.tags[T.NOTE]
    assert run.data.metrics["n_datasets"] == 1 and run.data.metrics["rho"] == pytest.approx(0.1)
    assert f"diff_to_leader.{res.ranking['model'].iloc[1]}" in run.data.metrics
    assert set(artifact_paths(client, outcome.run_id)) == {
        "report.html", "report.md", "summary.json", "ranking.csv", "pairs.csv", "cv_scores.csv", "posterior.nc",
        "metric_keys.json",
        *(f"plots/{name}.{ext}" for name in ("critical_difference", "better_matrix", "p_best", "leader_gaps")
          for ext in ("png", "svg"))}


def test_the_command_line_ranks_one_dataset_and_says_how(client, tracking_uri, experiment_id):
    log_uci(client, experiment_id, models=MODELS[:3], datasets=ONE)
    argv = ["rank", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            "--seed", "1", "--metric-rope", "0.5", "--no-log"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert "Ranking of 3 models · accuracy (joint correlated-t model of one dataset's folds):" in result.stdout
    assert "ρ = 0.1 (1/folds with folds=10), rope ±0.5" in result.stdout
    matrix = CliRunner().invoke(main, ["matrix", *argv[1:7], "--seed", "1", "--rope", "0.5", "--no-log"])
    assert matrix.exit_code == 0, matrix.output
    assert matrix.stdout.startswith(result.stdout)  # the ranking printed by one function: header, table, headline
    report = json.loads(CliRunner().invoke(main, [*argv, "--json"]).stdout)
    assert report["model"] == "joint-t" and {p["better"] for p in report["pairs"]} <= set(MODELS[:3])
    assert len(report["pairs"]) == 3 and "diff_to_leader" in report["ranking"][0]
    # --vs on one dataset, the commonest case (it was refused): each model against the leader is their correlated
    # t-test on this dataset's folds
    versus = json.loads(CliRunner().invoke(main, [*argv, "--json", "--vs", "best"]).stdout)["versus"]
    leader, scores = report["ranking"][0]["model"], uci_scores(MODELS[:3], ONE)
    assert [r["model"] for r in versus] == [r["model"] for r in report["ranking"][1:]]
    for row in versus:
        direct = correlated_t_test(scores[row["model"], "uci20"], scores[leader, "uci20"], folds=10, rope=0.5)
        assert row["reference"] == leader and (row["p_better"], row["p_rope"], row["p_worse"]) == pytest.approx(
            (direct.p_a_better, direct.p_rope, direct.p_b_better), abs=1e-12)
    text = CliRunner().invoke(main, [*argv, "--vs", MODELS[0]])
    against = f"Against {MODELS[0]} (this dataset; verdict at 0.95, better and worse at 0.975):"
    assert against in text.stdout, text.output


def test_rank_on_one_dataset_refuses_what_the_joint_model_cannot_read(client, tracking_uri, experiment_id):
    """Folds that cannot be told (no cv_folds, no --folds) and a model lacking folds: exit 2 at the pre-flight,
    named, nothing logged."""
    scores = uci_scores(MODELS[:3], ONE)
    for model in MODELS[:3]:
        run_id = client.create_run(experiment_id, tags={"model": model, "dataset": "uci20"}).info.run_id
        values = scores[model, "uci20"][: 90 if model == "hnb" else 100]
        client.log_batch(run_id, metrics=[Metric("accuracy", v, 0, i) for i, v in enumerate(values)])
    argv = ["rank", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy"]
    for extra, fragment in (((), "pass --folds K (folds=K) or log the run param 'cv_folds'"),
                            (("--folds", "10"), "model 'hnb' lacks rows (folds) on 1 dataset(s): uci20 (90 of 100 "
                                                "rows)")):
        result = CliRunner().invoke(main, [*argv, *extra])
        assert result.exit_code == 2, result.output
        assert fragment in result.output and "Traceback" not in result.output
    assert client.search_runs([experiment_id], f"tags.`{T.KIND}` IS NOT NULL") == []


@pytest.mark.slow  # a matrix worker process
def test_a_matrix_on_one_dataset_ranks_its_models_with_the_joint_model(client, tracking_uri, experiment_id):
    """"Compare all models" on one dataset: every pair by the correlated t-test, the parent's ranking by the joint
    model, and the two agree (the pair runs' probabilities are the ranking's pairs')."""
    log_uci(client, experiment_id, models=MODELS[:3], datasets=ONE)
    outcome = compare_matrix(experiment_ids=[experiment_id], metric="accuracy", tracking_uri=tracking_uri, jobs=1,
                             rope=0.5, seed=2)
    assert outcome.summary.tests == ("correlated-t",) and outcome.bbt.model == "joint-t"
    ranked = outcome.bbt.pairs.set_index(["better", "worse"])
    for (a, b), pair in outcome.pairs.items():
        row, flipped = (ranked.loc[(a, b)], False) if (a, b) in ranked.index else (ranked.loc[(b, a)], True)
        expected = (row.p_worse, row.p_rope, row.p_better) if flipped else (row.p_better, row.p_rope, row.p_worse)
        assert (pair.p_a_better, pair.p_rope, pair.p_b_better) == pytest.approx(expected, abs=1e-12)
    parent = client.get_run(outcome.run_id)
    assert parent.data.tags[T.RANKING] == "joint-t" and parent.data.tags[T.BEST] == outcome.ranking["model"].iloc[0]
    assert "critical_difference.png" in {a.path.split("/")[-1] for a in client.list_artifacts(outcome.run_id,
                                                                                            "plots")}
    assert {"matrix.png", "matrix.svg"} <= {a.path for a in client.list_artifacts(outcome.run_id)}  # as every figure


def test_rank_models_on_one_dataset_from_python():
    """The Python API: a wide table of one dataset's folds, its folds given."""
    scores = uci_scores(MODELS, ONE)
    wide = pd.DataFrame({m: scores[m, "uci20"] for m in MODELS}).assign(db="uci20")
    res = rank_models(wide, dataset="db", folds=10, seed=1, metric_rope=0.5)
    assert res.model == "joint-t" and list(res.ranking["model"])[0] == max(MODELS, key=lambda m: np.mean(
        scores[m, "uci20"]))
    assert len(res.pairs) == len(list(combinations(MODELS, 2)))


def test_the_ranking_is_in_the_order_of_p_best():
    """Two near-copies of one candidate (a search's neighbours) share its chance of being the best: each is best
    less often than a model a little below them on the mean.  The table is in the order of P(best), the headline's
    "most probably best" first, as every ranking's (it was in the order of the means: P(best) rose down the table)."""
    rng = np.random.default_rng(0)
    base = rng.normal(0.9, 0.03, 100)
    other = rng.normal(0.0, 0.03, 100)
    copies, other_name = ["C=1, kernel=linear", "C=1, kernel=rbf"], "C=10, kernel=linear"  # a search's names
    wide = pd.DataFrame({copies[0]: base + 0.011 + rng.normal(0, 0.001, 100),
                         copies[1]: base + 0.011 + rng.normal(0, 0.001, 100),
                         other_name: other - other.mean() + base.mean() + 0.010, "db": "d"})
    res = rank_models(wide, dataset="db", folds=10, seed=1)
    p_best = list(res.ranking["p_best"])
    assert p_best == sorted(p_best, reverse=True) and res.ranking["model"].iloc[0] == other_name
    assert res.ranking.set_index("model")["mean"].idxmax() in copies  # not the mean's order
    # names that hold commas are listed with "; " between them, so that none reads as two
    assert headline(res).endswith(f"not credibly better than {copies[0]}; {copies[1]}") or \
        headline(res).endswith(f"not credibly better than {copies[1]}; {copies[0]}")


ARVIZ_DAILY = """
import numpy as np, pandas as pd
from mlflow_bayescompare import rank_models
rng = np.random.default_rng(1)
wide = pd.DataFrame({m: 0.8 + 0.01 * i + rng.normal(0, 0.02, 20) for i, m in enumerate("abc")}).assign(db="d")
rank_models(wide, dataset="db", folds=10, seed=1).to_inference_data()
"""


@pytest.mark.slow  # a fresh interpreter imports MLflow and arviz
def test_arviz_daily_notice_does_not_reach_the_user(tmp_path):
    """arviz warns once a day, as it is imported, that it is being refactored (a FutureWarning of five lines): a
    Python user's first posterior of the day (here the joint model's, which needs no Stan) must not show it, while
    arviz did get to its check (its stamp is written)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONWARNINGS": "default"}
    done = subprocess.run([sys.executable, "-c", ARVIZ_DAILY], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "arviz" / "daily_warning").exists()  # the day's first import, the one that would warn
    assert "FutureWarning" not in done.stderr and "ArviZ is undergoing" not in done.stderr, done.stderr
