"""How the pipeline runs the signed-rank test (the parts its row of the family table names): the fit step, the
pre-flight of a pair's per-dataset means, the progress line, and the comparison run it writes (:func:`bundle`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...scores.tensor import left_out_note
from ...shared.run_content import Bundle, one_figure_bundle
from ...vocabulary.errors import InputError
from ...vocabulary.options import FitOptions
from ...vocabulary.progress import Progress
from . import report
from .engine import SignedRankResult, signed_rank_test, too_few
from .plots import all_figures

__all__ = ["fit", "check", "describe", "bundle"]


def fit(means, options: FitOptions, progress: Progress | None = None, *, matrix_pair: bool = False,
        model_check: bool = True) -> SignedRankResult:
    """The test on a pair's per-dataset means (Monte Carlo: no progress to report, no model check)."""
    return signed_rank_test(means, options=options)


def check(means, options: FitOptions, collected) -> None:
    """The pre-flight of a pair's means: two datasets at least (those the pair left out named)."""
    if len(means.datasets) < 2:
        raise InputError(too_few(means.datasets) + ([left_out_note(means.left_out, means.datasets)]
                                                    if means.left_out else []),
                         header="Cannot run the signed-rank test:")


def describe(means, options: FitOptions) -> str:
    """What is compared, for the progress line."""
    return f"on {len(means.datasets)} dataset means (signed-rank test)"


def bundle(result: SignedRankResult, means, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
           run_id: str | None = None, experiment_id: str | None = None, directory: Path | None = None,
           figures: bool = True) -> Bundle:
    """The comparison run of a Bayesian signed-rank test on per-dataset means (``means``, a
    :class:`~...scores.tensor.DatasetMeans`): its reports, the probability simplex, the means and the summary
    (``figures=False``: without the simplex and report.html)."""
    metrics = {"signed_rank_p": result.signed_rank_p, "n_datasets": len(result.datasets),
               **{k: result.diagnostics.get(k) for k in ("mc_se_max", "sampling_seconds")}}
    return one_figure_bundle(result, report, all_figures, {"dataset_means.csv": means.table}, metrics, metric=metric,
                             experiment_ids=experiment_ids, layout=layout, directory=directory, figures=figures)
