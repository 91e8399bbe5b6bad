"""The self-contained HTML report of a comparison of evaluation runs: inline CSS, the figures as base64 PNGs, no
script; every name, scorer, verdict, input and warning HTML-escaped.  The blocks the server's page shows itself
(the decision and the table of scorers) carry the class :data:`...shared.report_html.SUMMARY`, which the page hides
when it embeds the report."""

from __future__ import annotations

import base64
import html

import pandas as pd

from ...reads.evaluations import EvaluationRead
from ...shared.report_html import LINK_BASE, SUMMARY, format_numbers, format_probability, plain_page, plain_table
from ...vocabulary.uiroutes import run_route
from .gates import across
from .result import EvalComparisons, EvalRanking
from .words import METHOD, SCORER_HEADER, more_items_line, ranking_rows, scorer_rows, subtitle, versus_rows, warnings

__all__ = ["render_html", "SHOWN_ITEMS"]

#: the items of pairs.csv the page shows (the runs' disagreements first); the artifact holds every one
SHOWN_ITEMS = 30
_CAPTIONS = {"differences": "Posterior of the mean difference B − A per scorer: each region beyond or inside the rope "
                            "(grey band) in the colour of the outcome it means; the dashed line is the mean, the bar "
                            "at the bottom the 95% HDI.",
             "outcomes": "Per scorer, P(A better), P(practically equivalent) and P(B better).",
             "p_best": "Per scorer, the probability that each system's mean score is the best."}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def render_html(result: EvalComparisons | EvalRanking, read: EvaluationRead, pngs: dict[str, bytes], *,
                sensitivity: pd.DataFrame | None = None, pairs: pd.DataFrame | None = None,
                next_suite: dict | None = None) -> str:
    """The report page of a comparison of A and B (its rope sensitivity, its items, the next suite's answer) or of a
    ranking of k systems, with ``pngs`` (the figures, by name)."""
    if isinstance(result, EvalRanking):
        title = f"Ranking of {len(result.systems)} evaluation runs"
        head = f'<div class="card {SUMMARY}"><h1>{_e(title)}</h1>' + "".join(
            f"<p><b>{_e(r.statement)}</b></p>" for r in result.by_scorer.values()) + "</div>"
        body = "".join(f'<div class="card"><h2>{_e(s)}</h2>'
                       + plain_table(["system", "P(best)", "mean", "95% HDI", "mean rank"], ranking_rows(r))
                       + (plain_table([f"against {r.reference}", "difference", "95% HDI", "P(better)",
                                       "P(equivalent)", "P(worse)", "decision"], versus_rows(r))
                          if len(r.versus) else "") + "</div>" for s, r in result.by_scorer.items())
    else:
        a, b = result.system_a, result.system_b
        title = f"{a} vs {b} · evaluation runs"
        header = [*SCORER_HEADER[:6], f"P({a} better)", "P(rope)", f"P({b} better)", "verdict"]
        more = [line for s, one in result.by_scorer.items() if (line := more_items_line(s, one))]
        head = (f'<div class="card {SUMMARY}"><h1>{_e(title)}</h1><p><b>{_e(result.line())}</b></p>'
                + plain_table(header, scorer_rows(result)) + "".join(f"<p>{_e(m)}</p>" for m in more) + "</div>")
        body = _across(result) + _next_suite(next_suite, a, b) + _sensitivity(sensitivity) + _items(pairs)
    parts = [head, f"<p>{_e(subtitle(result, read))}</p>",
             "".join(f'<p class="warn">⚠ {_e(w)}</p>' for w in warnings(result)),
             "".join(_figure(name, png) for name, png in pngs.items()), body, _sources(read),
             f"<footer><p>{_e(METHOD)}</p></footer>"]
    return plain_page(title, "".join(parts))


def _figure(name: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<div class="card"><img alt="{_e(name)}" style="width:760px" src="data:image/png;base64,{data}">'
            f"<p>{_e(_CAPTIONS.get(name, name))}</p></div>")


def _across(result: EvalComparisons) -> str:
    if len(result.by_scorer) < 2:
        return ""
    rows = [[claim, format_probability(p)] for claim, p in across(result).items()]
    return (f'<div class="card"><h2>Across scorers</h2>'
            f"{plain_table([f'claim about {result.system_b}', 'probability'], rows)}</div>")


def _next_suite(next_suite: dict | None, a: str, b: str) -> str:
    if not next_suite:
        return ""
    rows = [[s, *map(format_probability, (r.p_a_better, r.p_rope, r.p_b_better)), r.verdict]
            for s, r in next_suite.items()]
    return ('<div class="card"><h2>The next suite (hierarchical test across suites)</h2>'
            + plain_table(["scorer", f"P({a} better)", "P(rope)", f"P({b} better)", "verdict"], rows) + "</div>")


def _sensitivity(table: pd.DataFrame | None) -> str:
    if table is None or table.empty:
        return ""
    rows = [[r.scorer, f"±{r.rope:g}", *map(format_probability, (r.p_a_better, r.p_rope, r.p_b_better)), r.decision]
            for r in table.itertuples()]
    return ('<div class="card"><h2>Sensitivity to the rope</h2>'
            + plain_table(["scorer", "rope", "P(A better)", "P(rope)", "P(B better)", "decision"], rows) + "</div>")


def _items(pairs: pd.DataFrame | None) -> str:
    if pairs is None or pairs.empty:
        return ""
    shown = pairs.head(SHOWN_ITEMS)
    values = format_numbers([*shown["value_a"], *shown["value_b"], *shown["difference"]])
    n = len(shown)
    rows = [[r.scorer, r.item, values[i], values[n + i], values[2 * n + i], r.outcome, r.inputs]
            for i, r in enumerate(shown.itertuples())]
    return (f'<div class="card"><h2>Items, the disagreements first ({min(n, len(pairs))} of {len(pairs)}; every '
            "one in pairs.csv)</h2>"
            + plain_table(["scorer", "item", "A", "B", "B − A", "outcome", "inputs"], rows) + "</div>")


def _sources(read: EvaluationRead) -> str:
    rows = "".join(f'<tr><td><a href="{_e(LINK_BASE + run_route(r.run_id, r.experiment_id))}" target="_blank" '
                   f'rel="noopener">{_e(r.system)}</a></td><td>{_e(r.run_id)}</td><td>{_e(r.kind)}</td>'
                   f"<td>{r.items}</td><td>{_e(', '.join(f'{s}: {n}' for s, n in r.errored.items()) or 'none')}</td>"
                   f"<td>{len(read.unpaired.get(r.system, []))}</td></tr>" for r in read.runs)
    return ('<div class="card"><h2>Source runs</h2><table><thead><tr><th>run</th><th>run id</th><th>kind</th>'
            "<th>items</th><th>errored assessments</th><th>unpaired items</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")
