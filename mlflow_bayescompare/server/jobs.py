"""Comparison jobs run by the server: the comparison run itself is the job record.

* A job is accepted by creating its comparison run RUNNING (stage ``queued``) with the owner's host, pid, process
  start time and boot ids in ``bayescompare.job.*`` tags, so any worker process — or another server sharing the
  store — can report its state from the run alone; nothing about a job lives only in one process's memory.
* The work runs in a bounded pool of spawned processes per server worker (``MLFLOW_BAYESCOMPARE_MAX_JOBS``, default 2),
  and a host-wide slot lock (one ``flock``-ed file per slot) caps concurrent comparisons across all worker
  processes of the servers on this machine sharing the store.  A job waiting for a slot stays ``queued``.
* The job process talks to the server over HTTP (the loopback address the request came in on, or
  ``MLFLOW_BAYESCOMPARE_TRACKING_URI``), so artifacts land where the server serves them and, under basic-auth, the
  work is done with the requesting user's own permissions.
* Runs left RUNNING by a server that is gone are marked FAILED with the reason in ``bayescompare.error``: at start-up
  (:func:`sweep_stale`) and whenever their status is read (:func:`stale_reason`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import multiprocessing
import os
import socket
import tempfile
import threading
import time
import uuid
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mlflow.entities import RunStatus, RunTag, ViewType

from .. import runlog

_logger = logging.getLogger(__name__)

TAG_KIND = runlog.TAG_KIND
TAG_STAGE = runlog.TAG_STAGE
TAG_ERROR = runlog.TAG_ERROR
TAG_HOST = "bayescompare.job.host"
TAG_PID = "bayescompare.job.pid"
TAG_PID_START = "bayescompare.job.pid_start"
TAG_MACHINE_BOOT = "bayescompare.job.machine_boot_id"
TAG_SERVER_BOOT = "bayescompare.job.server_boot_id"
TAG_USER = "bayescompare.job.user"
TAG_REQUEST = "bayescompare.job.request"
TAG_REQUIRE = "bayescompare.require"
KINDS = ("comparison", "matrix")

_PROCESS_BOOT_ID = uuid.uuid4().hex  # fallback when not started by `mlflow server`


# --------------------------------------------------------------------------------------------------- settings


def _env_int(name: str, default: int, low: int = 1) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        _logger.warning("ignoring %s=%r: not an integer", name, raw)
        return default
    return max(low, value)


@dataclass
class Settings:
    """Server settings, read from ``MLFLOW_BAYESCOMPARE_*`` environment variables (see docs/server.md)."""

    max_jobs: int = 2
    max_queue: int = 32
    stale_after: int = 12 * 3600
    max_chains: int = 8
    max_draws: int = 20_000
    max_matrix_models: int = 8
    tracking_uri: str | None = None
    state_dir: Path | None = None
    backend_store_uri: str | None = None

    @classmethod
    def from_env(cls) -> Settings:
        from mlflow.server import BACKEND_STORE_URI_ENV_VAR

        backend = os.environ.get(BACKEND_STORE_URI_ENV_VAR) or None
        state = os.environ.get("MLFLOW_BAYESCOMPARE_STATE_DIR")
        if not state:
            digest = hashlib.sha256((backend or "default").encode()).hexdigest()[:12]
            uid = os.getuid() if hasattr(os, "getuid") else "user"
            state = str(Path(tempfile.gettempdir()) / f"mlflow-bayescompare-{uid}-{digest}")
        return cls(
            max_jobs=_env_int("MLFLOW_BAYESCOMPARE_MAX_JOBS", 2),
            max_queue=_env_int("MLFLOW_BAYESCOMPARE_MAX_QUEUE", 32),
            stale_after=_env_int("MLFLOW_BAYESCOMPARE_STALE_AFTER", 12 * 3600, low=60),
            max_chains=_env_int("MLFLOW_BAYESCOMPARE_MAX_CHAINS", 8),
            max_draws=_env_int("MLFLOW_BAYESCOMPARE_MAX_DRAWS", 20_000, low=10),
            max_matrix_models=_env_int("MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS", 8, low=2),
            tracking_uri=os.environ.get("MLFLOW_BAYESCOMPARE_TRACKING_URI") or None,
            state_dir=Path(state),
            backend_store_uri=backend,
        )


# --------------------------------------------------------------------------------------------------- owners


def machine_boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def server_boot_id() -> str:
    """The id MLflow gives one `mlflow server` start (shared by its workers), else one per process."""
    return os.environ.get("_MLFLOW_SERVER_BOOT_ID") or _PROCESS_BOOT_ID


def process_start(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot (Linux), to tell a live owner from a reused pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22 overall; fields after "comm" start at 3


def owner_tags(pid: int | None = None) -> dict[str, str]:
    pid = os.getpid() if pid is None else pid
    return {
        TAG_HOST: socket.gethostname(),
        TAG_PID: str(pid),
        TAG_PID_START: process_start(pid),
        TAG_MACHINE_BOOT: machine_boot_id(),
        TAG_SERVER_BOOT: server_boot_id(),
    }


def _pid_alive(pid: int, start: str) -> bool:
    if Path("/proc").is_dir():
        current = process_start(pid)
        return bool(current) and (not start or current == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_reason(run, settings: Settings, now_ms: int | None = None) -> str | None:
    """Why the RUNNING job ``run`` can never finish (its owner is gone, or it is older than the grace period)."""
    if run.info.status not in ("RUNNING", "SCHEDULED"):
        return None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    age = (now_ms - (run.info.start_time or now_ms)) / 1000
    if age > settings.stale_after:
        return (f"marked FAILED by the bayescompare server: still RUNNING {age / 3600:.1f} h after it started, "
                f"beyond the grace period of {settings.stale_after} s (MLFLOW_BAYESCOMPARE_STALE_AFTER); the server "
                "that ran it was probably stopped")
    tags = run.data.tags
    host, pid = tags.get(TAG_HOST), tags.get(TAG_PID)
    if not host or not pid or host != socket.gethostname():
        return None  # not ours to judge before the grace period ends
    boot = tags.get(TAG_MACHINE_BOOT)
    if boot and machine_boot_id() and boot != machine_boot_id():
        return (f"marked FAILED by the bayescompare server: the machine {host} restarted since the job was accepted "
                f"by process {pid}")
    try:
        alive = _pid_alive(int(pid), tags.get(TAG_PID_START, ""))
    except ValueError:
        return None
    if not alive:
        return (f"marked FAILED by the bayescompare server: the server process that ran it (pid {pid} on {host}) "
                "is gone — the server was stopped or restarted while the comparison was "
                f"{tags.get(TAG_STAGE, 'queued')}")
    return None


def fail_if_running(client, run_id: str, reason: str) -> bool:
    """End ``run_id`` FAILED with ``reason`` unless it already ended; True if this call ended it."""
    run = client.get_run(run_id)
    if run.info.status not in ("RUNNING", "SCHEDULED"):
        return False
    runlog.fail_run(client, run_id, reason)
    return True


def sweep_stale(client, settings: Settings) -> list[tuple[str, str]]:
    """Mark FAILED every RUNNING comparison/matrix run whose owner is gone or that outlived the grace period."""
    failed = []
    experiment_ids, token = [], None
    while True:
        page = client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=1000, page_token=token)
        experiment_ids += [e.experiment_id for e in page]
        token = page.token
        if not token:
            break
    for start in range(0, len(experiment_ids), 100):
        chunk = experiment_ids[start:start + 100]
        for kind in KINDS:
            flt = f"attributes.status = 'RUNNING' AND tags.`{TAG_KIND}` = '{kind}'"
            token = None
            while True:
                page = client.search_runs(chunk, flt, max_results=1000, page_token=token)
                for run in page:
                    reason = stale_reason(run, settings)
                    if reason and fail_if_running(client, run.info.run_id, reason):
                        failed.append((run.info.run_id, reason))
                token = page.token
                if not token:
                    break
    for run_id, reason in failed:
        _logger.warning("bayescompare: run %s %s", run_id, reason)
    return failed


def sweep_in_background(client_factory: Callable[[], Any], settings: Settings) -> threading.Thread:
    """Run :func:`sweep_stale` once in a daemon thread; only one worker process per host does it at a time."""

    def sweep():
        try:
            settings.state_dir.mkdir(parents=True, exist_ok=True)
            with _try_lock(settings.state_dir / "sweep.lock") as locked:
                if locked:
                    sweep_stale(client_factory(), settings)
        except Exception:  # never take the server down for housekeeping
            _logger.exception("bayescompare: the sweep of stale comparison runs failed")

    thread = threading.Thread(target=sweep, name="bayescompare-sweep", daemon=True)
    thread.start()
    return thread


# --------------------------------------------------------------------------------------------------- locks


@contextlib.contextmanager
def _try_lock(path: Path):
    try:
        import fcntl
    except ImportError:  # not POSIX: no host-wide locks
        yield True
        return
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def job_slot(state_dir: Path, slots: int, poll: float = 0.5):
    """Hold one of ``slots`` host-wide slots (files ``slot-<i>.lock`` under ``state_dir``) for the duration."""
    state_dir.mkdir(parents=True, exist_ok=True)
    while True:
        for i in range(slots):
            with _try_lock(state_dir / f"slot-{i}.lock") as locked:
                if locked:
                    yield i
                    return
        time.sleep(poll)


# --------------------------------------------------------------------------------------------------- runner


class QueueFull(Exception):
    """More jobs are waiting in this worker process than ``MLFLOW_BAYESCOMPARE_MAX_QUEUE``."""


@dataclass
class JobRunner:
    """A per-process pool of spawned job processes.  Only futures live here; the state lives in the runs."""

    settings: Settings
    on_lost: Callable[[str, str], None]  # (run_id, reason): end the run FAILED when its process died
    _pool: ProcessPoolExecutor | None = None
    _pending: dict[str, Future] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def submit(self, spec: dict[str, Any]) -> None:
        with self._lock:
            self._pending = {k: f for k, f in self._pending.items() if not f.done()}
            if len(self._pending) >= self.settings.max_queue:
                raise QueueFull(f"{len(self._pending)} comparisons are already waiting or running in this server "
                                f"process (MLFLOW_BAYESCOMPARE_MAX_QUEUE={self.settings.max_queue}); try again later")
            pool = self._get_pool()
            future = pool.submit(run_job, spec)
            self._pending[spec["run_id"]] = future
        future.add_done_callback(lambda f, run_id=spec["run_id"]: self._done(run_id, f))

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None or getattr(self._pool, "_broken", False):
            self._pool = ProcessPoolExecutor(max_workers=self.settings.max_jobs,
                                             mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def _done(self, run_id: str, future: Future) -> None:
        try:
            outcome = future.result()
            error = None if outcome.get("ok") else outcome.get("error", "the comparison failed")
        except BaseException as exc:  # BrokenProcessPool: the job process died
            error = f"the comparison's process died: {type(exc).__name__}: {exc}"
        if error:
            try:
                self.on_lost(run_id, error)
            except Exception:
                _logger.exception("bayescompare: could not mark run %s FAILED", run_id)


# --------------------------------------------------------------------------------------------------- job process


def run_job(spec: dict[str, Any]) -> dict[str, Any]:
    """The body of a job, in a pool process: wait for a slot, then compare (or run the matrix) into the run.

    ``spec``: ``kind``, ``run_id``, ``tracking_uri``, ``credentials`` (or None), ``state_dir``, ``slots`` and the
    keyword arguments (``kwargs``) of :func:`compare_runs` / the matrix.
    """
    from mlflow import MlflowClient

    run_id = spec["run_id"]
    with _credentials(spec.get("credentials")):
        client = MlflowClient(spec["tracking_uri"])
        try:
            with job_slot(Path(spec["state_dir"]), spec["slots"]):
                tags = owner_tags()
                client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
                with _compile_stage(client, run_id):
                    if spec["kind"] == "matrix":
                        run_matrix(client, run_id, **spec["kwargs"])
                    else:
                        from ..compare import compare_runs

                        compare_runs(**spec["kwargs"], tracking_uri=spec["tracking_uri"], run_id=run_id, log=True)
            return {"ok": True}
        except BaseException as exc:
            message = str(exc) or type(exc).__name__
            with contextlib.suppress(Exception):
                fail_if_running(client, run_id, message)
            return {"ok": False, "error": message}


@contextlib.contextmanager
def _credentials(credentials: dict[str, str] | None):
    """The requesting user's basic-auth credentials for the job's calls to the server (pool processes run one job
    at a time, so the environment is theirs)."""
    keys = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
    saved = {k: os.environ.get(k) for k in keys}
    if credentials:
        os.environ["MLFLOW_TRACKING_USERNAME"] = credentials["username"]
        os.environ["MLFLOW_TRACKING_PASSWORD"] = credentials["password"]
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _compile_stage(client, run_id: str):
    """Show stage ``compiling`` while the Stan model is compiled (the first time on a machine), then ``sampling``.

    Adapter: the engine announces a compile through ``model._announce_compile``; this process runs one job at a
    time, so wrapping it here is safe.
    """
    from .. import model as stan_model

    original_announce = stan_model._announce_compile
    originals = {name: getattr(stan_model, name) for name in ("pystan_model", "cmdstan_model")}
    compiled = []

    def announce():
        compiled.append(True)
        with contextlib.suppress(Exception):
            runlog.set_stage(client, run_id, "compiling")
        original_announce()

    def wrap(fn):
        def wrapper(*args, **kwargs):
            out = fn(*args, **kwargs)
            if compiled:
                compiled.clear()
                with contextlib.suppress(Exception):
                    runlog.set_stage(client, run_id, "sampling")
            return out

        return wrapper

    stan_model._announce_compile = announce
    for name, fn in originals.items():
        setattr(stan_model, name, wrap(fn))
    try:
        yield
    finally:
        stan_model._announce_compile = original_announce
        for name, fn in originals.items():
            setattr(stan_model, name, fn)


def run_matrix(client, run_id: str, *, experiment_ids, metric, models, rope=0.01, greater_is_better=True,
               folds=None, seed=None, filter_string="", layout="auto", drop_incomplete=False, on_duplicate="error",
               prior="hierarchical", chains=4, draws=1000, threshold=0.95, backend="auto", model_tag="model",
               dataset_tag="dataset", tracking_url=None, **_ignored) -> None:
    """Every pair of ``models`` into the RUNNING parent run ``run_id``: like :func:`compare.compare_matrix`
    (same fits, same child runs and parent artifacts) but filling a run created beforehand.

    Adapter until ``compare_matrix`` accepts ``run_id``; pairs are fitted one after another in this process.
    """
    from ..collect import collect_scores, resolve_experiments
    from ..hierarchical import hierarchical_test
    from ..matrix import model_pairs, summarise

    try:
        pairs = model_pairs(models)
        ids = resolve_experiments(client, (), experiment_ids)
        runlog.set_stage(client, run_id, "fetching")
        collected = collect_scores(client, ids, metric, list(models), filter_string=filter_string, layout=layout,
                                   model_tag=model_tag, dataset_tag=dataset_tag, folds=folds)
        tensors = {p: collected.tensor(*p, drop_incomplete=drop_incomplete, on_duplicate=on_duplicate)
                   for p in pairs}
        runlog.set_stage(client, run_id, "sampling")
        settings = dict(rope=rope, greater_is_better=greater_is_better, prior=prior, chains=chains, draws=draws,
                        threshold=threshold, seed=seed, backend=backend, sensitivity=False)
        results = {p: hierarchical_test(tensors[p], **settings) for p in pairs}
        summary = summarise(results, models, metric)
        runlog.set_stage(client, run_id, "reporting")
        target = client.get_run(run_id).info.experiment_id
        bundle = runlog.build_matrix_bundle(summary, [results[p] for p in pairs], experiment_ids=ids,
                                            layout=collected.layout)
    except BaseException as exc:
        runlog.fail_run(client, run_id, exc)
        raise
    with bundle:
        try:
            runlog.set_stage(client, run_id, "logging")
            for p in pairs:
                runlog.log_comparison(client, results[p], tensors[p], metric=metric, experiment_ids=ids,
                                      experiment_id=target, layout=collected.layout, parent_run_id=run_id,
                                      tracking_url=tracking_url)
            client.update_run(run_id, name=bundle.name)
            runlog.write_bundle(client, run_id, bundle)
            runlog.set_stage(client, run_id, "done")
            client.set_terminated(run_id, RunStatus.to_string(RunStatus.FINISHED))
        except BaseException as exc:
            runlog.fail_run(client, run_id, exc)
            raise
