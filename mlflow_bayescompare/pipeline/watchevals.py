"""A look's read of two ``mlflow.genai.evaluate`` runs by what the watch run keeps (issue 41: "a look on a grown run
costs reading the new runs"): each trace read, its item key and the values that counted (``watch_reads.json``,
:mod:`..reads.eval_kept`), and when the read began.  A continue look asks MLflow only for the traces started since
then, less :data:`.watchsources.CLOCK_MARGIN_MS`, and merges them with the kept ones: the same items, values and
order as the whole read, as long as no earlier trace changed; an assessment added or overridden on an earlier trace
is not seen so, and a look that would decide reads every trace first (:mod:`.watchlook`).

Read whole as before: runs paired by a field (``pair_key``), tables (a long table is one artifact rewritten whole,
``eval_results_table.json`` too), a run not yet settled, and a watch run that keeps none of this (an older one).
"""

from __future__ import annotations

import time

from ..reads.eval_kept import TracesKept
from ..reads.eval_traces import LATENCY
from ..sequential import Design
from ..vocabulary.options import WatchOptions
from .watchsources import CLOCK_MARGIN_MS, READS_VERSION, STATE_VERSION, WatchData, read_evals

__all__ = ["read_kept_evals"]

_KIND = "traces"


def read_kept_evals(design: Design, watch: WatchOptions, kept: dict | None, *, narrow: bool,
                    tracking_uri: str | None = None, can_read=None, progress=None) -> WatchData:
    """The two runs' paired values (:func:`.watchsources.read_evals`), their traces read by ``kept`` (the last
    look's reads) when ``narrow`` and it can (the module's docstring), with what the next look keeps."""
    if watch.pair_key is not None or watch.table_artifact is not None:
        return read_evals(design, watch, tracking_uri=tracking_uri, can_read=can_read, progress=progress)
    latency = watch.scorer == LATENCY
    usable = kept is not None and kept.get("v") == READS_VERSION and kept.get("kind") == _KIND \
        and kept.get("latency") == latency
    since = int(kept["read_at"]) - CLOCK_MARGIN_MS if usable and narrow else None
    reader = TracesKept(kept["runs"] if usable else None, since)
    read_at = int(time.time() * 1000)
    data = read_evals(design, watch, tracking_uri=tracking_uri, can_read=can_read, progress=progress,
                      read_genai=reader)
    if reader.runs:  # genai runs
        data.state = {"v": STATE_VERSION, "kind": _KIND}
        data.reads = {"v": READS_VERSION, "kind": _KIND, "read_at": read_at, "latency": latency,
                      "runs": reader.runs}
        data.reused, data.changed = len(reader.narrow), list(reader.changed)
    return data
