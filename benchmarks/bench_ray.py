"""Ray benchmark: ``matrix`` on the local engine against ``--engine ray`` on a two-node Ray cluster started on this
same machine (``ray start --head`` and ``ray start --address``, one CPU each: the local engine's two workers), then
the cached re-run after adding one model, and a projection for k = 100 models on N nodes from the measured cost of a
pair.

Logs k models × n datasets (10 folds each, steps layout) into a sqlite store in a temporary folder, then times:

* ``compare_matrix`` on the local engine (``jobs`` = 2), every pair fitted (``refresh``);
* the same on the Ray cluster, every pair fitted again, and checks that each pair's numbers are the local engine's;
* one model more, on the Ray cluster: only its k pairs are fitted, the others read from the first runs' pairs
  tables (the cache).

Each timing is the wall time of the call (the Ray one includes connecting and starting the actors, not starting the
cluster), with this process's CPU time (the driver's: the ranking of all models, the report, the logging) and
the pairs' own sampling times (from the pairs table's diagnostics).  Every matrix logs the pairs table alone
(``child_runs_up_to=0``), as any matrix above 50 pairs does.  Prints one JSON object.

    python benchmarks/bench_ray.py                            # 14 models (91 pairs) x 50 datasets
    python benchmarks/bench_ray.py --models 20 --datasets 50  # the issue's 190 pairs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from mlflow import MlflowClient

from mlflow_bayescompare.pipeline.compare import compare_matrix
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.simulation.ray_cluster import RayCluster  # two `ray start` sessions, stopped by pid


def log_experiment(client, eid: str, models: list[str], datasets: int, seed: int = 2017) -> None:
    rng = np.random.default_rng(seed)
    difficulty, skills = rng.uniform(0.6, 0.9, datasets), rng.normal(0, 0.01, len(models))
    for m, skill in zip(models, skills):
        for d in range(datasets):
            scores = np.clip(difficulty[d] + skill + rng.normal(0, 0.03, 10), 0, 1)
            log_cv_scores(m, f"d{d:03d}", scores, folds=10, experiment_id=eid, client=client)


def own_cpu() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def timed(**kwargs) -> tuple[object, dict]:
    """The matrix, its wall time, this process's CPU time, and the pairs' own sampling times (each pair's sampler
    wall time, from its row's diagnostics: what a worker spends on it)."""
    cpu, start = own_cpu(), time.monotonic()
    matrix = compare_matrix(**kwargs)
    seconds = time.monotonic() - start
    sampling = [o.result.diagnostics["sampling_seconds"] for o in matrix.pairs.values() if not o.result.cached]
    return matrix, {"seconds": round(seconds, 1), "driver_cpu_seconds": round(own_cpu() - cpu, 1),
                    "pairs": len(matrix.pairs), "pairs_cached": matrix.cached,
                    "pair_sampling_seconds_median": round(float(np.median(sampling)), 2) if sampling else None,
                    "pair_sampling_seconds_sum": round(float(np.sum(sampling)), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=14)
    parser.add_argument("--datasets", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    models = [f"m{i:03d}" for i in range(args.models + 1)]  # the last one is added for the cached re-run
    out: dict = {"models": args.models, "datasets": args.datasets, "cpus": os.cpu_count(),
                 "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as folder:
        tmp = Path(folder)
        uri = f"sqlite:///{tmp / 'mlflow.db'}"
        client = MlflowClient(uri)
        eid = client.create_experiment("cv", artifact_location=(tmp / "artifacts").as_uri())
        log_experiment(client, eid, models, args.datasets)
        common = dict(experiment_ids=[eid], metric="accuracy", tracking_uri=uri, seed=args.seed,
                      child_runs_up_to=0)  # the pairs table alone, whatever k: the rows carry the sampling times
        local, out["local"] = timed(models=models[:-1], jobs=2, refresh=True, **common)
        start = time.monotonic()
        cluster = RayCluster(tmp / "ray")
        out["cluster_start_seconds"] = round(time.monotonic() - start, 1)
        try:
            on_ray, out["ray"] = timed(models=models[:-1], engine="ray", ray_address=cluster.address, refresh=True,
                                       **common)
            out["same_numbers"] = all((local.pairs[p].p_a_better, local.pairs[p].p_rope) ==
                                      (on_ray.pairs[p].p_a_better, on_ray.pairs[p].p_rope) for p in local.pairs)
            _, out["ray_one_model_more"] = timed(models=models, engine="ray", ray_address=cluster.address, **common)
        finally:
            cluster.stop()
    out["ray_overhead"] = round(out["ray"]["seconds"] / out["local"]["seconds"] - 1, 3)
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
