"""How the pipeline runs the correlated t-test (the parts its row of the family table names): the fit step, the
pre-flight of a pair's folds (one dataset, ρ known), the progress line, what the terminal adds to its name, and the
comparison run it writes (:func:`bundle`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...shared.run_content import Bundle, one_figure_bundle
from ...vocabulary.errors import InputError
from ...vocabulary.options import FitOptions
from ...vocabulary.progress import CLOSED_FORM, Progress
from ...vocabulary.runkey import parse_key
from . import report
from .engine import HEADER, correlated_t_test
from .formula import correlation
from .plots import all_figures
from .result import CorrelatedTTestResult

__all__ = ["fit", "check", "describe", "detail", "bundle"]


def fit(tensor, options: FitOptions, progress: Progress | None = None, *, matrix_pair: bool = False,
        model_check: bool = True) -> CorrelatedTTestResult:
    """The test on the folds of a pair's one dataset (closed form: no progress to report, no model check)."""
    return correlated_t_test(tensor, options=options)


def check(tensor, options: FitOptions, collected) -> None:
    """The pre-flight of a pair's folds: one dataset, whose ρ is known.  A pair that shares several datasets is
    refused with what to do (the hierarchical test, or a filter keeping one dataset)."""
    q = len(tensor.datasets)
    if q > 1:
        shown = ", ".join(map(repr, tensor.datasets[:5])) + (f" and {q - 5} more" if q > 5 else "")
        clause = parse_key(collected.dataset_key, "dataset").equals_clause(tensor.datasets[0])
        raise InputError(f"the correlated t-test compares two models on one dataset, but '{tensor.model_a}' and "
                         f"'{tensor.model_b}' share {q} datasets ({shown}): use the hierarchical test (--test "
                         "hierarchical, or auto), or keep one dataset with a filter"
                         + (f", e.g. --filter \"{clause}\"" if clause else ""))
    correlation(tensor.folds[0], options.rho, None, None, header=HEADER)


def describe(tensor, options: FitOptions) -> str:
    """What is compared, for the progress line."""
    return f"on the {len(tensor.diffs[0])} folds of one dataset (correlated t-test, {CLOSED_FORM})"


def detail(result: CorrelatedTTestResult) -> str:
    """What the terminal adds to the test's name: which ρ, and why."""
    return f" ({result.n} folds, ρ = {result.rho:.4g}: {result.rho_reason})"


def bundle(result: CorrelatedTTestResult, tensor=None, *, metric: str, experiment_ids: Sequence[str],
           layout: str | None = None, run_id: str | None = None, experiment_id: str | None = None,
           directory: Path | None = None, figures: bool = True) -> Bundle:
    """The comparison run of a Bayesian correlated t-test on the per-fold scores of one dataset: its reports, the
    posterior of the mean difference (``plots/posterior``), the per-fold scores (``cv_differences.csv``, from the
    result: ``tensor`` is not read) and the summary (``figures=False``: without the figure and report.html)."""
    metrics = {"mean_difference": result.loc, "mean_difference_hdi_low": result.mean_difference["hdi_low"],
               "mean_difference_hdi_high": result.mean_difference["hdi_high"], "posterior_scale": result.scale,
               "rho": result.rho, "nadeau_bengio_p": result.nadeau_bengio_p, "n_differences": result.n}
    return one_figure_bundle(result, report, all_figures, {"cv_differences.csv": result.scores}, metrics,
                             metric=metric, experiment_ids=experiment_ids, layout=layout, directory=directory,
                             figures=figures)
