"""A real Ray cluster on this machine for the tests and the benchmarks (``tests/test_ray_engine.py``,
``benchmarks/bench_ray.py``): a head node (``ray start --head``) and a second node (``ray start --address …``), one
CPU each, each with its own temporary folder, started within a time limit.  Linux only (it reads ``/proc``).

Each ``ray start`` runs in a new session (``start_new_session``), and every process it starts (the GCS, the raylets,
their agents and workers) stays in that session: :meth:`RayCluster.stop` ends exactly the processes of the sessions it
created, found in ``/proc``, and nothing else; ``ray stop`` would stop every Ray cluster of the machine's user.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["RayCluster"]

#: the folder that holds the package: the nodes' workers import it from there
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    """A port free on the loopback now (the operating system's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayCluster:
    """``address`` (``127.0.0.1:port``) of a two-node cluster (``nodes=1``: the head alone), its nodes started with
    ``env`` added to this process's environment (a variable set to None: removed); :meth:`stop` ends it."""

    def __init__(self, tmp: Path, timeout: float = 180, env: dict[str, str | None] | None = None, nodes: int = 2):
        self.tmp, self.sessions, self.env, self.temp_dirs = tmp, [], env or {}, []
        self.address = f"127.0.0.1:{_free_port()}"
        deadline = time.monotonic() + timeout
        port = self.address.rpartition(":")[2]
        try:
            self._start(["--head", "--port", port, "--include-dashboard=false", "--ray-client-server-port",
                         str(_free_port())], tmp / "head", deadline)
            if nodes > 1:
                self._start(["--address", self.address], tmp / "node", deadline)
        except BaseException:
            self.stop()
            raise

    def _start(self, args: list[str], folder: Path, deadline: float) -> None:
        """``ray start`` with its log in ``folder`` and its temporary folder (its sessions' Unix sockets, at most 107
        bytes of path: under pytest-xdist's tmp_path a socket's path ran over) a short one of the system's."""
        folder.mkdir(parents=True)
        temp = Path(tempfile.mkdtemp(prefix="ray-"))
        self.temp_dirs.append(temp)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               "RAY_USAGE_STATS_ENABLED": "0"}
        env.pop("RAY_ADDRESS", None)
        env.update(self.env)
        env = {name: value for name, value in env.items() if value is not None}
        command = [shutil.which("ray") or "ray", "start", *args, "--num-cpus", "1", "--temp-dir", str(temp),
                   "--node-ip-address", "127.0.0.1", "--dashboard-agent-listen-port", str(_free_port()),
                   "--disable-usage-stats"]
        with open(folder / "start.log", "w") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                    cwd=folder)
        self.sessions.append(proc.pid)  # the session's id is its leader's pid
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"ray start {' '.join(args[:2])} took too long; {folder / 'start.log'}") from None
        if code != 0:
            raise RuntimeError(f"ray start failed ({code}): {(folder / 'start.log').read_text()[-2000:]}")

    def processes(self) -> dict[int, str]:
        """The live processes of the cluster's sessions: pid -> command line."""
        found = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and _session(entry) in self.sessions:
                try:
                    found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                except OSError:
                    continue
        return found

    def workers(self, actor: str) -> list[int]:
        """The pids of the cluster's worker processes running the Ray actor class ``actor``."""
        return [pid for pid, command in self.processes().items() if command.startswith(f"ray::{actor}")]

    @staticmethod
    def parent(pid: int) -> int | None:
        """The parent pid of ``pid`` (None when it is gone)."""
        try:
            return int((Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()[1])
        except OSError:
            return None

    def stop(self, grace: float = 10) -> None:
        """SIGTERM every process of the sessions this cluster created, then SIGKILL what is left after ``grace``."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.processes():
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + grace
            while self.processes() and time.monotonic() < end:
                time.sleep(0.2)
        for folder in self.temp_dirs:
            shutil.rmtree(folder, ignore_errors=True)


def _session(proc: Path) -> int | None:
    """The session id of a ``/proc/<pid>`` entry (field 6 of its stat), None when it is gone or a zombie (dead,
    waiting for its parent to read its status)."""
    try:
        fields = (proc / "stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[3])
