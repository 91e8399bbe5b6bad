"""Comparing evaluation runs end to end (``pipeline/evals.py``): real ``mlflow.genai.evaluate`` runs with
deterministic code scorers (offline, no LLM) on a sqlite store built once for the module, compared, ranked and
gated from the Python API, the run it logs read back; bad requests refused with nothing written; one comparison
through a real ``mlflow server`` (sqlite and PostgreSQL).

The expected numbers come from the scorers' definitions, item by item, and from the closed form of the paired 2×2
table's Dirichlet posterior (mean and sd of p01 − p10), not from the code under test."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import uuid
from html import escape as html_escape

import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource
from mlflow.genai.scorers import scorer
from mlflow.metrics import MetricValue, make_metric
from servers import chromium_page, require_chromium

from mlflow_bayescompare.cli import main
from mlflow_bayescompare.families.evals.models import PRIOR_ALPHA
from mlflow_bayescompare.pipeline.evals import compare_evaluation_runs, rank_evaluation_runs, require_evaluations
from mlflow_bayescompare.reads.evalitems import inputs_key
from mlflow_bayescompare.vocabulary import tags as T
from mlflow_bayescompare.vocabulary.errors import InputError

pytestmark = pytest.mark.slow  # the module's store holds real evaluations (a few seconds each)

HOSTILE_RUN = "<script>alert(1)</script>](javascript:alert(2)) # prompt-B"
HOSTILE_SCORER = "<img src=x onerror=alert(3)>](javascript:x) #tone"
HOSTILE_PASSAGE = "<script>alert(4)</script>](javascript:y) # p"  # a field of every item's inputs
ITEMS = 24


def number(question: str) -> int:
    return int(question.split()[-1])


def answer(i: int) -> str:
    return f"a{i % 3}"


def predict_a(question, passage):
    i = number(question)
    return answer(i) if i % 4 else "wrong"  # wrong on 0, 4, 8, ...


def predict_b(question, passage):
    i = number(question)
    return answer(i) if i % 6 else "nope"  # wrong on 0, 6, 12, 18


def predict_c(question, passage):
    return "wrong"


@scorer
def exact(outputs, expectations):
    return outputs == expectations["answer"]


@scorer
def tone(outputs):
    return 0.1 * len(outputs)


def rows(numbers) -> list[dict]:
    return [{"inputs": {"question": f"question {i}", "passage": f"{HOSTILE_PASSAGE}{i // 4}"},
             "expectations": {"answer": answer(i)}} for i in numbers]


def evaluate(name: str, data, predict) -> str:
    with mlflow.start_run(run_name=name) as run:
        mlflow.genai.evaluate(data=data, predict_fn=predict, scorers=[exact, tone])
    return run.info.run_id


def item_key(i: int) -> str:
    return inputs_key({"question": f"question {i}", "passage": f"{HOSTILE_PASSAGE}{i // 4}"})


@pytest.fixture(scope="module")
def store(tmp_path_factory, _empty_sqlite_db):
    """A sqlite store of the module's own (the global tracking URI while the module runs) holding genai runs A, B
    (a hostile name) and C on the same 24 items, D on other items, and a run that is no evaluation."""
    folder = tmp_path_factory.mktemp("evals-pipeline")
    shutil.copy(_empty_sqlite_db, folder / "mlflow.db")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with active_store(uri, lambda: mlflow.create_experiment("evals", (folder / "artifacts").as_uri())) as experiment_id:
        yield uri, experiment_id, _log_runs(experiment_id)


@contextlib.contextmanager
def active_store(uri: str, experiment):
    """``uri`` the tracking URI and the experiment ``experiment()`` creates the active one while inside; then both as
    they were, environment included (``mlflow.set_experiment`` sets ``MLFLOW_EXPERIMENT_ID``, which a later ``mlflow
    run`` in a subprocess would read)."""
    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID")}
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        experiment_id = experiment()
        mlflow.set_experiment(experiment_id=experiment_id)
        yield experiment_id
    finally:
        mlflow.set_tracking_uri(previous)
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def _log_runs(experiment_id: str) -> dict[str, str]:
    ids = {"A": evaluate("prompt-A", rows(range(ITEMS)), predict_a),
           "B": evaluate(HOSTILE_RUN, rows(range(ITEMS)), predict_b),
           "C": evaluate("prompt-C", rows(range(ITEMS)), predict_c),
           "D": evaluate("other-items", rows(range(100, 106)), predict_a)}
    for key, extra in (("A", 0), ("B", 1)):  # a reviewer's rating under a name MLflow's scorers may not have
        for trace in MlflowClient().search_traces(locations=[experiment_id], run_id=ids[key], include_spans=False):
            question = json.loads(trace.info.request_preview)["question"]
            mlflow.log_feedback(trace_id=trace.info.trace_id, name=HOSTILE_SCORER, value=number(question) % 5 + extra,
                                source=AssessmentSource("HUMAN", "reviewer"))
    with mlflow.start_run(run_name="training") as run:
        mlflow.log_metric("accuracy", 0.9)
    ids["plain"] = run.info.run_id
    return ids


def run_ids(uri: str, experiment_id: str) -> set[str]:
    return {r.info.run_id for r in MlflowClient(uri).search_runs([experiment_id], max_results=1000)}


def artifact(client: MlflowClient, run_id: str, path: str, folder) -> str:
    return open(client.download_artifacts(run_id, path, str(folder)), encoding="utf-8").read()


def dirichlet_difference(n01: int, n10: int, n: int) -> tuple[float, float]:
    """Mean and sd of p01 − p10 under Dirichlet(n + α) over the four cells of the paired 2×2 table."""
    total = n + 4 * PRIOR_ALPHA
    a01, a10 = n01 + PRIOR_ALPHA, n10 + PRIOR_ALPHA
    var = (a01 * (total - a01) + a10 * (total - a10) + 2 * a01 * a10) / (total ** 2 * (total + 1))
    return (a01 - a10) / total, math.sqrt(var)


def test_two_runs_compared_and_logged_with_every_name_escaped(store, tmp_path):
    uri, experiment_id, ids = store
    client = MlflowClient(uri)
    outcome = compare_evaluation_runs(ids["A"], ids["B"], seed=3, draws=20_000)
    a_ok = [predict_a(f"question {i}", "") == answer(i) for i in range(ITEMS)]
    b_ok = [predict_b(f"question {i}", "") == answer(i) for i in range(ITEMS)]
    n01 = sum(b and not a for a, b in zip(a_ok, b_ok))
    n10 = sum(a and not b for a, b in zip(a_ok, b_ok))
    mean, sd = dirichlet_difference(n01, n10, ITEMS)
    one = outcome.result.by_scorer["exact"]
    assert one.difference["mean"] == pytest.approx(mean, abs=4 * sd / math.sqrt(20_000))
    assert one.difference["sd"] == pytest.approx(sd, rel=0.03)
    rated = outcome.result.by_scorer[HOSTILE_SCORER]  # B rates every item one point higher (shrunk by the prior)
    assert one.kind["kind"] == "pass_fail" and rated.kind["kind"] == "ordinal"
    assert 0.8 < rated.difference["mean"] < 1 and rated.p_b_better > 0.99

    run = client.get_run(outcome.run_id)
    assert (run.info.status, run.info.experiment_id) == ("FINISHED", experiment_id)
    tags, metrics = run.data.tags, run.data.metrics
    assert (tags[T.RUN_A], tags[T.RUN_B], tags[T.SOURCE_RUNS]) == (ids["A"], ids["B"], f"{ids['A']},{ids['B']}")
    assert (tags[T.MODEL_A], tags[T.MODEL_B], tags[T.TEST]) == ("prompt-A", HOSTILE_RUN, "paired-evals")
    assert metrics["exact/p_b_better"] == pytest.approx(one.p_b_better)
    assert metrics["exact/difference"] == pytest.approx(mean, abs=0.01)
    assert 0 <= metrics["p_b_improves"] <= metrics["p_b_not_worse_on_all"] <= 1
    # every name in the description is data: no tag, no link, no heading it could open
    note = tags["mlflow.note.content"]
    for raw in ("<script>", "<img", "](javascript", "# prompt-B", "#tone"):
        assert raw not in note, raw
    html = artifact(client, outcome.run_id, "report.html", tmp_path)
    assert "<script" not in html.lower() and "<img src=x" not in html and "&lt;script&gt;alert(4)" in html
    # pairs.csv: each item's value in both runs, as the scorer defines it; disagreements first
    pairs = pd.read_csv(client.download_artifacts(outcome.run_id, "pairs.csv", str(tmp_path)))
    exact_rows = pairs[pairs["scorer"] == "exact"].reset_index(drop=True)
    assert len(exact_rows) == ITEMS and set(pairs["scorer"]) == {"exact", "tone", HOSTILE_SCORER}
    disagree = exact_rows["outcome"] != "tied"
    assert disagree.sum() == n01 + n10 and not disagree.iloc[n01 + n10:].any()
    for row in exact_rows.itertuples():
        i = next(k for k in range(ITEMS) if item_key(k) == row.item)
        assert (row.value_a, row.value_b) == (float(a_ok[i]), float(b_ok[i]))
    sensitivity = pd.read_csv(client.download_artifacts(outcome.run_id, "rope_sensitivity.csv", str(tmp_path)))
    assert set(sensitivity["scorer"]) == {"exact", "tone", HOSTILE_SCORER} and len(sensitivity) == 15
    summary = json.loads(artifact(client, outcome.run_id, "summary.json", tmp_path))
    assert summary["read"]["pairing"] == "inputs"
    assert outcome.to_dict()["mlflow_compare_route"] == (
        f"#/experiments/{experiment_id}/evaluation-runs?selectedRunUuid={ids['A']}&compareToRunUuid={ids['B']}")


def test_the_gate_reads_one_joint_probability(store):
    _, _, ids = store
    outcome = compare_evaluation_runs(ids["C"], ids["A"], log=False, scorers="exact", seed=1)
    report = require_evaluations(outcome, "better")  # A (here B) passes 18 of 24, C none
    assert report.supported and report.probability > 0.99
    with pytest.raises(AssertionError, match="claim .*equivalent.* not supported"):
        require_evaluations(outcome, "equivalent")
    with pytest.raises(InputError, match="scorer 'latency', which is not compared"):
        require_evaluations(outcome, "latency=better")


def test_three_runs_ranked_and_logged(store, tmp_path):
    uri, experiment_id, ids = store
    outcome = rank_evaluation_runs([ids["A"], ids["B"], ids["C"]], scorers=["exact"], seed=2)
    ranking = outcome.result.by_scorer["exact"].ranking
    assert ranking["system"].iloc[-1] == "prompt-C"  # fails every item
    run = MlflowClient(uri).get_run(outcome.run_id)
    assert run.data.tags[T.KIND] == "ranking" and run.data.tags[T.SOURCE_RUNS].split(",") == \
        [ids["A"], ids["B"], ids["C"]]
    p_best = {k: v for k, v in run.data.metrics.items() if k.startswith("p_best")}
    assert len(p_best) == 3 and sum(p_best.values()) == pytest.approx(1)
    hostile = rank_evaluation_runs([ids["A"], ids["B"], ids["C"]], vs=ids["B"], seed=2)  # every scorer
    assert set(hostile.result.by_scorer) == {"exact", "tone"}  # C has no reviewer's rating: not shared
    run = MlflowClient(uri).get_run(hostile.run_id)
    html = artifact(MlflowClient(uri), hostile.run_id, "report.html", tmp_path)
    for raw in ("<script>", "](javascript", "# prompt-B"):
        assert raw not in run.data.tags["mlflow.note.content"], raw
    assert "<script" not in html.lower() and f"against {html_escape(HOSTILE_RUN)}" in html


@pytest.mark.parametrize("request_, words", [
    (lambda ids: dict(run_a=ids["A"], run_b=uuid.uuid4().hex[:32]), "not found"),
    (lambda ids: dict(run_a=ids["A"], run_b=ids["D"]), "share no item"),
    (lambda ids: dict(run_a=ids["A"], run_b=ids["B"], scorers="correctness"), "scorer 'correctness' is in none"),
    (lambda ids: dict(run_a=ids["A"], run_b=ids["plain"]), "is not an evaluation run"),
    (lambda ids: dict(run_a=ids["A"], run_b=ids["B"], rope="nope=0.1"), "rope names scorer(s) not compared: 'nope'"),
    (lambda ids: dict(run_a=ids["A"], run_b=ids["B"], claim="bleu=better"), "scorer 'bleu', which is not compared"),
    (lambda ids: dict(run_a=ids["A"], run_b=ids["A"]), "run A and run B are both"),
], ids=["unknown-run", "no-shared-item", "unknown-scorer", "not-an-evaluation", "rope-scorer", "claim-scorer",
        "same-run"])
def test_a_bad_request_is_named_and_writes_nothing(store, request_, words):
    uri, experiment_id, ids = store
    before = run_ids(uri, experiment_id)
    with pytest.raises(InputError) as refused:
        compare_evaluation_runs(**request_(ids))
    assert words in str(refused.value)
    assert run_ids(uri, experiment_id) == before


@pytest.mark.server
def test_a_comparison_through_a_tracking_server(mlflow_server):
    """Logged through a real ``mlflow server`` (sqlite, and PostgreSQL when configured), compared there, the
    comparison run written there."""
    with active_store(mlflow_server, lambda: mlflow.create_experiment(f"evals-{uuid.uuid4().hex[:8]}")) as \
            experiment_id:
        a, b = (evaluate(name, rows(range(8)), predict) for name, predict in (("srv-A", predict_a),
                                                                               ("srv-B", predict_b)))
    outcome = compare_evaluation_runs(a, b, tracking_uri=mlflow_server, seed=1)
    run = MlflowClient(mlflow_server).get_run(outcome.run_id)
    assert run.info.status == "FINISHED" and run.info.experiment_id == experiment_id
    assert run.data.tags[T.SOURCE_RUNS] == f"{a},{b}" and outcome.result.counts["items"] == 8
    names = {f.path for f in MlflowClient(mlflow_server).list_artifacts(outcome.run_id)}
    assert {"pairs.csv", "report.html", "report.md", "summary.json", "rope_sensitivity.csv", "plots"} <= names


# ---------------------------------------------------------------------------------------------- the command line


def compare_evals(uri: str, *args: str):
    return CliRunner().invoke(main, ["compare-evals", "--tracking-uri", uri, "--seed", "4", *args])


def test_the_command_line_prints_each_scorer_and_logs_the_run(store):
    uri, experiment_id, ids = store
    before = run_ids(uri, experiment_id)
    result = compare_evals(uri, "--run-a", ids["C"], "--run-b", ids["A"], "--scorers", "exact,tone",
                           "--rope", "exact=0.05", "--require", "exact=better")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("prompt-C vs prompt-A · evaluation runs: 24 paired items of 2 runs (genai evaluations)")
    assert "  exact (pass_fail, higher is better, rope ±0.05; 24 items)" in text
    assert "    prompt-A − prompt-C = +0.6" in text and "P(prompt-A better) 1.000" in text  # closed form: 18/28
    assert "Claim 'prompt-A vs prompt-C: better on exact'" in text and "→ supported" in text
    assert f"selectedRunUuid={ids['C']}&compareToRunUuid={ids['A']}" in text
    [new] = run_ids(uri, experiment_id) - before
    assert f"Comparison run {new} in experiment {experiment_id}" in text
    assert MlflowClient(uri).get_run(new).data.tags[T.REQUIRE] == "exact=better@0.95"


def test_the_command_lines_json_and_exit_codes(store):
    uri, experiment_id, ids = store
    before = run_ids(uri, experiment_id)
    refused = compare_evals(uri, "--run-a", ids["A"], "--run-b", ids["B"], "--require", "improves", "--no-log",
                            "--json")
    assert refused.exit_code == 1 and "Error: claim " in refused.stderr and "not supported" in refused.stderr
    report = json.loads(refused.stdout)
    assert report["require"]["claim"] == "improves" and report["require"]["supported"] is False
    assert set(report["require"]["scorers"]) == {"exact", "tone", HOSTILE_SCORER}
    assert [r["run_id"] for r in report["runs"]] == [ids["A"], ids["B"]] and report["run_id"] is None
    ranked = compare_evals(uri, "--runs", f"{ids['A']},{ids['B']},{ids['C']}", "--scorers", "exact", "--vs",
                           ids["C"], "--no-log")
    assert ranked.exit_code == 0, ranked.output
    assert ranked.stdout.startswith("Ranking of 3 evaluation runs") and "against prompt-C" not in ranked.stderr
    absent = uuid.uuid4().hex
    for args, words in ((["--run-a", ids["A"], "--run-b", absent], f"run '{absent}' not found"),
                        (["--run-a", ids["A"], "--run-b", ids["B"], "--scorers", "bleu"],
                         "scorer 'bleu' is in none of the runs"),
                        (["--run-a", ids["A"], "--run-b", ids["D"]], "share no item"),
                        (["--run-a", ids["A"]], "name the evaluation runs: run_a and run_b"),
                        (["--run-a", ids["A"], "--run-b", ids["B"], "--require", "exact=best"], "--require")):
        result = compare_evals(uri, *args)
        assert result.exit_code == 2 and words in result.stderr, (args, result.output)
        assert "Traceback" not in result.output
    assert run_ids(uri, experiment_id) == before


# ---------------------------------------------------------------------------------------------- classic evaluations


def test_two_classic_evaluations_compared_row_by_row(store, tmp_path):
    """Two ``mlflow.models.evaluate`` runs (static predictions on the same 12 rows; a per-row metric where lower is
    better, as the metric declares it) compared pair by pair of rows."""
    uri, experiment_id, _ = store
    data = pd.DataFrame({"question": [f"question {i}" for i in range(12)], "target": [i % 3 for i in range(12)]})
    metric = make_metric(eval_fn=lambda predictions, targets, metrics: MetricValue(
        scores=(predictions - targets).abs().tolist()), greater_is_better=False, name="abs_error")
    ids = []
    for name, predictions in (("model-G", [(i * 2) % 3 for i in range(12)]), ("model-H", [i % 3 for i in range(12)])):
        with mlflow.start_run(run_name=name) as run:
            mlflow.models.evaluate(data=data.assign(pred=predictions), targets="target", predictions="pred",
                                   extra_metrics=[metric], evaluators="default")
        ids.append(run.info.run_id)
    outcome = compare_evaluation_runs(*ids, scorers="abs_error", direction="abs_error=lower", seed=1)
    one = outcome.result.by_scorer["abs_error"]
    assert outcome.read.pairing == "row" and one.counts["items"] == 12 and not one.greater_is_better
    assert one.difference["mean"] < 0 and one.p_b_better > 0.95  # H is exact on every row, G on 4 of 12 (off by 1 on 8)
    pairs = pd.read_csv(MlflowClient(uri).download_artifacts(outcome.run_id, "pairs.csv", str(tmp_path)))
    g = [abs((i * 2) % 3 - i % 3) for i in range(12)]
    assert dict(zip(pairs["item"], pairs["value_a"])) == {f"row {i}": float(g[i]) for i in range(12)}
    assert set(pairs["value_b"]) == {0.0} and (pairs["outcome"] == "B better").sum() == sum(v > 0 for v in g)


@pytest.mark.server
@pytest.mark.browser
@pytest.mark.parametrize("mlflow_server", ["sqlite"], indirect=True)
def test_the_link_opens_mlflows_own_comparison_of_the_two_runs(mlflow_server):
    """The route every view links (``compare_route``) opens MLflow's Evaluations tab comparing run A to run B, in
    MLflow's own UI in Chromium."""
    require_chromium()
    with active_store(mlflow_server, lambda: mlflow.create_experiment(f"evals-{uuid.uuid4().hex[:8]}")):
        a, b = (evaluate(name, rows(range(4)), predict) for name, predict in (("view-A", predict_a),
                                                                               ("view-B", predict_b)))
    outcome = compare_evaluation_runs(a, b, tracking_uri=mlflow_server, log=False, seed=1)
    with chromium_page() as (page, dialogs):
        page.goto(f"{mlflow_server}/{outcome.compare_route}")
        page.get_by_text("Comparing", exact=True).wait_for(timeout=60_000)
        assert page.get_by_text("view-A", exact=True).count() >= 2 and page.get_by_text("view-B").count() >= 2
    assert dialogs == []
