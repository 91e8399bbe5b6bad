"""The Stan program's likelihood against the model written out in full (eq. 3 with explicit σ_i, eq. 5).

``stan/hierarchical.stan`` writes the MVN likelihood through sufficient statistics and integrates σ_i out
analytically.  Here its log density, evaluated by Stan itself, is compared with a brute-force reference:
``scipy.stats.multivariate_normal.logpdf`` on the full n×n covariance σ²M, integrated over σ ~ U(0, U)
numerically.  Log densities are compared as differences between parameter points (constants cancel).
"""

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats
from scipy.special import expit, logit

from mlflow_bayescompare.sampling import programs, pystan_backend
from mlflow_bayescompare.vocabulary.options import FitOptions


def equicorrelation(n, rho):
    return (1 - rho) * np.eye(n) + rho * np.ones((n, n))


def marginal_reference(x, delta, rho, upper):
    """log ∫_0^U MVN(x | δ1, σ²M) dσ by quadrature on the full covariance."""
    m = equicorrelation(len(x), rho)
    logs = lambda s: stats.multivariate_normal.logpdf(x, mean=np.full(len(x), delta), cov=s**2 * m)
    peak = max(logs(s) for s in np.geomspace(1e-3, upper, 400))
    points = [0.5, 1, 2, upper * (1 - 1e-2), upper * (1 - 1e-3)]  # far from δ the mass sits just below U
    value, _ = integrate.quad(lambda s: np.exp(logs(s) - peak), 0, upper, limit=400, points=points)
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
    posterior = pystan_backend.build("hierarchical", data, seed=1)
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


def test_stan_likelihood_is_exact_where_the_incomplete_gamma_factor_underflows(stan_density):
    """δ_i 40–80 units from their datasets' means with σ_i bounded by 6: Q/(2U²) reaches 10⁴ and Stan's
    gamma_q underflows to 0 (log 0 made every initial point fail, bench_calibration's q = 50 replicate 47).  The
    program's log-space continued fraction must give the integrated likelihood there, not just a finite number."""
    xs, rhos, upper, log_density = stan_density

    def reference(delta0, sigma0, delta):
        prior = stats.norm.logpdf(delta, delta0, sigma0).sum()
        return prior + sum(marginal_reference(x, d, r, upper) for x, d, r in zip(xs, delta, rhos))

    far = [(0.0, 9.0, [40.0, -45.0, 50.0, 80.0]), (4.0, 9.5, [30.0, -20.0, 44.0, 70.0])]
    assert special.gammaincc(12.0, sufficient_quadratic(xs[3], far[0][2][3], rhos[3]) / (2 * upper**2)) == 0.0
    base = (0.1, 0.5, [0.4, 0.2, -0.3, 0.9])
    for point in far:
        assert log_density(*point) - log_density(*base) == pytest.approx(
            reference(*point) - reference(*base), abs=1e-6)


def test_incomplete_gamma_factor_is_one_at_the_papers_bound():
    # Q/(2U²) with U = 1000 × the mean sd: the regularised upper incomplete gamma is 1 to double precision
    n = 100
    a = (n - 1) / 2
    q_value = 5 * n  # a generous Q for unit-scale data
    assert special.gammaincc(a, q_value / (2 * 1000.0**2)) == 1.0
    assert special.gammaincc(0.5, 50 / (2 * 1000.0**2)) > 1 - 1e-2  # n = 2 is the worst case, still negligible


# ------------------------------------------------------------------------------------------------------------------
# Every prior on ν and every form of δ_i against the paper's model written out with scipy.

#: the paper's priors on ν' = ν - 1 (Sec. 3 and Table "prior-nu"), by the names the package gives them
NU_PRIORS = {
    "hierarchical": None,  # ν' ~ Gamma(α, β) (rate β), α ~ U(0.5, 5), β ~ U(0.05, 0.15)
    "juarez-steel": (2.0, 0.1),  # Gamma(2, 0.1): mean 20
    "kruschke": (1.0, 0.0345),  # Gamma(1, 0.0345): mean 29
    "gaussian": "none",  # δ_i ~ N(δ0, σ0): no ν
}
#: which δ_i are sampled non-centred (1-based): none, all, or some
FORMS = {"centred": [], "non-centred": [1, 2, 3, 4], "mixed": [2, 4]}
#: (δ0, σ0, δ_1..4, ν', α, β): far apart in every coordinate, δ_i on both sides of δ0 and up to 3.5 σ0 away
POINTS = [
    (0.1, 0.5, [0.4, 0.2, -0.3, 0.9], 3.0, 1.5, 0.08),
    (-0.5, 1.3, [-0.2, 0.0, -0.8, 1.4], 25.0, 4.0, 0.12),
    (0.8, 0.2, [0.9, 0.5, 0.1, 0.7], 0.7, 0.7, 0.06),
]


@pytest.fixture(scope="module")
def datasets():
    """Four datasets (n = 2 uses the bare kernel, the others the Student-t form), ρ from 0 to 0.5, a small σ_i
    bound so that the incomplete-gamma factor matters, and the quadrature likelihood of every point's δ_i."""
    rng = np.random.default_rng(7)
    ns, rhos, upper = [2, 6, 12, 25], [0.5, 0.1, 0.3, 0.0], 6.0
    xs = [rng.normal(mu, sd, n) for mu, sd, n in zip([0.5, 0.2, -0.4, 1.0], [1.0, 0.8, 1.5, 0.6], ns)]
    data = {
        "q": 4, "n": ns, "rho": rhos,
        "xbar": [x.mean() for x in xs], "ssd": [float(np.sum((x - x.mean()) ** 2)) for x in xs],
        "delta0_low": -5.0, "delta0_high": 5.0, "sigma0_high": 10.0, "sigma_high": upper, "exact_sigma_bound": 1,
        "alpha_low": 0.5, "alpha_high": 5.0, "beta_low": 0.05, "beta_high": 0.15,
    }
    likelihood = [sum(marginal_reference(x, d, r, upper) for x, d, r in zip(xs, point[2], rhos)) for point in POINTS]
    return data, likelihood


def paper_log_density(prior, point, likelihood):
    """log p(δ0, σ0, δ, ν', α, β | x) up to a constant, as the paper writes the model (scipy throughout)."""
    delta0, sigma0, delta, nu1, alpha, beta = point
    spec = NU_PRIORS[prior]
    if spec == "none":
        return likelihood + stats.norm.logpdf(delta, delta0, sigma0).sum()
    shape, rate = (alpha, beta) if spec is None else spec
    nu_prior = stats.gamma.logpdf(nu1, shape, scale=1 / rate)  # uniform α, β: constants
    return likelihood + nu_prior + stats.t.logpdf(delta, 1 + nu1, delta0, sigma0).sum()


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("prior", list(NU_PRIORS))
def test_every_prior_and_form_of_delta_is_the_papers_model(datasets, prior, form):
    """Stan's log density (its own evaluation, in its own coordinates) mapped back to the paper's coordinates
    equals the model written out with scipy, up to one constant, for each prior on ν and each form of δ_i.

    Stan's coordinates: δ0 = lo + (hi - lo) inv_logit(a + b u) (Jacobian written in the model block); a
    non-centred δ_i = δ0 + σ0 sinh(w_i), whose density in w_i is the density in δ_i times σ0 cosh(w_i); under the
    hierarchical prior ν' = g / β with g ~ Gamma(α, 1), whose density in g is the density in ν' divided by β."""
    data, likelihood = datasets
    noncentred = FORMS[form]
    code = programs.prior_code(FitOptions(prior=prior).prior)  # the canonical name the options make of an alias
    posterior = pystan_backend.build("hierarchical", {**data, "nu_prior": code, "q_nc": len(noncentred),
                                                      "idx_nc": noncentred,
                                                      "idx_c": [i for i in range(1, 5) if i not in noncentred]}, seed=1)
    nc = np.array(noncentred, dtype=int) - 1
    c = np.array([i for i in range(4) if i not in nc], dtype=int)

    def parameters(point, u):
        delta0, sigma0, delta, nu1, alpha, beta = point
        delta = np.asarray(delta)
        hierarchical = NU_PRIORS[prior] is None
        return {"delta0_u": u, "sigma0": sigma0,
                "nu_scaled": [] if NU_PRIORS[prior] == "none" else [nu1 * beta if hierarchical else nu1],
                "gamma_alpha": [alpha] if hierarchical else [], "gamma_beta": [beta] if hierarchical else [],
                "delta": delta[c].tolist(), "delta_w": np.arcsinh((delta[nc] - delta0) / sigma0).tolist()}

    at = posterior.constrained_param_names.index("delta0")
    base = posterior.unconstrain_pars(parameters(POINTS[0], 0.0))

    def logit_delta0(u):  # a + b u, read off Stan's own transform
        unc = list(base)
        unc[0] = u
        return logit((posterior.constrain_pars(unc)[at] - data["delta0_low"]) / 10.0)

    a, b = logit_delta0(0.0), logit_delta0(1.0) - logit_delta0(0.0)
    ours, paper = [], []
    for point, lik in zip(POINTS, likelihood):
        delta0, sigma0, delta, nu1, alpha, beta = point
        u = (logit((delta0 - data["delta0_low"]) / 10.0) - a) / b
        unc = posterior.unconstrain_pars(parameters(point, u))
        value = posterior.log_prob(unc, adjust_transform=False)
        value -= np.log(expit(a + b * u)) + np.log1p(-expit(a + b * u))  # δ0's Jacobian, written in the model
        w = np.arcsinh((np.asarray(delta)[nc] - delta0) / sigma0)
        value -= np.sum(np.log(sigma0 * np.cosh(w)))  # non-centred δ_i: density in w, not in δ
        if NU_PRIORS[prior] is None:
            value += np.log(beta)  # hierarchical prior: density in g = β ν', not in ν'
        ours.append(value)
        paper.append(paper_log_density(prior, point, lik))
    assert posterior.constrain_pars(posterior.unconstrain_pars(parameters(POINTS[1], 0.3)))[at] == pytest.approx(
        data["delta0_low"] + 10.0 * expit(a + 0.3 * b), abs=1e-12)
    for k in (1, 2):
        assert ours[k] - ours[0] == pytest.approx(paper[k] - paper[0], abs=1e-8), (prior, form, k)


@pytest.mark.slow
def test_integrated_log_lik_of_the_model_check_against_quadrature():
    # hierarchical.summary.integrated_log_lik (PSIS-LOO of a dataset left out: δ_i integrated out on the defensive
    # mixture, 2 × 48 smoothstep-mapped quantile nodes) against ∫ Q_i(δ)^{-(n_i-1)/2} t_ν(δ; δ0, σ0) dδ by
    # quadrature, Q_i the quadratic form of the Stan program's header (σ_i integrated out); compared between draws,
    # as the constant of each dataset cancels
    from mlflow_bayescompare.families.hierarchical.summary import integrated_log_lik

    rng = np.random.default_rng(12)
    n, rho = np.array([10, 30, 100]), np.full(3, 0.1)
    x = [rng.normal(mu, 1.0, k) for mu, k in zip([0.3, -1.5, 4.0], n)]
    data = {"n": n.tolist(), "rho": rho.tolist(), "xbar": [v.mean() for v in x],
            "ssd": [np.sum((v - v.mean()) ** 2) for v in x]}
    # draws with narrow and wide populations (both branches of the rule) and heavy and light tails
    hyper = {"delta0": np.array([[0.0, 0.5, -1.0, 2.0]]), "sigma0": np.array([[0.05, 1.0, 3.0, 0.2]]),
             "nu_minus_one": np.array([[0.5, 1.0, 30.0, 3.0]])}

    def reference(i, d0, s0, nu):
        m = n[i] / (1 + (n[i] - 1) * rho[i])
        log_kernel = lambda d: -(n[i] - 1) / 2 * np.log(data["ssd"][i] / (1 - rho[i]) + m * (data["xbar"][i] - d) ** 2)
        peak = max(log_kernel(d) + stats.t.logpdf(d, nu, d0, s0) for d in np.linspace(-30, 30, 6001))
        f = lambda d: np.exp(log_kernel(d) + stats.t.logpdf(d, nu, d0, s0) - peak)
        value, _ = integrate.quad(f, -np.inf, np.inf, limit=400)
        return peak + np.log(value)

    ours = integrated_log_lik(data, hyper)[0]
    for i in range(3):
        ref = [reference(i, d0, s0, 1 + nu1) for d0, s0, nu1 in
               zip(hyper["delta0"][0], hyper["sigma0"][0], hyper["nu_minus_one"][0])]
        # measured: off by 0.0000004, 0.0007, 0.0012 (64 plain midpoints: 0.002, 0.033, 0.009); an older rule (nodes
        # of the narrower density only) was off by 9.9 on the second dataset, far out in the heavy tail of a narrow
        # population
        assert ours[:, i] - ours[0, i] == pytest.approx(np.subtract(ref, ref[0]), abs=0.005)
    # a Gaussian population (the prior without ν) gives other values on the heavy-tailed draws: the check can fail
    gaussian = integrated_log_lik(data, {k: v for k, v in hyper.items() if k != "nu_minus_one"})[0]
    assert np.max(np.abs((gaussian - gaussian[0]) - (ours - ours[0]))) > 1


def test_pareto_k_of_the_model_check_is_arviz_loo():
    # dataset_pareto_k smooths with arviz's psislw and the relative efficiency arviz's loo takes (the mean ESS of
    # δ0): the same k̂ as az.loo on the same log-likelihood, without the rest of loo
    import warnings

    from mlflow_bayescompare.families.hierarchical.summary import dataset_pareto_k, integrated_log_lik
    from mlflow_bayescompare.shared.posterior_summary import arviz

    rng = np.random.default_rng(3)
    data = {"n": [10, 30, 100, 100], "rho": [0.1] * 4, "xbar": [0.2, -0.1, 3.0, 0.0], "ssd": [4.0, 20.0, 90.0, 99.0]}
    hyper = {"delta0": rng.normal(0.1, 0.2, (4, 250)), "sigma0": rng.lognormal(-0.5, 0.3, (4, 250)),
             "nu_minus_one": rng.gamma(2.0, 5.0, (4, 250))}
    az = arviz()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loo = az.loo(az.from_dict(posterior={"delta0": hyper["delta0"]},
                                  log_likelihood={"x": integrated_log_lik(data, hyper)}), pointwise=True)
    ours = dataset_pareto_k(data, hyper)
    assert ours == pytest.approx(np.asarray(loo.pareto_k), abs=1e-12)
    assert ours[2] > 0.7 > max(ours[[0, 1, 3]])  # the dataset far from the population is the one flagged
