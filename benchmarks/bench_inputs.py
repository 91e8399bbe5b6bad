"""Time reading scores past thousands of unrelated runs and building the score tensor: the three wall-clock targets
that the functional tests used to assert (moved here because a shared 2-core machine makes a timed unit test
flaky), each on a workload of the same size, built here through the public API only.

* ``collect``: ``collect_scores`` of two models on 3 datasets (2 x 10-fold CV, logged by ``log_cv_scores``) from a
  sqlite store that also holds ``--unrelated`` runs of other models and projects; target 5 s.
* ``from_tidy``: the tensor of one pair from a tidy table of 10 models x 100 datasets x 10 x 10-fold CV; target 3 s.
* ``cli compare``: ``mlflow-bayescompare compare --json --no-log`` (in process, 2 chains x 200 draws) of rf and svm
  on 4 datasets in the same kind of store; target 120 s.

The Stan program is compiled (or found in the cache) first, and the stores are filled, before anything is timed.
Each case runs ``--repeats`` times; the median is printed beside its target, with their ratio.

    python benchmarks/bench_inputs.py [--repeats 3] [--unrelated 3000]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner
from mlflow import MlflowClient
from mlflow.entities import Metric

from mlflow_bayescompare import log_cv_scores
from mlflow_bayescompare.cli import main as cli_main
from mlflow_bayescompare.reads.collect import collect_scores
from mlflow_bayescompare.sampling import sampler
from mlflow_bayescompare.scores.tensor import from_tidy

TARGETS = {"collect": 5.0, "from_tidy": 3.0, "cli compare": 120.0}
FOLDS, REPEATS = 10, 2


def _store(tmp: Path, name: str) -> tuple[str, MlflowClient, str]:
    uri = f"sqlite:///{tmp / name}.db"
    client = MlflowClient(uri)
    return uri, client, client.create_experiment("cv", artifact_location=(tmp / name / "artifacts").as_uri())


def _log_models(client: MlflowClient, eid: str, models: list[str], datasets: list[str], seed: int) -> None:
    """Each model's 2 x 10-fold CV accuracies on each dataset, logged as steps with ``log_cv_scores``."""
    rng = np.random.default_rng(seed)
    for i, model in enumerate(models):
        for dataset in datasets:
            scores = 0.8 + 0.01 * i + rng.normal(0, 0.02, FOLDS * REPEATS)
            log_cv_scores(model, dataset, scores, folds=FOLDS, repeats=REPEATS, experiment_id=eid, client=client)


def _log_unrelated(client: MlflowClient, eid: str, n: int) -> None:
    """``n`` runs of other models and projects: a third untagged, the rest tagged with other models or only a
    dataset, each with a loss metric."""
    for i in range(n):
        tags = {"team": "other"} if i % 3 == 0 else {"model": f"other-{i % 10}", "dataset": f"ds-{i}"}
        if i % 3 == 2:
            tags = {"dataset": "d0"}
        run = client.create_run(eid, tags=tags, run_name=f"noise-{i}")
        client.log_batch(run.info.run_id, metrics=[Metric("loss", float(i), 0, 0)])


def _tidy(models: int, datasets: int, folds: int, seed: int) -> pd.DataFrame:
    """Complete synthetic scores: one run per (model, dataset), a global fold index."""
    rng = np.random.default_rng(seed)
    model, dataset, fold = np.meshgrid(np.arange(models), np.arange(datasets), np.arange(folds), indexing="ij")
    run = model * datasets + dataset
    return pd.DataFrame({"dataset": "d" + dataset.ravel().astype(str), "model": "m" + model.ravel().astype(str),
                         "fold": fold.ravel(), "score": rng.uniform(0.7, 0.9, model.size),
                         "run_id": "run-" + run.ravel().astype(str), "start_time": run.ravel()})


def _timed(repeats: int, call) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--unrelated", type=int, default=3000, help="unrelated runs in each store (default 3000)")
    args = parser.parse_args()
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # its "Creating initial MLflow database tables"
    compile_seconds = sampler.compile_program("hierarchical")
    print(f"{os.cpu_count()} CPU(s); compile {compile_seconds:.1f} s (not timed); {args.unrelated} unrelated runs "
          f"per store; median of {args.repeats} runs")
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        _, client, eid = _store(Path(tmp), "collect")
        _log_models(client, eid, ["nbc", "aode"], ["uci1", "uci2", "uci3"], seed=1)
        _log_unrelated(client, eid, args.unrelated)
        seconds["collect"] = _timed(args.repeats, lambda: collect_scores(client, [eid], "accuracy", ["nbc", "aode"]))

        df = _tidy(models=10, datasets=100, folds=100, seed=0)
        seconds["from_tidy"] = _timed(args.repeats, lambda: from_tidy(df, "m3", "m7", folds=10, time_col="start_time"))

        uri, client, eid = _store(Path(tmp), "cli")
        _log_models(client, eid, ["rf", "svm"], ["iris", "wine", "glass", "yeast"], seed=2)
        _log_unrelated(client, eid, args.unrelated)
        argv = ["compare", "--tracking-uri", uri, "--experiment-id", eid, "--metric", "accuracy", "--model-a", "rf",
                "--model-b", "svm", "--chains", "2", "--draws", "200", "--seed", "1", "--json", "--no-log"]

        def compare():
            result = CliRunner().invoke(cli_main, argv)
            if result.exit_code != 0:
                raise RuntimeError(result.output)

        seconds["cli compare"] = _timed(args.repeats, compare)
    print(f"{'case':<12} {'runs (s)':<24} {'median s':>9} {'target s':>9} {'ratio':>6}")
    failed = []
    for case, runs in seconds.items():
        median, target = statistics.median(runs), TARGETS[case]
        listed = ", ".join(f"{s:.2f}" for s in runs)
        print(f"{case:<12} {listed:<24} {median:>9.2f} {target:>9g} {median / target:>6.2f}")
        if median > target:
            failed.append(case)
    print(f"FAIL  {', '.join(failed)} over target" if failed else "PASS  every case under its target")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
