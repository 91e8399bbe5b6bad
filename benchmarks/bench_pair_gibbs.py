"""The ranking's pairs sampled by Gibbs (``sampling/pair_gibbs.py``, every pair at once) against the Stan program at
k = 2 they replaced (one NUTS fit per pair, 300 warm-up iterations, fitted again after 1,000 when R-hat > 1.01),
side by side in one run on the same pairs: seconds, R-hat, ν's ESS per second, and the gap between the two
posteriors' answers (compare's statistic: the share of draws whose next-dataset mass is largest left / in / right of
the rope; the next dataset's probabilities: those masses averaged).

    python benchmarks/bench_pair_gibbs.py [--stan-pairs 12] [--data wainer|simulated]
    python benchmarks/bench_pair_gibbs.py --thins 4,2,1 [--data wainer|simulated]
    python benchmarks/bench_pair_gibbs.py --workers [--data wainer|simulated]

``--thins``: Gibbs alone, every pair twice (seeds 1 and 2) at each thinning (every ``thin``-th of ``1000 × thin``
sweeps kept), no Stan: the seconds, the pairs with R-hat > 1.01, log ν's ESS and the gap between the two seeds'
answers (their Monte-Carlo error; what a cheaper thinning would cost in precision).

``--workers``: why the pairs run in worker processes: two halves of the pairs (1000 sweeps each, 4 chains), one half
alone in this process, both halves in two threads, both in two worker processes (``sampling/subprocesses.py``, start-up
included), side by side.

``wainer``: Wainer's 16 models × 131 datasets × 4 folds (120 pairs; lymphography dropped: qda lacks two folds);
``simulated``: 10 equal models × 100 datasets × 10 folds (45 pairs; issue 27's second target).  Gibbs fits every
pair, Stan every ``len(pairs) // stan_pairs``-th in name order.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import itertools
import logging
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mlflow_bayescompare.families.ranking.hierarchical_k.engine import PAIR_THIN, sample_program, stan_inputs
from mlflow_bayescompare.families.ranking.scores import read_scores
from mlflow_bayescompare.sampling import convergence, pair_gibbs, sampler, subprocesses
from mlflow_bayescompare.simulation import rankings
from mlflow_bayescompare.vocabulary.options import RANKING_PAIR_WARMUP, RankOptions

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "wainer_ll.csv"
ROPE = 0.01


def _scores(name: str):
    if name == "wainer":
        return read_scores(pd.read_csv(DATA), dataset="db", folds=4, drop_incomplete=True)
    frame = rankings.scores(rankings.Scenario(means=(0.0,) * 10, datasets=100), np.random.default_rng(1))
    return read_scores(frame)


def _answers(draws: dict, scale: float) -> np.ndarray:
    """compare's statistic (3) and the next dataset's probabilities (3) of a pair's draws (left, rope, right)."""
    delta0 = np.sqrt(2) * scale * draws["d"][..., 0].ravel()
    sigma0 = np.sqrt(2) * scale * draws["sigma0"].ravel()
    nu = draws["nu"].ravel()
    low, high = stats.t.cdf((-ROPE - delta0) / sigma0, nu), stats.t.cdf((ROPE - delta0) / sigma0, nu)
    masses = np.stack([low, high - low, 1 - high], axis=1)
    return np.concatenate([np.bincount(masses.argmax(axis=1), minlength=3) / len(masses), masses.mean(axis=0)])


def _mixing(draws: dict) -> tuple[float, float]:
    """The largest R-hat over d, σ0 and log ν, and log ν's bulk ESS."""
    stacked = convergence.stacked({"d": draws["d"][..., 0], "s": draws["sigma0"], "nu": np.log(draws["nu"])})
    return float(np.max(convergence.rhat(stacked))), float(convergence.ess_bulk(stacked)[-1])


def _thinning(pairs: list, thins: list[int]) -> None:
    """Each thinning twice (seeds 1 and 2): time, mixing, and the seed-to-seed gap in the answers."""
    for thin in thins:
        answers = []
        for seed in (1, 2):
            start = time.perf_counter()
            runs = pair_gibbs.sample_pairs([inputs.stan_data for _, inputs in pairs], chains=4, draws=1000,
                                           warmup=RANKING_PAIR_WARMUP, thin=thin, seed=seed)
            seconds = time.perf_counter() - start
            mixing = np.array([_mixing(run.draws) for run in runs])
            answers.append(np.array([_answers(run.draws, inputs.scale) for run, (_, inputs) in zip(runs, pairs)]))
            print(f"thin {thin}, seed {seed}: {seconds:.1f} s at load {os.getloadavg()[0]:.1f}; R-hat > 1.01 in "
                  f"{int((mixing[:, 0] > 1.01).sum())} pairs; log nu's ESS median {np.median(mixing[:, 1]):.0f}, "
                  f"smallest {mixing[:, 1].min():.0f}", flush=True)
        gap = np.abs(answers[0] - answers[1])
        statistic, following = gap[:, :3].max(axis=1), gap[:, 3:].max(axis=1)
        print(f"thin {thin}: seed 1 - seed 2 over the pairs (compare's statistic / next dataset): largest "
              f"{statistic.max():.3f} / {following.max():.3f}, 95th percentile {np.quantile(statistic, 0.95):.3f} / "
              f"{np.quantile(following, 0.95):.3f}, median {np.median(statistic):.3f} / {np.median(following):.3f}",
              flush=True)


def _workers(pairs: list) -> None:
    """Two halves of the pairs, 1000 sweeps each: one half alone, both in two threads, both in two processes."""
    datas = [inputs.stan_data for _, inputs in pairs]
    halves = [(datas[:len(datas) // 2], 4, 200, 200, 4, 1), (datas[len(datas) // 2:], 4, 200, 200, 4, 1)]
    start = time.perf_counter()
    pair_gibbs.batch_draws(*halves[0])
    alone = time.perf_counter() - start
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda half: pair_gibbs.batch_draws(*half), halves))
    threads = time.perf_counter() - start
    start = time.perf_counter()
    subprocesses.run(pair_gibbs.batch_draws, halves, [1, 1], 2)
    processes = time.perf_counter() - start
    print(f"{len(halves[0][0])} pairs x 1000 sweeps: alone {alone:.2f} s; two halves in two threads {threads:.2f} s "
          f"(x{threads / alone:.2f}); in two worker processes {processes:.2f} s (x{processes / alone:.2f}); load "
          f"{os.getloadavg()[0]:.1f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("wainer", "simulated"), default="wainer")
    parser.add_argument("--stan-pairs", type=int, default=12)
    parser.add_argument("--thins", type=lambda text: [int(t) for t in text.split(",")],
                        help="Gibbs alone at these thinnings, twice each (e.g. 4,2,1)")
    parser.add_argument("--workers", action="store_true", help="threads against worker processes")
    args = parser.parse_args()
    logging.getLogger("mlflow_bayescompare").setLevel(logging.ERROR)
    scores = _scores(args.data)
    options = RankOptions(seed=1, chains=4, draws=1000).with_seed()
    pairs = []
    for a, b in itertools.combinations(sorted(scores.models), 2):
        index = [scores.models.index(a), scores.models.index(b)]
        alone = dataclasses.replace(scores, models=[a, b], blocks=[block[:, index] for block in scores.blocks])
        pairs.append(((a, b), stan_inputs(alone, options)))
    print(f"{args.data}: {len(scores.models)} models x {len(scores.datasets)} datasets, {len(pairs)} pairs; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; Stan compile "
          f"{sampler.compile_program('hierarchical_k'):.0f} s (not timed)", flush=True)
    if args.thins:
        _thinning(pairs, args.thins)
        return 0
    if args.workers:
        _workers(pairs)
        return 0
    start = time.perf_counter()
    runs = pair_gibbs.sample_pairs([inputs.stan_data for _, inputs in pairs], chains=4, draws=1000,
                                   warmup=RANKING_PAIR_WARMUP, thin=PAIR_THIN, seed=1)
    gibbs_seconds = time.perf_counter() - start
    mixing = np.array([_mixing(run.draws) for run in runs])
    print(f"Gibbs, every pair: {gibbs_seconds:.1f} s ({gibbs_seconds / len(pairs):.2f} s a pair), R-hat > 1.01 in "
          f"{int((mixing[:, 0] > 1.01).sum())} pairs (> 1.05 in {int((mixing[:, 0] > 1.05).sum())}; largest "
          f"{mixing[:, 0].max():.3f}), log nu's ESS median {np.median(mixing[:, 1]):.0f}, smallest "
          f"{mixing[:, 1].min():.0f}", flush=True)
    step = max(1, len(pairs) // args.stan_pairs)
    rows = []
    for at in range(0, len(pairs), step)[:args.stan_pairs]:
        (a, b), inputs = pairs[at]
        opts = options.with_warmup(300)
        tick = time.perf_counter()
        run, _ = sample_program(inputs.stan_data, opts, None)
        if not _mixing(run.draws)[0] <= 1.01:
            again, _ = sample_program(inputs.stan_data, options.with_warmup(1000), None)
            run = again if _mixing(again.draws)[0] < _mixing(run.draws)[0] else run
        seconds = time.perf_counter() - tick
        stan_rhat, stan_ess = _mixing(run.draws)
        gap = np.abs(_answers(run.draws, inputs.scale) - _answers(runs[at].draws, inputs.scale))
        rows.append({"pair": f"{a} vs {b}", "stan_s": seconds, "stan_rhat": stan_rhat, "gibbs_rhat": mixing[at, 0],
                     "stan_ess_nu_per_s": stan_ess / seconds,
                     "gibbs_ess_nu_per_s": mixing[at, 1] / (gibbs_seconds / len(pairs)),
                     "gap_statistic": gap[:3].max(), "gap_next": gap[3:].max()})
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in rows[-1].items()),
              flush=True)
    table = pd.DataFrame(rows)
    print(f"Stan, {len(table)} pairs: {table['stan_s'].mean():.2f} s a pair, R-hat > 1.01 in "
          f"{int((table['stan_rhat'] > 1.01).sum())} (Gibbs on the same pairs: "
          f"{int((table['gibbs_rhat'] > 1.01).sum())})"
          f"; seconds a pair Stan / Gibbs: {table['stan_s'].mean() / (gibbs_seconds / len(pairs)):.0f}; log nu's ESS "
          f"per second Gibbs / Stan (median over the pairs): "
          f"{np.median(table['gibbs_ess_nu_per_s'] / table['stan_ess_nu_per_s']):.0f}; largest gap Stan - Gibbs "
          f"(compare's statistic / next dataset): {table['gap_statistic'].max():.3f} / {table['gap_next'].max():.3f}, "
          f"median {table['gap_statistic'].median():.3f} / {table['gap_next'].median():.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
