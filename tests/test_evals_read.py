"""Evaluation runs read as MLflow records them (``reads.evaluations``): real ``mlflow.genai.evaluate`` runs with
deterministic code scorers (offline, no LLM), real ``mlflow.models.evaluate`` runs, long tables logged as artifacts,
on a sqlite store built once for the module; one read through a real ``mlflow server`` (sqlite and PostgreSQL).

The expected values are computed here from the scorers' definitions, item by item, not read back through the
reader."""

from __future__ import annotations

import io
import json
import os
import shutil
import uuid

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource
from mlflow.genai.scorers import scorer
from mlflow.metrics import MetricValue, make_metric

from mlflow_bayescompare.reads import eval_traces
from mlflow_bayescompare.reads.evalitems import inputs_key
from mlflow_bayescompare.reads.evaluations import EVAL_COLUMNS, read_evaluations
from mlflow_bayescompare.vocabulary.errors import InputError

HOSTILE_RUN = "<img src=x>](javascript:alert(1))\nprompt-B " + "b" * 300
HOSTILE_SCORER = "<img src=x onerror=alert(1)>](javascript:x)\nreviewer " + "s" * 300
HOSTILE_ITEMS = ["<img src=x>", "](javascript:alert(1))", "line\nbreak", "i" * 300, "plain"]
TEST_NAME = "mlflow.test.name"  # the tag @mlflow.test sets on each trace (mlflow.pytest.session.TAG_TEST_NAME)
A_ITEMS, B_ITEMS = list(range(12)), [*range(10), 20, 21]  # 10 items in common, 2 of each run alone
REPEATED = (0, 1)  # evaluated twice in run A
LONG = (8, 9)


# ---------------------------------------------------------------------------------------------- the systems


def number(question: str) -> int:
    return int(question.split()[-1])


def answer(i: int) -> str:
    return f"a{i % 3}"


def predict_a(context, question, passage):
    i = number(question)
    return answer(i) if i % 4 else "wrong"


def predict_b(context, question, passage):
    return f"a{number(question) % 2}"


@scorer
def exact(outputs, expectations):
    return outputs == expectations["answer"]


@scorer
def polite(outputs):
    return "yes" if outputs.startswith("a") else "no"


@scorer
def grade(inputs, outputs):
    return 1 + (number(inputs["question"]) + len(outputs)) % 5


@scorer
def overlap(inputs, outputs):
    if number(inputs["question"]) % 7 == 3:
        raise RuntimeError("overlap failed <img src=x>")
    return len(set(outputs)) / 10


@scorer(name="grade")
def grade_again(outputs):
    return 5


def expected(i: int, predict) -> dict:
    """Each scorer's value on item ``i`` of the system ``predict``, from the definitions above."""
    out = predict("", f"question {i}", None)
    values = {"exact": out == answer(i), "polite": "yes" if out.startswith("a") else "no",
              "grade": 1 + (i + len(out)) % 5}
    if i % 7 != 3:
        values["overlap"] = len(set(out)) / 10
    return values


def inputs(i: int) -> dict:
    """Item i's inputs, as its trace records them (the arguments of the predict function, in its order): items 8
    and 9 open with one long context, told apart after MLflow's 1,000-character preview (and its 250-character
    metadata copy) of a trace's inputs."""
    return {"context": "c" * 1200 + str(i) if i in LONG else "short", "question": f"question {i}",
            "passage": f"p{i // 5}"}


def rows(numbers) -> list[dict]:
    return [{"inputs": inputs(i), "expectations": {"answer": answer(i)},
             "tags": {"suite": "odd" if i % 2 else "even"}} for i in numbers]


def evaluate(name: str, data, scorers, predict=None) -> str:
    with mlflow.start_run(run_name=name) as run:
        mlflow.genai.evaluate(data=data, predict_fn=predict, scorers=scorers)
    return run.info.run_id


def traces(run_id: str) -> list:
    return MlflowClient().search_traces(locations=[mlflow.get_run(run_id).info.experiment_id], run_id=run_id,
                                        include_spans=False, max_results=500)


def question_of(trace) -> int:
    return number(json.loads(MlflowClient().get_trace(trace.info.trace_id).data.request)["question"])


# ---------------------------------------------------------------------------------------------- the store


@pytest.fixture(scope="module")
def store(tmp_path_factory, _empty_sqlite_db):
    """A sqlite store of the module's own, the global tracking URI while the module runs."""
    folder = tmp_path_factory.mktemp("evals")
    shutil.copy(_empty_sqlite_db, folder / "mlflow.db")
    uri, previous = f"sqlite:///{folder / 'mlflow.db'}", mlflow.get_tracking_uri()
    experiment_env = os.environ.get("MLFLOW_EXPERIMENT_ID")  # mlflow.set_experiment sets it: a later `mlflow run`
    mlflow.set_tracking_uri(uri)                             # in a subprocess would read it
    mlflow.set_experiment(experiment_id=mlflow.create_experiment("evals", (folder / "artifacts").as_uri()))
    yield uri
    mlflow.set_tracking_uri(previous)
    os.environ.pop("MLFLOW_EXPERIMENT_ID", None) if experiment_env is None else \
        os.environ.__setitem__("MLFLOW_EXPERIMENT_ID", experiment_env)


@pytest.fixture(scope="module")
def genai(store):
    """The module's ``mlflow.genai.evaluate`` runs (ids by name): A and B (10 items in common, 2 of each alone;
    items 0 and 1 twice in A; a human's override in A, a human's later feedback in B; a reviewer's feedback under a
    hostile name on every trace of both), D (A's traces judged again by another 'grade'), E and F (different
    inputs, the same @mlflow.test cases), S (no trace: MLFLOW_GENAI_EVAL_SKIP_TRACE_VALIDATION)."""
    scorers = [exact, polite, grade, overlap]
    ids = {"A": evaluate("prompt-A", rows([*A_ITEMS, *REPEATED]), scorers, predict_a),
           "B": evaluate(HOSTILE_RUN, rows(B_ITEMS), scorers, predict_b)}
    for trace in traces(ids["A"]):
        if question_of(trace) == 2:
            judged = next(a for a in trace.info.assessments if a.name == "exact")
            mlflow.override_feedback(trace_id=trace.info.trace_id, assessment_id=judged.assessment_id,
                                     value=not judged.feedback.value, source=AssessmentSource("HUMAN", "reviewer"))
    for trace in traces(ids["B"]):
        if question_of(trace) == 4:  # a later feedback of the same name, valid beside the scorer's: the latest counts
            mlflow.log_feedback(trace_id=trace.info.trace_id, name="exact", value=not expected(4, predict_b)["exact"],
                                source=AssessmentSource("HUMAN", "reviewer"))
    for rid in (ids["A"], ids["B"]):
        for trace in traces(rid):
            mlflow.log_feedback(trace_id=trace.info.trace_id, name=HOSTILE_SCORER, value=question_of(trace),
                                source=AssessmentSource("HUMAN", "reviewer"))
    a_traces = mlflow.search_traces(locations=[mlflow.get_run(ids["A"]).info.experiment_id], run_id=ids["A"])
    ids["D"] = evaluate("judged-again", a_traces, [grade_again])
    for name, prompt in (("E", "v1"), ("F", "v2")):
        ids[name] = evaluate(f"case-{prompt}", [{"inputs": {"context": prompt, "question": f"case {i}", "passage": ""}}
                                                for i in range(3)], [polite], predict_b)
        for trace in traces(ids[name]):
            MlflowClient().set_trace_tag(trace.info.trace_id, TEST_NAME,
                                         f"tests/test_bot.py::test_answer[case{question_of(trace)}]")
    os.environ["MLFLOW_GENAI_EVAL_SKIP_TRACE_VALIDATION"] = "True"
    try:
        ids["S"] = evaluate("skipped", rows(range(2)), [polite], predict_a)
    finally:
        del os.environ["MLFLOW_GENAI_EVAL_SKIP_TRACE_VALIDATION"]
    return ids


@pytest.fixture(scope="module")
def classic(store):
    """Two ``mlflow.models.evaluate`` runs on the same 12 examples (static predictions, two per-example metrics)."""
    data = pd.DataFrame({"question": [f"question {i}" for i in range(12)], "passage": [f"p{i // 4}" for i in range(12)],
                         "target": [i % 3 for i in range(12)]})
    predictions = {"G": [(i * 7) % 3 for i in range(12)], "H": [i % 2 for i in range(12)]}

    def abs_error(predictions, targets, metrics):
        return MetricValue(scores=(predictions - targets).abs().tolist())

    def hit(predictions, targets, metrics):
        return MetricValue(scores=[bool(p == t) for p, t in zip(predictions, targets)])

    metrics = [make_metric(eval_fn=abs_error, greater_is_better=False, name="abs_error"),
               make_metric(eval_fn=hit, greater_is_better=True, name="hit")]
    ids = {}
    for name, pred in predictions.items():
        with mlflow.start_run(run_name=f"model-{name}") as run:
            mlflow.models.evaluate(data=data.assign(pred=pred), targets="target", predictions="pred",
                                   extra_metrics=metrics, evaluators="default")
        ids[name] = run.info.run_id
    return ids, data, predictions


@pytest.fixture(scope="module")
def tables(store):
    """Runs holding long tables (JSON through mlflow.log_table, with repeats named; CSV, repeats by order, one
    empty value, one item alone; hostile names in both; one sharing a fifth of their items), and a run that is no
    evaluation."""
    long = pd.DataFrame([{"item": item, "scorer": s, "value": v, "repeat": r, "cluster": f"c{k % 2}"}
                         for k, item in enumerate(HOSTILE_ITEMS) for r in (0, 1) if r == 0 or k < 2
                         for s, v in (("accuracy", k % 2 == 0), (HOSTILE_SCORER, k + r))])
    csv = pd.DataFrame([{"item": item, "scorer": s, "value": v}
                        for k, item in enumerate([*HOSTILE_ITEMS, "alone"])
                        for s, v in (("accuracy", "true" if k % 2 else "false"), (HOSTILE_SCORER, f"{k}.5"))])
    csv.loc[(csv["item"] == "plain") & (csv["scorer"] == "accuracy"), "value"] = ""
    csv = pd.concat([csv, csv[csv["item"] == HOSTILE_ITEMS[0]].assign(value=["yes", "7"])], ignore_index=True)
    ids = {}
    with mlflow.start_run(run_name="harness-json") as run:
        mlflow.log_table(long, "eval_scores.json")
    ids["json"] = run.info.run_id
    with mlflow.start_run(run_name="harness-csv") as run:
        buffer = io.StringIO()
        csv.to_csv(buffer, index=False)
        mlflow.log_text(buffer.getvalue(), "eval_scores.csv")
    ids["csv"] = run.info.run_id
    with mlflow.start_run(run_name="harness-few") as run:
        mlflow.log_table(pd.DataFrame({"item": ["plain", "x1", "x2", "x3", "x4"], "scorer": "accuracy", "value": 1.0}),
                         "eval_scores.json")
    ids["few"] = run.info.run_id
    with mlflow.start_run(run_name="training") as run:
        mlflow.log_metric("accuracy", 0.9)
    ids["plain"] = run.info.run_id
    return ids, long, csv


def value_of(table, system, item, scorer, repeat=0):
    found = table[(table["system"] == system) & (table["item"] == item) & (table["scorer"] == scorer)
                  & (table["repeat"] == repeat)]
    assert len(found) == 1, (system, item, scorer, repeat, len(found))
    return found.iloc[0]


# ---------------------------------------------------------------------------------------------- genai


@pytest.mark.slow
def test_genai_runs_pair_by_their_inputs_with_repeats_clusters_suites_and_errors(store, genai):
    client = MlflowClient(store)

    def state():
        return {rid: (client.get_run(rid).data.to_dictionary(),
                      sorted(a.assessment_id for t in traces(rid) for a in t.info.assessments))
                for rid in genai.values()}

    before = state()
    table, read = read_evaluations([genai["A"], genai["B"]], cluster="inputs.passage", suite="tag:suite")
    assert state() == before  # the reader wrote nothing
    assert list(table.columns) == EVAL_COLUMNS
    assert read.pairing == "inputs" and read.systems == ["prompt-A", HOSTILE_RUN]
    assert read.scorers == sorted(["exact", "grade", "overlap", "polite", HOSTILE_SCORER])
    item = {i: inputs_key(inputs(i)) for i in range(10)}
    assert set(table["item"]) == set(item.values()) and len(set(item.values())) == 10
    assert read.inputs[item[4]] == '{"context":"short","passage":"p0","question":"question 4"}'
    previews = {t.info.request_preview for t in traces(genai["A"]) if question_of(t) in LONG}
    assert len(previews) == 1  # MLflow's preview cannot tell items 8 and 9 apart; their whole inputs do
    assert {s: len(v) for s, v in read.unpaired.items()} == {"prompt-A": 2, HOSTILE_RUN: 2}
    for system, predict in (("prompt-A", predict_a), (HOSTILE_RUN, predict_b)):
        for i in range(10):
            for repeat in (0, 1) if system == "prompt-A" and i in REPEATED else (0,):
                for name, want in expected(i, predict).items():
                    row = value_of(table, system, item[i], name, repeat)
                    overridden = name == "exact" and (system, i) in (("prompt-A", 2), (HOSTILE_RUN, 4))
                    assert row["value"] == (not want if overridden else want)
                    assert type(row["value"]) is type(want), (name, row["value"])  # as MLflow returned it
                    assert row["source"] == ("HUMAN" if overridden else "CODE")
                    assert (row["cluster"], row["suite"]) == (f"p{i // 5}", "odd" if i % 2 else "even")
        errored = table[(table["system"] == system) & (table["scorer"] == "overlap")]
        assert item[3] not in set(errored["item"]) and len(errored) == 9 + (2 if system == "prompt-A" else 0)
    assert table.groupby("system")["repeat"].max().to_dict() == {"prompt-A": 1, HOSTILE_RUN: 0}
    runs = {r.system: r for r in read.runs}
    assert runs["prompt-A"].errored == {"overlap": 2} and runs[HOSTILE_RUN].errored == {"overlap": 1}
    assert (runs["prompt-A"].units, runs["prompt-A"].items, runs[HOSTILE_RUN].units) == (14, 10, 12)
    assert runs["prompt-A"].kind == "genai" and runs["prompt-A"].without_key == 0


@pytest.mark.slow
def test_each_run_counts_its_own_assessments_on_traces_evaluated_twice(genai):
    """D judged A's traces again: reading A gives A's grades, reading D its own (5)."""
    table, read = read_evaluations([genai["A"], genai["D"]], scorers=["grade"])
    assert read.pairing == "inputs" and not any(read.unpaired.values())
    a, d = (table.loc[table["system"] == s, "value"] for s in ("prompt-A", "judged-again"))
    assert set(d) == {5} and len(a) == len(d) == 14
    assert sorted(a) == sorted(expected(i, predict_a)["grade"] for i in [*A_ITEMS, *REPEATED])
    with pytest.raises(InputError, match="scorer 'overlap' is in run\\(s\\) 'prompt-A' only"):
        read_evaluations([genai["A"], genai["D"]], scorers=["overlap"])


@pytest.mark.slow
def test_test_cases_pair_runs_whose_inputs_differ_and_latency_is_read_when_asked(genai):
    table, read = read_evaluations([genai["E"], genai["F"]], scorers=["polite", "latency"])
    assert read.pairing == "test-case"
    assert sorted(set(table["item"])) == [f"tests/test_bot.py::test_answer[case{i}]" for i in range(3)]
    latency = table[table["scorer"] == "latency"]
    assert len(latency) == 6 and all(type(v) is int and v >= 0 for v in latency["value"])
    assert set(latency["source"]) == {"TRACE"}
    with pytest.raises(InputError, match="share no item .*paired by the canonical JSON"):
        read_evaluations([genai["A"], genai["E"]])


@pytest.mark.slow
def test_a_pair_key_and_a_cluster_tag_and_hostile_names_pass_through(genai):
    table, read = read_evaluations([genai["A"], genai["B"]], pair_key="inputs.question", cluster="tag:suite",
                                   scorers=[HOSTILE_SCORER])
    assert read.pairing == "pair-key" and read.pair_key == "inputs.question"
    with pytest.raises(InputError, match="Cannot pair(.|\n)*'prompt-A'.*none of its 14 items carries tag:nope"):
        read_evaluations([genai["A"], genai["B"]], pair_key="tag:nope")
    assert set(table["item"]) == {f"question {i}" for i in range(10)}
    assert set(table["system"]) == {"prompt-A", HOSTILE_RUN} and set(table["scorer"]) == {HOSTILE_SCORER}
    for _, row in table.iterrows():
        assert row["value"] == number(row["item"]) and row["source"] == "HUMAN"
        assert row["cluster"] == ("odd" if number(row["item"]) % 2 else "even")


@pytest.mark.slow
def test_a_run_without_traces_is_said_plainly(genai, monkeypatch):
    monkeypatch.setattr(eval_traces, "RETRY_DELAYS", (0.01,))
    with pytest.raises(InputError, match=f"run 'skipped' \\({genai['S']}\\) holds no per-item data: no trace"):
        read_evaluations([genai["S"], genai["A"]])


@pytest.mark.slow
def test_classic_runs_pair_row_by_row(classic):
    ids, data, predictions = classic
    table, read = read_evaluations([ids["G"], ids["H"]], cluster="inputs.passage")
    assert read.pairing == "row" and read.scorers == ["abs_error", "hit"]
    assert [r.kind for r in read.runs] == ["classic", "classic"]
    assert [r.artifact for r in read.runs] == ["eval_results_table.json"] * 2
    for name, pred in predictions.items():
        for i in range(12):
            assert value_of(table, f"model-{name}", f"row {i}", "abs_error")["value"] == abs(pred[i] - i % 3)
            hit = value_of(table, f"model-{name}", f"row {i}", "hit")
            assert hit["value"] is (pred[i] == i % 3) and hit["cluster"] == f"p{i // 4}"


@pytest.mark.slow
def test_kinds_are_not_mixed(genai, classic):
    with pytest.raises(InputError, match="different kinds(.|\n)*prompt-A.*: genai(.|\n)*model-G.*: classic"):
        read_evaluations([genai["A"], classic[0]["G"]])


# ---------------------------------------------------------------------------------------------- long tables


def test_long_tables_from_any_harness(tables):
    ids, long, csv = tables
    table, read = read_evaluations([ids["json"], ids["csv"]])
    assert read.pairing == "item" and [r.artifact for r in read.runs] == ["eval_scores.json", "eval_scores.csv"]
    assert set(table["item"]) == set(HOSTILE_ITEMS) and read.unpaired == {"harness-json": [], "harness-csv": ["alone"]}
    assert read.scorers == sorted(["accuracy", HOSTILE_SCORER])
    assert {r.system: r.errored for r in read.runs} == {"harness-json": {}, "harness-csv": {"accuracy": 1}}
    for k, item in enumerate(HOSTILE_ITEMS):
        for r in (0, 1) if k < 2 else (0,):
            row = value_of(table, "harness-json", item, HOSTILE_SCORER, r)
            assert row["value"] == k + r and row["cluster"] == f"c{k % 2}"
            assert value_of(table, "harness-json", item, "accuracy", r)["value"] is (k % 2 == 0)
        assert value_of(table, "harness-csv", item, HOSTILE_SCORER)["value"] == k + 0.5
    assert value_of(table, "harness-csv", HOSTILE_ITEMS[1], "accuracy")["value"] is True
    assert value_of(table, "harness-csv", HOSTILE_ITEMS[0], "accuracy", 1)["value"] == "yes"
    assert value_of(table, "harness-csv", HOSTILE_ITEMS[0], HOSTILE_SCORER, 1)["value"] == 7
    assert not ((table["item"] == "plain") & (table["scorer"] == "accuracy") & (table["system"] == "harness-csv")).any()
    # the order the items came in (a table's rows), which the table itself (sorted by item) does not keep
    assert read.arrival == {"harness-json": HOSTILE_ITEMS, "harness-csv": [*HOSTILE_ITEMS, "alone"]}


def test_a_low_overlap_is_refused_naming_the_runs_and_the_numbers(tables):
    ids, _, _ = tables
    with pytest.raises(InputError) as low:
        read_evaluations([ids["json"], ids["few"]])
    assert "the runs share 1 items, 20% of the smallest run's 5 (at least 50% needed" in str(low.value)
    assert "items per run: 'harness-json' 5, 'harness-few' 5" in str(low.value)


def test_bad_requests_are_named(tables, store):
    ids, _, _ = tables
    missing = uuid.uuid4().hex
    with pytest.raises(InputError) as absent:
        read_evaluations([ids["json"], missing])
    with pytest.raises(InputError) as unreadable:
        read_evaluations([ids["json"], ids["csv"]], can_read=lambda eid: False)
    assert str(absent.value).endswith(f"run '{missing}' not found")
    assert str(unreadable.value).splitlines()[1:] == [f"  - run '{ids['json']}' not found",
                                                      f"  - run '{ids['csv']}' not found"]
    with pytest.raises(InputError, match=f"run 'training' \\({ids['plain']}\\) is not an evaluation run"):
        read_evaluations([ids["json"], ids["plain"]])
    with pytest.raises(InputError, match="scorer 'bleu' is in none of the runs"):
        read_evaluations([ids["json"], ids["csv"]], scorers=["bleu"])
    with pytest.raises(InputError, match="pair_key must be inputs.<field> .* or tag:<name>"):
        read_evaluations([ids["json"], ids["csv"]], pair_key="question")
    with pytest.raises(InputError, match="at least two"):
        read_evaluations([ids["json"]])
    with pytest.raises(InputError, match="more than once"):
        read_evaluations([ids["json"], ids["json"]])
    with pytest.raises(InputError, match="has no artifact 'scores.csv'"):
        read_evaluations([ids["json"], ids["csv"]], table_artifact="scores.csv")


# ---------------------------------------------------------------------------------------------- a tracking server


@pytest.mark.slow
@pytest.mark.server
def test_runs_read_through_a_tracking_server(mlflow_server):
    """Two genai runs logged through a real ``mlflow server`` (sqlite, and PostgreSQL when configured) read back
    through it, every value as the scorers define it."""
    previous, experiment_env = mlflow.get_tracking_uri(), os.environ.get("MLFLOW_EXPERIMENT_ID")
    mlflow.set_tracking_uri(mlflow_server)
    try:
        mlflow.set_experiment(f"evals-{uuid.uuid4().hex[:8]}")
        ids = [evaluate(name, rows(range(6)), [exact, grade], predict)
               for name, predict in (("server-A", predict_a), ("server-B", predict_b))]
    finally:
        mlflow.set_tracking_uri(previous)
        os.environ.pop("MLFLOW_EXPERIMENT_ID", None) if experiment_env is None else \
            os.environ.__setitem__("MLFLOW_EXPERIMENT_ID", experiment_env)
    table, read = read_evaluations(ids, tracking_uri=mlflow_server)
    assert read.pairing == "inputs" and read.systems == ["server-A", "server-B"] and len(table) == 24
    for i in range(6):
        item = inputs_key(inputs(i))
        for system, predict in (("server-A", predict_a), ("server-B", predict_b)):
            for name in ("exact", "grade"):
                assert value_of(table, system, item, name)["value"] == expected(i, predict)[name]
