"""A matrix's runs: its parent run (the matrices of P(better) and P(rope), the ranking of all models or the pairs'
summary, and the pairs table) and the run of a pair read from the cache of earlier matrices.  What every run shares
(the :class:`~..shared.run_content.Bundle`, the run's name, tags and params) is in :mod:`..shared.run_content`; each
family writes its own run (its ``run`` module, named by its row of the family table)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from ..families import ranking_model
from ..families.ranking.run import ranking_metrics
from ..shared.markdown import Description, raw, strong
from ..shared.report_html import Link
from ..shared.run_content import (
    Bundle,
    comparison_params,
    comparison_tags,
    finite,
    fit_tag,
    models_run_name,
    new_directory,
    param_value,
    run_name,
)
from ..vocabulary import tags as T
from ..vocabulary.uiroutes import run_route

PAIRS_TABLE = "pairs.parquet"  # a matrix run's table of its pairs

__all__ = ["PAIRS_TABLE", "write_pairs_table", "matrix_bundle", "cached_pair_bundle"]


def matrix_bundle(summary, rows, *, experiment_ids: Sequence[str], layout: str | None = None, ranking=None,
                  directory: Path | None = None, child_runs: bool = True,
                  run_params: dict[str, str] | None = None) -> Bundle:
    """The parent run of a matrix comparison: the matrices of P(row better than column) and P(rope) (plot and
    CSV) and the ranking: the ``ranking`` of all models (:func:`..families.ranking.engine.rank_scores`) when given (its
    tables and plots, as a ranking run holds them), else the pairs' summary.  ``rows`` are the pairs'
    :class:`~.matrix.PairRow` (their table, ``pairs.parquet``, is written by :func:`write_pairs_table` once the
    child runs are logged, or without them: ``child_runs=False``); ``run_params`` are added to its params (how the
    matrix ran)."""
    from ..shared.figures import write_png_and_svg
    from .matrix import dataset_count, matrix_figure, ranking_markdown

    root, tmp = new_directory(directory, "bayescompare-matrix-")
    try:
        best = summary.ranking["model"].iloc[0]
        if ranking is not None:
            family = ranking_model(ranking.model)
            with family.part("run")(ranking, metric=summary.metric, experiment_ids=experiment_ids, layout=layout,
                                    directory=root) as ranked:
                best = ranked.tags[T.BEST]
            differs = family.part("differs") if family.differs else ""  # unless its own report says it
            said = differs in html.unescape(str(ranked.description))
            doc = Description().include(ranked.description)
            doc.include(ranking_markdown(summary, matrix_only=True, child_runs=child_runs))
            markdown = (doc.paragraph(differs) if differs and not said else doc).done()
        else:
            markdown = ranking_markdown(summary, child_runs=child_runs)
            summary.ranking.to_csv(root / "ranking.csv", index=False)
        write_png_and_svg({"matrix": matrix_figure(summary)}, root)
        (root / "ranking.md").write_text(str(markdown), encoding="utf-8")
        summary.better.rename_axis("model").to_csv(root / "p_better.csv")
        summary.rope.rename_axis("model").to_csv(root / "p_rope.csv")
        params = comparison_params(rows[0], layout=layout)
        params["models"] = param_value(list(summary.models))
        params.update(run_params or {})
        run_tags = {
            **({T.RANKING: ranking.model} if ranking is not None else {}),
            T.KIND: "matrix",
            T.MODELS: fit_tag(T.joined_names(summary.models)),
            T.METRIC: summary.metric,
            T.BEST: str(best),
            T.SOURCE_EXPERIMENTS: ",".join(str(e) for e in experiment_ids),
            T.NOTE: fit_tag(str(markdown)),
            T.PAIRS_TABLE: PAIRS_TABLE,
        }
        metrics = {"n_models": float(len(summary.models)), "n_pairs": float(len(rows)),
                   "n_pairs_cached": float(sum(row.cached for row in rows)),
                   "n_datasets": float(max(dataset_count(r) for r in rows)),
                   **(ranking_metrics(ranking) if ranking is not None else {})}
        return Bundle(models_run_name("matrix", len(summary.models), summary.metric), run_tags, params, metrics,
                      root, tmp, markdown)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


def cached_pair_bundle(row, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
                       directory: Path | None = None) -> Bundle:
    """The run of a matrix's pair read from the cache (a :class:`~.matrix.PairRow` of an earlier matrix's pairs
    table): its verdict, probabilities, diagnostics and settings, no artifacts, and the run that fitted it
    (:data:`~..vocabulary.tags.CACHED_FROM`) when that matrix logged one."""
    from ..shared.report_html import format_probability

    root, tmp = new_directory(directory, "bayescompare-")
    title = run_name(row.model_a, row.model_b, metric)
    where = ([raw("its posterior and tables are in run "), Link(row.run_id, run_route(row.run_id))] if row.run_id
             else [raw("that matrix kept it in its pairs table only")])
    p = format_probability
    markdown = (Description().heading(1, title)
                .paragraph(raw("_Read from the cache of earlier matrices: the same scores, options, Stan program and "
                               "package version were fitted before; "), *where,
                           raw(" (`--refresh` fits it again)._"))
                .paragraph(strong(row.verdict), f": P({row.model_a} better) = {p(row.p_a_better)}, P(rope) = "
                           f"{p(row.p_rope)}, P({row.model_b} better) = {p(row.p_b_better)} ({row.test} test).")
                .done())
    tags = {**comparison_tags(row, metric=metric, experiment_ids=experiment_ids, figures=False),
            **({T.CACHED_FROM: row.run_id} if row.run_id else {}), T.NOTE: fit_tag(str(markdown))}
    metrics = {"p_a_better": row.p_a_better, "p_rope": row.p_rope, "p_b_better": row.p_b_better,
               "n_datasets": row.n_datasets, **row.diagnostics}
    return Bundle(title, tags, comparison_params(row, layout=layout),
                  {key: float(v) for key, v in metrics.items() if finite(v)}, root, tmp, markdown)


def write_pairs_table(rows, directory: Path, signer=None) -> None:
    """The matrix's pairs table (:func:`~.matrix.pairs_frame`) as ``pairs.parquet`` in ``directory``: every pair's
    probabilities, verdict, decision, test, diagnostics, child run and cache key, and with a
    :class:`~.cachekey.Signer` each row's ``signature`` (the pair cache reads only the rows signed for it)."""
    from .matrix import pairs_frame

    frame = pairs_frame(rows)
    if signer is not None:
        frame["signature"] = [signer.sign(row) for row in rows]
    frame.to_parquet(directory / PAIRS_TABLE, index=False)
