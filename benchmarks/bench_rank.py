"""Time ``rank_models`` on all of bbtcomp's ll: 16 classifiers x 132 datasets x 4 folds (tests/data/wainer_ll.csv),
end to end (reading the table, the win table, 4 chains x (1000 warm-up + 1000 draws), the summaries and
diagnostics), without any MLflow logging.  Target: <= 5 s per ranking.

The Stan program is compiled (or found in the cache) first and not timed.  ll lacks two of qda's fold scores
(lymphography), so the ranking counts no game there, as bbtcomp does (``skip_missing=True``).

    python benchmarks/bench_rank.py [--repeats 3] [--seed 1] [--backend auto]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from pathlib import Path

import pandas as pd

from mlflow_bayescompare.families.ranking.engine import rank_models
from mlflow_bayescompare.sampling import sampler

TARGET_SECONDS = 5.0
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "wainer_ll.csv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()
    logging.getLogger("mlflow_bayescompare").setLevel(logging.ERROR)
    ll = pd.read_csv(DATA)
    compile_seconds = sampler.compile_program("bbt", backend=args.backend)
    print(f"data {DATA.name}: {ll['db'].nunique()} datasets x {ll.shape[1] - 1} models x 4 folds; "
          f"{os.cpu_count()} CPU(s); compile {compile_seconds:.1f} s (not timed)")
    seconds = []
    for repeat in range(args.repeats):
        start = time.perf_counter()
        res = rank_models(ll, dataset="db", seed=args.seed + repeat, skip_missing=True, backend=args.backend,
                          model="bbt")
        seconds.append(time.perf_counter() - start)
        d = res.diagnostics
        print(f"run {repeat + 1}: {seconds[-1]:.2f} s (sampling {d['sampling_seconds']:.2f} s, {d['backend']}), "
              f"{len(res.wins)} pairs, best {res.order[0]} (P = {res.ranking['p_best'].iloc[0]:.2f}), "
              f"R-hat {d['rhat_max']:.3f}, min ESS {d['ess_bulk_min']:.0f}, {d['divergences']} divergences")
    median = statistics.median(seconds)
    verdict = "PASS" if median <= TARGET_SECONDS else "FAIL"
    print(f"median {median:.2f} s; ratio to the {TARGET_SECONDS:g} s target {median / TARGET_SECONDS:.2f} "
          f"({TARGET_SECONDS / median:.1f}x under it): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
