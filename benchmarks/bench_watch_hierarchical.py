"""How often the stand-in that simulates a ``hierarchical`` watch's operating characteristics
(:mod:`mlflow_bayescompare.sequential.standin`) decides as the real hierarchical test does (Stan,
``hierarchical_test`` with the package's defaults, as a look fits it).

Simulated paths of q datasets growing repeat by repeat: dataset i's difference δ_i = δ0 + τ z_i (z_i ~ N(0, 1)),
its 10-fold differences x = δ_i + a_i + e (a_i ~ N(0, ρσ²) shared by the dataset's folds, e ~ N(0, (1 − ρ)σ²),
ρ = 1/10, σ = 0.03: the correlated t-test's own model, the scenarios' ``assumed``); rope 0.01; δ0 = 0 (no
difference), δ0 = rope (its edge) and 2·rope (clear, where decisions are many), τ = rope/2 and 2·rope (the
datasets' spread narrower and wider than the rope).  ``--misspecified``: the scenarios' ``misspecified`` data
instead (z_i Student-t(3) scaled to variance 1, each dataset's noise sd σ times a log-normal factor of mean square
1, a repeat effect of variance ρ(1 − ρ)σ² and Student-t(3) fold noise of variance (1 − ρ)²σ²).
At each look both read the same differences and decide at the threshold (a side whose probability reaches it, else
none); the table gives the share of looks where the two decisions agree, among them those where either decides,
whether each path's first decision (the sequential answer) agrees, and the probabilities' differences.

    nice -n 10 python benchmarks/bench_watch_hierarchical.py [--paths 6] [--datasets 8] [--looks 2,4,6,8] \
        [--seed 0] [--misspecified]
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from mlflow_bayescompare.families.hierarchical.engine import hierarchical_test
from mlflow_bayescompare.sequential import rule
from mlflow_bayescompare.sequential.standin import standin_masses

FOLDS, SD, ROPE, THRESHOLD = 10, 0.03, 0.01, 0.95
RHO = 1 / FOLDS
CONDITIONS = [(delta0, spread) for delta0 in (0.0, ROPE, 2 * ROPE) for spread in (ROPE / 2, 2 * ROPE)]


def _path(rng, delta0: float, spread: float, datasets: int, repeats: int, misspecified: bool) -> np.ndarray:
    """One path's fold differences, a row per dataset (the module's docstring)."""
    if not misspecified:
        delta = delta0 + spread * rng.standard_normal((datasets, 1))
        shared = np.sqrt(RHO) * SD * rng.standard_normal((datasets, 1))
        return delta + shared + np.sqrt(1 - RHO) * SD * rng.standard_normal((datasets, repeats * FOLDS))
    delta = delta0 + spread * rng.standard_t(3, (datasets, 1)) / np.sqrt(3)
    scale = SD * np.exp(0.5 * rng.standard_normal((datasets, 1)) - 0.25)
    shared = np.sqrt(RHO) * scale * rng.standard_normal((datasets, 1))
    repeat = np.repeat(np.sqrt(RHO * (1 - RHO)) * scale * rng.standard_normal((datasets, repeats)), FOLDS, axis=1)
    folds = (1 - RHO) * scale * rng.standard_t(3, (datasets, repeats * FOLDS)) / np.sqrt(3)
    return delta + shared + repeat + folds


def _first(decisions: list[int]) -> int:
    return next((d for d in decisions if d != rule.NONE), rule.NONE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=6, help="simulated paths per condition")
    parser.add_argument("--datasets", type=int, default=8)
    parser.add_argument("--looks", default="2,4,6,8", help="repeats at which both look")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--misspecified", action="store_true", help="the scenarios' misspecified data instead")
    args = parser.parse_args()
    looks = [int(s) for s in args.looks.split(",")]
    logging.getLogger("mlflow_bayescompare").setLevel(logging.ERROR)  # the fits' data notes, hundreds of them
    rng = np.random.default_rng(args.seed)
    print(f"{args.paths} paths per condition, {args.datasets} datasets, looks at {looks} repeats, 10 folds, "
          f"sd {SD}, rope {ROPE}, threshold {THRESHOLD}, seed {args.seed}"
          + (", misspecified" if args.misspecified else ""))
    print(f"{'delta0':>6} {'spread':>6} {'looks':>5} {'agree':>6} {'decided':>7} {'agree|dec':>9} {'paths agree':>11} "
          f"{'mean|dP|':>8} {'max|dP|':>7} {'Stan dec':>8} {'stand-in dec':>12}")
    totals, fit_seconds = np.zeros(5), []
    for delta0, spread in CONDITIONS:
        same = decided = same_decided = same_paths = 0
        stan_decided = standin_decided = 0
        gaps = []
        for _ in range(args.paths):
            x = _path(rng, delta0, spread, args.datasets, max(looks), args.misspecified)
            by_stan, by_standin = [], []
            for size in looks:
                part = x[:, : size * FOLDS]
                start = time.perf_counter()
                fit = hierarchical_test(diffs=list(part), folds=FOLDS, rope=ROPE, seed=0, model_check=False)
                fit_seconds.append(time.perf_counter() - start)
                stan = np.array([fit.p_left, fit.p_rope, fit.p_right])
                standin = np.array(standin_masses(part.mean(axis=1), part.var(axis=1, ddof=1), part.shape[1], RHO,
                                                  ROPE), dtype=float)
                gaps.append(np.abs(stan - standin).max())
                by_stan.append(int(rule.decide(*stan, THRESHOLD)))
                by_standin.append(int(rule.decide(*standin, THRESHOLD)))
            pairs = list(zip(by_stan, by_standin))
            same += sum(s == t for s, t in pairs)
            decided += sum(s != rule.NONE or t != rule.NONE for s, t in pairs)
            same_decided += sum(s == t and s != rule.NONE for s, t in pairs)
            stan_decided += sum(s != rule.NONE for s, _ in pairs)
            standin_decided += sum(t != rule.NONE for _, t in pairs)
            same_paths += _first(by_stan) == _first(by_standin)
        count = args.paths * len(looks)
        totals += (count, same, decided, same_decided, same_paths)
        print(f"{delta0:>6g} {spread:>6g} {count:>5} {same / count:>6.3f} {decided:>7} "
              f"{(same_decided / decided if decided else float('nan')):>9.3f} {same_paths:>5}/{args.paths:<5} "
              f"{np.mean(gaps):>8.4f} {np.max(gaps):>7.4f} {stan_decided:>8} {standin_decided:>12}")
    count, same, decided, same_decided, same_paths = totals
    print(f"all: {same:.0f}/{count:.0f} looks decide alike ({same / count:.3f}); of the {decided:.0f} where either "
          f"decides, {same_decided:.0f} alike; {same_paths:.0f}/{len(CONDITIONS) * args.paths} paths' first "
          f"decisions alike; a Stan fit took {np.median(fit_seconds):.2f} s (median of {len(fit_seconds)})")


if __name__ == "__main__":
    main()
