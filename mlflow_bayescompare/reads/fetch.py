"""Metric histories of many runs at once: the server's bulk endpoint, a local store's bulk call, or a thread pool."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from ..vocabulary.progress import Progress, notify

__all__ = ["BULK_ENDPOINT", "BULK_MAX_RUNS", "BULK_MAX_POINTS", "BULK_THREADS", "fetch_histories"]

BULK_ENDPOINT = "/ajax-api/2.0/mlflow/metrics/get-history-bulk"
BULK_MAX_RUNS = 100
BULK_MAX_POINTS = 25_000
BULK_THREADS = 4  # parallel bulk requests (the server's default is 4 workers)
_STORE_CHUNK = 500  # runs per call of a local store's bulk method
_PER_RUN_THREADS = 8


def fetch_histories(client, run_ids: list[str], metric: str, sizes: dict[str, int] | None = None, *,
                    method: str = "auto", progress: Progress | None = None) -> tuple[pd.DataFrame, str]:
    """Metric histories of many runs as DataFrame[run_id, step, value, timestamp] (latest value per step).

    ``method``: "bulk" (the server's get-history-bulk endpoint), "store" (a local store's bulk call),
    "threads" (``get_metric_history`` in a thread pool), "sequential", or "auto" (the fastest available;
    "bulk" falls back to "threads" when the server lacks the endpoint).  ``sizes`` estimates points per run.
    """
    store = client._tracking_client.store
    if method == "auto":
        method = "bulk" if hasattr(store, "get_host_creds") else "store" if hasattr(
            store, "get_metric_history_bulk") else "threads"
    if method == "bulk":
        rows = _bulk_rest(client, store.get_host_creds(), run_ids, metric, sizes or {}, progress)
        if rows is None:
            method, rows = "threads", _per_run(client, run_ids, metric, _PER_RUN_THREADS, progress)
    elif method == "store":
        rows = []
        for i in range(0, len(run_ids), _STORE_CHUNK):
            chunk = run_ids[i:i + _STORE_CHUNK]
            rows += [m.to_dict() for m in store.get_metric_history_bulk(chunk, metric, max_results=2**62)]
            _report(progress, i + len(chunk), len(run_ids))
    else:
        workers = 1 if method == "sequential" else _PER_RUN_THREADS
        rows = _per_run(client, run_ids, metric, workers, progress)
    hist = pd.DataFrame(rows, columns=["run_id", "step", "value", "timestamp"])
    hist = hist.sort_values(["run_id", "step", "timestamp"], kind="stable")
    return hist.drop_duplicates(["run_id", "step"], keep="last").reset_index(drop=True), method


class _NoBulkEndpoint(Exception):
    """The server answered 404 for the bulk endpoint (another server, or a proxy in front of MLflow)."""


def _bulk_rest(client, creds, run_ids, metric, sizes, progress) -> list[dict] | None:
    """Rows from the ajax bulk endpoint, a few chunks in parallel; None if the server lacks the endpoint."""
    from mlflow.utils.rest_utils import http_request, verify_rest_response

    def fetch(chunk: list[str]) -> list[dict]:
        params = [("run_id", rid) for rid in chunk] + [("metric_key", metric), ("max_results", BULK_MAX_POINTS)]
        resp = http_request(creds, BULK_ENDPOINT, "GET", params=params)
        if resp.status_code == 404:
            raise _NoBulkEndpoint
        got = verify_rest_response(resp, BULK_ENDPOINT).json().get("metrics", [])
        if len(got) < BULK_MAX_POINTS:
            return got
        if len(chunk) > 1:  # may be cut off: halve the chunk
            return fetch(chunk[: len(chunk) // 2]) + fetch(chunk[len(chunk) // 2:])
        return _per_run(client, chunk, metric, 1, None)  # one run beyond the cap: page it the usual way

    rows, done = [], 0
    per_chunk = min(BULK_MAX_RUNS, max(10, -(-len(run_ids) // BULK_THREADS)))
    try:
        with ThreadPoolExecutor(BULK_THREADS) as pool:
            for chunk, got in pool.map(lambda c: (c, fetch(c)), _chunks(run_ids, sizes, per_chunk)):
                rows += got
                done += len(chunk)
                _report(progress, done, len(run_ids))
    except _NoBulkEndpoint:
        return None
    return rows


def _chunks(run_ids, sizes, max_runs=BULK_MAX_RUNS) -> list[list[str]]:
    """Groups of at most ``max_runs`` runs whose expected points add up to at most ``BULK_MAX_POINTS``."""
    out, cur, points = [], [], 0
    for rid in run_ids:
        n = sizes.get(rid, 100)
        if cur and (len(cur) == max_runs or points + n > BULK_MAX_POINTS):
            out.append(cur)
            cur, points = [], 0
        cur.append(rid)
        points += n
    return out + [cur] if cur else out


def _per_run(client, run_ids, metric, workers, progress) -> list[dict]:
    """``get_metric_history`` of each run in a pool of ``workers`` threads."""
    def one(rid):
        return [{"run_id": rid, "step": m.step, "value": m.value, "timestamp": m.timestamp}
                for m in client.get_metric_history(rid, metric)]

    rows = []
    with ThreadPoolExecutor(workers) as pool:
        for i, got in enumerate(pool.map(one, run_ids), 1):
            rows += got
            if i % 100 == 0 or i == len(run_ids):
                _report(progress, i, len(run_ids))
    return rows


def _report(progress: Progress | None, done: int, total: int) -> None:
    notify(progress, "fetching", f"read metric histories of {done}/{total} runs")
