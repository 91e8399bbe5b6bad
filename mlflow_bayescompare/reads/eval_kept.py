"""A reader of ``mlflow.genai.evaluate`` runs that keeps what it read of each trace, so that a later read asks MLflow
only for the traces started since (a watch's continue look, :mod:`..pipeline.watchevals`).

What is kept of a trace is what :func:`.eval_traces.trace_entries` makes of it but its inputs and tags (its item
key, ``@mlflow.test`` case, time and the values that counted): enough to pair by inputs or test case, not by a
field (``pair_key``).  A later read searches the run's traces started at ``since_ms`` or later (the caller's last
read less a clock margin), and each replaces its kept entry; what it cannot see is an assessment added or overridden
on an earlier trace, or a trace deleted: a caller that decides on such a read reads the run whole first.  A run with
fewer traces than its logged dataset has rows (not settled, :func:`.eval_traces.read_traces`) is read whole.
"""

from __future__ import annotations

from .eval_traces import expected_items, linked_traces, read_entries, trace_entries, traces_units
from .evalitems import Units

__all__ = ["TracesKept"]

_UNKEPT = ("inputs", "tags")


class TracesKept:
    """A genai reader for :func:`.evaluations.read_evaluations` (``read_genai``): every run whole, or, for a run
    in ``kept`` (its trace id → entry), the traces started since ``since_ms`` merged with the kept ones.  After the
    read: ``runs`` (each run's entries, to keep), ``narrow`` (the runs read so) and ``changed`` (the runs read
    whole whose kept traces are not all as kept: changed or deleted since)."""

    def __init__(self, kept: dict[str, dict] | None = None, since_ms: int | None = None) -> None:
        self.kept, self.since_ms = kept or {}, since_ms
        self.runs: dict[str, dict] = {}
        self.narrow: list[str] = []
        self.changed: list[str] = []

    def __call__(self, client, run, *, latency: bool = False) -> Units:
        rid = run.info.run_id
        before = self.kept.get(rid)
        if before is not None and self.since_ms is not None:
            infos = linked_traces(client, run, since_ms=self.since_ms)
            entries = {**before, **trace_entries(client, infos, rid, latency=latency)}
            expected = expected_items(run)
            if expected is None or len(entries) >= expected:
                self.runs[rid] = _unkept(entries)
                self.narrow.append(rid)
                return traces_units(entries, [])
        entries, notes = read_entries(client, run, latency=latency)
        self.runs[rid] = _unkept(entries)
        if before is not None and any(self.runs[rid].get(tid) != entry for tid, entry in before.items()):
            self.changed.append(rid)
        return traces_units(entries, notes)


def _unkept(entries: dict[str, dict]) -> dict[str, dict]:
    return {tid: {k: v for k, v in e.items() if k not in _UNKEPT} for tid, e in entries.items()}
