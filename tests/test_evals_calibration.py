"""Calibration of the evaluation comparisons under clustered items (``simulation/evals.py``), a fast version of
``benchmarks/bench_evals_calibration.py``: two equal systems on 100 items in 10 clusters whose deviations correlate
(ICC 0.7).  Counting the clusters keeps the false "B better" calls at the 0.95 rule near 5%; treating the items as
independent multiplies them (Miller 2024, "Adding error bars to evals", Sec. 2.2)."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_bayescompare.families.evals.kinds import Kind
from mlflow_bayescompare.families.evals.models import paired_draws
from mlflow_bayescompare.families.evals.result import three_way
from mlflow_bayescompare.simulation.evals import simulate


@pytest.mark.slow
@pytest.mark.parametrize("kind, scale", [("continuous", Kind("continuous", True)),
                                         ("pass_fail", Kind("pass_fail", True, (0, 1)))])
def test_clusters_keep_false_alarms_near_five_percent(kind, scale):
    """300 replicates (a 5% rate gives 15 ± 4): at most 6% called "B better" with the clusters, at least 15% with
    the items taken as independent; the rope is 1e-9, the hardest case."""
    rng, hits = np.random.default_rng(2026), np.zeros(2)
    for replicate in range(300):
        values, clusters = simulate(rng, items=100, kind=kind, cluster_size=10, icc=0.7)
        for j, labels in enumerate((clusters, None)):
            draws = paired_draws(values[:, 0, 0], values[:, 1, 0], scale, labels, seed=replicate).difference
            hits[j] += three_way(draws, 1e-9, True, "A", "B", 0.95)["decision"] == "b_better"
    clustered, ignored = hits / 300
    assert clustered <= 0.06 and ignored >= 0.15
