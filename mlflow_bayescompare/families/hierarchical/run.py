"""How the pipeline runs the hierarchical test (the parts its row of the family table names): the fit step, the
pre-flight of a pair's folds, the progress line, and the comparison run it writes (:func:`bundle`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...shared.markdown import raw
from ...shared.run_content import (
    NO_REPORT_NOTE,
    Bundle,
    comparison_params,
    comparison_tags,
    finite,
    fit_tag,
    new_directory,
    run_name,
    write_posterior,
)
from ...vocabulary import tags as T
from ...vocabulary.options import MATRIX_PAIR_WARMUP, WARMUP, FitOptions
from ...vocabulary.outcomes import counted, jsonable
from ...vocabulary.progress import Progress
from .engine import hierarchical_test
from .prepare import correlations
from .result import HierarchicalResult

__all__ = ["fit", "check", "describe", "bundle", "run_metrics", "source_runs", "COMPARISON_ARTIFACTS",
           "PAIR_SUMMARY_ARTIFACTS"]

#: What a comparison run holds, relative to its artifact root; a matrix's pair run without its report
#: (:data:`PAIR_SUMMARY_ARTIFACTS`) holds the same minus the figures and report.html.
COMPARISON_ARTIFACTS = (
    "report.html", "report.md", "summary.json", "shrinkage.csv", "cv_differences.csv", "posterior.nc",
    *(f"plots/{name}.{ext}" for name in ("simplex", "posterior", "shrinkage", "model_fit") for ext in ("png", "svg")),
    "stan/hierarchical.stan", "stan/data.json",
)
PAIR_SUMMARY_ARTIFACTS = tuple(a for a in COMPARISON_ARTIFACTS if a != "report.html" and not a.startswith("plots/"))


def fit(tensor, options: FitOptions, progress: Progress | None = None, *, matrix_pair: bool = False,
        model_check: bool = True) -> HierarchicalResult:
    """The test on a pair's paired folds, with its PSIS-LOO model check unless ``model_check=False``; as a
    ``matrix_pair``, after the matrix's warm-up when none is given."""
    return hierarchical_test(tensor, options=options, progress=progress, model_check=model_check,
                             default_warmup=MATRIX_PAIR_WARMUP if matrix_pair else WARMUP)


def check(tensor, options: FitOptions, collected) -> None:
    """The pre-flight of a pair's folds: ρ of every dataset known (:func:`.prepare.correlations`)."""
    correlations(tensor.datasets, tensor.folds, options.rho)


def describe(tensor, options: FitOptions) -> str:
    """What is sampled, for the progress line."""
    return f"on {counted(len(tensor.datasets), 'dataset')} ({options.chains} chains × {options.draws} draws)"


def bundle(result, tensor, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
           run_id: str | None = None, experiment_id: str | None = None, directory: Path | None = None,
           figures: bool = True) -> Bundle:
    """The comparison run of ``result`` (fitted on ``tensor``); ``run_id`` when the run already exists, in
    ``experiment_id`` (the report then links to itself); ``directory`` to write the artifacts into (default: a
    temporary directory); ``figures=False`` for a matrix's pair run without figures and HTML report."""
    from ...sampling.programs import STAN_FILE
    from ...shared.figures import write_png_and_svg
    from . import plots, report

    root, tmp = new_directory(directory, "bayescompare-")
    try:
        ctx = report.ReportContext(title=run_name(result.model_a, result.model_b, metric), metric=metric,
                                   experiment_ids=[str(e) for e in experiment_ids],
                                   source_runs=source_runs(tensor, experiment_ids), comparison_run_id=run_id,
                                   comparison_experiment_id=experiment_id)
        markdown = report.render_markdown(result, ctx, figures=figures)
        if figures:
            pngs = write_png_and_svg(plots.all_figures(result), root / "plots")
            (root / "report.html").write_text(report.render_html(result, pngs, ctx), encoding="utf-8")
        else:
            markdown = markdown.with_note(raw(NO_REPORT_NOTE))
        (root / "stan").mkdir(exist_ok=True)
        (root / "report.md").write_text(str(markdown), encoding="utf-8")
        (root / "summary.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        result.shrinkage.to_csv(root / "shrinkage.csv", index=False)
        tensor.table.to_csv(root / "cv_differences.csv", index=False)
        write_posterior(result, root / "posterior.nc")
        shutil.copyfile(STAN_FILE, root / "stan" / "hierarchical.stan")
        (root / "stan" / "data.json").write_text(json.dumps(result.stan_data, indent=1, default=jsonable))
        run_tags = {**comparison_tags(result, metric=metric, experiment_ids=experiment_ids, figures=figures),
                    T.NOTE: fit_tag(str(markdown))}
        return Bundle(ctx.title, run_tags, comparison_params(result, layout=layout), run_metrics(result),
                      root, tmp, markdown)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


def run_metrics(result) -> dict[str, float]:
    """The numbers shown in MLflow's runs table and charts (non-finite values are left out; summary.json has them)."""
    diag = result.diagnostics
    metrics: dict[str, Any] = {
        "p_a_better": result.p_a_better,
        "p_rope": result.p_rope,
        "p_b_better": result.p_b_better,
        "p_delta0_a_better": result.p_delta0_a_better,
        "p_delta0_rope": result.p_delta0_rope,
        "p_delta0_b_better": result.p_delta0_b_better,
        "delta0_mean": result.delta0.get("mean"),
        "delta0_hdi_low": result.delta0.get("hdi_low"),
        "delta0_hdi_high": result.delta0.get("hdi_high"),
        "sigma0_mean": result.sigma0.get("mean"),
        "nu_median": (result.nu or {}).get("median"),
        "signed_rank_p": result.signed_rank_p,
        "n_datasets": len(result.shrinkage),
        "rhat_max": diag.get("rhat_max"),
        "ess_bulk_min": diag.get("ess_bulk_min"),
        "divergences": diag.get("divergences"),
        "sampling_seconds": diag.get("sampling_seconds"),
        "compile_seconds": diag.get("compile_seconds"),
    }
    for key, value in result.odds.items():
        metrics["odds_" + key.replace("/", "_vs_")] = value
    return {key: float(v) for key, v in metrics.items() if finite(v)}


def source_runs(tensor, experiment_ids: Sequence[str] = ()) -> list[dict[str, str]]:
    """One entry per source run, models A then B: ``{"model", "dataset", "run_id"}`` plus ``experiment_id`` when
    there is a single source experiment (with several, the report links to the run alone)."""
    table = tensor.table
    extra = {"experiment_id": str(experiment_ids[0])} if len(experiment_ids) == 1 else {}
    out = []
    for model, column in ((tensor.model_a, "run_id_a"), (tensor.model_b, "run_id_b")):
        pairs = table[["dataset", column]].drop_duplicates()
        out += [{"model": model, "dataset": str(d), "run_id": str(r), **extra}
                for d, r in pairs.itertuples(index=False)]
    return out
