"""Fold scores of k models on many datasets with a known truth, for the ranking's calibration (issue 27):

    score(dataset i, model j, fold f) = base_i + mean_j + interaction_ij + fold_if + noise_ijf

``base_i`` a dataset's difficulty, ``mean_j`` the models' true averages (equal in the null scenarios),
``interaction_ij ~ N(0, interaction)`` the dataset × model interaction (each model better on some datasets, worse on
others, as real benchmarks have), ``fold_if ~ N(0, fold)`` a fold's effect shared by every model, ``noise_ijf ~
N(0, noise)``.  The true population difference of two models is mean_j − mean_l; on a next dataset it is
N(mean_j − mean_l, √2 interaction)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Scenario", "INTERACTION", "scores", "model_names"]


@dataclass(frozen=True)
class Scenario:
    """One scenario: the models' true means (greater is better), the sds and the grid."""

    means: tuple[float, ...] = (0.0,) * 5
    interaction: float = 0.01
    datasets: int = 30
    folds: int = 10
    fold: float = 0.02
    noise: float = 0.015
    base: float = 0.8


#: the issue's scenario: five models equal on average, each better on some datasets and worse on others
INTERACTION = Scenario()


def model_names(k: int) -> list[str]:
    return [f"m{j + 1}" for j in range(k)]


def scores(scenario: Scenario, rng: np.random.Generator) -> pd.DataFrame:
    """A tidy table (dataset, model, repeat, fold, folds, score) of one replicate of ``scenario``."""
    k, q, n = len(scenario.means), scenario.datasets, scenario.folds
    truth = (scenario.base + rng.normal(0, 0.05, (q, 1, 1)) + np.asarray(scenario.means)[None, :, None]
             + rng.normal(0, scenario.interaction, (q, k, 1)) + rng.normal(0, scenario.fold, (q, 1, n)))
    y = truth + rng.normal(0, scenario.noise, (q, k, n))
    i, j, f = np.meshgrid(np.arange(q), np.arange(k), np.arange(n), indexing="ij")
    names = np.array(model_names(k))
    return pd.DataFrame({"dataset": [f"d{d}" for d in i.ravel()], "model": names[j.ravel()], "repeat": 0,
                         "fold": f.ravel(), "folds": n, "score": y.ravel()})
