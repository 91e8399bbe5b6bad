"""Scale benchmark: ``matrix`` over 10 models (45 pairs) × 100 datasets × 100 scores per run, on a
PostgreSQL-backed ``mlflow server``.

Starts ``mlflow server`` on 127.0.0.1 with a fresh PostgreSQL database (from the admin URI in
``MLFLOW_BAYESCOMPARE_PG_URI`` or ``--pg-uri``; dropped afterwards unless ``--keep``), or uses ``--tracking-uri`` of a
running server.  Logs the experiment in the steps layout (``log_cv_scores``: one ``log_batch`` per run, in threads),
then times:

* the fetch: ``collect_scores`` of all 10 models (search + the server's bulk history endpoint);
* ``compare_matrix`` over all 45 pairs, fitted in parallel processes (``jobs`` = the core count by default), each
  pair logged as a child comparison run under a parent run (with its own figures, HTML report and model check
  when ``--pair-reports``), at the product's sampler settings unless ``--chains``/``--warmup``/``--draws``;

and prints the time per pair.

    python benchmarks/bench_scale.py                          # 10 models x 100 datasets x (10 folds x 10 repeats)
    python benchmarks/bench_scale.py --tracking-uri http://127.0.0.1:5000
    python benchmarks/bench_scale.py --models 4 --datasets 20 --chains 2 --draws 400   # a quick look
    python benchmarks/bench_scale.py --pair-reports                      # every pair with its own report
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import requests
from mlflow import MlflowClient

from mlflow_bayescompare.pipeline.compare import compare_matrix
from mlflow_bayescompare.reads.collect import collect_scores
from mlflow_bayescompare.reads.cvlog import log_cv_scores

PG_ENV = "MLFLOW_BAYESCOMPARE_PG_URI"


class PostgresServer:
    """A fresh PostgreSQL database (created from the admin URI ``pg_uri``, a role that may CREATE DATABASE) behind
    a plain ``mlflow server`` on a free port of 127.0.0.1, in its own process group.  (The tests start theirs with
    ``tests/servers.py``, which benchmarks do not import.)"""

    def __init__(self, pg_uri: str, workdir: Path, workers: int, timeout: float = 120):
        self.pg_uri, self.name = pg_uri, f"bayescompare_bench_{uuid.uuid4().hex[:12]}"
        self._admin(f'CREATE DATABASE "{self.name}"')
        # MLflow's default postgresql:// driver is psycopg 3, which may be absent
        store = urllib.parse.urlunsplit(urllib.parse.urlsplit(pg_uri)._replace(scheme="postgresql+psycopg2",
                                                                               path=f"/{self.name}"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url, self.log = f"http://127.0.0.1:{port}", workdir / "server.log"
        cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
               "--backend-store-uri", store, "--artifacts-destination", str(workdir / "artifacts"),
               "--workers", str(workers)]
        env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
        env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # MLflow's own job runner, unused, takes ~20 s to stop
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self._healthy():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop(drop=True)
                raise RuntimeError(f"mlflow server at {self.url} did not start; see {self.log}")
            time.sleep(0.3)

    def _healthy(self) -> bool:
        with contextlib.suppress(requests.RequestException):
            return requests.get(f"{self.url}/health", timeout=2).status_code == 200
        return False

    def _admin(self, sql: str) -> None:
        """One statement outside a transaction (CREATE/DROP DATABASE); psycopg2 takes only the plain scheme."""
        import psycopg2

        conn = psycopg2.connect(urllib.parse.urlunsplit(urllib.parse.urlsplit(self.pg_uri)._replace(
            scheme="postgresql")))
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()

    def stop(self, drop: bool) -> None:
        """SIGTERM the server's process group (uvicorn's workers with it), SIGKILL what is left after 30 s; then
        drop the database when ``drop``."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        if drop:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class StageClock:
    """A progress hook that notes when each step of ``compare_matrix`` starts: its stages, with the BBT ranking's
    sampling ("10 models on 100 datasets …") told apart from the pairs'."""

    def __init__(self):
        self.start = time.perf_counter()
        self.marks: list[tuple[str, float]] = []

    def __call__(self, stage: str, detail: str | None = None) -> None:
        name = "ranking (BBT)" if stage == "sampling" and detail and " models" in detail else stage
        if not self.marks or self.marks[-1][0] != name:
            self.marks.append((name, time.perf_counter() - self.start))

    def steps(self, total: float) -> list[tuple[str, float]]:
        """``(step, seconds)`` in order; a step that comes back (sampling after each pair) is summed."""
        out: dict[str, float] = {}
        for (name, t), end in zip(self.marks, [t for _, t in self.marks[1:]] + [total]):
            out[name] = out.get(name, 0.0) + end - t
        return list(out.items())


def log_experiment(client, eid, models, datasets, folds, repeats, threads) -> float:
    rng = np.random.default_rng(2017)
    skill = {m: 0.01 * i for i, m in enumerate(models)}  # model i is 0.01 better than model i-1 on average
    difficulty = rng.uniform(0.6, 0.9, len(datasets))
    jobs = [(m, d, np.clip(difficulty[j] + skill[m] + rng.normal(0, 0.03, folds * repeats), 0, 1))
            for m in models for j, d in enumerate(datasets)]
    start = time.perf_counter()
    # MLflow prints a "View run" line per run; 1000 of them would bury the results
    with ThreadPoolExecutor(threads) as pool, contextlib.redirect_stdout(io.StringIO()):
        list(pool.map(lambda job: log_cv_scores(job[0], job[1], job[2], folds=folds, repeats=repeats,
                                                experiment_id=eid, client=client), jobs))
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracking-uri", help="a running tracking server (default: start one on PostgreSQL)")
    ap.add_argument("--pg-uri", default=os.environ.get(PG_ENV),
                    help=f"PostgreSQL admin URI for a fresh database (default: env {PG_ENV})")
    ap.add_argument("--keep", action="store_true", help="keep the database and the server's directory")
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--datasets", type=int, default=100)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--chains", type=int, help="default: the product's")
    ap.add_argument("--draws", type=int, help="default: the product's")
    ap.add_argument("--warmup", type=int, help="default: the product's")
    ap.add_argument("--pair-reports", action="store_true",
                    help="give every pair run its figures, HTML report and model check")
    ap.add_argument("--no-log", action="store_true", help="time the matrix without logging: the fits, no runs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(), help="pairs fitted at once (default: core count)")
    ap.add_argument("--threads", type=int, default=16, help="threads logging the runs")
    ap.add_argument("--workers", type=int, default=4, help="uvicorn workers of the server we start")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    server = None
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    if args.tracking_uri:
        url = args.tracking_uri.rstrip("/")
    else:
        if not args.pg_uri:
            ap.error(f"give --tracking-uri, or --pg-uri / {PG_ENV} to start a PostgreSQL-backed server")
        server = PostgresServer(args.pg_uri, workdir, args.workers)
        print(f"store: PostgreSQL database {server.name}", flush=True)
        url = server.url
    print(f"server: {url}   cores: {os.cpu_count()}   jobs: {args.jobs}", flush=True)
    try:
        client = MlflowClient(url)
        eid = client.create_experiment(f"bench-scale-{uuid.uuid4().hex[:8]}")
        models = [f"model{i:02d}" for i in range(args.models)]
        datasets = [f"dataset{j:03d}" for j in range(args.datasets)]
        n = args.folds * args.repeats
        print(f"logging {len(models)} models x {len(datasets)} datasets x {n} scores "
              f"({len(models) * len(datasets)} runs, {len(models) * len(datasets) * n:,} points) ...", flush=True)
        log_s = log_experiment(client, eid, models, datasets, args.folds, args.repeats, args.threads)
        print(f"logged in {log_s:.1f} s", flush=True)

        start = time.perf_counter()
        collected = collect_scores(client, [eid], "accuracy", models)
        fetch_s = time.perf_counter() - start
        assert len(collected.scores) == len(models) * len(datasets) * n, len(collected.scores)
        print(f"fetch: {fetch_s:.2f} s for {len(collected.scores):,} scores ({collected.fetch_method})", flush=True)

        clock = StageClock()
        sampler = {k: v for k, v in (("chains", args.chains), ("draws", args.draws), ("warmup", args.warmup))
                   if v is not None}
        out = compare_matrix(experiment_ids=[eid], metric="accuracy", models=models, tracking_uri=url,
                             seed=args.seed, pair_reports=args.pair_reports, jobs=args.jobs, progress=clock,
                             log=not args.no_log, **sampler)
        used = next(iter(out.pairs.values())).result.settings  # the sampler settings the pairs ran with
        matrix_s = time.perf_counter() - clock.start
        pairs = len(out.pairs)
        sampling = [o.result.diagnostics.get("sampling_seconds") or 0.0 for o in out.pairs.values()]
        rhat = max(o.result.diagnostics.get("rhat_max") or 0.0 for o in out.pairs.values())
        divergences = sum(int(o.result.diagnostics.get("divergences") or 0) for o in out.pairs.values())
        steps = clock.steps(matrix_s)
        if args.no_log:
            status, children = "not logged", []
        else:
            status = client.get_run(out.run_id).info.status
            children = client.search_runs([eid], f"tags.`mlflow.parentRunId` = '{out.run_id}'", max_results=1000)
        summary = {
            "models": len(models), "datasets": len(datasets), "scores_per_run": n, "pairs": pairs,
            "chains": used["chains"], "warmup": used["warmup"], "draws": used["draws"], "jobs": args.jobs,
            "pair_reports": args.pair_reports,
            "cores": os.cpu_count(), "logged": not args.no_log,
            "log_seconds": round(log_s, 2), "fetch_seconds": round(fetch_s, 2),
            "matrix_seconds": round(matrix_s, 1), "seconds_per_pair": round(matrix_s / pairs, 2),
            "steps_seconds": {name: round(seconds, 1) for name, seconds in steps},
            "sampling_seconds_per_pair_mean": round(float(np.mean(sampling)), 2),
            "sampling_seconds_per_pair_max": round(float(np.max(sampling)), 2),
            "rhat_max": round(rhat, 4), "divergences": divergences,
            "parent_status": status, "child_runs_finished": sum(c.info.status == "FINISHED" for c in children),
            "best": str(out.ranking["model"].iloc[0]),
        }
        checked = "fits and model checks" if args.pair_reports else "fits"
        reports = "full reports" if args.pair_reports else "pair runs"
        work = f"{checked}, nothing logged" if args.no_log else \
            f"{checked}, {reports} and logging of {pairs} child runs + parent"
        print(f"matrix: {pairs} pairs in {matrix_s:.1f} s wall with {args.jobs} jobs -> {matrix_s / pairs:.2f} s "
              f"per pair (fetch, {work}); {used['chains']} chains x ({used['warmup']} + {used['draws']}); "
              f"Stan sampling per pair: mean {np.mean(sampling):.2f} s, max {np.max(sampling):.2f} s", flush=True)
        print("  of which " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in steps), flush=True)
        print(f"parent run {out.run_id}: {status}, {summary['child_runs_finished']}/{pairs} child runs FINISHED; "
              f"best: {summary['best']}; R-hat max {rhat:.4f}, divergences {divergences}")
        print(json.dumps(summary))
        return 0 if args.no_log or (status == "FINISHED" and summary["child_runs_finished"] == pairs) else 1
    finally:
        if server is not None:
            server.stop(drop=not args.keep)


if __name__ == "__main__":
    sys.exit(main())
