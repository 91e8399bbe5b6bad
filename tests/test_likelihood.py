"""The Stan program's likelihood against the model written out in full (eq. 3 with explicit σ_i, eq. 5).

``stan/hierarchical.stan`` writes the MVN likelihood through sufficient statistics and integrates σ_i out
analytically.  Here its log density, evaluated by Stan itself, is compared with a brute-force reference:
``scipy.stats.multivariate_normal.logpdf`` on the full n×n covariance σ²M, integrated over σ ~ U(0, U)
numerically.  Log densities are compared as differences between parameter points (constants cancel).
"""

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

from mlflow_bayescompare import model as stan_model


def equicorrelation(n, rho):
    return (1 - rho) * np.eye(n) + rho * np.ones((n, n))


def marginal_reference(x, delta, rho, upper):
    """log ∫_0^U MVN(x | δ1, σ²M) dσ by quadrature on the full covariance."""
    m = equicorrelation(len(x), rho)
    logs = lambda s: stats.multivariate_normal.logpdf(x, mean=np.full(len(x), delta), cov=s**2 * m)
    peak = max(logs(s) for s in np.geomspace(1e-3, upper, 400))
    value, _ = integrate.quad(lambda s: np.exp(logs(s) - peak), 0, upper, limit=400, points=[0.5, 1, 2])
    return peak + np.log(value)


def sufficient_quadratic(x, delta, rho):
    n, xbar, ssd = len(x), x.mean(), np.sum((x - x.mean()) ** 2)
    return ssd / (1 - rho) + n * (xbar - delta) ** 2 / (1 + (n - 1) * rho)


@pytest.mark.parametrize("n,rho", [(10, 0.1), (30, 0.2), (100, 0.1), (7, 0.5), (20, 0.0)])
def test_quadratic_form_matches_full_covariance(n, rho):
    rng = np.random.default_rng(n)
    x, delta = rng.normal(0.3, 1.2, n), 0.1
    m = equicorrelation(n, rho)
    full = (x - delta) @ np.linalg.solve(m, x - delta)
    assert sufficient_quadratic(x, delta, rho) == pytest.approx(full, rel=1e-10)
    # and the Gaussian log density it implies equals scipy's up to the σ-free constant log|M|
    sigma = 0.7
    logdet = np.log1p((n - 1) * rho) + (n - 1) * np.log1p(-rho)
    ours = -n * np.log(sigma) - 0.5 * logdet - sufficient_quadratic(x, delta, rho) / (2 * sigma**2)
    ref = stats.multivariate_normal.logpdf(x, mean=np.full(n, delta), cov=sigma**2 * m)
    assert ours - 0.5 * n * np.log(2 * np.pi) == pytest.approx(ref, rel=1e-10)


def test_log_determinant_is_stable_where_the_adjugate_underflows():
    # the authors' det M = (1+(n-1)ρ)(1-ρ)^(n-1) underflows to 0 at (n=5000, ρ=0.2); log1p does not
    n, rho = 5000, 0.2
    assert (1 + (n - 1) * rho) * (1 - rho) ** (n - 1) == 0.0
    logdet = np.log1p((n - 1) * rho) + (n - 1) * np.log1p(-rho)
    assert np.isfinite(logdet)
    eig = np.log(1 - rho) * (n - 1) + np.log(1 + (n - 1) * rho)  # eigenvalues: 1-ρ (n-1 times), 1+(n-1)ρ
    assert logdet == pytest.approx(eig, rel=1e-12)


@pytest.fixture(scope="module")
def stan_density():
    """Stan's log density of the Gaussian-δ variant (nu_prior = 3) with the incomplete-gamma factor kept, as a
    function of (δ0, σ0, δ).  Stan samples δ0 as ``delta0_u`` (a rescaled logit, see the .stan header): the point
    is found by inverting Stan's own transform, and log|dδ0/du| (by finite differences of that transform) is
    taken off again, so what is returned is the density of the model as the paper writes it."""
    rng = np.random.default_rng(7)
    ns, rhos = [2, 6, 12, 25], [0.5, 0.1, 0.3, 0.0]  # n = 2 is written without the Student-t form
    xs = [rng.normal(mu, sd, n) for mu, sd, n in zip([0.5, 0.2, -0.4, 1.0], [1.0, 0.8, 1.5, 0.6], ns)]
    upper = 6.0  # small bound so that the incomplete-gamma factor matters
    data = {
        "q": 4, "n": ns, "rho": rhos,
        "xbar": [x.mean() for x in xs], "ssd": [float(np.sum((x - x.mean()) ** 2)) for x in xs],
        "delta0_low": -5.0, "delta0_high": 5.0, "sigma0_high": 10.0, "sigma_high": upper,
        "exact_sigma_bound": 1, "q_nc": 0, "idx_nc": [], "idx_c": [1, 2, 3, 4],
        "nu_prior": 3, "alpha_low": 0.5, "alpha_high": 5.0, "beta_low": 0.05, "beta_high": 0.15,
    }
    posterior = stan_model.pystan_model(data, seed=1)
    empty = {"nu_scaled": [], "gamma_alpha": [], "gamma_beta": [], "delta_w": []}

    at = posterior.constrained_param_names.index("delta0")

    def delta0_of(u):  # unconstrained point: (delta0_u, logit σ0, δ_1..δ_4); δ0 does not depend on the others
        return posterior.constrain_pars([u, 0.0, 0.0, 0.0, 0.0, 0.0])[at]

    def log_density(delta0, sigma0, delta):
        u = optimize.brentq(lambda v: delta0_of(v) - delta0, -50, 50, xtol=1e-13)
        unc = posterior.unconstrain_pars({"delta0_u": u, "sigma0": sigma0, "delta": delta, **empty})
        log_jacobian = np.log((delta0_of(u + 1e-5) - delta0_of(u - 1e-5)) / 2e-5)
        return posterior.log_prob(unc, adjust_transform=False) - log_jacobian

    return xs, rhos, upper, log_density

def test_stan_marginal_likelihood_equals_integrated_full_mvn(stan_density):
    xs, rhos, upper, log_density = stan_density

    def reference(delta0, sigma0, delta):
        prior = stats.norm.logpdf(delta, delta0, sigma0).sum()
        return prior + sum(marginal_reference(x, d, r, upper) for x, d, r in zip(xs, delta, rhos))

    points = [(0.1, 0.5, [0.4, 0.2, -0.3, 0.9]), (-0.5, 1.3, [-0.2, 0.0, -0.8, 1.4]),
              (0.8, 0.2, [0.9, 0.5, 0.1, 0.7])]
    ours = [log_density(*p) for p in points]
    ref = [reference(*p) for p in points]
    for k in (1, 2):
        assert ours[k] - ours[0] == pytest.approx(ref[k] - ref[0], abs=1e-6)


def test_incomplete_gamma_factor_is_one_at_the_papers_bound():
    # Q/(2U²) with U = 1000 × the mean sd: the regularised upper incomplete gamma is 1 to double precision
    n = 100
    a = (n - 1) / 2
    q_value = 5 * n  # a generous Q for unit-scale data
    assert special.gammaincc(a, q_value / (2 * 1000.0**2)) == 1.0
    assert special.gammaincc(0.5, 50 / (2 * 1000.0**2)) > 1 - 1e-2  # n = 2 is the worst case, still negligible
