"""What every ranking's report shares: the headline, the tables in Markdown and HTML, the table against a reference
(``vs``: the hierarchical model's on the next dataset, the joint model's on its one dataset), and the self-contained
page around a model's own parts (its tables, its words, its figures: each model's ``report`` module)."""

from __future__ import annotations

import base64
import html

from ...shared.markdown import Description, Markdown, strong
from ...shared.report_html import SUMMARY, format_differences, format_probability
from ...vocabulary.outcomes import names_listed
from .common import level

__all__ = ["headline", "html_table", "markdown", "page", "yes_no", "differences", "aligned", "versus_table",
           "versus_lines", "VERSUS_HEADER"]

VERSUS_HEADER = ["model", "P(better)", "P(equivalent)", "P(worse)", "difference", "HDI", "verdict"]


def headline(res) -> str:
    """One sentence: the best model, how probable it is that it is the best, and what it cannot be told from."""
    top = res.ranking.iloc[0]
    ties = res.pairs[(res.pairs["better"] == top["model"]) & ~res.pairs["credible"]]["worse"].tolist()
    tail = (f"; not credibly better than {names_listed(ties)}" if ties else
            "; credibly better than every other model")
    return f"{top['model']} is the most probably best model (P(best) = {format_probability(top['p_best'])}){tail}"


def differences(table) -> list[str]:
    """A pairs' or versus table's differences then HDI ends, all with one number of decimals."""
    return format_differences([*table["difference"], *table["hdi_low"], *table["hdi_high"]])


def aligned(table) -> list[tuple[str, str, str]]:
    """Each row's difference and HDI ends (:func:`differences`), the differences right-aligned in a column."""
    texts = differences(table)
    width = max(map(len, texts))
    n = len(table)
    return [(texts[i].rjust(width), texts[n + i], texts[2 * n + i]) for i in range(n)]


def versus_table(res) -> tuple[str, tuple[list[str], list[list[str]]]] | None:
    """The table against the reference as (title, (header, rows)) when the ranking was asked for one (``vs``): one set
    of probabilities per table (issue 38), the next dataset's averaged masses stay in the JSON and CSV."""
    if not res.settings.get("vs") or getattr(res, "versus", None) is None:
        return None
    p, m, shown = format_probability, len(res.versus), differences(res.versus)
    rows = [[str(r.model), p(r.p_better), p(r.p_rope), p(r.p_worse), shown[i], f"{shown[m + i]} to {shown[2 * m + i]}",
             str(r.verdict)] for i, r in enumerate(res.versus.itertuples())]
    reference = res.settings["vs_reference"]
    leader = " (the leader)" if reference == res.best else ""
    return f"Against {reference}{leader}: each model better / practically equivalent / worse", (VERSUS_HEADER, rows)


def versus_lines(res, where: str) -> list[str]:
    """The command line's table against the reference (``--vs``), when the ranking was asked for one; ``where`` the
    probabilities are about (the next dataset, or this dataset)."""
    s, p = res.settings, format_probability
    if not s.get("vs") or getattr(res, "versus", None) is None:
        return []
    width, shown = max(len(str(m)) for m in res.versus["model"]), aligned(res.versus)
    return [f"Against {s['vs_reference']} ({where}; verdict at {s['threshold']:g}, better and worse at "
            f"{level(s['threshold']):g}):",
            *(f"  {str(r.model).ljust(width)}  P(better) {p(r.p_better)} · equivalent {p(r.p_rope)} · "
              f"P(worse) {p(r.p_worse)}  {shown[i][0]} [{shown[i][1]}, {shown[i][2]}]  {r.verdict}"
              for i, r in enumerate(res.versus.itertuples()))]


def yes_no(value) -> str:
    """A table's cell of a yes/no column (``credible``)."""
    return "yes" if value else "no"


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def markdown(res, metric: str, *, qualifier: str, about: str, ranking: tuple, pairs: tuple, reference: str,
             versus: tuple[str, tuple] | None = None) -> Markdown:
    """The run description (:mod:`....shared.markdown`): the title (``qualifier`` after the metric), the headline,
    ``about`` in plain words, the ranking's and the pairs' (header, rows), ``versus`` an optional (title, (header,
    rows)) table before the pairs, the warnings and the ``reference``."""
    doc = Description().heading(3, f"Ranking of {len(res.models)} models · {metric}{qualifier}")
    doc.paragraph(strong(headline(res))).paragraph(about).table(*ranking)
    if versus:
        doc.heading(4, versus[0]).table(*versus[1])
    doc.heading(4, "Pairs").table(*pairs)
    for warning in res.diagnostics.get("warnings") or []:
        doc.warning(warning)
    return doc.paragraph(reference).done()


_CSS = ("body{margin:0;background:#f4f6f8;color:#1f2933;font:14px/1.5 system-ui,sans-serif}"
        "main{max-width:1120px;margin:0 auto;padding:24px 20px}.card{background:#fff;border:1px solid #e4e7eb;"
        "border-radius:8px;padding:16px 18px;margin:0 0 16px}table{border-collapse:collapse;width:100%;"
        "font-size:13px}th,td{padding:5px 8px;border-bottom:1px solid #eef0f2;text-align:left}"
        "img{max-width:100%;height:auto}.warn{background:#fffbea;border:1px solid #f0b429;padding:8px 12px}")


def page(res, metric: str, figures_png: dict[str, bytes], *, about: str, ranking: tuple, pairs: tuple,
         reference: str, versus: tuple[str, tuple] | None = None) -> str:
    """The report as one self-contained page: inline CSS, figures as base64 PNG, no script, no external URL;
    ``about`` in plain words, ``versus`` an optional (title, (header, rows)) table after the ranking."""
    figures = "".join(
        f'<div class="card"><img alt="{html.escape(name)}" src="data:image/png;base64,'
        f'{base64.b64encode(png).decode("ascii")}"></div>' for name, png in figures_png.items())
    warnings = "".join(f'<p class="warn">⚠ {html.escape(w)}</p>' for w in res.diagnostics.get("warnings") or [])
    against = (f'<div class="card"><h2>{html.escape(versus[0])}</h2>{html_table(*versus[1])}</div>'
               if versus else "")
    body = (f"<h1>Ranking of {len(res.models)} models · {html.escape(metric)}</h1>"
            f'<div class="card"><b>{html.escape(headline(res))}</b><p>{html.escape(about)}</p>{warnings}</div>'
            f'<div class="card {SUMMARY}">{html_table(*ranking)}</div>{against}{figures}'
            f'<div class="card"><h2>Pairs</h2>{html_table(*pairs)}</div>'
            f"<footer>{html.escape(reference)}</footer>")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Ranking · '
            f"{html.escape(metric)}</title><style>{_CSS}</style></head><body><main>{body}</main></body></html>\n")
