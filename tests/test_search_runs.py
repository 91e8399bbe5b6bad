"""scikit-learn's parameter searches as ``mlflow.sklearn.autolog()`` logs them (``--search-run``): real GridSearchCV
and RandomizedSearchCV fits on iris, autologged to a sqlite store, compared and ranked by their candidates; the
splits' kind read from the ``cv`` param; and what cannot be read refused with exit 2 and nothing logged."""

from __future__ import annotations

import json
import warnings

import mlflow
import mlflow.sklearn
import numpy as np
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from sklearn.datasets import load_iris
from sklearn.model_selection import (
    GridSearchCV,
    PredefinedSplit,
    RandomizedSearchCV,
    RepeatedStratifiedKFold,
    ShuffleSplit,
)
from sklearn.svm import SVC

from mlflow_bayescompare import correlated_t_test
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.pipeline.compare import compare_runs, rank_runs
from mlflow_bayescompare.reads.search import split_scheme
from mlflow_bayescompare.server.serialize import summarise_run
from mlflow_bayescompare.vocabulary import tags as T

pytestmark = pytest.mark.slow  # the module's searches, fitted under autolog once (seconds each)

GRID = {"C": [0.1, 1, 10], "kernel": ["linear", "rbf"]}


def _fit(name: str, search):
    """Fit ``search`` on iris in a run of its own under autolog; (run id, the fitted search)."""
    X, y = load_iris(return_X_y=True)
    with mlflow.start_run(run_name=name) as run, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    return run.info.run_id, search


@pytest.fixture(scope="module")
def searches(tmp_path_factory):
    """Autologged runs: a 2 × 5-fold grid search, one with cv=5 and two scorers, a randomized search over
    ShuffleSplit hold-out splits, one over a PredefinedSplit, a single SVC fit (no search) and a search run that
    lacks cv_results.csv; the store's URI under ``uri``."""
    folder = tmp_path_factory.mktemp("searches")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        mlflow.set_experiment("search")
        mlflow.sklearn.autolog(log_models=False, log_datasets=False, max_tuning_runs=0,
                               log_post_training_metrics=False, silent=True)
        out = {"uri": uri, "experiment_id": mlflow.get_experiment_by_name("search").experiment_id}
        out["grid"] = _fit("grid", GridSearchCV(SVC(), GRID, cv=RepeatedStratifiedKFold(n_splits=5, n_repeats=2,
                                                                                       random_state=0)))
        out["two_scorers"] = _fit("two scorers", GridSearchCV(SVC(), GRID, cv=5, scoring=["accuracy", "f1_macro"],
                                                              refit="accuracy"))
        out["shuffle"] = _fit("shuffle", RandomizedSearchCV(
            SVC(), GRID, n_iter=4, random_state=0, cv=ShuffleSplit(n_splits=10, test_size=0.25, random_state=0)))
        out["predefined"] = _fit("predefined", GridSearchCV(SVC(), {"C": [1, 10]},
                                                            cv=PredefinedSplit(np.arange(150) % 3)))
        out["not_a_search"] = _fit("one fit", SVC())
        mlflow.sklearn.autolog(disable=True)
        client = MlflowClient(uri)
        bare = client.create_run(out["experiment_id"], tags={"estimator_name": "GridSearchCV"}).info.run_id
        client.log_param(bare, "cv", "5")
        out["no_cv_results"] = (bare, None)
        yield out
    finally:
        mlflow.sklearn.autolog(disable=True)
        mlflow.set_tracking_uri(previous)


def _splits(search, index: int, scorer: str = "score") -> np.ndarray:
    results = search.cv_results_
    n = sum(1 for key in results if key.startswith("split") and key.endswith(f"_test_{scorer}"))
    return np.array([results[f"split{i}_test_{scorer}"][index] for i in range(n)])


def _name(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _comparison_runs(client, experiment_id) -> list:
    return client.search_runs([experiment_id], f"tags.`{T.KIND}` IS NOT NULL")


def test_compare_two_candidates_of_a_grid_search(searches):
    """``best`` and a candidate named by its setting, compared by the correlated t-test on their 2 × 5 split scores
    (ρ = 1/5 from RepeatedStratifiedKFold(n_splits=5)), exactly as on cv_results_ itself; the run is logged in the
    search's experiment, its scores' source the search run."""
    run_id, search = searches["grid"]
    best = search.best_index_
    other = next(i for i, p in enumerate(search.cv_results_["params"]) if p == {"C": 1, "kernel": "rbf"})
    outcome = compare_runs(search_run=run_id, metric="score", model_a="best", model_b="C=1, kernel=rbf",
                           tracking_uri=searches["uri"])
    direct = correlated_t_test(_splits(search, best), _splits(search, other), folds=5)
    assert (outcome.model_a, outcome.model_b) == (_name(search.best_params_), "C=1, kernel=rbf")
    assert outcome.result.test == "correlated-t" and outcome.rho == 0.2 and outcome.layout == "search"
    assert (outcome.p_a_better, outcome.p_rope, outcome.p_b_better) == (
        direct.p_a_better, direct.p_rope, direct.p_b_better)
    client = MlflowClient(searches["uri"])
    run = client.get_run(outcome.run_id)
    assert run.info.experiment_id == searches["experiment_id"] and run.data.tags[T.TEST] == "correlated-t"
    assert set(outcome.result.scores["run_id_a"]) == {run_id}


def test_rank_every_candidate_of_a_grid_search(searches):
    """All six candidates by the joint model of one dataset, named as their settings; each pair its correlated
    t-test on cv_results_'s splits."""
    run_id, search = searches["grid"]
    outcome = rank_runs(search_run=run_id, metric="score", tracking_uri=searches["uri"], seed=1, log=False)
    names = [_name(p) for p in search.cv_results_["params"]]
    assert outcome.result.model == "joint-t" and sorted(outcome.result.models) == sorted(names)
    for pair in outcome.result.pairs.itertuples():
        a, b = names.index(pair.better), names.index(pair.worse)
        direct = correlated_t_test(_splits(search, a), _splits(search, b), folds=5)
        assert (pair.p_better, pair.p_rope, pair.p_worse) == pytest.approx(
            (direct.p_a_better, direct.p_rope, direct.p_b_better), abs=1e-12)


def test_a_logged_ranking_of_candidates_names_each_model_once(searches):
    """Candidates are named by their settings, commas included (``C=1, kernel=rbf``): the ranking run's models tag
    and the server's status of the run give the six models back, not the pieces between the commas."""
    run_id, search = searches["grid"]
    outcome = rank_runs(search_run=run_id, metric="score", tracking_uri=searches["uri"], seed=1)
    run = MlflowClient(searches["uri"]).get_run(outcome.run_id)
    names = sorted(_name(p) for p in search.cv_results_["params"])
    assert sorted(T.split_names(run.data.tags[T.MODELS])) == sorted(summarise_run(run)["models"]) == names


def test_the_command_line_selects_candidates_with_models(searches):
    """``--models`` names candidates (``;`` between them, as their names hold commas; ``best`` too); the text
    output names them by their settings."""
    run_id, search = searches["grid"]
    argv = ["rank", "--tracking-uri", searches["uri"], "--search-run", run_id, "--metric", "score", "--seed", "1",
            "--models", "best; C=10, kernel=rbf; C=0.1, kernel=linear", "--json"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert sorted(report["models"]) == sorted([_name(search.best_params_), "C=10, kernel=rbf", "C=0.1, kernel=linear"])
    assert report["model"] == "joint-t" and report["run_id"]
    assert "Downloading artifacts" not in result.stderr  # MLflow's progress bar, as it read cv_results.csv


def test_the_splits_kind_comes_from_the_cv_param(searches):
    """cv=5 is 5-fold (ρ = 1/5); ShuffleSplit(test_size=0.25) repeated hold-out, ρ = 0.25; a PredefinedSplit
    cannot be told without --folds or --rho; a multi-metric search is read by its scorer's name."""
    uri = searches["uri"]
    two = compare_runs(search_run=searches["two_scorers"][0], metric="f1_macro", model_a="best",
                       model_b="C=0.1, kernel=rbf", tracking_uri=uri, log=False)
    assert (two.rho, two.result.n) == (0.2, 5)
    shuffle = compare_runs(search_run=searches["shuffle"][0], metric="score", model_a="best",
                           model_b=_name(searches["shuffle"][1].cv_results_["params"][0]), tracking_uri=uri,
                           log=False)
    assert shuffle.rho == 0.25 and shuffle.result.n == 10
    assert split_scheme("RepeatedKFold(n_repeats=3, n_splits=4, random_state=None)", 12) == (4, None)
    assert split_scheme("LeaveOneOut()", 150) == (150, None)
    assert split_scheme("ShuffleSplit(n_splits=5, random_state=0, test_size=20, train_size=80)", 5)[1][0] == 0.2
    assert split_scheme("ShuffleSplit(n_splits=5, random_state=0, test_size=20, train_size=None)", 5) == (None, None)
    argv = ["compare", "--tracking-uri", uri, "--search-run", searches["predefined"][0], "--metric", "score",
            "--model-a", "C=1", "--model-b", "C=10", "--no-log"]
    refused = CliRunner().invoke(main, argv)
    assert refused.exit_code == 2 and "cannot be told from its cv param 'PredefinedSplit(" in refused.output
    assert CliRunner().invoke(main, [*argv, "--folds", "3"]).exit_code == 0


@pytest.mark.parametrize("case, args, fragments", [
    ("grid", ("--model-a", "best", "--model-b", "C=5, kernel=rbf"),
     ["no candidate 'C=5, kernel=rbf' in search run", "candidates: C=0.1, kernel=linear; C=0.1, kernel=rbf; "
      "C=1, kernel=linear; C=1, kernel=rbf; C=10, kernel=linear; C=10, kernel=rbf (and 'best' = "]),
    ("no_cv_results", ("--model-a", "a", "--model-b", "b"),
     ["has no cv_results.csv artifact", "mlflow.sklearn.autolog() logs cv_results.csv for every GridSearchCV and "
      "RandomizedSearchCV fit, whatever its settings"]),
    ("not_a_search", ("--model-a", "a", "--model-b", "b"),
     ["is not a scikit-learn parameter search logged by mlflow.sklearn.autolog() (its estimator_name tag is "
      "'SVC')"]),
    ("two_scorers", ("--model-a", "best", "--model-b", "C=1, kernel=rbf"),
     ["has no scorer 'score' in cv_results.csv: give --metric 'accuracy' or 'f1_macro'"]),
    ("grid", ("--model-a", "best", "--model-b", "C=1, kernel=linear"),  # the grid's best (seeded splits)
     ["C=1, kernel=linear is named twice (best is C=1, kernel=linear): name different candidates"]),
    ("two_scorers", ("--metric", "accuracy", "--model-a", "best", "--model-b", "C=1, kernel=rbf", "--folds", "200"),
     ["--folds 200 (folds=200) contradicts the search's cv param '5', 5 folds per repeat; leave --folds out"]),
    ("grid", ("--model-a", "best", "--model-b", "C=1, kernel=rbf", "--folds", "10"),
     ["--folds 10 (folds=10) contradicts the search's cv param 'RepeatedStratifiedKFold(n_repeats=2, n_splits=5"]),
    ("shuffle", ("--model-a", "best", "--model-b", "C=1, kernel=rbf", "--folds", "5"),
     ["--folds 5 (folds=5) contradicts the search's cv param 'ShuffleSplit(", "repeated hold-out splits (rho = 0.25)"]),
    ("predefined", ("--model-a", "C=1", "--model-b", "C=10", "--folds", "2"),
     ["the search's 3 splits are not a whole number of repeats of --folds 2 (folds=2)"]),
], ids=["unknown-candidate", "no-cv-results", "not-a-search", "no-such-scorer", "same-candidate", "folds-against-cv",
        "folds-against-repeated-cv", "folds-on-hold-out", "folds-not-whole-repeats"])
def test_bad_search_input_is_refused_and_nothing_logged(searches, case, args, fragments):
    client = MlflowClient(searches["uri"])
    before = len(_comparison_runs(client, searches["experiment_id"]))
    result = CliRunner().invoke(main, ["compare", "--tracking-uri", searches["uri"], "--search-run",
                                       searches[case][0], "--metric", "score", *args])  # a later --metric wins
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Error: " in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    assert len(_comparison_runs(client, searches["experiment_id"])) == before
