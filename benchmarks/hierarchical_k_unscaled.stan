// stan/hierarchical_k.stan before its sampler's coordinates were scaled (d and sigma0 on Stan's bounds alone,
// L_rr and L_rt unscaled): the same model, kept for bench_kmodel.py's side-by-side speed (`speed --vs-unscaled`).
// Bayesian hierarchical model of k models' cross-validation scores on many datasets: the hierarchical test of
// Corani, Benavoli, Demšar, Mangili, Zaffalon (2017), "Statistical comparison of classifiers through Bayesian
// hierarchical modelling", Machine Learning 106:1817-1837, Sec. 3, extended from one difference to k models.
// [eq:...] are the paper's equation labels (shared/reference/paper.tex); stan/hierarchical.stan is its k = 2 form.
//
// Dataset i (n_i fold scores per model, the same folds for every model, rho_i = 1/folds) holds the models S_i, k_i =
// |S_i| >= 2 of the k (a model that failed on a dataset, or came later, is missing there: nothing is imputed; below,
// S_i is every model and k_i = k unless said):
//   y_ijf = theta_ij + u_if + e_ijf,   e_ij. ~ MVN(0, sigma_i^2 M_i),  M_i = (1 - rho_i) I + rho_i 1 1'    [eq:mvn]
//     u_if: the fold's effect, shared by the models (flat prior, integrated out);
//     sigma_i: one noise scale per dataset, shared by its models (flat prior; see "Choices").
//   phi_i = H' theta_i = d + sqrt(lambda_i) Omega^(1/2) z_i,  z_i ~ N(0, I_p),  lambda_i ~ InvGamma(nu/2, nu/2)
//     shared by the models of dataset i: the datasets' contrasts are multivariate Student-t with scale matrix Omega
//     (p x p, p = k - 1, unstructured), so a pair's contrast theta_ij - theta_il ~ t_nu(delta_j - delta_l, s_jl),
//     s_jl^2 = C_jj + C_ll - 2 C_jl with C = H Omega H' the covariance of the models' effects: each pair has its
//     own spread (issue 38; the program of issue 27 had Omega = sigma0^2 I, the one spread sqrt(2) sigma0 for every
//     pair).  With k = 2, Omega = sigma0^2 and the difference is t_nu(delta_1 - delta_2, sqrt(2) sigma0): the
//     paper's delta_i ~ t_nu(delta0, sigma0') [eq:delta_i] with delta0 = delta_1 - delta_2, sigma0' = sqrt(2) sigma0.
//   Omega = sigma0^2 R:  sigma0 = sqrt(tr(Omega) / p) ~ U(0, sigma0_high), the paper's prior at every k (the pairs'
//     variances average 2 sigma0^2: sum_{j<l} s_jl^2 = k tr(Omega));  the shape R = p W / tr(W), W ~ Wishart(I_p, m),
//     m = shape_df = p, whose density on tr(R) = p is proportional to |R|^((m - p - 1)/2) = |R|^(-1/2): invariant
//     under rotations of the contrasts, so symmetric in the models (permuting the models rotates the contrasts), and
//     flat on the sd of each direction near zero, as sigma0 is.  At k = 2, R = 1: the paper's model, priors included.
//   nu = 1 + nu',  nu' ~ Gamma(alpha, beta), alpha ~ U, beta ~ U  (Sec. 3, the paper's default prior)
//   delta identified up to a common shift (only contrasts meet the data, as the paper works on differences):
//     delta = H d, H the orthonormal Helmert basis of the sum-zero subspace (Stan 2.35, httpstan 4.13's, has no
//     sum_to_zero_vector), d ~ U(-d_bound, d_bound)^(k-1).
// The hyper-priors map onto the paper's at k = 2 (hierarchical_k.py scales them to the data as prepare.py does):
// delta_1 - delta_2 = sqrt(2) d, so d_bound = max|pair difference| / sqrt(2) is the paper's delta0 ~ U(+-max|x|);
// sigma0_high = 1000 sd(v) is the paper's sigma0' ~ U(0, 1000 sd(xbar)), v = xbar / sqrt(2) below.  Where some models
// lack a dataset (rewrite 5), the largest pair difference is taken over the pairs each dataset has, and sd(v)^2 is
// sum_i |v_i - A_i dhat|^2 / (sum_i p_i - p), dhat the least-squares fit of v_i ~ A_i d: with every model, dhat is the
// mean of the v_i and this is the mean over the coordinates of their variance, as before (hierarchical_k.py).
// Other populations tried (benchmarks/README.md): a scale per model (a pair's spread sqrt(tau_j^2 + tau_l^2)) puts
// nearly identical models (j48 and j48gr on the paper's data, spread 0.0004) far apart; flat independent
// eigen-scales with a Haar rotation (Gram-Schmidt of a Gaussian matrix) switch labels, and had not finished 4 x 2000
// iterations on Wainer's 16 x 131 after 7 CPU minutes; |Omega|^(-1/2) on a box of its Cholesky factor, without
// sigma0, weighs the overall spread by Omega's volume (about p datasets' worth) and sampled at tree depth 10 there.
//
// Exact rewrites (tests/test_hierarchical_k.py checks them against the direct likelihood; benchmarks/
// hierarchical_k_direct.stan samples the model without them):
//  1. The fold effect integrated out.  With w_j = 1/sigma_ij^2, h = sum_j w_j, Q(v) = v' M^-1 v =
//     SS_within(v) / (1 - rho) + n vbar^2 / (1 + (n - 1) rho), and r_j = y_ij - theta_ij 1, completing the square in
//     u_i gives  log p(y_i | theta, sigma) = -n sum_j log sigma_ij - (n/2) log h - 1/2 sum_j w_j Q(r_j)
//     + 1/(2h) Q(sum_j w_j r_j) + const.  It depends on the fold means and the within-fold cross-products only, and
//     on theta_i. only through its contrasts.  (k = 2: the paper's likelihood of the difference, variance
//     (sigma_i1^2 + sigma_i2^2) M_i.)
//  2. With sigma_ij = sigma_i this is  -n (k - 1) log sigma_i - Q_i / (2 sigma_i^2),
//       Q_i = c_i + m_i |v_i - phi_i|^2,  c_i = tr(H' W_i H) / (1 - rho_i),  m_i = n_i / (1 + (n_i - 1) rho_i),
//     v_i = H' ybar_i, phi_i = H' theta_i (the k - 1 = p contrast coordinates), W_i the within-fold cross-product
//     matrix: two numbers and a p-vector per dataset.
//  3. theta_i enters only through phi_i = H' theta_i: the models' common level on a dataset never meets the data.
//  4. phi_i integrated out.  Given lambda_i and sigma_i, phi_i ~ N(d, lambda_i Omega) and the likelihood is
//     Gaussian in phi_i, so  int sigma^(-n p) exp(-Q_i / (2 sigma^2)) N(phi_i; d, lambda_i Omega) dphi_i
//       = (2 pi / m_i)^(p/2) sigma_i^(-(n_i - 1) p) exp(-c_i / (2 sigma_i^2)) N(v_i; d, lambda_i Omega + e_i I_p),
//     e_i = sigma_i^2 / m_i.  The noise is isotropic in the contrast coordinates (one sigma_i, H'H = I), so with
//     Omega = U diag(s) U' (one eigen-decomposition per evaluation, O(p^3)) the rotated U'(v_i - d) has p independent
//     coordinates of variances lambda_i s_r + e_i: O(p^2) per dataset for the rotation, whatever the datasets' count
//     of Omega's entries; two scalars per dataset are sampled (sigma_i, lambda_i).  This holds because sigma_i is one
//     per dataset: a noise scale per model would make lambda_i Omega + H' diag(sigma_ij^2 / m_i) H a p x p matrix to
//     factor on every dataset (O(q p^3) per evaluation: on Wainer's 16 x 131, beyond the speed target).
//     (With k = 2 the paper's delta_i is sqrt(2) phi_i.)
//  5. A dataset with some models only (k_i < k; exact, nothing imputed).  Rewrites 1-2 hold over the models S_i present
//     (the fold effect is shared by them), with H_S = helmert(k_i), v_i = H_S' ybar_i(S_i), c_i = tr(H_S' W_i H_S) /
//     (1 - rho_i), p_i = k_i - 1 in place of p and w_i = (n_i - 1) p_i.  phi_i = H_S' theta_i(S) = A_i (d + sqrt(
//     lambda_i) Omega^(1/2) z_i) with A_i = H_S' E_S H (p_i x p, E_S the rows of S), and rewrite 4 gives v_i ~ N(A_i d,
//     lambda_i A_i Omega A_i' + e_i I_{p_i}).  A_i Omega A_i' is not diagonal in U's basis: these datasets (idx_r)
//     alone get their own p_i x p_i Cholesky factor (multi_normal), their v_i and A_i stacked in v_r and A_r (rows
//     seg_start .. + seg_len - 1); a complete grid (q_r = 0) pays nothing.  (A_i A_i' = I_{p_i}: H_S'(I - 1 1'/k)
//     H_S = I, as H_S' 1 = 0.)
//
// Choices (why).  One sigma_i per dataset rather than one per model: (a) k = 2 is then the paper's model exactly,
// its flat prior on the difference's sd included (with sigma_i1, sigma_i2 the prior of sqrt(sigma_i1^2 + sigma_i2^2)
// would be proportional to it, not flat); (b) rewrite 4 needs it, and with it the density is O(p^2) per dataset,
// where k sigma_ij per dataset would each rest on n_i - 1 residual degrees of freedom (3 with 4 folds) under a flat
// prior, with heavy-tailed posteriors, and would keep the k - 1 effects of every dataset in the sampler.  The price: a
// model much noisier than the others on a dataset lends its noise to that dataset's other contrasts (measured on
// scikit-learn's CV, where naive Bayes is three times noisier than the others on digits: holding the noise to the
// other three models moved no pair's P by more than 0.02, benchmarks/README.md).  One lambda_i per dataset: an
// outlying dataset is outlying for all its contrasts at once, and nu is shared by the pairs, where each pair's own
// test has its own (what is left: benchmarks/README.md).  sigma_i's flat prior is the paper's U(0, 1000 s) with the
// bound dropped (its factor is 1 to double precision there: hierarchical.stan, rewrite 2); the posterior is proper
// without it (sigma_high = 0).
//
// Sampling.  log sigma_i on the scale of its likelihood: log sigma_i = log sqrt(c_i / w_i) + raw_i / sqrt(2 w_i),
// w_i = (n_i - 1) p_i its degrees of freedom (an affine change of variables, written out so that raw_i can take the
// bound sigma_high, which only the simulation-based calibration sets; + log sigma_i is the Jacobian of the flat
// prior).  tau_i = 1 / lambda_i ~ Gamma(nu/2, nu/2).  Where the data say little about lambda_i (the datasets in
// idx_z: few models, noise as large as the population's spread), it is sampled as log tau_i = E[log tau] +
// sd[log tau] tau_z_i, its mean and sd under that Gamma (digamma, trigamma): the same prior, whose width no longer
// follows nu (sampled as tau_i itself, the tau_i narrow as nu grows, a funnel that left nu's R-hat at 1.03 after
// 4 x 1000 draws on the issue's scenario).  Where its p_i contrasts pin lambda_i down (idx_tau), the dataset's mean
// population variance omega_i = sigma0^2 lambda_i, which the data see, is sampled (log scale) and tau_i = sigma0^2 /
// omega_i: standardised, tau_i would fight a likelihood narrower than its prior (divergences on Wainer's 16
// models), and sampled as itself, sigma0 and all the tau_i would trade along one ridge (sigma0's R-hat 1.03 there).
// hierarchical_k.py picks each dataset's form from the information the data carry about log lambda_i.  W is sampled
// as W = G Q G', Q = L L', L lower-triangular (chol_diag > 0, chol_lower): G (whiten, data; hierarchical_k.py) is the
// Cholesky factor of p times Tyler's estimate of the residuals' shape, an affine change of variables (constant
// Jacobian) that puts Q's posterior near the identity; sampled as W itself, the small eigen-directions of nearly
// identical models made a funnel (tree depth 10 on Wainer's data, 31 leapfrog steps after).  tr(W) never meets the
// data (only R does): its posterior is its prior, chi^2(m p).  W's prior terms: Wishart's |W|^((m - p - 1)/2)
// exp(-tr(W)/2), |W| = |G|^2 prod L_rr^2, and the Jacobian of Q -> L, 2^p prod L_rr^(p - r + 1): sum (m - r)
// log L_rr - tr(W)/2.  nu' ~ Gamma(alpha, beta) is sampled as nu' = g / beta, g ~ Gamma(alpha, 1)
// (hierarchical.stan's reason).
data {
  int<lower=2> k;                                   // models
  int<lower=2> q;                                   // datasets
  vector<lower=1, upper=k - 1>[q] p_i;              // k_i - 1: the contrast coordinates of dataset i
  vector<lower=0>[q] c;                             // tr(H_S' W_i H_S) / (1 - rho_i), > 0
  vector<lower=0>[q] m;                             // n_i / (1 + (n_i - 1) rho_i)
  vector<lower=1>[q] w;                             // (n_i - 1) p_i: residual degrees of freedom
  int<lower=0, upper=q> q_c;                        // datasets with every model ...
  array[q_c] int<lower=1, upper=q> idx_c;           // ... their indices
  matrix[q_c, k - 1] v_c;                           // ... and their v_i = H' ybar_i, one per row
  int<lower=0, upper=q> q_r;                        // datasets some models lack (rewrite 5) ...
  array[q_r] int<lower=1, upper=q> idx_r;           // ... their indices
  int<lower=0> P_r;                                 // sum of their p_i
  vector[P_r] v_r;                                  // their v_i = H_S' ybar_i(S), stacked
  matrix[P_r, k - 1] A_r;                           // their A_i = H_S' E_S H, stacked
  array[q_r] int<lower=1, upper=max(P_r, 1)> seg_start;  // the first row of each dataset's v_i and A_i ...
  array[q_r] int<lower=1, upper=k - 1> seg_len;     // ... and its rows, p_i
  real<lower=0> d_bound;                            // d ~ U(-d_bound, d_bound) per coordinate
  real<lower=0> sigma0_high;                        // sigma0 ~ U(0, sigma0_high)
  real<lower=0> sigma_high;                         // sigma_i ~ U(0, sigma_high); 0: flat on (0, inf)
  real<lower=k - 2> shape_df;                       // m: W ~ Wishart(I, m), the shape R = p W / tr(W)
  matrix[k - 1, k - 1] whiten;                      // G, lower-triangular: W = G Q G' (header: Sampling)
  int<lower=0, upper=q> q_tau;                      // datasets whose tau_i is sampled through omega_i ...
  array[q_tau] int<lower=1, upper=q> idx_tau;       // ... their indices
  array[q - q_tau] int<lower=1, upper=q> idx_z;     // the others: standardised (header)
  real<lower=0> alpha_low;
  real<lower=alpha_low> alpha_high;
  real<lower=0> beta_low;
  real<lower=beta_low> beta_high;
}
transformed data {
  int p = k - 1;
  vector[q] log_sigma_at = 0.5 * log(c ./ w);
  vector[q] log_sigma_scale = inv_sqrt(2 * w);
  vector[p] ladder;                                 // m - r: Wishart's and the Jacobian's powers of L_rr
  for (r in 1:p) {
    ladder[r] = shape_df - r;
  }
  vector[q] raw_high = sigma_high > 0 ? (log(sigma_high) - log_sigma_at) ./ log_sigma_scale
                                      : rep_vector(positive_infinity(), q);
}
parameters {
  vector<lower=-d_bound, upper=d_bound>[p] d;       // delta = H d (Helmert coordinates)
  real<lower=0, upper=sigma0_high> sigma0;          // sqrt(tr(Omega) / p)
  vector<lower=0>[p] chol_diag;                     // L_rr: Q = L L' ...
  vector[(p * (p - 1)) %/% 2] chol_lower;           // ... L_rt, r > t, row by row
  real<lower=0> nu_scaled;                          // beta * nu'
  real<lower=alpha_low, upper=alpha_high> gamma_alpha;
  real<lower=beta_low, upper=beta_high> gamma_beta;
  vector<upper=raw_high>[q] log_sigma_raw;          // (log sigma_i - log_sigma_at) / log_sigma_scale
  vector[q_tau] log_omega;                          // log(sigma0^2 lambda_i) (idx_tau) ...
  vector[q - q_tau] tau_z;                          // ... or log(1 / lambda_i) standardised (idx_z)
}
transformed parameters {
  real nu = 1 + nu_scaled / gamma_beta;
  // log tau_i = E[log tau] + sd[log tau] tau_z_i under tau ~ Gamma(nu/2, nu/2): digamma(nu/2) - log(nu/2) and
  // sqrt(trigamma(nu/2))
  real log_tau_sd = sqrt(trigamma(0.5 * nu));
  matrix[p, p] Omega;                               // sigma0^2 R: the covariance of phi_i around d (lambda_i = 1)
  real trace_w;                                     // tr(W)
  {
    matrix[p, p] factor = rep_matrix(0, p, p);
    int at = 1;
    for (r in 1:p) {
      factor[r, r] = chol_diag[r];
      for (t in 1:(r - 1)) {
        factor[r, t] = chol_lower[at];
        at += 1;
      }
    }
    matrix[p, p] w_factor = whiten * factor;        // W = (G L)(G L)'
    trace_w = dot_self(to_vector(w_factor));
    Omega = (square(sigma0) * p / trace_w) * multiply_lower_tri_self_transpose(w_factor);
  }
  vector[q] tau;
  tau[idx_tau] = square(sigma0) * exp(-log_omega);
  tau[idx_z] = exp(digamma(0.5 * nu) - log(0.5 * nu) + log_tau_sd * tau_z);
}
model {
  vector[q] log_sigma = log_sigma_at + log_sigma_scale .* log_sigma_raw;
  vector[q] sigma2 = exp(2 * log_sigma);
  vector[q] noise = sigma2 ./ m;                    // e_i: the noise's variance per contrast coordinate
  nu_scaled ~ gamma(gamma_alpha, 1);
  // [eq:delta_i] as a scale mixture; + the log-Jacobians of log_omega -> tau (log tau_i) and of tau_z -> tau
  // (log tau_i + log sd[log tau])
  tau ~ gamma(0.5 * nu, 0.5 * nu);
  target += sum(log(tau)) + (q - q_tau) * log(log_tau_sd);
  // W ~ Wishart(I, m): |W|^((m - p - 1) / 2) exp(-tr(W) / 2), |W| = |G|^2 prod L_rr^2; with the Jacobian of
  // Q -> L, prod L_rr^(p - r + 1) (G constant)
  target += dot_product(ladder, log(chol_diag)) - 0.5 * trace_w;
  // [eq:mvn] with u_i and phi_i integrated out (rewrites 1-4); + log_sigma: the flat prior on sigma_i
  target += -dot_product(w - 1, log_sigma) - 0.5 * sum(c ./ sigma2);
  // rewrite 4 rotated: Omega = U diag(s) U', v_i ~ N(d, U diag(lambda_i s + e_i) U')
  tuple(matrix[p, p], vector[p]) eig = eigendecompose_sym(Omega);
  if (q_c > 0) {
    matrix[q_c, p] rotated = v_c * eig.1 - rep_matrix((eig.1' * d)', q_c);
    matrix[q_c, p] total = inv(tau[idx_c]) * eig.2' + rep_matrix(noise[idx_c], p);
    target += -0.5 * sum(log(total)) - 0.5 * sum(square(rotated) ./ total);
  }
  // rewrite 5: v_i ~ N(A_i d, lambda_i A_i Omega A_i' + e_i I)
  for (r in 1:q_r) {
    matrix[seg_len[r], p] a = block(A_r, seg_start[r], 1, seg_len[r], p);
    target += multi_normal_lpdf(segment(v_r, seg_start[r], seg_len[r])
                                | a * d, add_diag(quad_form_sym(Omega, a') / tau[idx_r[r]], noise[idx_r[r]]));
  }
}
