// Benchmark reference: the Bayesian hierarchical correlated t-test (Corani et al. 2017) written the way the
// authors write it (BayesianTestsML/tutorial hierarchical/stan/hierarchical-t-test.stan; baycomp and scmamp copy
// it unchanged): the full q x n matrix of differences, an n x n equicorrelation matrix per dataset, explicit
// sigma_i parameters and a centred delta_i.  It is the SAME model as stan/hierarchical.stan (which uses
// sufficient statistics, integrates sigma_i out and splits delta_i into centred/non-centred parts); the
// benchmark (benchmarks/bench_model.py) times both on the same data.
//
//   x_i | delta_i, sigma_i ~ MVN(delta_i 1, sigma_i^2 M),  M = (1 - rho) I + rho 1 1'            (eq. 3)
//   delta_i ~ t_nu(delta0, sigma0),  sigma_i ~ U(0, sigma_high)                                   (eqs. 4, 5)
//   nu = 1 + nu',  nu' ~ Gamma(alpha, beta) (shape, rate),  alpha ~ U, beta ~ U                   (eq. 6)
//   delta0 ~ U(delta0_low, delta0_high),  sigma0 ~ U(0, sigma0_high)
//
// Two numerical departures from the authors' file, neither changing the model:
//  * M^{-1} uses the closed form [I - rho / (1 + (n-1) rho) 1 1'] / (1 - rho) and log|M| = log1p((n-1) rho)
//    + (n-1) log1m(rho), instead of the adjugate / determinant, which underflows for large n or rho.
//  * diff, the quadratic forms and the log-likelihood terms are local variables of the model block, not
//    transformed parameters, so the q x n matrix diff is not written out with every draw (this only makes the
//    reference faster).  2 pi is written exactly instead of 6.283 (a constant).
// benchmarks/authors_form.stan keeps both, as the authors' file has them.
data {
  int<lower=1> q;                                   // number of datasets
  int<lower=2> n;                                   // scores per dataset (runs x folds), equal for all
  matrix[q, n] x;                                   // scaled differences, one dataset per row
  real<lower=0, upper=1> rho;                       // correlation between folds, 1/folds (eq. 2)
  real delta0_low;
  real<lower=delta0_low> delta0_high;
  real<lower=0> sigma0_high;
  real<lower=0> sigma_high;
  real<lower=0> alpha_low;
  real<lower=alpha_low> alpha_high;
  real<lower=0> beta_low;
  real<lower=beta_low> beta_high;
}
transformed data {
  matrix[n, n] invM = (diag_matrix(rep_vector(1, n)) - rho / (1 + (n - 1) * rho) * rep_matrix(1, n, n))
                      / (1 - rho);
  real log_det_M = log1p((n - 1) * rho) + (n - 1) * log1m(rho);
}
parameters {
  real<lower=delta0_low, upper=delta0_high> delta0;
  real<lower=0, upper=sigma0_high> sigma0;
  vector[q] delta;
  vector<lower=0, upper=sigma_high>[q] sigma;
  real<lower=0> nu_minus_one;
  real<lower=alpha_low, upper=alpha_high> gamma_alpha;
  real<lower=beta_low, upper=beta_high> gamma_beta;
}
transformed parameters {
  real<lower=1> nu = nu_minus_one + 1;
}
model {
  matrix[q, n] diff = x - rep_matrix(delta, n);
  vector[q] diag_quad = diagonal(quad_form(invM, diff'));   // O(q^2 n + q n^2), as the authors
  vector[q] log_lik = -0.5 * (2 * n * log(sigma) + log_det_M) - 0.5 * n * log(2 * pi())
                      - 0.5 * diag_quad ./ square(sigma);
  nu_minus_one ~ gamma(gamma_alpha, gamma_beta);
  delta ~ student_t(nu, delta0, sigma0);
  target += sum(log_lik);
}
