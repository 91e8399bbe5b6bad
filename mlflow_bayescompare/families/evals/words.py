"""The words and table rows every view of a comparison of evaluation runs shares (the run's description, the HTML
report and the terminal): what was compared, each scorer's row, the items that would decide an inconclusive scorer,
a ranking's rows; numbers by the reports' rules (:mod:`...shared.report_html`)."""

from __future__ import annotations

from ...reads.evaluations import PAIRINGS, EvaluationRead
from ...shared.report_html import format_differences, format_numbers, format_probability
from ...vocabulary.options import direction_word
from ...vocabulary.outcomes import counted
from .result import EvalComparisons, EvalRanking

__all__ = ["METHOD", "SCORER_HEADER", "subtitle", "scorer_rows", "more_items_line", "ranking_rows", "versus_rows",
           "warnings"]

#: what the numbers are, under every report
METHOD = ("Paired per item, exact for small samples (no MCMC): pass/fail scores by a Dirichlet posterior over the "
          "paired 2×2 table (the Bayesian counterpart of McNemar's test), ratings by a Dirichlet over the joint "
          "table of the paired levels, other scores by the Bayesian bootstrap of the paired items (Rubin 1981), "
          "resources (latency, cost) on the log scale; with clusters the Dirichlet's atoms are the clusters "
          "(Miller 2024, Adding error bars to evals). Every scorer shares the items' weights in a draw, so a claim "
          "across scorers is one posterior probability. The probabilities are the posterior masses of the mean "
          "difference B − A over the population the items were drawn from, beyond or inside the rope.")
SCORER_HEADER = ["scorer", "kind", "better", "rope", "B − A", "95% HDI", "P(A better)", "P(rope)", "P(B better)",
                 "verdict"]


def subtitle(result: EvalComparisons | EvalRanking, read: EvaluationRead) -> str:
    """What was compared: the paired items (and clusters, suites), how they were paired, the threshold and draws."""
    counts, settings = result.counts, result.settings
    kinds = sorted({r.kind for r in read.runs})
    units = counted(counts["items"], "paired item")
    if counts.get("clusters"):
        units += f" in {counted(counts['clusters'], 'cluster')}"
    if counts.get("suites"):
        units += f" of {counted(counts['suites'], 'suite')}"
    paired = PAIRINGS[read.pairing] + (f" ({read.pair_key})" if read.pair_key else "")
    return (f"{units} of {counted(len(read.runs), 'run')} ({', '.join(kinds)} evaluations), paired by {paired}; "
            f"decision threshold {settings['threshold']:g}; {settings['draws']} posterior draws (seed "
            f"{settings['seed']})")


def scorer_rows(result: EvalComparisons) -> list[list[str]]:
    """One row per scorer (:data:`SCORER_HEADER`): its kind, direction, rope, B − A with its HDI, the
    probabilities and the verdict."""
    rows = []
    for scorer, one in result.by_scorer.items():
        d = one.difference
        mean, low, high = format_differences([d["mean"], d["hdi_low"], d["hdi_high"]])
        rows.append([scorer, one.kind["kind"], direction_word(one.greater_is_better), f"±{one.rope:g}", mean,
                     f"{low} to {high}", *map(format_probability, (one.p_a_better, one.p_rope, one.p_b_better)),
                     one.verdict])
    return rows


def more_items_line(scorer: str, one) -> str | None:
    """``about 40 more items (60 in all) would decide it``, or why none would, for an inconclusive scorer."""
    more = one.more_items
    if more is None:
        return None
    if more["total"] is None:
        return f"{scorer}: inconclusive; {more['note']}"
    return (f"{scorer}: inconclusive; about {more['more']} more {more['unit']} ({more['total']} in all) would decide "
            f"it, assuming {more['assumes']}")


def ranking_rows(ranking) -> list[list[str]]:
    """A scorer's ranking: system, P(best), mean score (a log kind's geometric mean) with its 95% HDI, mean rank."""
    table = ranking.ranking
    numbers = format_numbers([*table["mean"], *table["hdi_low"], *table["hdi_high"]])
    n = len(table)
    return [[r.system, format_probability(r.p_best), numbers[i], f"{numbers[n + i]} to {numbers[2 * n + i]}",
             f"{r.mean_rank:.2f}"] for i, r in enumerate(table.itertuples())]


def versus_rows(ranking) -> list[list[str]]:
    """Every system against the reference: the difference with its HDI, P(better), P(equivalent), P(worse), the
    decision."""
    versus = ranking.versus
    shown = format_differences([*versus["difference"], *versus["hdi_low"], *versus["hdi_high"]]) \
        if len(versus) else []
    n = len(versus)
    return [[r.system, shown[i], f"{shown[n + i]} to {shown[2 * n + i]}",
             *map(format_probability, (r.p_better, r.p_rope, r.p_worse)), r.decision]
            for i, r in enumerate(versus.itertuples())]


def warnings(result: EvalComparisons | EvalRanking) -> list[str]:
    """The result's warnings (the pairing's, then each scorer's), each once."""
    scorers = result.by_scorer.values() if isinstance(result, EvalComparisons) else ()
    return list(dict.fromkeys([*result.warnings, *(w for one in scorers for w in one.warnings)]))
