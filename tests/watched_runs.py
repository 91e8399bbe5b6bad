"""What the watch tests share (test_watch.py, test_watch_cli.py, test_watch_server.py): a design, repeats of two
models' 10-fold CV logged one run each (:func:`log_repeat`), an evaluation's long table of pass/fail items
(:func:`long_table`), and the watch runs of an experiment."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.vocabulary import tags as T

__all__ = ["FOLDS", "DESIGN", "log_repeat", "long_table", "watch_runs_in"]

FOLDS = 10
#: a look at every repeat from 2 to 8; with a shift of 0.02 (log_repeat, seeds 0, 1, …) P(rf better) is 0.888 at
#: 2 repeats, 0.947 at 3 and 0.967 at 4, where it decides
DESIGN = dict(test="correlated-t", rope=0.01, threshold=0.95, min_size=2, max_size=8, folds=FOLDS, planning_sd=0.03)


def log_repeat(client, experiment_id, seed: int, shift: float, models=("rf", "svm"), dataset="iris") -> np.ndarray:
    """One repeat of FOLDS folds of each model, logged as a run each (A first); returns A - B."""
    rng = np.random.default_rng(seed)
    b = np.clip(rng.normal(0.80, 0.02, FOLDS), 0, 1)
    a = np.clip(b + shift + rng.normal(0, 0.015, FOLDS), 0, 1)
    for model, scores in zip(models, (a, b)):
        log_cv_scores(model, dataset, scores, folds=FOLDS, experiment_id=experiment_id, client=client)
    return a - b


def watch_runs_in(client, experiment_id) -> list:
    return client.search_runs([experiment_id], f"tags.`{T.KIND}` = '{T.WATCH}'")


def long_table(items: range, passes) -> str:
    """A harness's long table (``eval_scores.csv``) of scorer ``correct``: item ``q<i>`` passes when ``passes(i)``."""
    buffer = io.StringIO()
    pd.DataFrame({"item": [f"q{i}" for i in items], "scorer": "correct",
                  "value": [float(passes(i)) for i in items]}).to_csv(buffer, index=False)
    return buffer.getvalue()
