"""Calibration and power of the comparisons of evaluation runs (``mlflow_bayescompare/families/evals``).

Sections (``--sections``, default all):

* ``prior``: the pass/fail prior α chosen by exact enumeration: two equal systems, n items, each discordant with
  probability q (half each way); the largest share over q (up to 0.5, and up to 1) of "B better" decisions at 0.95
  (rope → 0), for α = 0 (the Bayesian bootstrap of the items), 1/4, 1/2, 1, 2.  No simulation: a sum over the
  binomial counts.
* ``continuous_prior``: the same question for continuous scores, by simulation: Rubin's Bayesian bootstrap
  (α = 0) against the default pseudo-observations at differences 0, ±R (α = 1), on 10 to 200 items and on 5 and 20
  clusters (ICC 0.7).
* ``null``: two equal systems under the misspecification of real evaluations (``simulation/evals.py``): clusters
  of 10 items whose deviations correlate (ICC 0.3, 0.7), three repeats with their own judge noise; the share of
  replicates called "B better" at 0.95 (Clopper-Pearson 95% interval), "either better", "B better" with the
  clusters ignored, and the 95% HDI's coverage of the true difference 0; at the default rope and a rope of 1e-9.
* ``clusters``: the same with ICC 0.7 and 5 to 50 clusters of 10.
* ``power``: B better by a latent 3/√n, no clusters: "B better" at 0.95 against the one-sided frequentist paired
  tests at 5% (McNemar's exact, Wilcoxon's signed-rank, the paired t-test) at 50, 200 and 1,000 items.
* ``suites``: several suites whose true differences spread around 0 (σ0 = 0.3 latent, about 0.08 of a pass rate;
  each suite 150 pass/fail items): the hierarchical test on :func:`suite_inputs` ("B better on the next suite")
  against the comparison of all items pooled.  Stan; about 3 s a fit.

    nice -n 10 python benchmarks/bench_evals_calibration.py                    # about 15 min on 2 busy cores
    nice -n 10 python benchmarks/bench_evals_calibration.py --sections prior,null --replicates 300
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

from mlflow_bayescompare import hierarchical_test
from mlflow_bayescompare.families.evals import compare_evaluations, suite_inputs
from mlflow_bayescompare.families.evals.kinds import Kind
from mlflow_bayescompare.families.evals.models import paired_draws
from mlflow_bayescompare.families.evals.result import three_way
from mlflow_bayescompare.shared.posterior_summary import HDI_PROB, hdi
from mlflow_bayescompare.simulation.evals import simulate, to_table

KINDS = {"pass_fail": Kind("pass_fail", True, (0, 1)), "ordinal": Kind("ordinal", True, (1, 2, 3, 4, 5)),
         "continuous": Kind("continuous", True)}
THRESHOLD = 0.95
TINY_ROPE = 1e-9


def interval(hits: int, n: int) -> str:
    low, high = stats.binomtest(hits, n).proportion_ci(0.95, method="exact")
    return f"{hits / n:6.3f} [{low:.3f}, {high:.3f}]"


# --------------------------------------------------------------------------------------------------- prior


def false_alarms(n: int, q: float, alpha: float) -> float:
    """P("B better" at 0.95, rope 0) for equal pass/fail systems: m ~ Bin(n, q) discordant items, n01 ~ Bin(m, 1/2);
    the posterior P(p01 > p10) = P(Beta(n01 + α, n10 + α) > 1/2) (α = 0: 1 when n10 = 0 < n01)."""
    total = 0.0
    for m in range(1, n + 1):
        weight = stats.binom.pmf(m, n, q)
        if weight < 1e-15:
            continue
        k = np.arange(m + 1)
        if alpha == 0:
            inside = stats.beta.sf(0.5, np.maximum(k, 1), np.maximum(m - k, 1))
            posterior = np.where(k == m, 1.0, np.where(k == 0, 0.0, inside))
        else:
            posterior = stats.beta.sf(0.5, k + alpha, m - k + alpha)
        total += weight * np.sum(stats.binom.pmf(k, m, 0.5) * (posterior >= THRESHOLD))
    return total


def section_prior(_args) -> None:
    sizes, grid = (10, 20, 50, 100, 200, 500, 1000), np.r_[0.01, 0.02, 0.05, np.arange(0.1, 1.01, 0.1)]
    for most, name in ((0.5, "q <= 0.5 (the systems disagree on at most half the items)"), (1.0, "every q")):
        print(f"\n## prior: the largest false 'B better' rate (exact), pass/fail, rope 0, over {name}")
        print("alpha  " + "".join(f"{f'n={n}':>9}" for n in sizes))
        for alpha in (0.0, 0.25, 0.5, 1.0, 2.0):
            worst = [max(false_alarms(n, q, alpha) for q in grid[grid <= most + 1e-9]) for n in sizes]
            print(f"{alpha:5.2f}  " + "".join(f"{w:9.4f}" for w in worst))


def section_continuous_prior(args) -> None:
    n = args.replicates
    print(f"\n## continuous prior: equal systems, continuous scores, {n} replicates; 'B better' at {THRESHOLD}, rope "
          f"{TINY_ROPE:g}; alpha 0 is Rubin's Bayesian bootstrap, alpha 1 adds the pseudo-observations at 0, +R, -R, 0")
    print(f"{'items':>6}{'clusters':>10}{'alpha 0':>24}{'alpha 1':>24}")
    for items, cluster_size in ((10, 1), (20, 1), (50, 1), (200, 1), (50, 10), (200, 10)):
        rng, hits = np.random.default_rng(items + cluster_size), np.zeros(2, dtype=int)
        for r in range(n):
            values, clusters = simulate(rng, items=items, kind="continuous", cluster_size=cluster_size,
                                        icc=0.7 if cluster_size > 1 else 0.0)
            labels = clusters if cluster_size > 1 else None
            for j, alpha in enumerate((0.0, 1.0)):
                draws = paired_draws(values[:, 0, 0], values[:, 1, 0], KINDS["continuous"], labels, alpha=alpha,
                                     seed=r).difference
                hits[j] += three_way(draws, TINY_ROPE, True, "A", "B", THRESHOLD)["decision"] == "b_better"
        count = "-" if cluster_size == 1 else str(items // cluster_size)
        print(f"{items:>6}{count:>10}{interval(hits[0], n):>24}{interval(hits[1], n):>24}", flush=True)


# --------------------------------------------------------------------------------------------------- null


def decisions(values: np.ndarray, clusters: np.ndarray | None, kind: str, seed: int, rope: float) -> dict:
    """One replicate's answers: B better (clusters used / ignored, default rope and tiny), either, HDI covers 0."""
    scale = KINDS[kind]
    draws = paired_draws(values[:, 0], values[:, 1], scale, clusters, seed=seed).difference
    ignored = paired_draws(values[:, 0], values[:, 1], scale, None, seed=seed).difference if clusters is not None \
        else draws
    out = {}
    for name, r in (("rope", rope), ("tiny", TINY_ROPE)):
        clustered = three_way(draws, r, True, "A", "B", THRESHOLD)["decision"]
        out[f"b_{name}"] = clustered == "b_better"
        out[f"either_{name}"] = clustered in ("a_better", "b_better")
        out[f"ignored_{name}"] = three_way(ignored, r, True, "A", "B", THRESHOLD)["decision"] == "b_better"
    low, high = hdi(draws, HDI_PROB)
    out["covers"] = bool(low <= 0 <= high)
    return out


def run_null(kind: str, items: int, replicates: int, seed: int, **settings) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(replicates):
        values, clusters = simulate(rng, items=items, kind=kind, **settings)
        clustered = settings.get("cluster_size", 1) > 1
        rows.append(decisions(values.mean(axis=2), clusters if clustered else None, kind, seed * 100_000 + r,
                              KINDS[kind].default_rope))
    return {key: int(sum(row[key] for row in rows)) for key in rows[0]}


SETTINGS = {"independent": {}, "clusters ICC 0.3": {"cluster_size": 10, "icc": 0.3},
            "clusters ICC 0.7": {"cluster_size": 10, "icc": 0.7},
            "ICC 0.3, 3 repeats, judge noise 1": {"cluster_size": 10, "icc": 0.3, "repeats": 3, "judge_noise": 1.0}}


def section_null(args) -> None:
    n = args.replicates
    print(f"\n## null: two equal systems, {n} replicates each; 'B better' at {THRESHOLD} (95% CI); default rope and "
          f"rope {TINY_ROPE:g}")
    print(f"{'kind':<11}{'items':>6}  {'setting':<34}{'B better':>24}{'either':>9}{'ignored':>9}"
          f"{'B better, rope~0':>27}{'ignored':>9}{'HDI∋0':>7}")
    for kind in KINDS:
        for items in (50, 200):
            for i, (name, settings) in enumerate(SETTINGS.items()):
                c = run_null(kind, items, n, seed=1 + 10 * i + items, **settings)
                print(f"{kind:<11}{items:>6}  {name:<34}{interval(c['b_rope'], n):>24}{c['either_rope'] / n:9.3f}"
                      f"{c['ignored_rope'] / n:9.3f}{interval(c['b_tiny'], n):>27}{c['ignored_tiny'] / n:9.3f}"
                      f"{c['covers'] / n:7.3f}", flush=True)


def section_clusters(args) -> None:
    n = args.replicates
    print(f"\n## clusters: ICC 0.7, clusters of 10 items, {n} replicates; 'B better' at {THRESHOLD}, "
          f"rope {TINY_ROPE:g}")
    print(f"{'kind':<11}{'clusters':>9}{'B better':>24}{'ignored':>9}{'HDI∋0':>7}")
    for kind in ("pass_fail", "continuous"):
        for count in (5, 10, 20, 50):
            c = run_null(kind, 10 * count, n, seed=7 + count, cluster_size=10, icc=0.7)
            print(f"{kind:<11}{count:>9}{interval(c['b_tiny'], n):>24}{c['ignored_tiny'] / n:9.3f}"
                  f"{c['covers'] / n:7.3f}", flush=True)


# --------------------------------------------------------------------------------------------------- power


def frequentist(values: np.ndarray, kind: str) -> bool:
    """The one-sided paired test of B > A at 5%: McNemar's exact, Wilcoxon's signed-rank or the paired t-test."""
    a, b = values[:, 0], values[:, 1]
    if kind == "pass_fail":
        n01, n10 = int(((a == 0) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())
        return n01 + n10 > 0 and stats.binomtest(n01, n01 + n10, 0.5, alternative="greater").pvalue < 0.05
    if kind == "ordinal":
        return bool(np.any(a != b)) and stats.wilcoxon(b, a, alternative="greater").pvalue < 0.05
    return stats.ttest_rel(b, a, alternative="greater").pvalue < 0.05


def section_power(args) -> None:
    n = max(args.replicates // 2, 100)
    print(f"\n## power: B better by a latent 3/sqrt(n), independent items, {n} replicates; one-sided at 5% / 0.95")
    print(f"{'kind':<11}{'items':>6}{'effect':>8}{'Bayes rope':>12}{'Bayes ~0':>10}{'frequentist':>13}  test")
    names = {"pass_fail": "McNemar exact", "ordinal": "Wilcoxon", "continuous": "paired t"}
    for kind in KINDS:
        for items in (50, 200, 1000):
            rng, effect, hits = np.random.default_rng(items), 3 / np.sqrt(items), np.zeros(3)
            for r in range(n):
                values = simulate(rng, items=items, kind=kind, effect=effect)[0][:, :, 0]
                draws = paired_draws(values[:, 0], values[:, 1], KINDS[kind], seed=r).difference
                hits += [three_way(draws, rope, True, "A", "B", THRESHOLD)["decision"] == "b_better"
                         for rope in (KINDS[kind].default_rope, TINY_ROPE)] + [frequentist(values, kind)]
            print(f"{kind:<11}{items:>6}{effect:8.3f}{hits[0] / n:12.3f}{hits[1] / n:10.3f}{hits[2] / n:13.3f}  "
                  f"{names[kind]}", flush=True)


# --------------------------------------------------------------------------------------------------- suites


def section_suites(args) -> None:
    n = args.suite_replicates
    print(f"\n## suites: equal systems on average, each suite's true difference ~ N(0, 0.3) (latent; about 0.08 of a "
          f"pass rate), 150 pass/fail items a suite, {n} replicates; 'B better' at {THRESHOLD}, rope 0.01")
    print(f"{'suites':>6}{'hierarchical, next suite':>28}{'items pooled':>26}")
    for count in (3, 6):
        rng, hits = np.random.default_rng(count), np.zeros(2, dtype=int)
        for r in range(n):
            frames = []
            for s in range(count):
                values, clusters = simulate(rng, items=150, kind="pass_fail", effect=rng.normal(0, 0.3))
                frames.append(to_table(values, clusters, scorer="correct").assign(suite=f"s{s}"))
            frame = pd.concat(frames, ignore_index=True)
            result = hierarchical_test(**suite_inputs(frame, "A", "B", "correct"), seed=r + 1)
            pooled = compare_evaluations(frame.assign(item=frame["suite"] + "/" + frame["item"], suite=""), "A", "B",
                                         "correct", seed=r + 1)
            hits += [result.decision == "b_better", pooled.decision == "b_better"]
        print(f"{count:>6}{interval(hits[0], n):>28}{interval(hits[1], n):>26}", flush=True)


SECTIONS = {"prior": section_prior, "continuous_prior": section_continuous_prior, "null": section_null,
            "clusters": section_clusters, "power": section_power, "suites": section_suites}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--suite-replicates", type=int, default=40)
    args = parser.parse_args()
    for name in args.sections.split(","):
        started = time.perf_counter()
        SECTIONS[name](args)
        print(f"({name}: {time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
