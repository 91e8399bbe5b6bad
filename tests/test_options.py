"""The options module (one home for every option), the progress display and the package's one voice."""

from __future__ import annotations

import dataclasses
import io
import logging
import math
import time

import pytest
from click.testing import CliRunner

from mlflow_bayescompare import console, options
from mlflow_bayescompare.cli import main
from mlflow_bayescompare.errors import InputError
from mlflow_bayescompare.options import FitOptions, ModelsOptions, PairOptions, SourceOptions, parse_fields
from mlflow_bayescompare.progress import TerminalProgress, notify

ALL = [SourceOptions, FitOptions, PairOptions]


def test_every_field_has_a_spec_and_a_default_only_there():
    for cls in (SourceOptions, FitOptions, PairOptions, ModelsOptions):
        for f in dataclasses.fields(cls):
            spec = f.metadata["option"]
            assert spec.help.endswith(".") or spec.help.endswith(")"), (cls.__name__, f.name)
            assert spec.required or f.default is not dataclasses.MISSING
    fit = FitOptions()
    assert (fit.rope, fit.threshold, fit.chains, fit.draws, fit.warmup) == (0.01, 0.95, 4, 1000, None)
    # no warm-up given: the comparison's (the authors' 1000), or the one of a matrix's pairs; a given one stays
    assert (fit.with_warmup().warmup, fit.with_warmup(options.MATRIX_PAIR_WARMUP).warmup) == (1000, 300)
    assert FitOptions(warmup=2000).with_warmup(options.MATRIX_PAIR_WARMUP).warmup == 2000
    assert options.defaults(FitOptions)["alpha_bounds"] == (0.5, 5.0)


@pytest.mark.parametrize("value, problem", [
    (dict(chains=1.7), "chains must be a whole number"),
    (dict(chains=True), "chains must be a whole number"),
    (dict(chains=0), "chains must be a whole number >= 1"),
    (dict(seed=1e400), "seed must be a whole number"),
    (dict(seed=-1), "seed must be a whole number >= 0"),
    (dict(rope=math.nan), "rope must be a finite number"),
    (dict(rope=0), "rope must be a finite number > 0"),
    (dict(threshold=math.inf), "threshold must be a finite number"),
    (dict(threshold=1), "threshold must be a finite number > 0 and < 1"),
    (dict(prior="cauchy"), "prior must be one of hierarchical"),
    (dict(rho=1.0), "rho must be a number >= 0 and < 1"),
    (dict(rho=[0.1, 1.5]), "rho must be numbers >= 0 and < 1"),
    (dict(alpha_bounds=(5, 1)), "alpha_bounds must be two numbers LOW,HIGH"),
    (dict(backend="stan"), "backend must be one of auto, cmdstanpy, pystan"),
])
def test_each_bad_value_is_named(value, problem):
    with pytest.raises(InputError, match=problem.replace("(", r"\(")):
        FitOptions(**value)


def test_every_problem_is_reported_at_once_and_values_are_cleaned():
    with pytest.raises(InputError) as caught:
        FitOptions(chains=0, draws=5, rope=-1, prior="x")
    assert len(caught.value.problems) == 4
    import numpy as np

    fit = FitOptions(chains=np.int64(2), rope="0.02", prior="Juarez-Steel", rho=[0.1, 0.2], seed=7.0)
    assert (fit.chains, fit.rope, fit.prior, fit.rho, fit.seed) == (2, 0.02, "gamma(2,0.1)", (0.1, 0.2), 7)
    assert type(fit.chains) is int and type(fit.seed) is int


def test_json_fields_build_every_object_and_name_every_problem():
    source, fit, pair = parse_fields({"metric": "acc", "experiment_id": ["1", 2], "latest": True,
                                      "lower_is_better": True, "model_a": "a", "model_b": "b", "require": "not-worse",
                                      "alpha_bounds": [1, 2], "filter": "params.x = '1'"}, ALL)
    assert (source.experiment_ids, source.on_duplicate, source.filter_string) == (("1", "2"), "latest",
                                                                                   "params.x = '1'")
    assert (fit.greater_is_better, fit.alpha_bounds, pair.claim) == (False, (1.0, 2.0), "not-worse")
    with pytest.raises(InputError) as caught:
        parse_fields({"chains": 1.7, "bogus": 1, "lower_is_better": "yes", "model_a": "x", "model_b": "x",
                      "metric": ""}, ALL)
    text = str(caught.value)
    assert "unknown field 'bogus'" in text and "Invalid value for 'chains': must be a whole number" in text
    assert "'lower_is_better' must be true or false" in text and "Invalid value for 'metric'" in text
    assert "model A and model B are both 'x'" in text


def test_excluded_fields_are_unknown_to_a_request():
    with pytest.raises(InputError, match="unknown field 'sensitivity'"):
        parse_fields({"metric": "m", "sensitivity": True}, [SourceOptions, FitOptions, ModelsOptions],
                     exclude=("sensitivity",))


def test_to_params_round_trips_through_the_json_names():
    fit = FitOptions(rope=0.02, seed=3, alpha_bounds=(1, 4), rho=0.2)
    params = fit.to_params()
    assert params["alpha_bounds"] == "1.0,4.0" and "seed" in params
    assert FitOptions(**{k: v for k, v in params.items() if k != "greater_is_better" and k != "sensitivity"}) == \
        dataclasses.replace(fit)


def test_models_accept_a_comma_separated_list_and_refuse_repeats():
    assert ModelsOptions(models="a, b,c").models == ("a", "b", "c")
    with pytest.raises(InputError, match="more than once: a"):
        ModelsOptions(models=("a", "b", "a"))


def test_help_lists_every_engine_setting_with_its_one_default():
    text = CliRunner().invoke(main, ["compare", "--help"], terminal_width=200).output
    for f in dataclasses.fields(FitOptions):
        assert options.public_name(f, "cli") in text, f.name
    assert "--warmup INTEGER" in text and "(default: 1000; 300 for the pairs of a matrix)" in text
    assert "[default: 1000]" in text and "--alpha-bounds LOW,HIGH" in text
    assert "[default: 0.5,5]" in text


def test_cli_values_are_checked_by_the_options_module():
    result = CliRunner().invoke(main, ["compare", "--metric", "m", "--model-a", "a", "--model-b", "b",
                                       "--chains", "1.7", "--warmup", "5", "--rope", "nan"])
    assert result.exit_code == 2
    assert "Invalid value for '--chains': must be a whole number" in result.stderr
    assert "Invalid value for '--warmup': must be a whole number >= 10" in result.stderr
    assert "Invalid value for '--rope': must be a finite number > 0" in result.stderr


# ------------------------------------------------------------------------------------------ progress and voice


def test_progress_on_a_pipe_prints_the_stage_then_periodic_lines():
    out = io.StringIO()
    with TerminalProgress(out, every=0.3, tick=0.05) as progress:
        notify(progress, "compiling")
        time.sleep(0.75)
        notify(progress, "sampling", "a vs b on 3 datasets")
    lines = out.getvalue().splitlines()
    assert lines[0] == "bayescompare: compiling (0 s)"
    assert len([x for x in lines if x.startswith("bayescompare: compiling")]) >= 3  # nothing silent for long
    assert lines[-1] == "bayescompare: sampling a vs b on 3 datasets (0 s)"
    with pytest.raises(ValueError, match="unknown stage"):
        notify(progress, "thinking")


def test_progress_on_a_terminal_rewrites_one_live_line():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    with TerminalProgress(out, tick=0.05) as progress:
        progress("sampling", "a vs b")
        time.sleep(0.2)
    text = out.getvalue()
    assert text.count("\r") >= 3 and text.endswith("\n") and text.count("\n") == 1
    assert "bayescompare: sampling a vs b (0 s)" in text


def test_one_prefix_and_no_credentials(caplog):
    stream = io.StringIO()
    handler = console.install_cli_handler(stream)
    try:
        console.log.warning("rope wider than the data")
        console.log.info("compiling once")
        logging.getLogger("mlflow.store.db.utils").info("creating tables")
    finally:
        console.log.removeHandler(handler)
    assert stream.getvalue().splitlines() == ["bayescompare: warning: rope wider than the data",
                                              "bayescompare: compiling once"]
    assert console.redact_uri("http://alice:PW@host:5000/x") == "http://host:5000/x"
    assert console.redact_uri("postgresql://u:p@db/mlflow") == "postgresql://db/mlflow"
    assert console.redact_uri("sqlite:///mlflow.db") == "sqlite:///mlflow.db"
    address, serve = console.ui_address("https://bob:secret@mlflow.example/", "3", "abc")
    assert address == "https://mlflow.example/#/experiments/3/runs/abc?workflowType=machine_learning" and serve is None
    address, serve = console.ui_address("sqlite:///mlflow.db", "3", "abc")
    assert address.startswith("http://127.0.0.1:5000/#/") and "--app-name bayescompare" in serve
