"""Several evaluation suites (``families/evals/suites.py``): the hierarchical test's input built from each suite's
paired items (or clusters), and the test run on it answering for the next suite."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlflow_bayescompare import hierarchical_test
from mlflow_bayescompare.families.evals import suite_inputs
from mlflow_bayescompare.simulation.evals import simulate, to_table
from mlflow_bayescompare.vocabulary.errors import InputError


def suites(seed: int, effects: dict[str, float], items: int = 60, **settings) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for suite, effect in effects.items():
        values, clusters = simulate(rng, items=items, kind="continuous", effect=effect, **settings)
        frames.append(to_table(values, clusters, scorer="quality").assign(suite=suite))
    return pd.concat(frames, ignore_index=True)


def test_each_suite_gives_its_items_differences_a_minus_b():
    frame = suites(1, {"math": 0.3, "code": 0.0})
    inputs = suite_inputs(frame, "A", "B", "quality")
    assert inputs["datasets"] == ["math", "code"] and inputs["rho"] == 0.0 and inputs["rope"] == 0.01
    wide = frame.pivot_table(index=["suite", "item"], columns="system", values="value")
    for suite, diffs in zip(inputs["datasets"], inputs["diffs"]):
        np.testing.assert_allclose(np.sort(diffs), np.sort((wide.loc[suite]["A"] - wide.loc[suite]["B"]).to_numpy()))
    assert (inputs["model_a"], inputs["model_b"], inputs["greater_is_better"]) == ("A", "B", True)


def test_clusters_are_a_suites_units():
    frame = suites(2, {"s1": 0.0, "s2": 0.0}, cluster_size=6, icc=0.5)
    inputs = suite_inputs(frame, "A", "B", "quality")
    assert [len(d) for d in inputs["diffs"]] == [10, 10]
    assert [len(d) for d in suite_inputs(frame, "A", "B", "quality", cluster=False)["diffs"]] == [60, 60]


@pytest.mark.parametrize("frame, message", [
    (suites(3, {"only": 0.0}), r"the table holds 1 suite; the model across suites needs at least 2"),
    (suites(3, {"": 0.0}), r"the table names no suite"),
    (pd.concat([suites(3, {"s1": 0.0}), suites(4, {"s2": 0.0}, items=1)]), r"suite 's2' has 1 paired items"),
])
def test_too_few_suites_or_units_are_refused(frame, message):
    with pytest.raises(InputError, match=message):
        suite_inputs(frame, "A", "B", "quality", min_overlap=0.0)


@pytest.mark.slow
def test_the_hierarchical_test_answers_for_the_next_suite():
    """Four suites on which B is better by 0.5 (latent units, sd 1.4 per item): the hierarchical test, on the input
    built here, finds B better on the next suite (one Stan fit)."""
    frame = suites(5, {"s1": 0.5, "s2": 0.4, "s3": 0.6, "s4": 0.5}, items=80)
    result = hierarchical_test(**suite_inputs(frame, "A", "B", "quality"), seed=1)
    assert result.decision == "b_better" and result.delta0["mean"] == pytest.approx(-0.5, abs=0.2)
