"""The hierarchical model of k models (``stan/hierarchical_k.stan``, the default of ``rank``) measured, issue 27:

* ``interaction``: the issue's scenario (5 models equal on average, dataset × model interaction sd 0.01, 30 datasets
  × 10 folds, fold effect sd 0.02, noise sd 0.015), and the same without interaction: the share of pairs called
  credible (all false: the models are equal), of replicates with at least one, and the largest P(best), for the
  hierarchical model and for BBT (``--model bbt``) on the same data, side by side;
* ``ordered``: five models 0.015 apart (interaction 0.01): the true order recovered, the true best leading;
* ``agreement``: two models' data fitted by the hierarchical model of k models and by the two-model hierarchical test
  (``compare``): the differences of their P(better), P(rope), P(worse);
* ``sbc``: simulation-based calibration of the program (:mod:`mlflow_bayescompare.simulation.sbc`); ``--missing``
  removes each (model, dataset) cell with that chance (a ragged grid);
* ``speed``: Wainer's 16 models × 131 datasets × 4 folds (``tests/data/wainer_ll.csv``, lymphography dropped: qda
  lacks two of its folds), 10 models × 100 datasets × 10 folds, and the growth in k and in datasets; the program
  compiled first (not timed), 4 chains × (1000 + 1000), end to end (reading, fit, summaries); wall time, the 1-min
  load average, and the CPU seconds of the process tree (``proc_cpu.cpu_now``), whose half is the wall time on 2
  idle cores (the 4 chains keep both busy).

    python benchmarks/bench_kmodel.py interaction [--replicates 50]
    python benchmarks/bench_kmodel.py ordered|agreement|sbc|speed [...]
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from proc_cpu import cpu_now

from mlflow_bayescompare.families.hierarchical.engine import hierarchical_test
from mlflow_bayescompare.families.ranking.engine import Scores, rank_models
from mlflow_bayescompare.families.ranking.hierarchical_k.engine import rank_hierarchical
from mlflow_bayescompare.sampling import sampler
from mlflow_bayescompare.simulation import rankings, sbc
from mlflow_bayescompare.vocabulary.options import RankOptions

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "wainer_ll.csv"
OUT = Path(__file__).resolve().parent / "calibration"
FIT = dict(chains=4, draws=1000)


def interaction(args) -> None:
    scenarios = {"interaction 0.01": rankings.INTERACTION, "no interaction": rankings.Scenario(interaction=0.0)}
    for label, scenario in scenarios.items():
        stats = {m: {"credible": 0, "pairs": 0, "any": 0, "p_best": []} for m in ("hierarchical", "bbt")}
        for r in range(args.replicates):
            frame = rankings.scores(scenario, np.random.default_rng([args.seed, r]))
            for model, s in stats.items():
                res = rank_models(frame, model=model, seed=r + 1, **FIT)
                found = len(res.credible_pairs())
                s["credible"] += found
                s["pairs"] += len(res.pairs)
                s["any"] += found > 0
                s["p_best"].append(float(res.ranking["p_best"].max()))
            print(f"  {label}, replicate {r + 1}: credible pairs so far " +
                  ", ".join(f"{m} {s['credible']}/{s['pairs']}" for m, s in stats.items()), flush=True)
        for model, s in stats.items():
            print(f"{label:17s} {model:12s} {args.replicates} replicates: {s['credible']}/{s['pairs']} pairs "
                  f"credible ({s['credible'] / s['pairs']:.1%}), replicates with one or more "
                  f"{s['any'] / args.replicates:.0%}, P(best) max {max(s['p_best']):.2f}, median "
                  f"{np.median(s['p_best']):.2f}", flush=True)


def ordered(args) -> None:
    scenario = rankings.Scenario(means=(0.03, 0.015, 0.0, -0.015, -0.03))
    truth = rankings.model_names(5)
    exact = leading = extremes = 0
    for r in range(args.replicates):
        res = rank_models(rankings.scores(scenario, np.random.default_rng([args.seed, r])), seed=r + 1, **FIT)
        exact += res.order == truth
        leading += res.best == truth[0]
        extremes += frozenset(("m1", "m5")) in res.credible_pairs()
    print(f"ordered (0.015 apart, interaction 0.01), {args.replicates} replicates: order recovered {exact}, true best "
          f"leading {leading}, m1 > m5 credible {extremes}", flush=True)


def agreement(args) -> None:
    scenario = rankings.Scenario(means=(0.008, 0.0), interaction=0.008, datasets=15)
    gaps = []
    for r in range(args.replicates):
        frame = rankings.scores(scenario, np.random.default_rng([args.seed, r]))
        blocks = [p.pivot(index="fold", columns="model", values="score")[["m1", "m2"]].to_numpy()
                  for _, p in frame.groupby("dataset", sort=False)]
        scores = Scores(["m1", "m2"], list(pd.unique(frame["dataset"])), blocks, None, (10,) * len(blocks))
        ours = rank_hierarchical(scores, RankOptions(seed=r + 1, chains=4, draws=2000)).pairs.iloc[0]
        sign = 1 if ours["better"] == "m1" else -1
        test = hierarchical_test(frame, model_a="m1", model_b="m2", folds=10, seed=r + 1, draws=2000,
                                 model_check=False)
        a_better = ours["p_better"] if sign > 0 else ours["p_worse"]
        gaps.append((a_better - test.p_a_better, ours["p_rope"] - test.p_rope))
        print(f"replicate {r}: ours P(m1 better) {a_better:.3f} rope {ours['p_rope']:.3f}; the two-model test "
              f"{test.p_a_better:.3f} / {test.p_rope:.3f}", flush=True)
    gaps = np.abs(np.array(gaps))
    print(f"agreement, {args.replicates} replicates of 2 models x 15 datasets x 10 folds (8000 draws each): "
          f"|difference| of P(better) mean {gaps[:, 0].mean():.3f} max {gaps[:, 0].max():.3f}; of P(rope) mean "
          f"{gaps[:, 1].mean():.3f} max {gaps[:, 1].max():.3f}", flush=True)


def calibration(args) -> None:
    config = sbc.Config("hierarchical_k", "integrated", q=args.q, models=args.models, missing=args.missing)
    result = sbc.calibrate(config, args.replicates, seed=args.seed, chains=2, warmup=300, draws=300, kept=49)
    print(sbc.report(result, 10))
    OUT.mkdir(exist_ok=True)
    result.table(10).to_csv(OUT / f"sbc_{config.label}.csv", index=False)
    sbc.plot(result, 10, OUT / f"sbc_{config.label}.png")


def _timed(frame: pd.DataFrame, label: str, **options) -> float:
    load, cpu, start = os.getloadavg()[0], cpu_now(), time.perf_counter()
    res = rank_models(frame, seed=1, **FIT, **options)
    seconds, cpu = time.perf_counter() - start, cpu_now() - cpu
    d = res.diagnostics
    print(f"{label}: {seconds:.1f} s wall at load {load:.1f}, {cpu:.1f} CPU s (/2 = {cpu / 2:.1f} s on 2 idle "
          f"cores; sampling {d['sampling_seconds']:.1f} s), R-hat {d['rhat_max']:.3f}, min ESS "
          f"{d['ess_bulk_min']:.0f}, {d['divergences']} divergences, {d['leapfrog_per_draw']:.1f} leapfrog steps per "
          f"draw; best {res.best}", flush=True)
    return seconds


def speed(args) -> None:
    print(f"compile {sampler.compile_program('hierarchical_k'):.0f} s (not timed); {os.cpu_count()} CPUs; load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    ll = pd.read_csv(DATA)
    _timed(ll, "Wainer 16 models x 131 datasets x 4 folds (target 30 s)", dataset="db", folds=4,
           drop_incomplete=True)
    _timed(rankings.scores(rankings.Scenario(means=(0.0,) * 10, datasets=100), np.random.default_rng(1)),
           "10 models x 100 datasets x 10 folds (target 60 s)")
    for k in (5, 10, 20):
        _timed(rankings.scores(rankings.Scenario(means=(0.0,) * k, datasets=50), np.random.default_rng(2)),
               f"growth: {k} models x 50 datasets x 10 folds")
    for q in (25, 100, 200):
        _timed(rankings.scores(rankings.Scenario(means=(0.0,) * 10, datasets=q), np.random.default_rng(3)),
               f"growth: 10 models x {q} datasets x 10 folds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=("interaction", "ordered", "agreement", "sbc", "speed"))
    parser.add_argument("--replicates", type=int, default=50)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--q", type=int, default=10)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--missing", type=float, default=0.0,
                        help="sbc: the chance that a model is missing on a dataset (a ragged grid)")
    args = parser.parse_args()
    logging.getLogger("mlflow_bayescompare").setLevel(logging.ERROR)
    {"interaction": interaction, "ordered": ordered, "agreement": agreement, "sbc": calibration,
     "speed": speed}[args.study](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
