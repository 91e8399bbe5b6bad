// Bayesian hierarchical correlated t-test
// Corani, Benavoli, Demšar, Mangili, Zaffalon (2017), "Statistical comparison of classifiers through
// Bayesian hierarchical modelling", Machine Learning 106:1817-1837, Sec. 3.  [eq:...] are the paper's
// equation labels (shared/reference/paper.tex).
//
//   x_i | delta_i, sigma_i ~ MVN(delta_i 1, sigma_i^2 M_i),  M_i = (1 - rho_i) I + rho_i 1 1'   [eq:mvn]
//   delta_i | delta0, sigma0, nu ~ t_nu(delta0, sigma0)                                    [eq:delta_i]
//   sigma_i ~ U(0, sigma_high)                                                             [eq:sigma_i]
//   nu = 1 + nu',  nu' ~ Gamma(alpha, beta) (shape, rate),  alpha ~ U, beta ~ U  (Sec. 3, as the authors' code)
//   delta0 ~ U(delta0_low, delta0_high),  sigma0 ~ U(0, sigma0_high)
//
// Two exact rewrites make the model O(1) per dataset and remove the sigma_i funnel:
//  1. Sufficient statistics.  With xbar_i the mean and S_i the sum of squared deviations of x_i,
//       (x_i - delta_i 1)' M_i^{-1} (x_i - delta_i 1) = Q_i
//       Q_i = S_i / (1 - rho_i) + n_i (xbar_i - delta_i)^2 / (1 + (n_i - 1) rho_i).
//     log|M_i| does not depend on any parameter and is dropped.
//  2. sigma_i integrated out.  sigma_i appears only in dataset i's likelihood under a flat prior, and
//       int_0^U sigma^{-n} exp(-Q / (2 sigma^2)) dsigma
//         = 2^{(n-3)/2} Gamma((n-1)/2) Q^{-(n-1)/2} P_upper((n-1)/2, Q / (2 U^2)),
//     where P_upper is the regularised upper incomplete gamma function (log_gamma_q below).
//     As a function of delta_i, Q_i^{-(n_i-1)/2} is the kernel of a Student-t with n_i - 2 degrees of freedom,
//     location xbar_i and scale sqrt(S_i / ((1 - rho_i) m_i (n_i - 2))), m_i = n_i / (1 + (n_i - 1) rho_i):
//     the likelihood is written as that density (one vectorised call); n_i = 2 keeps Q_i^{-1/2} itself.
//     sigma_i can be recovered exactly afterwards: 1/sigma_i^2 | delta_i, x_i ~ Gamma((n_i-1)/2, Q_i/2)
//     truncated to sigma_i < U.
// Sampling (the same posterior, other coordinates; tests/test_engine.py, tests/test_likelihood.py):
//  * delta_i is centred (as the authors write it) when the data pin every dataset down better than the
//    datasets spread.  Otherwise the centred form makes a funnel between sigma0 and delta_i, and the datasets
//    listed in idx_nc (prepare.py picks them) are sampled non-centred, delta_i = delta0 + sigma0 z_i, with
//    z_i = sinh(w_i): z_i has the Student-t's polynomial tails, w_i only exponential ones, which HMC crosses in
//    far fewer steps when nu is small and a delta_i sits far out in the tail.  When a fit diverges,
//    hierarchical.py samples again at adapt_delta 0.95, non-centred first, then centred if that still
//    diverges, and keeps the fit with the fewest divergences.
//  * a centred delta_i is sampled as xbar_i + s_i e_i (offset/multiplier), s_i its likelihood's scale: datasets
//    measured very precisely would otherwise be hundreds of times narrower than the sampler's initial unit metric.
//  * delta0's uniform prior on its wide data-derived bounds is sampled through a logit centred on mean(xbar)
//    whose slope there is delta0's rough posterior sd, so that the sampler's initial unit metric fits it; Stan's
//    own bounds transform would put it on a scale ~100 times too small and make early warm-up take long steps.
functions {
  // log P_upper(a, x), finite where Stan's gamma_q underflows to 0 (x far beyond a, e.g. a dataset whose mean
  // lies far from delta_i while sigma_i is bounded).  For x > a + 1, Legendre's continued fraction
  //   P_upper(a, x) = x^a e^{-x} / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))
  // (DLMF 8.9.2), evaluated by the modified Lentz method and kept in log space; below, log(gamma_q) is exact.
  real log_gamma_q(real a, real x) {
    if (x <= a + 1) {
      return log(gamma_q(a, x));
    }
    real tiny = 1e-300;
    real b = x + 1 - a;
    real c = 1 / tiny;
    real d = 1 / b;
    real fraction = d;
    for (k in 1:1000) {
      real term = -k * (k - a);
      b += 2;
      d = term * d + b;
      if (abs(d) < tiny) {
        d = tiny;
      }
      c = b + term / c;
      if (abs(c) < tiny) {
        c = tiny;
      }
      d = 1 / d;
      real step = d * c;
      fraction *= step;
      if (abs(step - 1) < 1e-15) {
        break;
      }
    }
    return a * log(x) - x - lgamma(a) + log(fraction);
  }
}
data {
  int<lower=1> q;                                   // number of datasets
  array[q] int<lower=2> n;                          // scores per dataset (runs x folds)
  vector<lower=0, upper=1>[q] rho;                  // correlation between folds, 1/folds (Nadeau-Bengio)
  vector[q] xbar;                                   // mean difference per dataset
  vector<lower=0>[q] ssd;                           // sum of squared deviations per dataset
  real delta0_low;                                  // bounds of the uniform prior on delta0
  real<lower=delta0_low> delta0_high;
  real<lower=0> sigma0_high;                        // sigma0 ~ U(0, sigma0_high)
  real<lower=0> sigma_high;                         // sigma_i ~ U(0, sigma_high), integrated out
  int<lower=0, upper=q> q_nc;                       // datasets sampled non-centred ...
  array[q_nc] int<lower=1, upper=q> idx_nc;         // ... their indices
  array[q - q_nc] int<lower=1, upper=q> idx_c;      // the others, sampled centred
  int<lower=0, upper=1> exact_sigma_bound;          // 1: keep the incomplete-gamma factor of rewrite 2
  // nu prior: 0 hierarchical (alpha, beta uniform), 1 Gamma(2, 0.1) (Juarez-Steel),
  //           2 Gamma(1, 0.0345) (Kruschke), 3 Gaussian delta_i (no nu)
  int<lower=0, upper=3> nu_prior;
  real<lower=0> alpha_low;
  real<lower=alpha_low> alpha_high;
  real<lower=0> beta_low;
  real<lower=beta_low> beta_high;
}
transformed data {
  vector[q] ssd_term = ssd ./ (1 - rho);
  vector[q] mean_term;
  vector[q] half_dof;
  for (i in 1:q) {
    mean_term[i] = n[i] / (1 + (n[i] - 1) * rho[i]);
    half_dof[i] = 0.5 * (n[i] - 1);
  }
  // The incomplete-gamma factor equals 1 to double precision when sigma_high is 1000 times the data's spread
  // (the paper's bound): exact_sigma_bound = 0 skips it; prepare.py sets it to 1 when the bound matters.
  real two_u2 = exact_sigma_bound ? 2 * square(sigma_high) : 0;
  // rewrite 2 as Student-t densities (n_i >= 3, idx_t) and the bare kernel Q_i^{-1/2} (n_i = 2, idx_2)
  int q2 = 0;
  for (i in 1:q) {
    q2 += n[i] == 2;
  }
  array[q - q2] int idx_t;
  array[q2] int idx_2;
  {
    int t = 0;
    int k = 0;
    for (i in 1:q) {
      if (n[i] == 2) {
        k += 1;
        idx_2[k] = i;
      } else {
        t += 1;
        idx_t[t] = i;
      }
    }
  }
  vector[q - q2] xbar_t = xbar[idx_t];
  vector[q - q2] t_df = to_vector(n[idx_t]) - 2;
  vector[q - q2] t_scale = sqrt(ssd_term[idx_t] ./ (mean_term[idx_t] .* t_df));
  vector[q2] xbar_2 = xbar[idx_2];
  vector[q2] var_2 = ssd_term[idx_2] ./ mean_term[idx_2];
  // each centred delta_i is sampled on the scale of its own likelihood (xbar_i, t_scale_i): an affine change of
  // variables, so the sampler's initial unit metric fits it from the first warm-up iteration.  offset and multiplier
  // are plain vectors: written as xbar[idx_c] in the declaration itself, httpstan's stanc read freed memory.
  vector[q] lik_scale;
  lik_scale[idx_t] = t_scale;
  lik_scale[idx_2] = sqrt(var_2);
  vector[q - q_nc] delta_at = xbar[idx_c];
  vector[q - q_nc] delta_scale = lik_scale[idx_c];
  // delta0 = delta0_low + (delta0_high - delta0_low) inv_logit(d0_at + d0_slope delta0_u), see the header
  if (!(delta0_high > delta0_low)) {
    reject("delta0_high (", delta0_high, ") must exceed delta0_low (", delta0_low, ")");
  }
  real d0_sd = sqrt(((q > 1 ? variance(xbar) : 0) + mean(ssd_term ./ mean_term ./ (2 * half_dof))) / q);
  // the centre is kept at least min(d0_sd, range / 4) inside the bounds: a mean(xbar) at or beyond a bound would
  // make the slope huge and the sampler stick (benchmarks/README.md, "A defect found"; tests/test_calibration.py)
  real d0_margin = fmin(d0_sd, (delta0_high - delta0_low) / 4);
  real d0_centre = fmin(fmax(mean(xbar), delta0_low + d0_margin), delta0_high - d0_margin);
  real d0_p = fmin(fmax((d0_centre - delta0_low) / (delta0_high - delta0_low), 1e-6), 1 - 1e-6);
  real d0_at = logit(d0_p);
  real d0_slope = d0_sd / ((delta0_high - delta0_low) * d0_p * (1 - d0_p));
}
parameters {
  real delta0_u;                                     // delta0 on the scaled logit (header)
  real<lower=0, upper=sigma0_high> sigma0;
  array[nu_prior == 3 ? 0 : 1] real<lower=0> nu_scaled;    // beta * nu' (hierarchical prior), else nu'
  array[nu_prior == 0 ? 1 : 0] real<lower=alpha_low, upper=alpha_high> gamma_alpha;
  array[nu_prior == 0 ? 1 : 0] real<lower=beta_low, upper=beta_high> gamma_beta;
  vector<offset=delta_at, multiplier=delta_scale>[q - q_nc] delta;  // delta_i of the centred ones (idx_c)
  vector[q_nc] delta_w;                              // asinh((delta_i - delta0) / sigma0) of the others (idx_nc)
}
transformed parameters {
  real delta0 = delta0_low + (delta0_high - delta0_low) * inv_logit(d0_at + d0_slope * delta0_u);
  // nu' ~ Gamma(alpha, beta) is sampled as nu' = g / beta with g ~ Gamma(alpha, 1), the same prior (beta is a
  // rate); this decouples nu' from beta, whose joint posterior otherwise mixes slowly in nu's long right tail.
  array[nu_prior == 3 ? 0 : 1] real nu_minus_one;
  if (nu_prior == 0) {
    nu_minus_one[1] = nu_scaled[1] / gamma_beta[1];
  } else if (nu_prior < 3) {
    nu_minus_one[1] = nu_scaled[1];
  }
}
model {
  vector[q_nc] delta_z = sinh(delta_w);
  vector[q] delta_all;                               // every delta_i, in input order
  delta_all[idx_c] = delta;
  delta_all[idx_nc] = delta0 + sigma0 * delta_z;
  // log-Jacobians (constants dropped): delta0 = f(delta0_u) gives delta0 ~ U(delta0_low, delta0_high);
  // z = sinh(w): log |dz/dw| = log cosh(w)
  target += log_inv_logit(d0_at + d0_slope * delta0_u) + log1m_inv_logit(d0_at + d0_slope * delta0_u);
  target += sum(abs(delta_w) + log1p_exp(-2 * abs(delta_w)));
  // prior on nu and its sensitivity variants (paper, Table tab:prior-nu)
  if (nu_prior == 0) {
    nu_scaled[1] ~ gamma(gamma_alpha[1], 1);
  } else if (nu_prior == 1) {
    nu_scaled[1] ~ gamma(2, 0.1);
  } else if (nu_prior == 2) {
    nu_scaled[1] ~ gamma(1, 0.0345);
  }
  // [eq:delta_i]
  if (nu_prior == 3) {
    delta ~ normal(delta0, sigma0);
    delta_z ~ std_normal();
  } else {
    delta ~ student_t(1 + nu_minus_one[1], delta0, sigma0);
    delta_z ~ student_t(1 + nu_minus_one[1], 0, 1);
  }
  // [eq:mvn] with sigma_i integrated out (rewrite 2)
  xbar_t ~ student_t(t_df, delta_all[idx_t], t_scale);
  target += -0.5 * sum(log1p(square(xbar_2 - delta_all[idx_2]) ./ var_2));
  if (two_u2 > 0) {
    for (i in 1:q) {
      target += log_gamma_q(half_dof[i], (ssd_term[i] + mean_term[i] * square(xbar[i] - delta_all[i])) / two_u2);
    }
  }
}
