"""The reports of a BBT ranking (:class:`~.result.RankingResult`): the run description (Markdown), the
self-contained HTML page with its figures (:func:`.plots.all_figures`), and the lines the command line prints."""

from __future__ import annotations

from ....shared.markdown import Markdown
from ....shared.report_html import format_numbers, format_probability
from ..common import rule_words
from ..report import markdown, page, yes_no
from .result import RankingResult

__all__ = ["render_markdown", "render_html", "text_lines", "REFERENCE", "DIFFERS"]

REFERENCE = ("Bayesian Bradley-Terry model of J. Wainer, “A Bayesian Bradley-Terry model to compare multiple ML "
             "algorithms on multiple data sets”, JMLR 24 (2023).")
#: why BBT's pairs may differ from the pair tests (``--model bbt`` beside a matrix's pairs)
DIFFERS = ("BBT's pairs answer another question than the pair tests: P(P(win) > 0.5) counts each dataset's "
           "win, loss or tie, the pair tests weigh the size of each difference against the rope in metric "
           "units; the default hierarchical ranking answers the pair tests' question.")
RANKING_HEADER = ["rank", "model", "P(best)", "mean rank", "rank HDI", "strength"]
PAIR_HEADER = ["pair", "P(win)", "P(win) HDI", "P(P(win) > 0.5)", "P(win in rope)", "credible"]


def _ranking_rows(res: RankingResult) -> list[list[str]]:
    strengths = format_numbers(res.ranking["strength"].tolist())
    return [[str(i + 1), str(r.model), format_probability(r.p_best), f"{r.mean_rank:.2f}",
             f"{r.rank_low:g}–{r.rank_high:g}", strengths[i]]
            for i, r in enumerate(res.ranking.itertuples())]


def _pair_rows(res: RankingResult) -> list[list[str]]:
    p = format_probability
    return [[f"{r.better} > {r.worse}", p(r.p_win), f"{p(r.p_win_low)}–{p(r.p_win_high)}", p(r.p_above_half),
             p(r.p_in_rope), yes_no(r.credible)]
            for r in res.pairs.itertuples()]


def render_markdown(res: RankingResult, metric: str) -> Markdown:
    """The run description: the headline, the ranking, the pairs and the warnings."""
    hdi = res.settings.get("hdi_prob", 0.89)
    about = (f"P(best): the posterior probability that the model has the largest strength; rank HDI and P(win) HDI "
             f"at {hdi:g}. P(win): the probability that the better model of a pair wins on a new dataset; a pair "
             f"is credible when {rule_words(res.settings['threshold'], 'P(P(win) > 0.5)')}. {DIFFERS}")
    return markdown(res, metric, qualifier="", about=about, ranking=(RANKING_HEADER, _ranking_rows(res)),
                    pairs=(PAIR_HEADER, _pair_rows(res)), reference=REFERENCE)


def render_html(res: RankingResult, metric: str, figures_png: dict[str, bytes]) -> str:
    """The report as one self-contained page: inline CSS, figures as base64 PNG, no script, no external URL."""
    return page(res, metric, figures_png, about=DIFFERS, ranking=(RANKING_HEADER, _ranking_rows(res)),
                pairs=(PAIR_HEADER, _pair_rows(res)), reference=REFERENCE)


def text_lines(res: RankingResult) -> list[str]:
    """What the command line prints under the ranking's table and headline."""
    return [DIFFERS]
