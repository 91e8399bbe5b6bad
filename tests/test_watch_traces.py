"""A later look at two evaluation runs with traces reads only the traces started since the last look's read
(:mod:`mlflow_bayescompare.pipeline.watchevals`), on a real sqlite store whose runs' traces (one pass/fail
assessment ``correct`` each, made for the run) grow between looks, the first batch logged an hour back (beyond the
clock margin): it gives what the whole read gives (the same values bit for bit, source runs and notes); an earlier
trace's assessment overridden between looks is not seen by the narrow search, and the look that would decide reads
every trace first and refuses it, naming the run."""

from __future__ import annotations

import json
import time

import mlflow
import pytest
from mlflow.entities import AssessmentSource

from mlflow_bayescompare.pipeline.watch import watch_runs
from mlflow_bayescompare.pipeline.watchevals import read_kept_evals
from mlflow_bayescompare.pipeline.watchsources import CLOCK_MARGIN_MS, read_evals
from mlflow_bayescompare.reads.eval_traces import linked_traces
from mlflow_bayescompare.runs import watchrun
from mlflow_bayescompare.sequential import Design
from mlflow_bayescompare.vocabulary import mlflow_internals as mi
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.options import WatchOptions

#: A fails one item in eight, B one in three: undecided at 20 items (P(A better) 0.876), A better at 40 (0.982)
DESIGN = dict(test="eval-binary", rope=0.02, threshold=0.95, min_size=20, max_size=100, look_every=20, planning_sd=0.5)
PASSES = {"A": lambda i: i % 8 != 3, "B": lambda i: i % 3 != 0}
HOUR_NS = 3600 * 10**9


@pytest.fixture(autouse=True)
def _traces_written_at_once(monkeypatch):
    """Traces written as they end (a look's first search flushes a process's pending trace writes, seconds in a
    process that writes traces asynchronously)."""
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")


def _log_items(run_id: str, items: range, passes, ago_ns: int = 0) -> None:
    """One trace per item (inputs ``{"question": "question <i>"}``) started ``ago_ns`` back, and its assessment."""
    start = time.time_ns() - ago_ns
    with mlflow.start_run(run_id=run_id):
        spans = []
        for i in items:
            span = mlflow.start_span_no_context("predict", inputs={"question": f"question {i}"},
                                                start_time_ns=start + i * 10**6)
            span.set_outputs(f"answer {i}")
            span.end(end_time_ns=start + i * 10**6 + 5000)
            spans.append((i, span.trace_id))
        for i, trace_id in spans:
            mlflow.log_feedback(trace_id=trace_id, name="correct", value=passes(i),
                                source=AssessmentSource("CODE", "correct"), metadata={mi.ASSESSMENT_RUN_KEY: run_id})


def _runs(client, experiment_id) -> dict[str, str]:
    """Runs A and B with the first 20 items, an hour back."""
    runs = {side: client.create_run(experiment_id, run_name=f"prompt {side}").info.run_id for side in "AB"}
    for side, run_id in runs.items():
        _log_items(run_id, range(20), PASSES[side], HOUR_NS)
    return runs


def _heard():
    lines = []
    return lines, lambda stage, detail=None: lines.append(f"{stage}: {detail}")


@pytest.mark.slow
def test_a_continue_look_reads_the_new_traces_only_and_an_earlier_change_is_caught_before_deciding(
        tracking_uri, client, experiment_id):
    runs = _runs(client, experiment_id)
    first = watch_runs(tracking_uri=tracking_uri, run_a=runs["A"], run_b=runs["B"], **DESIGN)
    assert (first.answer, first.look.size) == ("continue", 20)
    for side, run_id in runs.items():
        _log_items(run_id, range(20, 40), PASSES[side])
    design, watch = Design(**DESIGN), WatchOptions(run_a=runs["A"], run_b=runs["B"])
    kept = watchrun.read_recorded(client, client.get_run(first.run_id), design).reads
    assert sorted(kept["runs"]) == sorted(runs.values()) and all(len(v) == 20 for v in kept["runs"].values())
    since = kept["read_at"] - CLOCK_MARGIN_MS
    assert len(linked_traces(client, client.get_run(runs["A"]), since_ms=since)) == 20  # the new batch only
    grown = read_kept_evals(design, watch, json.loads(json.dumps(kept)), narrow=True, tracking_uri=tracking_uri)
    whole = read_evals(design, watch, tracking_uri=tracking_uri)
    assert grown.reused == 2 and len(grown.scores_a) == 40
    assert grown.scores_a.tobytes() == whole.scores_a.tobytes()
    assert grown.scores_b.tobytes() == whole.scores_b.tobytes()
    assert (grown.runs, grown.notes) == (whole.runs, whole.notes)

    trace = next(t for t in linked_traces(client, client.get_run(runs["A"]))
                 if json.loads(t.request_preview) == {"question": "question 5"})
    judged = next(a for a in trace.assessments if a.name == "correct")
    mlflow.override_feedback(trace_id=trace.trace_id, assessment_id=judged.assessment_id, value=False,
                             source=AssessmentSource("HUMAN", "reviewer"))
    heard, progress = _heard()
    with pytest.raises(InputError) as caught:  # A better at 40 on the kept values
        watch_runs(tracking_uri=tracking_uri, run_a=runs["A"], run_b=runs["B"], progress=progress, **DESIGN)
    assert any("verifying every source run before deciding" in line for line in heard), heard
    message = str(caught.value)
    assert "the scores of the first 20 items differ from those the look at 20 read" in message
    assert f"earlier traces changed in source run {runs['A']} (side A, prompt A)" in message
