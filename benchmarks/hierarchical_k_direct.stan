// Benchmark reference: the hierarchical model of k models (stan/hierarchical_k.stan) written without its rewrites,
// for small data: every fold score with its multivariate-normal likelihood, the fold effects u_if and the datasets'
// effects phi_i sampled, one sigma_i per dataset.  The SAME model as stan/hierarchical_k.stan (its header), whose
// rewrites 1-5 integrate u_i and phi_i out and rotate the datasets' contrasts; benchmarks/bench_pairs.py
// (reference) fits both to the same data and compares their posteriors.
//
//   y_ij. ~ MVN(theta_ij 1 + u_i, sigma_i^2 M),  M = (1 - rho) I + rho 1 1'     [eq:mvn], the models S_i present
//   theta_i = H phi_i,  phi_i = d + L z_i / sqrt(tau_i),  z_i ~ N(0, I),  tau_i ~ Gamma(nu/2, nu/2)
//   Omega = sigma0^2 R, sigma0 ~ U(0, sigma0_high), R = p W / tr(W), W ~ Wishart(I_p, shape_df) (as
//   hierarchical_k.stan, written directly: W sampled as a covariance matrix), d and nu as there,
//   u_if ~ N(0, fold_sd^2) (fold_sd wide: the data pin each fold's level down), sigma_i flat on (0, inf).
data {
  int<lower=2> k;
  int<lower=2> q;
  int<lower=2> n;                                   // folds per dataset (the same on every dataset here)
  array[q] matrix[n, k] y;                          // a missing model's column: any value, not read
  array[q, k] int<lower=0, upper=1> present;
  real<lower=0, upper=1> rho;
  matrix[k, k - 1] H;                               // the Helmert basis
  real<lower=0> d_bound;
  real<lower=0> sigma0_high;
  real<lower=0> shape_df;
  real<lower=0> fold_sd;
  real<lower=0> alpha_low;
  real<lower=alpha_low> alpha_high;
  real<lower=0> beta_low;
  real<lower=beta_low> beta_high;
}
transformed data {
  int p = k - 1;
  matrix[n, n] M_factor = cholesky_decompose(add_diag(rep_matrix(rho, n, n), 1 - rho));
}
parameters {
  vector<lower=-d_bound, upper=d_bound>[p] d;
  real<lower=0, upper=sigma0_high> sigma0;
  cov_matrix[p] W;
  real<lower=0> nu_scaled;
  real<lower=alpha_low, upper=alpha_high> gamma_alpha;
  real<lower=beta_low, upper=beta_high> gamma_beta;
  vector<lower=0>[q] sigma;
  vector<lower=0>[q] tau;
  array[q] vector[p] z;
  array[q] vector[n] u;
}
transformed parameters {
  real nu = 1 + nu_scaled / gamma_beta;
  matrix[p, p] Omega = square(sigma0) * p * W / trace(W);
  matrix[p, p] factor = cholesky_decompose(Omega);
}
model {
  W ~ wishart(shape_df, identity_matrix(p));
  nu_scaled ~ gamma(gamma_alpha, 1);
  tau ~ gamma(0.5 * nu, 0.5 * nu);
  for (i in 1:q) {
    vector[k] theta = H * (d + factor * z[i] / sqrt(tau[i]));
    z[i] ~ std_normal();
    u[i] ~ normal(0, fold_sd);
    for (j in 1:k) {
      if (present[i, j]) {
        y[i][:, j] ~ multi_normal_cholesky(theta[j] + u[i], sigma[i] * M_factor);
      }
    }
  }
}
