"""What a look of ``mlflow-bayescompare watch`` costs as the runs grow (issue 41: "a look on a grown run costs reading
the new runs plus milliseconds"): two models' 10-fold CV runs, one run per repeat, on a fresh local sqlite store.

Up to 10, 30 and 100 repeats (20, 60 and 200 source runs), side by side in one process, each the median of 4 looks
that each find one new repeat (its two runs) since the last.  Before a repeat is logged, the runs of the earlier
ones are given an end time an hour back (as if a repeat took longer than the 10-minute clock margin of
``pipeline/watchgrown.py``; runs ended within the margin are listed again and compared by their listing, not read):

* ``full``: a logged look of a watch (its own watch run, another target experiment) that reads the runs as the
  first look does (``reads.collect`` finds the keys and the layout, reads every run, pandas pairs and checks the
  folds; its state tag is removed before each look);
* ``kept``: a logged look that continues, reading by what the watch run keeps (``pipeline/watchgrown.py``: the runs
  ended since the last look's read or running, and the deleted ones, listed; the new runs' histories read; the
  others' scores taken from ``watch_reads.json``);
* the reads alone on the same store, after one more repeat: ``read_cv`` (full), ``read_grown`` without what the
  run keeps (every run listed, every history read: the read that verifies a look before it decides), ``read_grown``
  with it (the kept read), and the one MLflow search that returns only the new repeat's runs
  (``attributes.start_time >`` the last look's newest run);
* one more kept look under cProfile, its time split into the MLflow calls that read the source runs (the listings
  and the histories), the MLflow calls on the watch run (finding it, reading ``watch_reads.json`` back, writing the
  look: the artifacts and one ``log_batch``; and the experiments' lookup) and the rest, the package's own Python (the
  look, the digests, the description; the profiler's overhead inflates this part);
* a deciding look: a third watch (target experiment of its own) whose design looks once, at the budget one repeat
  later (so it answers, decided or inconclusive), looked at the repeat before (every history read and kept), then
  at the new repeat: its kept read, the verification (every history read again, the look made again), the look
  kept and the run ended.

Then two evaluation runs whose long tables (``eval_scores.csv``, one pass/fail scorer) grow by 20 items between
looks, up to 200 and 1000 items: a logged look and a look not logged (the read and the look), each the median of 4.
A long table is read whole at each look (one artifact rewritten whole).

Then two runs with traces as ``mlflow.genai.evaluate`` leaves them (a trace per item, its inputs, one pass/fail
assessment ``correct`` made for the run), of 200 and of 1000 items (a pair and a watch each), all but the last batch
of 20 started an hour back (beyond the clock margin of ``pipeline/watchevals.py``) and looked at once, the last
batch started now: each the median of 4, on the same data:

* ``kept look``: a logged look that continues, reading by what the watch run keeps (the traces started since its
  last read less the margin: the last batch; the others' item keys and values from ``watch_reads.json``);
* ``read full``: ``read_evals`` (every trace of both runs), ``read kept``: ``read_kept_evals`` with what the watch
  run keeps, ``search new``: the one narrow trace search of run A alone (``trace.timestamp_ms >=``).

    nice -n 10 python benchmarks/bench_watch.py [--sizes 10,30,100] [--evals-only]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import tempfile
import time
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource

from mlflow_bayescompare.pipeline.watch import watch_runs
from mlflow_bayescompare.pipeline.watchevals import read_kept_evals
from mlflow_bayescompare.pipeline.watchgrown import read_grown
from mlflow_bayescompare.pipeline.watchsources import CLOCK_MARGIN_MS, read_cv, read_evals
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.reads.eval_traces import linked_traces
from mlflow_bayescompare.runs import watchrun
from mlflow_bayescompare.sequential import Design
from mlflow_bayescompare.vocabulary import mlflow_internals as mi
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.options import PairOptions, SourceOptions, WatchOptions

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
    """The sqlite store, the two models' runs and the watches of them."""

    def __init__(self, tmp: str) -> None:
        self.uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        self.client = MlflowClient(self.uri)
        self.experiment = self.client.create_experiment("cv", artifact_location=(Path(tmp) / "artifacts").as_uri())
        self.keywords = dict(experiment_ids=[self.experiment], tracking_uri=self.uri, metric="accuracy",
                             model_a="rf", model_b="svm", **DESIGN)
        self.full_keywords = {**self.keywords, "target_experiment": "full"}
        self.rng, self.repeats, self.newest, self.run_id, self.full_id = np.random.default_rng(0), 0, 0, None, None
        self.unaged: list[str] = []

    def grow(self) -> None:
        """One more repeat of each model (rf's run, then svm's), the earlier repeats' runs ended an hour back."""
        an_hour_ago = int(time.time() * 1000) - 3_600_000
        for run_id in self.unaged:
            self.client.set_terminated(run_id, end_time=an_hour_ago)
        self.newest = max((r.info.start_time for r in self.client.search_runs([self.experiment], "",
                                                                                max_results=1000)), default=0)
        b = np.clip(self.rng.normal(0.8, 0.02, FOLDS), 0, 1)
        a = np.clip(b + self.rng.normal(0.01, 0.02, FOLDS), 0, 1)
        self.unaged = [log_cv_scores(model, "iris", scores, folds=FOLDS, experiment_id=self.experiment,
                                     client=self.client) for model, scores in (("rf", a), ("svm", b))]
        self.repeats += 1

    def looks(self) -> tuple[float, float]:
        """One new repeat, then a logged look of each watch: the full read's, the kept one's."""
        self.grow()
        self.client.delete_tag(self.full_id, T.WATCH_STATE)
        full = _timed(lambda: _continued(watch_runs(**self.full_keywords)), 1)
        return full, _timed(lambda: _continued(watch_runs(**self.keywords)), 1)

    def split(self) -> tuple[float, float, float]:
        """A kept look under cProfile (:func:`_split`) at the repeat :meth:`reads` added."""
        return _split(lambda: watch_runs(**self.keywords))

    def reads(self) -> tuple[float, float, float, float]:
        """After one new repeat: the full read, the read by the state alone (every history), the kept read, and
        the search of the new repeat's runs alone."""
        self.grow()
        design, pair = Design(**DESIGN), PairOptions(model_a="rf", model_b="svm")
        source = SourceOptions(experiment_ids=(self.experiment,), metric="accuracy")
        run = self.client.get_run(self.run_id)
        state, kept = json.loads(run.data.tags[T.WATCH_STATE]), watchrun.read_recorded(self.client, run, design).reads
        ids = [self.experiment]
        full = _timed(lambda: read_cv(self.client, design, source, pair, None, ids))
        every = _timed(lambda: read_grown(self.client, design, source, pair, ids, state))
        new = _timed(lambda: read_grown(self.client, design, source, pair, ids, state, kept))
        search = _timed(lambda: self.client.search_runs(ids, f"attributes.start_time > {self.newest}"))
        return full, every, new, search

    def deciding(self) -> tuple[float, str]:
        """A look that answers (the budget of a design looking once, at one repeat more), with its verification."""
        budget = self.repeats + 1
        keywords = {**self.keywords, "min_size": budget, "max_size": budget, "target_experiment": f"at {budget}"}
        self.register(keywords)
        self.grow()
        start = time.perf_counter()
        out = watch_runs(**keywords)
        return time.perf_counter() - start, out.answer

    def register(self, keywords: dict) -> str:
        """The watch run of ``keywords`` (its first look at the same repeats, and the kept state's first read)."""
        run_id = watch_runs(**keywords).run_id
        watch_runs(**keywords)
        return run_id


def _continued(out) -> None:
    if out.answer != "continue":
        raise SystemExit(f"the design answered {out.answer} at {out.look.size}: the benchmark needs it undecided")


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


def _log_traces(run_id: str, items: range, passed: np.ndarray, ago_ns: int) -> None:
    """A trace per item started ``ago_ns`` back, and its assessment made for the run."""
    start = time.time_ns() - ago_ns
    with mlflow.start_run(run_id=run_id):
        for i in items:
            span = mlflow.start_span_no_context("predict", inputs={"question": f"question {i}"},
                                                start_time_ns=start + i * 10**6)
            span.end(end_time_ns=start + i * 10**6 + 5000)
            mlflow.log_feedback(trace_id=span.trace_id, name="correct", value=bool(passed[i]),
                                source=AssessmentSource("CODE", "correct"), metadata={mi.ASSESSMENT_RUN_KEY: run_id})


def _traces(tmp: str, sizes=(200, 1000)) -> None:
    """Two runs with traces per size (a watch each): all but the last batch an hour back and a first look, the last
    batch now; then a kept look, the reads and the search."""
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"  # traces written as they end
    uri = f"sqlite:///{Path(tmp) / 'traces.db'}"
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    experiment = client.create_experiment("traces", artifact_location=(Path(tmp) / "trace-artifacts").as_uri())
    passes = np.random.default_rng(1).random((2, max(sizes))) < np.array([[0.72], [0.70]])
    design = Design(**EVAL_DESIGN)
    print(f"{'items':>5}  {'kept look':>9}  {'read full':>9}  {'read kept':>9}  {'ratio':>5}  {'search new':>10}")
    for size in sizes:
        runs = [client.create_run(experiment, run_name=f"{name} {size}").info.run_id for name in ("A", "B")]
        keywords = dict(tracking_uri=uri, run_a=runs[0], run_b=runs[1], **EVAL_DESIGN)
        watch, run_a = WatchOptions(run_a=runs[0], run_b=runs[1]), client.get_run(runs[0])
        for run_id, passed in zip(runs, passes):
            _log_traces(run_id, range(size - EVAL_BATCH), passed, 3600 * 10**9)
        out = watch_runs(**keywords)  # registers the design, keeps every trace read
        _continued(out)
        for run_id, passed in zip(runs, passes):
            _log_traces(run_id, range(size - EVAL_BATCH, size), passed, 0)
        look = _timed(lambda: _continued(watch_runs(**keywords)))  # noqa: B023 (called at once)
        kept = watchrun.read_recorded(client, client.get_run(out.run_id), design).reads
        full = _timed(lambda: read_evals(design, watch, tracking_uri=uri))  # noqa: B023
        narrow = _timed(lambda: read_kept_evals(design, watch, kept, narrow=True, tracking_uri=uri))  # noqa: B023
        since = kept["read_at"] - CLOCK_MARGIN_MS
        search = _timed(lambda: linked_traces(client, run_a, since_ms=since))  # noqa: B023
        print(f"{size:>5}  {look * 1000:>6.0f} ms  {full * 1000:>6.0f} ms  {narrow * 1000:>6.0f} ms  "
              f"{full / narrow:>4.1f}x  {search * 1000:>7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,30,100", help="repeats at which the looks are timed")
    parser.add_argument("--evals-only", action="store_true", help="the evaluation runs' looks only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        if args.evals_only:
            _evaluations(tmp)
            _traces(tmp)
            return
        store = _Store(tmp)
        print(f"{'runs':>5}  {'full look':>9}  {'kept look':>9}  {'ratio':>5}  {'read full':>9}  {'read every':>10}  "
              f"{'read kept':>9}  {'search new':>10}  {'deciding look':>13}  "
              f"{'profiled kept look: reading / watch run / Python':>48}")
        for size in sizes:
            while store.repeats < size - LOOKS - 2:  # the looks, the reads and the deciding look add the rest
                store.grow()
            if store.run_id is None:
                start = time.perf_counter()
                store.run_id, store.full_id = store.register(store.keywords), store.register(store.full_keywords)
                print(f"(the first two watches, at {store.repeats} repeats, register and simulate the design: "
                      f"{time.perf_counter() - start:.2f} s)")
            timed = [store.looks() for _ in range(LOOKS)]
            full_look, kept_look = (statistics.median(t[i] for t in timed) for i in (0, 1))
            read_full, read_every, read_kept, search = store.reads()
            parts = " / ".join(f"{part * 1000:.0f} ms" for part in store.split())
            deciding, answer = store.deciding()
            runs = 2 * store.repeats
            print(f"{runs:>5}  {full_look * 1000:>6.0f} ms  {kept_look * 1000:>6.0f} ms  "
                  f"{full_look / kept_look:>4.1f}x  {read_full * 1000:>6.0f} ms  {read_every * 1000:>7.0f} ms  "
                  f"{read_kept * 1000:>6.1f} ms  {search * 1000:>7.1f} ms  {deciding * 1000:>6.0f} ms {answer[:5]:>5}"
                  f"  {parts:>48}")
        _evaluations(tmp)
        _traces(tmp)


if __name__ == "__main__":
    main()
