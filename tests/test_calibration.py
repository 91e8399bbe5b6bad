"""A small simulation-based calibration (Talts et al. 2018) of the Stan programs: mlflow_bayescompare.simulation.sbc
(benchmarks/bench_calibration.py's) with tens of replicates and a loose bound (no chi-squared p-value of the binned
ranks below 0.001).

The full run (200 replicates per configuration, q = 10 and 50, both forms) and its numbers are in
benchmarks/README.md.  The bound was checked to fail when the simulation draws ν from another prior than the
program's (ν' ~ Gamma(1, 1) instead of Gamma(α, β)): ν's ranks then pile up in the lowest bins.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from mlflow_bayescompare.families.hierarchical import prepare
from mlflow_bayescompare.simulation import sbc, sbc_models

REPLICATES = 30
SAMPLER = dict(chains=2, warmup=300, draws=300, kept=49)  # 600 draws, every 12th kept: ranks 0..49
BINS = 5
BOUND = 0.001


def _log_marginal_full(x, delta, rho, upper):
    """log ∫_0^U MVN(x | δ 1, σ² M) dσ on the full n × n covariance, by quadrature."""
    n = len(x)
    m = (1 - rho) * np.eye(n) + rho * np.ones((n, n))
    logs = lambda s: stats.multivariate_normal.logpdf(x, mean=np.full(n, delta), cov=s**2 * m)
    peak = max(logs(s) for s in np.linspace(1e-3, upper, 400))
    value, _ = integrate.quad(lambda s: np.exp(logs(s) - peak), 1e-9, upper, limit=400)
    return peak + np.log(value)


def _log_marginal_stan(xbar, ssd, n, rho, delta, upper):
    """The Stan program's likelihood of a dataset with σ_i integrated out and exact_sigma_bound = 1: the
    Student-t kernel (n - 2 degrees of freedom) plus log P_upper((n-1)/2, Q / (2U²)), up to a constant."""
    mean_term = n / (1 + (n - 1) * rho)
    scale = np.sqrt(ssd / (1 - rho) / (mean_term * (n - 2)))
    q_form = ssd / (1 - rho) + mean_term * (xbar - delta) ** 2
    return stats.t.logpdf(xbar, n - 2, delta, scale) + np.log(special.gammaincc((n - 1) / 2, q_form / (2 * upper**2)))


def test_sigma_bound_of_the_simulation_matters_and_the_likelihood_is_exact():
    # σ_i ~ U(0, 1) makes the incomplete-gamma factor matter, so the program must keep it (exact_sigma_bound = 1)
    rng = np.random.default_rng(3)
    truth, data = sbc_models.simulate_hierarchical(rng, 10)
    assert data["exact_sigma_bound"] == 1 and data["sigma_high"] == 1.0
    arrays = [np.asarray(data[k], dtype=float) for k in ("xbar", "ssd", "n", "rho")]
    assert prepare.sigma_bound_matters(*arrays, delta_bound=1.0, sigma_high=1.0)
    # with it, the likelihood equals the full MVN integrated over σ ∈ (0, 1) (as a function of δ)
    rho, upper = 0.1, 1.0
    for n, sigma, delta_true in [(10, 0.9, 0.2), (30, 0.6, -0.5)]:
        x = delta_true + sigma * (np.sqrt(1 - rho) * rng.standard_normal(n) + np.sqrt(rho) * rng.standard_normal())
        xbar, ssd = x.mean(), np.sum((x - x.mean()) ** 2)
        deltas = [delta_true - 0.8, delta_true, delta_true + 1.5]
        ours = [_log_marginal_stan(xbar, ssd, n, rho, d, upper) for d in deltas]
        full = [_log_marginal_full(x, d, rho, upper) for d in deltas]
        for k in (0, 2):
            assert ours[k] - ours[1] == pytest.approx(full[k] - full[1], abs=1e-6)
        # without the factor it would be wrong by more than a rounding error
        t_only = [stats.t.logpdf(xbar, n - 2, d, np.sqrt(ssd / (1 - rho) / (n / (1 + (n - 1) * rho) * (n - 2))))
                  for d in deltas]
        assert abs((t_only[2] - t_only[1]) - (full[2] - full[1])) > 1e-3


def test_prior_draws_follow_the_programs_prior():
    # the simulation's prior, checked against the distributions the .stan files write (KS, 2000 draws each)
    rng = np.random.default_rng(11)
    draws = [sbc_models.simulate_hierarchical(rng, 2)[0] for _ in range(2000)]
    nu_minus_one = np.array([d["nu"] - 1 for d in draws])
    alpha, beta = np.array([d["alpha"] for d in draws]), np.array([d["beta"] for d in draws])
    assert stats.kstest(stats.gamma.cdf(nu_minus_one, alpha, scale=1 / beta), "uniform").pvalue > 0.001
    assert stats.kstest([d["delta0"] for d in draws], stats.uniform(-1, 2).cdf).pvalue > 0.001
    assert stats.kstest([d["sigma0"] for d in draws], stats.uniform(0, 1).cdf).pvalue > 0.001
    bbt = [sbc_models.simulate_bbt(rng, 5, 20) for _ in range(500)]
    assert stats.kstest([t["sigma"] for t, _ in bbt], stats.lognorm(0.5).cdf).pvalue > 0.001
    t, data = bbt[0]
    assert data["K"] == 5 and data["N"] == 10 and not data["davidson"] and data["hyper_scale"] == 0.5
    assert np.all(np.add(data["wins_first"], data["wins_second"]) == 20)
    assert sum(t[f"beta_{k + 1}"] for k in range(5)) == pytest.approx(0, abs=1e-12)


def _calibration(config: sbc.Config, ranks: list[int], divergent: int) -> sbc.Calibration:
    return sbc.Calibration(config, 49, {name: list(ranks) for name in config.params},
                           {name: [100.0] * len(ranks) for name in config.params}, divergent_fits=divergent,
                           fit_divergences=[1] * divergent + [0] * (len(ranks) - divergent))


def test_runs_of_several_seeds_pool_into_one_and_a_lean_shows_in_the_mean_rank():
    config = sbc.Config("hierarchical_k", "integrated", q=10, models=4)
    every = list(range(50))  # each rank once: uniform, mean rank / L exactly 0.5
    high = [49] * 50  # the truth above every draw: the posterior sits low
    both = sbc.pooled([_calibration(config, every, 2), _calibration(config, high, 3)])
    assert both.replicates == 100 and both.divergent_fits == 5 and len(both.fit_divergences) == 100
    assert both.ranks["sigma0"] == every + high
    table = sbc.pooled([_calibration(config, every, 0)]).table(10).set_index("parameter")
    assert table.loc["nu", "mean_rank"] == 0.5 and table.loc["nu", "mean_rank_z"] == 0
    assert table.loc["nu", "chi2_p"] == 1.0
    leaning = both.table(10).set_index("parameter").loc["nu"]
    assert leaning["mean_rank"] == 0.75 and leaning["mean_rank_z"] > 8 and leaning["chi2_p"] < 1e-10
    assert "rank/L" in sbc.report(both, 10) and "+" in sbc.report(both, 10).splitlines()[2]
    with pytest.raises(ValueError, match="one configuration"):
        sbc.pooled([_calibration(config, every, 0), _calibration(sbc.Config("hierarchical_k", "integrated", q=10,
                                                                            models=5), every, 0)])


@pytest.mark.parametrize("program", ["hierarchical", "bbt", "hierarchical_k"])
@pytest.mark.slow
def test_ranks_are_uniform(program, tmp_path):
    # the hierarchical program in the form the package picks from the data (forced non-centred on data that pin
    # the δ_i down, a fit takes up to a minute); BBT in both forms by turns (each form is calibrated, so is the
    # mixture); the program of k models (4 models) with each τ_i's form as the package picks it.  Simulations whose
    # mean(x̄) falls outside δ0's bounds are drawn again (sbc_models.inside)
    form = {"hierarchical": "auto", "bbt": "alternate"}.get(program, "integrated")
    config = sbc.Config(program, form, q=10, models=4 if program == "hierarchical_k" else 5, games=20)
    result = sbc.calibrate(config, REPLICATES, seed=2024, **SAMPLER)
    assert result.replicates == REPLICATES
    pvalues = result.pvalues(BINS)
    print("\n" + sbc.report(result, BINS))
    assert set(pvalues) == set(config.params)
    assert sbc.plot(result, BINS, tmp_path / "sbc.png").stat().st_size > 0
    assert min(pvalues.values()) >= BOUND, pvalues
    # the bound can fail: the same fits ranked against another replicate's true values (a prior the data
    # contradict) are far from uniform for the quantities the data inform
    informed = {"hierarchical": ["delta0", "delta_1"], "bbt": ["beta_1", "beta_2"]}.get(program, ["d_1", "d_2"])
    for name in informed:
        wrong = np.roll(result.truths[name], 1)
        ranks = [int(np.sum(d < t)) for d, t in zip(result.thinned[name], wrong)]
        assert sbc.chi2_p(np.asarray(ranks), SAMPLER["kept"], BINS) < BOUND, name


def test_delta0_samples_when_the_mean_of_the_datasets_lies_beyond_its_bounds():
    # the replicate on which the calibration found the defect (benchmarks/README.md, "A defect found"): mean(x̄)
    # = -1.008 with δ0 ~ U(-1, 1).  The program centred δ0's logit there, clamped 1e-6 from the bound, and the
    # slope it derived made δ0's coordinate ~1e5 times too narrow: step size ~0.001, ~950 leapfrog steps per draw,
    # chains stuck apart (ν 61.3 and 3.3).  Keeping the centre inside the bounds samples it like any other data.
    config = sbc.Config("hierarchical", "centred", q=10)
    truth, data = sbc_models.simulate_hierarchical(np.random.default_rng(sbc.replicate_seed(2024, config, 0)), 10)
    assert np.mean(data["xbar"]) == pytest.approx(-1.008, abs=5e-4) and not sbc_models.inside(data)
    draws, posterior = sbc_models.hierarchical_posterior(sbc_models.hierarchical_data(data, "centred"), chains=2,
                                                         warmup=300, draws=300, seed=7)
    assert posterior.sampler["n_leapfrog__"].mean() < 60
    assert posterior.sampler["stepsize__"].min() > 0.05
    nu_by_chain = draws["nu"].mean(axis=1)
    assert abs(nu_by_chain[0] - nu_by_chain[1]) < 0.5 * draws["nu"].std()
    assert draws["delta0"].mean() == pytest.approx(-0.9, abs=0.05)
