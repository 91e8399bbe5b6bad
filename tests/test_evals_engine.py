"""``compare_evaluations`` and ``rank_evaluations`` (``families/evals/engine.py``, with its ``result.py`` and
``details.py``): the same draws as the models, the package's verdict rule and orientation, several scorers, clusters,
repeats, the items that would decide, k systems, and the settings refused up front."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mlflow_bayescompare.families.evals import (
    EvalComparisonResult,
    EvalComparisons,
    compare_evaluations,
    rank_evaluations,
)
from mlflow_bayescompare.families.evals.kinds import Kind
from mlflow_bayescompare.families.evals.models import paired_draws
from mlflow_bayescompare.simulation.evals import simulate, to_table
from mlflow_bayescompare.vocabulary import claims
from mlflow_bayescompare.vocabulary.errors import InputError


def simulated(seed: int, effect: float = 0.0, kind: str = "pass_fail", items: int = 120, **settings) -> pd.DataFrame:
    values, clusters = simulate(np.random.default_rng(seed), items=items, kind=kind, effect=effect, **settings)
    return to_table(values, clusters, scorer=kind)


def test_one_scorer_gives_the_models_draws_and_the_packages_verdict():
    """A scorer named alone gives an :class:`EvalComparisonResult` whose draws are the model's (same seed, same
    clusters); its probabilities are the draws' masses beyond and inside the rope, oriented as every test's, and the
    decision is the package's rule."""
    frame = simulated(1, effect=0.4, cluster_size=4, icc=0.3)
    result = compare_evaluations(frame, "A", "B", "pass_fail", seed=7)
    assert isinstance(result, EvalComparisonResult) and result.settings["rope"] == 0.01
    a = frame[frame.system == "A"]["value"].to_numpy(float)
    b = frame[frame.system == "B"]["value"].to_numpy(float)
    model = paired_draws(a, b, Kind("pass_fail", True, (0, 1)), frame[frame.system == "A"]["cluster"], seed=7)
    np.testing.assert_array_equal(result.draws, model.difference)
    assert result.p_b_better == pytest.approx((model.difference > 0.01).mean())
    assert result.p_a_better + result.p_rope + result.p_b_better == pytest.approx(1.0)
    assert result.decision == "b_better" and result.p_b_better >= 0.95 and result.counts["clusters"] == 30
    n01, n10 = result.counts["table"]["n01"], result.counts["table"]["n10"]
    assert result.baseline["p_value"] == pytest.approx(stats.binomtest(n01, n01 + n10).pvalue)
    out = result.to_dict()
    json.dumps(out)
    assert out["test"] == "paired-evals" and out["difference"]["mean"] == pytest.approx(model.difference.mean())
    assert "draws" not in out and result.line().startswith("pass_fail: B − A = +")


def test_a_faster_candidate_is_better_on_a_resource():
    """Latency is lower-is-better on the log scale: B 15% faster is 'b_better', the difference a ratio below 1."""
    result = compare_evaluations(simulated(2, effect=0.3, kind="latency", items=200), "A", "B", "latency", seed=1)
    assert result.kind["kind"] == "log" and not result.greater_is_better
    assert result.decision == "b_better" and result.p_b_better == pytest.approx((result.draws < -0.01).mean())
    assert result.difference["ratio_mean"] == pytest.approx(np.exp(-0.15), abs=0.04)
    assert result.means["B"]["mean"] < result.means["A"]["mean"]


def test_several_scorers_make_one_decision():
    """Several scorers give an :class:`EvalComparisons`: a result per scorer, the line of the package's combined
    decision (about B, the candidate), and a claim per scorer through :func:`.claims.reports`."""
    frame = pd.concat([simulated(3, effect=0.5, kind="continuous"),
                       simulated(3, effect=0.0, kind="ordinal")])
    result = compare_evaluations(frame, "A", "B", seed=2, rope={"continuous": 0.05})
    assert isinstance(result, EvalComparisons) and list(result.by_scorer) == ["continuous", "ordinal"]
    assert result.by_scorer["continuous"].rope == 0.05 and result.by_scorer["ordinal"].rope == pytest.approx(0.04)
    assert result.decisions["continuous"] == "b_better"
    assert result.line().startswith("B vs A: B is better on continuous")
    checked = claims.reports(result, "not-worse", 0.95)
    assert set(checked) == {"continuous", "ordinal"}
    assert checked["continuous"].probability == pytest.approx(result.by_scorer["continuous"].p_a_better
                                                              + result.by_scorer["continuous"].p_rope)
    json.dumps(result.to_dict())


def test_clusters_widen_the_answer_and_can_be_ignored():
    """Items in clusters of 10 whose systems' deviations correlate (ICC 0.7): the clusters' answer is wider than
    the items' one, which treats the 200 items as independent."""
    frame = simulated(4, kind="continuous", items=200, cluster_size=10, icc=0.7)
    clustered = compare_evaluations(frame, "A", "B", "continuous", seed=3)
    items = compare_evaluations(frame, "A", "B", "continuous", seed=3, cluster=False)
    assert clustered.counts["clusters"] == 20 and items.counts["clusters"] is None
    assert clustered.difference["sd"] > 1.8 * items.difference["sd"]


def test_repeats_report_their_counts_and_the_share_of_noise():
    """Three repeats per item with judge noise: counted per system, and the noise share is mean(s²_A/3 + s²_B/3)
    over var(d), as computed by hand from the table."""
    frame = simulated(5, kind="continuous", items=60, repeats=3, judge_noise=1.0)
    result = compare_evaluations(frame, "A", "B", "continuous", seed=4)
    wide = frame.pivot_table(index="item", columns="system", values="value", aggfunc=["mean", "var"])
    d = wide["mean"]["B"] - wide["mean"]["A"]
    share = ((wide["var"]["A"] + wide["var"]["B"]) / 3).mean() / d.var()
    assert result.repeats["A"] == {"min": 3, "mean": 3.0, "max": 3}
    assert result.repeats["noise_share"] == pytest.approx(share, rel=1e-9) and 0.2 < share < 0.9


def test_an_inconclusive_answer_says_how_many_items_would_decide():
    result = compare_evaluations(simulated(6, effect=0.15, kind="continuous", items=60), "A", "B", "continuous",
                                 seed=5)
    assert result.decision == "inconclusive"
    more = result.more_items
    assert more["unit"] == "items" and more["seen"] == 60 and more["total"] > 60 and "1/sqrt(n)" in more["assumes"]


def test_k_systems_share_their_weights():
    """Three systems: P(best) sums to 1, the leader is the reference, and the two-system ranking's versus row has
    exactly the comparison's probabilities (the same draws from the same seed)."""
    values, clusters = simulate(np.random.default_rng(7), items=150, systems=3, effect=0.5, kind="pass_fail")
    values[:, 2] = values[:, 0]  # C repeats A: B leads
    frame = to_table(values, clusters, scorer="correct")
    ranking = rank_evaluations(frame, seed=6).by_scorer["correct"]
    assert ranking.ranking["p_best"].sum() == pytest.approx(1.0) and ranking.reference == "B"
    assert list(ranking.versus["system"]) in (["A", "C"], ["C", "A"])
    assert set(ranking.versus["decision"]) == {"worse"} and "worse than 'B'" in ranking.statement
    pair = rank_evaluations(frame, ["A", "B"], vs="A", seed=8).by_scorer["correct"].versus.iloc[0]
    compared = compare_evaluations(frame, "A", "B", "correct", seed=8)
    assert (pair["p_better"], pair["p_rope"], pair["p_worse"]) == pytest.approx(
        (compared.p_b_better, compared.p_rope, compared.p_a_better), abs=1e-12)


def test_a_ranking_with_nothing_decided_says_so():
    frame = simulated(10, kind="continuous", items=30, systems=3)
    ranking = rank_evaluations(frame, seed=9).by_scorer["continuous"]
    assert set(ranking.versus["decision"]) == {"inconclusive"}
    assert ranking.statement.startswith("continuous: no system is decided better, worse or practically equivalent "
                                        f"against {ranking.reference!r} at P >= 0.95; the nearest is")


@pytest.mark.parametrize("settings, message", [
    ({"threshold": 1.0}, "threshold must lie between 0 and 1"),
    ({"draws": 10}, "draws must be a whole number from 100"),
    ({"alpha": -1}, "alpha must be a number >= 0"),
    ({"rope": -0.1}, "rope of scorer 'pass_fail' must be a number > 0; got -0.1"),
    ({"rope": {"rouge": 0.1}}, "rope names scorers not compared: 'rouge'"),
])
def test_bad_settings_are_refused_up_front(settings, message):
    with pytest.raises(InputError, match=message):
        compare_evaluations(simulated(9), "A", "B", **settings)


def test_a_vs_that_is_no_system_is_refused():
    with pytest.raises(InputError, match="vs names 'D', which is not among the systems ranked"):
        rank_evaluations(simulated(10), vs="D")


def test_the_family_needs_no_mlflow():
    """Pure numpy/scipy: importing the family and comparing leave MLflow unimported."""
    probe = ("import sys, numpy as np; from mlflow_bayescompare.families.evals import compare_evaluations; "
             "from mlflow_bayescompare.simulation.evals import simulate, to_table; "
             "compare_evaluations(to_table(*simulate(np.random.default_rng(1), items=20)), 'A', 'B', seed=1); "
             "print('mlflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
