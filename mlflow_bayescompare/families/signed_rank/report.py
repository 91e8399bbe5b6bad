"""Text reports of a :class:`~.engine.SignedRankResult`: the run description (markdown) and a self-contained HTML
page with the probability simplex.  The same probabilities, odds and verdict as the hierarchical test's report, in
the same order and words; per dataset, the two means and their difference."""

from __future__ import annotations

import base64
import html

from ...shared.markdown import Description, Markdown, strong
from ...shared.report_html import (
    SUMMARY,
    format_numbers,
    format_probability,
    plain_page,
    plain_table,
)
from ...vocabulary.outcomes import OUTCOMES, counted, outcome_label

__all__ = ["render_markdown", "render_html", "REFERENCE"]

REFERENCE = ("Bayesian signed-rank test of A. Benavoli, G. Corani, J. Demšar and M. Zaffalon, “Time for a change: a "
             "tutorial for comparing multiple classifiers through Bayesian analysis”, JMLR 18 (2017), as baycomp "
             "implements it (a Dirichlet process with its prior pseudo-observation at 0).")


def _subtitle(res, metric: str) -> str:
    direction = "higher is better" if res.greater_is_better else "lower is better"
    datasets = counted(len(res.datasets), "dataset")
    return (f"metric {metric} ({direction}) · per-dataset means of {datasets} · rope ±{res.rope:g} "
            f"· decision threshold {res.settings['threshold']:g} · δ = {res.model_a} − {res.model_b}")


def _probability_rows(res) -> list[list[str]]:
    probs = res.probabilities
    return [[outcome_label(o, res.model_a, res.model_b), format_probability(probs[o])] for o in OUTCOMES]


def _dataset_rows(res) -> list[list[str]]:
    """Per dataset: the two models' means (one number of decimals for both columns) and their difference."""
    table, n = res.datasets, len(res.datasets)
    means = format_numbers([*table["score_a"], *table["score_b"]])
    diffs = format_numbers(table["diff"].tolist())
    return [[str(d), means[i], means[n + i], diffs[i]] for i, d in enumerate(table["dataset"])]


def render_markdown(res, metric: str) -> Markdown:
    """The run description: the verdict, the probabilities, the odds and the per-dataset means."""
    odds = [[k, f"{v:.3g}", res.evidence.get(k, "")] for k, v in res.odds.items()]
    out = Description().heading(3, f"{res.model_a} vs {res.model_b} · {metric}").paragraph(_subtitle(res, metric))
    out.paragraph(strong(res.verdict))
    out.table(["outcome (Bayesian signed-rank test)", "probability"], _probability_rows(res))
    out.table(["posterior odds", "value", "evidence"], odds)
    out.table(["dataset", res.model_a, res.model_b, "difference"], _dataset_rows(res))
    for warning in res.diagnostics.get("warnings") or []:
        out.warning(warning)
    return out.paragraph(REFERENCE).done()


def render_html(res, metric: str, simplex_png: bytes) -> str:
    """The report as one self-contained page: inline CSS, the simplex as a base64 PNG, no script."""
    warnings = "".join(f'<p class="warn">⚠ {html.escape(w)}</p>' for w in res.diagnostics.get("warnings") or [])
    image = base64.b64encode(simplex_png).decode("ascii")
    datasets = plain_table(["dataset", res.model_a, res.model_b, "difference"], _dataset_rows(res))
    body = (f"<h1>{html.escape(res.model_a)} vs {html.escape(res.model_b)} · {html.escape(metric)}</h1>"
            f"<p>{html.escape(_subtitle(res, metric))}</p>"
            f"<div class=\"card {SUMMARY}\"><b>{html.escape(res.verdict)}</b>"
            f"{plain_table(['outcome', 'probability'], _probability_rows(res))}</div>{warnings}"
            f'<div class="card"><img alt="simplex" style="width:560px" src="data:image/png;base64,{image}"></div>'
            f'<div class="card">{datasets}</div><footer>{html.escape(REFERENCE)}</footer>')
    return plain_page(f"{res.model_a} vs {res.model_b}", body)
