"""The scripts in ``examples/``, each run as a user runs it (a fresh interpreter, its own command line) on tiny
settings: what they print, log and write, checked against what they were given.

``gated_training_pipeline.py`` runs on 4 of its 7 datasets at 3 folds x 2 repeats (``--datasets``, ``--folds``,
``--repeats``).  The paper's numbers themselves are checked by test_paper_real_data.py and test_paper_studies.py;
here the scripts' MCMC settings are far too small for them (2 chains x 30 draws)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from scipy import stats

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PAPER = EXAMPLES / "reproduce_paper"
TINY_MCMC = ["--chains", "2", "--draws", "30", "--warmup", "30"]

pytestmark = pytest.mark.slow  # each example runs as a script, end to end: a minute or more


def run_script(argv, cwd, timeout=600, **env):
    done = subprocess.run([sys.executable, *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env})
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def test_log_cv_scores_sklearn(tmp_path):
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import RepeatedStratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from mlflow_bayescompare.reads.collect import collect_scores

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_script([EXAMPLES / "log_cv_scores_sklearn.py", "--tracking-uri", uri, "--folds", "3", "--repeats",
                       "1"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(re.findall(r"mean accuracy 0\.\d{4}  run [0-9a-f]{32}", done.stdout)) == 8
    client = MlflowClient(uri)
    eid = client.get_experiment_by_name("sklearn-cv").experiment_id
    collected = collect_scores(client, [eid], "accuracy")
    tensor = collected.tensor("rf", "logreg")  # the script's closing hint
    assert collected.layout == "steps" and sorted(tensor.datasets) == ["breast_cancer", "digits", "iris", "wine"]
    assert all(len(x) == 3 for x in tensor.diffs)
    # the scores logged are scikit-learn's, fold by fold, on the script's splits
    [run] = client.search_runs([eid], "tags.model = 'logreg' AND tags.dataset = 'iris'")
    assert run.data.params == {"cv_folds": "3", "cv_repeats": "1"}
    X, y = load_iris(return_X_y=True)
    expected = cross_val_score(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), X, y,
                               cv=RepeatedStratifiedKFold(n_splits=3, n_repeats=1, random_state=42))
    history = sorted(client.get_metric_history(run.info.run_id, "accuracy"), key=lambda m: m.step)
    assert [m.value for m in history] == expected.tolist()


def test_gated_training_pipeline(tmp_path):
    """Train and log, compare, and exit 0 (promote) or 1 (keep production) as the posterior says."""
    from sklearn.datasets import load_wine
    from sklearn.model_selection import RepeatedStratifiedKFold, cross_val_score

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_script([EXAMPLES / "gated_training_pipeline.py", "--tracking-uri", uri, "--seed", "3", "--folds", "3",
                       "--repeats", "2", "--datasets", "iris,wine,synthetic_0,synthetic_1"], tmp_path)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    client = MlflowClient(uri)
    eid = client.get_experiment_by_name("gated-pipeline").experiment_id
    [comparison] = client.search_runs([eid], "tags.`bayescompare.kind` = 'comparison'")
    assert comparison.info.status == "FINISHED" and comparison.info.run_id in done.stdout
    metrics = comparison.data.metrics
    holds = metrics["p_a_better"] + metrics["p_rope"] >= 0.95  # claim "not-worse" at the default threshold
    assert done.returncode == (0 if holds else 1)
    assert done.stdout.rstrip().endswith("PROMOTE: claim 'not-worse' holds at 0.95" if holds else
                                         "KEEP PRODUCTION: claim 'not-worse' does not hold at 0.95")
    assert f"P(candidate better) {metrics['p_a_better']:.3f}" in done.stdout
    assert (metrics["n_datasets"], comparison.data.params["seed"]) == (4, "3")
    # the candidate's logged scores are the random forest's own on the seed's splits
    from sklearn.ensemble import RandomForestClassifier

    [run] = client.search_runs([eid], "tags.model = 'candidate' AND tags.dataset = 'wine'")
    X, y = load_wine(return_X_y=True)
    splits = list(RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=3).split(X, y))
    expected = cross_val_score(RandomForestClassifier(n_estimators=100, random_state=0), X, y, cv=splits)
    history = sorted(client.get_metric_history(run.info.run_id, "accuracy"), key=lambda m: m.step)
    assert [m.value for m in history] == expected.tolist()
    assert run.data.params == {"seed": "3", "cv_folds": "3", "cv_repeats": "2"}


def test_reproduce_paper_real_data(tmp_path):
    """All ten pairs, both priors; the signed-rank p-values (no MCMC in them) are scipy's on the 54 mean
    differences, and the paper's six pairs are marked."""
    done = run_script([PAPER / "real_data.py", *TINY_MCMC], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[2:12]}
    df = pd.read_csv(Path(__file__).parent / "data" / "uci_classification.csv")
    df = df.sort_values(["ClassifierID", "DatasetID", "Key.Run", "Key.Fold"])
    names = {1: "nbc", 2: "aode", 3: "hnb", 4: "j48", 5: "j48gr"}
    means = {names[c]: g.groupby("DatasetID")["Percent.correct"].mean().to_numpy() for c, g in
             df.groupby("ClassifierID")}
    assert list(rows) == [f"{a}-{b}" for a, b in combinations(names.values(), 2)]
    in_paper = {"nbc-hnb", "nbc-j48", "nbc-j48gr", "hnb-j48", "hnb-j48gr", "j48-j48gr"}
    for a, b in combinations(names.values(), 2):
        # pair, hierarchical l/r/r, paper's, Gamma(2, 0.1) l/r/r, paper's, signed-rank p, paper's, match
        pair, hier, paper_hier, gamma, paper_gamma, p_value, paper_p, match = rows[f"{a}-{b}"]
        assert float(p_value) == pytest.approx(stats.wilcoxon(means[a] - means[b]).pvalue, abs=5e-5), pair
        for triple in (hier, gamma):
            assert sum(map(float, triple.split("/"))) == pytest.approx(1, abs=0.015)
        assert (match in ("yes", "NO")) == (paper_hier != "–") == (paper_p != "–") == (pair in in_paper)
    assert "divergences (all fits):" in done.stdout


def test_reproduce_paper_studies(tmp_path):
    """Two of the four studies, the MSE one and the power one (q = 5, 10, 50 and four δ0 at q = 50), at one
    replicate per cell: tables printed, CSVs and plots written.  The equivalence studies (five q up to 50 each)
    are left out for time; test_paper_studies.py runs their code."""
    done = run_script([PAPER / "studies.py", "mse", "different", "--reps", "1", "--n-instances", "100", "--out",
                       tmp_path / "out", *TINY_MCMC], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "== mse (1 reps per cell, n = 100 instances per data set" in done.stdout
    assert "== different (1 reps per cell, n = 100 instances per data set" in done.stdout
    mse = pd.read_csv(tmp_path / "out" / "mse.csv", index_col=0)
    assert mse.index.tolist() == [5, 10, 50] and (mse["reps"] == 1).all()
    assert (mse[["mse_mle", "mse_shrinkage"]] > 0).all().all()
    different = pd.read_csv(tmp_path / "out" / "different.csv", index_col=0)
    assert different.index.tolist() == [0.015, 0.02, 0.025, 0.03]
    runs = pd.read_csv(tmp_path / "out" / "different_runs.csv")
    assert len(runs) == 4 and np.allclose(runs[["p_left", "p_rope", "p_right"]].sum(axis=1), 1)
    for name in ("mse", "different"):
        assert (tmp_path / "out" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "out" / f"{name}_runs.csv").exists()


def test_reproduce_paper_friedman(tmp_path):
    """One replicate on three of the 54 settings (one per function; 2 of 3 drawn per function: q = 3)."""
    done = run_script([PAPER / "friedman.py", "--reps", "1", "--settings", "3", "--truth-reps", "2", "--out",
                       tmp_path / "out", *TINY_MCMC], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "== ground truth (2 training sets per setting" in done.stdout and "settings: 3;" in done.stdout
    assert "== tests (1 reps, q = 3," in done.stdout
    truth = pd.read_csv(tmp_path / "out" / "friedman_truth.csv", index_col=0)["delta"]
    assert [name.split()[0] for name in truth.index] == ["F#1", "F#2", "F#3"]
    runs = pd.read_csv(tmp_path / "out" / "friedman_runs.csv")
    assert len(runs) == 1 and runs.q.iloc[0] == 3
    assert runs.p_left.iloc[0] + runs.p_rope.iloc[0] + runs.p_right.iloc[0] == pytest.approx(1)
    assert (tmp_path / "out" / "friedman.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
