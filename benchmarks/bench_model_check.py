"""Time the PSIS-LOO model check of the hierarchical test (``summary.dataset_pareto_k``) against its former
formulation, side by side on the same posterior draws, and measure both against a fine quadrature.

The former check (issue 40 found it cost as much as the sampling): the integral over δ_i on 2 × 64 plain midpoint
quantile nodes of each density, every node's log-density in double precision through scipy's t quantiles per draw,
then arviz's whole ``loo``.  It is kept here, as written then, as the yardstick (as ``authors_form.stan`` is for the
model).  Ours: 2 × 24 nodes mapped by the quintic smoothstep, single precision, arviz's ``psislw`` alone
(``summary.integrated_log_lik``).

For each of the paper's pairs (``tests/data/uci_classification.csv``, rope 0.01, ρ = 1/10, 4 chains × 1000 draws
after 1000 warm-up, seed 1): the sampling time of the fit (``hierarchical_test`` without the check), each check's
time (the median of ``--repeats`` runs) and its share of the sampling, the largest |Δk̂| between the two, and each
log-likelihood's largest error against 2048 smoothstep nodes on every tenth draw.

    python benchmarks/bench_model_check.py [--pairs nbc-hnb,j48-j48gr] [--repeats 3] [--nodes 32]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np
import pandas as pd
from bench_model import CLASSIFIERS, DATA, FOLDS, PAIRS, ROPE, scores
from scipy import special, stats

from mlflow_bayescompare.families.hierarchical import summary
from mlflow_bayescompare.families.hierarchical.engine import hierarchical_test
from mlflow_bayescompare.shared.posterior_summary import arviz

#: the target: the check costs at most this share of the sampling on every pair
MAX_SHARE = 0.25


def former_integrated_log_lik(stan_data: dict, hyper: dict, nodes: int = 64) -> np.ndarray:
    """The former estimator: stratified midpoints of each density, double precision, scipy's quantiles per draw."""
    n, rho = np.asarray(stan_data["n"], float), np.asarray(stan_data["rho"], float)
    xbar, ssd = np.asarray(stan_data["xbar"], float), np.asarray(stan_data["ssd"], float)
    df = np.maximum(n - 2, 1)
    width = np.sqrt(ssd / (1 - rho) * (1 + (n - 1) * rho) / (n * df))
    shape, u = hyper["delta0"].shape, (np.arange(nodes) + 0.5) / nodes
    loc, spread = hyper["delta0"].reshape(-1, 1, 1), hyper["sigma0"].reshape(-1, 1, 1)
    nu = np.full(loc.shape, np.inf) if "nu_minus_one" not in hyper else 1 + hyper["nu_minus_one"].reshape(-1, 1, 1)

    def t_logpdf(z, v):
        v = np.asarray(v, dtype=float)
        if np.all(np.isinf(v)):
            return -0.5 * (np.log(2 * np.pi) + z * z)
        return (special.gammaln((v + 1) / 2) - special.gammaln(v / 2) - 0.5 * np.log(v * np.pi)
                - (v + 1) / 2 * np.log1p(z * z / v))

    def log_lik(delta):
        return t_logpdf((delta - xbar[:, None]) / width[:, None], df[:, None]) - np.log(width[:, None])

    def log_pop(delta, draws):
        return t_logpdf((delta - loc[draws]) / spread[draws], nu[draws]) - np.log(spread[draws])

    def log_mean_ratio(lik, pop):
        ratio = np.minimum(lik, pop) - np.log1p(np.exp(-np.abs(lik - pop)))
        top = ratio.max(axis=-1, keepdims=True)
        ratio -= top
        return top[..., 0] + np.log(2 * np.mean(np.exp(ratio, out=ratio), axis=-1))

    on_lik = xbar[:, None] + width[:, None] * stats.t.ppf(u, df[:, None])
    lik_on_lik = log_lik(on_lik)[None]
    out = np.empty((len(loc), len(xbar)))
    block = max(1, 50_000 // (len(xbar) * nodes))
    for start in range(0, len(loc), block):
        draws = slice(start, start + block)
        on_pop = loc[draws] + spread[draws] * stats.t.ppf(u, nu[draws])
        by_lik = log_mean_ratio(lik_on_lik, log_pop(on_lik[None], draws))
        by_pop = log_mean_ratio(log_lik(on_pop), log_pop(on_pop, draws))
        out[draws] = np.logaddexp(by_lik, by_pop) - np.log(2)
    return out.reshape(*shape, -1)


def former_pareto_k(stan_data: dict, hyper: dict) -> np.ndarray:
    """The former check: the former estimator, then arviz's whole ``loo``."""
    az = arviz()
    data = az.from_dict(posterior={"delta0": hyper["delta0"]},
                        log_likelihood={"x": former_integrated_log_lik(stan_data, hyper)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(az.loo(data, pointwise=True).pareto_k)


def fine_log_lik(stan_data: dict, hyper: dict) -> np.ndarray:
    """The reference: 2048 smoothstep nodes per density, on a tenth of the draws."""
    tenth = {k: v.reshape(-1)[::10][None] for k, v in hyper.items()}
    return summary.integrated_log_lik(stan_data, tenth, nodes=2048)[0], tenth


def median_seconds(check, stan_data: dict, hyper: dict, repeats: int) -> tuple[float, float, np.ndarray]:
    """The median wall and CPU seconds (this process, every thread) of ``repeats`` runs of
    ``check(stan_data, hyper)``, and its k̂."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        out = check(stan_data, hyper)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default=",".join(PAIRS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=summary.NODES, help="nodes per density of ours")
    args = ap.parse_args(argv)
    frame = pd.read_csv(DATA)
    datasets = [str(d) for d in sorted(frame.DatasetID.unique())]
    arviz()  # imported once, not timed
    print(f"data {DATA.name}: {len(datasets)} datasets, rope {ROPE}, rho 1/{FOLDS}; 4 chains x 1000 + 1000, seed 1; "
          f"median of {args.repeats} runs per check; ours on {args.nodes} nodes per density")
    print(f"{'pair':<10} {'sampling s':>10} {'ours s':>7} {'former s':>8} {'speed-up':>8} {'CPU speed-up':>12} "
          f"{'ours/sampling':>13} {'former/sampling':>15} {'max |dk|':>8} {'ours err':>8} {'former err':>10}")
    ok = True
    for p in [p.strip() for p in args.pairs.split(",") if p.strip()]:
        a, _, b = p.partition("-")
        if a not in CLASSIFIERS or b not in CLASSIFIERS:
            ap.error(f"unknown pair {p!r}")
        res = hierarchical_test(diffs=list(scores(frame, a) - scores(frame, b)), datasets=datasets, folds=FOLDS,
                                rope=ROPE, seed=1, backend="pystan", model_check=False)
        scale = res.settings["scale"]
        hyper = {"delta0": res.draws["delta0"] / scale, "sigma0": res.draws["sigma0"] / scale,
                 "nu_minus_one": res.draws["nu"] - 1}
        ours_s, ours_cpu, ours = median_seconds(
            lambda data, draws: summary.dataset_pareto_k(data, draws, args.nodes), res.stan_data, hyper, args.repeats)
        former_s, former_cpu, former = median_seconds(former_pareto_k, res.stan_data, hyper, args.repeats)
        fine, tenth = fine_log_lik(res.stan_data, hyper)
        ours_err = np.abs(summary.integrated_log_lik(res.stan_data, tenth, args.nodes)[0] - fine).max()
        former_err = np.abs(former_integrated_log_lik(res.stan_data, tenth)[0] - fine).max()
        sampling = res.diagnostics["sampling_seconds"]
        ok &= ours_s / sampling <= MAX_SHARE
        print(f"{p:<10} {sampling:10.2f} {ours_s:7.3f} {former_s:8.3f} {former_s / ours_s:8.1f} "
              f"{former_cpu / ours_cpu:12.1f} "
              f"{ours_s / sampling:13.0%} {former_s / sampling:15.0%} {np.abs(ours - former).max():8.3f} "
              f"{ours_err:8.4f} {former_err:10.4f}", flush=True)
    print(f"{'PASS' if ok else 'FAIL'}  the model check costs at most {MAX_SHARE:.0%} of the sampling on every pair")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
