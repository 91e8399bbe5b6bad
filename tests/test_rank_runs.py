"""The ranking through MLflow: runs → the hierarchical model of k models (or BBT) → a ranking run, from the API and
the command line; the matrix parent carries the same ranking."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from uci_runs import DATASETS, artifact_paths, log_means, log_uci, uci_scores

from mlflow_bayescompare import InputError, rank_models
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.families.ranking.common import VERDICTS, verdict
from mlflow_bayescompare.pipeline import preflight
from mlflow_bayescompare.pipeline.compare import compare_matrix, rank_runs
from mlflow_bayescompare.sampling.programs import PROGRAMS
from mlflow_bayescompare.shared.report_html import format_differences
from mlflow_bayescompare.vocabulary.options import RankOptions, SourceOptions
from mlflow_bayescompare.vocabulary.outcomes import jsonable

FAST = dict(chains=2, draws=400, warmup=400, seed=3)
MODELS = ("nbc", "hnb", "j48", "j48gr")

pytestmark = pytest.mark.slow  # rankings logged to a store and through the CLI: 3-8 s each


@pytest.fixture
def uci_experiment(client, experiment_id):
    log_uci(client, experiment_id, models=MODELS)
    return experiment_id


def _tidy() -> pd.DataFrame:
    rows = [{"dataset": d, "model": m, "repeat": i // 10, "fold": i % 10, "score": s}
            for (m, d), scores in uci_scores(MODELS).items() for i, s in enumerate(scores)]
    return pd.DataFrame(rows)


def test_rank_runs_logs_a_ranking_run_equal_to_the_direct_fit(client, tracking_uri, uci_experiment, tmp_path):
    outcome = rank_runs(experiment_ids=[uci_experiment], metric="accuracy", tracking_uri=tracking_uri, **FAST)

    direct = rank_models(_tidy(), models=sorted(MODELS), **FAST)
    pd.testing.assert_frame_equal(outcome.ranking.reset_index(drop=True), direct.ranking.reset_index(drop=True))
    assert outcome.ranking["p_best"].sum() == pytest.approx(1)
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["bayescompare.kind"] == "ranking"
    assert run.data.tags["bayescompare.best"] == outcome.ranking["model"].iloc[0]
    for row in outcome.ranking.itertuples():
        assert run.data.metrics[f"p_best.{row.model}"] == pytest.approx(row.p_best)
        assert run.data.metrics[f"mean_rank.{row.model}"] == pytest.approx(row.mean_rank)
    assert "P(best)" in run.data.tags["mlflow.note.content"]
    names = {a.path for a in client.list_artifacts(outcome.run_id)} | \
        {a.path for a in client.list_artifacts(outcome.run_id, "plots")}
    assert outcome.result.model == "hierarchical"
    assert {"ranking.csv", "pairs.csv", "versus.csv", "report.html", "posterior.nc", "plots/critical_difference.png",
            "plots/critical_difference.svg"} <= names
    csv = pd.read_csv(client.download_artifacts(outcome.run_id, "ranking.csv", str(tmp_path)))
    assert list(csv["model"]) == list(outcome.ranking["model"])


def test_rank_command_json_and_require(tracking_uri, uci_experiment):
    argv = ["rank", "--tracking-uri", tracking_uri, "--experiment-id", uci_experiment, "--metric", "accuracy",
            "--chains", "2", "--draws", "400", "--warmup", "400", "--seed", "3", "--json"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"run_id", "experiment_id", "ranking", "pairs"} <= set(report)
    assert {"model", "p_best", "mean_rank"} <= set(report["ranking"][0])
    worst = report["ranking"][-1]["model"]
    result = CliRunner().invoke(main, [*argv, "--no-log", "--require", f"best={worst}"])
    assert result.exit_code == 1 and f"claim 'best={worst}' not supported" in result.stderr
    text = CliRunner().invoke(main, [*[a for a in argv if a != "--json"], "--no-log", "--require", f"best={worst}"])
    assert text.exit_code == 1 and text.stderr.count("not supported") == 1  # said once (issue 40, item 10)
    assert "not supported" not in text.stdout.lower() and "Ranking of " in text.stdout
    result = CliRunner().invoke(main, [*argv, "--no-log", "--require", "worst=nbc"])
    assert result.exit_code == 2 and "expected best=MODEL" in result.stderr


def test_fewer_than_three_models_point_to_compare(tracking_uri, uci_experiment):
    with pytest.raises(InputError, match="hierarchical_test|compare"):
        rank_runs(experiment_ids=[uci_experiment], metric="accuracy", models=["nbc", "hnb"],
                  tracking_uri=tracking_uri, log=False, **FAST)


def test_matrix_parent_carries_the_hierarchical_ranking(client, tracking_uri, uci_experiment):
    matrix = compare_matrix(experiment_ids=[uci_experiment], metric="accuracy", models=["nbc", "hnb", "j48"],
                            tracking_uri=tracking_uri, jobs=1, chains=2, draws=400, warmup=400, seed=3)
    assert matrix.bbt.model == "hierarchical" and set(matrix.ranking["model"]) == {"nbc", "hnb", "j48"}
    assert np.isclose(matrix.ranking["p_best"].sum(), 1)
    parent = client.get_run(matrix.run_id)
    assert parent.data.tags["bayescompare.best"] == matrix.ranking["model"].iloc[0]
    assert "P(best)" in parent.data.tags["mlflow.note.content"]
    assert "P(row better than column)" in parent.data.tags["mlflow.note.content"]
    assert parent.data.metrics["p_best.hnb"] == pytest.approx(
        float(matrix.ranking.set_index("model").loc["hnb", "p_best"]))


# ------------------------------------------------------------------------------------------------ more cases

SMALL = dict(chains=2, draws=200, warmup=200, seed=5)
SMALL_ARGV = ["--chains", "2", "--draws", "200", "--warmup", "200", "--seed", "5"]
#: six UCI datasets on which hnb beats both nbc and j48 (paired local ROPE): 12 wins in 12 games
HNB_WINS = (4, 25, 29, 32, 36, 41)


def test_rank_runs_on_means_only_runs_equals_rank_models_on_the_means_table(client, tracking_uri, experiment_id):
    means = pd.Series(log_means(client, experiment_id, ("nbc", "hnb", "j48"))).unstack(0)  # dataset x model
    outcome = rank_runs(experiment_ids=[experiment_id], metric="accuracy", tracking_uri=tracking_uri, **SMALL)

    direct = rank_models(means, models=sorted(means.columns), **SMALL)
    assert outcome.layout == "means"
    assert list(outcome.models) == sorted(means.columns) == ["hnb", "j48", "nbc"]
    assert sorted(outcome.settings["datasets"]) == sorted(means.index) and len(means) == 6
    assert outcome.settings["rows_per_dataset"] == [1]  # one score per (model, dataset): no folds
    # same data, same seed, same sampler: the same draws, so the summaries are identical
    assert list(outcome.ranking["model"]) == list(direct.ranking["model"])
    pd.testing.assert_frame_equal(outcome.ranking.reset_index(drop=True), direct.ranking.reset_index(drop=True),
                                  check_exact=True)
    pd.testing.assert_frame_equal(outcome.wins.reset_index(drop=True), direct.wins.reset_index(drop=True))
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["bayescompare.kind"] == "ranking"
    assert run.data.params["layout"] == "means" and run.data.metrics["n_datasets"] == 6
    for row in direct.ranking.itertuples():
        assert run.data.metrics[f"p_best.{row.model}"] == pytest.approx(row.p_best, abs=1e-12)
        assert run.data.metrics[f"mean_rank.{row.model}"] == pytest.approx(row.mean_rank, abs=1e-12)


RUN_CONTENT = {  # by model: its program, tables and figures
    "hierarchical": ("hierarchical_k", ("versus",), ("critical_difference", "better_matrix", "p_best", "leader_gaps")),
    "bbt": ("bbt", ("wins", "ppc"), ("critical_difference", "pwin_matrix", "p_best"))}


@pytest.mark.parametrize("model", list(RUN_CONTENT))
def test_ranking_run_holds_every_artifact_and_a_self_contained_report(client, tracking_uri, uci_experiment,
                                                                       tmp_path, model):
    outcome = rank_runs(experiment_ids=[uci_experiment], metric="accuracy", tracking_uri=tracking_uri, model=model,
                        **SMALL)

    program, tables, plots = RUN_CONTENT[model]
    assert set(artifact_paths(client, outcome.run_id)) == {
        "ranking.csv", "pairs.csv", *(f"{t}.csv" for t in tables), "report.html", "report.md", "summary.json",
        "posterior.nc", f"stan/{program}.stan", "stan/data.json", "metric_keys.json",
        *(f"plots/{name}.{ext}" for name in plots for ext in ("png", "svg"))}
    root = Path(mlflow.artifacts.download_artifacts(run_id=outcome.run_id, tracking_uri=tracking_uri,
                                                    dst_path=str(tmp_path / "download")))
    assert (root / "stan" / f"{program}.stan").read_text() == Path(PROGRAMS[program]).read_text()
    assert json.loads((root / "stan" / "data.json").read_text()) == json.loads(
        json.dumps(outcome.result.stan_data, default=jsonable))
    for name in plots:
        assert (root / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), name
        assert "<svg" in (root / "plots" / f"{name}.svg").read_text()[:2000], name

    page = (root / "report.html").read_text(encoding="utf-8")
    links = re.findall(r"""\b(?:src|href)\s*=\s*["']?\s*([^"'\s>]*)""", page, flags=re.IGNORECASE)
    assert links and all(link.startswith(("#", "data:")) for link in links), links
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, flags=re.IGNORECASE)
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    images = re.findall(r'<img alt="(\w+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert [name for name, _ in images] == list(plots)
    for name, data in images:  # the page embeds the very PNGs logged beside it
        assert base64.b64decode(data) == (root / "plots" / f"{name}.png").read_bytes(), name
    for model in MODELS:
        assert f"<td>{model}</td>" in page


def test_rank_command_require_best_passes_when_the_data_supports_it(client, tracking_uri, experiment_id):
    log_uci(client, experiment_id, models=("nbc", "hnb", "j48"), datasets=HNB_WINS)
    argv = ["rank", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            *SMALL_ARGV, "--json", "--no-log", "--model", "bbt"]  # BBT: 12 wins in 12 games (the hierarchical
    # model, weighing 6 datasets' differences, gives hnb P(best) 0.905)
    result = CliRunner().invoke(main, [*argv, "--require", "best=hnb"])  # default threshold 0.95
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ranking"][0]["model"] == report["best"] == "hnb"
    assert report["require"]["claim"] == "best=hnb" and report["require"]["supported"] is True
    assert report["require"]["threshold"] == 0.95 and report["require"]["probability"] >= 0.95
    assert "not supported" not in result.stderr
    result = CliRunner().invoke(main, [*argv, "--require", "best=j48"])  # the same data, the runner-up
    assert result.exit_code == 1 and "claim 'best=j48' not supported" in result.stderr
    text = CliRunner().invoke(main, [*[a for a in argv if a != "--json"], "--require", "best=hnb"])
    claim_line = r"^Claim 'best=hnb': probability (0\.9[5-9]\d|1\.000) ≥ 0\.95 → supported$"
    assert text.exit_code == 0 and re.search(claim_line, text.stdout, re.M), text.output


def test_rank_command_ranks_a_ragged_grid_by_the_hierarchical_model_or_drops_what_a_model_lacks(
        client, tracking_uri, experiment_id):
    log_uci(client, experiment_id, models=("nbc", "hnb"))
    log_uci(client, experiment_id, models=("j48",), datasets=[d for d in DATASETS if d != 24])  # no j48 on uci24
    argv = ["rank", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            *SMALL_ARGV, "--json"]
    result = CliRunner().invoke(main, argv)  # uci24 is fitted with the two models it has
    assert result.exit_code == 0, result.output
    assert re.search(r"warning: the hierarchical model: each dataset's models are compared where they have scores "
                     r"\(nothing imputed\):\n  'j48' lacks uci24\n", result.stderr), result.stderr  # a model a line
    report = json.loads(result.stdout)
    assert report["ranking"] and report["settings"]["model"] == "hierarchical"
    assert report["settings"]["datasets"] == [f"uci{d:02d}" for d in DATASETS]
    assert report["settings"]["lacking"] == {"j48": ["uci24"]}
    assert "'j48' lacks uci24" in " ".join(report["diagnostics"]["warnings"])
    assert client.get_run(report["run_id"]).data.metrics["n_datasets"] == 6

    result = CliRunner().invoke(main, [*argv, "--model", "bbt"])  # Bradley-Terry keeps its rule
    assert result.exit_code == 2 and "model 'j48' has no scores on 1 of 6 datasets: uci24" in result.stderr
    assert "skip_missing=True counts no game" in result.stderr

    result = CliRunner().invoke(main, [*argv, "--drop-incomplete"])
    assert result.exit_code == 0, result.output
    assert re.search(r"warning: dropped 1 dataset\(s\) on which a model lacks scores: uci24\b", result.stderr), \
        result.stderr
    report = json.loads(result.stdout)
    assert report["settings"]["datasets"] == [f"uci{d:02d}" for d in DATASETS if d != 24]
    assert "lacking" not in report["settings"] and "nothing imputed" not in result.stderr
    assert {row["model"] for row in report["ranking"]} == {"nbc", "hnb", "j48"}
    run = client.get_run(report["run_id"])
    assert run.info.status == "FINISHED" and run.data.metrics["n_datasets"] == 5


def test_rank_command_vs_a_model_and_its_claims(client, tracking_uri, experiment_id):
    log_uci(client, experiment_id, models=("nbc", "hnb", "j48"), datasets=HNB_WINS)
    argv = ["rank", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--metric", "accuracy",
            *SMALL_ARGV]
    for bad, problem in ((["--vs", "svm"], "vs 'svm' is not among the models ranked (hnb, j48, nbc)"),
                         (["--vs", "hnb", "--model", "bbt"], "no answer under model bbt"),
                         (["--models", "hnb,j48", "--vs", "hnb"], "at least 3 models"),
                         (["--require", "none-better=svm"], "no such model among")):
        result = CliRunner().invoke(main, [*argv, *bad])
        assert result.exit_code == 2 and problem in result.stderr, result.output
    assert not client.search_runs([experiment_id], "tags.`bayescompare.kind` = 'ranking'")  # nothing logged
    # a --vs that names no model is refused from the run list, before any score is fetched (issue 40, item 11)
    with pytest.raises(InputError, match="vs 'svm' is not among the models ranked"):
        preflight.plan(client, "ranking", SourceOptions(experiment_ids=(experiment_id,), metric="accuracy"),
                       RankOptions(vs="svm"))

    result = CliRunner().invoke(main, [*argv, "--vs", "nbc", "--require", "not-worse-than-best=hnb"])
    assert result.exit_code == 0, result.output
    assert "Against nbc (next dataset" in result.stdout and "hierarchical model of k models" in result.stdout
    assert re.search(r"^  hnb +P\(better\) 0\.9\d\d .*  (better|undecided|not worse \(better or equivalent\))$",
                     result.stdout, re.M), result.stdout
    assert re.search(r"^Claim 'not-worse-than-best=hnb': probability 1\.000 ≥ 0\.95 → supported$", result.stdout,
                     re.M)
    run = client.search_runs([experiment_id], "tags.`bayescompare.kind` = 'ranking'")[0]
    assert run.data.tags["bayescompare.ranking"] == "hierarchical" and run.data.params["vs"] == "nbc"
    versus = pd.read_csv(client.download_artifacts(run.info.run_id, "versus.csv"))
    shown, n = format_differences([*versus["difference"], *versus["hdi_low"], *versus["hdi_high"]]), len(versus)
    description = run.data.tags["mlflow.note.content"]
    for i, model in enumerate(versus["model"]):  # one number of decimals, as the reports write them
        assert re.search(rf"^  {model} .*  {re.escape(shown[i])} \[{re.escape(shown[n + i])}, "
                         rf"{re.escape(shown[2 * n + i])}\]  ", result.stdout, re.M), result.stdout
        assert f" | {shown[i]} | {shown[n + i]} to {shown[2 * n + i]} | " in description
    report = CliRunner().invoke(main, [*argv, "--vs", "best", "--no-log", "--json", "--require", "none-better=j48"])
    assert report.exit_code == 1 and "claim 'none-better=j48' not supported" in report.stderr
    out = json.loads(report.stdout)
    assert [row["reference"] for row in out["versus"]] == ["hnb", "hnb"]
    assert [row["model"] for row in out["versus"]] == [row["model"] for row in out["ranking"][1:]]
    for row in [*out["versus"], *versus.to_dict("records")]:  # the one rule: better and worse at 0.975 (issue 38)
        assert row["verdict"] == VERDICTS[verdict(row["p_better"], row["p_rope"], row["p_worse"], 0.95)], row
