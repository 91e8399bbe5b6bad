"""A watch (issue 41) through a real ``mlflow server --app-name bayescompare`` on sqlite: the looks are made with
``watch_runs`` over HTTP, the plugin's JSON API gives the watch run's path (its design and every look, the same
probabilities), the run stays RUNNING between looks (a server does not mark it stale), and the page draws the path
in headless Chromium, model A's name a script that must not run."""

from __future__ import annotations

import pytest
import requests
from mlflow import MlflowClient
from servers import Server, chromium_page, require_chromium
from watched_runs import DESIGN, log_repeat

from mlflow_bayescompare.pipeline.watch import watch_runs

pytestmark = [pytest.mark.server, pytest.mark.slow]
MODEL_A = '<img src=x onerror=alert("a")>rf'


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """A server, and a watch undecided after its looks at 2 and 3 repeats (P(rf better) 0.888, 0.947)."""
    tmp = tmp_path_factory.mktemp("watch-server")
    srv = Server(tmp, f"sqlite:///{tmp / 'mlflow.db'}", extra=["--workers", "1"])
    try:
        client = MlflowClient(srv.url)
        experiment_id = client.create_experiment("cv")
        for seed in range(3):
            log_repeat(client, experiment_id, seed, 0.02, models=(MODEL_A, "svm"))
        outcome = watch_runs(experiment_ids=[experiment_id], tracking_uri=srv.url, metric="accuracy", model_a=MODEL_A,
                             model_b="svm", **DESIGN)
        yield srv, client, outcome
    finally:
        srv.stop()


def test_the_api_gives_the_watch_runs_path(watched):
    srv, client, outcome = watched
    assert outcome.answer == "continue" and [r.size for r in outcome.look.rows] == [2, 3]
    answer = requests.get(f"{srv.url}/bayescompare/api/comparisons/get", params={"run_id": outcome.run_id},
                          timeout=30)
    assert answer.status_code == 200, answer.text
    job = answer.json()
    assert job["kind"] == "watch" and job["status"] == "RUNNING" and job["verdict"] == outcome.sentence()
    watch = job["watch"]
    assert watch["fingerprint"] == outcome.design.fingerprint and watch["design"]["max_size"] == DESIGN["max_size"]
    assert watch["unit"] == "repeats" and watch["answer"] == "continue"
    assert [(r["size"], r["p_a_better"], r["p_rope"], r["p_b_better"]) for r in watch["rows"]] == [
        (r.size, r.p_a_better, r.p_rope, r.p_b_better) for r in outcome.look.rows]
    assert {s["run_id"] for s in watch["sources"]} == {s.run_id for s in outcome.sources}
    assert client.get_run(outcome.run_id).info.status == "RUNNING"  # not ended as a stale job
    listed = requests.get(f"{srv.url}/bayescompare/api/comparisons", timeout=30).json()["comparisons"]
    assert [c["run_id"] for c in listed if c["kind"] == "watch"] == [outcome.run_id]


@pytest.mark.browser
def test_the_page_draws_the_path_of_the_looks(watched):
    srv, _, outcome = watched
    require_chromium()
    with chromium_page() as (page, dialogs):
        page.goto(f"{srv.url}/bayescompare/?run_id={outcome.run_id}")
        page.wait_for_selector("#watch:not([hidden])")
        assert page.text_content("#job-status").startswith("Watching: undecided")
        assert page.text_content("#verdict") == outcome.sentence()
        lines = page.eval_on_selector_all("#watch-path polyline", "ls => ls.map(l => [l.getAttribute('class'), "
                                                                  "l.getAttribute('points').split(' ').length])")
        assert lines == [["a", 2], ["rope", 2], ["b", 2]]
        assert page.locator("#watch-path line.threshold").count() == 1
        cells = page.eval_on_selector_all("#looks tbody tr",
                                          "rs => rs.map(r => Array.from(r.cells, c => c.textContent))")
        assert cells == [["2", "0.888", "0.112", "<0.001", "continue"], ["3", "0.947", "0.053", "<0.001", "continue"]]
        assert page.text_content("#looks-a") == f"P({MODEL_A} better)"
        assert page.locator("img").count() == 0
        page.wait_for_selector(f'#past tr[data-run-id="{outcome.run_id}"]')
        assert page.text_content(f'#past tr[data-run-id="{outcome.run_id}"] td.status') == "RUNNING · between looks"
        assert page.eval_on_selector_all("#watch-path text", "ts => ts.map(t => t.textContent)")[-3:] == [
            MODEL_A, "rope", "svm"]
    assert dialogs == []
