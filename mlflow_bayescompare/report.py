"""Text reports of a :class:`~mlflow_bayescompare.result.HierarchicalResult`: Markdown and a self-contained HTML page.

The Markdown is meant for MLflow's run description (``mlflow.note.content``, rendered by showdown + sanitize-html);
the HTML for an ``.html`` artifact, which MLflow shows in a sandboxed iframe, so it carries its CSS and images
inline and needs no script.  Both are built from the same blocks (:func:`_blocks`); every string that a user
controls (model, dataset and metric names, run ids, settings) is escaped by the renderer.
"""

from __future__ import annotations

import base64
import html
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import quote

import pandas as pd

from .plots import A_COLOR, B_COLOR, ROPE_COLOR, outcome_colors, outcome_labels
from .result import HierarchicalResult

MAX_RUN_LINKS = 50
FIGURE_CAPTIONS = {
    "simplex": "Probability simplex of the next-dataset outcomes: each posterior draw is a point (left, rope, right); "
    "the dashed lines split the regions where each outcome is the most probable (Sec. \"The inference of the test\").",
    "posterior": "Top: posterior predictive density of δ on the next dataset, the areas that decide the test. "
    "Bottom: posterior of δ0, the mean difference across datasets.",
    "shrinkage": "Per-dataset estimates: the mean difference (MLE) and the hierarchical estimate, pulled towards δ0, "
    "with its 95% HDI (Sec. \"The shrinkage estimator for cross-validation\").",
    "model_fit": "Model fit in the style of the paper's Fig. 7: the predictive density should follow the density of "
    "the shrinkage estimates.",
}
SIGNED_RANK_NOTE = (
    "The p-value tests the point null of zero median difference: it ignores the rope and the uncertainty within each "
    "dataset and shrinks as datasets are added even for tiny effects, so a small p does not mean a practically "
    "relevant difference and a large p does not mean equivalence; the posterior probabilities above answer those "
    "questions directly (Sec. \"Comparing the signed-rank and the hierarchical test\")."
)
PARAMETER_NAMES = {
    "delta0": "δ0, mean difference across datasets",
    "sigma0": "σ0, spread of the differences across datasets",
    "nu": "ν, degrees of freedom (tail weight)",
}
DIAGNOSTIC_NAMES = {
    "rhat_max": "max R-hat",
    "ess_bulk_min": "min bulk ESS",
    "ess_tail_min": "min tail ESS",
    "divergences": "divergent transitions",
    "treedepth_hits": "max tree-depth hits",
    "sampling_seconds": "sampling time (s)",
    "backend": "backend",
    "parameterisation": "sampled as",
}
DECISION_COLORS = {"equivalent": ROPE_COLOR, "rope": ROPE_COLOR, "inconclusive": "#b7791f"}


@dataclass
class ReportContext:
    """Where a comparison came from, for titles and links back to MLflow.

    ``source_runs`` holds one row per (model, dataset) run with keys model, dataset, run_id, experiment_id;
    ``tracking_url`` is the base URL of the MLflow UI (links are left out when it is None).
    """

    title: str | None = None
    metric: str | None = None
    experiment_ids: list[str] = field(default_factory=list)
    source_runs: pd.DataFrame | list[dict] | None = None
    tracking_url: str | None = None
    comparison_run_id: str | None = None


class Link(NamedTuple):
    text: str
    url: str | None


class Table(NamedTuple):
    header: list[str]
    rows: list[list[Any]]


def format_probability(p: float) -> str:
    """How every probability appears in the reports (three decimals)."""
    return f"{p:.3f}"


# --- content shared by both renderers ---------------------------------------------------------------------------


def _title(res: HierarchicalResult, ctx: ReportContext) -> str:
    return ctx.title or f"{res.model_a} vs {res.model_b}: Bayesian hierarchical comparison"


def _subtitle(res: HierarchicalResult, ctx: ReportContext) -> str:
    direction = "higher is better" if res.greater_is_better else "lower is better"
    metric = f"metric {ctx.metric} ({direction})" if ctx.metric else direction
    threshold = res.settings.get("threshold", 0.95)
    return (f"{metric} · rope ±{res.rope:g} · {len(res.shrinkage)} datasets · decision threshold {threshold:g} · "
            f"δ = {res.model_a} − {res.model_b}")


def _outcome_names(res: HierarchicalResult) -> dict[str, str]:
    return {
        "a_better": f"{res.model_a} better",
        "rope": f"practically equivalent (±{res.rope:g})",
        "b_better": f"{res.model_b} better",
    }


def _decision_name(res: HierarchicalResult, decision: str) -> str:
    return {"a_better": f"{res.model_a} better", "b_better": f"{res.model_b} better", "rope": "equivalent"}.get(
        decision, decision)


def _probability_table(res: HierarchicalResult) -> Table:
    rows = [[f"P(A better): {res.model_a} better than {res.model_b}", format_probability(res.p_a_better)],
            [f"P(rope): practically equivalent (±{res.rope:g})", format_probability(res.p_rope)],
            [f"P(B better): {res.model_b} better than {res.model_a}", format_probability(res.p_b_better)]]
    return Table(["outcome on the next dataset", "probability"], rows)


def _odds_table(res: HierarchicalResult) -> Table:
    names = {**_outcome_names(res), "rope": "equivalent"}

    def label(text: str) -> str:
        for key, name in names.items():
            text = text.replace(key, name)
        return text

    rows = []
    for key, value in res.odds.items():
        first, _, second = key.partition("/")
        rows.append([f"{label(first)} : {label(second)}", _odds(value), label(res.evidence.get(key, ""))])
    return Table(["posterior odds", "value", "evidence (Raftery 1995)"], rows)


def _parameter_table(res: HierarchicalResult) -> Table:
    rows = []
    for name in ("delta0", "sigma0", "nu"):
        summary = getattr(res, name)
        if summary is None:
            continue
        rows.append([PARAMETER_NAMES[name], _number(summary["mean"]), _number(summary["sd"]),
                     _number(summary["median"]), _interval(summary["hdi_low"], summary["hdi_high"])])
    return Table(["parameter", "mean", "sd", "median", "95% HDI"], rows)


def _diagnostics_table(res: HierarchicalResult) -> Table:
    d = res.diagnostics
    return Table(["diagnostic", "value"], [[label, _number(d[key])] for key, label in DIAGNOSTIC_NAMES.items()
                                           if key in d])


def _settings_table(res: HierarchicalResult) -> Table:
    return Table(["setting", "value"], [[key, _setting(value)] for key, value in res.settings.items()])


def _sensitivity_table(res: HierarchicalResult) -> Table:
    names = _outcome_names(res)
    df = res.sensitivity
    header = [{"p_a_better": f"P({names['a_better']})", "p_rope": "P(rope)",
               "p_b_better": f"P({names['b_better']})"}.get(c, c) for c in df.columns]
    rows = [[format_probability(v) if c.startswith("p_") else _decision_name(res, v) if c == "decision" else _number(v)
             for c, v in zip(df.columns, row)] for row in df.itertuples(index=False)]
    return Table(header, rows)


def _sensitivity_note(res: HierarchicalResult) -> str:
    """"conclusion stable" or "conclusion changes when …" over the rows of the sensitivity table."""
    df = res.sensitivity
    settings = [c for c in df.columns if c != "decision" and not c.startswith("p_")]
    changed = df[df["decision"] != res.decision]
    if changed.empty:
        return f"Conclusion stable: {_decision_name(res, res.decision)} under all {len(df)} settings tried."
    cases = "; ".join(
        ", ".join(f"{c} {_number(r[c])}" for c in settings) + f" (→ {_decision_name(res, r['decision'])})"
        for r in changed.to_dict(orient="records"))
    return f"Conclusion changes when {cases}."


def _run_url(ctx: ReportContext, run_id: str, experiment_id: Any = None) -> str | None:
    base = _base_url(ctx.tracking_url)
    if base is None:
        return None
    if experiment_id is None or pd.isna(experiment_id) or str(experiment_id) == "":
        return f"{base}/#/runs/{quote(str(run_id), safe='')}"
    return f"{base}/#/experiments/{quote(str(experiment_id), safe='')}/runs/{quote(str(run_id), safe='')}"


def _base_url(url: str | None) -> str | None:
    """``url`` without a trailing slash, percent-encoded where Markdown would choke; None unless http(s)."""
    if not url or not url.lower().startswith(("http://", "https://")):
        return None
    return quote(url.rstrip("/"), safe=":/?&=%#@!$*+,;~-._")


def _source_runs(ctx: ReportContext) -> tuple[Table, int] | None:
    if ctx.source_runs is None:
        return None
    runs = pd.DataFrame(ctx.source_runs)
    if runs.empty:
        return None
    shown = runs.head(MAX_RUN_LINKS)
    rows = [[r.get("model", ""), r.get("dataset", ""),
             Link(str(r.get("run_id", "")), _run_url(ctx, r.get("run_id", ""), r.get("experiment_id")))]
            for r in shown.to_dict(orient="records")]
    return Table(["model", "dataset", "run"], rows), len(runs) - len(shown)


def _blocks(res: HierarchicalResult, ctx: ReportContext) -> dict[str, Any]:
    """Everything both reports show, as plain (unescaped) strings and tables."""
    comparison = None
    if ctx.comparison_run_id:
        comparison = Link(ctx.comparison_run_id, _run_url(ctx, ctx.comparison_run_id))
    return {
        "title": _title(res, ctx),
        "subtitle": _subtitle(res, ctx),
        "probabilities": _probability_table(res),
        "odds": _odds_table(res),
        "parameters": _parameter_table(res),
        "signed_rank": f"Wilcoxon signed-rank test on the {len(res.shrinkage)} per-dataset mean differences: "
                       f"p = {_p_value(res.signed_rank_p)}.",
        "diagnostics": _diagnostics_table(res),
        "warnings": list(res.diagnostics.get("warnings") or []),
        "sensitivity": None if res.sensitivity is None else _sensitivity_table(res),
        "sensitivity_note": None if res.sensitivity is None else _sensitivity_note(res),
        "settings": _settings_table(res),
        "experiments": [str(e) for e in ctx.experiment_ids],
        "comparison": comparison,
        "runs": _source_runs(ctx),
    }


def _number(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if not math.isfinite(value):
        return "–" if math.isnan(value) else "∞" if value > 0 else "−∞"
    return f"{value:.{digits}g}"


def _odds(value: float) -> str:
    return _number(value) if not math.isfinite(value) else f"{value:,.0f}" if value >= 10 else f"{value:.2f}"


def _interval(low: float, high: float, digits: int = 4) -> str:
    return f"{_number(low, digits)} to {_number(high, digits)}"


def _p_value(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _setting(value: Any) -> str:
    """A compact text for a settings value; a per-dataset list that repeats one value shows it once."""
    if isinstance(value, (list, tuple)) and len(value) > 2 and len({json.dumps(v, default=str) for v in value}) == 1:
        return f"{_number(value[0])} (every dataset)"
    if isinstance(value, dict):
        value = ", ".join(f"{k} {_setting(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, str)):
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return text if len(text) <= 120 else text[:119] + "…"
    return _number(value)


# --- Markdown ---------------------------------------------------------------------------------------------------

_MD_ENTITIES = {c: f"&#{ord(c)};" for c in "\\`*_[]|~"}


def md_escape(text: Any) -> str:
    """``text`` as inert Markdown: HTML-escaped, Markdown punctuation as numeric entities, on one line."""
    escaped = html.escape(" ".join(str(text).split()), quote=True)
    return "".join(_MD_ENTITIES.get(c, c) for c in escaped)


def _md_cell(cell: Any) -> str:
    if isinstance(cell, Link):
        return f"[{md_escape(cell.text)}]({cell.url})" if cell.url else md_escape(cell.text)
    return md_escape(cell)


def _md_table(table: Table) -> str:
    lines = ["| " + " | ".join(md_escape(h) or " " for h in table.header) + " |",
             "|" + "---|" * len(table.header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def render_markdown(res: HierarchicalResult, ctx: ReportContext | None = None) -> str:
    """The report as Markdown, valid as an MLflow run description (showdown; no raw HTML)."""
    ctx = ctx or ReportContext()
    b = _blocks(res, ctx)
    out = [f"### {md_escape(b['title'])}", md_escape(b["subtitle"]), f"**{md_escape(res.verdict)}**",
           _md_table(b["probabilities"]), _md_table(b["odds"]), _md_table(b["parameters"]),
           f"{md_escape(b['signed_rank'])} {md_escape(SIGNED_RANK_NOTE)}"]
    out += [f"> ⚠️ **Warning:** {md_escape(w)}" for w in b["warnings"]]
    out.append("#### Diagnostics\n\n" + _md_table(b["diagnostics"]))
    if b["sensitivity"] is not None:
        out.append(f"#### Sensitivity\n\n**{md_escape(b['sensitivity_note'])}**\n\n{_md_table(b['sensitivity'])}")
    out.append("#### Settings\n\n" + _md_table(b["settings"]))
    out += _md_sources(b)
    return "\n\n".join(out) + "\n"


def _md_sources(b: dict[str, Any]) -> list[str]:
    out = []
    if b["experiments"] or b["comparison"] or b["runs"]:
        out.append("#### Source runs")
    if b["experiments"]:
        out.append("Experiments: " + ", ".join(md_escape(e) for e in b["experiments"]))
    if b["comparison"]:
        out.append("Comparison run: " + _md_cell(b["comparison"]))
    if b["runs"]:
        table, more = b["runs"]
        out.append(_md_table(table))
        if more:
            out.append(f"and {more} more runs")
    return out


# --- HTML -------------------------------------------------------------------------------------------------------

_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f4f6f8;color:#1f2933;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
main{max-width:1120px;margin:0 auto;padding:24px 20px 40px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:16px;margin:0 0 12px;color:#323f4b}
.sub{color:#616e7c;font-size:13px;margin:0 0 18px}
.card{background:#fff;border:1px solid #e4e7eb;border-radius:8px;padding:16px 18px;margin:0 0 16px}
.banner{border-left:6px solid var(--accent);background:var(--tint);border-radius:8px;padding:14px 18px;
margin:0 0 16px;font-size:17px;font-weight:600}
.banner small{display:block;font-size:12px;font-weight:500;color:#52606d;text-transform:uppercase;
letter-spacing:.06em;margin-bottom:2px}
.bar{display:flex;height:30px;border-radius:6px;overflow:hidden;background:#e4e7eb;margin:4px 0 8px}
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
.strong{font-weight:700}
.scroll{overflow:auto;max-height:640px}
.scroll th{position:sticky;top:0}
.dense table{font-size:12px}
.dense th,.dense td{padding:4px 5px}
.warn{background:#fffbea;border:1px solid #f0b429;color:#8d2b0b;border-radius:6px;padding:8px 12px;
margin:0 0 8px}
.note{color:#52606d;font-size:13px}
figure{margin:0;display:flex;flex-wrap:wrap;align-items:center;gap:12px 20px}
figure img{max-width:100%;height:auto;display:block;flex:0 1 auto}
figcaption{color:#52606d;font-size:13px;flex:1 1 200px}
td{white-space:nowrap}
td:first-child{white-space:normal}
details summary{cursor:pointer;font-weight:600;color:#323f4b}
a{color:#2b6cb0}
footer{color:#7b8794;font-size:12px;margin-top:18px}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _html_cell(cell: Any) -> str:
    if isinstance(cell, Link):
        if cell.url:
            return f'<a href="{_e(cell.url)}" target="_blank" rel="noopener">{_e(cell.text)}</a>'
        return _e(cell.text)
    return _e(cell)


def _is_numeric(text: Any) -> bool:
    """True for the numbers, p-values and intervals this module formats (they are right-aligned)."""
    try:
        [float(part.replace("< ", "")) for part in str(text).split(" to ")]
    except ValueError:
        return False
    return True


def _html_table(table: Table, strong: set[tuple[int, int]] = frozenset()) -> str:
    numeric = [all(_is_numeric(row[j]) for row in table.rows) and bool(table.rows) for j in range(len(table.header))]
    def cls(*names: str) -> str:
        names = [n for n in names if n]
        return f' class="{" ".join(names)}"' if names else ""

    head = "".join(f"<th{cls('n' if numeric[j] else '')}>{_e(h)}</th>" for j, h in enumerate(table.header))
    body = "".join(
        "<tr>" + "".join(
            f"<td{cls('n' if numeric[j] else '', 'strong' if (i, j) in strong else '')}>{_html_cell(c)}</td>"
            for j, c in enumerate(row)) + "</tr>"
        for i, row in enumerate(table.rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _probability_bar(res: HierarchicalResult) -> str:
    probs = (res.p_left, res.p_rope, res.p_right)
    labels = outcome_labels(res)
    segments, legend = [], []
    for p, label, color in zip(probs, labels, outcome_colors(res)):
        text = f"{p:.0%}" if p >= 0.08 else ""
        segments.append(f'<div style="width:{100 * p:.3f}%;background:{color}" title="{_e(label)}">{text}</div>')
        legend.append(f'<span style="--c:{color}">{_e(label)}: <b>{format_probability(p)}</b></span>')
    return f'<div class="bar">{"".join(segments)}</div><div class="legend">{"".join(legend)}</div>'


def _banner_color(res: HierarchicalResult) -> str:
    return {"a_better": A_COLOR, "b_better": B_COLOR}.get(res.decision, DECISION_COLORS.get(res.decision, "#7b8794"))


def _per_dataset_table(res: HierarchicalResult) -> tuple[Table, set[tuple[int, int]]]:
    """The full shrinkage table, probabilities labelled by model, ones above the threshold marked strong."""
    sh = res.shrinkage
    left, _, right = outcome_labels(res)
    threshold = res.settings.get("threshold", 0.95)
    header = ["dataset", "n", "MLE", "shrunk", "95% HDI", f"P({left})", "P(rope)", f"P({right})",
              "NB t-test p", f"BCT P({left})", "BCT P(rope)", f"BCT P({right})"]
    rows, strong = [], set()
    for i, r in enumerate(sh.to_dict(orient="records")):
        probs = [r["p_left"], r["p_rope"], r["p_right"], r["nb_t_p"], r["bct_p_left"], r["bct_p_rope"],
                 r["bct_p_right"]]
        rows.append([r["dataset"], _number(r["n"]), _number(r["mle"], 3), _number(r["shrunk"], 3),
                     _interval(r["hdi_low"], r["hdi_high"], 3),
                     *(format_probability(p) for p in probs[:3]), _p_value(probs[3]),
                     *(format_probability(p) for p in probs[4:])])
        strong |= {(i, 5 + k) for k, p in enumerate(probs[:3]) if p >= threshold}
        strong |= {(i, 9 + k) for k, p in enumerate(probs[4:]) if p >= threshold}
    return Table(header, rows), strong


def _figure(name: str, png: bytes) -> str:
    """One figure at its natural size with its caption beside it."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<div class="card"><figure><img alt="{_e(name)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(FIGURE_CAPTIONS.get(name, name))}</figcaption></figure></div>")


def render_html(res: HierarchicalResult, figures_png: dict[str, bytes], ctx: ReportContext | None = None) -> str:
    """The report as one self-contained HTML page: inline CSS, figures as base64 PNG, no script, no external URL."""
    ctx = ctx or ReportContext()
    b = _blocks(res, ctx)
    accent = _banner_color(res)
    per_dataset, strong = _per_dataset_table(res)
    warnings = "".join(f'<div class="warn">⚠ {_e(w)}</div>' for w in b["warnings"])
    figures = dict(figures_png)

    def figure(name: str) -> str:
        return _figure(name, figures.pop(name)) if name in figures else ""

    parts = [
        f"<h1>{_e(b['title'])}</h1><p class=\"sub\">{_e(b['subtitle'])}</p>",
        f'<div class="banner" style="--accent:{accent};--tint:{accent}1a"><small>verdict</small>'
        f"{_e(res.verdict)}</div>",
        f'<div class="card"><h2>Which model wins on the next dataset?</h2>{_probability_bar(res)}</div>',
        f'<div class="grid"><div class="card"><h2>Probabilities</h2>{_html_table(b["probabilities"])}</div>'
        f'<div class="card"><h2>Posterior odds</h2>{_html_table(b["odds"])}</div></div>',
        figure("simplex"),
        f'<div class="card"><h2>Posterior of the hyper-parameters</h2>{_html_table(b["parameters"])}'
        f'<p class="note">{_e(b["signed_rank"])} {_e(SIGNED_RANK_NOTE)}</p></div>',
        figure("posterior"),
        figure("shrinkage"),
        f'<div class="card"><h2>Per dataset</h2><p class="note">Shrunk: posterior mean of δ_i with its 95% HDI; '
        "P(…): share of its posterior draws beyond / inside the rope; NB t-test: Nadeau-Bengio corrected t-test; "
        f'BCT: Bayesian correlated t-test on that dataset alone. Bold: ≥ {res.settings.get("threshold", 0.95):g}.'
        f'</p><div class="scroll dense">{_html_table(per_dataset, strong)}</div></div>',
        figure("model_fit"),
        *(_figure(name, png) for name, png in figures.items()),
    ]
    if b["sensitivity"] is not None:
        parts.append(f'<div class="card"><h2>Sensitivity to the prior and the rope</h2>'
                     f'<p class="strong">{_e(b["sensitivity_note"])}</p>{_html_table(b["sensitivity"])}</div>')
    parts.append(f'<div class="card"><h2>Diagnostics</h2>{warnings}{_html_table(b["diagnostics"])}</div>')
    parts.append(f'<div class="card"><details><summary>Settings</summary>{_html_table(b["settings"])}</details>'
                 "</div>")
    parts.append(_html_sources(b))
    parts.append("<footer>Bayesian hierarchical correlated t-test of Corani, Benavoli, Demšar, Mangili and "
                 "Zaffalon, “Statistical comparison of classifiers through Bayesian hierarchical modelling”, "
                 "Machine Learning 106:1817–1837 (2017).</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{_e(b['title'])}</title><style>{_CSS}</style></head><body><main>"
            + "\n".join(parts) + "</main></body></html>\n")


def _html_sources(b: dict[str, Any]) -> str:
    items = []
    if b["experiments"]:
        items.append(f"<p>Experiments: {_e(', '.join(b['experiments']))}</p>")
    if b["comparison"]:
        items.append(f"<p>Comparison run: {_html_cell(b['comparison'])}</p>")
    if b["runs"]:
        table, more = b["runs"]
        items.append(f'<div class="scroll">{_html_table(table)}</div>')
        if more:
            items.append(f'<p class="note">and {more} more runs</p>')
    return f'<div class="card"><h2>Source runs</h2>{"".join(items)}</div>' if items else ""
