"""Time reading per-fold histories from a real ``mlflow server``: bulk endpoint vs per-run get_metric_history.

Starts its own server on 127.0.0.1, logs 2 models x 50 datasets x 100 folds in the steps layout, then fetches
every score both ways and prints the times and their ratio (target: bulk >= 5x faster and <= 1 s).

    python benchmarks/bench_fetch.py [--backend-store-uri postgresql://...] [--datasets 50] [--folds 100]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from mlflow import MlflowClient

from mlflow_bayescompare.reads.collect import collect_scores, fetch_histories
from mlflow_bayescompare.reads.cvlog import log_cv_scores


def start_server(backend: str, workdir: Path, workers: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
           "--backend-store-uri", backend, "--artifacts-destination", str(workdir / "artifacts"),
           "--workers", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(workdir / "server.log", "wb"),
                            start_new_session=True)
    deadline = time.monotonic() + 300  # its workers import MLflow: minutes on a busy machine, under nice
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return proc, url
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"mlflow server failed:\n{(workdir / 'server.log').read_text()[-2000:]}")
            time.sleep(0.3)
    stop(proc)
    sys.exit("mlflow server did not become healthy in 300 s")


def stop(proc: subprocess.Popen):
    """Stop the server and its uvicorn workers (its own process group)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend-store-uri", help="default: a fresh sqlite file")
    ap.add_argument("--datasets", type=int, default=50)
    ap.add_argument("--folds", type=int, default=100)
    ap.add_argument("--workers", type=int, default=4, help="server workers (MLflow's default: 4)")
    args = ap.parse_args()
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"  # no "View run" line per logged run
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        proc, url = start_server(args.backend_store_uri or f"sqlite:///{workdir / 'mlflow.db'}", workdir,
                                 args.workers)
        try:
            client = MlflowClient(url)
            eid = client.create_experiment(f"bench-{int(time.time())}")
            rng = np.random.default_rng(0)
            jobs = [(m, f"d{i}") for m in ("rf", "svm") for i in range(args.datasets)]
            t_log, _ = timed(lambda: list(ThreadPoolExecutor(8).map(
                lambda job: log_cv_scores(*job, rng.uniform(0.6, 0.9, args.folds), folds=args.folds,
                                          experiment_id=eid, client=client), jobs)))
            print(f"logged {len(jobs)} runs x {args.folds} folds in {t_log:.1f} s  ({url}, "
                  f"{args.backend_store_uri or 'sqlite'}, {args.workers} workers)")
            run_ids = [r.info.run_id for r in client.search_runs([eid], max_results=10_000)]
            sizes = dict.fromkeys(run_ids, args.folds)
            fetch_histories(client, run_ids[:2], "accuracy")  # warm up the connection and the server

            t_bulk, (bulk, method) = timed(lambda: fetch_histories(client, run_ids, "accuracy", sizes))
            t_seq, (seq, _) = timed(lambda: fetch_histories(client, run_ids, "accuracy", method="sequential"))
            t_collect, result = timed(lambda: collect_scores(client, [eid], "accuracy", ["rf", "svm"]))
            assert method == "bulk" and len(bulk) == len(seq) == len(run_ids) * args.folds
            assert result.fetch_method == "bulk" and len(result.scores) == len(bulk)
            print(f"bulk endpoint:                          {t_bulk:.3f} s")
            print(f"per-run get_metric_history, sequential: {t_seq:.3f} s")
            print(f"ratio sequential / bulk:                {t_seq / t_bulk:.1f}x")
            print(f"collect_scores end to end (search + bulk + tidy): {t_collect:.3f} s")
        finally:
            stop(proc)


if __name__ == "__main__":
    main()
