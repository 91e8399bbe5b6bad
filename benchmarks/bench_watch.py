"""What a look of ``mlflow-bayescompare watch`` costs as the runs grow (issue 41: "a look on a grown run costs reading
the new runs plus milliseconds"): two models' 10-fold CV runs, one run per repeat, on a fresh local sqlite store.

Up to 10, 30 and 100 repeats (20, 60 and 200 source runs), side by side in one process, each the median of 4 looks
that each find one new repeat (its two runs) since the last:

* ``full``: a logged look that reads the runs as the first look does (``reads.collect`` finds the keys and the
  layout, reads every run, pandas pairs and checks the folds: the read of every look before the watch run kept its
  state; the state tag is removed before each such look);
* ``kept``: a logged look that reads by the state the watch run keeps (``pipeline/watchgrown.py``: one search per
  model, one bulk history read, numpy);
* the reads alone on the same store: ``read_cv`` (full) and ``read_grown`` (kept), and the one MLflow search that
  returns only the new repeat's runs (``attributes.start_time >`` the last look's newest run): what a look would read
  if MLflow kept a mark of a changed earlier score (it does not: every run's history is read, see watchgrown.py);
* one more kept look under cProfile, its time split into the MLflow calls that read the source runs (the listing
  and the histories), the MLflow calls on the watch run (finding it, reading its looks back, writing the look: the
  artifacts and one ``log_batch``; and the experiments' lookup) and the rest, the package's own Python (the look,
  the digests, the description; the profiler's overhead inflates this part).

The full and the kept looks alternate, so that load on the machine falls on both alike.

Then two evaluation runs whose long tables (``eval_scores.csv``, one pass/fail scorer) grow by 20 items between
looks, up to 200 and 1000 items: a logged look and a look not logged (the read and the look), each the median of 4.
Evaluation runs are read whole at each look (see README: a table is one artifact rewritten whole, and an
assessment can be added to an earlier trace without changing anything a search sees).

    nice -n 10 python benchmarks/bench_watch.py [--sizes 10,30,100]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow import MlflowClient

from mlflow_bayescompare.pipeline.watch import watch_runs
from mlflow_bayescompare.pipeline.watchgrown import read_grown
from mlflow_bayescompare.pipeline.watchsources import read_cv
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.sequential import Design
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.options import PairOptions, SourceOptions

FOLDS = 10
#: a look at every repeat; the differences sit at the rope's edge, so that the design does not decide
DESIGN = dict(test="correlated-t", rope=0.01, threshold=0.9937, nominal_error=0.05, min_size=2, max_size=130,
              look_every=1, folds=FOLDS, planning_sd=0.02)
LOOKS = 4
EVAL_DESIGN = dict(test="eval-binary", rope=0.02, threshold=0.9937, nominal_error=0.05, min_size=20, max_size=2000,
                   look_every=20, planning_sd=0.5)
EVAL_BATCH = 20
#: the package's modules whose MLflow calls read the source runs (at a kept look)
_READING = ("watchgrown.py", "fetch.py", "identify.py")


def _timed(call, repeats: int = LOOKS) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def _split(call) -> tuple[float, float, float]:
    """``call`` under cProfile: seconds in MLflow calls made by the modules that read the source runs, in the
    package's other MLflow calls, and in the rest."""
    profile = cProfile.Profile()
    profile.enable()
    call()
    profile.disable()
    stats = pstats.Stats(profile).stats
    total, reading, other = sum(entry[2] for entry in stats.values()), 0.0, 0.0
    for (file, _, _), (*_, callers) in stats.items():
        if "/mlflow/" not in file:
            continue
        for (caller, _, _), (*_, cumulative) in callers.items():
            if "mlflow_bayescompare" in caller:
                if caller.endswith(_READING):
                    reading += cumulative
                else:
                    other += cumulative
    return reading, other, total - reading - other


class _Store:
    """The sqlite store, the two models' runs and the watch of them."""

    def __init__(self, tmp: str) -> None:
        self.uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        self.client = MlflowClient(self.uri)
        self.experiment = self.client.create_experiment("cv", artifact_location=(Path(tmp) / "artifacts").as_uri())
        self.keywords = dict(experiment_ids=[self.experiment], tracking_uri=self.uri, metric="accuracy",
                             model_a="rf", model_b="svm", **DESIGN)
        self.rng, self.repeats, self.newest, self.run_id = np.random.default_rng(0), 0, 0, None

    def grow(self) -> None:
        """One more repeat of each model (rf's run, then svm's)."""
        b = np.clip(self.rng.normal(0.8, 0.02, FOLDS), 0, 1)
        a = np.clip(b + self.rng.normal(0.01, 0.02, FOLDS), 0, 1)
        for model, scores in (("rf", a), ("svm", b)):
            log_cv_scores(model, "iris", scores, folds=FOLDS, experiment_id=self.experiment, client=self.client)
        self.repeats += 1

    def look(self, full: bool) -> float:
        """A logged look at one new repeat; ``full``: without the kept state (read as at the first look)."""
        self.newest = max(r.info.start_time for r in self.client.search_runs([self.experiment], "",
                                                                               max_results=1000))
        self.grow()
        if full:
            self.client.delete_tag(self.run_id, T.WATCH_STATE)
        start = time.perf_counter()
        out = watch_runs(**self.keywords)
        seconds = time.perf_counter() - start
        if out.answer != "continue":
            raise SystemExit(f"the design answered {out.answer} at {out.look.size}: the benchmark needs it undecided")
        return seconds

    def split(self) -> tuple[float, float, float]:
        """A kept look at one new repeat under cProfile (:func:`_split`)."""
        self.grow()
        return _split(lambda: watch_runs(**self.keywords))

    def reads(self) -> tuple[float, float, float]:
        """The full read, the read by the kept state, and the search of the newest repeat's runs alone."""
        design, pair = Design(**DESIGN), PairOptions(model_a="rf", model_b="svm")
        source = SourceOptions(experiment_ids=(self.experiment,), metric="accuracy")
        state = json.loads(self.client.get_run(self.run_id).data.tags[T.WATCH_STATE])
        ids = [self.experiment]
        full = _timed(lambda: read_cv(self.client, design, source, pair, None, ids))
        kept = _timed(lambda: read_grown(self.client, design, source, pair, ids, state))
        search = _timed(lambda: self.client.search_runs(ids, f"attributes.start_time > {self.newest}"))
        return full, kept, search


def _evaluations(tmp: str, sizes=(200, 1000)) -> None:
    """Two evaluation runs growing by ``EVAL_BATCH`` items between looks: a logged look and one not logged."""
    uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("evals", artifact_location=(Path(tmp) / "eval-artifacts").as_uri())
    runs = [client.create_run(experiment, run_name=name).info.run_id for name in ("prompt A", "prompt B")]
    passes = np.random.default_rng(1).random((2, max(sizes))) < np.array([[0.72], [0.70]])
    keywords = dict(tracking_uri=uri, run_a=runs[0], run_b=runs[1], **EVAL_DESIGN)

    def grow(items: int) -> None:
        for run_id, passed in zip(runs, passes):
            table = pd.DataFrame({"item": [f"q{i}" for i in range(items)], "scorer": "correct",
                                  "value": passed[:items].astype(float)})
            buffer = io.StringIO()
            table.to_csv(buffer, index=False)
            client.log_text(run_id, buffer.getvalue(), "eval_scores.csv")

    grow(sizes[0] - 2 * LOOKS * EVAL_BATCH)
    watch_runs(**keywords)  # registers the design
    print(f"{'items':>5}  {'logged look':>11}  {'not logged':>10}  answer")
    for size in sizes:
        logged, alone = [], []
        for k in range(LOOKS):
            grow(size - (2 * (LOOKS - k) - 1) * EVAL_BATCH)
            start = time.perf_counter()
            out = watch_runs(**keywords)
            logged.append(time.perf_counter() - start)
            grow(size - 2 * (LOOKS - k - 1) * EVAL_BATCH)
            start = time.perf_counter()
            watch_runs(**keywords, log=False)
            alone.append(time.perf_counter() - start)
        print(f"{size:>5}  {statistics.median(logged) * 1000:>8.0f} ms  {statistics.median(alone) * 1000:>7.0f} ms  "
              f"{out.answer}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,30,100", help="repeats at which the looks are timed")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        store = _Store(tmp)
        print(f"{'runs':>5}  {'full look':>9}  {'kept look':>9}  {'ratio':>5}  {'read full':>9}  {'read kept':>9}  "
              f"{'search new':>10}  {'profiled kept look: reading / watch run / Python':>48}")
        for size in sizes:
            while store.repeats < size - 2 * LOOKS - 1:  # the looks add the last 2 × LOOKS + 1 repeats
                store.grow()
            if store.run_id is None:
                start = time.perf_counter()
                store.run_id = watch_runs(**store.keywords).run_id
                print(f"(the first logged look, at {store.repeats} repeats, registers and simulates the design: "
                      f"{time.perf_counter() - start:.2f} s)")
            full, kept = [], []
            for _ in range(LOOKS):
                full.append(store.look(full=True))
                kept.append(store.look(full=False))
            full_look, kept_look = statistics.median(full), statistics.median(kept)
            read_full, read_kept, search = store.reads()
            parts = " / ".join(f"{part * 1000:.0f} ms" for part in store.split())
            runs = 2 * store.repeats
            print(f"{runs:>5}  {full_look * 1000:>6.0f} ms  {kept_look * 1000:>6.0f} ms  "
                  f"{full_look / kept_look:>4.1f}x  {read_full * 1000:>6.0f} ms  {read_kept * 1000:>6.0f} ms  "
                  f"{search * 1000:>7.1f} ms  {parts:>48}")
        _evaluations(tmp)


if __name__ == "__main__":
    main()
