"""CPU time of a process tree from Linux's /proc, shared by the benchmarks that count the CPU of worker processes
(httpstan's samplers, PyMC's chains): on a loaded machine far steadier than wall time."""

from __future__ import annotations

import os
import resource


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid``, from the parent pid of every process in /proc (the per-thread ``children``
    files miss processes forked by a thread that has since exited, as httpstan's pool workers are)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parent[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, frontier = [], {pid}
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        out += kids
        frontier = set(kids)
    return out


def ticks(pid: int) -> int | None:
    """utime + stime of ``pid`` in clock ticks (``os.sysconf("SC_CLK_TCK")`` per second), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def cpu_now() -> float:
    """CPU seconds so far of this process, of its reaped children (PyMC's chain processes, the compiler) and of its
    live descendants (httpstan's sampler processes, read from /proc)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    if os.path.isdir("/proc"):
        tick = os.sysconf("SC_CLK_TCK")
        total += sum(t for t in map(ticks, descendants(os.getpid())) if t is not None) / tick
    return total
