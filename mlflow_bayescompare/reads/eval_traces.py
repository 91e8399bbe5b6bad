"""The items of an ``mlflow.genai.evaluate`` run, as MLflow records them: the run's traces, read without their spans
(a trace's inputs, tags, latency and assessments are all in its info), and on each trace the assessments that count.

Which assessment counts, per trace and name: a feedback (expectations are the data's, not a score) that is valid
(an override, ``mlflow.override_feedback``, marks the one it replaces invalid) and made for this run or for no run
in particular (a trace evaluated by several runs carries each run's assessments, told apart by their metadata
``mlflow.assessment.sourceRunId``; a human's ``mlflow.log_feedback`` names no run): the latest of those holding a
value.  This is the assessment MLflow's UI shows first for the run (it drops invalid ones and other runs', and
orders by time, newest first).  A (trace, name) whose assessments all carry an error instead of a value is counted
in the scorer's errors, and has no value.

Traces are written asynchronously: what this process still holds is flushed before the first page, and a run whose
logged dataset has more rows than the run has traces is read again, a few times, before the shortfall is said.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mlflow.exceptions import MlflowException

from ..vocabulary import mlflow_internals as mi
from .evalitems import Units, inputs_key

__all__ = ["LATENCY", "RETRY_DELAYS", "read_traces", "read_entries", "trace_entries", "traces_units", "linked_traces",
           "expected_items", "chosen_assessments"]

#: the pseudo-scorer of a trace's latency (its ``execution_duration``, in milliseconds as MLflow records it): read
#: only when asked for by name, and only from runs with no assessment of that name
LATENCY = "latency"
#: seconds to wait before each new read of a run with fewer traces than its dataset has rows
RETRY_DELAYS = (0.5, 1.0, 2.0)
_SPAN_THREADS = 8


def read_traces(client, run, *, latency: bool = False) -> Units:
    """The run's traces as units (one a trace; its default item: the key of its inputs) and the values of the
    assessments that count."""
    return traces_units(*read_entries(client, run, latency=latency))


def read_entries(client, run, *, latency: bool = False) -> tuple[dict[str, dict], list[str]]:
    """The run's settled traces (see the module's docstring) as :func:`trace_entries`, and what was noticed."""
    infos, notes = _settled(client, run)
    return trace_entries(client, infos, run.info.run_id, latency=latency), notes


def trace_entries(client, infos, run_id: str, *, latency: bool = False) -> dict[str, dict]:
    """Each trace's unit (:data:`.evalitems.UNIT_COLUMNS`) with its ``scores`` (name, value, source) and the names
    ``errored``, by trace id; the evaluation's scorer traces left out."""
    infos = [i for i in infos if mi.SCORER_TRACE_TAG not in (i.tags or {})]
    inputs = _inputs(client, infos)
    out = {}
    for info in infos:
        tid, tags = info.trace_id, dict(info.tags or {})
        chosen, failed = chosen_assessments(info.assessments or [], run_id)
        scores = [[name, a.feedback.value, str(a.source.source_type)] for name, a in chosen.items()]
        if latency and LATENCY not in chosen and LATENCY not in failed and info.execution_duration is not None:
            scores.append([LATENCY, info.execution_duration, "TRACE"])
        out[tid] = {"unit": tid, "order": [info.request_time or 0, tid], "inputs": inputs[tid], "tags": tags,
                    "default_item": None if inputs[tid] is None else inputs_key(inputs[tid]),
                    "case": tags.get(mi.TEST_NAME_TAG), "cluster": None, "suite": None, "scores": scores,
                    "errored": failed}
    return out


def traces_units(entries: dict[str, dict], notes: list[str]) -> Units:
    """The units of :func:`trace_entries` (or of entries kept from them, without inputs and tags) in time order,
    their values and errors."""
    units, scores, errored = [], [], {}
    for entry in sorted(entries.values(), key=lambda e: tuple(e["order"])):
        units.append({"inputs": None, "tags": {}, **entry, "order": tuple(entry["order"])})
        scores += [(entry["unit"], *score) for score in entry["scores"]]
        for name in entry["errored"]:
            errored[name] = errored.get(name, 0) + 1
    return Units.of(units, scores, errored, notes)


def chosen_assessments(assessments, run_id: str) -> tuple[dict[str, Any], list[str]]:
    """The assessment that counts for each name (see the module's docstring), and the names whose assessments all
    carry an error instead of a value."""
    found: dict[str, list] = {}
    for a in assessments:
        made_for = (a.metadata or {}).get(mi.ASSESSMENT_RUN_KEY)
        if a.feedback is not None and a.valid is not False and made_for in (None, run_id):
            found.setdefault(a.name, []).append(a)
    chosen, failed = {}, []
    for name, candidates in found.items():
        valued = [a for a in candidates if a.feedback.value is not None]
        if valued:
            chosen[name] = max(valued, key=lambda a: (a.create_time_ms or 0, a.last_update_time_ms or 0,
                                                      a.assessment_id or ""))
        else:
            failed.append(name)
    return chosen, failed


def linked_traces(client, run, *, limit: int | None = None, since_ms: int | None = None) -> list:
    """The infos of the traces linked to the run, page by page (the first page flushes this process's pending
    trace writes); the first ``limit`` only when given; only those started at ``since_ms`` or later, when given."""
    infos, token = [], None
    while True:
        page = client.search_traces(locations=[run.info.experiment_id], run_id=run.info.run_id,
                                    include_spans=False, max_results=limit or mi.TRACES_PAGE, page_token=token,
                                    flush=token is None,
                                    filter_string=None if since_ms is None else f"trace.timestamp_ms >= {since_ms}")
        infos += [t.info for t in page]
        token = page.token
        if not token or limit:
            return infos


def expected_items(run) -> int | None:
    """The rows of the one dataset the run logged (``mlflow.genai.evaluate`` logs its data's), None when it logged
    none, several, or one without a row count."""
    inputs = run.inputs.dataset_inputs if run.inputs is not None else []
    if len(inputs) != 1:
        return None
    try:
        return int(json.loads(inputs[0].dataset.profile or "{}")["num_rows"])
    except (ValueError, KeyError, TypeError):
        return None


def _settled(client, run) -> tuple[list, list[str]]:
    """The run's traces, read again after each of :data:`RETRY_DELAYS` while fewer than its dataset's rows; and the
    note of a shortfall that remains."""
    expected, infos = expected_items(run), linked_traces(client, run)
    for delay in RETRY_DELAYS:
        if expected is None or len(infos) >= expected:
            break
        time.sleep(delay)
        infos = linked_traces(client, run)
    if expected is not None and 0 < len(infos) < expected:
        return infos, [f"{len(infos)} of the {expected} rows of its dataset have a trace (MLflow writes traces "
                       "asynchronously: if the evaluation has just ended, read it again)"]
    return infos, []


def _inputs(client, infos) -> dict[str, Any]:
    """Each trace's inputs: from its info (the metadata's JSON of the inputs, whole up to 250 characters, else the
    request preview when it is the whole JSON object), else from its root span (read for those traces only), else
    the preview as text; None when a trace has none."""
    found = {i.trace_id: _info_inputs(i) for i in infos}
    missing = [i.trace_id for i in infos if found[i.trace_id] is _UNKNOWN]
    if missing:
        with ThreadPoolExecutor(min(_SPAN_THREADS, len(missing))) as pool:
            for tid, value in zip(missing, pool.map(lambda t: _span_inputs(client, t), missing)):
                found[tid] = value
    previews = {i.trace_id: i.request_preview for i in infos}
    return {tid: (previews[tid] if value is _UNKNOWN else value) for tid, value in found.items()}


_UNKNOWN = object()


def _info_inputs(info) -> Any:
    """The inputs a trace's info holds whole, else :data:`_UNKNOWN` (a cut text is not valid JSON)."""
    metadata = (info.trace_metadata or {}).get(mi.TRACE_INPUTS_KEY)
    for text, whole in ((metadata, lambda v: True), (info.request_preview, lambda v: isinstance(v, dict))):
        if text:
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if whole(value):
                return value
    return _UNKNOWN


def _span_inputs(client, trace_id: str) -> Any:
    """The inputs of the trace's root span, :data:`_UNKNOWN` when they cannot be read."""
    try:
        text = client.get_trace(trace_id).data.request
    except MlflowException:
        return _UNKNOWN
    if text is None:
        return _UNKNOWN
    try:
        return json.loads(text)
    except ValueError:
        return text
