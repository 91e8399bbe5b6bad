"""Log per-fold CV scores of two scikit-learn models on four built-in datasets, ready for mlflow-bayescompare.

    python examples/log_cv_scores_sklearn.py [--tracking-uri sqlite:///mlflow.db] [--experiment sklearn-cv]

Each (model, dataset) pair becomes one run in the steps layout: metric ``accuracy`` with step = fold index
(repeat * folds + fold), tags ``model`` / ``dataset``, params ``cv_folds`` / ``cv_repeats``.  Both models see
the same folds (one RepeatedStratifiedKFold with a fixed seed), as the paired test requires.
"""

from __future__ import annotations

import argparse

import mlflow
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from mlflow_bayescompare import log_cv_scores

DATASETS = {"breast_cancer": load_breast_cancer, "wine": load_wine, "iris": load_iris, "digits": load_digits}
MODELS = {
    "logreg": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
    "rf": lambda: RandomForestClassifier(n_estimators=100, random_state=0),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tracking-uri", default=None, help="default: MLflow's (env MLFLOW_TRACKING_URI or ./mlflow.db)")
    ap.add_argument("--experiment", default="sklearn-cv")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if args.tracking_uri:
        mlflow.set_tracking_uri(args.tracking_uri)
    experiment_id = mlflow.set_experiment(args.experiment).experiment_id
    cv = RepeatedStratifiedKFold(n_splits=args.folds, n_repeats=args.repeats, random_state=42)
    for dataset, load in DATASETS.items():
        X, y = load(return_X_y=True)
        for model, make in MODELS.items():
            # cross_validate returns test scores in split order: repeat-major, i.e. repeat * folds + fold
            scores = cross_validate(make(), X, y, cv=cv, scoring="accuracy", n_jobs=-1)["test_score"]
            run_id = log_cv_scores(model, dataset, scores, metric="accuracy", folds=args.folds,
                                   repeats=args.repeats, experiment_id=experiment_id)
            print(f"{model:>7} on {dataset:<14} mean accuracy {scores.mean():.4f}  run {run_id}")
    print(f"\nRead them back: collect_scores(MlflowClient(), ['{experiment_id}'], 'accuracy').tensor('rf', 'logreg')")


if __name__ == "__main__":
    main()
