"""The ``mlflow-bayescompare`` command line: ``compare``, ``matrix``, ``rank`` and ``demo`` over
:mod:`.pipeline.compare`, ``watch`` over :mod:`.pipeline.watch`, ``compare-evals`` over :mod:`.pipeline.evals`, and
``compile``.

The options of each command are declared from :mod:`.vocabulary.options` and validated there; this module adds
only what is the command line's own: where the store is, whether to log, JSON output, ``--strict``; the text shown is
:mod:`.cli_text`'s.  It imports MLflow and the engines only once a command's progress line shows (they take seconds to
import on a first run).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click

from . import cli_text
from .cli_signals import stop_on_sigterm, stopped_wins
from .demo import SETTINGS
from .sampling.programs import PROGRAMS
from .vocabulary import claims, mlflow_internals
from .vocabulary.console import install_cli_handler, redact_uri
from .vocabulary.errors import BayesCompareError, InputError
from .vocabulary.options import (
    WATCH_EXCLUDED,
    EvalOptions,
    FitOptions,
    MatrixOptions,
    ModelsOptions,
    PairOptions,
    RankOptions,
    SamplerOptions,
    SourceOptions,
    WatchOptions,
    checked_click_option,
    click_options,
    parse_fields,
)
from .vocabulary.outcomes import json_safe
from .vocabulary.progress import TerminalProgress, notify

__all__ = ["main"]


class CliError(click.ClickException):
    """``Error: …`` on stderr and a chosen exit code; the message without the credentials its URIs may carry (MLflow's
    own errors name the tracking URI as given, password included)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(redact_uri(message))
        self.exit_code = exit_code


@click.group(help="Bayesian comparison of models across datasets, read from and logged to MLflow.\n\n"
             + cli_text.EXIT_CODES)
@click.version_option(package_name="mlflow-bayescompare", message="%(prog)s %(version)s")
def main() -> None:
    install_cli_handler()
    stop_on_sigterm()


def _run_options(fn):
    """The command line's own options: the store, logging and output."""
    for option in reversed([
        click.option("--tracking-uri", envvar=mlflow_internals.TRACKING_URI_ENV, show_envvar=True,
                     help="MLflow tracking URI (default: MLflow's default, sqlite:///mlflow.db)."),
        click.option("--no-log", is_flag=True, help="Print the result only; log nothing to MLflow."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout, nothing else."),
    ]):
        fn = option(fn)
    return fn


@main.command(epilog=cli_text.EXIT_CODES)
@click_options(SourceOptions, FitOptions, PairOptions)
@_run_options
@click.option("--strict", is_flag=True, help="Exit 1 (and tag the run) when R-hat > 1.01 or any divergence.")
def compare(tracking_uri, no_log, as_json, strict, **fields) -> None:
    """Is model A better than model B across the datasets?  Logs a comparison run."""
    with _errors(), _output(as_json) as out:
        source, fit, pair = parse_fields(fields, [SourceOptions, FitOptions, PairOptions], origin="cli")
        with _progress() as progress:
            from .pipeline import compare as api
            from .shared.run_content import diagnostics_problem
            from .vocabulary.tags import STRICT

            outcome = api.compare_runs(model_a=pair.model_a, model_b=pair.model_b, source=source, fit=fit,
                                       log=not no_log, tracking_uri=tracking_uri, progress=progress)
        report = outcome.to_dict()
        claim = claims.reports(outcome, pair.claim, fit.threshold) if pair.claim else {}
        failures = _claimed(report, claim)
        problem = "; ".join(f"{m + ': ' if m else ''}{p}" for m, one in _each_metric(outcome)
                            if (p := diagnostics_problem(one.result)))
        if strict and problem:
            failures.append(f"--strict: sampler problems: {problem}")
            if outcome.run_id:
                _client(tracking_uri).set_tag(outcome.run_id, STRICT, f"failed: {problem}")
        out(report, cli_text.comparison_text(outcome, claim, tracking_uri))
    if failures:
        raise CliError("; ".join(failures), exit_code=1)


@main.command(epilog=cli_text.exit_codes(require=False, strict=False))
@click_options(SourceOptions, FitOptions, ModelsOptions, MatrixOptions, exclude=("sensitivity",))
@_run_options
@click.option("--jobs", type=click.IntRange(min=1),
              help="Pairs fitted in parallel (default: one per CPU, of this machine or of the Ray cluster).")
def matrix(tracking_uri, no_log, as_json, jobs, **fields) -> None:
    """Compare every pair of models: a parent run with the ranking and the pairs table, and one child comparison
    run per pair (up to --child-runs-up-to pairs)."""
    with _errors(), _output(as_json) as out:
        source, fit, models, how = parse_fields(fields, [SourceOptions, FitOptions, ModelsOptions, MatrixOptions],
                                                origin="cli", exclude=("sensitivity",))
        _refuse_password_for_ray(tracking_uri, how.engine)
        with _progress() as progress:
            from .pipeline import compare as api

            outcome = api.compare_matrix(models=models.models, pair_reports=models.pair_reports, source=source,
                                         fit=fit, log=not no_log, tracking_uri=tracking_uri, jobs=jobs,
                                         matrix_options=how, progress=progress)
        out(outcome.to_dict(), cli_text.matrix_text(outcome, tracking_uri))


@main.command(epilog=cli_text.exit_codes(strict=False))
@click_options(SourceOptions, RankOptions, ModelsOptions, exclude=("RankOptions.drop_incomplete", "pair_reports"))
@_run_options
@click.option("--require", "require_best", metavar="CLAIM=MODEL",
              help="Exit 1 unless the claim's probability reaches --threshold: best=MODEL (P(best)), "
                   "none-better=MODEL (no model better than MODEL by more than the rope on the next dataset), "
                   "not-worse-than-best=MODEL (MODEL not worse than the leader by more than the rope); the last two "
                   "need the hierarchical model.")
def rank(tracking_uri, no_log, as_json, require_best, **fields) -> None:
    """Which of my models is best?  Ranks three or more models at once (across datasets the hierarchical model of
    their fold scores, or --model bbt; the joint correlated-t model of the folds on one dataset) and logs a ranking
    run.  --vs MODEL (or best) adds one row per model against it."""
    with _errors(), _output(as_json) as out:
        source, options, models = parse_fields(fields, [SourceOptions, RankOptions, ModelsOptions], origin="cli",
                                               exclude=("RankOptions.drop_incomplete", "pair_reports"))
        wanted = claims.best_claim(require_best) if require_best is not None else None
        with _progress() as progress:
            from .pipeline import compare as api

            outcome = api.rank_runs(models=models.models, source=source, rank=options, log=not no_log,
                                    tracking_uri=tracking_uri, progress=progress, claim=wanted)
        report = outcome.to_dict()
        claim = claims.reports(outcome, wanted, options.threshold) if wanted else {}
        failures = _claimed(report, claim)
        out(report, cli_text.ranking_text(outcome, claim, tracking_uri))
    if failures:
        raise CliError("; ".join(failures), exit_code=1)


class _DesignCommand(click.Command):
    """``watch``: its options, a design's among them, declared when the command is used, not when the module is
    imported (the design's module imports SciPy, which the other commands put off until their first line shows)."""

    def get_params(self, ctx):
        if not self.params:
            from .sequential.design import Design

            declare = click_options(Design, WatchOptions, SourceOptions, PairOptions, exclude=WATCH_EXCLUDED,
                                    required=False)
            self.params = list(reversed(declare(_run_options(lambda: None)).__click_params__))
        return super().get_params(ctx)


@main.command(cls=_DesignCommand, epilog=cli_text.WATCH_EXIT_CODES)
def watch(tracking_uri, no_log, as_json, **fields) -> None:
    """Stop when decided: look at two models' growing CV runs (or two growing evaluation runs) under a registered
    design and answer continue, A better, B better, practically equivalent or inconclusive at the budget (the exit
    code says which).  The first look registers the design (and its simulated error rates) in a watch run; every
    look is kept there.  --follow looks again every --interval seconds until decided."""
    with _errors(), _output(as_json) as out:
        from .pipeline.watchrequest import watch_request

        given = click.get_current_context().get_parameter_source  # a default is no choice of the user's
        request = watch_request({k: v for k, v in fields.items() if given(k) is not click.core.ParameterSource.DEFAULT},
                                origin="cli")
        with _progress() as progress:
            from .pipeline.watch import watch_runs

            outcome = watch_runs(request=request, log=not no_log, tracking_uri=tracking_uri, progress=progress)
        out(outcome.to_dict(), cli_text.watch_text(outcome, tracking_uri))
    code = cli_text.WATCH_EXITS[outcome.answer]
    if code:
        raise SystemExit(code)


@main.command("compare-evals", epilog=cli_text.exit_codes(strict=False))
@click_options(EvalOptions)
@_run_options
def compare_evals(tracking_uri, no_log, as_json, **fields) -> None:
    """Is evaluation run B really better than run A, scorer by scorer, on the same items?  Reads
    mlflow.genai.evaluate runs (traces and their assessments), mlflow.models.evaluate runs or long tables, pairs
    their items and answers per scorer, exactly for tens of items (no MCMC); logs a comparison run.  --runs a,b,c
    ranks two or more runs instead (--vs RUN against one)."""
    with _errors(), _output(as_json) as out:
        (options,) = parse_fields(fields, [EvalOptions], origin="cli")
        with _progress() as progress:
            from .pipeline import evals as api

            pipeline = api.rank_evaluation_runs if options.ranked else api.compare_evaluation_runs
            outcome = pipeline(options=options, log=not no_log, tracking_uri=tracking_uri, progress=progress)
        report, checked, failures = outcome.to_dict(), None, []
        if options.claim is not None:
            checked = api.claim_reports(outcome, options.claim)
            report["require"] = api.claim_dict(checked)
            failures = [] if checked["joint"].supported else [checked["joint"].failure()]
        out(report, cli_text.evals_text(outcome, checked, tracking_uri))
    if failures:
        raise CliError("; ".join(failures), exit_code=1)


@main.command(epilog=cli_text.exit_codes(require=False, strict=False))
@click.option("--tracking-uri", envvar=mlflow_internals.TRACKING_URI_ENV, show_envvar=True,
              help="Where to log (default: sqlite:///mlflow.db in the current directory).")
@click.option("--datasets", type=click.IntRange(2, len(SETTINGS)), default=12, show_default=True,
              help="Friedman settings (datasets) to generate.")
@checked_click_option(SamplerOptions, "seed", default=1)
@checked_click_option(SamplerOptions, "chains")
@checked_click_option(SamplerOptions, "draws")
def demo(tracking_uri, datasets, seed, chains, draws) -> None:
    """Run the paper's Friedman experiment at small scale: LDA, CART and naive Bayes cross-validated 10x10 on
    Friedman's functions, logged to MLflow, the three ranked and LDA compared with CART."""
    from .demo import run_demo

    with _errors():
        run_demo(tracking_uri=tracking_uri, n_settings=datasets, seed=seed, chains=chains, draws=draws,
                 echo=click.echo)


_SAMPLING_ONLY = ("chains", "draws", "warmup", "seed")  # SamplerOptions that compile leaves out: all but backend


@main.command("compile")
@click.option("--program", "names", multiple=True, type=click.Choice(list(PROGRAMS)),
              help="A Stan program to compile (repeat it for more; default: every program).")
@click_options(SamplerOptions, exclude=_SAMPLING_ONLY)
def compile_(names, **fields) -> None:
    """Compile the Stan programs into the per-user cache ahead of the first comparison, all at once: for a Docker
    image layer or a CI cache step.  Prints each program, compiled or cached, with the seconds it took, and the
    folders that hold the cache.  Exit codes: 0 done, 1 a compile failed, 2 bad input (no such backend)."""
    from .sampling import sampler

    with _errors():
        (options,) = parse_fields(fields, [SamplerOptions], origin="cli", exclude=_SAMPLING_ONLY)
        with TerminalProgress(sys.stderr) as progress:
            seconds = sampler.compile_programs(names or PROGRAMS, options.backend, progress)
        width = max(map(len, seconds))
        for name, took in seconds.items():
            click.echo(f"{name.ljust(width)}  {'compiled' if took else 'cached':8}  {took:.0f} s")
        click.echo(f"cache: {', '.join(map(str, sampler.cache_directories(options.backend)))}")


# ------------------------------------------------------------------------------------------------------ helpers


def _refuse_password_for_ray(tracking_uri: str | None, engine: str) -> None:
    """Ray records the driver's command line in its cluster's job table (the job's entrypoint, which every client of
    the cluster may read): a password given there with ``--tracking-uri`` would be kept by the cluster."""
    given = click.get_current_context().get_parameter_source("tracking_uri")
    if engine == "ray" and given is click.core.ParameterSource.COMMANDLINE and redact_uri(tracking_uri) != tracking_uri:
        raise CliError("--tracking-uri carries a user name and password, and a Ray cluster keeps this command line "
                       "in its job table, where every client of the cluster may read it: give the URI in "
                       f"{mlflow_internals.TRACKING_URI_ENV}, or the credentials in "
                       f"{' and '.join(mlflow_internals.CREDENTIALS_ENV.values())}", exit_code=2)


def _client(tracking_uri):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri)


@contextlib.contextmanager
def _progress():
    """The live progress line, started on the stage ``fetching`` (the pre-flight's first), so that it shows while
    MLflow and the engines are imported."""
    with TerminalProgress(sys.stderr) as progress:
        notify(progress, "fetching")
        yield progress


@contextlib.contextmanager
def _errors():
    """This package's errors (and MLflow's) → ``Error: …`` with exit code 2 for bad input, 1 otherwise; a command
    stopped by SIGTERM exits 143 (:func:`.cli_signals.stopped_wins`)."""
    try:
        with stopped_wins():
            yield
    except InputError as exc:
        raise CliError(str(exc), exit_code=2) from exc
    except BayesCompareError as exc:
        raise CliError(str(exc), exit_code=1) from exc
    except OSError as exc:
        raise CliError(f"{type(exc).__name__}: {exc}", exit_code=1) from exc
    except Exception as exc:
        mlflow_errors = sys.modules.get("mlflow.exceptions")  # none raised before MLflow is imported
        if mlflow_errors is None or not isinstance(exc, mlflow_errors.MlflowException):
            raise
        bad_input = exc.error_code in ("INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST", "BAD_REQUEST")
        raise CliError(f"MLflow: {exc.message}", exit_code=2 if bad_input else 1) from exc


@contextlib.contextmanager
def _output(as_json: bool):
    """Yield ``out(obj, text)``: with ``--json`` everything else written to stdout (including by Stan or MLflow)
    goes to stderr and ``obj`` is printed as one JSON object at the end; otherwise ``text`` is printed."""
    printed = []

    def out(obj, text):
        printed.append(obj if as_json else text)

    if not as_json:
        yield out
        for text in printed:
            click.echo(text)
        return
    with _stdout_to_stderr():
        yield out
    for obj in printed:
        click.echo(json.dumps(json_safe(obj), default=str))


@contextlib.contextmanager
def _stdout_to_stderr():
    """Send Python's and the process's (fd 1) standard output to standard error for the duration."""
    sys.stdout.flush()
    saved = None
    try:
        fd = sys.__stdout__.fileno()
        saved = os.dup(fd)
        os.dup2(sys.__stderr__.fileno(), fd)
    except (AttributeError, OSError, ValueError):  # no real stdout (e.g. an embedding host)
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            sys.__stdout__.flush()
            os.dup2(saved, fd)
            os.close(saved)


def _each_metric(outcome) -> list[tuple[str | None, object]]:
    """``(metric, outcome)`` of each metric of a decision on several, else ``[(None, outcome)]``."""
    return list(outcome.by_metric.items()) if hasattr(outcome, "by_metric") else [(None, outcome)]


def _claimed(report: dict, checked: dict[str | None, claims.Report]) -> list[str]:
    """The ``--require`` claim's report (:func:`~.vocabulary.claims.reports`) added to the JSON ``report``; why it
    failed, if it did.  On several metrics it must hold on every one: ``require`` holds each metric's report."""
    if not checked:
        return []
    report["require"] = claims.reports_dict(checked)
    return [f"{'on ' + m + ': ' if m else ''}{c.failure()}" for m, c in checked.items() if not c.supported]


if __name__ == "__main__":
    main()
