// Benchmark reference: the authors' Stan program for the Bayesian hierarchical correlated t-test (Corani et al.
// 2017), re-typed block for block from its description in shared/reference/implementations.md, section 1.1
// (BayesianTestsML/tutorial hierarchical/stan/hierarchical-t-test.stan; baycomp and scmamp ship the same program
// in modern syntax, which is the syntax used here).  It is what a user of those packages runs:
//
//   * M^{-1} built from the adjugate divided by the determinant (exact at n = 100, rho = 0.1, the paper's data);
//   * diff (the q x n matrix of centred differences), its quadratic forms and the per-dataset log-likelihood terms
//     are *transformed parameters*, so Stan writes all q * n + 3 q + 1 of them out with every draw (5,563 values
//     on the paper's data, on top of its 113 parameters) and pystan reads them back;
//   * explicit sigma_i with a U(stdLow, stdHi) prior, centred delta_i, nu = 1 + nu', 2 pi written as 6.283.
//
// benchmarks/full_covariance.stan is the same program with the transformed parameters moved into the model block
// (only the parameters written out) and the closed-form inverse; benchmarks/bench_model.py times both against ours.
//
//   x_i | delta_i, sigma_i ~ MVN(delta_i 1, sigma_i^2 M),  M = (1 - rho) I + rho 1 1'            (eq. 3)
//   delta_i ~ t_nu(delta0, std0),  sigma_i ~ U(stdLow, stdHi)                                     (eqs. 4, 5)
//   nu = 1 + nu',  nu' ~ Gamma(alpha, beta) (shape, rate),  alpha ~ U, beta ~ U                   (eq. 6)
data {
  real deltaLow;
  real deltaHi;
  real std0Low;
  real std0Hi;
  real stdLow;
  real stdHi;
  int<lower=2> Nsamples;                 // scores per dataset (runs x folds)
  int<lower=1> q;                        // datasets
  matrix[q, Nsamples] x;                 // differences, one dataset per row
  real rho;                              // correlation between folds, 1/folds
  real upperAlpha;
  real lowerAlpha;
  real upperBeta;
  real lowerBeta;
}
transformed data {
  real detM = (1 + (Nsamples - 1) * rho) * (1 - rho) ^ (Nsamples - 1);
  matrix[Nsamples, Nsamples] invM;
  for (j in 1:Nsamples) {
    for (i in 1:Nsamples) {
      if (i == j)
        invM[j, i] = (1 + (Nsamples - 2) * rho) * (1 - rho) ^ (Nsamples - 2) / detM;
      else
        invM[j, i] = -rho * (1 - rho) ^ (Nsamples - 2) / detM;
    }
  }
}
parameters {
  real<lower=deltaLow, upper=deltaHi> delta0;
  real<lower=std0Low, upper=std0Hi> std0;
  vector[q] delta;
  vector<lower=stdLow, upper=stdHi>[q] sigma;
  real<lower=0> nuMinusOne;
  real<lower=lowerAlpha, upper=upperAlpha> gammaAlpha;
  real<lower=lowerBeta, upper=upperBeta> gammaBeta;
}
transformed parameters {
  real<lower=1> nu = nuMinusOne + 1;
  matrix[q, Nsamples] diff = x - rep_matrix(delta, Nsamples);
  vector[q] diagQuad = diagonal(quad_form(invM, diff'));
  vector[q] logDetSigma = 2 * Nsamples * log(sigma) + log(detM);
  vector[q] logLik = -0.5 * logDetSigma - 0.5 * Nsamples * log(6.283) - 0.5 * diagQuad ./ square(sigma);
}
model {
  nuMinusOne ~ gamma(gammaAlpha, gammaBeta);
  delta ~ student_t(nu, delta0, std0);
  target += sum(logLik);
}
