"""log_cv_scores: validation and a round trip through a real sqlite store."""

from __future__ import annotations

import mlflow
import numpy as np
import pytest

from mlflow_bayescompare.reads.collect import collect_scores
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.vocabulary.errors import InputError


def test_round_trip(client, experiment_id):
    rng = np.random.default_rng(0)
    scores = {(m, d): rng.uniform(0.6, 0.9, 15) for m in ("rf", "svm") for d in ("iris", "wine")}
    ids = {key: log_cv_scores(*key, s, metric="f1", folds=5, repeats=3, experiment_id=experiment_id, client=client,
                              params={"depth": 3}, tags={"team": "a"}) for key, s in scores.items()}
    run = client.get_run(ids["rf", "iris"])
    assert run.info.status == "FINISHED" and run.info.run_name == "rf on iris"
    assert run.data.params == {"cv_folds": "5", "cv_repeats": "3", "depth": "3"}
    assert {"model": "rf", "dataset": "iris", "team": "a"}.items() <= run.data.tags.items()
    history = client.get_metric_history(run.info.run_id, "f1")
    assert sorted(m.step for m in history) == list(range(15))

    result = collect_scores(client, [experiment_id], "f1")
    assert (result.layout, result.folds) == ("steps", {"iris": 5, "wine": 5})
    t = result.tensor("rf", "svm")
    for name, diff in zip(t.datasets, t.diffs):
        np.testing.assert_allclose(diff, scores["rf", name] - scores["svm", name])
    assert t.table["repeat"].max() == 2


def test_default_client_and_active_experiment(tracking_uri, monkeypatch):
    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)  # set_experiment sets both
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    eid = mlflow.set_experiment("active").experiment_id
    run_id = log_cv_scores("rf", "iris", [0.8, 0.9, 0.7], folds=3)
    assert mlflow.MlflowClient(tracking_uri).get_run(run_id).info.experiment_id == eid


def test_more_than_one_batch_of_folds(client, experiment_id):
    run_id = log_cv_scores("rf", "big", np.linspace(0, 1, 1200), folds=100, repeats=12,
                           experiment_id=experiment_id, client=client)
    assert len(client.get_metric_history(run_id, "accuracy")) == 1200


@pytest.mark.parametrize("scores, kwargs, text", [
    ([0.8, 0.9], dict(folds=3), "got 2 scores but folds * repeats = 3 * 1 = 3"),
    ([0.8, np.nan, np.inf], dict(folds=3), "non-finite scores at fold index 1 (nan), 2 (inf)"),
    ([[0.8, 0.9]], dict(folds=2), "scores must be 1-D (one score per fold), got shape (1, 2)"),
    (["a", "b"], dict(folds=2), "scores must be numbers"),
    ([0.8, 0.9], dict(folds=1), "folds must be an integer >= 2, got 1"),
    ([0.8, 0.9], dict(folds=2, repeats=0), "repeats must be an integer >= 1, got 0"),
    ([0.8, 0.9], dict(folds=2.5), "folds must be an integer >= 2, got 2.5"),
    ([0.8, 0.9], dict(folds=2, metric="a/../b"), "metric 'a/../b' is not a key MLflow accepts, with its summaries: "
                                                 "'a/../b', 'a/../b_mean', 'a/../b_std'"),
])
def test_bad_input(client, experiment_id, scores, kwargs, text):
    with pytest.raises(InputError) as e:
        log_cv_scores("rf", "iris", scores, experiment_id=experiment_id, client=client, **kwargs)
    assert str(e.value).startswith("Cannot log scores of model 'rf' on dataset 'iris':")
    assert text in e.value.problems
    assert client.search_runs([experiment_id]) == []
