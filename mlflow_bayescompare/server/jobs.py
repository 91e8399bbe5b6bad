"""Comparison jobs run by the server: the comparison run itself is the job record.

* A job is accepted by creating its comparison run RUNNING (stage ``queued``) with its owner's ``bayescompare.job.*``
  tags (:mod:`.owners`), so any worker process, or another server sharing the store, can report its state from the
  run alone; nothing about a job lives only in one process's memory.
* Each server worker has a small pool of spawned job processes (``MLFLOW_BAYESCOMPARE_MAX_JOBS``), each in its own
  process group; a host-wide slot lock caps the comparisons running at once on the machine.  A job waiting for a
  slot stays ``queued``.  A place in the queue (``MLFLOW_BAYESCOMPARE_MAX_QUEUE``) is reserved before the run is
  created, so a request refused with 503 leaves nothing behind.
* The job process talks to the server over HTTP (the loopback address the request came in on, or
  ``MLFLOW_BAYESCOMPARE_TRACKING_URI``), with the requesting user's credentials under basic-auth.
* When the server stops, :meth:`JobRunner.stop` ends the runs of its jobs FAILED with that reason and kills their
  processes; when a job process dies, its run ends FAILED saying so.  A reason already recorded is never replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from mlflow.entities import RunTag

from ..runs.runlog import fail_if_running
from ..sampling.pools import pool_processes
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.options import ENGINES, RAY_ADDRESS_ENV, EvalOptions, FitOptions, RankOptions, SourceOptions
from .locks import job_slot
from .owners import owner_tags

__all__ = ["Settings", "QueueFull", "JobSpec", "JobRunner", "run_job", "MAX_MATRIX_MODELS", "ENGINE_ENV"]

ENGINE_ENV = "MLFLOW_BAYESCOMPARE_ENGINE"
#: the default of MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS by engine: 28 pairs on the server's own CPUs, 1,225 on a
#: Ray cluster (about an hour of one CPU: a cluster of tens of CPUs fits them in minutes)
MAX_MATRIX_MODELS = {"local": 8, "ray": 50}

_logger = logging.getLogger(__name__)


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


def _env_engine() -> str:
    """``MLFLOW_BAYESCOMPARE_ENGINE``: where the server's matrices fit their pairs (local, or ray: the cluster at
    ``RAY_ADDRESS``); an unknown value is ignored, with a warning."""
    raw = (os.environ.get(ENGINE_ENV) or "local").strip().lower()
    if raw not in ENGINES:
        _logger.warning("ignoring %s=%r: one of %s", ENGINE_ENV, raw, ", ".join(ENGINES))
        return "local"
    return raw


def _env_flag(name: str, default: bool = True) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else raw.strip().lower() not in ("0", "false", "no", "off", "")


@dataclass
class Settings:
    """Server settings, read from ``MLFLOW_BAYESCOMPARE_*`` environment variables (README, *Settings*)."""

    max_jobs: int = 2
    max_queue: int = 32
    stale_after: int = 12 * 3600
    max_chains: int = 8
    max_draws: int = 20_000
    max_matrix_models: int = 8
    engine: str = "local"
    tracking_uri: str | None = None
    state_dir: Path | None = None
    backend_store_uri: str | None = None
    sweep: bool = True
    compile: bool = True

    @classmethod
    def from_env(cls) -> Settings:
        backend, engine = mlflow_internals.backend_store_uri(), _env_engine()
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
            max_matrix_models=_env_int("MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS", MAX_MATRIX_MODELS[engine], low=2),
            engine=engine,
            tracking_uri=os.environ.get("MLFLOW_BAYESCOMPARE_TRACKING_URI") or None,
            state_dir=Path(state),
            backend_store_uri=backend,
            sweep=_env_flag("MLFLOW_BAYESCOMPARE_SWEEP"),
            compile=_env_flag("MLFLOW_BAYESCOMPARE_COMPILE"),
        )


class QueueFull(Exception):
    """More jobs are waiting or running in this worker process than ``MLFLOW_BAYESCOMPARE_MAX_QUEUE``."""


@dataclass(frozen=True)
class JobSpec:
    """What a job process needs: the kind of job, its RUNNING run, the option objects of the request, and how to
    reach the server (as the requesting user).  A comparison of evaluation runs (``evals``) has its own options
    (``evals``) and no source or fit."""

    kind: str  # "comparison", "matrix", "ranking" or "evals"
    run_id: str
    source: SourceOptions | None
    fit: FitOptions | RankOptions | None  # a ranking's settings are RankOptions
    models: tuple[str, ...]  # (model A, model B) of a comparison; the models of a matrix or a ranking; the systems
    tracking_uri: str
    state_dir: str
    slots: int
    pair_reports: bool = False  # a matrix's: ModelsOptions.pair_reports
    refresh: bool = False  # a matrix's: MatrixOptions.refresh
    engine: str = "local"  # a matrix's: the server's engine (Settings.engine)
    credentials: dict[str, str] | None = field(default=None, repr=False)
    evals: EvalOptions | None = None  # a comparison of evaluation runs: its options


class JobRunner:
    """A per-process pool of spawned job processes.  Only futures live here; the state lives in the runs.

    ``store()`` is a client on the server's own store, used to end runs FAILED when their job cannot.
    """

    def __init__(self, settings: Settings, store: Callable[[], Any]):
        self.settings, self._store = settings, store
        self._pool: ProcessPoolExecutor | None = None
        self._generation = 0  # of the pool: a broken pool is replaced by the next generation
        self._pending: dict[str, tuple[JobSpec, Future]] = {}
        self._reserved = 0
        self._resubmitted: set[str] = set()
        self._groups: dict[int, set[int]] = {}  # process groups of the job processes, per pool generation
        self._stopping: str | None = None
        self._watchdog: threading.Thread | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def reserve(self):
        """Reserve a place in the queue before the job's run exists: :class:`QueueFull` when there is none.
        Yields the function that submits the job in that place; leaving without submitting frees it."""
        with self._lock:
            if self._stopping:
                raise QueueFull("the server is stopping; try again once it is back")
            if len(self._pending) + self._reserved >= self.settings.max_queue:
                raise QueueFull(f"{len(self._pending) + self._reserved} comparisons are already waiting or running "
                                f"in this server process (MLFLOW_BAYESCOMPARE_MAX_QUEUE={self.settings.max_queue}); "
                                "try again later")
            self._reserved += 1
        try:
            yield self._submit
        finally:
            with self._lock:
                self._reserved -= 1

    def pending(self) -> set[str]:
        """The run ids of the jobs this process has submitted and not yet seen end (their end recorded)."""
        with self._lock:
            return set(self._pending)

    def _submit(self, spec: JobSpec) -> None:
        with self._lock:
            pool = self._get_pool()
            future = pool.submit(run_job, spec)
            self._pending[spec.run_id] = (spec, future)
            self._groups.setdefault(self._generation, set()).update(pool_processes(pool))
            generation = self._generation
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch, name="bayescompare-jobs", daemon=True)
                self._watchdog.start()
        future.add_done_callback(partial(self._done, spec, generation))

    def _watch(self, every: float = 1.0) -> None:
        """Kill the process group of a job process that died: the Stan sampler processes it forked hold the pipe by
        which the pool would notice its death; once they are gone, the pool reports it (:meth:`_done`)."""
        while self._stopping is None:
            time.sleep(every)
            for process in pool_processes(self._pool).values():
                if process.exitcode is not None:
                    with contextlib.suppress(OSError):
                        os.killpg(process.pid, signal.SIGKILL)

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None or getattr(self._pool, "_broken", False):
            self._generation += 1
            self._pool = ProcessPoolExecutor(max_workers=self.settings.max_jobs,
                                             mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_job_process_started)
        return self._pool

    def _done(self, spec: JobSpec, generation: int, future: Future) -> None:
        """A job ended: record why when its process could not (it died, or the server is stopping), then forget it
        (until then, a status read leaves its run to this runner: :meth:`pending`)."""
        try:
            outcome = future.result()
            error = None if outcome.get("ok") else outcome.get("error") or "the comparison failed"
        except BaseException as exc:  # BrokenProcessPool: a job process died; CancelledError: stopped
            error = self._lost(spec, generation, exc, self._stopping)
        if error:
            try:
                fail_if_running(self._store(), spec.run_id, error)
            except Exception:
                _logger.exception("bayescompare: could not mark run %s FAILED", spec.run_id)
        with self._lock:
            if self._pending.get(spec.run_id, (None, None))[1] is future:
                del self._pending[spec.run_id]

    def _lost(self, spec: JobSpec, generation: int, exc: BaseException, stopping: str | None) -> str | None:
        """Why a job's future failed, or None when it was submitted again (it had not started)."""
        stage = _stage(self._store(), spec.run_id)
        if stopping:
            return _stopped(stopping, stage)
        if isinstance(exc, BrokenProcessPool):
            self._kill_groups([generation])  # what the dead process started (its Stan samplers), and its peers
            if stage == "queued" and spec.run_id not in self._resubmitted:
                self._resubmitted.add(spec.run_id)  # it never started: another process can run it
                self._submit(spec)
                return None
        return (f"the comparison's process ended abruptly while the comparison was {stage} (a job process of this "
                f"server was killed, or ran out of memory: {type(exc).__name__})")

    def stop(self, why: str) -> None:
        """End the run of every job of this process FAILED (the server stops because of ``why``), then kill the
        job processes; no job is accepted afterwards."""
        with self._lock:
            self._stopping = why
            pending = [spec for spec, future in self._pending.values() if not future.done()]
        store = self._store()
        for spec in pending:
            try:
                fail_if_running(store, spec.run_id, _stopped(why, _stage(store, spec.run_id)))
            except Exception:
                _logger.exception("bayescompare: could not mark run %s FAILED", spec.run_id)
        self._kill_groups()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _kill_groups(self, generations=None) -> None:
        """SIGKILL the process groups of the job processes of these pool generations (default: all)."""
        with self._lock:
            groups = set()
            for generation in list(self._groups) if generations is None else generations:
                groups |= self._groups.pop(generation, set())
            if generations is None:
                groups |= set(pool_processes(self._pool))
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)


def _stage(store, run_id: str) -> str:
    try:
        return store.get_run(run_id).data.tags.get(T.STAGE) or "queued"
    except Exception:
        return "running"


def _stopped(why: str, stage: str) -> str:
    return (f"the bayescompare server was stopped ({why}) while the comparison was {stage}; "
            "start the comparison again")


def _job_process_started() -> None:
    """Pool initializer: each job process leads its own process group (its Stan sampler processes join it), so
    the server's own signals do not reach the work half-way, and the server can stop a job with everything it
    started; and the group ends itself when the server worker that started it is gone (a crash), instead of
    waiting forever for work."""
    if not hasattr(os, "setpgrp"):
        return
    os.setpgrp()
    parent = os.getppid()

    def exit_with_parent():
        while os.getppid() == parent:
            time.sleep(1.0)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=exit_with_parent, name="bayescompare-parent-watch", daemon=True).start()


# --------------------------------------------------------------------------------------------------- job process


def run_job(spec: JobSpec) -> dict[str, Any]:
    """The body of a job, in a job process: wait for a slot, then compare (or run the matrix, or rank) into the run,
    whose stage tag follows the work (``compiling`` too, while the backend compiles a program or waits for another
    process's compile of it)."""
    from mlflow import MlflowClient

    from ..pipeline.compare import compare_matrix, compare_runs, rank_runs
    from ..pipeline.evals import compare_evaluation_runs, rank_evaluation_runs

    with mlflow_internals.as_user(spec.credentials):  # a job process runs one job at a time: the environment is its
        client = MlflowClient(spec.tracking_uri)
        try:
            with job_slot(Path(spec.state_dir), spec.slots):
                client.log_batch(spec.run_id, tags=[RunTag(k, v) for k, v in owner_tags().items()])
                common = dict(source=spec.source, tracking_uri=spec.tracking_uri, run_id=spec.run_id)
                if spec.kind == "evals":
                    evals = rank_evaluation_runs if spec.evals.ranked else compare_evaluation_runs
                    evals(options=spec.evals, tracking_uri=spec.tracking_uri, run_id=spec.run_id)
                elif spec.kind == "ranking":
                    rank_runs(models=spec.models, rank=spec.fit, **common)
                elif spec.kind == "matrix":
                    compare_matrix(models=spec.models, pair_reports=spec.pair_reports, fit=spec.fit, **common,
                                   refresh=spec.refresh, jobs=1 if spec.engine == "local" else None,
                                   engine=spec.engine,
                                   ray_address=os.environ.get(RAY_ADDRESS_ENV) or None)
                else:
                    compare_runs(model_a=spec.models[0], model_b=spec.models[1], fit=spec.fit, **common)
            return {"ok": True}
        except BaseException as exc:
            message = str(exc) or type(exc).__name__
            with contextlib.suppress(Exception):
                fail_if_running(client, spec.run_id, message)
            return {"ok": False, "error": message}

