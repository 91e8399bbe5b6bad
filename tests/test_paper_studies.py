"""Small-scale versions of the paper's simulation studies (Corani et al. 2017, Sec. "Experiments").

They run ``mlflow_bayescompare.simulation`` with fixed seeds and few replicates and assert the paper's qualitative
claims with margins; ``examples/reproduce_paper/studies.py`` runs them at full scale.
"""

import numpy as np
import pandas as pd
import pytest

from mlflow_bayescompare.simulation import friedman, studies

FIT = dict(chains=2, draws=500, warmup=500)


@pytest.mark.parametrize("delta", [-0.05, 0.0, 0.005, 0.02, 0.1])
def test_known_delta_cv_reproduces_delta(delta):
    """Appendix generator: the mean CV difference is unbiased for delta_i."""
    x = studies.known_delta_cv(np.full(2000, delta), rng=np.random.default_rng(0))
    assert x.shape == (2000, 100)
    means = x.mean(axis=1)
    assert abs(means.mean() - delta) < 4 * means.std(ddof=1) / np.sqrt(means.size)
    # MLE error: about [theta_f (1 - theta_f) + theta_g (1 - theta_g)] / n, .00036 at delta = 0 (Table "MSE")
    theta_g = studies.THETA_F + delta
    expected = (0.9 * 0.1 + theta_g * (1 - theta_g)) / studies.N_INSTANCES
    assert np.mean((means - delta) ** 2) == pytest.approx(expected, rel=0.2)


def test_known_delta_cv_rejects_unreachable_delta():
    with pytest.raises(ValueError, match="delta must lie in"):
        studies.known_delta_cv([0.2], rng=np.random.default_rng(0))


def test_known_delta_cv_is_seeded():
    a, b = (studies.known_delta_cv([0.01, 0.02], rng=np.random.default_rng(7)) for _ in range(2))
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_shrinkage_beats_mle():
    """Table "MSE": the hierarchical shrinkage estimates have lower MSE than the CV means for every q."""
    summary = studies.summarise(studies.mse_study(qs=(5, 10, 50), reps=6, seed=1, **FIT), "q")
    assert (summary.mse_shrinkage < 0.8 * summary.mse_mle).all(), summary


@pytest.mark.slow
def test_equivalent_classifiers():
    """Sec. "Comparison of equivalent classifiers": P(rope) grows with q; never a 95% claim of a difference."""
    runs = studies.equivalence_study(delta0=0.0, qs=(10, 50), reps=8, seed=2, **FIT)
    summary = studies.summarise(runs, "q")
    assert summary.mean_p_rope[50] > summary.mean_p_rope[10] + 0.1, summary
    assert not ((runs.p_left > 0.95) | (runs.p_right > 0.95)).any(), runs


@pytest.mark.slow
def test_equivalence_recognition_is_the_delta0_mass():
    """Sec. "Comparison of equivalent classifiers", q = 50, n = 500: equivalence is recognised in ~70% of runs.
    That is the rate of P(delta0 in rope) > 0.95, the statistic the authors' simulation driver stored (their results
    file: 0.73; 240 replicates here: 0.74), not of the next-dataset P(rope) > 0.95 the paper's text defines (0.29).
    20 replicates give a binomial sd of 0.10 around 0.7; the band [0.45, 0.9] (9 to 18 of 20) holds that and, with
    this seed, rejects the argmax statistic (3 of 20), n = 1000 (20 of 20) and n = 250 (6 of 20); n = 500 gives
    15 of 20."""
    runs = studies.equivalence_study(delta0=0.0, qs=(50,), reps=20, seed=5, **FIT)
    delta0_rate = (runs.p_delta0_rope > 0.95).mean()
    argmax_rate = (runs.p_rope > 0.95).mean()
    assert 0.45 <= delta0_rate <= 0.9, runs
    assert delta0_rate >= argmax_rate + 0.25, runs
    assert runs.p_delta0_rope.median() > 0.9, runs  # the paper: "larger than 90%"; the authors' file: 0.976
    np.testing.assert_allclose(runs[["p_delta0_left", "p_delta0_rope", "p_delta0_right"]].sum(axis=1), 1)
    assert not ((runs.p_delta0_left > 0.95) | (runs.p_delta0_right > 0.95)).any(), runs


@pytest.mark.slow
def test_practically_equivalent_classifiers():
    """Sec. "Comparison of practically equivalent classifiers" (delta0 = 0.005, q = 50): the signed-rank test
    rejects more often than the hierarchical test claims a difference (which the paper never saw)."""
    runs = studies.equivalence_study(delta0=0.005, qs=(50,), reps=16, seed=3, **FIT)
    hier_claims = ((runs.p_left > 0.95) | (runs.p_right > 0.95)).mean()
    signed_rank_rejects = (runs.signed_rank_p < 0.05).mean()
    assert hier_claims == 0, runs
    assert signed_rank_rejects >= hier_claims + 2 / len(runs), runs


@pytest.mark.slow
def test_friedman_experiment_is_seeded_and_independent_of_jobs():
    """Sec. "Friedman's functions", small: 9 settings (3 per function, 2 drawn per replicate), 2 replicates.
    The table is the same in one process or two, and the replicates use 2/3 of each function's settings."""
    pool = friedman.SETTINGS[::6]
    truth = {s: friedman.actual_delta(s, reps=5, test_size=500, seed=i) for i, s in enumerate(pool)}
    serial = friedman.experiment(pool, truth, reps=2, seed=4, jobs=1, **FIT)
    parallel = friedman.experiment(pool, truth, reps=2, seed=4, jobs=2, **FIT)
    pd.testing.assert_frame_equal(serial, parallel)
    assert (serial.q == 6).all() and serial.rep.tolist() == [0, 1]
    assert np.allclose(serial[["p_left", "p_rope", "p_right"]].sum(axis=1), 1)
