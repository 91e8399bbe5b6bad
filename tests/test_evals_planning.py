"""About how many items would decide an inconclusive comparison (``families/evals/planning.py``): items that look
like those seen, in the number it gives, do bring the leading outcome's probability to the threshold."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_bayescompare.families.evals.models import continuous_draws
from mlflow_bayescompare.families.evals.planning import units_to_decide


def shaped(n: int, mean: float, seed: int) -> np.ndarray:
    """n differences with exactly this mean and a standard deviation of 1: items "like those seen"."""
    x = np.random.default_rng(seed).normal(size=n)
    return mean + (x - x.mean()) / x.std()


@pytest.mark.parametrize("mean, rope, leading", [(0.25, 0.01, "above"), (-0.2, 0.01, "below"),
                                                  (0.01, 0.1, "inside")])
def test_the_items_it_asks_for_decide(mean, rope, leading):
    """40 items leave it undecided; the number it gives, drawn alike (same mean and spread), reaches 0.95 within
    0.03 for B better, A better and practical equivalence."""
    seen = continuous_draws(np.zeros(40), shaped(40, mean, 1), draws=20_000, seed=2).difference
    plan = units_to_decide(seen, rope, 0.95, 40, leading)
    assert plan["total"] > 40 and plan["more"] == plan["total"] - 40 and plan["leading"] == leading
    more = continuous_draws(np.zeros(plan["total"]), shaped(plan["total"], mean, 3), draws=20_000, seed=4).difference
    reached = {"above": (more > rope).mean(), "below": (more < -rope).mean(),
               "inside": (np.abs(more) <= rope).mean()}[leading]
    assert reached == pytest.approx(0.95, abs=0.03)


def test_no_number_of_such_items_decides_a_difference_inside_the_rope_leaning_out():
    draws = np.random.default_rng(5).normal(0.008, 0.02, 4000)
    plan = units_to_decide(draws, 0.01, 0.95, 50, "above", "clusters")
    assert plan["total"] is None and plan["more"] is None and "would not decide it" in plan["note"]
    assert units_to_decide(np.zeros(100), 0.01, 0.95, 50, "inside")["total"] == 50
