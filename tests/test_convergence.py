"""The convergence diagnostics and HDIs computed for all parameters at once give arviz's numbers (arviz as the
independent implementation): chains with positive and negative autocorrelation (both ends of Geyer's truncation),
heavy tails, chains that disagree, odd lengths, one chain, ties (NUTS repeats a draw), constant and NaN draws, and
a real fit of the hierarchical model."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
from scipy import stats

from mlflow_bayescompare import hierarchical_test
from mlflow_bayescompare.families.hierarchical import summary
from mlflow_bayescompare.sampling import convergence
from mlflow_bayescompare.shared import posterior_summary


def _ar1(phi: float, chains: int, draws: int, rows: int, seed: int, shift: float = 0.0) -> np.ndarray:
    """(rows, chains, draws) AR(1) chains with Student-t(4) innovations; chain c shifted by c · shift."""
    rng = np.random.default_rng(seed)
    noise = rng.standard_t(4, size=(rows, chains, draws))
    x = np.empty_like(noise)
    x[..., 0] = noise[..., 0]
    for t in range(1, draws):
        x[..., t] = phi * x[..., t - 1] + noise[..., t]
    return x + shift * np.arange(chains)[None, :, None]


def _arviz(x: np.ndarray) -> dict[str, np.ndarray]:
    data = az.convert_to_dataset({"v": np.moveaxis(x, 0, 2)})  # arviz: (chain, draw, element)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"rhat": az.rhat(data)["v"].values, "ess_bulk": az.ess(data, method="bulk")["v"].values,
                "ess_tail": az.ess(data, method="tail")["v"].values}


def _assert_same(x: np.ndarray) -> None:
    expected = _arviz(x)
    for name, want in expected.items():
        got = getattr(convergence, name)(x)
        np.testing.assert_allclose(got, want, rtol=1e-9, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("phi", [-0.6, 0.0, 0.5, 0.95])
@pytest.mark.parametrize("chains,draws", [(4, 1000), (2, 51), (1, 200), (3, 7)])
def test_rhat_and_ess_are_arvizs(phi, chains, draws):
    _assert_same(_ar1(phi, chains, draws, rows=6, seed=draws + chains))


def test_chains_that_disagree_ties_constant_and_nan_rows_are_arvizs():
    x = _ar1(0.3, 4, 400, rows=5, seed=7, shift=0.5)  # row 0: chains centred apart, R-hat well above 1.01
    x[1] = np.round(x[1], 1)  # many ties
    x[2] = 0.25  # constant
    x[3, 2, 17] = np.nan
    _assert_same(x)
    assert convergence.rhat(x)[0] > 1.05


def test_a_hierarchical_fit_gets_arvizs_diagnostics_and_hdis():
    rng = np.random.default_rng(11)
    res = hierarchical_test(diffs=rng.normal(0.01, 0.03, (30, 20)), folds=10, seed=11, chains=4, draws=500,
                            backend="pystan", model_check=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = az.convert_to_dataset(res.draws)
        want_rhat = float(az.rhat(data).to_array().max())
        want_bulk = float(az.ess(data, method="bulk").to_array().min())
        want_tail = float(az.ess(data, method="tail").to_array().min())
        want_hdi = az.hdi(res.draws["delta"], hdi_prob=posterior_summary.HDI_PROB)
    assert res.diagnostics["rhat_max"] == pytest.approx(want_rhat, rel=1e-9)
    assert res.diagnostics["ess_bulk_min"] == pytest.approx(want_bulk, rel=1e-9)
    assert res.diagnostics["ess_tail_min"] == pytest.approx(want_tail, rel=1e-9)
    np.testing.assert_allclose(res.shrinkage[["hdi_low", "hdi_high"]].to_numpy(), want_hdi, rtol=1e-12)


def test_reported_hdis_are_95_percent_intervals():
    """The level the reports print (95%), against truths that do not read summary's constant: the closed form on
    normal draws (the central interval ±z_0.975, whose width an HDI of 10^6 draws gets within 0.01) for
    δ0, σ0 and ν's summaries, and arviz at 0.95 for the per-dataset shrinkage table."""
    draws = np.random.default_rng(5).standard_normal(1_000_000)
    row = posterior_summary.describe(draws)
    assert row["hdi_high"] - row["hdi_low"] == pytest.approx(2 * stats.norm.ppf(0.975), abs=0.01)
    assert (row["hdi_high"] + row["hdi_low"]) / 2 == pytest.approx(0, abs=0.02)
    delta = np.random.default_rng(6).gamma(2.0, size=(4, 1000, 3))  # (chains, draws, datasets), skewed
    table = summary.shrinkage_table(delta, rope=0.01)
    np.testing.assert_allclose(table[["hdi_low", "hdi_high"]].to_numpy(), az.hdi(delta, hdi_prob=0.95), rtol=1e-12)
