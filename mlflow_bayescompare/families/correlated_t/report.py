"""Text reports of a :class:`~.correlated_t.result.CorrelatedTTestResult`: the run description (markdown) and a
self-contained HTML page with the posterior of the mean difference.  The same probabilities, odds and verdict as the
signed-rank test's report, in the same order and words; then the posterior's parameters and ρ with its reason."""

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
from ...vocabulary.outcomes import OUTCOMES, outcome_label
from .. import pair_test
from .result import CorrelatedTTestResult

__all__ = ["render_markdown", "render_html", "TEST", "REFERENCE"]

TEST = f"Bayesian correlated t-test ({pair_test(CorrelatedTTestResult.test).reference})"
REFERENCE = ("Bayesian correlated t-test of G. Corani and A. Benavoli, “A Bayesian approach for comparing "
             "cross-validated algorithms on multiple data sets”, Machine Learning 100 (2015), with the correlation ρ "
             "of Nadeau and Bengio: the mean difference μ is Student-t with n − 1 degrees of freedom, location x̄ and "
             "scale² = (1/n + ρ/(1 − ρ)) s², and the probabilities are its masses, as baycomp's CorrelatedTTest "
             "computes them.")


def _layout(res) -> str:
    """``10 × 10-fold cross-validation`` or ``30 hold-out splits``."""
    if res.folds is None:
        return f"{res.n} hold-out splits"
    return f"{res.n // res.folds} × {res.folds}-fold cross-validation"


def _subtitle(res, metric: str) -> str:
    direction = "higher is better" if res.greater_is_better else "lower is better"
    return (f"{TEST} · metric {metric} ({direction}) · dataset {res.dataset}: {res.n} per-fold differences "
            f"({_layout(res)}) · ρ = {res.rho:.4g} ({res.rho_reason}) · rope ±{res.rope:g} · decision threshold "
            f"{res.settings['threshold']:g} · δ = {res.model_a} − {res.model_b}")


def _probability_rows(res) -> list[list[str]]:
    probs = res.probabilities
    return [[outcome_label(o, res.model_a, res.model_b), format_probability(probs[o])] for o in OUTCOMES]


def _posterior_rows(res) -> list[list[str]]:
    """The posterior of μ: its values in the metric's units with one number of decimals, then ρ and the p-value."""
    d = res.mean_difference
    loc, scale, sd, low, high = format_numbers([res.loc, res.scale, res.sd, d["hdi_low"], d["hdi_high"]])
    return [["degrees of freedom (n − 1)", f"{res.df}"], ["location x̄", loc],
            ["scale √((1/n + ρ/(1 − ρ)) s²)", scale], ["s, sd of the differences", sd],
            ["ρ", f"{res.rho:.4g} ({res.rho_reason})"], ["95% interval", f"{low} to {high}"],
            ["Nadeau-Bengio corrected t-test, two-sided p", format_probability(res.nadeau_bengio_p)]]


POSTERIOR_HEADER = ["posterior of the mean difference μ", "value"]


def render_markdown(res, metric: str) -> Markdown:
    """The run description: the verdict, the probabilities, the odds and the posterior of the mean difference."""
    odds = [[k, f"{v:.3g}", res.evidence.get(k, "")] for k, v in res.odds.items()]
    out = Description().heading(3, f"{res.model_a} vs {res.model_b} · {metric}").paragraph(_subtitle(res, metric))
    out.paragraph(strong(res.verdict))
    out.table(["outcome (Bayesian correlated t-test)", "probability"], _probability_rows(res))
    out.table(["posterior odds", "value", "evidence"], odds).table(POSTERIOR_HEADER, _posterior_rows(res))
    for warning in res.diagnostics.get("warnings") or []:
        out.warning(warning)
    return out.paragraph(REFERENCE).done()


def render_html(res, metric: str, posterior_png: bytes) -> str:
    """The report as one self-contained page: inline CSS, the posterior as a base64 PNG, no script."""
    warnings = "".join(f'<p class="warn">⚠ {html.escape(w)}</p>' for w in res.diagnostics.get("warnings") or [])
    image = base64.b64encode(posterior_png).decode("ascii")
    verdict = f"<b>{html.escape(res.verdict)}</b>{plain_table(['outcome', 'probability'], _probability_rows(res))}"
    body = (f"<h1>{html.escape(res.model_a)} vs {html.escape(res.model_b)} · {html.escape(metric)}</h1>"
            f"<p>{html.escape(_subtitle(res, metric))}</p><div class=\"card {SUMMARY}\">{verdict}</div>{warnings}"
            f'<div class="card"><img alt="posterior" style="width:680px" src="data:image/png;base64,{image}"></div>'
            f'<div class="card">{plain_table(POSTERIOR_HEADER, _posterior_rows(res))}</div>'
            f"<footer>{html.escape(REFERENCE)}</footer>")
    return plain_page(f"{res.model_a} vs {res.model_b}", body)
