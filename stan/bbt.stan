// Bayesian Bradley-Terry model (BBT)
// J. Wainer (2023), "A Bayesian Bradley-Terry model to compare multiple ML algorithms on multiple data sets",
// JMLR 24, Sec. 4 eq. (mod1); Davidson's tie model (Sec. 6.2, eq. (david)) as an option.
//
//   W_ij ~ Binomial(W_ij + W_ji, inv_logit(beta_i - beta_j))       per pair (i, j): the wins of each model
//   beta_k ~ N(0, sigma)                                           the models' strengths (log abilities)
//   sigma ~ LogNormal(0, 0.5)  (the paper's; bbtcomp's other hyper-priors: LogNormal, half-Cauchy, half-normal)
//
// Davidson: a pair's games are win / loss / tie, multinomial with probabilities proportional to
//   exp(beta_i), exp(beta_j), exp(nu + (beta_i + beta_j) / 2);  nu ~ N(0, nu_scale) on the real line.
// Dividing by exp((beta_i + beta_j) / 2), with d = beta_i - beta_j, the log-likelihood of a pair is
//   W_ij d/2 - W_ji d/2 + T_ij nu - (W_ij + W_ji + T_ij) log(exp(d/2) + exp(-d/2) + exp(nu)).
// (bbtcomp's bbt-full.stan draws the wins as Binomial(W_ij + W_ji, P(i wins)) with the unconditional P(i wins),
// not P(i wins | no tie) = inv_logit(beta_i - beta_j), so the tie's share goes to the second model; and it
// bounds nu > 0, which forces P(tie) >= 1/3 between equal models.)
//
// Identification.  The likelihood depends on differences of strengths only.  Under beta_k ~ N(0, sigma) iid,
// beta = m 1 + c with m = mean(beta) ~ N(0, sigma / sqrt(K)) independent of the centred part c, whose density is
// proportional to sigma^-(K-1) exp(-|c|^2 / (2 sigma^2)) on the subspace sum(c) = 0.  m never meets the data, so
// it is integrated out exactly: beta is sampled in that subspace as beta = H z, H an orthonormal (Helmert) basis
// of it, z ~ N(0, sigma) in K - 1 dimensions.  Differences of strengths, sigma and nu have the paper's posterior;
// the posterior mean of every beta_k is unchanged (it equals that of c_k, since E[m | data] = 0).
// With centred = 0, z = sigma u, u ~ N(0, 1): the non-centred form, for games that pin the strengths down less
// tightly than sigma spreads them (ranking.py picks the form, and samples the other one too when a fit diverges).
data {
  int<lower=2> K;                                   // models
  int<lower=1> N;                                   // pairs
  array[N] int<lower=1, upper=K> first;             // the pair's first model ...
  array[N] int<lower=1, upper=K> second;            // ... and its second
  array[N] int<lower=0> wins_first;                 // games the first model won
  array[N] int<lower=0> wins_second;                // games the second model won
  array[N] int<lower=0> ties;                       // tied games (Davidson's model only)
  int<lower=0, upper=1> davidson;                   // 1: Davidson's tie model
  int<lower=0, upper=2> hyper_prior;                // sigma ~ 0 LogNormal(0, s), 1 half-Cauchy, 2 half-normal
  real<lower=0> hyper_scale;                        // s
  real<lower=0> nu_scale;                           // nu ~ N(0, nu_scale)
  int<lower=0, upper=1> centred;                    // 1: z ~ N(0, sigma); 0: z = sigma u
}
transformed data {
  matrix[K, K - 1] helmert = rep_matrix(0, K, K - 1);   // orthonormal columns, each summing to zero
  array[N] int decisive;
  vector[N] games;
  vector[N] net;
  real total_ties = sum(ties);
  for (k in 1:(K - 1)) {
    real h = inv_sqrt(k * (k + 1.0));
    helmert[1:k, k] = rep_vector(h, k);
    helmert[k + 1, k] = -k * h;
  }
  for (n in 1:N) {
    decisive[n] = wins_first[n] + wins_second[n];
    games[n] = decisive[n] + ties[n];
    net[n] = wins_first[n] - wins_second[n];
  }
}
parameters {
  real<lower=0> sigma;
  vector[K - 1] z;
  array[davidson] real nu;
}
transformed parameters {
  vector[K] beta = helmert * (centred ? z : sigma * z);
}
model {
  vector[N] d = beta[first] - beta[second];
  if (hyper_prior == 0) {
    sigma ~ lognormal(0, hyper_scale);
  } else if (hyper_prior == 1) {
    sigma ~ cauchy(0, hyper_scale);
  } else {
    sigma ~ normal(0, hyper_scale);
  }
  if (centred) {
    z ~ normal(0, sigma);
  } else {
    z ~ std_normal();
  }
  if (davidson) {
    vector[N] log_total;
    for (n in 1:N) {
      log_total[n] = log_sum_exp(log_sum_exp(0.5 * d[n], -0.5 * d[n]), nu[1]);
    }
    nu ~ normal(0, nu_scale);
    target += 0.5 * dot_product(net, d) + total_ties * nu[1] - dot_product(games, log_total);
  } else {
    wins_first ~ binomial_logit(decisive, d);
  }
}
