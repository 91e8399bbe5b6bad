"""Reading per-fold scores from real MLflow stores: a sqlite store and a real ``mlflow server``."""

from __future__ import annotations

import logging
import re
import time
import uuid

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param
from mlflow.store.tracking.dbmodels.models import SqlRun, SqlTag
from sqlalchemy.orm import Session

from mlflow_bayescompare.families.signed_rank.engine import signed_rank_test
from mlflow_bayescompare.reads import collect as collect_module
from mlflow_bayescompare.reads import fetch as fetch_module
from mlflow_bayescompare.reads import identify as identify_module
from mlflow_bayescompare.reads.collect import collect_scores, discover, resolve_experiments
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.reads.fetch import fetch_histories
from mlflow_bayescompare.scores.tensor import from_tidy
from mlflow_bayescompare.vocabulary.errors import BayesCompareError, InputError

MODELS = {1: "nbc", 2: "aode"}
FOLDS, REPEATS = 10, 2


def paper_scores(uci: pd.DataFrame) -> pd.DataFrame:
    """nbc and aode on 3 UCI datasets, 2 repeats of 10-fold CV, with the global fold index ``g``."""
    df = uci[uci.ClassifierID.isin(MODELS) & uci.DatasetID.isin([1, 2, 3]) & (uci["Key.Run"] <= REPEATS)]
    return pd.DataFrame({
        "dataset": "uci" + df.DatasetID.astype(str), "model": df.ClassifierID.map(MODELS),
        "g": (df["Key.Run"] - 1) * FOLDS + df["Key.Fold"] - 1, "score": df["Percent.correct"],
    }).sort_values(["model", "dataset", "g"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def paper(uci) -> pd.DataFrame:
    return paper_scores(uci)


def expected_diffs(paper) -> dict[str, np.ndarray]:
    t = from_tidy(paper.rename(columns={"g": "fold"}), "nbc", "aode", folds=FOLDS)
    return dict(zip(t.datasets, t.diffs))


def groups(df):
    return df.groupby(["model", "dataset"], sort=False)


# ---------------------------------------------------------------------------------------------- logging layouts


def log_steps(client, eid, df, **kw):
    for (model, dataset), g in groups(df):
        log_cv_scores(model, dataset, g["score"], folds=FOLDS, repeats=REPEATS, experiment_id=eid, client=client, **kw)


def log_keys(client, eid, df):
    for (model, dataset), g in groups(df):
        run = client.create_run(eid, tags={"model": model, "dataset": dataset})
        client.log_batch(run.info.run_id, metrics=[Metric(f"accuracy_fold_{i}", v, 0, 0) for i, v in zip(g.g, g.score)],
                         params=[Param("cv_folds", str(FOLDS)), Param("cv_repeats", str(REPEATS))])


def log_children(client, eid, df, split_repeat=False, folds=FOLDS):
    """One parent run per (model, dataset), with the param cv_folds (none when ``folds`` is None), and one child run
    per fold (tagged with its repeat too when ``split_repeat``)."""
    for (model, dataset), g in groups(df):
        parent = client.create_run(eid, tags={"model": model, "dataset": dataset})
        pid = parent.info.run_id
        client.log_batch(pid, metrics=[Metric("accuracy", g.score.mean(), 0, 0)],
                         params=[Param("cv_folds", str(folds))] if folds is not None else [])
        for i, v in zip(g.g, g.score):
            tags = {"mlflow.parentRunId": pid, "model": model, "dataset": dataset}
            tags.update({"repeat": str(i // FOLDS), "fold": str(i % FOLDS)} if split_repeat else {"fold": str(i)})
            child = client.create_run(eid, tags=tags)
            client.log_batch(child.info.run_id, metrics=[Metric("accuracy", v, 0, 0)])


def log_means(client, eid, means, **tags):
    """One run per (model, dataset) with ``accuracy`` logged once: the means layout (no cv_folds param)."""
    ids = {}
    for row in means.itertuples():
        run = client.create_run(eid, tags={"model": row.model, "dataset": row.dataset, **tags})
        client.log_batch(run.info.run_id, metrics=[Metric("accuracy", row.score, int(time.time() * 1000), 0)])
        ids[row.model, row.dataset] = run.info.run_id
    return ids


def paper_means(paper) -> pd.DataFrame:
    """Each (model, dataset)'s mean score over its folds, in the order of ``paper``."""
    return paper.groupby(["model", "dataset"], sort=False, as_index=False)["score"].mean()


def add_unrelated_runs(client, eid, n):
    """Insert ``n`` runs straight into the sqlite store (fast): untagged, other models, other tag sets."""
    store = client._tracking_client.store
    now = int(time.time() * 1000)
    with Session(store.engine) as session, session.begin():
        for i in range(n):
            rid = uuid.uuid4().hex
            session.add(SqlRun(run_uuid=rid, name=f"noise-{i}", experiment_id=int(eid), user_id="t", status="FINISHED",
                               start_time=now, lifecycle_stage="active", artifact_uri=f"/tmp/{rid}",
                               source_type="LOCAL", source_name="", entry_point_name="", source_version=""))
            if i % 3 == 1:
                session.add(SqlTag(run_uuid=rid, key="model", value=f"other{i % 7}"))
                session.add(SqlTag(run_uuid=rid, key="dataset", value="uci1"))
            elif i % 3 == 2:
                session.add(SqlTag(run_uuid=rid, key="dataset", value="uci1"))


def check(result, paper, layout, method):
    """The collected scores equal the logged ones, read the expected way."""
    assert (result.layout, result.fetch_method, result.metric) == (layout, method, "accuracy")
    assert result.folds == {"uci1": FOLDS, "uci2": FOLDS, "uci3": FOLDS}
    assert sorted(result.runs_by_model) == ["aode", "nbc"] and all(len(v) == 3 for v in result.runs_by_model.values())
    assert list(result.scores.columns) == collect_module.SCORE_COLUMNS
    assert result.scores["repeat"].max() == paper.g.max() // FOLDS and result.scores["fold"].max() == FOLDS - 1
    t = result.tensor("nbc", "aode")
    assert t.metric == "accuracy" and t.folds == [FOLDS] * 3
    expected = expected_diffs(paper)
    for name, diff in zip(t.datasets, t.diffs):
        np.testing.assert_allclose(diff, expected[name])


# ---------------------------------------------------------------------------------------------- sqlite store


@pytest.mark.parametrize("layout, writer, method", [("steps", log_steps, "store"), ("keys", log_keys, "search"),
                                                    ("children", log_children, "search")])
def test_layouts_on_sqlite(client, experiment_id, paper, layout, writer, method):
    if layout == "children":
        paper = paper[paper.g < FOLDS]  # one run per fold is slow to log: one repeat only
    writer(client, experiment_id, paper)
    check(collect_scores(client, [experiment_id], "accuracy", ["nbc", "aode"]), paper, layout, method)
    check(collect_scores(client, [experiment_id], "accuracy", layout=layout), paper, layout, method)


def test_children_with_repeat_tags(client, experiment_id, paper):
    log_children(client, experiment_id, paper[paper.dataset == "uci1"], split_repeat=True)
    result = collect_scores(client, [experiment_id], "accuracy")
    np.testing.assert_allclose(result.tensor("nbc", "aode").diffs[0], expected_diffs(paper)["uci1"])


def test_folds_given_for_runs_that_tag_their_repeats_must_be_their_folds_per_repeat(client, experiment_id, paper):
    """Child runs tagged with their repeat (10 folds each) and no cv_folds param: --folds 5 is refused before anything
    is paired, naming each dataset and what it holds; --folds 10, what they hold, reads them."""
    log_children(client, experiment_id, paper[paper.dataset.isin(["uci1", "uci2"])], split_repeat=True, folds=None)
    with pytest.raises(InputError, match="Cannot tell the cross-validation folds") as e:
        collect_scores(client, [experiment_id], "accuracy", folds=5)
    assert len(e.value.problems) == 2 and all("holds 10 folds per repeat, not --folds 5 (folds=5)" in p
                                              for p in e.value.problems)
    assert {p.partition(" (model")[0] for p in e.value.problems} == {"dataset 'uci1'", "dataset 'uci2'"}
    result = collect_scores(client, [experiment_id], "accuracy", folds=FOLDS)
    assert result.folds == {"uci1": FOLDS, "uci2": FOLDS}
    np.testing.assert_allclose(result.tensor("nbc", "aode").diffs[0], expected_diffs(paper)["uci1"])


def test_unrelated_runs_are_ignored(client, experiment_id, paper):
    """Its time is benchmarks/bench_inputs.py's ``collect``."""
    add_unrelated_runs(client, experiment_id, 3000)
    log_steps(client, experiment_id, paper)
    nested = client.create_run(experiment_id, tags={"mlflow.parentRunId": "elsewhere", "fold": "1"})
    client.log_batch(nested.info.run_id, metrics=[Metric("accuracy", 0.1, 0, 0)])
    comparison = client.create_run(experiment_id, tags={"model": "nbc", "dataset": "uci1",
                                                        "bayescompare.kind": "comparison"})
    client.log_batch(comparison.info.run_id, metrics=[Metric("accuracy", 0.5, 0, 0)])
    result = collect_scores(client, [experiment_id], "accuracy", ["nbc", "aode"])
    check(result, paper, "steps", "store")
    assert comparison.info.run_id not in result.runs_by_model["nbc"]


def test_duplicate_runs(client, experiment_id, paper):
    log_steps(client, experiment_id, paper)
    one = paper[(paper.model == "nbc") & (paper.dataset == "uci2")]
    newer = log_cv_scores("nbc", "uci2", one.score + 0.01, folds=FOLDS, repeats=REPEATS,
                          experiment_id=experiment_id, client=client)
    result = collect_scores(client, [experiment_id], "accuracy")
    with pytest.raises(InputError, match=f"dataset 'uci2': model 'nbc' has 2 runs \\(.*{newer}"):
        result.tensor("nbc", "aode")
    t = result.tensor("nbc", "aode", on_duplicate="latest")
    np.testing.assert_allclose(t.diffs[t.datasets.index("uci2")], expected_diffs(paper)["uci2"] + 0.01)


def test_folds_option_and_errors(client, experiment_id, paper):
    for (model, dataset), g in groups(paper):
        run = client.create_run(experiment_id, tags={"model": model, "dataset": dataset})
        client.log_batch(run.info.run_id, metrics=[Metric("accuracy", v, 0, int(i)) for i, v in zip(g.g, g.score)])
    with pytest.raises(InputError) as e:
        collect_scores(client, [experiment_id], "accuracy")
    assert "pass --folds K (folds=K) or log the run param 'cv_folds'" in str(e.value)
    check(collect_scores(client, [experiment_id], "accuracy", folds=FOLDS), paper, "steps", "store")
    client.log_param(run.info.run_id, "cv_folds", "ten")
    with pytest.raises(InputError, match=f"run {run.info.run_id}: param 'cv_folds' is 'ten', not a whole number"):
        collect_scores(client, [experiment_id], "accuracy")


def test_lookup_errors(client, experiment_id, paper):
    # an empty experiment is called empty, named by its name (issue 40, item 11)
    empty = client.create_experiment("nothing yet")
    with pytest.raises(InputError) as e:
        collect_scores(client, [empty], "accuracy", ["a", "b"])
    assert e.value.problems == [f"experiment 'nothing yet' (id {empty}) has no runs"]
    log_keys(client, experiment_id, paper)
    with pytest.raises(InputError, match="metric 'f1' not found .* metrics present: accuracy"):
        collect_scores(client, [experiment_id], "f1")
    with pytest.raises(InputError, match="model 'xgb' is in no run tagged 'model'; models present: aode, nbc"):
        collect_scores(client, [experiment_id], "accuracy", ["xgb", "nbc"])
    with pytest.raises(InputError, match="invalid filter string 'params.x = 1 OR params.y = 2'"):
        collect_scores(client, [experiment_id], "accuracy", filter_string="params.x = 1 OR params.y = 2")
    with pytest.raises(InputError, match="no run in experiment.* has tag 'algo' and tag 'dataset'\n.*the runs carry "
                                         "params: cv_folds, cv_repeats; tags: dataset, model"):
        collect_scores(client, [experiment_id], "accuracy", model_tag="algo")
    with pytest.raises(InputError, match="layout must be one of"):
        collect_scores(client, [experiment_id], "accuracy", layout="rows")
    untagged = client.create_run(experiment_id, tags={"model": "nbc"}).info.run_id
    with pytest.raises(InputError, match=f"1 run\\(s\\) have tag 'model' but no tag 'dataset' \\(e.g. {untagged}\\)"):
        collect_scores(client, [experiment_id], "accuracy")


def test_filter_string_and_quoted_names(client, experiment_id, paper):
    renamed = paper.assign(model=paper.model.map({"nbc": "it's", "aode": 'say "hi"'}))
    log_steps(client, experiment_id, renamed, params={"round": "1"})
    log_steps(client, experiment_id, renamed.assign(score=0.5), params={"round": "2"})
    result = collect_scores(client, [experiment_id], "accuracy", ["it's", 'say "hi"'],
                            filter_string="params.round = '1'")
    assert sorted(result.runs_by_model) == ['it\'s', 'say "hi"']
    t = result.tensor("it's", 'say "hi"')
    np.testing.assert_allclose(t.diffs[0], expected_diffs(paper)[t.datasets[0]])


def test_resolve_and_discover(client, experiment_id, paper):
    log_keys(client, experiment_id, paper)
    assert resolve_experiments(client, names=["cv"], ids=[experiment_id]) == [experiment_id]
    with pytest.raises(InputError) as e:
        resolve_experiments(client, names=["nope"], ids=["12345"])
    assert e.value.problems == ["no experiment named 'nope'", "no experiment with id '12345'"]
    found = discover(client, [experiment_id])
    assert found == {"models": ["aode", "nbc"], "datasets": ["uci1", "uci2", "uci3"], "metrics": ["accuracy"],
                     "runs": 6, "model_key": "tag:model", "dataset_key": "tag:dataset"}


def test_progress_hook_hears_fetching(client, experiment_id, paper, monkeypatch):
    log_steps(client, experiment_id, paper)
    monkeypatch.setattr(identify_module, "PAGE", 4)  # 6 runs in pages of 4: one "listed" note
    heard = []
    collect_scores(client, [experiment_id], "accuracy",
                   progress=lambda stage, detail=None: heard.append((stage, detail)))
    assert ("fetching", "listed 4 runs") in heard
    assert heard[-1] == ("fetching", "read metric histories of 6/6 runs")
    assert {stage for stage, _ in heard} == {"fetching"}


# ---------------------------------------------------------------------------------------------- where names come from


def log_untagged(client, eid, df, names, model_param="estimator", **params):
    """One run per (model, dataset) with no tags, steps layout: the model in the param ``model_param`` and the run
    name, the dataset as the run's training input named ``names[dataset]`` (its digest the dataset's own), ``params``
    as ``{param: {(model, dataset): value}}``.  Returns ``(model, dataset) -> run id``."""
    ids = {}
    for (model, dataset), g in groups(df):
        rid = client.create_run(eid, run_name=model).info.run_id
        entity = Dataset(names[dataset], f"d{dataset}", "code", "{}")
        client.log_inputs(rid, datasets=[DatasetInput(entity, [InputTag("mlflow.data.context", "training")])])
        logged = {model_param: model, "cv_folds": FOLDS, "cv_repeats": REPEATS, "rows": dataset,
                  **{k: v[model, dataset] for k, v in params.items()}}
        client.log_batch(rid, metrics=[Metric("accuracy", v, 0, int(i)) for i, v in zip(g.g, g.score)],
                         params=[Param(k, str(v)) for k, v in logged.items()])
        ids[model, dataset] = rid
    return ids


def test_keys_detected_from_inputs_and_a_param(client, experiment_id, paper, caplog):
    """No tags: the datasets are the runs' inputs, the models the one param that varies within a dataset (not
    ``rows``, which varies with the dataset only); two datasets named alike are told apart by their digests.  The
    keys detected are said once, though a pre-flight looks for the models before it collects (issue 40)."""
    log_untagged(client, experiment_id, paper, {"uci1": "dataset", "uci2": "dataset", "uci3": "uci3"})
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        found = discover(client, [experiment_id])  # as a ranking's pre-flight looks for its models, then collects
        result = collect_scores(client, [experiment_id], "accuracy")
    assert (result.model_key, result.dataset_key, result.layout) == ("param:estimator", "input", "steps")
    said = " ".join(r.getMessage() for r in caplog.records)
    assert said.count("no run carries tag 'model' or tag 'dataset'") == 1 and "--model-key param:estimator" in said
    assert "dataset inputs named 'dataset' have 2 digests (duci1, duci2)" in said
    renamed = {"uci1": "dataset@duci1", "uci2": "dataset@duci2", "uci3": "uci3"}
    t = result.tensor("nbc", "aode")
    assert sorted(t.datasets) == sorted(renamed.values())
    for name, diff in expected_diffs(paper).items():
        np.testing.assert_allclose(t.diffs[t.datasets.index(renamed[name])], diff)
    assert (found["models"], found["model_key"], found["dataset_key"]) == (["aode", "nbc"], "param:estimator", "input")


def test_a_comparison_run_lists_the_datasets_it_compared(client, tracking_uri, experiment_id, paper):
    """The source runs' dataset inputs become the comparison run's own (context 'compared'), each once: MLflow's UI
    showed "Datasets: None" on it (issue 40, item 12)."""
    from mlflow_bayescompare.pipeline.compare import compare_runs

    log_untagged(client, experiment_id, paper, {"uci1": "dataset", "uci2": "dataset", "uci3": "uci3"})
    outcome = compare_runs(experiment_ids=[experiment_id], metric="accuracy", model_a="nbc", model_b="aode",
                           tracking_uri=tracking_uri, filter_string="params.rows = 'uci3'")  # one dataset: no Stan
    inputs = client.get_run(outcome.run_id).inputs.dataset_inputs
    assert [(i.dataset.name, i.dataset.digest, i.dataset.source_type) for i in inputs] == [("uci3", "duci3", "code")]
    assert [(t.key, t.value) for t in inputs[0].tags] == [("mlflow.data.context", "compared")]


def test_keys_given(client, experiment_id, paper):
    """param:, run-name and logged-model for the model, param: for the dataset; a model named by its logged
    model, created with the run as its source or listed in the run's outputs."""
    ids = log_untagged(client, experiment_id, paper, {"uci1": "a", "uci2": "b", "uci3": "c"})
    for (model, _), rid in ids.items():
        client.create_logged_model(experiment_id, name=f"{model}-model", source_run_id=rid)
    expected = expected_diffs(paper)
    for model_key, a, b in (("param:estimator", "nbc", "aode"), ("run-name", "nbc", "aode"),
                            ("logged-model", "nbc-model", "aode-model")):
        result = collect_scores(client, [experiment_id], "accuracy", [a, b], model_key=model_key,
                                dataset_key="param:rows")
        t = result.tensor(a, b)
        assert (result.model_key, result.dataset_key, sorted(t.datasets)) == (model_key, "param:rows", sorted(expected))
        np.testing.assert_allclose(t.diffs[t.datasets.index("uci2")], expected["uci2"])


def test_keys_that_match_nothing_or_do_not_decide(client, experiment_id, paper):
    """A key no run carries names the params and tags the runs carry; two varying params ask for a key; a run with
    two inputs and no training one is named."""
    seeds = {key: str(i) for i, key in enumerate(sorted(groups(paper).groups))}
    log_untagged(client, experiment_id, paper, {"uci1": "a", "uci2": "b", "uci3": "c"}, "kind", seed=seeds)
    with pytest.raises(InputError) as e:
        collect_scores(client, [experiment_id], "accuracy", model_key="param:model_type", dataset_key="input")
    assert "no run in experiment 'cv' (id 1) has param 'model_type' and a dataset input" in str(e.value)
    assert "the runs carry params: cv_folds, cv_repeats, kind, rows, seed; tags: none" in str(e.value)
    with pytest.raises(InputError, match="model 'rf' is in no run with param 'kind'; models present: aode, nbc"):
        collect_scores(client, [experiment_id], "accuracy", ["rf"], model_key="param:kind", dataset_key="input")
    with pytest.raises(InputError, match=r"(?s)Cannot tell the runs apart:.*several params vary across the runs "
                                         r"\(kind, seed\); .* carry params: cv_folds, cv_repeats, kind, rows, seed; "
                                         r"tags: none\. Say where the model is with --model-key"):
        collect_scores(client, [experiment_id], "accuracy")
    assert discover(client, [experiment_id], strict=False)["models"] == []
    rid = client.create_run(experiment_id, tags={"model": "nbc"}).info.run_id
    client.log_inputs(rid, datasets=[DatasetInput(Dataset(n, n, "code", "{}"), [InputTag("mlflow.data.context", c)])
                                     for n, c in (("x", "eval"), ("y", "test"))])
    with pytest.raises(InputError, match=f"run {rid} has 2 dataset inputs .*'x' \\(digest x, context eval\\)"):
        collect_scores(client, [experiment_id], "accuracy", dataset_key="input")


# ---------------------------------------------------------------------------------------------- means layout


def test_means_layout_end_to_end(client, experiment_id, paper):
    """One value per (model, dataset), auto-detected, and the signed-rank test on it equals the test on the numbers."""
    logged = paper_means(paper)
    log_means(client, experiment_id, logged)
    result = collect_scores(client, [experiment_id], "accuracy", ["nbc", "aode"])
    assert (result.layout, result.fetch_method, result.folds) == ("means", "store", {"uci1": 1, "uci2": 1, "uci3": 1})
    assert list(result.scores.columns) == collect_module.SCORE_COLUMNS and len(result.scores) == 6
    assert (result.scores[["repeat", "fold", "folds"]] == [0, 0, 1]).all().all()
    means = result.means("nbc", "aode")
    assert (means.model_a, means.model_b, means.metric, means.datasets) == ("nbc", "aode", "accuracy",
                                                                           ["uci1", "uci2", "uci3"])
    by_model = logged.set_index(["model", "dataset"])["score"]
    np.testing.assert_array_equal(means.scores_a, by_model["nbc"][means.datasets])
    np.testing.assert_array_equal(means.scores_b, by_model["aode"][means.datasets])
    assert (means.table["n"] == 1).all() and means.table["run_id_a"].notna().all()
    collected = signed_rank_test(means, seed=4)
    direct = signed_rank_test(by_model["nbc"][means.datasets].to_numpy(), by_model["aode"][means.datasets].to_numpy(),
                              datasets=means.datasets, model_a="nbc", model_b="aode", seed=4)
    timeless = [{**r.to_dict(), "diagnostics": {**r.diagnostics, "sampling_seconds": 0}} for r in (collected, direct)]
    assert timeless[0] == timeless[1]
    assert collect_scores(client, [experiment_id], "accuracy", layout="means").means("nbc", "aode").datasets == \
        means.datasets
    with pytest.raises(InputError, match="one 'accuracy' score per model and dataset .*--test signed-rank"):
        result.tensor("nbc", "aode")


def test_per_fold_layouts_reduce_to_means(client, experiment_id, paper):
    log_steps(client, experiment_id, paper)
    means = collect_scores(client, [experiment_id], "accuracy").means("nbc", "aode")
    expected = paper_means(paper).set_index(["model", "dataset"])["score"]
    np.testing.assert_allclose(means.scores_a, expected["nbc"][means.datasets])
    np.testing.assert_allclose(means.diffs, [expected_diffs(paper)[d].mean() for d in means.datasets])
    assert (means.table["n"] == FOLDS * REPEATS).all()


def test_means_layout_problems_are_named(client, experiment_id, paper, caplog):
    logged = paper_means(paper)
    ids = log_means(client, experiment_id, logged[~((logged.model == "aode") & (logged.dataset == "uci3"))])
    nan_run = log_means(client, experiment_id, pd.DataFrame({"model": ["nbc", "aode"], "dataset": ["uci4"] * 2,
                                                             "score": [np.nan, 0.8]}))[("nbc", "uci4")]
    result = collect_scores(client, [experiment_id], "accuracy")
    assert result.layout == "means"
    with pytest.raises(InputError) as e:
        result.means("nbc", "aode")
    assert e.value.problems == [f"dataset 'uci4' model 'nbc' (run {nan_run}): score is nan"]  # uci3 is left out
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        kept = result.means("nbc", "aode", drop_incomplete=True)
    assert (kept.datasets, kept.left_out) == (["uci1", "uci2"], {"uci3": "no scores of 'aode'"})
    assert any("dropping 1 incomplete dataset(s)" in r.getMessage() for r in caplog.records)
    one = collect_scores(client, [experiment_id], "accuracy", filter_string="tags.dataset = 'uci1'")
    with pytest.raises(InputError, match=r"Cannot run the signed-rank test:\n  - 1 dataset \('uci1'\): .* at least 2"):
        signed_rank_test(one.means("nbc", "aode"))

    newer = log_means(client, experiment_id, logged[(logged.model == "nbc") & (logged.dataset == "uci2")]
                      .assign(score=0.5))[("nbc", "uci2")]
    result = collect_scores(client, [experiment_id], "accuracy")
    with pytest.raises(InputError, match="(?s)dataset 'uci2': model 'nbc' has 2 runs .*--latest") as e:
        result.means("nbc", "aode", drop_incomplete=True)
    assert ids["nbc", "uci2"] in str(e.value) and newer in str(e.value)
    latest = result.means("nbc", "aode", drop_incomplete=True, on_duplicate="latest")
    assert latest.scores_a[latest.datasets.index("uci2")] == 0.5


def test_means_layout_takes_one_value_per_run(client, experiment_id, paper):
    for (model, dataset), g in groups(paper):
        run = client.create_run(experiment_id, tags={"model": model, "dataset": dataset})
        client.log_batch(run.info.run_id, metrics=[Metric("accuracy", v, 0, int(i)) for i, v in zip(g.g, g.score)])
    with pytest.raises(InputError) as e:
        collect_scores(client, [experiment_id], "accuracy", layout="means")
    assert "The means layout takes one 'accuracy' value per run" in str(e.value) and len(e.value.problems) == 6
    assert re.search(r"run \w+ \(model 'nbc', dataset 'uci1'\) holds 20 values of 'accuracy'", str(e.value))


def test_fetch_histories_is_re_exported_by_collect():
    assert collect_module.fetch_histories is fetch_histories  # benchmarks import it from collect


def test_unreachable_server_names_uri(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    with pytest.raises(BayesCompareError, match="MLflow at http://127.0.0.1:9 failed"):
        collect_scores(MlflowClient("http://127.0.0.1:9"), ["1"], "accuracy")


# ---------------------------------------------------------------------------------------------- real server


@pytest.mark.server
@pytest.mark.parametrize("layout, writer, method", [("steps", log_steps, "bulk"), ("keys", log_keys, "search")])
@pytest.mark.slow
def test_layouts_on_server(server_client, server_experiment_id, paper, layout, writer, method):
    writer(server_client, server_experiment_id, paper)
    check(collect_scores(server_client, [server_experiment_id], "accuracy", ["nbc", "aode"]), paper, layout, method)


@pytest.mark.server
@pytest.mark.slow
def test_children_on_server(server_client, server_experiment_id, paper):
    small = paper[(paper.dataset != "uci3") & (paper.g < 3)]  # each child run costs requests: keep it small
    log_children(server_client, server_experiment_id, small, folds=3)
    result = collect_scores(server_client, [server_experiment_id], "accuracy")
    assert result.layout == "children" and result.fetch_method == "search"
    t = result.tensor("nbc", "aode")
    expected = from_tidy(small.rename(columns={"g": "fold"}), "nbc", "aode", folds=3)
    assert t.datasets == expected.datasets
    for got, want in zip(t.diffs, expected.diffs):
        np.testing.assert_allclose(got, want)


@pytest.mark.server
@pytest.mark.slow
def test_bulk_chunks_and_methods_agree(server_client, server_experiment_id, paper, monkeypatch):
    log_steps(server_client, server_experiment_id, paper)
    runs = [r.info.run_id for r in server_client.search_runs([server_experiment_id])]
    reference, method = fetch_histories(server_client, runs, "accuracy")
    assert method == "bulk" and len(reference) == len(paper)
    monkeypatch.setattr(fetch_module, "BULK_MAX_POINTS", 20)  # 20 points per run: forces single-run fallback
    monkeypatch.setattr(fetch_module, "BULK_MAX_RUNS", 4)
    assert fetch_module._chunks(runs, {r: 5 for r in runs}, 4) == [runs[:4], runs[4:]]
    for how in ("bulk", "threads", "sequential"):
        got, used = fetch_histories(server_client, runs, "accuracy", method=how)
        assert used == how
        pd.testing.assert_frame_equal(got.drop(columns="timestamp"), reference.drop(columns="timestamp"))


@pytest.mark.server
@pytest.mark.slow
def test_resolve_on_server(server_client, server_experiment_id):
    name = server_client.get_experiment(server_experiment_id).name
    assert resolve_experiments(server_client, names=[name]) == [server_experiment_id]
    with pytest.raises(InputError, match="no experiment with id '987654'"):
        resolve_experiments(server_client, ids=["987654"])
