"""Log a small slice of the paper's UCI data (tests/data/uci_classification.csv) as MLflow runs, steps layout; and
list what a run holds (:func:`artifact_paths`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from mlflow.entities import Metric

from mlflow_bayescompare.reads.cvlog import log_cv_scores

DATA = Path(__file__).parent / "data" / "uci_classification.csv"
CLASSIFIERS = {1: "nbc", 2: "aode", 3: "hnb", 4: "j48", 5: "j48gr"}
#: six datasets on which hnb beats nbc by 0.03-0.05 (a clear verdict even with q = 6) while j48 is mixed
DATASETS = (20, 21, 24, 27, 28, 30)


def uci_scores(models=("nbc", "hnb", "j48"), datasets=DATASETS) -> dict[tuple[str, str], list[float]]:
    """``(model, dataset) -> 100 accuracies`` (10 runs x 10 folds, run-major) on the UCI ``datasets`` ids."""
    df = pd.read_csv(DATA)
    df["model"] = df["ClassifierID"].map(CLASSIFIERS)
    df = df[df["model"].isin(models) & df["DatasetID"].isin(datasets)].sort_values(["Key.Run", "Key.Fold"])
    return {(m, f"uci{d:02d}"): g["Percent.correct"].tolist() for (m, d), g in df.groupby(["model", "DatasetID"])}


def log_uci(client, experiment_id: str, models=("nbc", "hnb", "j48"), datasets=DATASETS) -> dict[tuple[str, str], str]:
    """Log the slice into ``experiment_id``; returns ``(model, dataset) -> run_id``."""
    return {
        key: log_cv_scores(key[0], key[1], scores, metric="accuracy", folds=10, repeats=10,
                           experiment_id=experiment_id, client=client)
        for key, scores in uci_scores(models, datasets).items()
    }


def log_means(client, experiment_id: str, models=("nbc", "hnb"), datasets=DATASETS) -> dict[tuple[str, str], float]:
    """The means layout: one run per (model, dataset) holding the mean accuracy of its 100 folds, logged once;
    returns ``(model, dataset) -> mean``."""
    means = {}
    for (model, dataset), scores in uci_scores(models, datasets).items():
        run = client.create_run(experiment_id, tags={"model": model, "dataset": dataset})
        means[model, dataset] = sum(scores) / len(scores)
        client.log_batch(run.info.run_id, metrics=[Metric("accuracy", means[model, dataset], 0, 0)])
        client.set_terminated(run.info.run_id)
    return means


def artifact_paths(client, run_id: str, path: str | None = None) -> list[str]:
    """Every artifact file of the run, recursively, sorted."""
    out = []
    for item in client.list_artifacts(run_id, path):
        out += artifact_paths(client, run_id, item.path) if item.is_dir else [item.path]
    return sorted(out)


#: a second metric of :func:`log_uci_with_time`'s runs: seconds to fit, lower is better (hnb twice as slow as nbc)
FIT_SECONDS = {"nbc": 1.0, "hnb": 2.0, "j48": 1.5}


def log_uci_with_time(client, experiment_id: str, models=("nbc", "hnb"), datasets=DATASETS, seed: int = 7,
                      missing=()) -> dict[tuple[str, str], str]:
    """:func:`log_uci`, each run also holding ``fit_time`` per fold: :data:`FIT_SECONDS` of its model times
    N(1, 0.05) noise (from ``seed``), except for the ``(model, dataset)`` runs in ``missing``."""
    rng = np.random.default_rng(seed)
    runs = log_uci(client, experiment_id, models, datasets)
    for key, run_id in runs.items():
        times = FIT_SECONDS[key[0]] * rng.normal(1.0, 0.05, 100)
        if key not in missing:
            client.log_batch(run_id, metrics=[Metric("fit_time", float(t), 0, step) for step, t in enumerate(times)])
    return runs
