"""Train, log per-fold scores, compare, and gate the promotion of a candidate model on the verdict.

A candidate (random forest) is promoted over the production model (logistic regression) only if the
Bayesian hierarchical test says it is *not worse* on the next dataset with probability >= the threshold:

    python examples/gated_training_pipeline.py                       # sqlite:///mlflow.db in the cwd
    python examples/gated_training_pipeline.py --claim a-better      # stricter gate
    echo $?                                                          # 0 promote, 1 keep production

Each model is cross-validated (5 folds x 4 repeats, the same splits for both; ``--folds``, ``--repeats``) on a few
of scikit-learn's built-in datasets and a few synthetic ones (``--datasets`` picks some); ``log_cv_scores`` logs
each (model, dataset) as one run in the steps layout, ``compare_runs`` logs the comparison run, and ``require``
turns its posterior into the exit code.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial

import numpy as np
from mlflow import MlflowClient
from sklearn.datasets import load_breast_cancer, load_iris, load_wine, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from mlflow_bayescompare import log_cv_scores
from mlflow_bayescompare.pipeline.compare import compare_runs, require

DATASETS = {
    "iris": partial(load_iris, return_X_y=True),
    "wine": partial(load_wine, return_X_y=True),
    "breast_cancer": partial(load_breast_cancer, return_X_y=True),
    **{  # a few synthetic problems of varying difficulty, so the hierarchical model sees more than four datasets
        f"synthetic_{i}": partial(make_classification, n_samples=300, n_features=20, n_informative=i + 2,
                                  class_sep=0.5 + 0.25 * i, random_state=i)
        for i in range(4)
    },
}


def models() -> dict:
    return {
        "production": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        "candidate": RandomForestClassifier(n_estimators=100, random_state=0),
    }


def train_and_log(client: MlflowClient, experiment_id: str, seed: int, datasets: list[str], folds: int,
                  repeats: int) -> None:
    """Cross-validate every model on every dataset with the same splits and log the per-fold accuracies."""
    for dataset in datasets:
        X, y = DATASETS[dataset]()
        splits = list(RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed).split(X, y))
        for name, model in models().items():
            scores = cross_validate(model, X, y, cv=splits, scoring="accuracy")["test_score"]
            log_cv_scores(name, dataset, scores, metric="accuracy", folds=folds, repeats=repeats,
                          experiment_id=experiment_id, client=client, params={"seed": seed})
            print(f"{dataset:>14}  {name:<10}  accuracy {np.mean(scores):.3f}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", help="default: MLFLOW_TRACKING_URI or sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="gated-pipeline")
    parser.add_argument("--claim", default="not-worse", choices=("a-better", "not-worse", "equivalent"))
    parser.add_argument("--threshold", type=float, default=0.95)
    parser.add_argument("--rope", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated, of: %(default)s")
    args = parser.parse_args()
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    if unknown := sorted(set(datasets) - set(DATASETS)):
        parser.error(f"unknown dataset(s) {', '.join(unknown)}; choose from {', '.join(DATASETS)}")

    client = MlflowClient(args.tracking_uri)
    found = client.get_experiment_by_name(args.experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(args.experiment)
    train_and_log(client, experiment_id, args.seed, datasets, args.folds, args.repeats)

    outcome = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="candidate",
                           model_b="production", rope=args.rope, seed=args.seed, threshold=args.threshold,
                           tracking_uri=args.tracking_uri, on_duplicate="latest")
    promote = require(outcome, args.claim, args.threshold)
    print(f"{outcome.verdict}\n  P(candidate better) {outcome.p_a_better:.3f} · P(rope) {outcome.p_rope:.3f} · "
          f"P(production better) {outcome.p_b_better:.3f}\n  comparison run {outcome.run_id}\n"
          f"{'PROMOTE' if promote else 'KEEP PRODUCTION'}: claim '{args.claim}' "
          f"{'holds' if promote else 'does not hold'} at {args.threshold}")
    return 0 if promote else 1


if __name__ == "__main__":
    sys.exit(main())
