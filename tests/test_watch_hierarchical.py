"""A ``hierarchical`` watch (issue 41): :func:`watch_runs` on a real sqlite store whose CV runs on six datasets grow
repeat by repeat, answered at each look by the hierarchical test fitted by Stan.  Each look's probabilities are
those of the hierarchical test (``hierarchical_test``, the same seed) on the differences logged here, the first
repeats of every dataset, and a later call fits only the new look (the earlier ones come from the run); the run
keeps the registered design with its planning values and the stand-in's
operating characteristics; a changed design is refused naming the field, and a look that reads another number of
datasets than the design's, or a dataset a model lacks, is refused before any run is written."""

from __future__ import annotations

import json

import numpy as np
import pytest
from watched_runs import FOLDS, log_repeat, watch_runs_in

from mlflow_bayescompare.families.hierarchical.engine import hierarchical_test
from mlflow_bayescompare.pipeline import watchhier
from mlflow_bayescompare.pipeline.watch import watch_runs
from mlflow_bayescompare.pipeline.watchhier import FIT_SEED
from mlflow_bayescompare.pipeline.watchlook import OC_REPLICATES_HIERARCHICAL
from mlflow_bayescompare.runs import watchrun
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError

DATASETS = [f"uci-{i}" for i in range(6)]
#: with rf ahead by 0.017 on average (0.012 to 0.022 by dataset), P(rf better) is 0.925 at 2 repeats and 0.966 at 3
DESIGN = dict(test="hierarchical", rope=0.01, threshold=0.95, min_size=2, max_size=6, folds=FOLDS, planning_sd=0.03,
              dataset_count=6, planning_spread=0.01)


def _log_repeat(client, experiment_id, seed: int, datasets=DATASETS) -> np.ndarray:
    """One repeat of every dataset; returns its differences, a row per dataset."""
    return np.array([log_repeat(client, experiment_id, 100 * i + seed, 0.017 + 0.002 * (i - 2.5), dataset=name)
                     for i, name in enumerate(datasets)])


def _watch(uri, experiment_id, **changes):
    options = {"metric": "accuracy", "model_a": "rf", "model_b": "svm", **DESIGN, **changes}
    return watch_runs(experiment_ids=[experiment_id], tracking_uri=uri, **options)


@pytest.mark.slow
def test_a_hierarchical_watch_fits_the_test_at_each_look_until_decided(tracking_uri, client, experiment_id):
    diffs = _log_repeat(client, experiment_id, 0)
    first = _watch(tracking_uri, experiment_id)
    assert first.answer == "continue" and first.registered and first.look.row is None
    assert first.notes[0] == "6 datasets: " + ", ".join(DATASETS)
    run_id, seen = first.run_id, []
    for seed in range(1, DESIGN["max_size"]):
        diffs = np.concatenate([diffs, _log_repeat(client, experiment_id, seed)], axis=1)
        if seed == 1:  # registered: another threshold is refused, naming it
            with pytest.raises(InputError, match="threshold: 0.95 → 0.99"):
                _watch(tracking_uri, experiment_id, threshold=0.99)
        heard: list[str] = []
        watchhier._fits.clear()  # as a new process: the earlier looks come from the run, not this process
        out = _watch(tracking_uri, experiment_id, progress=lambda stage, detail=None, into=heard: into.append(
            detail or ""))
        assert out.run_id == run_id
        seen.append(out.look.size)
        fitted = [d for d in heard if d.startswith("fitting")]  # the recorded looks are not fitted again
        assert fitted == [f"fitting the hierarchical test on 6 datasets at {seed + 1} repeats"]
        fit = hierarchical_test(diffs=list(diffs), folds=FOLDS, rope=0.01, seed=FIT_SEED, model_check=False)
        row = out.look.row
        assert (row.p_a_better, row.p_rope, row.p_b_better) == pytest.approx((fit.p_right, fit.p_rope, fit.p_left))
        if out.decided:
            break
    assert out.answer == "a_better" and seen == [2, 3], out.sentence()
    assert [round(r.p_a_better, 3) for r in out.look.rows] == [0.925, 0.966]
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags[T.TEST] == "hierarchical"
    with open(client.download_artifacts(run_id, watchrun.DESIGN_JSON), encoding="utf-8") as file:
        design = json.load(file)
    assert (design["dataset_count"], design["planning_spread"]) == (6, 0.01)
    with open(client.download_artifacts(run_id, watchrun.OPERATING_JSON), encoding="utf-8") as file:
        operating = json.load(file)
    assert operating["replicates"] == OC_REPLICATES_HIERARCHICAL
    assert set(operating["scenarios"]) == {"assumed", "misspecified"} and operating["seconds"] < 10


def test_a_look_at_other_datasets_than_the_design_is_refused_before_any_run(tracking_uri, client, experiment_id):
    for seed in range(2):
        _log_repeat(client, experiment_id, seed, DATASETS[:5])
    with pytest.raises(InputError, match="holds 5 datasets; the design was registered for 6"):
        _watch(tracking_uri, experiment_id)
    with pytest.raises(InputError, match="model 'svm' has no scores on dataset 'elsewhere'"):
        _watch(tracking_uri, experiment_id, datasets=[*DATASETS[:4], "elsewhere"], dataset_count=5)
    with pytest.raises(InputError, match="dataset applies to correlated-t"):
        _watch(tracking_uri, experiment_id, dataset="uci-0")
    assert watch_runs_in(client, experiment_id) == []
