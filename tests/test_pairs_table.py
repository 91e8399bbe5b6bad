"""A matrix at large k: one parent run holding the pairs table (pairs.parquet) instead of a child run per pair, and
the cache of pair results that later matrices read back from those tables in the tracking server."""

from __future__ import annotations

import html
import logging
import time

import pandas as pd
import pytest
from mlflow.entities import RunStatus
from uci_runs import log_uci, uci_scores

from mlflow_bayescompare.pipeline.compare import compare_matrix
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.runs.matrix import DIAGNOSTIC_COLUMNS
from mlflow_bayescompare.vocabulary import tags as T

pytestmark = pytest.mark.slow

DATASETS = (20, 21, 24)
FAST = dict(chains=2, draws=200, seed=3, jobs=2)


def _table(client, run_id, tmp_path) -> pd.DataFrame:
    return pd.read_parquet(client.download_artifacts(run_id, "pairs.parquet", str(tmp_path / run_id)))


def _numbers(matrix, pairs) -> list:
    return [(matrix.pairs[p].p_a_better, matrix.pairs[p].p_rope, matrix.pairs[p].p_b_better) for p in pairs]


def _planted(client, experiment_id: str, run_id: str, tmp_path) -> str:
    """A newer run made to look like the matrix ``run_id`` (its tags, the cache's fingerprint among them, and its
    pairs table with their signatures), as anyone who may write to the experiment can log one, but its first row
    saying the other model is better."""
    table = _table(client, run_id, tmp_path)
    table.loc[0, ["p_a_better", "p_b_better"]] = table.loc[0, ["p_b_better", "p_a_better"]].to_numpy()
    table.loc[0, "verdict"] = f"{table.loc[0, 'model_b']} is practically better (strong evidence)"
    table.loc[0, "decision"] = "b_better"
    (tmp_path / "planted").mkdir()
    table.to_parquet(tmp_path / "planted" / "pairs.parquet", index=False)
    tags = {k: v for k, v in client.get_run(run_id).data.tags.items() if not k.startswith("mlflow.")}
    planted = client.create_run(experiment_id, tags=tags).info.run_id
    client.log_artifact(planted, str(tmp_path / "planted" / "pairs.parquet"))
    client.set_terminated(planted, RunStatus.to_string(RunStatus.FINISHED))
    return planted


def test_above_the_threshold_one_run_holds_the_pairs_and_a_rerun_fits_only_what_changed(
        client, tracking_uri, experiment_id, tmp_path, caplog):
    log_uci(client, experiment_id, models=("nbc", "hnb", "j48"), datasets=DATASETS)
    common = dict(experiment_ids=[experiment_id], metric="accuracy", tracking_uri=tracking_uri,
                  child_runs_up_to=2, **FAST)

    first = compare_matrix(models=["nbc", "hnb", "j48"], **common)

    assert client.search_runs([experiment_id], f"tags.`mlflow.parentRunId` = '{first.run_id}'") == []
    table = _table(client, first.run_id, tmp_path)
    assert list(zip(table["model_a"], table["model_b"])) == list(first.pairs)
    assert list(zip(table["p_a_better"], table["p_rope"], table["p_b_better"])) == _numbers(first, first.pairs)
    assert list(table["verdict"]) == [o.verdict for o in first.pairs.values()]
    assert set(table["test"]) == {"hierarchical"} and not table["cached"].any()
    assert table[list(DIAGNOSTIC_COLUMNS)].notna().all().all() and table["run_id"].isna().all()
    assert "pairs.parquet" in html.unescape(client.get_run(first.run_id).data.tags["mlflow.note.content"])
    assert table["signature"].str.fullmatch("[0-9a-f]{64}").all() and T.CACHE_FOR in client.get_run(
        first.run_id).data.tags

    # a fourth model: only its three pairs are fitted, the others are the first matrix's, not those of a newer run
    # planted to look like it with a row altered (its other rows are the first matrix's own, and read)
    planted = _planted(client, experiment_id, first.run_id, tmp_path)
    log_uci(client, experiment_id, models=("aode",), datasets=DATASETS)
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        second = compare_matrix(models=["nbc", "hnb", "j48", "aode"], **common)
    assert f"matrix run {planted} is tagged as holding your pair cache, but 1 of its 3 rows are not taken (1 not " \
           "signed for you: forged, or altered since): not read from it" in caplog.text

    assert second.cached == 3 and second.to_dict()["pairs_cached"] == 3
    assert _numbers(second, first.pairs) == _numbers(first, first.pairs)
    table = _table(client, second.run_id, tmp_path)
    assert list(table["cached"]) == [p in first.pairs for p in second.pairs]
    assert client.get_run(second.run_id).data.metrics["n_pairs_cached"] == 3
    assert {k: v for k, v in client.get_run(second.run_id).data.params.items() if k in ("engine", "refresh")} == \
        {"engine": "local", "refresh": "False"}

    # j48's scores on one dataset change (a newer run): its pairs miss the cache, the others hit it
    time.sleep(0.01)  # the newer run starts later
    changed = [s - 1.0 for s in uci_scores(("j48",), (20,))["j48", "uci20"]]
    log_cv_scores("j48", "uci20", changed, metric="accuracy", folds=10, repeats=10, experiment_id=experiment_id,
                  client=client)
    third = compare_matrix(models=["nbc", "hnb", "j48", "aode"], on_duplicate="latest", **common)

    assert third.cached == 3
    assert [p for p, o in third.pairs.items() if "j48" not in p] == \
        [p for p, row in zip(third.pairs, _table(client, third.run_id, tmp_path)["cached"]) if row]

    refreshed = compare_matrix(models=["nbc", "hnb"], refresh=True, **common)
    assert refreshed.cached == 0
    assert _numbers(refreshed, [("nbc", "hnb")]) == _numbers(first, [("nbc", "hnb")])  # same seed, same numbers

    # below the threshold, a pair read from the cache still has its run under the matrix: no artifacts, the run
    # that fitted it named (refreshed logged one), or none when that matrix kept it in its table only (third)
    fitted_run = refreshed.pairs["nbc", "hnb"].run_id
    for models, origin in ((["nbc", "hnb"], fitted_run), (["nbc", "j48"], None)):
        again = compare_matrix(models=models, on_duplicate="latest", **common)
        pair = tuple(models)
        assert again.cached == 1
        (child,) = client.search_runs([experiment_id], f"tags.`mlflow.parentRunId` = '{again.run_id}'")
        assert child.info.run_id == again.pairs[pair].run_id == _table(client, again.run_id, tmp_path)["run_id"][0]
        assert child.data.tags.get("bayescompare.cached_from") == origin and child.info.status == "FINISHED"
        assert (child.data.tags["bayescompare.model_a"], child.data.tags["bayescompare.verdict"]) == \
            (models[0], again.pairs[pair].verdict)
        assert [child.data.metrics[k] for k in ("p_a_better", "p_rope", "p_b_better")] == \
            list(_numbers(again, [pair])[0])
        assert "cache" in child.data.tags["mlflow.note.content"] and client.list_artifacts(child.info.run_id) == []
    assert _numbers(again, [("nbc", "j48")]) == _numbers(third, [("nbc", "j48")])
