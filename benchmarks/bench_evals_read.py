"""Time reading evaluation runs from a real ``mlflow server``: ``read_evaluations`` beside MLflow's own
``mlflow.search_traces(run_id=…)`` on the same runs.

Starts its own server on 127.0.0.1 (a fresh sqlite store unless ``--backend-store-uri``), logs two runs of
``--items`` items each with ``mlflow.genai.evaluate`` (three deterministic code scorers, no LLM), then times, each
the median of ``--repeats`` reads of both runs:

* ours: ``read_evaluations([a, b])``, the whole read: runs, kinds, traces without spans (pages of 500), the
  assessments that count, pairing, the tidy table;
* MLflow's ``mlflow.search_traces(run_id=…, locations=[experiment])`` per run, as documented (spans included, a
  DataFrame, pages of 100);
* the same with ``include_spans=False, return_type="list"`` (what our read builds on, MLflow's pages of 100);
* the server's answer alone: the REST search of the traces (``/api/3.0/mlflow/traces/search``, pages of 500),
  JSON decoded and nothing more, to show where the time goes.

    python benchmarks/bench_evals_read.py [--items 1000] [--repeats 3] [--backend-store-uri postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import mlflow
import requests
from bench_fetch import start_server, stop
from mlflow.genai.scorers import scorer

from mlflow_bayescompare.reads.evaluations import read_evaluations


@scorer
def exact(outputs, expectations):
    return outputs == expectations["answer"]


@scorer
def grade(inputs, outputs):
    return 1 + (len(inputs["question"]) + len(outputs)) % 5


@scorer
def length(outputs):
    return float(len(outputs))


def evaluate(name: str, items: int, shift: int) -> str:
    data = [{"inputs": {"question": f"question {i}"}, "expectations": {"answer": f"a{i % 7}"}} for i in range(items)]
    with mlflow.start_run(run_name=name) as run:
        mlflow.genai.evaluate(data=data, predict_fn=lambda question: f"a{(int(question.split()[1]) + shift) % 5}",
                              scorers=[exact, grade, length])
    return run.info.run_id


def rest_pages(url: str, experiment_id: str, run_id: str) -> int:
    """The run's traces through the REST API, pages of 500, JSON decoded: how many."""
    body = {"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}],
            "filter": f"attribute.run_id = '{run_id}'", "max_results": 500}
    found, token = 0, None
    while True:
        request = dict(body, page_token=token) if token else body
        page = requests.post(f"{url}/api/3.0/mlflow/traces/search", json=request, timeout=600).json()
        found += len(page.get("traces", []))
        token = page.get("next_page_token")
        if not token:
            return found


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend-store-uri", help="default: a fresh sqlite file")
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4, help="server workers (MLflow's default: 4)")
    args = ap.parse_args()
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(args.backend_store_uri or f"sqlite:///{Path(tmp) / 'mlflow.db'}", Path(tmp),
                                 args.workers)
        try:
            mlflow.set_tracking_uri(url)
            eid = mlflow.set_experiment(f"bench-evals-{int(time.time())}").experiment_id
            start = time.perf_counter()
            ids = [evaluate("prompt-A", args.items, 0), evaluate("prompt-B", args.items, 1)]
            mlflow.flush_trace_async_logging()
            took = time.perf_counter() - start
            print(f"logged 2 runs x {args.items} items with mlflow.genai.evaluate in {took:.0f} s"
                  f"  ({args.backend_store_uri or 'sqlite'}, {args.workers} workers)")
            read_evaluations(ids[:2], tracking_uri=url)  # warm up the connection and the server

            ours, (table, read) = median_time(lambda: read_evaluations(ids, tracking_uri=url), args.repeats)
            theirs, frames = median_time(lambda: [mlflow.search_traces(run_id=rid, locations=[eid]) for rid in ids],
                                         args.repeats)
            infos, lists = median_time(lambda: [mlflow.search_traces(run_id=rid, locations=[eid], include_spans=False,
                                                                     return_type="list") for rid in ids],
                                       args.repeats)
            rest, counts = median_time(lambda: [rest_pages(url, eid, rid) for rid in ids], args.repeats)
            assert [len(f) for f in frames] == [len(x) for x in lists] == counts == [r.units for r in read.runs]
            print(f"traces read: {sum(r.units for r in read.runs)}, table rows: {len(table)} "
                  f"(scorers {', '.join(read.scorers)}); medians of {args.repeats}")
            print(f"ours, read_evaluations (whole read, tidy table): {ours:.3f} s")
            print(f"mlflow.search_traces(run_id=...), per run:         {theirs:.3f} s")
            print(f"  same, include_spans=False, return_type='list':  {infos:.3f} s")
            print(f"  the server's answer alone (REST, JSON decoded): {rest:.3f} s")
            print(f"ratio mlflow.search_traces / ours:                {theirs / ours:.1f}x")
        finally:
            stop(proc)


if __name__ == "__main__":
    main()
