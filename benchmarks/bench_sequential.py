"""Stop when decided (issue 41): the naive "stop at 0.95" rule under optional stopping against the registered
design with the threshold its simulation offers, measured side by side, and the expected saving against a fixed
size of the same power; and the speed of a look and of a design's simulation.

Three designs, each in every scenario of ``mlflow_bayescompare.sequential.scenarios`` (the correlated t-test's own
model, a repeat effect alone, a dataset + repeat effect with Student-t(3) noise; independent and clustered items):

* ``correlated-t``: 10-fold CV, one look per repeat from 2 to 30 repeats, fold differences of sd 0.01, rope 0.01;
* ``eval-binary``: pass/fail items, one look per 100 items from 100 to 2000, 20% of items disagreeing, rope 0.03;
* ``eval-continuous``: scores in [0, 1], one look per 100 items from 100 to 2000, item differences of sd 0.25,
  rope 0.02;
* ``hierarchical``: 8 datasets' 10-fold CV, one look per repeat from 2 to 10 repeats, fold differences of sd 0.03,
  the datasets' mean differences spread with sd 0.01, rope 0.01, simulated by its stand-in
  (``sequential/standin.py``; a real look fits the Stan test, so no look is timed here: a fit of 8 datasets takes
  1-2 s, ``bench_watch_hierarchical.py``); no confidence sequence (it covers one dataset).

For each: (1) the design at threshold 0.95 (the naive rule: looking at every repeat or batch and stopping once a
probability reaches 0.95) simulated from seed 1, which offers a threshold; (2) the design registered with that
threshold and nominal error 0.05, simulated afresh from seed 2 (the offer is not judged on the replicates that
chose it); (3) a single look at the budget at 0.95, from seed 3.  False-decision rates are the worst over the truths
of a scenario (no difference: "better"; the rope's edge: "equivalent" or the wrong model).  Then the time of one
look at the budget (every scheduled look evaluated) and of one design's simulation at its default 4000 replicates
(1000 for ``hierarchical``, as a watch simulates it),
CPU seconds beside wall seconds (the machine is shared).

    nice -n 10 python benchmarks/bench_sequential.py [--replicates 10000]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time

import numpy as np

from mlflow_bayescompare.sequential import Design, look, operating_characteristics

DESIGNS = {
    "correlated-t": Design(test="correlated-t", folds=10, min_size=2, max_size=30, planning_sd=0.01, rope=0.01,
                           cs_check=True),
    "eval-binary": Design(test="eval-binary", min_size=100, max_size=2000, look_every=100, planning_sd=0.2**0.5,
                          rope=0.03, cs_check=True),
    "eval-continuous": Design(test="eval-continuous", min_size=100, max_size=2000, look_every=100, planning_sd=0.25,
                              rope=0.02, cs_check=True),
    "hierarchical": Design(test="hierarchical", folds=10, min_size=2, max_size=10, planning_sd=0.03,
                           planning_spread=0.01, dataset_count=8, rope=0.01),
}


def _worst(oc) -> dict[str, float]:
    """The largest false-decision rate of each scenario, over its truths."""
    return {s: max(c.false_decision for c in oc.cells if c.scenario == s) for s in oc.scenarios}


def _rows(name: str, design: Design, replicates: int) -> list[str]:
    naive = operating_characteristics(design, replicates=replicates, seed=1)
    offered = naive.offered_threshold
    registered = operating_characteristics(dataclasses.replace(design, threshold=offered, nominal_error=0.05),
                                           replicates=replicates, seed=2)
    single = operating_characteristics(dataclasses.replace(design, min_size=design.max_size, look_every=None),
                                       replicates=replicates, seed=3)
    before, after, fixed_look = _worst(naive), _worst(registered), _worst(single)
    rows = []
    for scenario in naive.scenarios:
        cells = {c.truth: c for c in registered.cells if c.scenario == scenario}
        sizes = {truth: c.mean_size for truth, c in cells.items()}
        coverage = "—" if design.test == "hierarchical" else f"{min(c.cs_coverage for c in cells.values()):.3f}"
        cs_alone = "—" if design.test == "hierarchical" else f"{cells['clear'].cs_answers['a_better']:.3f}"
        alone = naive.offered_by_scenario[scenario]
        fixed = next(f for f in registered.fixed_size if f.scenario == scenario)
        n_fixed = "> budget" if fixed.fixed_size is None else str(fixed.fixed_size)
        saving = "—" if fixed.fixed_size is None else (f"{fixed.fixed_size - fixed.mean_size_clear:+.1f} / "
                                                      f"{fixed.fixed_size - fixed.mean_size_none:+.1f}")
        rows.append(f"| {name} | {scenario} | {before[scenario]:.3f} | {fixed_look[scenario]:.3f} | {offered:.4f} "
                    f"({'—' if alone is None else f'{alone:.4f}'}) | {after[scenario]:.3f} | "
                    f"{sizes['no difference']:.1f} / {sizes['rope edge']:.1f} / {sizes['clear']:.1f} | "
                    f"{fixed.power:.3f} | {n_fixed} | {saving} | {coverage} | {cs_alone} |")
    return rows


def _look_data(design: Design, rng: np.random.Generator) -> dict:
    """Data to the budget, a small true difference that decides late or never."""
    if design.test == "correlated-t":
        return {"diffs": 0.005 + rng.normal(0, design.planning_sd, design.max_size * design.folds)}
    a = rng.binomial(1, 0.7, design.max_size)
    if design.test == "eval-binary":
        return {"scores_a": a, "scores_b": np.where(rng.random(design.max_size) < 0.8, a, 1 - a)}
    return {"scores_a": np.clip(0.6 + rng.normal(0, 0.2, design.max_size), 0, 1),
            "scores_b": np.clip(0.6 + rng.normal(0, 0.2, design.max_size), 0, 1)}


def _speed(name: str, design: Design) -> str:
    no_stop = dataclasses.replace(design, threshold=0.999999)  # every look is evaluated
    times, timed = [], design.test != "hierarchical"  # its look is a Stan fit (the module's docstring)
    data = _look_data(no_stop, np.random.default_rng(0)) if timed else {}
    for _ in range(21 if timed else 0):
        started = time.perf_counter()
        look(no_stop, **data)
        times.append(time.perf_counter() - started)
    wall, cpu = time.perf_counter(), time.process_time()
    operating_characteristics(design, replicates=1000 if design.test == "hierarchical" else 4000)
    shown = f"{1000 * statistics.median(times):.1f}" if times else "— (a Stan fit)"
    return (f"| {name} | {len(design.looks)} | {shown} | "
            f"{time.process_time() - cpu:.1f} | {time.perf_counter() - wall:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=10_000)
    args = parser.parse_args()
    print(f"replicates per scenario and truth: {args.replicates}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores\n")
    print("| test | scenario | naive 0.95, every look | one look at the budget, 0.95 | threshold offered (this "
          "scenario alone) | registered, fresh seed | E[size] none / edge / clear | P(A better), clear | fixed size, "
          "same power | saving clear / none | CS coverage | CS alone: A better, clear |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, design in DESIGNS.items():
        print("\n".join(_rows(name, design, args.replicates)), flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f}\n")
    print("| test | looks | one look at the budget, ms (median of 21) | simulation CPU s | simulation wall s |")
    print("|---|---|---|---|---|")
    for name, design in DESIGNS.items():
        print(_speed(name, design), flush=True)


if __name__ == "__main__":
    main()
