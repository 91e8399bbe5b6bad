"""What a look of ``mlflow-bayescompare watch`` costs as the runs grow (issue 41: "a look on a grown run costs
reading the new runs plus milliseconds"): two models' 10-fold CV runs, one run per repeat, on a fresh local sqlite
store; at 10, 30 and 100 repeats, a look not logged (``watch_runs(..., log=False)``: the runs read, the look) beside
the look alone on the same scores (``sequential.look``), each the median of 3, and the first logged look (which
registers the design and simulates it) and a later logged look, once.  Today each look reads every source run again,
not only the new ones: the ratio says how much of a look is the reading.

    nice -n 10 python benchmarks/bench_watch.py [--sizes 10,30,100]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from mlflow import MlflowClient

from mlflow_bayescompare.pipeline.watch import watch_runs
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.sequential import Design, look

FOLDS = 10
DESIGN = dict(test="correlated-t", rope=0.01, threshold=0.9937, nominal_error=0.05, min_size=2, max_size=100,
              look_every=1, folds=FOLDS, planning_sd=0.01)


def _timed(call, repeats: int = 3) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,30,100", help="repeats at which a look is timed")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        client = MlflowClient(uri)
        experiment = client.create_experiment("cv", artifact_location=(Path(tmp) / "artifacts").as_uri())
        keywords = dict(experiment_ids=[experiment], tracking_uri=uri, metric="accuracy", model_a="rf",
                        model_b="svm", **DESIGN)
        diffs, logged = [], 0
        print(f"{'repeats':>7}  {'runs':>5}  {'look, not logged':>16}  {'look alone':>10}  {'ratio':>7}")
        for size in sizes:
            while logged < size:
                b = np.clip(rng.normal(0.8, 0.02, FOLDS), 0, 1)
                a = np.clip(b + rng.normal(0, 0.01, FOLDS), 0, 1)
                for model, scores in (("rf", a), ("svm", b)):
                    log_cv_scores(model, "iris", scores, folds=FOLDS, experiment_id=experiment, client=client)
                diffs.append(a - b)
                logged += 1
            whole = _timed(lambda: watch_runs(**keywords, log=False))
            alone = _timed(lambda: look(Design(**DESIGN), diffs=np.concatenate(diffs)))
            print(f"{size:>7}  {2 * size:>5}  {whole:>14.3f} s  {alone * 1000:>7.2f} ms  {whole / alone:>6.0f}x")
        start = time.perf_counter()
        watch_runs(**keywords)
        first = time.perf_counter() - start
        start = time.perf_counter()
        watch_runs(**keywords)
        later = time.perf_counter() - start
        print(f"first logged look at {logged} repeats (registers and simulates the design): {first:.2f} s")
        print(f"a later logged look at {logged} repeats: {later:.2f} s")


if __name__ == "__main__":
    main()
