"""The ``mlflow-bayescompare`` command line: output, exit codes, logging or not, ``matrix`` and ``demo``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from servers import require_module
from uci_runs import artifact_paths, log_uci, uci_scores

from mlflow_bayescompare.cli import main
from mlflow_bayescompare.families.hierarchical.run import COMPARISON_ARTIFACTS
from mlflow_bayescompare.families.ranking.hierarchical_k.report import DIFFERS as JOINT_DIFFERS

FAST = ["--chains", "2", "--draws", "500", "--seed", "1"]


@pytest.fixture
def uci_experiment(client, experiment_id):
    log_uci(client, experiment_id)
    return experiment_id


def _compare(tracking_uri, experiment_id, *args):
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            *FAST, *args]
    return CliRunner().invoke(main, argv)


def _comparison_runs(client, experiment_id):
    return client.search_runs([experiment_id], "tags.`bayescompare.kind` = 'comparison'")


@pytest.mark.slow
def test_json_output_is_one_object(tracking_uri, uci_experiment, client):
    result = _compare(tracking_uri, uci_experiment, "--model-a", "hnb", "--model-b", "nbc", "--json")

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"p_a_better", "p_rope", "p_b_better", "verdict", "run_id", "experiment_id"} <= set(report)
    assert report["experiment_id"] == uci_experiment
    assert report["p_a_better"] + report["p_rope"] + report["p_b_better"] == pytest.approx(1)
    [run] = _comparison_runs(client, uci_experiment)
    assert run.info.run_id == report["run_id"] and run.info.status == "FINISHED"


def test_text_output_and_no_log(tracking_uri, uci_experiment, client):
    result = _compare(tracking_uri, uci_experiment, "--model-a", "hnb", "--model-b", "nbc", "--no-log")

    assert result.exit_code == 0, result.output
    assert "P(hnb better)" in result.stdout and "Verdict: " in result.stdout
    assert "Comparison run" not in result.stdout
    assert _comparison_runs(client, uci_experiment) == []


@pytest.mark.parametrize(
    "models, claim, code",
    [(("hnb", "nbc"), "a-better", 0), (("hnb", "nbc"), "not-worse", 0), (("nbc", "hnb"), "a-better", 1),
     (("hnb", "nbc"), "equivalent", 1)],
)
def test_require_exit_codes(tracking_uri, uci_experiment, models, claim, code):
    result = _compare(tracking_uri, uci_experiment, "--model-a", models[0], "--model-b", models[1], "--no-log",
                      "--require", claim, "--json")

    assert result.exit_code == code, result.output
    report = json.loads(result.stdout)  # printed whether or not the claim holds
    assert report["require"]["claim"] == claim and report["require"]["supported"] is (code == 0)
    if code:
        assert f"Error: claim '{claim}' not supported" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model-a", "hnb", "--model-b", "svm"], "model 'svm' is in no run"),
        (["--model-a", "hnb", "--model-b", "nbc", "--metric", "f1"], "metric 'f1' not found"),
        (["--model-a", "hnb", "--model-b", "nbc", "--experiment-name", "nope"], "no experiment named 'nope'"),
        (["--model-a", "hnb", "--model-b", "nbc", "--filter", "tags.x ~ 3"], "invalid filter string"),
        (["--model-a", "hnb", "--model-b", "nbc", "--rope", "-1"], "Invalid value for '--rope'"),
    ],
)
def test_bad_input_exits_2_with_a_message(tracking_uri, uci_experiment, args, message):
    result = _compare(tracking_uri, uci_experiment, *args)

    assert result.exit_code == 2, result.output
    assert "Error" in result.stderr and message in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_strict_fails_and_tags_the_run_on_sampler_problems(tracking_uri, uci_experiment, client):
    # 2 chains of 10 draws cannot reach R-hat <= 1.01
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", uci_experiment, "--metric", "accuracy",
            "--model-a", "hnb", "--model-b", "nbc", "--chains", "2", "--draws", "10", "--seed", "3", "--strict"]
    result = CliRunner().invoke(main, argv)

    assert result.exit_code == 1, result.output
    assert "Error: --strict: sampler problems: R-hat" in result.stderr
    [run] = _comparison_runs(client, uci_experiment)
    assert run.data.tags["bayescompare.strict"].startswith("failed: R-hat")


def test_help_documents_exit_codes():
    for argv in ([], ["compare"], ["matrix"], ["demo"], ["compare-evals"]):
        result = CliRunner().invoke(main, [*argv, "--help"])
        assert result.exit_code == 0 and "Exit codes:" in result.output and "2  bad input" in result.output


def test_help_lists_the_required_options_first_and_only_the_options_a_command_has():
    """``compare --help`` lists --metric, --model-a and --model-b first (they were 31st and 32nd); matrix and demo do
    not describe the --require and --strict they lack; demo says what it runs (issue 40, item 10)."""
    helps = {c: CliRunner().invoke(main, [c, "--help"], terminal_width=200).output
             for c in ("compare", "matrix", "rank", "demo")}
    listed = re.findall(r"^  (--[a-z-]+)", helps["compare"], re.M)
    assert listed[:3] == ["--metric", "--model-a", "--model-b"]
    assert "--strict" in helps["compare"] and "--require" in helps["compare"]
    assert "--require" in helps["rank"] and "--strict" not in helps["rank"]
    for command in ("matrix", "demo"):
        assert "--require" not in helps[command] and "--strict" not in helps[command], command
    assert "LDA vs CART" not in helps["demo"] and "naive Bayes" in helps["demo"]


@pytest.mark.slow
def test_matrix_command(tracking_uri, uci_experiment, client, tmp_path):
    argv = ["matrix", "--tracking-uri", tracking_uri, "--experiment-name", "cv", "--metric", "accuracy",
            "--models", "nbc,hnb,j48", "--jobs", "1", "--json", "--pair-reports", *FAST]
    result = CliRunner().invoke(main, argv)

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [p["model_a"] + "-" + p["model_b"] for p in report["pairs"]] == ["nbc-hnb", "nbc-j48", "hnb-j48"]
    assert report["p_better"]["hnb"]["nbc"] == pytest.approx(report["pairs"][0]["p_b_better"])
    assert report["p_better"]["nbc"]["nbc"] is None
    parent = client.get_run(report["run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["bayescompare.kind"] == "matrix"
    pairs = _comparison_runs(client, uci_experiment)
    assert len(pairs) == 3
    for pair in pairs:  # --pair-reports: each pair run as full as a comparison run
        assert artifact_paths(client, pair.info.run_id) == sorted(COMPARISON_ARTIFACTS)
        assert "bayescompare.report" not in pair.data.tags
    shrinkage = pd.read_csv(client.download_artifacts(pairs[0].info.run_id, "shrinkage.csv", str(tmp_path)))
    assert shrinkage["pareto_k"].notna().all()

    # as text (the pairs from the cache): each pair with the more probably better model first, and why the
    # ranking's own pair probabilities may differ from the pair tests'
    text = CliRunner().invoke(main, [a for a in argv if a != "--json"])
    assert text.exit_code == 0, text.output
    for p in report["pairs"]:
        first, second = (p["model_b"], p["model_a"]) if p["p_b_better"] > p["p_a_better"] else \
            (p["model_a"], p["model_b"])
        assert re.search(rf"^  {first} vs {second} +P\(first\) {max(p['p_a_better'], p['p_b_better']):.3f} ",
                         text.stdout, re.M), text.stdout
        # beside compare's verdict, the ranking's P(first better) and its rule's word (issue 38)
        assert re.search(rf"^  {first} vs {second} .* \| ranking [01]\.\d{{3}}( credible)?$", text.stdout, re.M)
    assert JOINT_DIFFERS in text.stdout


def test_rank_has_no_pair_reports_option(tracking_uri):
    result = CliRunner().invoke(main, ["rank", "--tracking-uri", tracking_uri, "--experiment-name", "cv",
                                       "--metric", "accuracy", "--pair-reports"])
    assert result.exit_code == 2 and "No such option" in result.output and "--pair-reports" in result.output


def test_compile_says_a_program_in_the_cache_is_cached(monkeypatch):
    """``compile`` on a program in the cache: "cached", 0 s, then the folders to keep in a CI cache; exit 0.  An
    unknown program is refused with exit 2."""
    import httpstan.cache

    from mlflow_bayescompare.sampling import programs, pystan_backend, sampler

    sampler.compile_program("hierarchical", backend="pystan")  # in the cache from now on (compiled once per machine)
    monkeypatch.setattr(pystan_backend, "_compiled", set())  # this process forgets it: the command looks in the cache
    result = CliRunner().invoke(main, ["compile", "--program", "hierarchical", "--backend", "pystan"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["hierarchical  cached    0 s",
                                          f"cache: {httpstan.cache.cache_directory()}, {programs.cache_dir()}"]
    refused = CliRunner().invoke(main, ["compile", "--program", "nope"])
    assert refused.exit_code == 2 and "'nope' is not one of 'hierarchical', 'bbt'" in refused.output


def test_the_first_line_shows_before_mlflow_is_imported(tmp_path):
    """A command's first line (the stage ``fetching``) comes before MLflow, ArviZ, SciPy and the rest are imported,
    which takes seconds on a first run: ``-X importtime`` lists each import on stderr as it ends, in order with that
    line.  The command is stopped once the line is seen."""
    argv = [sys.executable, "-X", "importtime", "-m", "mlflow_bayescompare.cli", "compare", "--experiment-name", "cv",
            "--metric", "accuracy", "--model-a", "a", "--model-b", "b", "--no-log", "--tracking-uri",
            f"sqlite:///{tmp_path / 'mlflow.db'}"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    imported = []
    try:
        for line in process.stderr:
            if line.startswith("bayescompare: fetching"):
                break
            imported.append(line.rsplit("|", 1)[-1].strip().split(".")[0])
    finally:
        process.kill()
        process.wait()
    assert "mlflow_bayescompare" in imported, imported[-20:]
    assert not {"mlflow", "arviz", "scipy", "matplotlib", "pandas", "sklearn", "httpstan"} & set(imported)


@pytest.mark.slow
def test_compare_as_a_subprocess_honours_the_environment(tracking_uri, uci_experiment):
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri}
    argv = [sys.executable, "-m", "mlflow_bayescompare.cli", "compare", "--experiment-name", "cv", "--metric",
            "accuracy", "--model-a", "hnb", "--model-b", "nbc", "--json", "--require", "a-better", *FAST]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout holds the JSON object and nothing else
    assert report["experiment_id"] == uci_experiment and report["require"]["supported"] is True
    assert MlflowClient(tracking_uri).get_run(report["run_id"]).info.status == "FINISHED"


def test_the_demo_reuses_the_source_runs_an_earlier_demo_logged(tmp_path, _empty_sqlite_db):
    """A demo run again logs no second copy of its source runs (three demos logged 114 runs): the runs an earlier
    demo logged with the same seed, folds and repeats are read, and said to be; a setting more is cross-validated
    and logged; the comparisons read exactly this demo's runs (issue 40, item 12)."""
    require_module("sklearn", "the demo cross-validates with scikit-learn (pip install scikit-learn)")
    from mlflow_bayescompare import demo
    from mlflow_bayescompare.reads.collect import collect_scores

    (tmp_path / "mlflow.db").write_bytes(_empty_sqlite_db.read_bytes())
    uri, said = f"sqlite:///{tmp_path / 'mlflow.db'}", {}
    kept = {name: demo._log_settings(uri, demo.SETTINGS[:n], repeats=2, folds=3, seed=4, echo=said.setdefault(
        name, []).append) for name, n in (("first", 2), ("again", 2), ("more", 3))}
    (eid, first), (_, again), (_, more) = kept.values()
    client = MlflowClient(uri)
    assert sorted(again) == sorted(first) and set(first) < set(more) and len(client.search_runs([eid])) == 9
    assert said["again"][-1] == "  reused 6 runs an earlier demo logged with seed 4 (not logged again)"
    assert [line.removesuffix(" (an earlier demo's runs)") for line in said["again"][1:3]] == said["first"][1:3]
    assert said["more"][-1].startswith("  cross-validated and logged 3 runs in ")
    assert said["more"][-1].endswith(" s; reused 6 runs an earlier demo logged with seed 4 (not logged again)")
    collected = collect_scores(client, [eid], "accuracy", filter_string=demo.runs_filter(first))
    assert sorted(collected.scores["dataset"].unique()) == sorted(s.name for s in demo.SETTINGS[:2])


@pytest.mark.slow
def test_demo_end_to_end_in_a_fresh_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)

    result = CliRunner().invoke(main, ["demo", "--datasets", "6", "--chains", "2", "--draws", "500"])

    assert result.exit_code == 0, result.output
    assert (tmp_path / "mlflow.db").exists()
    assert "Verdict (lda vs cart): " in result.stdout and "Ranking of 3 models" in result.stdout
    # the ranking's caption names the model that ranked (the fold scores: the hierarchical model), and one sentence
    # says why its pairs and the pair test below it can differ
    assert "Ranking of 3 models (hierarchical model of k models):" in result.stdout
    assert JOINT_DIFFERS in result.stdout and "benchmarks/" not in result.output  # no path of the repository
    assert "mlflow server --app-name bayescompare --backend-store-uri sqlite:///mlflow.db" in result.stdout
    assert "bayescompare: sampling lda vs cart on 6 datasets" in result.stderr  # the stage, as compare shows it
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("bayescompare-demo")
    [run] = client.search_runs([experiment.experiment_id], "tags.`bayescompare.kind` = 'comparison'")
    assert run.info.status == "FINISHED" and run.data.metrics["n_datasets"] == 6
    run_url = f"http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}"
    assert f"{run_url}?workflowType=machine_learning" in result.stdout
    assert run.data.metrics["sampling_seconds"] < 60 and "compile_seconds" in run.data.metrics
    cv_run = client.search_runs([experiment.experiment_id], "tags.model = 'lda'")[0]
    assert cv_run.data.metrics["accuracy_mean"] == pytest.approx(
        np.mean([m.value for m in client.get_metric_history(cv_run.info.run_id, "accuracy")]))
    assert run.info.end_time - run.info.start_time > 1000  # dated from the start of the work, not its logging


@pytest.mark.server
@pytest.mark.slow
def test_compare_against_a_server(server_client, server_experiment_id):
    log_uci(server_client, server_experiment_id, models=("nbc", "hnb"))
    result = _compare(server_client.tracking_uri, server_experiment_id, "--model-a", "hnb", "--model-b", "nbc",
                      "--json")

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert server_client.get_run(report["run_id"]).info.status == "FINISHED"


def test_lower_is_better_swaps_a_and_b_exactly(tracking_uri, uci_experiment):
    """The same scores, seed and draws read as a loss: the paper's sides stay where they are, and what was
    P(A better) is now P(B better), and the other way round, to the last digit."""
    args = ["--model-a", "hnb", "--model-b", "nbc", "--no-log", "--json"]
    greater = json.loads(_compare(tracking_uri, uci_experiment, *args).stdout)
    result = _compare(tracking_uri, uci_experiment, *args, "--lower-is-better")
    assert result.exit_code == 0, result.output
    lower = json.loads(result.stdout)
    assert (greater["greater_is_better"], lower["greater_is_better"]) == (True, False)
    assert (lower["p_left"], lower["p_rope"], lower["p_right"]) == (greater["p_left"], greater["p_rope"],
                                                                    greater["p_right"])
    assert (lower["p_a_better"], lower["p_b_better"]) == (greater["p_b_better"], greater["p_a_better"])
    assert (lower["p_delta0_a_better"], lower["p_delta0_b_better"]) == (greater["p_delta0_b_better"],
                                                                        greater["p_delta0_a_better"])
    assert greater["decision"] == "a_better" and greater["verdict"].startswith("hnb is practically better")
    assert lower["decision"] == "b_better" and lower["verdict"].startswith("nbc is practically better")
    for g, low in zip(greater["shrinkage"], lower["shrinkage"]):
        assert (low["p_a_better"], low["p_b_better"]) == (g["p_b_better"], g["p_a_better"])


def test_sensitivity_in_text_and_json(tracking_uri, uci_experiment):
    """``--sensitivity``: the table of the conclusion under three priors x three ropes and its one-sentence note,
    in the JSON and, the same numbers, in the text; the row of the main fit's own prior and rope is the main
    result."""
    args = ["--model-a", "hnb", "--model-b", "j48", "--no-log", "--sensitivity"]
    result = _compare(tracking_uri, uci_experiment, *args, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    table = report["sensitivity"]
    assert [(row["prior"], row["rope"]) for row in table] == [
        (prior, rope) for prior in ("hierarchical", "gamma(2,0.1)", "gaussian") for rope in (0.005, 0.01, 0.02)]
    for row in table:
        assert row["p_a_better"] + row["p_rope"] + row["p_b_better"] == pytest.approx(1)
        assert row["decision"] in ("a_better", "b_better", "equivalent", "inconclusive")
    main_row = table[1]
    assert (main_row["p_a_better"], main_row["p_rope"], main_row["p_b_better"]) == pytest.approx(
        (report["p_a_better"], report["p_rope"], report["p_b_better"]), abs=1e-12)
    changed = [row for row in table if row["decision"] != report["decision"]]
    note = report["sensitivity_note"]
    assert note == (f"conclusion stable: '{report['decision']}' under every prior and rope tried" if not changed
                    else f"conclusion changes in {len(changed)} of 9 settings: " + "; ".join(
                        f"prior {r['prior']}, rope {r['rope']:g} -> {r['decision']}" for r in changed))

    result = _compare(tracking_uri, uci_experiment, *args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("Sensitivity (other priors and ropes):")
    assert lines[at + 1] == f"  {note}"
    assert lines[at + 2].split() == ["prior", "rope", "p_a_better", "p_rope", "p_b_better", "decision"]
    shown = [line.split() for line in lines[at + 3:at + 12]]
    assert shown == [[row["prior"], f"{row['rope']:.3f}", f"{row['p_a_better']:.3f}", f"{row['p_rope']:.3f}",
                      f"{row['p_b_better']:.3f}", row["decision"]] for row in table]


@pytest.mark.slow
def test_mlproject_compare_entry_point(tracking_uri, uci_experiment, client, tmp_path):
    """The README's ``mlflow run . -e compare --env-manager local`` against a sqlite store, with the source runs in
    experiment "cv": the comparison run is logged next to them with the parameters given (the same result as the
    Python API with those settings) and ``mlflow run`` succeeds when the claim holds, fails when it does not."""
    from mlflow_bayescompare.pipeline.compare import compare_runs

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri}

    def mlflow_run(model_a, model_b):
        argv = [sys.executable, "-m", "mlflow", "run", str(root), "-e", "compare", "--env-manager", "local",
                "-P", "experiment_name=cv", "-P", f"model_a={model_a}", "-P", f"model_b={model_b}",
                "-P", "require=a-better", "-P", "rope=0.02", "-P", "seed=5"]
        return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)

    done = mlflow_run("hnb", "nbc")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Claim 'a-better': probability" in done.stdout and "→ supported" in done.stdout
    [run] = _comparison_runs(client, uci_experiment)
    assert run.info.status == "FINISHED"
    assert (run.data.params["rope"], run.data.params["seed"], run.data.params["threshold"]) == ("0.02", "5", "0.95")
    reference = compare_runs(["cv"], metric="accuracy", model_a="hnb", model_b="nbc", rope=0.02, seed=5, log=False,
                             tracking_uri=tracking_uri)
    assert run.data.metrics["p_a_better"] == reference.p_a_better >= 0.99
    [project_run] = client.search_runs(["0"])  # mlflow run's own run, in the default experiment
    assert project_run.info.status == "FINISHED" and project_run.data.tags["mlflow.project.entryPoint"] == "compare"

    done = mlflow_run("nbc", "hnb")  # nbc is not better: the pipeline stops here
    assert done.returncode != 0 and "NOT supported" not in done.stdout, done.stderr[-3000:]
    assert "Error: claim 'a-better' not supported" in done.stderr  # said once
    statuses = sorted(r.info.status for r in client.search_runs(["0"]))
    assert statuses == ["FAILED", "FINISHED"]
    assert len(_comparison_runs(client, uci_experiment)) == 2  # the failed claim's comparison is logged too


@contextlib.contextmanager
def proxy_without_bulk_endpoint(target: str):
    """A tiny HTTP proxy on 127.0.0.1 in front of ``target`` that answers 404 to MLflow's get-history-bulk
    endpoint, as a tracking server without it (or a gateway that does not route it) does; yields
    ``(url, refused)``, ``refused`` listing the bulk requests it turned away."""
    import threading
    import urllib.parse
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import requests

    from mlflow_bayescompare.reads.fetch import BULK_ENDPOINT

    refused = []

    class Handler(BaseHTTPRequestHandler):
        def forward(self):
            if urllib.parse.urlsplit(self.path).path == BULK_ENDPOINT:
                refused.append(self.path)
                self.send_error(404)
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            resp = requests.request(self.command, target + self.path, data=body, headers=headers, timeout=60)
            self.send_response(resp.status_code)
            for key, value in resp.headers.items():
                if key.lower() not in ("content-length", "content-encoding", "transfer-encoding", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(resp.content)))
            self.end_headers()
            self.wfile.write(resp.content)

        do_GET = do_POST = do_PATCH = do_DELETE = forward

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", refused
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.server
@pytest.mark.slow
def test_a_server_without_the_bulk_endpoint_is_read_by_threads(server_client, server_experiment_id):
    """The collector reads metric histories through the server's bulk endpoint, else (a 404) one request per run
    in a thread pool: both give the same scores, which are the ones logged, and a comparison through a server
    without the endpoint is the same fit as one through the server itself."""
    from mlflow_bayescompare.reads.collect import collect_scores
    from mlflow_bayescompare.reads.fetch import fetch_histories

    runs = log_uci(server_client, server_experiment_id, models=("nbc", "hnb"))
    run_ids = sorted(runs.values())
    bulk, method = fetch_histories(server_client, run_ids, "accuracy", method="bulk")
    assert method == "bulk"
    threads, method = fetch_histories(server_client, run_ids, "accuracy", method="threads")
    assert method == "threads"
    pd.testing.assert_frame_equal(bulk, threads)
    logged = uci_scores(models=("nbc", "hnb"))
    for key, run_id in runs.items():
        assert bulk[bulk["run_id"] == run_id]["value"].tolist() == logged[key]  # in step order, exactly

    with proxy_without_bulk_endpoint(server_client.tracking_uri) as (url, refused):
        proxied, method = fetch_histories(MlflowClient(url), run_ids, "accuracy", method="bulk")
        assert method == "threads" and refused
        pd.testing.assert_frame_equal(proxied, bulk)
        collected = collect_scores(MlflowClient(url), [server_experiment_id], "accuracy", ["nbc", "hnb"])
        assert collected.fetch_method == "threads"
        direct = collect_scores(server_client, [server_experiment_id], "accuracy", ["nbc", "hnb"])
        assert direct.fetch_method == "bulk"
        key = ["model", "dataset", "repeat", "fold"]
        pd.testing.assert_frame_equal(collected.scores.sort_values(key).reset_index(drop=True),
                                      direct.scores.sort_values(key).reset_index(drop=True))
        through_proxy = _compare(url, server_experiment_id, "--model-a", "hnb", "--model-b", "nbc", "--no-log",
                                 "--json")
    assert through_proxy.exit_code == 0, through_proxy.output
    itself = _compare(server_client.tracking_uri, server_experiment_id, "--model-a", "hnb", "--model-b", "nbc",
                      "--no-log", "--json")
    proxied_report, own_report = json.loads(through_proxy.stdout), json.loads(itself.stdout)
    for report in (proxied_report, own_report):
        del report["diagnostics"]  # timings
    assert proxied_report == own_report
