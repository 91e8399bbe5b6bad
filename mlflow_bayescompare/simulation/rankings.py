"""Fold scores of k models on many datasets with a known truth, for the ranking's calibration (issue 27):

    score(dataset i, model j, fold f) = base_i + mean_j + interaction_ij + fold_if + noise_ijf

``base_i`` a dataset's difficulty, ``mean_j`` the models' true averages (equal in the null scenarios),
``interaction_ij ~ N(0, interaction_j)`` the dataset × model interaction (each model better on some datasets, worse
on others, as real benchmarks have; one sd for every model, or one per model: steady and erratic models), or
``interaction_j · t_tails / √(tails / (tails − 2))`` (heavy tails, the same sd), ``fold_if ~ N(0, fold)`` a fold's
effect shared by every model, ``noise_ijf ~ N(0, noise)``; ``missing``: each (model, dataset) cell dropped with that
chance (a ragged grid; two models kept per dataset at least).  The true population difference of two models is
mean_j − mean_l; on a next dataset it has the sd √(interaction_j² + interaction_l²)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Scenario", "INTERACTION", "scores", "model_names"]


@dataclass(frozen=True)
class Scenario:
    """One scenario: the models' true means (greater is better), the sds and the grid."""

    means: tuple[float, ...] = (0.0,) * 5
    interaction: float | tuple[float, ...] = 0.01
    datasets: int = 30
    folds: int = 10
    fold: float = 0.02
    noise: float = 0.015
    base: float = 0.8
    tails: float | None = None
    missing: float = 0.0


#: the issue's scenario: five models equal on average, each better on some datasets and worse on others
INTERACTION = Scenario()


def model_names(k: int) -> list[str]:
    return [f"m{j + 1}" for j in range(k)]


def scores(scenario: Scenario, rng: np.random.Generator) -> pd.DataFrame:
    """A tidy table (dataset, model, repeat, fold, folds, score) of one replicate of ``scenario``."""
    k, q, n = len(scenario.means), scenario.datasets, scenario.folds
    sd = np.broadcast_to(np.asarray(scenario.interaction, dtype=float), (k,))[None, :, None]
    tails = scenario.tails
    shape = (q, k, 1)
    spread = (rng.normal(0, 1, shape) if tails is None
              else rng.standard_t(tails, shape) / np.sqrt(tails / (tails - 2)))
    truth = (scenario.base + rng.normal(0, 0.05, (q, 1, 1)) + np.asarray(scenario.means)[None, :, None]
             + sd * spread + rng.normal(0, scenario.fold, (q, 1, n)))
    y = truth + rng.normal(0, scenario.noise, (q, k, n))
    i, j, f = np.meshgrid(np.arange(q), np.arange(k), np.arange(n), indexing="ij")
    names = np.array(model_names(k))
    frame = pd.DataFrame({"dataset": [f"d{d}" for d in i.ravel()], "model": names[j.ravel()], "repeat": 0,
                          "fold": f.ravel(), "folds": n, "score": y.ravel()})
    return _ragged(frame, scenario.missing, rng) if scenario.missing else frame


def _ragged(frame: pd.DataFrame, share: float, rng: np.random.Generator) -> pd.DataFrame:
    """``frame`` without each (model, dataset) cell with chance ``share``, two models kept per dataset at least."""
    models, datasets = pd.unique(frame["model"]), pd.unique(frame["dataset"])
    kept = rng.random((len(datasets), len(models))) >= share
    for row in kept:
        if row.sum() < 2:
            row[rng.choice(len(models), 2, replace=False)] = True
    cells = {(d, m) for d, keep in zip(datasets, kept) for m, k in zip(models, keep) if k}
    return frame[[cell in cells for cell in zip(frame["dataset"], frame["model"])]].reset_index(drop=True)
