"""Who owns a job's run, and what to do with runs whose owner is gone.

A job's run records the host, pid, process start time and boot ids of the process doing the work (the server
worker while the job is queued, the job process once it runs) as JSON in one tag, ``bayescompare.job``.  A run
still RUNNING whose owner on this host is gone, or that outlived the grace period, can never finish:
:func:`stale_reason` says why, and :func:`sweep_stale` (at start-up) ends every such run FAILED, keeping a reason
already recorded.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from pathlib import Path

from mlflow.entities import ViewType

from ..runs.runlog import fail_if_running
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T

__all__ = ["machine_boot_id", "server_boot_id", "process_start", "owner_tags", "owner", "stale_reason", "sweep_stale"]

_logger = logging.getLogger(__name__)
_PROCESS_BOOT_ID = uuid.uuid4().hex  # fallback when not started by `mlflow server`
_RUNNING = ("RUNNING", "SCHEDULED")


def machine_boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def server_boot_id() -> str:
    """The id MLflow gives one `mlflow server` start (shared by its workers), else one per process."""
    return mlflow_internals.server_boot_id() or _PROCESS_BOOT_ID


def process_start(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot (Linux), to tell a live owner from a reused pid; ''
    when there is no such process, or only its zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()  # fields after "comm" start at 3
    return "" if fields[0] in ("Z", "X") else fields[19]  # field 3 the state, field 22 the start time


def owner_tags(pid: int | None = None, host: str | None = None) -> dict[str, str]:
    """The ``bayescompare.job`` tag naming ``pid`` (default: this process) on ``host`` (default: this one) as the
    owner of a job's run."""
    pid = os.getpid() if pid is None else pid
    return {T.JOB_OWNER: json.dumps({
        "host": host or socket.gethostname(), "pid": pid, "pid_start": process_start(pid),
        "machine_boot_id": machine_boot_id(), "server_boot_id": server_boot_id(),
    })}


def owner(run) -> dict:
    """The owner recorded on ``run`` (:func:`owner_tags`), or ``{}`` when none is, or it is unreadable."""
    try:
        found = json.loads(run.data.tags.get(T.JOB_OWNER) or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


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


def stale_reason(run, stale_after: int, now_ms: int | None = None) -> str | None:
    """Why the RUNNING job ``run`` can never finish (its owner is gone, or it is older than ``stale_after``
    seconds), or None (a watch run, RUNNING between looks by design: :mod:`..runs.watchrun`)."""
    if run.info.status not in _RUNNING or run.data.tags.get(T.KIND) == T.WATCH:
        return None  # a watch run stays RUNNING between its looks, which its user's calls make, not a server
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    age = (now_ms - (run.info.start_time or now_ms)) / 1000
    if age > stale_after:
        return (f"marked FAILED by the bayescompare server: still RUNNING {age / 3600:.1f} h after it started, "
                f"beyond the grace period of {stale_after} s (MLFLOW_BAYESCOMPARE_STALE_AFTER); the server "
                "that ran it was probably stopped")
    recorded = owner(run)
    host, pid = recorded.get("host"), recorded.get("pid")
    if not host or not pid or host != socket.gethostname():
        return None  # not ours to judge before the grace period ends
    boot = recorded.get("machine_boot_id")
    if boot and machine_boot_id() and boot != machine_boot_id():
        return (f"marked FAILED by the bayescompare server: the machine {host} restarted since the job was accepted "
                f"by process {pid}")
    try:
        alive = _pid_alive(int(pid), str(recorded.get("pid_start") or ""))
    except (TypeError, ValueError):
        return None
    if alive:
        return None
    stage = run.data.tags.get(T.STAGE, "queued")
    if recorded.get("server_boot_id") == server_boot_id():  # this server still runs: its job process alone is gone
        return (f"marked FAILED by the bayescompare server: the process that ran it (pid {pid} on {host}) ended "
                f"abruptly while the comparison was {stage} (killed, or out of memory)")
    return (f"marked FAILED by the bayescompare server: the process that ran it (pid {pid} on {host}) is gone; "
            f"the server was stopped or restarted while the comparison was {stage}")


def sweep_stale(client, stale_after: int) -> list[tuple[str, str]]:
    """End FAILED every RUNNING job run (of every kind) whose owner is gone or that outlived the grace period;
    the ``(run id, reason)`` of each."""
    failed = []
    for chunk in _experiment_chunks(client):
        for kind in T.KINDS:
            flt = f"attributes.status = 'RUNNING' AND tags.`{T.KIND}` = '{kind}'"
            token = None
            while True:
                page = client.search_runs(chunk, flt, max_results=1000, page_token=token)
                for run in page:
                    reason = stale_reason(run, stale_after)
                    if reason and fail_if_running(client, run.info.run_id, reason):
                        failed.append((run.info.run_id, reason))
                token = page.token
                if not token:
                    break
    for run_id, reason in failed:
        _logger.warning("bayescompare: run %s %s", run_id, reason)
    return failed


def _experiment_chunks(client, size: int = 100):
    ids, token = [], None
    while True:
        page = client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=1000, page_token=token)
        ids += [e.experiment_id for e in page]
        token = page.token
        if not token:
            break
    return [ids[start:start + size] for start in range(0, len(ids), size)]
