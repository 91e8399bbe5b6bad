"""LDA vs CART on Friedman's functions, Corani et al. (2017), Sec. "Experiments with Friedman's functions": the
ground truth, the experiment (:mod:`mlflow_bayescompare.simulation.friedman`), its summary and a plot.

    python examples/reproduce_paper/friedman.py --reps 200 --truth-reps 500 --jobs 2  # the paper's scale
    python examples/reproduce_paper/friedman.py --reps 5 --settings 18 --truth-reps 50
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mlflow_bayescompare.simulation.friedman import SETTINGS, actual_delta, experiment, parallel_map
from mlflow_bayescompare.simulation.studies import ROPE


def summarise(runs):
    return pd.Series(
        {
            "reps": len(runs),
            "power signed-rank (p < 0.05)": (runs.signed_rank_p < 0.05).mean(),
            "power hierarchical (P(right) > 0.95)": (runs.p_right > 0.95).mean(),
            "strong evidence for lda, P(right) <= 0.95": runs.strong_right.mean(),
            "positive (not strong) evidence for lda": runs.positive_right.mean(),
            "positive evidence for rope": runs.positive_rope.mean(),
            "positive evidence for cart (left)": runs.positive_left.mean(),
            "MSE MLE": runs.mse_mle.mean(),
            "MSE shrinkage": runs.mse_shrinkage.mean(),
        }
    )


def plot(runs):
    fig = Figure(figsize=(5, 5), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(runs.mse_mle, runs.mse_shrinkage, s=12)
    top = max(runs.mse_mle.max(), runs.mse_shrinkage.max()) * 1.05
    ax.plot([0, top], [0, top], "k--", lw=1)
    ax.set(xlabel="MSE of the MLE", ylabel="MSE of the shrinkage estimates", xlim=(0, top), ylim=(0, top),
           title="Friedman's functions: estimation of the δ_i")
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="replicates of the experiment (paper: 200)")
    parser.add_argument("--settings", type=int, default=len(SETTINGS),
                        help="use N of the 54 settings, spread evenly over the table (default: all)")
    parser.add_argument("--truth-reps", type=int, default=500, help="training sets per true delta_i (paper: 500)")
    parser.add_argument("--truth", type=Path, help="reuse the friedman_truth.csv of an earlier run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("reproduce_paper_results"))
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=1, help="processes (results do not depend on it)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    pool = [SETTINGS[i] for i in np.linspace(0, len(SETTINGS) - 1, args.settings).round().astype(int)]

    start = time.perf_counter()
    if args.truth:
        saved = pd.read_csv(args.truth, index_col=0)["delta"]
        truth = {s: saved[str(s)] for s in pool}
    else:
        work = [(s, args.truth_reps, [args.seed, i]) for i, s in enumerate(pool)]
        truth = dict(zip(pool, parallel_map(actual_delta, work, args.jobs)))
    deltas = np.array(list(truth.values()))
    pd.Series({str(s): d for s, d in truth.items()}, name="delta").to_csv(args.out / "friedman_truth.csv")
    source = args.truth or f"{args.truth_reps} training sets per setting"
    print(f"== ground truth ({source}, {time.perf_counter() - start:.0f} s)")
    print(f"settings: {len(pool)}; mean delta (delta0): {deltas.mean():.4f}; right of the rope: "
          f"{np.mean(deltas > ROPE):.0%}; in the rope: {np.mean(np.abs(deltas) <= ROPE):.0%}; "
          f"left: {np.mean(deltas < -ROPE):.0%}   (paper: delta0 = 0.02, 65% right of the rope)")

    start = time.perf_counter()
    runs = experiment(pool, truth, reps=args.reps, seed=args.seed, jobs=args.jobs,
                      chains=args.chains, draws=args.draws, warmup=args.warmup)
    runs.to_csv(args.out / "friedman_runs.csv", index=False)
    plot(runs).savefig(args.out / "friedman.png", dpi=120)
    print(f"\n== tests ({args.reps} reps, q = {runs.q.iloc[0]}, {time.perf_counter() - start:.0f} s)")
    print(summarise(runs).to_string(float_format="{:.4g}".format))
    print("paper (200 reps, q = 36): power 28% signed-rank vs 27.5% hierarchical; strong evidence 11%, further "
          "positive 33%; rope 2%; left 0%; shrinkage MSE ~60% lower than MLE")


if __name__ == "__main__":
    main()
