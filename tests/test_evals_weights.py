"""Dirichlet weights over items or clusters (``families/evals/weights.py``): the sums per atom, the ratio estimator
against draws from numpy's own Dirichlet, the pseudo-observations' weight, chunks that do not change the draws, and
the weights shared by several scorers."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_bayescompare.families.evals.weights import Group, Prior, atom_sums, weighted_means


def test_atom_sums_leave_out_items_with_a_missing_column():
    values = np.array([[1.0, 2.0], [np.nan, 5.0], [3.0, 4.0], [0.5, 0.5]])
    sums, counts = atom_sums(values, np.array([0, 0, 1, 1]), 3)
    np.testing.assert_array_equal(sums, [[1.0, 2.0], [3.5, 4.5], [0.0, 0.0]])
    np.testing.assert_array_equal(counts, [1.0, 2.0, 0.0])


def test_the_ratio_estimator_of_unequal_clusters_matches_numpys_dirichlet():
    """Σ w_c S_c / Σ w_c n_c with w ~ Dirichlet(1, ..., 1) drawn by numpy's ``dirichlet`` (an independent sampler):
    the same mean and variance from the Gamma draws of :func:`weighted_means`."""
    rng = np.random.default_rng(1)
    sizes = np.array([1, 4, 9, 2, 7, 3, 5])
    means = rng.normal(size=len(sizes))
    group = Group((sizes * means)[:, None], sizes.astype(float))
    ours = weighted_means([group], 200_000, np.random.default_rng(2))[0][:, 0]
    w = np.random.default_rng(3).dirichlet(np.ones(len(sizes)), size=200_000)
    theirs = (w @ (sizes * means)) / (w @ sizes)
    assert ours.mean() == pytest.approx(theirs.mean(), abs=0.005)
    assert ours.var() == pytest.approx(theirs.var(), rel=0.02)


def test_pseudo_observations_weigh_as_an_average_atom():
    """One pseudo-observation of Dirichlet parameter a beside J atoms of n items each is a Dirichlet(1, ..., 1, a)
    weighted mean of the atoms' means and its value: its mean weight is a / (J + a) whatever n."""
    for size in (1.0, 6.0):
        group = Group(np.zeros((9, 1)), np.full(9, size), Prior(np.array([3.0]), np.array([[1.0]])))
        drawn = weighted_means([group], 100_000, np.random.default_rng(4))[0][:, 0]
        assert drawn.mean() == pytest.approx(3 / 12, abs=0.003)


def test_chunks_do_not_change_the_draws_and_scorers_share_the_weights():
    """Without pseudo-observations the weights are one stream whatever the chunks (7 weights at a time or all at
    once): the same draws; two scorers with the same values get the same draws in every draw (shared weights),
    a third with other values is correlated with them through the same weights."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(50, 1))
    y = x + rng.normal(0, 0.1, size=(50, 1))
    groups = [Group(x, np.ones(50)), Group(x.copy(), np.ones(50)), Group(y, np.ones(50))]
    whole = weighted_means(groups, 3000, np.random.default_rng(6))
    chunked = weighted_means(groups, 3000, np.random.default_rng(6), chunk=7)
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_array_equal(whole[0], whole[1])
    assert np.corrcoef(whole[0][:, 0], whole[2][:, 0])[0, 1] > 0.95
