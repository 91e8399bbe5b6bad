"""``mlflow-bayescompare watch`` (issue 41) on a real sqlite store: exit codes that tell continue (3) apart from
decided (0) and inconclusive at the budget (4), ``--follow`` while another thread logs the repeats between looks,
``--timeout``, a changed design and a deleted source run refused with exit 2 and no traceback, and the live progress
line fitted to the terminal."""

from __future__ import annotations

import io
import json
import threading
import time

import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from watched_runs import DESIGN, log_repeat, long_table, watch_runs_in

from mlflow_bayescompare.cli import main
from mlflow_bayescompare.vocabulary.progress import TerminalProgress


def _argv(tracking_uri, *extra, **changes) -> list[str]:
    design = {**DESIGN, **changes}
    options = [f"--{name.replace('_', '-')}={value}" for name, value in design.items()]
    return ["watch", "--tracking-uri", tracking_uri, "--experiment-name", "cv", "--metric", "accuracy",
            "--model-a", "rf", "--model-b", "svm", *options, *extra]


def _invoke(*argv):
    return CliRunner().invoke(main, list(argv))


def test_exit_codes_say_continue_decided_and_inconclusive(tracking_uri, client, experiment_id):
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.02)
    first = _invoke(*_argv(tracking_uri))
    assert first.exit_code == 3, first.output
    assert "Continue: at 2 repeats, P(rf better) 0.888" in first.stdout and "Design registered" in first.stdout
    for seed in (2, 3):
        log_repeat(client, experiment_id, seed, 0.02)
    decided = _invoke(*_argv(tracking_uri, "--json"))
    assert decided.exit_code == 0, decided.output
    report = json.loads(decided.stdout)
    assert report["answer"] == "a_better" and report["size"] == 4 and [r["size"] for r in report["looks"]] == [2, 3, 4]
    assert report["fingerprint"] == client.get_run(report["run_id"]).data.tags["bayescompare.design_fingerprint"]
    # a new watch (another target experiment) whose budget is 2 repeats, at a stricter threshold
    budget = _invoke(*_argv(tracking_uri, "--target-experiment", "strict", max_size=2, threshold=0.99))
    assert budget.exit_code == 4, budget.output
    assert "Inconclusive at the budget of 2 repeats" in budget.stdout


def test_a_changed_design_and_a_deleted_source_run_exit_2_with_a_message(tracking_uri, client, experiment_id):
    for seed in range(2):
        log_repeat(client, experiment_id, seed, 0.0)
    assert _invoke(*_argv(tracking_uri)).exit_code == 3
    changed = _invoke(*_argv(tracking_uri, rope=0.02))
    assert changed.exit_code == 2 and "Traceback" not in changed.output
    assert "Error: a later look with a different design is refused" in changed.stderr
    assert "rope: 0.01 → 0.02" in changed.stderr
    gone = client.search_runs([experiment_id], "tags.model = 'rf'")[0].info.run_id
    client.delete_run(gone)
    deleted = _invoke(*_argv(tracking_uri))
    assert deleted.exit_code == 2 and f"source run {gone} (side A, rf" in deleted.stderr, deleted.output
    wrong = _invoke(*_argv(tracking_uri, "--run-a", "x"))
    assert wrong.exit_code == 2 and "--run-a applies to an evaluation watch, not test correlated-t" in wrong.stderr


def test_an_evaluation_watch_from_the_command_line(tracking_uri, client, experiment_id):
    """Two evaluation runs named by id (no CV option given: the CV options' defaults are no choice of the user's);
    A fails one item in eight, B one in three: continue at 20 items, A better at 40 (as in test_watch.py)."""
    runs = [client.create_run(experiment_id, run_name=name).info.run_id for name in ("prompt A", "prompt B")]
    argv = ["watch", "--tracking-uri", tracking_uri, "--run-a", runs[0], "--run-b", runs[1], "--test", "eval-binary",
            "--rope", "0.02", "--min-size", "20", "--max-size", "100", "--look-every", "20", "--planning-sd", "0.5"]
    codes = []
    for items in (20, 40):
        for run_id, passes in zip(runs, (lambda i: i % 8 != 3, lambda i: i % 3 != 0)):
            client.log_text(run_id, long_table(range(items), passes), "eval_scores.csv")
        result = _invoke(*argv)
        codes.append(result.exit_code)
    assert codes == [3, 0], result.output
    assert "Decided at 40 items: prompt A better" in result.stdout


def test_follow_looks_again_as_repeats_arrive_until_decided(tracking_uri, client, experiment_id):
    """Another thread logs a repeat of each model every 0.3 s; ``--follow`` reads every 0.2 s and stops once the
    design decides (at 4 repeats, as in test_watch.py), with the progress of each read on stderr."""
    log_repeat(client, experiment_id, 0, 0.02)

    def grow():
        writer = MlflowClient(tracking_uri)
        for seed in range(1, 6):
            time.sleep(0.3)
            log_repeat(writer, experiment_id, seed, 0.02)

    thread = threading.Thread(target=grow)
    thread.start()
    try:
        result = _invoke(*_argv(tracking_uri, "--follow", "--interval", "0.2", "--timeout", "60", "--json"))
    finally:
        thread.join()
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["answer"] == "a_better" and [r["size"] for r in report["looks"]] == [2, 3, 4]
    assert "next read in 0.2 s" in result.stderr and report["registered"] and report["operating"]["lines"]
    (run,) = watch_runs_in(client, experiment_id)
    assert run.info.status == "FINISHED"
    assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "p_a_better")) == [2, 3, 4]


def test_follow_gives_up_at_its_timeout_undecided(tracking_uri, client, experiment_id):
    log_repeat(client, experiment_id, 0, 0.02)
    started = time.monotonic()
    result = _invoke(*_argv(tracking_uri, "--follow", "--interval", "0.3", "--timeout", "1"))
    assert result.exit_code == 3, result.output
    assert "stopped following after" in result.stdout and time.monotonic() - started < 30
    (run,) = watch_runs_in(client, experiment_id)
    assert run.info.status == "RUNNING"


def test_the_live_line_fits_the_terminal_keeping_stage_and_time(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "50")
    out = Tty()
    with TerminalProgress(out, tick=0.05) as progress:
        progress("fetching", "7 of 30 repeats: P(rf better) 0.912, P(practically equivalent) 0.080")
        time.sleep(0.15)
    shown = {line.rstrip() for line in out.getvalue().replace("\n", "\r").split("\r") if line.strip()}
    assert shown == {"bayescompare: fetching 7 of 30 repeats: P(… (0 s)"}  # 49 characters: the width less one


@pytest.mark.parametrize("test, problem", [("eval-binary", "name them (run_a"),
                                           ("correlated-t", "Missing option '--model-a'")])
def test_missing_sources_are_named(tracking_uri, test, problem):
    result = _invoke("watch", "--tracking-uri", tracking_uri, "--test", test, "--min-size", "2", "--max-size", "9",
                     "--planning-sd", "0.5")
    assert result.exit_code == 2 and problem in result.stderr and "Traceback" not in result.output, result.output
