"""The paper's real-data comparison: five WEKA classifiers on 54 UCI data sets, 10 x 10-fold CV.

Reproduces Tables "posterior-hier-jua" and "multiple-dsets-rope" of Corani et al. (2017), Secs. "Sensitivity
analysis on real-world data sets" and "Comparing the signed-rank and the hierarchical test", for all 10 pairs.
Orientation as in the paper: for the pair "A-B", x = acc(A) - acc(B), *left* = B more accurate, *right* = A.

    python examples/reproduce_paper/real_data.py [--seed 1] [--chains 4] [--draws 1000]
"""

from __future__ import annotations

import argparse
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from mlflow_bayescompare import hierarchical_test

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "uci_classification.csv"
CLASSIFIERS = {1: "nbc", 2: "aode", 3: "hnb", 4: "j48", 5: "j48gr"}
TOLERANCE = 0.03

# (hierarchical left/rope/right, Gamma(2, 0.1) left/rope/right, signed-rank p): the paper's Tables
# "posterior-hier-jua" and "multiple-dsets-rope"
PAPER = {
    ("nbc", "hnb"): ((1.00, 0.00, 0.00), (1.00, 0.00, 0.00), 0.00),
    ("nbc", "j48"): ((0.80, 0.02, 0.18), (0.80, 0.01, 0.20), 0.46),
    ("nbc", "j48gr"): ((0.84, 0.02, 0.14), (0.84, 0.01, 0.15), 0.39),
    ("hnb", "j48"): ((0.03, 0.10, 0.87), (0.03, 0.02, 0.95), 0.07),
    ("hnb", "j48gr"): ((0.03, 0.07, 0.90), (0.03, 0.02, 0.95), 0.08),
    ("j48", "j48gr"): ((0.00, 1.00, 0.00), (0.00, 1.00, 0.00), 0.00),
}


def load_scores(path=DATA):
    """``{classifier: (54, 100) accuracies}``, rows by DatasetID, columns run-major (run, fold)."""
    df = pd.read_csv(path).sort_values(["ClassifierID", "DatasetID", "Key.Run", "Key.Fold"])
    return {
        CLASSIFIERS[cid]: group["Percent.correct"].to_numpy().reshape(group["DatasetID"].nunique(), -1)
        for cid, group in df.groupby("ClassifierID")
    }


def compare_all(scores, *, seed=1, **fit_kwargs):
    """Hierarchical (paper prior and Gamma(2, 0.1)) and signed-rank results for every pair, one row each."""
    rows = []
    for a, b in combinations(CLASSIFIERS.values(), 2):
        kw = dict(rope=0.01, folds=10, model_a=a, model_b=b, seed=seed, **fit_kwargs)
        hier = hierarchical_test(scores[a], scores[b], prior="hierarchical", **kw)
        gamma = hierarchical_test(scores[a], scores[b], prior="gamma(2,0.1)", **kw)
        paper_hier, paper_gamma, paper_p = PAPER.get((a, b), ((np.nan,) * 3, (np.nan,) * 3, np.nan))
        ours_hier = (hier.p_left, hier.p_rope, hier.p_right)
        ours_gamma = (gamma.p_left, gamma.p_rope, gamma.p_right)
        diff = np.abs(np.r_[ours_hier, ours_gamma, hier.signed_rank_p] - np.r_[paper_hier, paper_gamma, paper_p])
        rows.append(
            {
                "pair": f"{a}-{b}",
                **dict(zip(("left", "rope", "right"), ours_hier)),
                **dict(zip(("g_left", "g_rope", "g_right"), ours_gamma)),
                "signed_rank_p": hier.signed_rank_p,
                **dict(zip(("paper_left", "paper_rope", "paper_right"), paper_hier)),
                **dict(zip(("paper_g_left", "paper_g_rope", "paper_g_right"), paper_gamma)),
                "paper_p": paper_p,
                "max_abs_diff": np.nan if np.isnan(diff).all() else np.nanmax(diff),
                "divergences": hier.diagnostics["divergences"] + gamma.diagnostics["divergences"],
                "rhat_max": max(hier.diagnostics["rhat_max"], gamma.diagnostics["rhat_max"]),
            }
        )
    return pd.DataFrame(rows)


def format_table(table):
    """A fixed-width text table: ours | paper per column group, and a match mark (|diff| <= 0.03)."""

    def triple(row, prefix):
        values = [row[f"{prefix}{k}"] for k in ("left", "rope", "right")]
        return "–" if np.isnan(values[0]) else "/".join(f"{v:4.2f}" for v in values)

    lines = [
        f"{'':<11} {'hierarchical (paper prior)':^31}   {'Gamma(2, 0.1) prior on nu':^31}   {'signed-rank p':^15}",
        f"{'pair':<11} {'left/rope/right':>14}   {'paper':>14}   {'left/rope/right':>14}   {'paper':>14}"
        f"   {'ours':>6}  {'paper':>5}   match",
    ]
    for _, row in table.iterrows():
        match = "–" if np.isnan(row.max_abs_diff) else ("yes" if row.max_abs_diff <= TOLERANCE else "NO")
        paper_p = "–" if np.isnan(row.paper_p) else f"{row.paper_p:.2f}"
        lines.append(
            f"{row.pair:<11} {triple(row, ''):>14}   {triple(row, 'paper_'):>14}   {triple(row, 'g_'):>14}"
            f"   {triple(row, 'paper_g_'):>14}   {row.signed_rank_p:6.4f}  {paper_p:>5}   {match}"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    args = parser.parse_args(argv)
    table = compare_all(
        load_scores(args.data), seed=args.seed, chains=args.chains, draws=args.draws, warmup=args.warmup
    )
    print(format_table(table))
    print(f"\nmatch: every number within {TOLERANCE} of the paper's tables (– = pair not in the paper)")
    print(f"divergences (all fits): {table.divergences.sum()}, max R-hat: {table.rhat_max.max():.3f}")
    return table


if __name__ == "__main__":
    main()
