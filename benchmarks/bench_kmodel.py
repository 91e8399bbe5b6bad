"""The hierarchical model of k models (``stan/hierarchical_k.stan``, the default of ``rank``) measured, issue 27:

* ``interaction``: the issue's scenario (5 models equal on average, dataset × model interaction sd 0.01, 30 datasets
  × 10 folds, fold effect sd 0.02, noise sd 0.015), and the same without interaction: the share of pairs called
  credible (all false: the models are equal), of replicates with at least one, and the largest P(best), for the
  hierarchical model and for BBT (``--model bbt``) on the same data, side by side;
* ``ordered``: five models 0.015 apart (interaction 0.01): the true order recovered, the true best leading;
* ``agreement``: two models' data fitted by the hierarchical model of k models and by the two-model hierarchical test
  (``compare``): the differences of their P(better), P(rope), P(worse);
* ``sbc``: simulation-based calibration of the program (:mod:`mlflow_bayescompare.simulation.sbc`); ``--missing``
  removes each (model, dataset) cell with that chance (a ragged grid); ``--seeds 28,29`` runs each seed's own
  replicates, then pools them (the files hold the pooled run);
* ``speed``: Wainer's 16 models × 131 datasets × 4 folds (``tests/data/wainer_ll.csv``, lymphography dropped: qda
  lacks two of its folds), 10 models × 100 datasets × 10 folds, and the growth in k and in datasets; the program
  compiled first (not timed), 4 chains × (1000 + 1000), end to end (reading, fit, summaries); wall time, the 1-min
  load average, and the CPU seconds of the process tree (``proc_cpu.cpu_now``), whose half is the wall time on 2
  idle cores (the 4 chains keep both busy); ``--vs-unscaled``: issue 27's two targets only, each fitted by
  ``benchmarks/hierarchical_k_unscaled.stan`` (the program before its sampler's coordinates were scaled: the same
  model) and by the current program in turn, ``--rounds`` times, under the same load.

    python benchmarks/bench_kmodel.py interaction [--replicates 50]
    python benchmarks/bench_kmodel.py ordered|agreement|sbc|speed [...]
    nice -n 10 python benchmarks/bench_kmodel.py speed --vs-unscaled [--rounds 1]
    nice -n 10 python benchmarks/bench_kmodel.py same-posterior

* ``shorter``: Wainer's 16 × 131 × 4 end to end at the default (4 chains × (1000 + 1000), the pairs 300 sweeps of
  warm-up) and at ``--draws 500 --warmup 500`` (the joint fit 4 × (500 + 500), the pairs 500 + 500 × 4 sweeps),
  seeds 1 and 2 each: the time, and the seed-to-seed gap in P(best) and in the pairs' numbers (their Monte-Carlo
  error): what a shorter run costs in precision.

    python benchmarks/bench_kmodel.py shorter

* ``same-posterior``: the current program against the unscaled one (the same model) on Wainer's data and a small
  ragged grid, different seeds: each posterior mean (δ, σ0, ν) |difference| / its Monte-Carlo se (bench_pairs.py's
  ``reference``), the sd ratios, and the pairs' P(better).
"""

from __future__ import annotations

import argparse
import contextlib
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
from mlflow_bayescompare.sampling import programs, sampler
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
    results = []
    for seed in args.seeds or [args.seed]:
        results.append(sbc.calibrate(config, args.replicates, seed=seed, chains=2, warmup=args.warmup, draws=300,
                                     kept=49, retry=args.retry))
        print(f"seed {seed}: " + sbc.report(results[-1], 10), flush=True)
    result = sbc.pooled(results)
    if len(results) > 1:
        print(f"seeds {', '.join(map(str, args.seeds))} pooled: " + sbc.report(result, 10), flush=True)
    OUT.mkdir(exist_ok=True)
    result.table(10).to_csv(OUT / f"sbc_{config.label}.csv", index=False)
    sbc.plot(result, 10, OUT / f"sbc_{config.label}.png")


def _timed(frame: pd.DataFrame, label: str, **options) -> float:
    """CPU seconds of one ranking of ``frame``, end to end (printed with the wall time, the load, the joint fit's
    diagnostics and the pairs' own fits')."""
    load, cpu, start = os.getloadavg()[0], cpu_now(), time.perf_counter()
    res = rank_models(frame, seed=1, **FIT, **options)
    seconds, cpu = time.perf_counter() - start, cpu_now() - cpu
    d = res.diagnostics
    print(f"{label}: {seconds:.1f} s wall at load {load:.1f}, {cpu:.1f} CPU s (/2 = {cpu / 2:.1f} s on 2 idle "
          f"cores; sampling {d['sampling_seconds']:.1f} s), R-hat {d['rhat_max']:.3f}, min ESS "
          f"{d['ess_bulk_min']:.0f}, {d['divergences']} divergences, {d['leapfrog_per_draw']:.1f} leapfrog steps per "
          f"draw; best {res.best}", flush=True)
    pairs = d.get("pair_tests")
    if pairs:
        print(f"  of which the pairs, each fitted alone: {pairs['fits']} fits, sampling "
              f"{pairs['sampling_seconds']:.1f} s, worst R-hat {pairs['rhat_max']:.3f}, min ESS "
              f"{pairs['ess_bulk_min']:.0f}, {pairs['divergences']} divergences", flush=True)
    return cpu


@contextlib.contextmanager
def _unscaled():
    """``rank_models`` fitting ``benchmarks/hierarchical_k_unscaled.stan`` in place of the current program."""
    current = programs.PROGRAMS["hierarchical_k"]
    programs.PROGRAMS["hierarchical_k"] = Path(__file__).resolve().parent / "hierarchical_k_unscaled.stan"
    try:
        yield
    finally:
        programs.PROGRAMS["hierarchical_k"] = current


def _targets() -> dict:
    """Issue 27's two speed targets: their labels and ``_timed``'s arguments."""
    return {"Wainer 16 models x 131 datasets x 4 folds (target 30 s)":
            (pd.read_csv(DATA), dict(dataset="db", folds=4, drop_incomplete=True)),
            "10 models x 100 datasets x 10 folds (target 60 s)":
            (rankings.scores(rankings.Scenario(means=(0.0,) * 10, datasets=100), np.random.default_rng(1)), {})}


def _side_by_side(rounds: int) -> None:
    """The unscaled program and the current one in turn on each target, ``rounds`` times: CPU seconds and ratio."""
    with _unscaled():
        print(f"compile the unscaled program {sampler.compile_program('hierarchical_k'):.0f} s (not timed)", flush=True)
    for label, (frame, options) in _targets().items():
        for r in range(rounds):
            with _unscaled():
                before = _timed(frame, f"{label}, unscaled, round {r + 1}", **options)
            after = _timed(frame, f"{label}, current, round {r + 1}", **options)
            print(f"  CPU current / unscaled: {after / before:.2f}", flush=True)


def same_posterior(args) -> None:
    from bench_pairs import _mc_error

    cases = {**dict(list(_targets().items())[:1]),
             "ragged 5 models x 12 datasets x 10 folds, 30% of the cells missing":
             (rankings.scores(rankings.Scenario(interaction=0.02, missing=0.3, datasets=12), np.random.default_rng(5)),
              dict(folds=10))}
    for label, (frame, options) in cases.items():
        with _unscaled():
            before = rank_models(frame, seed=1, **FIT, **options)
        after = rank_models(frame, seed=2, **FIT, **options)
        gaps, ratios = {}, []
        for name in ("delta", "sigma0", "nu"):
            ours, theirs = (np.asarray(r.draws[name]).reshape(FIT["chains"], FIT["draws"], -1) for r in (after, before))
            for j in range(ours.shape[-1]):
                x, y = ours[..., j].ravel(), theirs[..., j].ravel()
                gaps[f"{name}_{j + 1}"] = abs(x.mean() - y.mean()) / np.hypot(_mc_error(x, 4), _mc_error(y, 4))
                ratios.append(x.std() / y.std())
        worst = max(gaps, key=gaps.get)
        p_before = {(b, w): p for b, w, p in before.pairs[["better", "worse", "p_better"]].itertuples(index=False)}
        moved = [abs(p - p_before[(b, w)]) for b, w, p in after.pairs[["better", "worse", "p_better"]]
                 .itertuples(index=False) if (b, w) in p_before]
        print(f"{label}: {len(gaps)} posterior means, |difference| / its Monte-Carlo se: median "
              f"{np.median(list(gaps.values())):.2f}, largest {gaps[worst]:.2f} ({worst}), over 3: "
              f"{sum(g > 3 for g in gaps.values())}; sd ratios {min(ratios):.2f}-{max(ratios):.2f}; P(better) of "
              f"{len(moved)} of {len(after.pairs)} pairs in the same order: |difference| median "
              f"{np.median(moved):.3f}, largest {max(moved):.3f}; divergences {before.diagnostics['divergences']} / "
              f"{after.diagnostics['divergences']}", flush=True)


def speed(args) -> None:
    print(f"compile {sampler.compile_program('hierarchical_k'):.0f} s (not timed); {os.cpu_count()} CPUs; load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    if args.vs_unscaled:
        _side_by_side(args.rounds)
        return
    for label, (frame, options) in _targets().items():
        _timed(frame, label, **options)
    for k in (5, 10, 20):
        _timed(rankings.scores(rankings.Scenario(means=(0.0,) * k, datasets=50), np.random.default_rng(2)),
               f"growth: {k} models x 50 datasets x 10 folds")
    for q in (25, 100, 200):
        _timed(rankings.scores(rankings.Scenario(means=(0.0,) * 10, datasets=q), np.random.default_rng(3)),
               f"growth: 10 models x {q} datasets x 10 folds")


def shorter(args) -> None:
    print(f"compile {sampler.compile_program('hierarchical_k'):.0f} s (not timed); {os.cpu_count()} CPUs", flush=True)
    frame, options = _targets()["Wainer 16 models x 131 datasets x 4 folds (target 30 s)"]
    columns = ["p_better", "p_rope", "p_worse", "next_better", "next_rope", "next_worse"]
    for label, fit in (("default", {}), ("--draws 500 --warmup 500", dict(draws=500, warmup=500))):
        results = []
        for seed in (1, 2):
            load, cpu, start = os.getloadavg()[0], cpu_now(), time.perf_counter()
            results.append(rank_models(frame, seed=seed, **{**FIT, **fit}, **options))
            print(f"{label}, seed {seed}: {time.perf_counter() - start:.1f} s wall at load {load:.1f}, "
                  f"{cpu_now() - cpu:.1f} CPU s", flush=True)
        best = [res.ranking.set_index("model")["p_best"] for res in results]
        pairs = [{frozenset((row["better"], row["worse"])): row for _, row in res.pairs.iterrows()} for res in results]
        gaps = []
        for key, row in pairs[0].items():
            other = pairs[1][key]
            values = other[columns].to_numpy(float)
            if other["better"] != row["better"]:  # the other seed oriented the pair the other way
                values = values[[2, 1, 0, 5, 4, 3]]
            gaps.append(np.abs(row[columns].to_numpy(float) - values))
        gaps, moved = np.array(gaps), np.max(np.abs(best[0] - best[1].reindex(best[0].index)))
        print(f"{label}: seed 1 - seed 2: P(best) largest {moved:.3f}; "
              f"pairs (compare's statistic / next dataset) largest {gaps[:, :3].max():.3f} / {gaps[:, 3:].max():.3f}, "
              f"95th percentile {np.quantile(gaps[:, :3].max(axis=1), 0.95):.3f} / "
              f"{np.quantile(gaps[:, 3:].max(axis=1), 0.95):.3f}; pairs named in the warnings: "
              f"{sum(w.startswith('the pair ') for w in results[0].diagnostics.get('warnings', []))} / "
              f"{sum(w.startswith('the pair ') for w in results[1].diagnostics.get('warnings', []))}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=("interaction", "ordered", "agreement", "sbc", "speed", "same-posterior",
                                          "shorter"))
    parser.add_argument("--replicates", type=int, default=50)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--seeds", type=lambda text: [int(t) for t in text.split(",")],
                        help="sbc: seeds, comma-separated (default: --seed), each with its own replicates, then pooled")
    parser.add_argument("--q", type=int, default=10)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=300, help="sbc: warm-up iterations per chain")
    parser.add_argument("--retry", action="store_true",
                        help="sbc: each fit as rank samples it (again at adapt_delta 0.95 after a divergent fit)")
    parser.add_argument("--missing", type=float, default=0.0,
                        help="sbc: the chance that a model is missing on a dataset (a ragged grid)")
    parser.add_argument("--vs-unscaled", action="store_true",
                        help="speed: issue 27's targets by the unscaled program and the current one, in turn")
    parser.add_argument("--rounds", type=int, default=1, help="speed --vs-unscaled: fits of each program per target")
    args = parser.parse_args()
    logging.getLogger("mlflow_bayescompare").setLevel(logging.ERROR)
    {"interaction": interaction, "ordered": ordered, "agreement": agreement, "sbc": calibration,
     "speed": speed, "same-posterior": same_posterior, "shorter": shorter}[args.study](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
