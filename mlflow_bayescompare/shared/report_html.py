"""What every report shares: the HTML page, one self-contained file built from a family's blocks (e.g.
:func:`..families.hierarchical.report.blocks`) and the cells of its tables (the run descriptions: :mod:`.markdown`).

MLflow shows an ``.html`` artifact in a sandboxed iframe and the plugin's server serves the page with a CSP
sandbox, so the page carries its CSS and its figures (base64 PNG) inline and needs no script and no external URL.
Links to runs are relative to MLflow's hash-routed UI: the server shows the page at
``<prefix>/bayescompare/report?run_id=…``, so ``../#/experiments/…`` opens the run under any host and prefix.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, NamedTuple

from ..vocabulary.outcomes import COLORS, DECISION_COLORS, OUTCOMES

__all__ = ["Link", "Table", "Question", "page", "LINK_BASE", "FIGURE_CAPTIONS", "SUMMARY", "embedded",
           "plain_table", "plain_page", "format_probability", "format_numbers", "format_differences",
           "MISSING"]

#: Where MLflow's UI is, relative to the page (``<prefix>/bayescompare/report``).
LINK_BASE = "../"
#: The class of the blocks that the server app's page shows above a report it embeds (the verdict, the outcome bar
#: and probabilities of the next dataset; a ranking's table): :func:`embedded` hides them.
SUMMARY = "summary"
#: CSS pixels per inch of a figure: its PNG carries more (``figures.PNG_DPI``) and is shown at this size.
CSS_PX_PER_INCH = 100
FIGURE_CAPTIONS = {
    "simplex": "Probability simplex of the next-dataset outcomes: each posterior draw is a point (A better left, "
    "rope on top, B better right); the dashed lines split the regions where each outcome is the most probable (Sec. "
    "\"The inference of the test\").",
    "posterior": "Top: posterior predictive density of δ on the next dataset, the areas that decide the test. "
    "Bottom: posterior of δ0, the mean difference across datasets, with the mass of each region.",
    "shrinkage": "Per-dataset estimates: the mean difference (MLE) and the hierarchical estimate, pulled towards δ0, "
    "with its 95% HDI (Sec. \"The shrinkage estimator for cross-validation\"). Values beyond the axis are written "
    "at its edge; amber rows are flagged by the model check.",
    "model_fit": "Model fit (the paper's Fig. 7): the dashed curve is the model's predictive density of δ on a new "
    "dataset, the thick one the density of the per-dataset shrinkage estimates (the ticks); when the model fits, "
    "they share one centre and the estimates lie well inside the predictive. The predictive is expected to be wider: "
    "its Student-t adds the uncertainty about δ0 and σ0 and heavy tails, while the shrinkage pulls the estimates "
    "towards δ0; centres apart, or estimates in separate clumps, would mean the Student-t population does not "
    "describe these datasets (see the model check).",
}


#: What a report writes for a value it does not have.
MISSING = "–"
#: The most decimals :func:`format_numbers` writes (a column of values below 1e-6 shows as zeros).
MAX_DECIMALS = 6
_THOUSANDTH = Decimal("0.001")


# --- numbers: the one rule for probabilities and the one for values in the metric's units --------------------------


def format_probability(p: float | None) -> str:
    """A probability as every report, run description and the page show it (the page's script has its twin,
    ``probability`` in ``server/static/page.js``): three decimals, a half rounded up as the script rounds it
    (0.0625 → 0.063); ``<0.001`` for a positive probability that would read 0.000, ``>0.999`` for one under 1 that
    would read 1.000; never a negative zero; :data:`MISSING` for none."""
    if p is None or not math.isfinite(p):
        return MISSING
    if 0 < p < 0.0005:
        return "<0.001"
    if 0.9995 <= p < 1:
        return ">0.999"
    return str(Decimal(min(max(float(p), 0.0), 1.0)).quantize(_THOUSANDTH, ROUND_HALF_UP))


def format_numbers(values: Sequence[float | None], digits: int = 3) -> list[str]:
    """Values in the metric's units shown together (a table's column, or the numbers of one quantity: its mean, sd
    and interval), all with one number of decimals: enough for ``digits`` significant digits of the largest (at most
    :data:`MAX_DECIMALS`); no exponent, never a negative zero; :data:`MISSING` for none, ±∞ as such."""
    finite = [abs(float(v)) for v in values if v is not None and math.isfinite(v)]
    largest = max(finite, default=0.0)
    decimals = min(MAX_DECIMALS, max(0, digits - 1 - math.floor(math.log10(largest)))) if largest > 0 else 0
    return [_fixed(v, decimals) for v in values]


def format_differences(values: Sequence[float | None]) -> list[str]:
    """Differences in the metric's units shown together: :func:`format_numbers`, a positive one signed ``+`` (the
    page's script has its twin, ``signed`` in ``server/static/page.js``)."""
    return [f"+{text}" if text[0].isdigit() and float(text) != 0 else text for text in format_numbers(values)]


def _fixed(value: float | None, decimals: int) -> str:
    if value is None or math.isnan(value):
        return MISSING
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    text = f"{value:.{decimals}f}"
    return text.lstrip("-") if float(text) == 0 else text


class Link(NamedTuple):
    """A link to a page of MLflow's UI; ``route`` is its hash route, e.g. ``#/experiments/7/runs/<id>``."""

    text: str
    route: str


class Table(NamedTuple):
    """Rows of plain (unescaped) cells; ``strong`` holds (row, column) cells to bold, ``flagged`` rows to mark."""

    header: list[str]
    rows: list[list[Any]]
    strong: frozenset = frozenset()
    flagged: frozenset = frozenset()


class Question(NamedTuple):
    """One of the two questions the report answers side by side: outcome probabilities and what they answer."""

    title: str
    sentence: str
    probs: dict[str, float]
    footer: str


_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f4f6f8;color:#1f2933;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
main{max-width:1120px;margin:0 auto;padding:24px 20px 40px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:16px;margin:0 0 8px;color:#323f4b}
.sub{color:#616e7c;font-size:13px;margin:0 0 18px}
.card{background:#fff;border:1px solid #e4e7eb;border-radius:8px;padding:16px 18px;margin:0 0 16px}
.banner{border-left:6px solid var(--accent);background:var(--tint);border-radius:8px;padding:14px 18px;
margin:0 0 16px;font-size:17px;font-weight:600}
.banner small{display:block;font-size:12px;font-weight:500;color:#52606d;text-transform:uppercase;
letter-spacing:.06em;margin-bottom:2px}
.bar{display:flex;height:30px;border-radius:6px;overflow:hidden;background:#e4e7eb;margin:8px 0}
.bar div{color:#fff;font-size:12px;font-weight:600;display:flex;align-items:center;justify-content:center;
white-space:nowrap;overflow:hidden}
.legend{display:flex;flex-wrap:wrap;gap:6px 22px;font-size:13px}
.legend span::before{content:"";display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;
background:var(--c)}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(400px,1fr));gap:16px;margin:0 0 16px}
.grid .card{margin:0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:5px 8px;border-bottom:1px solid #eef0f2;text-align:left;vertical-align:top}
th{color:#52606d;font-weight:600;background:#f9fafb}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fbfcfd}
tbody tr.flag{background:#fdf3e1}
.strong{font-weight:700}
.scroll{overflow:auto;max-height:640px}
.scroll th{position:sticky;top:0}
.dense table{font-size:12px}
.dense th,.dense td{padding:4px 5px}
.warn{background:#fffbea;border:1px solid #f0b429;color:#8d2b0b;border-radius:6px;padding:8px 12px;
margin:0 0 8px}
.warn ul{margin:4px 0 0;padding-left:20px}
.note{color:#52606d;font-size:13px;margin:0 0 6px}
figure{margin:0;display:flex;flex-wrap:wrap;align-items:center;gap:12px 20px}
figure img{max-width:100%;height:auto;display:block;flex:0 1 auto}
figcaption{color:#52606d;font-size:13px;flex:1 1 200px}
td{white-space:nowrap}
td:first-child{white-space:normal}
details summary{cursor:pointer;font-weight:600;color:#323f4b}
a{color:#2b6cb0}
footer{color:#7b8794;font-size:12px;margin-top:18px}
"""
_FOOTER = ("Bayesian hierarchical correlated t-test of Corani, Benavoli, Demšar, Mangili and Zaffalon, “Statistical "
           "comparison of classifiers through Bayesian hierarchical modelling”, Machine Learning 106:1817–1837 (2017).")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cell(cell: Any) -> str:
    if isinstance(cell, Link):
        return f'<a href="{_e(LINK_BASE + cell.route)}" target="_blank" rel="noopener">{_e(cell.text)}</a>'
    return _e(cell)


def _is_numeric(text: Any) -> bool:
    """True for the numbers, probabilities (``<0.001``) and intervals the reports write (they are right-aligned)."""
    try:
        [float(part.lstrip("<>")) for part in str(text).split(" to ") if part != MISSING]
    except ValueError:
        return False
    return True


def _table(table: Table) -> str:
    numeric = [bool(table.rows) and all(_is_numeric(row[j]) for row in table.rows) for j in range(len(table.header))]

    def cls(*names: str) -> str:
        names = [n for n in names if n]
        return f' class="{" ".join(names)}"' if names else ""

    head = "".join(f"<th{cls('n' if numeric[j] else '')}>{_e(h)}</th>" for j, h in enumerate(table.header))
    body = "".join(
        f"<tr{cls('flag' if i in table.flagged else '')}>" + "".join(
            f"<td{cls('n' if numeric[j] else '', 'strong' if (i, j) in table.strong else '')}>{_cell(c)}</td>"
            for j, c in enumerate(row)) + "</tr>"
        for i, row in enumerate(table.rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _question(q: Question, labels: dict[str, str], summary: bool = False) -> str:
    """A card: the outcome probabilities as a bar (A better | rope | B better) with their legend; ``summary``: one
    of the :data:`SUMMARY` blocks."""
    segments, legend = [], []
    for outcome in OUTCOMES:
        p, color, label = q.probs[outcome], COLORS[outcome], labels[outcome]
        text = f"{p:.0%}" if p >= 0.08 else ""
        segments.append(f'<div style="width:{100 * p:.3f}%;background:{color}" title="{_e(label)}">{text}</div>')
        legend.append(f'<span style="--c:{color}">{_e(label)}: <b>{_e(format_probability(p))}</b></span>')
    card = f"card {SUMMARY}" if summary else "card"
    return (f'<div class="{card}"><h2>{_e(q.title)}</h2><p class="note">{_e(q.sentence)}</p>'
            f'<div class="bar">{"".join(segments)}</div><div class="legend">{"".join(legend)}</div>'
            f'<p class="note" style="margin-top:8px">{_e(q.footer)}</p></div>')


def _warnings(b: dict[str, Any]) -> str:
    out = ""
    if b["model_check"]:
        head, *items = b["model_check"]
        out += (f'<div class="warn">⚠ <b>Model check.</b> {_e(head)}<ul>'
                + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul></div>")
    return out + "".join(f'<div class="warn">⚠ {_e(w)}</div>' for w in b["warnings"])


def _figure(name: str, png: bytes) -> str:
    """One figure at its CSS size (its PNG is sharper) with its caption beside it."""
    width = _css_width(png)
    data = base64.b64encode(png).decode("ascii")
    return (f'<div class="card"><figure><img alt="{_e(name)}" width="{width}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(FIGURE_CAPTIONS.get(name, name))}</figcaption></figure></div>")


def _css_width(png: bytes) -> int:
    """The PNG's width at :data:`CSS_PX_PER_INCH`, from its pixel width and its pHYs density (if it has one)."""
    width = int.from_bytes(png[16:20], "big")
    head = png[: png.find(b"IDAT")]
    at = head.find(b"pHYs")
    per_metre = int.from_bytes(head[at + 4: at + 8], "big") if at >= 0 else 0
    return round(width * CSS_PX_PER_INCH / (per_metre * 0.0254)) if per_metre else width


def _sources(b: dict[str, Any]) -> str:
    items = []
    if b["experiments"]:
        items.append("<p>Experiments: " + ", ".join(_cell(e) for e in b["experiments"]) + "</p>")
    if b["comparison"]:
        items.append(f"<p>Comparison run: {_cell(b['comparison'])}</p>")
    if b["runs"]:
        table, more = b["runs"]
        items.append(f'<div class="scroll">{_table(table)}</div>')
        if more:
            items.append(f'<p class="note">and {more} more runs</p>')
    return f'<div class="card"><h2>Source runs</h2>{"".join(items)}</div>' if items else ""


def page(b: dict[str, Any], figures_png: dict[str, bytes]) -> str:
    """The report page from the blocks of :func:`.report.blocks` and the figures' PNGs."""
    figures = dict(figures_png)

    def figure(name: str) -> str:
        return _figure(name, figures.pop(name)) if name in figures else ""

    accent = DECISION_COLORS.get(b["decision"], "#7b8794")
    parts = [
        f"<h1>{_e(b['title'])}</h1><p class=\"sub\">{_e(b['subtitle'])}</p>",
        f'<div class="banner {SUMMARY}" style="--accent:{accent};--tint:{accent}1a"><small>verdict</small>'
        f"{_e(b['verdict'])}</div>",
        '<div class="grid">' + "".join(_question(q, b["labels"], summary=i == 0) for i, q in enumerate(b["questions"]))
        + "</div>",
        _warnings(b),
        f'<div class="card"><h2>Posterior odds</h2>{_table(b["odds"])}</div>',
        figure("simplex"),
        f'<div class="card"><h2>Posterior of the hyper-parameters</h2>{_table(b["parameters"])}'
        f'<p class="note" style="margin-top:8px">{_e(b["signed_rank"])}</p></div>',
        figure("posterior"),
        figure("shrinkage"),
        f'<div class="card"><h2>Per dataset</h2><p class="note">{_e(b["per_dataset_note"])}</p>'
        f'<div class="scroll dense">{_table(b["per_dataset"])}</div></div>',
        figure("model_fit"),
        *(_figure(name, png) for name, png in figures.items()),
    ]
    if b["sensitivity"] is not None:
        parts.append(f'<div class="card"><h2>Sensitivity to the prior and the rope</h2>'
                     f'<p class="strong">{_e(b["sensitivity_note"])}</p>{_table(b["sensitivity"])}</div>')
    parts += [f'<div class="card"><h2>Diagnostics</h2>{_table(b["diagnostics"])}</div>',
              f'<div class="card"><details><summary>Settings</summary>{_table(b["settings"])}</details></div>',
              _sources(b), f"<footer>{_e(_FOOTER)}</footer>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{_e(b['title'])}</title><style>{_CSS}</style></head><body><main>"
            + "\n".join(p for p in parts if p) + "</main></body></html>\n")


# --- the plain page of a one-figure report (the signed-rank and correlated t-tests) ---------------------------------

_PLAIN_CSS = ("body{font:14px/1.5 system-ui,sans-serif;background:#f4f6f8;color:#1f2933;margin:0}"
              "main{max-width:1000px;margin:0 auto;padding:24px}.card{background:#fff;border:1px solid #e4e7eb;"
              "border-radius:8px;padding:16px;margin:0 0 16px}table{border-collapse:collapse}th,td{padding:4px 8px;"
              "border-bottom:1px solid #eef0f2;text-align:left}img{max-width:100%;height:auto}"
              ".warn{background:#fffbea;padding:6px 10px}")


def plain_table(header: list[str], rows: list[list[str]]) -> str:
    """An HTML table of plain (unescaped) cells."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def plain_page(title: str, body: str) -> str:
    """One self-contained page around ``body`` (HTML): inline CSS, no script."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_PLAIN_CSS}</style></head><body><main>{body}</main></body></html>\n")


def embedded(report: bytes) -> bytes:
    """A report's page as the server app's page embeds it: its :data:`SUMMARY` blocks hidden (one rule added to its
    head; the rest of the page unchanged)."""
    return report.replace(b"</head>", f"<style>.{SUMMARY}{{display:none}}</style></head>".encode(), 1)
