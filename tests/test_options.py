"""The options module (one home for every option), the progress display and the package's one voice."""

from __future__ import annotations

import dataclasses
import io
import logging
import math
import os
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mlflow_bayescompare.cli import main
from mlflow_bayescompare.vocabulary import console, mlflow_internals, options
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.options import (
    FitOptions,
    ModelsOptions,
    PairOptions,
    RankOptions,
    SamplerOptions,
    SourceOptions,
    parse_fields,
)
from mlflow_bayescompare.vocabulary.progress import TerminalProgress, notify

ALL = [SourceOptions, FitOptions, PairOptions]


def test_every_field_has_a_spec_and_a_default_only_there():
    for cls in (SourceOptions, SamplerOptions, FitOptions, PairOptions, ModelsOptions, RankOptions):
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


def test_keys_are_parsed_once_and_the_old_tag_options_are_their_aliases():
    [source] = parse_fields({"metric": "m", "model_key": "Param:estimator", "dataset_key": "input"}, [SourceOptions])
    assert (source.model_key, source.dataset_key, str(source.run_key("model"))) == ("param:estimator", "input",
                                                                                   "param:estimator")
    [old] = parse_fields({"metric": "m", "model_tag": "algo"}, [SourceOptions])
    assert (old.model_key, old.model_tag, old.dataset_key) == ("tag:algo", None, "tag:dataset")
    assert dataclasses.replace(old, metric="n").model_key == "tag:algo"  # folded once, and stays so
    with pytest.raises(InputError) as caught:
        parse_fields({"model_key": "input", "dataset_key": "logged-model", "dataset_tag": "d", "metric": "m"},
                     [SourceOptions], origin="cli")
    assert caught.value.problems == [
        "Invalid value for '--model-key': must be one of tag:<name>, param:<name>, run-name, logged-model; got "
        "'input'",
        "Invalid value for '--dataset-tag': 'd' is the key 'tag:d', but dataset_key is 'logged-model': give one of "
        "the two"]
    for bad in ("tag:", "param", "run-name:x", "tag:mo`del"):
        with pytest.raises(InputError, match="model_key"):
            SourceOptions(metric="m", model_key=bad)


#: JSON values of the wrong type for most fields (a name where an object is sent, a lone surrogate, nested lists)
WRONG_TYPES = [{"G": 1}, [{"G": 1}], [[1]], [None], True, -1, "G\ud800", ["G\ud800"], [], {}]
JOBS = [("comparison", [SourceOptions, FitOptions, PairOptions], {"model_a": "a", "model_b": "b"}),
        ("matrix", [SourceOptions, FitOptions, ModelsOptions], {}),
        ("ranking", [SourceOptions, RankOptions, ModelsOptions], {})]


@pytest.mark.parametrize("kind, classes, pair", JOBS, ids=[kind for kind, *_ in JOBS])
def test_a_request_of_wrong_json_types_is_refused_naming_the_field(kind, classes, pair):
    """Every field of every job, sent a value of the wrong JSON type: an InputError (the server's 400) naming the
    field, never another exception (the server's HTML 500); a name holding a lone surrogate is refused (MLflow
    would fail to encode it: a 502)."""
    from mlflow_bayescompare.server.jobs import Settings
    from mlflow_bayescompare.server.requests import job_request

    base = {"metric": "m", "experiment_id": ["1"], **pair}
    for name in sorted({options.public_name(f) for cls in classes for f in dataclasses.fields(cls)}):
        for value in WRONG_TYPES:
            try:
                job_request(kind, {**base, name: value}, Settings())
            except InputError as exc:
                assert f"'{name}'" in str(exc), (name, value, str(exc))
    named = ("model_a", "a\udcff") if kind == "comparison" else ("models", ["a\udcff"])
    for name, value in (("metric", "m\ud800"), named):
        with pytest.raises(InputError, match=f"Invalid value for '{name}': is not text that UTF-8 can encode"):
            job_request(kind, {**base, name: value}, Settings())


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
    assert "--warmup INTEGER" in text
    assert "(default: 1000; 300 for the pairs of a matrix, 300 Gibbs sweeps for a" in text
    assert "[default: 1000]" in text and "--alpha-bounds LOW,HIGH" in text
    assert "[default: 0.5,5]" in text


def test_cli_values_are_checked_by_the_options_module():
    result = CliRunner().invoke(main, ["compare", "--metric", "m", "--model-a", "a", "--model-b", "b",
                                       "--chains", "1.7", "--warmup", "5", "--rope", "nan"])
    assert result.exit_code == 2
    assert "Invalid value for '--chains': must be a whole number" in result.stderr
    assert "Invalid value for '--warmup': must be a whole number >= 10" in result.stderr
    assert "Invalid value for '--rope': must be a finite number > 0" in result.stderr


# ------------------------------------------------------------------------------------ one home for each option

PRIOR_PROBLEM = "must be one of hierarchical, gamma(2,0.1), gamma(1,0.0345), gaussian; got 'cauchy'"
BACKEND_PROBLEM = "must be one of auto, cmdstanpy, pystan; got 'jax'"


def _cli_stderr(*argv: str) -> str:
    result = CliRunner().invoke(main, list(argv))
    assert result.exit_code == 2, result.output
    return result.stderr


def test_an_unknown_prior_or_backend_is_refused_by_the_options_alone_in_one_wording():
    """The API and the command line refuse them before any work with the options' one message (the sampling layer
    checks nothing again), the ranking's backend as the tests'."""
    from mlflow_bayescompare import hierarchical_test, rank_models

    diffs = np.zeros((3, 10))
    with pytest.raises(InputError, match=re.escape(f"prior {PRIOR_PROBLEM}")):
        hierarchical_test(diffs=diffs, folds=10, prior="cauchy")
    with pytest.raises(InputError, match=re.escape(f"backend {BACKEND_PROBLEM}")):
        hierarchical_test(diffs=diffs, folds=10, backend="jax")
    scores = pd.DataFrame({"dataset": ["d1", "d2"] * 3, "model": ["a", "a", "b", "b", "c", "c"],
                           "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]})
    with pytest.raises(InputError, match=re.escape(f"backend {BACKEND_PROBLEM}")):
        rank_models(scores, backend="jax")
    pair = ["--metric", "m", "--model-a", "a", "--model-b", "b"]
    assert f"Invalid value for '--prior': {PRIOR_PROBLEM}" in _cli_stderr("compare", *pair, "--prior", "cauchy")
    assert f"Invalid value for '--backend': {BACKEND_PROBLEM}" in _cli_stderr("compare", *pair, "--backend", "jax")
    assert f"Invalid value for '--backend': {BACKEND_PROBLEM}" in _cli_stderr("rank", "--metric", "m", "--backend",
                                                                               "jax")


def test_the_stan_prior_flag_is_the_position_in_the_options_priors():
    """Every prior the options accept (an alias cleaned to its name) has its flag in the Stan program's range, and
    the sensitivity analysis' priors are among them."""
    from mlflow_bayescompare.families.hierarchical.engine import SENSITIVITY_PRIORS
    from mlflow_bayescompare.sampling import programs

    declared = re.search(r"int<lower=0, upper=(\d+)> nu_prior;", programs.program_code("hierarchical"))
    assert int(declared.group(1)) == len(options.PRIORS) - 1
    assert [programs.prior_code(p) for p in options.PRIORS] == list(range(len(options.PRIORS)))
    for alias, name in options.PRIOR_ALIASES.items():
        assert programs.prior_code(FitOptions(prior=alias.upper()).prior) == options.PRIORS.index(name)
    assert set(SENSITIVITY_PRIORS) <= set(options.PRIORS)
    assert programs.resolve_backend("auto") in options.BACKENDS


def test_the_tests_and_the_ranking_share_one_spec_of_each_sampler_setting():
    shared = [f.name for f in dataclasses.fields(SamplerOptions)]
    assert shared == ["chains", "draws", "warmup", "seed", "backend"]
    for cls in (FitOptions, RankOptions):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for f in dataclasses.fields(SamplerOptions):
            assert fields[f.name].metadata["option"] is f.metadata["option"] and fields[f.name].default == f.default
    helps = {}
    for command in ("compare", "matrix", "rank"):
        text = CliRunner().invoke(main, [command, "--help"], terminal_width=400).output
        helps[command] = {line.split()[0]: " ".join(line.split()[2:]) for line in text.splitlines()
                          if line.strip().startswith(("--chains", "--draws", "--warmup", "--seed", "--backend"))}
    assert len(helps["compare"]) == 5 and helps["compare"] == helps["matrix"] == helps["rank"]
    # a matrix ranks its models sampled as its pairs are
    fit = FitOptions(chains=2, draws=300, seed=4, backend="pystan")
    assert RankOptions(**fit.sampler_settings()).sampler_settings() == fit.sampler_settings()


def test_a_seed_is_drawn_in_one_place_when_none_is_given(monkeypatch):
    """Every engine draws its seed with ``options.draw_seed`` and records it with the one ``versions()``; a seed
    given stays."""
    from mlflow_bayescompare import hierarchical_test, signed_rank_test
    from mlflow_bayescompare.families.ranking.bbt.engine import rank_wins
    from mlflow_bayescompare.vocabulary.versions import stan_version, versions

    drawn = {options.draw_seed() for _ in range(5)}
    spec = FitOptions.__dataclass_fields__["seed"].metadata["option"]
    assert len(drawn) == 5 and all(spec.low <= s <= spec.high for s in drawn)
    assert FitOptions(seed=9).with_seed().seed == 9 and RankOptions().with_seed().seed is not None
    monkeypatch.setattr(options, "draw_seed", lambda: 4242)
    rng = np.random.default_rng(0)
    tiny = dict(chains=1, draws=10, warmup=10)
    wins = pd.DataFrame({"model_a": ["a", "a", "b"], "model_b": ["b", "c", "c"], "wins_a": [8, 9, 7],
                         "wins_b": [2, 1, 3]})
    results = [signed_rank_test(diffs=rng.normal(0.01, 0.02, 8)),
               hierarchical_test(diffs=rng.normal(0.01, 0.02, (3, 10)), folds=10, model_check=False, **tiny),
               rank_wins(wins, chains=1, draws=10)]
    for result in results:
        assert result.settings["seed"] == 4242 and result.settings["versions"] == versions()
    assert results[2].settings["warmup"] == options.WARMUP  # the ranking's warm-up when none is given
    assert {"mlflow-bayescompare", "mlflow", "numpy"} <= set(versions())
    backend = results[1].settings["backend"]
    assert stan_version(backend).startswith({"pystan": "pystan ", "cmdstanpy": "CmdStan "}[backend])


def test_mlproject_defaults_and_types_are_the_options():
    """Each parameter of the MLproject's compare entry point is passed to the option of its name, typed as the
    option (MLflow has no integer type: whole numbers are strings), with the option's default.  The exceptions
    are the entry point's own values where an option has no default: its metric, the claim its gate requires
    and a fixed seed (a gate is reproducible); they are valid values of the options."""
    import yaml

    own = {"metric", "require", "seed"}
    root = Path(__file__).resolve().parents[1]
    entry = yaml.safe_load((root / "MLproject").read_text())["entry_points"]["compare"]
    fields = {options.public_name(f): (cls, f) for cls in ALL for f in dataclasses.fields(cls)}
    given = {}
    for name, declared in entry["parameters"].items():
        declared = declared if isinstance(declared, dict) else {"type": declared}
        cls, f = fields[name]
        spec = f.metadata["option"]
        assert f"{options.public_name(f, 'cli')} {{{name}}}" in entry["command"], name
        assert declared["type"] == ("float" if spec.kind == "float" else "string"), name
        if "default" not in declared:
            continue
        given[name] = str(declared["default"])  # as `mlflow run` passes it on the command line
        if name in own:
            assert spec.required or f.default is None, name
    assert own <= set(given)
    built = dict(zip(ALL, parse_fields({**given, "experiment_name": ["cv"], "model_a": "a", "model_b": "b"}, ALL,
                                       origin="cli")))
    for name in set(given) - own:
        cls, f = fields[name]
        assert getattr(built[cls], f.name) == f.default, name


def test_demo_ranges_are_the_options_and_the_settings_at_hand():
    from mlflow_bayescompare.demo import SETTINGS

    params = {p.name: p for p in main.commands["demo"].params}
    for name in ("seed", "chains", "draws"):
        spec = SamplerOptions.__dataclass_fields__[name].metadata["option"]
        kind = params[name].type
        assert (kind.min, kind.max, kind.min_open, kind.max_open) == (spec.low, spec.high, spec.low_open,
                                                                      spec.high_open)
        assert params[name].help == spec.help
    assert (params["chains"].default, params["draws"].default, params["seed"].default) == (4, 1000, 1)
    assert params["datasets"].type.max == len(SETTINGS)
    for argv, problem in ((["--chains", "0"], "'--chains': 0 is not in the range 1<=x<=64"),
                          (["--draws", "5"], "'--draws': 5 is not in the range 10<=x<=1000000"),
                          (["--seed", "-1"], "'--seed': -1 is not in the range 0<=x<=4294967295"),
                          (["--datasets", str(len(SETTINGS) + 1)], f"{len(SETTINGS) + 1} is not in the range")):
        assert problem in _cli_stderr("demo", *argv), argv


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


def test_the_live_line_fits_an_80_column_terminal_and_lines_go_above_it(monkeypatch):
    """On a pseudo-terminal of 80 columns a long live line (wide characters in it) is cut to 79 columns, its
    detail ending in "…" and its elapsed time kept, so that each refresh rewrites its one row: a wrapped line left a
    stale row per refresh (issue 40, item 10).  ``$COLUMNS``, when set, is the width; a line echoed during the work
    takes a row of its own above."""
    import fcntl
    import struct
    import termios
    import unicodedata

    def columns(text):
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    monkeypatch.delenv("COLUMNS", raising=False)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    detail = "模型 " * 20 + "x" * 120
    with os.fdopen(slave, "w", encoding="utf-8") as tty:
        with TerminalProgress(tty, tick=0.02) as progress:
            progress("sampling", detail)
            time.sleep(0.15)
            progress.above(lambda text: print(text, file=tty))("a line above")
            time.sleep(0.15)
        os.set_blocking(master, False)
        raw = os.read(master, 1 << 16).decode("utf-8")
    os.close(master)
    segments = [s for s in re.split(r"\r|\n", raw) if s.strip()]
    assert len(segments) >= 6 and max(columns(s) for s in segments) <= 79
    assert all(s.startswith("bayescompare: sampling 模型") and re.search(r"… \(\d+ s\)$", s)
               for s in segments if s != "a line above")
    assert re.search(r"\r +\ra line above\r?\n", raw), repr(raw)  # on the live line's row, blanked first

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "40")
    out = Tty()
    with TerminalProgress(out, tick=0.02) as progress:
        progress("sampling", detail)
        time.sleep(0.1)
    assert max(columns(s) for s in re.split(r"\r|\n", out.getvalue())) == 39


def test_a_message_clears_the_live_progress_line_first():
    """A warning during live progress starts on a blanked line (not glued to ``…sampling (4 s)``), and the progress
    line comes back after it."""
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    handler = console.install_cli_handler(out)
    try:
        with TerminalProgress(out, tick=0.05) as progress:
            progress("sampling", "a vs b")
            time.sleep(0.2)
            console.log.warning("R-hat 1.02")
            time.sleep(0.2)
    finally:
        console.log.removeHandler(handler)
    text = out.getvalue()
    line = "bayescompare: sampling a vs b (0 s)"
    assert f"{line}\r{' ' * len(line)}\rbayescompare: warning: R-hat 1.02\n" in text, repr(text)
    assert line in text.split("R-hat 1.02\n", 1)[1]


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
    address, serve = console.ui_address("sqlite:///mlflow.db", "3", "abc")
    assert address.startswith("http://127.0.0.1:5000/#/") and "--app-name bayescompare" in serve


def test_auto_prefers_pystan_where_both_backends_are_present(tmp_path, monkeypatch):
    """``auto`` picks the backend the suite runs (pystan) even when cmdstanpy also finds a CmdStan installation
    (cmdstanpy's own check: a directory with a makefile, named by CMDSTAN); ``cmdstanpy`` still asks for CmdStan."""
    from mlflow_bayescompare.sampling import programs

    (tmp_path / "makefile").write_text("# a CmdStan tree as cmdstanpy recognises one\n")
    monkeypatch.setenv("CMDSTAN", str(tmp_path))
    assert programs.cmdstan_available() and programs.pystan_available()
    assert programs.resolve_backend("auto") == "pystan"
    assert programs.resolve_backend("cmdstanpy") == "cmdstanpy"


def test_mlflow_retries_are_said(monkeypatch):
    """MLflow's client retries in silence (urllib3 reports each retry on its own logger, which has no handler): the
    command line's handler says so.  A real request to a closed loopback port, with one quick retry."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException
    from servers import free_port

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    stream = io.StringIO()
    handler = console.install_cli_handler(stream)
    try:
        with pytest.raises(MlflowException):
            MlflowClient(f"http://u:pre@TAIL@127.0.0.1:{free_port()}").get_experiment("1")
    finally:
        console.log.removeHandler(handler)
        retries = logging.getLogger(mlflow_internals.RETRY_LOGGER)
        for notices in [h for h in retries.handlers if isinstance(h, console.RetryNotices)]:
            retries.removeHandler(notices)
        retries.setLevel(logging.NOTSET)
    assert stream.getvalue() == "bayescompare: warning: MLflow did not answer (Connection refused); retrying (0 left)\n"


def test_matrix_engine_options_are_declared_once_for_the_cli_and_the_api(monkeypatch):
    """--engine and --ray-address (or RAY_ADDRESS) come from MatrixOptions; a bad engine is refused by name."""
    from mlflow_bayescompare.vocabulary.options import MatrixOptions

    text = CliRunner().invoke(main, ["matrix", "--help"], terminal_width=200).output
    assert "--engine [local|ray]" in text and "RAY_ADDRESS]" in text and "--refresh" in text
    assert "--child-runs-up-to" in text
    with pytest.raises(InputError, match="Invalid value for '--engine'"):
        parse_fields({"engine": "dask"}, [MatrixOptions], origin="cli")
    assert MatrixOptions().logs_child_runs(50) and not MatrixOptions().logs_child_runs(51)
    assert MatrixOptions(child_runs=True).logs_child_runs(10_000)


def test_the_servers_matrix_model_limit_follows_its_engine(monkeypatch):
    from mlflow_bayescompare.server.jobs import Settings

    monkeypatch.delenv("MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS", raising=False)
    monkeypatch.delenv("MLFLOW_BAYESCOMPARE_ENGINE", raising=False)
    assert (Settings.from_env().engine, Settings.from_env().max_matrix_models) == ("local", 8)
    monkeypatch.setenv("MLFLOW_BAYESCOMPARE_ENGINE", "ray")
    assert (Settings.from_env().engine, Settings.from_env().max_matrix_models) == ("ray", 50)
    monkeypatch.setenv("MLFLOW_BAYESCOMPARE_MAX_MATRIX_MODELS", "12")
    assert Settings.from_env().max_matrix_models == 12
    monkeypatch.setenv("MLFLOW_BAYESCOMPARE_ENGINE", "dask")
    assert Settings.from_env().engine == "local"
