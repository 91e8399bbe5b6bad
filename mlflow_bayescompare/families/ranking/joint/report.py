"""The reports of the joint correlated-t ranking of one dataset (:class:`~.result.JointRankingResult`): the run
description (Markdown), the self-contained HTML page with its figures (:func:`.plots.all_figures`), and the lines
the command line prints."""

from __future__ import annotations

from ....shared.markdown import Markdown
from ....shared.report_html import format_numbers, format_probability
from ..common import rule_words
from ..report import markdown, page, versus_lines, versus_table, yes_no
from .result import JointRankingResult

__all__ = ["render_markdown", "render_html", "text_lines", "REFERENCE"]

REFERENCE = ("Joint correlated-t model of the folds of one dataset: the matrix-normal generalisation of the "
             "Bayesian correlated t-test of G. Corani and A. Benavoli, “A Bayesian approach for comparing "
             "cross-validated algorithms on multiple data sets”, Machine Learning 100 (2015). The models' mean "
             "scores μ are multivariate Student-t with n − 1 degrees of freedom, so that every pair's posterior "
             "is the correlated t-test of that pair.")
RANKING_HEADER = ["rank", "model", "P(best)", "mean rank", "rank HDI", "mean score", "μ − μ(leader)", "95% interval"]
PAIR_HEADER = ["pair", "difference", "95% interval", "P(better)", "P(rope)", "P(worse)", "P(better > worse)",
               "credible"]


def _rows(res: JointRankingResult) -> tuple[tuple[list[str], list[list[str]]], tuple[list[str], list]]:
    """The ranking's and the pairs' (header, rows)."""
    p, table, n = format_probability, res.ranking, len(res.ranking)
    means = format_numbers(table["mean"].tolist())
    gaps = format_numbers([*table["diff_to_leader"], *table["diff_low"], *table["diff_high"]])
    ranking = [[str(i + 1), str(r.model), p(r.p_best), f"{r.mean_rank:.2f}", f"{r.rank_low:g}–{r.rank_high:g}",
                means[i], gaps[i], f"{gaps[n + i]} to {gaps[2 * n + i]}"] for i, r in enumerate(table.itertuples())]
    m = len(res.pairs)
    differences = format_numbers([*res.pairs["difference"], *res.pairs["hdi_low"], *res.pairs["hdi_high"]])
    pairs = [[f"{r.better} > {r.worse}", differences[i], f"{differences[m + i]} to {differences[2 * m + i]}",
              p(r.p_better), p(r.p_rope), p(r.p_worse), p(r.p_above), yes_no(r.credible)]
             for i, r in enumerate(res.pairs.itertuples())]
    return (RANKING_HEADER, ranking), (PAIR_HEADER, pairs)


def _about(res: JointRankingResult) -> str:
    """What the numbers are, with ρ and the rope."""
    s = res.settings
    return (f"One dataset ({s['datasets'][0]}): {s['n']} fold scores per model, ρ = {s['rho']:.4g} "
            f"({s['rho_reason']}), rope ±{s['metric_rope']:g} in metric units. P(best): the posterior probability "
            f"of the best mean score ({res.diagnostics['mc_se_max']:.3f} Monte-Carlo standard error at most); rank HDI "
            f"at {s['hdi_prob']:g}. Each pair's probabilities are its Bayesian correlated t-test's; a pair is "
            f"credible when {rule_words(s['threshold'])}, that is when the {s['threshold']:g} HDI of its difference "
            "lies beyond the rope.")


def render_markdown(res: JointRankingResult, metric: str) -> Markdown:
    """The run description: the headline, what the numbers are, the ranking, the table against one model (``vs``),
    the pairs and the warnings."""
    ranking, pairs = _rows(res)
    return markdown(res, metric, qualifier=" (one dataset)", about=_about(res), ranking=ranking,
                    pairs=pairs, reference=REFERENCE, versus=versus_table(res))


def render_html(res: JointRankingResult, metric: str, figures_png: dict[str, bytes]) -> str:
    """The report as one self-contained page: inline CSS, figures as base64 PNG, no script, no external URL."""
    ranking, pairs = _rows(res)
    return page(res, metric, figures_png, about=_about(res), ranking=ranking, pairs=pairs, reference=REFERENCE,
                versus=versus_table(res))


def text_lines(res: JointRankingResult) -> list[str]:
    """What the command line prints under the ranking's table and headline: ρ and the rope (and the ``--vs``
    table)."""
    settings = res.settings
    return [f"ρ = {settings['rho']:.4g} ({settings['rho_reason']}), rope ±{settings['metric_rope']:g}; "
            "each pair's probabilities are its correlated t-test's (pairs.csv, --json)",
            *versus_lines(res, "this dataset")]
