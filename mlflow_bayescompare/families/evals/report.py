"""The words of a comparison of evaluation runs: the run's description (Markdown, through the one writer of
descriptions, :mod:`...shared.markdown`: every name, scorer, verdict and input is data, escaped), the lines the
terminal prints (:func:`text_lines`) and, from :mod:`.page`, the self-contained HTML report.

A comparison of A and B gives per scorer B − A in its units with its 95% HDI, the three probabilities and the
verdict, and, when inconclusive, about how many more items would decide it (:mod:`.planning`); across scorers the
joint claims of :mod:`.gates`; across suites the hierarchical test's answer for the next suite.  A ranking of k
systems gives per scorer each one's P(best) and mean score, every system against the reference, and one sentence,
which says plainly when no pair is decided."""

from __future__ import annotations

from ...reads.evaluations import EvaluationRead
from ...shared.markdown import Description, Markdown, emphasis, raw, strong
from ...shared.report_html import Link, format_differences, format_probability
from ...vocabulary.options import direction_word
from ...vocabulary.outcomes import counted
from ...vocabulary.uiroutes import run_route
from .gates import across
from .page import render_html
from .result import EvalComparisons, EvalRanking
from .words import METHOD, SCORER_HEADER, more_items_line, ranking_rows, scorer_rows, subtitle, versus_rows, warnings

__all__ = ["render_markdown", "render_html", "text_lines"]

_DETAIL = raw("Per item: pairs.csv (the items where the runs disagree first); the answer at other ropes: "
              "rope_sensitivity.csv; every number: summary.json.")


# --------------------------------------------------------------------------------------------------- markdown


def render_markdown(result: EvalComparisons | EvalRanking, read: EvaluationRead, *,
                    next_suite: dict | None = None) -> Markdown:
    """The run's description: a comparison of A and B (``next_suite``: per scorer the hierarchical test's result
    across suites), or a ranking of k systems."""
    if isinstance(result, EvalRanking):
        return _ranking_markdown(result, read)
    a, b = result.system_a, result.system_b
    doc = Description().heading(3, a, raw(" vs "), b, raw(" · evaluation runs"))
    doc.paragraph(strong(result.line())).paragraph(subtitle(result, read))
    header = [*SCORER_HEADER[:6], f"P({a} better)", "P(rope)", f"P({b} better)", "verdict"]
    doc.table(header, scorer_rows(result), align=["left"] * 4 + ["right"] * 5 + ["left"])
    lines = [line for s, one in result.by_scorer.items() if (line := more_items_line(s, one))]
    if lines:
        doc.lines([[emphasis(line)] for line in lines])
    if len(result.by_scorer) > 1:
        doc.heading(4, raw("Across scorers (one posterior probability each)"))
        doc.table([f"claim about {b}", "probability"],
                  [[claim, format_probability(p)] for claim, p in across(result).items()], align=["left", "right"])
    if next_suite:
        _next_suite(doc, next_suite, a, b)
    for warning in warnings(result):
        doc.warning(warning)
    _sources(doc, read)
    doc.paragraph(_DETAIL).paragraph(METHOD)
    return doc.done()


def _next_suite(doc: Description, next_suite: dict, a: str, b: str) -> None:
    doc.heading(4, raw("The next suite (the hierarchical test across suites)"))
    doc.paragraph(raw("Each suite's items as one dataset of the hierarchical test (Corani et al. 2017; ρ = 0, the "
                      "items being independent): the probabilities are those of a new suite, not of these items."))
    doc.table(["scorer", f"P({a} better)", "P(rope)", f"P({b} better)", "verdict"],
              [[s, *map(format_probability, (r.p_a_better, r.p_rope, r.p_b_better)), r.verdict]
               for s, r in next_suite.items()], align=["left", "right", "right", "right", "left"])


def _sources(doc: Description, read: EvaluationRead) -> None:
    doc.heading(4, raw("Source runs"))
    rows = [[Link(r.system, run_route(r.run_id, r.experiment_id)), r.run_id, r.kind, str(r.items),
             ", ".join(f"{s}: {n}" for s, n in r.errored.items()) or "none",
             str(len(read.unpaired.get(r.system, [])))] for r in read.runs]
    doc.table(["run", "run id", "kind", "items", "errored assessments", "unpaired items"], rows,
              align=["left", "left", "left", "right", "left", "right"])


def _ranking_markdown(result: EvalRanking, read: EvaluationRead) -> Markdown:
    doc = Description().heading(3, raw("Ranking of "), counted(len(result.systems), "evaluation run"))
    doc.paragraph(subtitle(result, read))
    for scorer, ranking in result.by_scorer.items():
        doc.heading(4, scorer, raw(" ("), ranking.kind["kind"], raw(", "),
                    direction_word(ranking.kind["greater_is_better"]), raw(" is better, rope ±"), f"{ranking.rope:g}",
                    raw(")"))
        doc.paragraph(strong(ranking.statement))
        doc.table(["system", "P(best)", "mean", "95% HDI", "mean rank"], ranking_rows(ranking),
                  align=["left", "right", "right", "right", "right"])
        if len(ranking.versus):
            doc.table([f"against {ranking.reference}", "difference", "95% HDI", "P(better)", "P(equivalent)",
                       "P(worse)", "decision"], versus_rows(ranking), align=["left"] + ["right"] * 5 + ["left"])
    for warning in warnings(result):
        doc.warning(warning)
    _sources(doc, read)
    doc.paragraph(METHOD)
    return doc.done()


# --------------------------------------------------------------------------------------------------- terminal


def text_lines(result: EvalComparisons | EvalRanking) -> list[str]:
    """What the terminal prints of a comparison (per scorer: B − A, its HDI, the probabilities, the verdict and the
    items that would decide an inconclusive one; then the decision) or a ranking (per scorer its table and its
    sentence)."""
    if isinstance(result, EvalRanking):
        return _ranking_lines(result)
    a, b = result.system_a, result.system_b
    lines = []
    for scorer, one in result.by_scorer.items():
        d = one.difference
        mean, low, high = format_differences([d["mean"], d["hdi_low"], d["hdi_high"]])
        lines += [f"  {scorer} ({one.kind['kind']}, {direction_word(one.greater_is_better)} is better, rope "
                  f"±{one.rope:g}; {counted(one.counts['items'], 'item')})",
                  f"    {b} − {a} = {mean} ({one.kind['units']}), 95% HDI [{low}, {high}]",
                  f"    P({a} better) {format_probability(one.p_a_better)} · P(rope) {format_probability(one.p_rope)}"
                  f" · P({b} better) {format_probability(one.p_b_better)}",
                  f"    {one.verdict}"]
        more = more_items_line(scorer, one)
        if more:
            lines.append(f"    {more.split('; ', 1)[1]}")
    return [*lines, f"Decision: {result.line()}"]


def _ranking_lines(result: EvalRanking) -> list[str]:
    lines = []
    for scorer, ranking in result.by_scorer.items():
        width = max(len(s) for s in result.systems)
        lines.append(f"  {scorer} ({ranking.kind['kind']}, {direction_word(ranking.kind['greater_is_better'])} is "
                     f"better, rope ±{ranking.rope:g}):")
        lines += [f"    {row[0].ljust(width)}  P(best) {row[1]}  mean {row[2]} [{row[3]}]"
                  for row in ranking_rows(ranking)]
        lines.append(f"    {ranking.statement}")
    return lines
