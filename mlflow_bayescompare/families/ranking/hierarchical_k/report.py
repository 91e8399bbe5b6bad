"""The reports of the hierarchical ranking of k models (:class:`~.result.HierarchicalRankingResult`): the run
description (Markdown), the self-contained HTML page with its figures (:func:`.plots.all_figures`), and the lines
the command line prints."""

from __future__ import annotations

from ....shared.markdown import Markdown
from ....shared.report_html import format_differences, format_probability
from ..common import rule_words
from ..report import aligned, differences, markdown, page, versus_lines, versus_table, yes_no
from .result import HierarchicalRankingResult

__all__ = ["render_markdown", "render_html", "text_lines", "REFERENCE", "DIFFERS"]

REFERENCE = ("Hierarchical model of G. Corani, A. Benavoli, J. Demšar, F. Mangili and M. Zaffalon, “Statistical "
             "comparison of classifiers through Bayesian hierarchical modelling”, Machine Learning 106 (2017), "
             "extended from one difference to k models (stan/hierarchical_k.stan): the models' per-dataset means with "
             "the correlated-t likelihood of the folds, drawn from a multivariate Student-t population across "
             "datasets whose covariance is the models' own (each pair of models its own spread).")
#: how the ranking's pairs relate to the pair tests shown beside them
DIFFERS = ("Each pair's probabilities come from that pair's own fit of the paper's model (compare's hierarchical test, "
           "sampled in another form; in a matrix, its own pair tests), so another model joining or leaving does not "
           "move them, and they are the pair test's within Monte-Carlo error. P(best), the order and the ranks come "
           "from one model of every model, so the order can put first a model that its pair test does not call "
           "better.")
RANKING_HEADER = ["rank", "model", "P(best)", "P(best next)", "mean rank", "rank HDI", "effect", "δ − δ(leader)",
                  "HDI"]
PAIR_HEADER = ["pair", "difference", "HDI", "P(better)", "P(rope)", "P(worse)", "credible"]


def _rows(res: HierarchicalRankingResult) -> tuple[tuple[list[str], list], tuple[list[str], list]]:
    """The ranking's and the pairs' (header, rows)."""
    p, table, n = format_probability, res.ranking, len(res.ranking)
    effects = format_differences(table["effect"].tolist())
    gaps = format_differences([*table["diff_to_leader"], *table["diff_low"], *table["diff_high"]])
    ranking = [[str(i + 1), str(r.model), p(r.p_best), p(r.p_best_next), f"{r.mean_rank:.2f}",
                f"{r.rank_low:g}–{r.rank_high:g}", effects[i], gaps[i], f"{gaps[n + i]} to {gaps[2 * n + i]}"]
               for i, r in enumerate(table.itertuples())]
    m, shown = len(res.pairs), differences(res.pairs)
    pairs = [[f"{r.better} > {r.worse}", shown[i], f"{shown[m + i]} to {shown[2 * m + i]}",
              p(r.p_better), p(r.p_rope), p(r.p_worse), yes_no(r.credible)]
             for i, r in enumerate(res.pairs.itertuples())]
    return (RANKING_HEADER, ranking), (PAIR_HEADER, pairs)


def _about(res: HierarchicalRankingResult) -> str:
    """What the numbers are, with the rope and the rule."""
    s = res.settings
    return (f"{len(s['datasets'])} datasets, rope ±{s['metric_rope']:g} in metric units. P(best): the posterior "
            "probability of the largest mean effect δ across datasets (P(best next): of the best score on the next "
            "dataset); effects and differences in metric units with their "
            f"{s['hdi_prob']:g} HDI. Each pair's P(better / rope / worse) answers compare's question about the next "
            "dataset (the share of posterior draws in which the next dataset's difference falls most probably "
            f"beyond, inside or below the rope). A pair is credible when {rule_words(s['threshold'])}. {DIFFERS}")


def render_markdown(res: HierarchicalRankingResult, metric: str) -> Markdown:
    """The run description: the headline, what the numbers are, the ranking, the table against one model (``vs``),
    the pairs and the warnings."""
    ranking, pairs = _rows(res)
    return markdown(res, metric, qualifier=" (hierarchical model)", about=_about(res), ranking=ranking,
                    pairs=pairs, reference=REFERENCE, versus=versus_table(res))


def render_html(res: HierarchicalRankingResult, metric: str, figures_png: dict[str, bytes]) -> str:
    """The report as one self-contained page: inline CSS, figures as base64 PNG, no script, no external URL."""
    ranking, pairs = _rows(res)
    return page(res, metric, figures_png, about=_about(res), ranking=ranking, pairs=pairs, reference=REFERENCE,
                versus=versus_table(res))


def text_lines(res: HierarchicalRankingResult) -> list[str]:
    """What the command line prints under the ranking's table and headline: the pairs (and the ``--vs`` table), in
    the better-first orientation."""
    s = res.settings
    lines = [f"Pairs (rope ±{s['metric_rope']:g}; P(better / rope / worse) on the next dataset, compare's question, "
             f"each pair fitted alone; credible: {rule_words(s['threshold'])}):"]
    width = max(len(f"{r.better} > {r.worse}") for r in res.pairs.itertuples())
    p, shown = format_probability, aligned(res.pairs)
    lines += [f"  {f'{r.better} > {r.worse}'.ljust(width)}  {shown[i][0]}  P(better) {p(r.p_better)} · "
              f"rope {p(r.p_rope)} · P(worse) {p(r.p_worse)}{'  credible' if r.credible else ''}"
              for i, r in enumerate(res.pairs.itertuples())]
    return lines + versus_lines(res, "next dataset")
