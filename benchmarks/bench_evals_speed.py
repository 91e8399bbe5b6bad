"""Speed and memory of the comparisons of evaluation runs (``mlflow_bayescompare/families/evals``), side by side
in one run.  Each case runs in a fresh process, so that its peak resident memory (``resource.getrusage``) is its
own; times are the median of ``--repeat`` runs after one warm-up, from the tidy table to the result.

Cases: 1,000 items × 5 scorers (pass/fail, 1-5 rating, two continuous scores, latency) of 2 systems, without and
with clusters of 10; 5 systems ranked on them; 100,000 items × 1 and × 5 scorers.  The reference beside the first:
the bare Bayesian bootstrap of the five scorers' paired differences, numpy's Dirichlet weights of all items at once
(``Generator.dirichlet``) times the differences, without the table's pairing, the pseudo-observations, the chunks
or the summaries; at 100,000 items its weight matrix alone would take draws × items × 8 bytes (printed, not run).

    nice -n 10 python benchmarks/bench_evals_speed.py
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from mlflow_bayescompare.families.evals import compare_evaluations, rank_evaluations
from mlflow_bayescompare.families.evals.models import DRAWS
from mlflow_bayescompare.simulation.evals import simulate, to_table

SCORERS = {"correct": "pass_fail", "rating": "ordinal", "relevance": "continuous", "rouge": "continuous",
           "latency": "latency"}
#: the case that only imports the package: the peak memory every case starts from
IMPORTS = "(imports only)"
CASES = {"1k x 5": (1000, 5, 1, 2), "1k x 5, clusters of 10": (1000, 5, 10, 2),
         "1k x 5, 5 systems ranked": (1000, 5, 1, 5), "100k x 1": (100_000, 1, 1, 2), "100k x 5": (100_000, 5, 1, 2)}


def table(items: int, scorers: int, cluster_size: int, systems: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    frames = []
    for name, kind in list(SCORERS.items())[:scorers]:
        values, clusters = simulate(rng, items=items, kind=kind, systems=systems, effect=0.05,
                                    cluster_size=cluster_size, icc=0.3 if cluster_size > 1 else 0.0)
        frames.append(to_table(values, clusters, scorer=name))
    return pd.concat(frames, ignore_index=True)


def timed(function, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeat`` calls after a warm-up."""
    function()
    wall, cpu = [], []
    for _ in range(repeat):
        started, used = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
    return statistics.median(wall), statistics.median(cpu)


def run_case(name: str, repeat: int) -> dict:
    if name == IMPORTS:
        return {"case": name, "rows": 0, "table_mb": 0.0, "seconds": (0.0, 0.0),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    items, scorers, cluster_size, systems = CASES[name]
    frame = table(items, scorers, cluster_size, systems)
    if systems > 2:
        work = lambda: rank_evaluations(frame, seed=1)
    else:
        work = lambda: compare_evaluations(frame, "A", "B", seed=1)
    out = {"case": name, "rows": len(frame), "table_mb": frame.memory_usage(deep=True).sum() / 2**20,
           "seconds": timed(work, repeat if items <= 1000 else 1)}
    if name == "1k x 5":
        wide = frame.pivot_table(index="item", columns=["scorer", "system"], values="value", aggfunc="first")
        diffs = np.column_stack([wide[s]["B"].astype(float) - wide[s]["A"].astype(float) for s in SCORERS])
        rng = np.random.default_rng(2)
        out["reference_seconds"] = timed(lambda: rng.dirichlet(np.ones(len(diffs)), size=DRAWS) @ diffs, repeat)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.repeat)))
        return
    print(f"{DRAWS} draws; median of {args.repeat} runs (1 at 100k items), each case in its own process; CPU seconds "
          "are this process's (steadier than wall time when the cores are shared)")
    print(f"{'case':<28}{'rows':>10}{'table MB':>10}{'wall s':>9}{'CPU s':>8}{'peak RSS MB':>13}")
    for name in [IMPORTS, *CASES]:
        done = subprocess.run([sys.executable, __file__, "--case", name, "--repeat", str(args.repeat)],
                              capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        (wall, cpu) = row["seconds"]
        print(f"{name:<28}{row['rows']:>10}{row['table_mb']:>10.1f}{wall:>9.3f}{cpu:>8.3f}{row['peak_rss_mb']:>13.0f}",
              flush=True)
        if "reference_seconds" in row:
            (wall, reference) = row["reference_seconds"]
            print(f"{'  numpy dirichlet @ diffs':<28}{'':>10}{'':>10}{wall:>9.3f}{reference:>8.3f}{'':>13}   "
                  f"(CPU, ours / reference: {cpu / reference:.2f})")
    print(f"unchunked weights at 100,000 items: {DRAWS} x 100000 x 8 bytes = {DRAWS * 100_000 * 8 / 2**30:.1f} GiB")


if __name__ == "__main__":
    main()
