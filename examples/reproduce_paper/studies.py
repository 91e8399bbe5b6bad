"""Run the simulation studies of Corani et al. (2017), Sec. "Experiments"; print each table, save CSVs and plots.

    python examples/reproduce_paper/studies.py --reps 500 --seed 0 --out results/   # the paper's scale
    python examples/reproduce_paper/studies.py equivalent different --reps 20       # a subset, quickly
    python examples/reproduce_paper/studies.py equivalent practically-equivalent --qs 50 --reps 200  # q = 50 only

The equivalence studies report two statistics of the hierarchical test side by side: the next-dataset P(rope)
that the paper's text defines (columns ``mean_p_rope``, ``rope_95``, ...) and the posterior mass of delta0 inside
the rope that the authors' simulation driver stored (``..._delta0_...``); see
``mlflow_bayescompare.simulation.studies.analyse``, where the studies are.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from mlflow_bayescompare.simulation import studies

STUDIES = ("mse", "equivalent", "practically-equivalent", "different")

# What the paper reports, for printing beside our numbers.
PAPER = {
    "mse": "Table MSE: MLE .00036 for every q; shrinkage .00017 / .00014 / .00012 for q = 5 / 10 / 50",
    "equivalent": "signed-rank rejects ~5% for every q; mean P(rope) grows with q, > 0.90 at q = 50; "
    "P(rope) > 0.95 in ~70% of runs at q = 50; never P(left) or P(right) > 0.95. Authors' results file "
    "(delta0 mass, n = 500, q = 50): recognised 0.73, median P(delta0 in rope) 0.976",
    "practically-equivalent": "signed-rank rejects more often as q grows, ~25% at q = 50; P(rope) > 0.95 in ~40% "
    "of runs at q = 50; never P(left) or P(right) > 0.95. Authors' results file (delta0 mass, n = 500, "
    "q = 50): recognised 0.44, signed-rank 0.245",
    "different": "signed-rank more powerful, especially just outside the rope; similar power for delta0 > 0.02",
}


EQUIVALENCE_COLUMNS = [
    "reps", "signed_rank_rejects",
    "mean_p_rope", "median_p_rope", "rope_95", "left_95", "right_95",  # next dataset (the paper's text)
    "mean_p_delta0_rope", "median_p_delta0_rope", "delta0_rope_95", "delta0_left_95", "delta0_right_95",  # delta0
    "rope_95_se", "delta0_rope_95_se",
]


def run(study, reps, seed, mixture_sd, qs=None, **fit_kwargs):
    """Per-replicate rows and the summary table of one study (``qs``: the equivalence studies' numbers of data
    sets, default the paper's 10, 20, 30, 40, 50)."""
    if study == "mse":
        runs = studies.mse_study(reps=reps, seed=seed, mixture_sd=mixture_sd, **fit_kwargs)
        return runs, studies.summarise(runs, "q")[["reps", "mse_mle", "mse_shrinkage"]]
    if study == "different":
        runs = studies.power_study(reps=reps, seed=seed, **fit_kwargs)
        columns = ["reps", "signed_rank_rejects", "right_95", "mean_p_left", "mean_p_rope", "mean_p_right"]
        return runs, studies.summarise(runs, "delta0")[columns]
    delta0 = 0.0 if study == "equivalent" else 0.005
    runs = studies.equivalence_study(delta0=delta0, reps=reps, seed=seed, **({"qs": qs} if qs else {}),
                                      **fit_kwargs)
    return runs, studies.summarise(runs, "q")[EQUIVALENCE_COLUMNS]


def plot(study, summary):
    """One figure per study, in the spirit of the paper's Figs. 2-5."""
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    x = summary.index.to_numpy()
    if study == "mse":
        ax.plot(x, summary.mse_mle, "o-", label="MLE (mean of the CV results)")
        ax.plot(x, summary.mse_shrinkage, "s-", label="shrinkage (hierarchical posterior mean)")
        ax.set(xlabel="number of data sets q", ylabel="MSE of the δ_i estimates", ylim=(0, None))
    elif study == "different":
        ax.plot(x, summary.signed_rank_rejects, "o-", label="signed-rank rejects (α = 0.05)")
        ax.plot(x, summary.right_95, "s-", label="hierarchical P(right) > 0.95")
        ax.set(xlabel="δ0", ylabel="power", ylim=(0, 1.02))
    else:
        ax.plot(x, summary.mean_p_delta0_rope, "s-", color="C0", label="mean P(δ0 in rope)")
        ax.plot(x, summary.delta0_rope_95, "^-", color="C0", label="P(δ0 in rope) > 0.95 (authors' statistic)")
        ax.plot(x, summary.mean_p_rope, "s--", color="C1", label="mean P(rope), next dataset")
        ax.plot(x, summary.rope_95, "^--", color="C1", label="P(rope) > 0.95, next dataset (paper's text)")
        ax.plot(x, summary.signed_rank_rejects, "o-", color="C2", label="signed-rank rejects (α = 0.05)")
        ax.set(xlabel="number of data sets q", ylabel="proportion of simulations", ylim=(0, 1.02))
    ax.set_title(study)
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("studies", nargs="*", metavar="STUDY", help=f"any of {', '.join(STUDIES)} (default: all)")
    parser.add_argument("--reps", type=int, default=500, help="replicates per cell (paper: 500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("reproduce_paper_results"))
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--n-instances", type=int, default=studies.N_INSTANCES,
                        help="instances per simulated data set (the paper does not say; the authors' results file "
                        "of the Cauchy studies records 500, which also matches Table MSE)")
    parser.add_argument("--mixture-sd", type=float, default=0.01, help="sd of the MSE study's mixture components")
    parser.add_argument("--qs", type=int, nargs="+", metavar="Q",
                        help="numbers of data sets of the equivalence studies (default: 10 20 30 40 50)")
    args = parser.parse_args(argv)
    if unknown := set(args.studies) - set(STUDIES):
        parser.error(f"unknown studies {sorted(unknown)}; choose from {', '.join(STUDIES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    fit_kwargs = dict(chains=args.chains, draws=args.draws, warmup=args.warmup, n_instances=args.n_instances)
    with pd.option_context("display.float_format", "{:.5g}".format, "display.width", 120):
        for study in args.studies or STUDIES:
            start = time.perf_counter()
            runs, summary = run(study, args.reps, args.seed, args.mixture_sd, args.qs, **fit_kwargs)
            runs.to_csv(args.out / f"{study}_runs.csv", index=False)
            summary.to_csv(args.out / f"{study}.csv")
            plot(study, summary).savefig(args.out / f"{study}.png", dpi=120)
            print(f"\n== {study} ({args.reps} reps per cell, n = {args.n_instances} instances per data set, "
                  f"{time.perf_counter() - start:.0f} s, {runs.divergences.gt(0).mean():.0%} of fits with divergences)")
            print(summary.to_string())
            print(f"paper: {PAPER[study]}")


if __name__ == "__main__":
    main()
