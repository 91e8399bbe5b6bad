"""A later look at CV runs reads them by the state the watch run keeps (:mod:`mlflow_bayescompare.pipeline.watchgrown`)
on a real sqlite store whose runs grow between looks: it gives what the first look's read gives (the same paired
scores, source runs and notes), a look that would continue reads the histories of the new runs only, a fold score
logged again into an earlier run (MLflow's run keeps the same end time, status and latest value) is refused naming
that run at the look that would decide, and what it does not read as the full read does is read by the full read,
whose checks refuse it as before."""

from __future__ import annotations

import json

import numpy as np
import pytest
from watched_runs import DESIGN, FOLDS, log_repeat

from mlflow_bayescompare.pipeline.watch import watch_runs
from mlflow_bayescompare.pipeline.watchgrown import read_grown
from mlflow_bayescompare.pipeline.watchsources import read_cv
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.runs import watchrun
from mlflow_bayescompare.sequential import Design
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.options import PairOptions, SourceOptions


def _watch(uri, experiment_id, progress=None):
    return watch_runs(experiment_ids=[experiment_id], tracking_uri=uri, metric="accuracy", model_a="rf",
                      model_b="svm", progress=progress, **DESIGN)


def _both_reads(client, experiment_id, state, kept=None, progress=None):
    design = Design(**DESIGN)
    source = SourceOptions(experiment_ids=(experiment_id,), metric="accuracy")
    pair = PairOptions(model_a="rf", model_b="svm")
    full = read_cv(client, design, source, pair, None, [experiment_id])
    return full, read_grown(client, design, source, pair, [experiment_id], state, kept, progress)


def _heard():
    lines = []
    return lines, lambda stage, detail=None: lines.append(f"{stage}: {detail}")


def test_a_later_look_reads_by_the_kept_state_what_the_full_read_gives(tracking_uri, client, experiment_id):
    """Runs of one repeat and of two (cv_repeats 2), a repeat of rf waiting for svm's: the same scores (bit for
    bit), the same source runs and notes."""
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0)
    first = _watch(tracking_uri, experiment_id)
    state = json.loads(client.get_run(first.run_id).data.tags[T.WATCH_STATE])
    assert state == {"v": 1, "layout": "steps", "model_key": "tag:model", "dataset_key": "tag:dataset",
                     "dataset": "iris"}
    rng = np.random.default_rng(7)
    log_cv_scores("rf", "iris", rng.uniform(0.7, 0.9, 2 * FOLDS), folds=FOLDS, repeats=2,
                  experiment_id=experiment_id, client=client)
    log_cv_scores("svm", "iris", rng.uniform(0.7, 0.9, FOLDS), folds=FOLDS, experiment_id=experiment_id,
                  client=client)
    log_cv_scores("knn", "iris", rng.uniform(0.7, 0.9, FOLDS), folds=FOLDS, experiment_id=experiment_id,
                  client=client)
    full, grown = _both_reads(client, experiment_id, state)
    assert not isinstance(grown, str), grown
    assert full.scores_a.tobytes() == grown.scores_a.tobytes() and len(grown.scores_a) == 3 * FOLDS
    assert full.scores_b.tobytes() == grown.scores_b.tobytes()
    assert full.runs == grown.runs and [r.read for r in grown.runs if r.side == "A"] == [
        "repeat 1", "repeat 2", "repeats 3-4"]
    assert full.notes == grown.notes == ["model 'rf' has 1 repeat more than 'svm': it waits for 'svm''s"]
    heard, progress = _heard()
    out = _watch(tracking_uri, experiment_id, progress)
    assert out.look.size == 3 and not any("as at the first look" in line for line in heard), heard


def test_a_continue_look_reads_the_histories_of_the_new_runs_only(tracking_uri, client, experiment_id):
    """The second look reads every history and keeps what each run gave; the next reads the two new runs' (the
    earlier ones, listed again within the clock margin, are taken by their unchanged listing) and gives the full
    read's scores bit for bit, and names a run deleted since."""
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0)
    first = _watch(tracking_uri, experiment_id)
    heard, progress = _heard()
    _watch(tracking_uri, experiment_id, progress)
    assert [line for line in heard if "metric histories" in line] == ["fetching: read metric histories of 4/4 runs"]
    log_repeat(client, experiment_id, 2, 0.0)
    run = client.get_run(first.run_id)
    kept = watchrun.read_recorded(client, run, Design(**DESIGN)).reads
    assert len(kept["runs"]) == 4
    heard, progress = _heard()
    full, grown = _both_reads(client, experiment_id, json.loads(run.data.tags[T.WATCH_STATE]), kept, progress)
    assert heard == ["fetching: read metric histories of 2/2 runs"] and grown.reused == 4
    assert full.scores_a.tobytes() == grown.scores_a.tobytes() and len(grown.scores_a) == 3 * FOLDS
    assert full.scores_b.tobytes() == grown.scores_b.tobytes() and full.runs == grown.runs
    gone = full.runs[0].run_id
    client.delete_run(gone)
    heard, progress = _heard()
    with pytest.raises(InputError, match=f"source run {gone} .* was deleted since an earlier look read it"):
        _watch(tracking_uri, experiment_id, progress)
    assert [line for line in heard if "metric histories" in line] == ["fetching: read metric histories of 2/2 runs"]


def test_a_fold_score_logged_again_into_an_earlier_run_is_refused_at_the_look_that_would_decide(tracking_uri, client,
                                                                                                experiment_id):
    """What MLflow shows of a run (end time, status, the metric's latest value: the value at its highest step) does
    not change when an earlier step is logged again: a look that continues takes the run's kept scores and says
    nothing; the look that would decide reads every history first and refuses it, naming the run."""
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.02)
    assert _watch(tracking_uri, experiment_id).look.size == 2
    assert _watch(tracking_uri, experiment_id).look.size == 2  # reads every history: what each run gave is kept
    second = client.search_runs([experiment_id], "tags.model = 'rf'", order_by=["attributes.start_time ASC"])[1]
    before = client.get_run(second.info.run_id)
    client.log_metric(second.info.run_id, "accuracy", 0.123, step=3)
    after = client.get_run(second.info.run_id)
    assert (after.info.end_time, after.info.status, after.data.metrics) == (
        before.info.end_time, before.info.status, before.data.metrics)
    log_repeat(client, experiment_id, 2, 0.02)
    heard, progress = _heard()
    out = _watch(tracking_uri, experiment_id, progress)  # P(rf better) 0.947 on the kept scores: continue
    assert (out.answer, out.look.size) == ("continue", 3) and not any("verifying" in line for line in heard)
    log_repeat(client, experiment_id, 3, 0.02)
    heard, progress = _heard()
    with pytest.raises(InputError) as caught:  # 0.967 on the kept scores: it would decide
        _watch(tracking_uri, experiment_id, progress)
    assert any("verifying every source run before deciding" in line for line in heard), heard
    message = str(caught.value)
    assert "the scores of the first 2 repeats differ from those the look at 2 read" in message
    assert f"source run {second.info.run_id} (side A, rf: repeat 2)" in message


def test_what_the_kept_state_does_not_read_goes_to_the_full_read_and_its_checks(tracking_uri, client,
                                                                                experiment_id):
    """A run of 9 folds where the design says 10: the state's read says why it stops; the look's full read
    refuses it as a first look would."""
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0)
    run_id = _watch(tracking_uri, experiment_id).run_id
    state = json.loads(client.get_run(run_id).data.tags[T.WATCH_STATE])
    odd = log_cv_scores("rf", "iris", np.full(9, 0.8), folds=9, experiment_id=experiment_id, client=client)
    log_cv_scores("svm", "iris", np.full(FOLDS, 0.8), folds=FOLDS, experiment_id=experiment_id, client=client)
    design = Design(**DESIGN)
    source = SourceOptions(experiment_ids=(experiment_id,), metric="accuracy")
    why = read_grown(client, design, source, PairOptions(model_a="rf", model_b="svm"), [experiment_id], state)
    assert why == f"run {odd} does not hold whole repeats of {FOLDS} folds as its params say"
    heard, progress = _heard()
    with pytest.raises(InputError, match="contradicts the param cv_folds=9"):
        _watch(tracking_uri, experiment_id, progress)
    assert any(f"reading the runs as at the first look: {why}" in line for line in heard), heard
