"""The ``mlflow-bayescompare`` command line: ``compare``, ``matrix`` and ``demo`` over :mod:`.compare`."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click

from .errors import BayesCompareError, InputError
from .result import json_safe

EXIT_CODES = """\b
Exit codes:
  0  done (and, with --require, the claim is supported)
  1  the claim of --require is not supported, --strict found sampler problems,
     Stan failed, or MLflow could not be reached or written
  2  bad input: unknown experiment, model or metric, incomplete folds, bad option"""

PRIORS = ("hierarchical", "gamma(2,0.1)", "gamma(1,0.0345)", "gaussian")
LAYOUTS = ("auto", "steps", "keys", "children")


class CliError(click.ClickException):
    """``Error: …`` on stderr and a chosen exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


@click.group(help=f"Bayesian hierarchical comparison of models across datasets, read from and logged to MLflow.\n\n"
             f"{EXIT_CODES}")
@click.version_option(package_name="mlflow-bayescompare", message="%(prog)s %(version)s")
def main() -> None:
    pass


def _source_options(fn):
    """Options shared by ``compare`` and ``matrix``: where the runs are and how to read and fit them."""
    for option in reversed([
        click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", show_envvar=True,
                     help="MLflow tracking URI (default: MLflow's default, sqlite:///mlflow.db)."),
        click.option("--experiment-name", "experiment_names", multiple=True, metavar="NAME",
                     help="Source experiment by name (repeatable)."),
        click.option("--experiment-id", "experiment_ids", multiple=True, metavar="ID",
                     help="Source experiment by id (repeatable)."),
        click.option("--metric", required=True, help="Per-fold metric to compare, e.g. accuracy."),
        click.option("--rope", type=click.FloatRange(min=0), default=0.01, show_default=True,
                     help="Half-width of the region of practical equivalence, in metric units."),
        click.option("--lower-is-better", is_flag=True, help="The metric is a loss or error."),
        click.option("--folds", type=click.IntRange(min=2), help="Folds per repeat, when runs lack cv_folds."),
        click.option("--seed", type=int, help="Seed of the sampler (for reproducible probabilities)."),
        click.option("--filter", "filter_string", default="", metavar="FILTER",
                     help="Extra MLflow search filter, e.g. \"params.version = '2'\"."),
        click.option("--layout", type=click.Choice(LAYOUTS), default="auto", show_default=True,
                     help="How the per-fold scores are logged."),
        click.option("--model-tag", default="model", show_default=True, help="Run tag naming the model."),
        click.option("--dataset-tag", default="dataset", show_default=True, help="Run tag naming the dataset."),
        click.option("--prior", type=click.Choice(PRIORS), default="hierarchical", show_default=True,
                     help="Prior on the degrees of freedom ν."),
        click.option("--chains", type=click.IntRange(min=1), default=4, show_default=True),
        click.option("--draws", type=click.IntRange(min=10), default=1000, show_default=True,
                     help="Posterior draws per chain (after as many warm-up draws)."),
        click.option("--threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
                     show_default=True, help="Probability at which an outcome is declared."),
        click.option("--backend", type=click.Choice(("auto", "cmdstanpy", "pystan")), default="auto",
                     show_default=True),
        click.option("--drop-incomplete", is_flag=True, help="Drop datasets with missing folds (with a warning)."),
        click.option("--latest", is_flag=True, help="When a model has several runs on a dataset, use the latest."),
        click.option("--target-experiment", metavar="NAME|ID",
                     help="Log the comparison run here (created if no such experiment); default: the first source."),
        click.option("--no-log", is_flag=True, help="Print the result only; log nothing to MLflow."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout, nothing else."),
    ]):
        fn = option(fn)
    return fn


@main.command(epilog=EXIT_CODES)
@_source_options
@click.option("--model-a", required=True, help="Model A (value of the model tag).")
@click.option("--model-b", required=True, help="Model B.")
@click.option("--require", "claim", type=click.Choice(("a-better", "not-worse", "equivalent")),
              help="Exit 1 unless the posterior supports this claim about A at --threshold.")
@click.option("--sensitivity", is_flag=True, help="Also report the conclusion under other priors and ropes.")
@click.option("--strict", is_flag=True, help="Exit 1 (and tag the run) when R-hat > 1.01 or any divergence.")
def compare(**opts) -> None:
    """Is model A better than model B across the datasets?  Logs a comparison run."""
    from . import compare as api
    from .runlog import diagnostics_problem

    with _errors(), _output(opts["as_json"]) as out:
        outcome = api.compare_runs(**_api_kwargs(opts), model_a=opts["model_a"], model_b=opts["model_b"],
                                   sensitivity=opts["sensitivity"], progress=True)
        report = outcome.to_dict()
        failures = []
        if opts["claim"]:
            supported = api.require(outcome, opts["claim"], opts["threshold"])
            probability = api.claim_probability(outcome, opts["claim"])
            report["require"] = {"claim": opts["claim"], "threshold": opts["threshold"],
                                 "probability": probability, "supported": supported}
            if not supported:
                failures.append(f"claim '{opts['claim']}' not supported: its probability is {probability:.3f} "
                                f"< {opts['threshold']}")
        problem = diagnostics_problem(outcome.result)
        if opts["strict"] and problem:
            failures.append(f"--strict: sampler problems: {problem}")
            if outcome.run_id:
                _client(opts).set_tag(outcome.run_id, "bayescompare.strict", f"failed: {problem}")
        out(report, _comparison_text(outcome, report))
    if failures:
        raise CliError("; ".join(failures), exit_code=1)


@main.command(epilog=EXIT_CODES)
@_source_options
@click.option("--models", required=True, metavar="A,B,C", help="Comma-separated models to compare pairwise.")
@click.option("--jobs", type=click.IntRange(min=1), help="Pairs fitted in parallel (default: one per CPU).")
def matrix(**opts) -> None:
    """Compare every pair of models: one child comparison run per pair under a parent run with the ranking."""
    from . import compare as api

    models = [m.strip() for m in opts["models"].split(",") if m.strip()]
    with _errors(), _output(opts["as_json"]) as out:
        outcome = api.compare_matrix(**_api_kwargs(opts), models=models, jobs=opts["jobs"], progress=True)
        out(outcome.to_dict(), _matrix_text(outcome))


@main.command(epilog=EXIT_CODES)
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", show_envvar=True,
              help="Where to log (default: sqlite:///mlflow.db in the current directory).")
@click.option("--datasets", type=click.IntRange(2, 54), default=12, show_default=True,
              help="Friedman settings (datasets) to generate.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--chains", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--draws", type=click.IntRange(min=10), default=1000, show_default=True)
def demo(tracking_uri, datasets, seed, chains, draws) -> None:
    """Run the paper's Friedman experiment at small scale (LDA vs CART, 10x10 CV), log it and compare."""
    from .demo import run_demo

    with _errors():
        run_demo(tracking_uri=tracking_uri, n_settings=datasets, seed=seed, chains=chains, draws=draws,
                 echo=click.echo)


# ------------------------------------------------------------------------------------------------------ helpers


def _client(opts):
    from mlflow import MlflowClient

    return MlflowClient(opts["tracking_uri"])


def _api_kwargs(opts) -> dict:
    """CLI options → keyword arguments of :func:`compare_runs` / :func:`compare_matrix`."""
    return dict(
        experiment_names=opts["experiment_names"], experiment_ids=opts["experiment_ids"], metric=opts["metric"],
        rope=opts["rope"], greater_is_better=not opts["lower_is_better"], folds=opts["folds"], seed=opts["seed"],
        log=not opts["no_log"], target_experiment_id=_target_experiment(opts), filter_string=opts["filter_string"],
        layout=opts["layout"], tracking_uri=opts["tracking_uri"], drop_incomplete=opts["drop_incomplete"],
        on_duplicate="latest" if opts["latest"] else "error", prior=opts["prior"], chains=opts["chains"],
        draws=opts["draws"], threshold=opts["threshold"], backend=opts["backend"], model_tag=opts["model_tag"],
        dataset_tag=opts["dataset_tag"],
    )


def _target_experiment(opts) -> str | None:
    """The id of ``--target-experiment`` (an experiment name or id; a new name creates the experiment)."""
    value = opts["target_experiment"]
    if not value or opts["no_log"]:
        return None
    client = _client(opts)
    found = client.get_experiment_by_name(value)
    if found is not None:
        return found.experiment_id
    if value.isdigit():
        from mlflow.exceptions import MlflowException

        with contextlib.suppress(MlflowException):
            return client.get_experiment(value).experiment_id
    return client.create_experiment(value)


@contextlib.contextmanager
def _errors():
    """This package's errors (and MLflow's) → ``Error: …`` with exit code 2 for bad input, 1 otherwise."""
    from mlflow.exceptions import MlflowException

    try:
        yield
    except InputError as exc:
        raise CliError(str(exc), exit_code=2) from exc
    except BayesCompareError as exc:
        raise CliError(str(exc), exit_code=1) from exc
    except MlflowException as exc:
        bad_input = exc.error_code in ("INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST", "BAD_REQUEST")
        raise CliError(f"MLflow: {exc.message}", exit_code=2 if bad_input else 1) from exc
    except OSError as exc:
        raise CliError(f"{type(exc).__name__}: {exc}", exit_code=1) from exc


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


def _comparison_text(outcome, report) -> str:
    from .compare import run_url_path

    a, b = outcome.model_a, outcome.model_b
    lines = [
        f"{a} vs {b} · {outcome.metric}: {len(outcome.tensor.datasets)} datasets ({outcome.layout} layout), "
        f"rope ±{outcome.rope:g}",
        f"  P({a} better)  {outcome.p_a_better:.3f}",
        f"  P(rope)        {outcome.p_rope:.3f}",
        f"  P({b} better)  {outcome.p_b_better:.3f}",
        f"Verdict: {outcome.verdict}",
    ]
    if "require" in report:
        r = report["require"]
        lines.append(f"Claim '{r['claim']}': probability {r['probability']:.3f} "
                     f"{'≥' if r['supported'] else '<'} {r['threshold']} → "
                     f"{'supported' if r['supported'] else 'NOT supported'}")
    if outcome.run_id:
        lines.append(f"Comparison run {outcome.run_id} in experiment {outcome.experiment_id} "
                     f"({run_url_path(outcome.experiment_id, outcome.run_id)} in the MLflow UI)")
    return "\n".join(lines)


def _matrix_text(outcome) -> str:
    from .compare import run_url_path

    lines = [f"Ranking of {len(outcome.models)} models · {outcome.summary.metric}:",
             outcome.ranking.to_string(index=False, float_format=lambda v: f"{v:.3f}")]
    for (a, b), o in outcome.pairs.items():
        lines.append(f"  {a} vs {b}: {o.verdict}  [P(a) {o.p_a_better:.3f} · rope {o.p_rope:.3f} · "
                     f"P(b) {o.p_b_better:.3f}]")
    if outcome.run_id:
        lines.append(f"Parent run {outcome.run_id} in experiment {outcome.experiment_id} "
                     f"({run_url_path(outcome.experiment_id, outcome.run_id)} in the MLflow UI)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
