"""Text reports of a ranking (a :class:`~.ranking.hierarchical_k_result.HierarchicalRankingResult` or a
:class:`~.ranking.result.RankingResult` across datasets, a :class:`~.ranking.joint.JointRankingResult` on one
dataset): the run description (markdown) and a self-contained HTML
page with its figures (:func:`.plots.all_figures`)."""

from __future__ import annotations

import base64
import html

from ...shared.report_html import SUMMARY, format_differences, format_numbers, format_probability, md_escape
from .decision import rule_words
from .hierarchical_k_result import HierarchicalRankingResult
from .joint import JointRankingResult
from .result import RankingResult

__all__ = ["render_markdown", "render_html", "headline", "MODEL_NAMES", "BBT_DIFFERS", "JOINT_DIFFERS",
           "DIFFERS"]

REFERENCE = ("Bayesian Bradley-Terry model of J. Wainer, “A Bayesian Bradley-Terry model to compare multiple ML "
             "algorithms on multiple data sets”, JMLR 24 (2023).")
JOINT_REFERENCE = ("Joint correlated-t model of the folds of one dataset: the matrix-normal generalisation of the "
                   "Bayesian correlated t-test of G. Corani and A. Benavoli, “A Bayesian approach for comparing "
                   "cross-validated algorithms on multiple data sets”, Machine Learning 100 (2015). The models' mean "
                   "scores μ are multivariate Student-t with n − 1 degrees of freedom, so that every pair's posterior "
                   "is the correlated t-test of that pair.")
#: The ranking models, by a result's ``model``, in words.
MODEL_NAMES = {"bbt": "Bayesian Bradley-Terry", "joint-t": "joint correlated-t model of one dataset's folds",
               "hierarchical": "hierarchical model of k models"}
HIERARCHICAL_REFERENCE = ("Hierarchical model of G. Corani, A. Benavoli, J. Demšar, F. Mangili and M. Zaffalon, "
                          "“Statistical comparison of classifiers through Bayesian hierarchical modelling”, Machine "
                          "Learning 106 (2017), extended from one difference to k models (stan/hierarchical_k.stan): "
                          "the models' per-dataset means with the correlated-t likelihood of the folds, drawn from a "
                          "multivariate Student-t population across datasets whose covariance is the models' own "
                          "(each pair of models its own spread).")
#: why BBT's pairs may differ from the pair tests (``--model bbt`` beside a matrix's pairs)
BBT_DIFFERS = ("BBT's pairs answer another question than the pair tests: P(P(win) > 0.5) counts each dataset's "
               "win, loss or tie, the pair tests weigh the size of each difference against the rope in metric "
               "units; the default hierarchical ranking answers the pair tests' question.")
JOINT_DIFFERS = ("The ranking's pair probabilities (its report's P(better) matrix) come from one model of all the "
                 "models, which shares each dataset's noise among them; each pair test fits its two models alone. "
                 "They answer the same question and can differ by a little (on the data of two models: at most "
                 "0.013, benchmarks/bench_kmodel.py agreement).")
#: Why a ranking's pairs and the pair tests shown beside it can differ, by the model that ranked (on one dataset the
#: joint model's pairs are the correlated t-tests': nothing to say).
DIFFERS = {"hierarchical": JOINT_DIFFERS, "bbt": BBT_DIFFERS}


def headline(res: RankingResult | JointRankingResult) -> str:
    """One sentence: the best model, how probable it is that it is the best, and what it cannot be told from."""
    top = res.ranking.iloc[0]
    ties = res.pairs[(res.pairs["better"] == top["model"]) & ~res.pairs["credible"]]["worse"].tolist()
    tail = (f"; not credibly better than {', '.join(map(str, ties))}" if ties else
            "; credibly better than every other model")
    return f"{top['model']} is the most probably best model (P(best) = {format_probability(top['p_best'])}){tail}"


def _ranking_rows(res: RankingResult) -> list[list[str]]:
    strengths = format_numbers(res.ranking["strength"].tolist())
    return [[str(i + 1), str(r.model), format_probability(r.p_best), f"{r.mean_rank:.2f}",
             f"{r.rank_low:g}–{r.rank_high:g}", strengths[i]]
            for i, r in enumerate(res.ranking.itertuples())]


def _pair_rows(res: RankingResult) -> list[list[str]]:
    p = format_probability
    return [[f"{r.better} > {r.worse}", p(r.p_win), f"{p(r.p_win_low)}–{p(r.p_win_high)}", p(r.p_above_half),
             p(r.p_in_rope), "yes" if r.credible else "no"]
            for r in res.pairs.itertuples()]


RANKING_HEADER = ["rank", "model", "P(best)", "mean rank", "rank HDI", "strength"]
PAIR_HEADER = ["pair", "P(win)", "P(win) HDI", "P(P(win) > 0.5)", "P(win in rope)", "credible"]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows])


def render_markdown(res: RankingResult | JointRankingResult | HierarchicalRankingResult, metric: str) -> str:
    """The run description: the headline, the ranking, the pairs and the warnings."""
    if isinstance(res, JointRankingResult):
        return _joint_markdown(res, metric)
    if isinstance(res, HierarchicalRankingResult):
        return _hierarchical_markdown(res, metric)
    hdi = res.settings.get("hdi_prob", 0.89)
    parts = [f"### Ranking of {len(res.models)} models · {md_escape(metric)}",
             f"**{md_escape(headline(res))}**",
             f"P(best): the posterior probability that the model has the largest strength; rank HDI and P(win) HDI "
             f"at {hdi:g}. P(win): the probability that the better model of a pair wins on a new dataset; a pair "
             f"is credible when {rule_words(res.settings['threshold']).replace('P(better)', 'P(P(win) > 0.5)')}. "
             f"{BBT_DIFFERS}",
             _md_table(RANKING_HEADER, _ranking_rows(res)), "#### Pairs", _md_table(PAIR_HEADER, _pair_rows(res))]
    parts += [f"> ⚠️ **Warning:** {md_escape(w)}" for w in res.diagnostics.get("warnings") or []]
    parts.append(md_escape(REFERENCE))
    return "\n\n".join(parts) + "\n"


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = ("body{margin:0;background:#f4f6f8;color:#1f2933;font:14px/1.5 system-ui,sans-serif}"
        "main{max-width:1120px;margin:0 auto;padding:24px 20px}.card{background:#fff;border:1px solid #e4e7eb;"
        "border-radius:8px;padding:16px 18px;margin:0 0 16px}table{border-collapse:collapse;width:100%;"
        "font-size:13px}th,td{padding:5px 8px;border-bottom:1px solid #eef0f2;text-align:left}"
        "img{max-width:100%;height:auto}.warn{background:#fffbea;border:1px solid #f0b429;padding:8px 12px}")


def render_html(res: RankingResult | JointRankingResult | HierarchicalRankingResult, metric: str,
                figures_png: dict[str, bytes]) -> str:
    """The report as one self-contained page: inline CSS, figures as base64 PNG, no script, no external URL."""
    joint = isinstance(res, JointRankingResult)
    hierarchical = isinstance(res, HierarchicalRankingResult)
    ranking, pairs = (_joint_rows(res) if joint else _hierarchical_rows(res) if hierarchical else
                      ((RANKING_HEADER, _ranking_rows(res)), (PAIR_HEADER, _pair_rows(res))))
    figures = "".join(
        f'<div class="card"><img alt="{html.escape(name)}" src="data:image/png;base64,'
        f'{base64.b64encode(png).decode("ascii")}"></div>' for name, png in figures_png.items())
    warnings = "".join(f'<p class="warn">⚠ {html.escape(w)}</p>' for w in res.diagnostics.get("warnings") or [])
    about = _joint_about(res) if joint else _hierarchical_about(res) if hierarchical else BBT_DIFFERS
    versus = (f'<div class="card"><h2>{html.escape(_versus_title(res))}</h2>{_html_table(*_versus_rows(res))}'
              "</div>" if hierarchical and res.settings.get("vs") else "")
    reference = JOINT_REFERENCE if joint else HIERARCHICAL_REFERENCE if hierarchical else REFERENCE
    body = (f"<h1>Ranking of {len(res.models)} models · {html.escape(metric)}</h1>"
            f'<div class="card"><b>{html.escape(headline(res))}</b><p>{html.escape(about)}</p>{warnings}</div>'
            f'<div class="card {SUMMARY}">{_html_table(*ranking)}</div>{versus}{figures}'
            f'<div class="card"><h2>Pairs</h2>{_html_table(*pairs)}</div>'
            f"<footer>{html.escape(reference)}</footer>")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Ranking · '
            f"{html.escape(metric)}</title><style>{_CSS}</style></head><body><main>{body}</main></body></html>\n")


# ------------------------------------------------------------------------------------------------ one dataset


JOINT_RANKING_HEADER = ["rank", "model", "P(best)", "mean rank", "rank HDI", "mean score", "μ − μ(leader)",
                        "95% interval"]
JOINT_PAIR_HEADER = ["pair", "difference", "95% interval", "P(better)", "P(rope)", "P(worse)", "P(better > worse)",
                     "credible"]


def _joint_rows(res: JointRankingResult) -> tuple[tuple[list[str], list[list[str]]], tuple[list[str], list]]:
    """The ranking's and the pairs' (header, rows) of the joint model."""
    p, table, n = format_probability, res.ranking, len(res.ranking)
    means = format_numbers(table["mean"].tolist())
    gaps = format_numbers([*table["diff_to_leader"], *table["diff_low"], *table["diff_high"]])
    ranking = [[str(i + 1), str(r.model), p(r.p_best), f"{r.mean_rank:.2f}", f"{r.rank_low:g}–{r.rank_high:g}",
                means[i], gaps[i], f"{gaps[n + i]} to {gaps[2 * n + i]}"] for i, r in enumerate(table.itertuples())]
    m = len(res.pairs)
    differences = format_numbers([*res.pairs["difference"], *res.pairs["hdi_low"], *res.pairs["hdi_high"]])
    pairs = [[f"{r.better} > {r.worse}", differences[i], f"{differences[m + i]} to {differences[2 * m + i]}",
              p(r.p_better), p(r.p_rope), p(r.p_worse), p(r.p_above), "yes" if r.credible else "no"]
             for i, r in enumerate(res.pairs.itertuples())]
    return (JOINT_RANKING_HEADER, ranking), (JOINT_PAIR_HEADER, pairs)


def _joint_about(res: JointRankingResult) -> str:
    """What the numbers are, with ρ and the rope."""
    s = res.settings
    return (f"One dataset ({s['datasets'][0]}): {s['n']} fold scores per model, ρ = {s['rho']:.4g} "
            f"({s['rho_reason']}), rope ±{s['metric_rope']:g} in metric units. P(best): the posterior probability "
            f"of the best mean score ({res.diagnostics['mc_se_max']:.3f} Monte-Carlo standard error at most); rank HDI "
            f"at {s['hdi_prob']:g}. Each pair's probabilities are its Bayesian correlated t-test's; a pair is "
            f"credible when {rule_words(s['threshold'])}, that is when the {s['threshold']:g} HDI of its difference "
            "lies beyond the rope.")


def _joint_markdown(res: JointRankingResult, metric: str) -> str:
    (ranking_header, ranking), (pair_header, pairs) = _joint_rows(res)
    parts = [f"### Ranking of {len(res.models)} models · {md_escape(metric)} (one dataset)",
             f"**{md_escape(headline(res))}**", md_escape(_joint_about(res)), _md_table(ranking_header, ranking),
             "#### Pairs", _md_table(pair_header, pairs)]
    parts += [f"> ⚠️ **Warning:** {md_escape(w)}" for w in res.diagnostics.get("warnings") or []]
    parts.append(md_escape(JOINT_REFERENCE))
    return "\n\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------------------ hierarchical


HIERARCHICAL_RANKING_HEADER = ["rank", "model", "P(best)", "P(best next)", "mean rank", "rank HDI", "effect",
                               "δ − δ(leader)", "HDI"]
HIERARCHICAL_PAIR_HEADER = ["pair", "difference", "HDI", "P(better)", "P(rope)", "P(worse)", "credible"]
VERSUS_HEADER = ["model", "P(better)", "P(equivalent)", "P(worse)", "difference", "HDI", "verdict"]


def _hierarchical_rows(res: HierarchicalRankingResult) -> tuple[tuple[list[str], list], tuple[list[str], list]]:
    """The ranking's and the pairs' (header, rows) of the hierarchical model."""
    p, table, n = format_probability, res.ranking, len(res.ranking)
    effects = format_differences(table["effect"].tolist())
    gaps = format_differences([*table["diff_to_leader"], *table["diff_low"], *table["diff_high"]])
    ranking = [[str(i + 1), str(r.model), p(r.p_best), p(r.p_best_next), f"{r.mean_rank:.2f}",
                f"{r.rank_low:g}–{r.rank_high:g}", effects[i], gaps[i], f"{gaps[n + i]} to {gaps[2 * n + i]}"]
               for i, r in enumerate(table.itertuples())]
    m, differences = len(res.pairs), _differences(res.pairs)
    pairs = [[f"{r.better} > {r.worse}", differences[i], f"{differences[m + i]} to {differences[2 * m + i]}",
              p(r.p_better), p(r.p_rope), p(r.p_worse), "yes" if r.credible else "no"]
             for i, r in enumerate(res.pairs.itertuples())]
    return (HIERARCHICAL_RANKING_HEADER, ranking), (HIERARCHICAL_PAIR_HEADER, pairs)


def _differences(table) -> list[str]:
    """A pairs' or versus table's differences then HDI ends, all with one number of decimals."""
    return format_differences([*table["difference"], *table["hdi_low"], *table["hdi_high"]])


def _versus_rows(res: HierarchicalRankingResult) -> tuple[list[str], list[list[str]]]:
    p, m, differences = format_probability, len(res.versus), _differences(res.versus)
    return VERSUS_HEADER, [[str(r.model), p(r.p_better), p(r.p_rope), p(r.p_worse), differences[i],
                            f"{differences[m + i]} to {differences[2 * m + i]}", str(r.verdict)]
                           for i, r in enumerate(res.versus.itertuples())]


def _versus_title(res: HierarchicalRankingResult) -> str:
    reference = res.settings["vs_reference"]
    leader = " (the leader)" if reference == res.best else ""
    return f"Against {reference}{leader}: each model better / practically equivalent / worse"


def _hierarchical_about(res: HierarchicalRankingResult) -> str:
    """What the numbers are, with the rope and the rule."""
    s = res.settings
    return (f"{len(s['datasets'])} datasets, rope ±{s['metric_rope']:g} in metric units. P(best): the posterior "
            "probability of the largest mean effect δ across datasets (P(best next): of the best score on the next "
            "dataset); effects and differences in metric units with their "
            f"{s['hdi_prob']:g} HDI. Each pair's P(better / rope / worse) answers compare's question about the next "
            "dataset (the share of posterior draws in which the next dataset's difference falls most probably "
            "beyond, inside or below the rope), from the joint model of every model, where each pair has its own "
            f"spread. A pair is credible when {rule_words(s['threshold'])}. {JOINT_DIFFERS}")


def _hierarchical_markdown(res: HierarchicalRankingResult, metric: str) -> str:
    (ranking_header, ranking), (pair_header, pairs) = _hierarchical_rows(res)
    parts = [f"### Ranking of {len(res.models)} models · {md_escape(metric)} (hierarchical model)",
             f"**{md_escape(headline(res))}**", md_escape(_hierarchical_about(res)),
             _md_table(ranking_header, ranking)]
    if res.settings.get("vs"):
        parts += [f"#### {md_escape(_versus_title(res))}", _md_table(*_versus_rows(res))]
    parts += ["#### Pairs", _md_table(pair_header, pairs)]
    parts += [f"> ⚠️ **Warning:** {md_escape(w)}" for w in res.diagnostics.get("warnings") or []]
    parts.append(md_escape(HIERARCHICAL_REFERENCE))
    return "\n\n".join(parts) + "\n"
