"""Evaluation runs with known truth, under the misspecification real evaluations have, for the calibration and
power studies of the evaluation comparisons (``benchmarks/bench_evals_calibration.py``, ``tests/test_evals_*``).

The latent quality of system s on item i, repeat r, is

    y_sir = μ + z_i + e_sc + ε_si + η_sir + effect_s

* z_i ~ N(0, 1): the item's difficulty, shared by every system (what pairing removes; Miller 2024, Sec. 4);
* e_sc ~ N(0, icc), ε_si ~ N(0, 1 − icc): the system's own deviation on the item, split into a part shared by the
  items of cluster c (a passage, a template) and the item's own, so that the deviations of one system on two items
  of a cluster correlate by ``icc`` (Miller 2024, Sec. 2.2: clustered standard errors);
* η_sir ~ N(0, judge_noise²): a repeat's own noise (a sampled answer, an LLM judge's verdict);
* effect_s: 0 for the first system, ``effect`` for the others (0: equal systems, exchangeable in distribution).

A kind turns y into the value a scorer logs: ``pass_fail`` y > 0; ``ordinal`` the 1-5 level of y (cut at ±0.5,
±1.5); ``continuous`` y itself; ``log`` a latency exp(−y/2) (lower is better, so a better system is faster).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["CUTS", "KIND_OF", "simulate", "to_table"]

#: the 1-5 levels' cut points of the latent quality
CUTS = (-1.5, -0.5, 0.5, 1.5)
#: the evaluation family's kind of each simulated kind of value
KIND_OF = {"pass_fail": "pass_fail", "ordinal": "ordinal", "continuous": "continuous", "latency": "log"}


def simulate(rng: np.random.Generator, *, items: int, kind: str = "pass_fail", systems: int = 2,
             cluster_size: int = 1, icc: float = 0.0, repeats: int = 1, judge_noise: float = 0.0,
             effect: float = 0.0, mu: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """(values, clusters): values (items, systems, repeats) of ``kind`` (module docstring), clusters (items,) the
    cluster of each item (consecutive runs of ``cluster_size`` items)."""
    clusters = np.arange(items) // cluster_size
    n_clusters = int(clusters[-1]) + 1
    z = rng.normal(size=(items, 1, 1))
    shared = rng.normal(0, np.sqrt(icc), size=(n_clusters, systems))[clusters][:, :, None]
    own = rng.normal(0, np.sqrt(1 - icc), size=(items, systems, 1))
    noise = rng.normal(0, judge_noise, size=(items, systems, repeats)) if judge_noise else 0.0
    shift = np.r_[0.0, np.full(systems - 1, effect)][None, :, None]
    y = mu + z + shared + own + noise + shift
    if kind == "pass_fail":
        return (y > 0).astype(float), clusters
    if kind == "ordinal":
        return 1.0 + np.searchsorted(CUTS, y), clusters
    if kind == "latency":
        return np.exp(-y / 2), clusters
    if kind == "continuous":
        return y, clusters
    raise ValueError(f"unknown kind {kind!r}: one of {', '.join(KIND_OF)}")


def to_table(values: np.ndarray, clusters: np.ndarray, scorer: str = "score",
             systems: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The evaluation comparisons' tidy table of :func:`simulate`'s values (systems named A, B, C, ... unless
    given): one row per (system, item, repeat), with the scorer and the cluster ("" when each item is its own)."""
    items, k, repeats = values.shape
    names = systems or tuple(chr(ord("A") + j) for j in range(k))
    item, system, repeat = np.meshgrid(np.arange(items), np.arange(k), np.arange(repeats), indexing="ij")
    labels = np.char.add("c", clusters.astype(str)) if len(np.unique(clusters)) < items else np.full(items, "")
    return pd.DataFrame({"system": np.asarray(names, dtype=object)[system.ravel()],
                         "item": np.char.add("q", item.ravel().astype(str)).astype(object),
                         "repeat": repeat.ravel(), "scorer": scorer, "value": values.ravel(),
                         "cluster": labels[item.ravel()].astype(object)})
