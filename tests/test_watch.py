"""Stop when decided (issue 41): :func:`watch_runs` on a real sqlite store whose CV runs grow repeat by repeat and
whose evaluation runs grow batch by batch between looks.  Each look's probabilities are checked against the
correlated t-test's Student-t posterior computed here with scipy (Corani & Benavoli 2015, eq. 8: n - 1 degrees of
freedom, location the mean difference, scale² = (1/n + ρ/(1 - ρ)) s²); the watch run keeps the registered design
(``design.json`` whose sha256 is the fingerprint tag), every look and the operating characteristics; a changed
design is refused naming the field, a deleted source run is named, bad input leaves no run behind, and hostile
names reach the description escaped."""

from __future__ import annotations

import hashlib
import html
import json

import numpy as np
import pytest
from scipy import stats
from watched_runs import DESIGN, FOLDS, log_repeat, long_table, watch_runs_in

from mlflow_bayescompare.pipeline.watch import watch_runs
from mlflow_bayescompare.runs import watchrun
from mlflow_bayescompare.sequential.look import look
from mlflow_bayescompare.server.owners import stale_reason
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError

HOSTILE = "<script>alert(1)</script>](http://evil.example)*x*"


def _expected(diffs: np.ndarray, rope: float) -> tuple[float, float, float]:
    """P(A better), P(rope), P(B better) of the correlated t-test's posterior, here with scipy."""
    n, rho = len(diffs), 1 / FOLDS
    t = stats.t(df=n - 1, loc=diffs.mean(), scale=np.sqrt((1 / n + rho / (1 - rho)) * diffs.var(ddof=1)))
    return t.sf(rope), t.cdf(rope) - t.cdf(-rope), t.cdf(-rope)


def _watch(uri, experiment_id, **changes):
    options = {"metric": "accuracy", "model_a": "rf", "model_b": "svm", **DESIGN, **changes}
    return watch_runs(experiment_ids=[experiment_id], tracking_uri=uri, **options)


def _artifact(client, run_id: str, name: str) -> str:
    with open(client.download_artifacts(run_id, name), encoding="utf-8") as file:
        return file.read()


def test_a_watch_registers_its_design_and_keeps_every_look_until_decided(tracking_uri, client, experiment_id):
    diffs = log_repeat(client, experiment_id, 0, 0.02)
    first = _watch(tracking_uri, experiment_id)
    assert first.answer == "continue" and first.registered and first.look.row is None
    assert "first look is at 2 repeats; 1 read so far" in first.sentence()
    run_id, seen = first.run_id, []
    for seed in range(1, DESIGN["max_size"]):
        diffs = np.concatenate([diffs, log_repeat(client, experiment_id, seed, 0.02)])
        out = _watch(tracking_uri, experiment_id)
        assert out.run_id == run_id and not out.registered
        seen.append(out.look.size)
        row = out.look.row
        assert (row.p_a_better, row.p_rope, row.p_b_better) == pytest.approx(_expected(diffs, 0.01), abs=1e-9)
        if out.decided:
            break
    assert out.answer == "a_better" and seen == [2, 3, 4], out.sentence()  # P(rf better) 0.888, 0.947, 0.967
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags[T.WATCH_ANSWER] == "a_better"
    design_json = _artifact(client, run_id, watchrun.DESIGN_JSON)
    assert hashlib.sha256(design_json.encode()).hexdigest() == run.data.tags[T.DESIGN_FINGERPRINT]
    assert json.loads(design_json)["threshold"] == 0.95
    looks = json.loads(_artifact(client, run_id, watchrun.LOOKS_JSON))
    assert [r["size"] for r in looks["rows"]] == seen and looks["rows"][-1]["answer"] == "a_better"
    assert [r["answer"] for r in looks["rows"][:-1]] == ["continue"] * (len(seen) - 1)
    history = client.get_metric_history(run_id, "p_a_better")
    assert sorted(m.step for m in history) == seen
    operating = json.loads(_artifact(client, run_id, watchrun.OPERATING_JSON))
    assert operating["threshold"] == 0.95 and operating["lines"]
    assert {c["truth"] for c in operating["cells"]} == {"no difference", "rope edge", "clear"}
    assert run.data.metrics["oc_false_decision_rate"] == operating["false_decision"]
    # decided: a later look reads the answer kept, not the new data
    log_repeat(client, experiment_id, 99, -0.2)
    again = _watch(tracking_uri, experiment_id)
    assert again.answer == "a_better" and again.run_id == run_id and len(again.rows) == len(seen)


def test_a_watch_run_running_between_looks_is_never_stale_to_a_server(tracking_uri, client, experiment_id):
    """A server ends FAILED a RUNNING job run older than its grace period (owners.stale_reason); a watch run is
    RUNNING between looks by design, for days if the repeats come slowly."""
    log_repeat(client, experiment_id, 0, 0.0)
    run = client.get_run(_watch(tracking_uri, experiment_id).run_id)
    later = run.info.start_time + 30 * 24 * 3600 * 1000
    assert run.info.status == "RUNNING" and stale_reason(run, 60, now_ms=later) is None
    job = client.create_run(experiment_id, tags={T.KIND: "comparison"})
    assert "beyond the grace period of 60 s" in stale_reason(job, 60, now_ms=later)


def test_a_later_look_with_another_design_is_refused_naming_what_changed(tracking_uri, client, experiment_id):
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0)
    first = _watch(tracking_uri, experiment_id)
    assert first.answer == "continue" and first.look.size == 2
    with pytest.raises(InputError) as caught:
        _watch(tracking_uri, experiment_id, threshold=0.99, max_size=9)
    message = str(caught.value)
    assert "different design is refused" in message and "threshold: 0.95 → 0.99" in message
    assert "max_size: 8 → 9" in message and first.design.fingerprint[:12] in message
    (run,) = watch_runs_in(client, experiment_id)
    assert run.info.status == "RUNNING" and run.data.tags[T.DESIGN_FINGERPRINT] == first.design.fingerprint
    assert [m.step for m in client.get_metric_history(run.info.run_id, "p_a_better")] == [2]


def test_a_source_run_deleted_between_looks_is_named(tracking_uri, client, experiment_id):
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0)
    assert _watch(tracking_uri, experiment_id).look.size == 2
    log_repeat(client, experiment_id, 2, 0.0)
    svm_runs = client.search_runs([experiment_id], "tags.model = 'svm'", order_by=["attributes.start_time ASC"])
    gone = svm_runs[0].info.run_id
    client.delete_run(gone)
    with pytest.raises(InputError) as caught:
        _watch(tracking_uri, experiment_id)
    message = str(caught.value)
    assert f"source run {gone} (side B, svm: repeat 1) was deleted since an earlier look read it" in message
    assert "mlflow runs restore" in message
    (run,) = watch_runs_in(client, experiment_id)
    assert json.loads(_artifact(client, run.info.run_id, watchrun.LOOKS_JSON))["size"] == 2


@pytest.mark.parametrize("changes, named", [
    (dict(model_b="knn"), "knn"),
    (dict(planning_sd=None), "planning_sd"),
    (dict(rope=2.0), "rope 2 must be smaller"),
])
def test_bad_input_is_refused_up_front_and_leaves_no_run(tracking_uri, client, experiment_id, changes, named):
    log_repeat(client, experiment_id, 0, 0.0)
    with pytest.raises(InputError, match=named):
        _watch(tracking_uri, experiment_id, **changes)
    assert watch_runs_in(client, experiment_id) == []


def test_hostile_names_reach_the_description_escaped(tracking_uri, client, experiment_id):
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0, models=(HOSTILE, "svm"), dataset=HOSTILE)
    out = watch_runs(experiment_ids=[experiment_id], tracking_uri=tracking_uri, metric="accuracy", model_a=HOSTILE,
                     model_b="svm", **DESIGN)
    note = client.get_run(out.run_id).data.tags["mlflow.note.content"]
    assert "<script" not in note and "](http" not in note and "*x*" not in note
    assert HOSTILE in html.unescape(note)
    assert note == _artifact(client, out.run_id, "report.md")


def test_evaluation_runs_growing_batch_by_batch(tracking_uri, client, experiment_id):
    """Two evaluation runs whose long tables grow by 20 items between looks (A fails one item in eight, B one in
    three): undecided at 20 items (P(A better) 0.876), A better at 40 (0.982)."""
    run_a = client.create_run(experiment_id, run_name="prompt A").info.run_id
    run_b = client.create_run(experiment_id, run_name="prompt B").info.run_id
    design = dict(test="eval-binary", rope=0.02, threshold=0.95, min_size=20, max_size=100, look_every=20,
                  planning_sd=0.5)
    answers = []
    for batch in range(1, 6):
        items = range(20 * batch)
        client.log_text(run_a, long_table(items, lambda i: i % 8 != 3), "eval_scores.csv")
        client.log_text(run_b, long_table(items, lambda i: i % 3 != 0), "eval_scores.csv")
        out = watch_runs(tracking_uri=tracking_uri, run_a=run_a, run_b=run_b, **design)
        answers.append((out.look.size, out.answer))
        if out.decided:
            break
    assert answers == [(20, "continue"), (40, "a_better")], answers
    assert out.look.available == answers[-1][0] and out.experiment_id == experiment_id
    looks = json.loads(_artifact(client, out.run_id, watchrun.LOOKS_JSON))
    assert [r["size"] for r in looks["rows"]] == [size for size, _ in answers]
    assert {s["run_id"] for s in looks["sources"]} == {run_a, run_b}


def test_the_confidence_sequence_on_request_is_kept_beside_and_gate_both_waits_for_it(tracking_uri, client,
                                                                                       experiment_id):
    """With ``cs`` each look keeps the confidence sequence's bounds (those of ``look`` on the scores read), and
    ``gate both`` does not decide where the posterior alone would (4 repeats: P(rf better) 0.967) while the
    sequence, over a few repeats, still spans the rope."""
    diffs = np.concatenate([log_repeat(client, experiment_id, seed, 0.02) for seed in range(4)])
    out = _watch(tracking_uri, experiment_id, cs_check=True, gate="both")
    assert out.answer == "continue" and out.look.size == 4
    expected = look(out.design, diffs=diffs)
    looks = json.loads(_artifact(client, out.run_id, watchrun.LOOKS_JSON))["rows"]
    assert [(r["size"], r["cs_low"], r["cs_high"]) for r in looks] == pytest.approx(
        [(r.size, r.cs_low, r.cs_high) for r in expected.rows], abs=1e-12)
    assert looks[-1]["bayes_answer"] == "a_better" and looks[-1]["cs_answer"] == "continue"
    assert looks[-1]["cs_low"] < -0.01 and looks[-1]["cs_high"] > 0.01
    note = client.get_run(out.run_id).data.tags["mlflow.note.content"]
    assert "sequence low" in note and "sequence high" in note


def test_a_repeat_slipped_in_before_those_read_is_refused_by_their_digest(tracking_uri, client, experiment_id):
    """A run of model A started before the runs an earlier look read (here: logged later with an earlier start
    time) changes the repeats that look read: refused, naming the look."""
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0)
    first = _watch(tracking_uri, experiment_id)
    assert first.look.size == 2
    earliest = min(r.info.start_time for r in client.search_runs([experiment_id], "tags.model = 'rf'"))
    early = client.create_run(experiment_id, start_time=earliest - 60_000, tags={"model": "rf", "dataset": "iris"})
    client.log_param(early.info.run_id, "cv_folds", FOLDS)
    for fold in range(FOLDS):
        client.log_metric(early.info.run_id, "accuracy", 0.5, step=fold)
    client.set_terminated(early.info.run_id)
    log_repeat(client, experiment_id, 2, 0.0, models=("svm",))
    with pytest.raises(InputError) as caught:
        _watch(tracking_uri, experiment_id)
    assert "the scores of the first 2 repeats differ from those the look at 2 read" in str(caught.value)
    assert len(client.get_metric_history(first.run_id, "p_a_better")) == 1


def test_an_evaluation_run_deleted_between_looks_is_named(tracking_uri, client, experiment_id):
    run_a = client.create_run(experiment_id, run_name="prompt A").info.run_id
    run_b = client.create_run(experiment_id, run_name="prompt B").info.run_id
    for run_id in (run_a, run_b):
        client.log_text(run_id, long_table(range(20), lambda i: i % 2 == 0), "eval_scores.csv")
    design = dict(test="eval-binary", rope=0.02, min_size=20, max_size=100, look_every=20, planning_sd=0.5)
    assert watch_runs(tracking_uri=tracking_uri, run_a=run_a, run_b=run_b, **design).answer == "continue"
    client.delete_run(run_b)
    with pytest.raises(InputError, match=f"source run {run_b} \\(side B, prompt B: 20 items of scorer correct\\) "
                                         "was deleted since an earlier look read it"):
        watch_runs(tracking_uri=tracking_uri, run_a=run_a, run_b=run_b, **design)
