"""Several metrics in one decision (issue 28): ``--metric accuracy,fit_time`` with a rope and a direction per metric
gives one run holding each metric's result, a combined line, and ``--require`` on every metric; ``rank`` ranks on
each metric side by side.  Each metric's result is checked against the one-metric pipeline with the same options and
seed (the decision on several is that pipeline run per metric, nothing else)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from uci_runs import DATASETS, artifact_paths, log_uci_with_time

from mlflow_bayescompare.cli import main
from mlflow_bayescompare.pipeline import compare as api
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.options import FitOptions, PerMetric, RankOptions, SourceOptions, per_metric
from mlflow_bayescompare.vocabulary.outcomes import combined_line

FAST = {"chains": 2, "draws": 300, "seed": 3}
FAST_CLI = ["--chains", "2", "--draws", "300", "--seed", "3"]
#: the options of the decision on both metrics, and of each metric alone
BOTH = {"metric": "accuracy,fit_time", "rope": "fit_time=0.1", "direction": "fit_time=lower"}
ALONE = {"accuracy": {"rope": 0.01}, "fit_time": {"rope": 0.1, "greater_is_better": False}}


@pytest.fixture
def timed(client, experiment_id):
    """The UCI slice of three models with accuracy and fit_time per fold (hnb twice as slow as nbc)."""
    log_uci_with_time(client, experiment_id, models=("nbc", "hnb", "j48"))
    return experiment_id


def _runs(client, experiment_id):
    return client.search_runs([experiment_id], "tags.`bayescompare.kind` != ''")


# ---------------------------------------------------------------------------------------------- the options


def test_the_combined_line_says_undecided_of_the_pair_not_of_model_a():
    """An inconclusive metric is the pair's: "svc is undecided on accuracy" read as if svc hesitated (issue 40)."""
    assert combined_line("rf", "svc", {"accuracy": "inconclusive", "fit_time": "a_better", "auc": "inconclusive"}) \
        == "rf vs svc: rf is better on fit_time; undecided on accuracy and auc."
    assert combined_line("rf", "svc", {"accuracy": "inconclusive"}) == "rf vs svc: undecided on accuracy."
    assert combined_line("rf", "svc", {"accuracy": "equivalent", "fit_time": "b_better"}) == \
        "rf vs svc: rf is practically equivalent on accuracy, and worse on fit_time."


def test_rope_and_direction_per_metric_resolve_to_each_metrics_plain_options():
    source = SourceOptions(metric=" accuracy, roc_auc ,fit_time")
    fit = FitOptions(rope="0.02,fit_time=0.5", direction={"fit_time": "lower"}, greater_is_better=True)

    split = per_metric(source, fit)

    assert list(split) == ["accuracy", "roc_auc", "fit_time"] and source.metric == "accuracy,roc_auc,fit_time"
    assert [(s.metric, f.rope, f.greater_is_better, f.direction) for s, f in split.values()] == [
        ("accuracy", 0.02, True, None), ("roc_auc", 0.02, True, None), ("fit_time", 0.5, False, None)]
    assert fit.to_params()["rope"] == "0.02,fit_time=0.5" and fit.to_params()["direction"] == "fit_time=lower"
    # without a bare value, a metric not named takes the option's default; a bare direction applies to every metric
    ranked = per_metric(SourceOptions(metric="a,b"), RankOptions(metric_rope="b=0.3", direction="lower"))
    assert [(r.metric_rope, r.greater_is_better) for _, r in ranked.values()] == [(0.01, False), (0.3, False)]
    assert isinstance(FitOptions(rope="a=1").rope, PerMetric) and FitOptions(rope="0.5").rope == 0.5


@pytest.mark.parametrize(("source", "options", "wanted"), [
    ({"metric": "accuracy"}, {"rope": "accuracy=0.01,auc=0.1"}, "rope names metric 'auc', which was not asked for"),
    ({"metric": "accuracy"}, {"direction": "fit_time=lower"}, "direction names metric 'fit_time'"),
    ({"metric": "accuracy,,auc"}, {}, "metric names an empty metric"),
    ({"metric": "accuracy,accuracy"}, {}, "metric names a metric twice"),
    ({"metric": "a"}, {"rope": "a=0.1,a=0.2"}, "rope names metric 'a' twice"),
    ({"metric": "a"}, {"rope": "a=-1"}, "rope must be a finite number > 0; got '-1' for metric 'a'"),
    ({"metric": "a"}, {"direction": "a=sideways"}, "must be one of higher, lower; got 'sideways' for metric 'a'"),
    ({"metric": "a"}, {"rope": "0.1,0.2,a=1"}, "takes one value for the metrics it does not name"),
])
def test_bad_per_metric_options_are_named(source, options, wanted):
    with pytest.raises(InputError, match=wanted):
        per_metric(SourceOptions(**source), FitOptions(**options))


# ---------------------------------------------------------------------------------------------- comparison


@pytest.mark.slow
def test_one_run_holds_each_metrics_comparison_as_the_one_metric_pipeline_gives_it(client, tracking_uri, timed):
    decision = api.compare_runs(experiment_ids=[timed], model_a="nbc", model_b="hnb", tracking_uri=tracking_uri,
                                **BOTH, **FAST)
    alone = {m: api.compare_runs(experiment_ids=[timed], model_a="nbc", model_b="hnb", metric=m, log=False,
                                 tracking_uri=tracking_uri, **options, **FAST) for m, options in ALONE.items()}

    assert list(decision.by_metric) == ["accuracy", "fit_time"]
    for metric, one in alone.items():
        got = decision.by_metric[metric]
        assert (got.p_a_better, got.p_rope, got.p_b_better, got.rope) == \
            (one.p_a_better, one.p_rope, one.p_b_better, one.rope), metric
    # hnb is more accurate on these datasets, nbc twice as fast: the direction of fit_time decides its side
    assert decision.by_metric["accuracy"].decision == "b_better"
    assert decision.by_metric["fit_time"].decision == "a_better"
    assert decision.verdict == "nbc vs hnb: nbc is worse on accuracy, and better on fit_time."
    assert not api.require(decision, "not-worse") and api.require(decision.by_metric["fit_time"], "not-worse")

    run = client.get_run(decision.run_id)
    assert run.info.status == "FINISHED" and len(_runs(client, timed)) == 1
    metrics, params, tags = run.data.metrics, run.data.params, run.data.tags
    assert metrics["accuracy/p_b_better"] == alone["accuracy"].p_b_better
    assert metrics["fit_time/p_a_better"] == alone["fit_time"].p_a_better
    assert (params["accuracy/rope"], params["fit_time/rope"]) == ("0.01", "0.1")
    assert (params["accuracy/greater_is_better"], params["fit_time/greater_is_better"]) == ("True", "False")
    assert params["seed"] == "3" and "rope" not in params  # shared once, differing per metric
    assert tags["bayescompare.metric"] == "accuracy,fit_time" and tags["bayescompare.verdict"] == decision.verdict
    assert tags["bayescompare.decision/fit_time"] == "a_better" and "bayescompare.decision" not in tags
    assert "bayescompare.diagnostics" in tags and not [t for t in tags if t.startswith("bayescompare.diagnostics/")]
    assert run.info.run_name == "nbc vs hnb · accuracy, fit_time"
    paths = set(artifact_paths(client, decision.run_id))
    assert {"report.html", "report.md", "accuracy/report.html", "fit_time/summary.json"} <= paths
    page = client.download_artifacts(decision.run_id, "report.html")
    html = open(page, encoding="utf-8").read()
    assert decision.verdict in html and html.count('class="metric"') == 2
    assert json.loads(open(client.download_artifacts(decision.run_id, "fit_time/summary.json")).read())[
        "p_a_better"] == alone["fit_time"].p_a_better


@pytest.mark.slow
def test_cli_requires_the_claim_on_every_metric_and_prints_each(tracking_uri, timed):
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", timed, "--model-a", "nbc", "--model-b",
            "hnb", "--metric", BOTH["metric"], "--rope", BOTH["rope"], "--direction", BOTH["direction"], *FAST_CLI]

    text = CliRunner().invoke(main, [*argv, "--no-log", "--require", "not-worse"])
    as_json = CliRunner().invoke(main, [*argv, "--no-log", "--json", "--require", "not-worse"])

    assert text.exit_code == 1, text.output
    assert "nbc vs hnb · accuracy:" in text.stdout and "nbc vs hnb · fit_time:" in text.stdout
    assert "Decision: nbc vs hnb: nbc is worse on accuracy, and better on fit_time." in text.stdout
    assert "fit_time: Claim 'not-worse'" in text.stdout
    assert "on accuracy: claim 'not-worse' not supported" in text.stderr
    report = json.loads(as_json.stdout)
    assert as_json.exit_code == 1 and set(report["metrics"]) == {"accuracy", "fit_time"}
    assert report["require"]["supported"] is False
    assert report["require"]["metrics"]["fit_time"]["supported"] is True
    assert report["metrics"]["fit_time"]["rope"] == 0.1 and report["metrics"]["fit_time"]["greater_is_better"] is False


def test_a_metric_missing_for_some_runs_is_named_and_the_others_still_checked(client, tracking_uri, experiment_id):
    """hnb logged no fit_time on any dataset, nobody logged roc_auc: both are named, accuracy passes, nothing is
    logged; a metric missing on one dataset only leaves that dataset out of that metric (named, as for one metric)."""
    log_uci_with_time(client, experiment_id, models=("nbc", "hnb", "j48"),
                      missing=[("hnb", f"uci{d}") for d in DATASETS] + [("j48", "uci21")])

    def compare(model_a, metric, *more):
        return CliRunner().invoke(main, ["compare", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id,
                                         "--model-a", model_a, "--model-b", "nbc", "--metric", metric, *FAST_CLI,
                                         *more])

    refused = compare("hnb", "accuracy,fit_time,roc_auc")
    ragged = compare("j48", "accuracy,fit_time", "--no-log")

    assert refused.exit_code == 2, refused.output
    assert "Cannot read metrics 'fit_time', 'roc_auc':" in refused.stderr
    assert "metric 'fit_time': " in refused.stderr and "hnb" in refused.stderr.split("metric 'fit_time': ")[1]
    assert "metric 'roc_auc': metric 'roc_auc' not found" in refused.stderr
    assert "metric 'accuracy'" not in refused.stderr  # checked, and passed
    assert not _runs(client, experiment_id)
    assert ragged.exit_code == 0, ragged.output
    fit_time = ragged.stdout.split("j48 vs nbc · fit_time:")[1]
    assert "5 datasets" in fit_time and "Left out: 'uci21' (no scores of 'j48')" in fit_time
    assert "Left out" not in ragged.stdout.split("j48 vs nbc · fit_time:")[0]
    assert "warning: fit_time: j48 vs nbc: left out 1 dataset" in ragged.stderr  # the metric it is about


def test_a_rope_for_a_metric_not_asked_for_is_refused_before_anything_is_read(tracking_uri, experiment_id):
    argv = ["compare", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id, "--model-a", "nbc",
            "--model-b", "hnb", "--metric", "accuracy", "--rope", "accuracy=0.01,auc=0.1", "--direction",
            "fit_time=lower"]

    result = CliRunner().invoke(main, argv)

    assert result.exit_code == 2
    assert "rope names metric 'auc'" in result.stderr and "direction names metric 'fit_time'" in result.stderr


def test_a_matrix_compares_one_metric(tracking_uri, experiment_id):
    result = CliRunner().invoke(main, ["matrix", "--tracking-uri", tracking_uri, "--experiment-id", experiment_id,
                                       "--metric", "accuracy,fit_time"])

    assert result.exit_code == 2 and "a matrix compares one metric; got 2 (accuracy, fit_time)" in result.stderr


# ---------------------------------------------------------------------------------------------- ranking


@pytest.mark.slow
def test_rank_on_each_metric_side_by_side_as_each_ranking_alone(client, tracking_uri, experiment_id):
    """j48 logged no fit_time on uci20: the warning about it names fit_time."""
    timed = experiment_id
    log_uci_with_time(client, timed, models=("nbc", "hnb", "j48"), missing=[("j48", "uci20")])
    ranked = api.rank_runs(experiment_ids=[timed], metric="accuracy,fit_time", metric_rope="fit_time=0.1",
                           direction="fit_time=lower", tracking_uri=tracking_uri, **FAST)
    alone = api.rank_runs(experiment_ids=[timed], metric="fit_time", metric_rope=0.1, greater_is_better=False,
                          log=False, tracking_uri=tracking_uri, **FAST)

    fit_time = ranked.by_metric["fit_time"].ranking
    assert list(fit_time["model"]) == list(alone.ranking["model"]) == ["nbc", "j48", "hnb"]  # fastest first
    assert list(fit_time["p_best"]) == list(alone.ranking["p_best"])
    assert ranked.verdict.startswith("Best: ") and "nbc on fit_time" in ranked.verdict
    run = client.get_run(ranked.run_id)
    assert run.data.tags["bayescompare.metric"] == "accuracy,fit_time"
    assert run.data.metrics["fit_time/p_best.nbc"] == pytest.approx(alone.ranking.set_index("model")["p_best"]["nbc"])
    paths = set(artifact_paths(client, run.info.run_id))
    assert {"accuracy/ranking.csv", "fit_time/ranking.csv", "report.html"} <= paths

    result = CliRunner().invoke(main, ["rank", "--tracking-uri", tracking_uri, "--experiment-id", timed, "--metric",
                                       "accuracy,fit_time", "--metric-rope", "fit_time=0.1", "--direction",
                                       "fit_time=lower", "--require", "best=nbc", "--no-log", *FAST_CLI])
    assert result.exit_code == 1, result.output  # nbc is the fastest, not the most accurate
    assert "Side by side (P(best), mean rank):" in result.stdout and "p_best fit_time" in result.stdout
    assert "warning: fit_time: the hierarchical model: each dataset's models are compared where they have scores " \
           "(nothing imputed):\n  'j48' lacks uci20\n" in result.stderr
    # probabilities and ranks as the page shows them (nbc is the fastest on every draw), the leader's gap 0
    assert re.search(r"^  nbc  1\.000 +1\.000 +1\.00 +1 +1 +-?0\.\d+ +0\.0+ +0\.0+ +0\.0+$", result.stdout, re.M)
    assert re.search(r"^  nbc +\S+ +\d\.\d\d +1\.000 +1\.00$", result.stdout, re.M), result.stdout
    assert "on accuracy: claim 'best=nbc' not supported" in result.stderr
