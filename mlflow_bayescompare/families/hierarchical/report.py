"""Text reports of a :class:`~.hierarchical.result.HierarchicalResult`: Markdown and a self-contained HTML page.

The Markdown is meant for MLflow's run description (``mlflow.note.content``, rendered by showdown's GitHub flavour
+ sanitize-html); the HTML (:mod:`.report_html`) for ``report.html``.  Both are built from the same blocks
(:func:`blocks`), show the outcomes in the order of :data:`~.result.OUTCOMES`, and link runs by relative routes of
MLflow's hash-routed UI (:mod:`.uiroutes`), never by a URL built from the tracking URI.  Every
string a user controls (model, dataset and metric names, run ids, settings) is escaped by the renderer.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ...shared import report_html
from ...shared.markdown import Description, Markdown, raw, strong
from ...shared.report_html import FIGURE_CAPTIONS, Link, Question, Table, format_numbers, format_probability
from ...vocabulary.outcomes import OUTCOMES, counted, outcome_label
from ...vocabulary.uiroutes import experiment_route, run_route
from .result import HierarchicalResult
from .summary import PARETO_K_LIMIT

__all__ = ["ReportContext", "blocks", "render_markdown", "render_html", "MAX_RUN_LINKS", "NEXT_DATASET_TITLE",
           "MEAN_DIFFERENCE_TITLE", "NEXT_DATASET", "MEAN_DIFFERENCE"]

MAX_RUN_LINKS = 50
SIGNED_RANK_NOTE = (
    "The p-value tests the point null of zero median difference: it ignores the rope and the uncertainty within each "
    "dataset and shrinks as datasets are added even for tiny effects, so a small p does not mean a practically "
    "relevant difference and a large p does not mean equivalence; the posterior probabilities above answer those "
    "questions directly (Sec. \"Comparing the signed-rank and the hierarchical test\")."
)
#: The titles of the test's two questions, on the page and in the reports: its headline probabilities (the next
#: dataset, which the test decides on) and those of δ0, the mean of the population of datasets.
NEXT_DATASET_TITLE = "Next dataset"
MEAN_DIFFERENCE_TITLE = "Mean difference across datasets (δ0)"
NEXT_DATASET = ("Which model will be better on a new dataset like these: the share of posterior draws in which each "
                "outcome is the most probable; the test decides on it.")
MEAN_DIFFERENCE = ("Which model is better on average over datasets like these: the posterior mass of the mean "
                   "difference δ0 beyond or inside the rope.")
MODEL_CHECK = (f"Pareto k̂ > {PARETO_K_LIMIT}: the Student-t population does not fit the dataset (the paper's own "
               "future-work caveat). Conflict: the dataset's own evidence (correlated t-test) is strong on one side "
               "while its shrunk estimate is most probably on the other.")
#: Words of the model-check warnings of :mod:`.hierarchical`, which the model-check box lists in full instead.
_MODEL_CHECK_WARNINGS = ("Pareto k̂", "turns to the other side")
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


@dataclass
class ReportContext:
    """Where a comparison came from, for titles and links back to MLflow.

    ``source_runs`` holds one row per (model, dataset) run with keys model, dataset, run_id and, when known,
    experiment_id; ``comparison_run_id`` is the comparison's own run (the report then links to it), in experiment
    ``comparison_experiment_id``.
    """

    title: str | None = None
    metric: str | None = None
    experiment_ids: list[str] = field(default_factory=list)
    source_runs: pd.DataFrame | list[dict] | None = None
    comparison_run_id: str | None = None
    comparison_experiment_id: str | None = None


def _number(value: Any) -> str:
    """A setting or diagnostic (four significant digits); values in the metric's units go through
    :func:`.report_html.format_numbers`, probabilities through :func:`.report_html.format_probability`."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if not math.isfinite(value):
        return "–" if math.isnan(value) else "∞" if value > 0 else "−∞"
    return f"{value:.4g}"


def _odds(value: float) -> str:
    return _number(value) if not math.isfinite(value) else f"{value:,.0f}" if value >= 10 else f"{value:.2f}"


def _interval(low: str, high: str) -> str:
    return f"{low} to {high}"


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


# --- content shared by both renderers ---------------------------------------------------------------------------


def _threshold(res: HierarchicalResult) -> float:
    return res.settings["threshold"]


def _labels(res: HierarchicalResult) -> dict[str, str]:
    """``{"a_better": "rf better", "rope": "practically equivalent (±0.01)", "b_better": "svm better"}``."""
    labels = {o: outcome_label(o, res.model_a, res.model_b) for o in OUTCOMES}
    return {**labels, "rope": f"{labels['rope']} (±{res.rope:g})"}


def _decision_name(res: HierarchicalResult, decision: str) -> str:
    names = {"a_better": outcome_label("a_better", res.model_a, res.model_b), "equivalent": "practically equivalent",
             "b_better": outcome_label("b_better", res.model_a, res.model_b)}
    return names.get(decision, decision)


def _subtitle(res: HierarchicalResult, ctx: ReportContext) -> str:
    direction = "higher is better" if res.greater_is_better else "lower is better"
    metric = f"metric {ctx.metric} ({direction})" if ctx.metric else direction
    datasets = counted(len(res.shrinkage), "dataset")
    return (f"{metric} · rope ±{res.rope:g} · {datasets} · decision threshold {_threshold(res):g} · "
            f"δ = {res.model_a} − {res.model_b}")


def _questions(res: HierarchicalResult) -> list[Question]:
    """The next dataset (the test's decision) and the mean difference across datasets, side by side."""
    mean, low, high = format_numbers([res.delta0[k] for k in ("mean", "hdi_low", "hdi_high")])
    return [
        Question(NEXT_DATASET_TITLE, NEXT_DATASET, res.probabilities,
                 f"decision (threshold {_threshold(res):g}): {_decision_name(res, res.decision)}"),
        Question(MEAN_DIFFERENCE_TITLE, MEAN_DIFFERENCE, dict(res.delta0_probs),
                 f"δ0 mean {mean}, 95% HDI {_interval(low, high)}"),
    ]


def _odds_table(res: HierarchicalResult) -> Table:
    names = {**_labels(res), "rope": "practically equivalent"}
    rows = []
    for key, value in res.odds.items():
        first, second = key.split("/")
        grade, _, favoured = res.evidence.get(key, "").partition(" for ")
        rows.append([f"{names[first]} : {names[second]}", _odds(value),
                     f"{grade} for {names.get(favoured, favoured)}" if favoured else grade])
    return Table(["posterior odds", "value", "evidence (Raftery 1995)"], rows)


def _parameter_table(res: HierarchicalResult) -> Table:
    rows = []
    for name in ("delta0", "sigma0", "nu"):
        s = getattr(res, name)
        if s is not None:  # each parameter's numbers with one number of decimals (δ0 and σ0: metric units)
            mean, sd, median, low, high = format_numbers([s[k] for k in ("mean", "sd", "median", "hdi_low",
                                                                           "hdi_high")])
            rows.append([PARAMETER_NAMES[name], mean, sd, median, _interval(low, high)])
    return Table(["parameter", "mean", "sd", "median", "95% HDI"], rows)


def _sensitivity(res: HierarchicalResult) -> tuple[Table, str]:
    """The table of conclusions under other priors and ropes, and whether the conclusion is stable."""
    df, labels = res.sensitivity, _labels(res)
    header = [{"p_a_better": f"P({labels['a_better']})", "p_rope": "P(rope)",
               "p_b_better": f"P({labels['b_better']})"}.get(c, c) for c in df.columns]
    rows = [[format_probability(v) if c.startswith("p_") else _decision_name(res, v) if c == "decision" else _number(v)
             for c, v in zip(df.columns, row)] for row in df.itertuples(index=False)]
    settings = [c for c in df.columns if c != "decision" and not c.startswith("p_")]
    changed = df[df["decision"] != res.decision]
    if changed.empty:
        note = f"Conclusion stable: {_decision_name(res, res.decision)} under all {len(df)} settings tried."
    else:
        note = "Conclusion changes when " + "; ".join(
            ", ".join(f"{c} {_number(r[c])}" for c in settings) + f" (→ {_decision_name(res, r['decision'])})"
            for r in changed.to_dict(orient="records")) + "."
    return Table(header, rows), note


def _high_k(row: dict[str, Any]) -> bool:
    return row.get("pareto_k") is not None and row["pareto_k"] > PARETO_K_LIMIT


def _flags(row: dict[str, Any]) -> list[str]:
    """The model check's findings on one shrinkage row (none without its columns)."""
    return ([f"k̂ > {PARETO_K_LIMIT}"] if _high_k(row) else []) + (["conflict"] if row.get("conflict") else [])


def _model_check(res: HierarchicalResult) -> list[str]:
    """:data:`MODEL_CHECK` and one line per finding, or nothing when no dataset is flagged."""
    labels, lines = _labels(res), []
    for r in res.shrinkage.to_dict(orient="records"):
        if _high_k(r):
            lines.append(f"Dataset {r['dataset']}: Pareto k̂ {r['pareto_k']:.2f}: the Student-t population does not "
                         "fit this dataset; the paper's own future-work caveat.")
        if r.get("conflict"):
            own = res.orientation.orient(r["bct_p_left"], r["bct_p_rope"], r["bct_p_right"])
            shrunk = res.orientation.orient(r["p_left"], r["p_rope"], r["p_right"])
            side, turned = max(own, key=own.get), max(shrunk, key=shrunk.get)
            lines.append(f"Dataset {r['dataset']}: conflict: its own data say {labels[side]} (correlated t-test "
                         f"P = {format_probability(own[side])}), its shrunk estimate {labels[turned]} "
                         f"(P = {format_probability(shrunk[turned])}).")
    return [MODEL_CHECK, *lines] if lines else []


def _per_dataset(res: HierarchicalResult) -> Table:
    """The shrinkage table: probabilities as A better | rope | B better (bold above the threshold), the model check's
    k̂ and findings when the table has them (flagged rows marked)."""
    sh, threshold, orient = res.shrinkage, _threshold(res), res.orientation.orient
    a, b = (f"P({outcome_label(o, res.model_a, res.model_b)})" for o in ("a_better", "b_better"))
    checked = bool({"pareto_k", "conflict"} & set(sh.columns))
    header = ["dataset", "n", "MLE", "shrunk", "95% HDI", a, "P(rope)", b, "NB t-test p", f"BCT {a}", "BCT P(rope)",
              f"BCT {b}"] + (["Pareto k̂"] if "pareto_k" in sh else []) + (["model check"] if checked else [])
    rows, strong, flagged = [], set(), set()
    mle, shrunk_mean = format_numbers(sh["mle"].tolist()), format_numbers(sh["shrunk"].tolist())
    hdi = format_numbers([*sh["hdi_low"], *sh["hdi_high"]])
    for i, r in enumerate(sh.to_dict(orient="records")):
        shrunk = orient(r["p_left"], r["p_rope"], r["p_right"])
        own = orient(r["bct_p_left"], r["bct_p_rope"], r["bct_p_right"])
        row = [r["dataset"], _number(r["n"]), mle[i], shrunk_mean[i], _interval(hdi[i], hdi[len(sh) + i]),
               *(format_probability(shrunk[o]) for o in OUTCOMES), format_probability(r["nb_t_p"]),
               *(format_probability(own[o]) for o in OUTCOMES)]
        strong |= {(i, 5 + k) for k, o in enumerate(OUTCOMES) if shrunk[o] >= threshold}
        strong |= {(i, 9 + k) for k, o in enumerate(OUTCOMES) if own[o] >= threshold}
        row += [f"{r['pareto_k']:.2f}" if math.isfinite(r["pareto_k"]) else "–"] if "pareto_k" in sh else []
        row += [", ".join(_flags(r)) or "ok"] if checked else []
        flagged |= {i} if _flags(r) else set()
        rows.append(row)
    return Table(header, rows, frozenset(strong), frozenset(flagged))


def _per_dataset_note(res: HierarchicalResult) -> str:
    return ("Shrunk: posterior mean of δ_i with its 95% HDI; P(…): share of its posterior draws beyond / inside the "
            "rope; NB t-test: Nadeau-Bengio corrected t-test; BCT: Bayesian correlated t-test on that dataset alone"
            + ("; Pareto k̂: PSIS-LOO of the dataset left out" if "pareto_k" in res.shrinkage else "")
            + f". Bold: ≥ {_threshold(res):g}; shaded rows: flagged by the model check.")


def _source_runs(ctx: ReportContext) -> tuple[Table, int] | None:
    runs = pd.DataFrame(ctx.source_runs) if ctx.source_runs is not None else pd.DataFrame()
    if runs.empty:
        return None
    shown = runs.head(MAX_RUN_LINKS)
    rows = [[r.get("model", ""), r.get("dataset", ""),
             Link(str(r.get("run_id", "")), run_route(r.get("run_id", ""), r.get("experiment_id")))]
            for r in shown.to_dict(orient="records")]
    return Table(["model", "dataset", "run"], rows), len(runs) - len(shown)


def blocks(res: HierarchicalResult, ctx: ReportContext) -> dict[str, Any]:
    """Everything both reports show, as plain (unescaped) strings, tables and links."""
    check = _model_check(res)
    warnings = [w for w in res.diagnostics.get("warnings") or []
                if not (check and any(word in w for word in _MODEL_CHECK_WARNINGS))]
    d = res.diagnostics
    sensitivity, sensitivity_note = _sensitivity(res) if res.sensitivity is not None else (None, None)
    return {
        "title": ctx.title or f"{res.model_a} vs {res.model_b}: Bayesian hierarchical comparison",
        "subtitle": _subtitle(res, ctx),
        "verdict": res.verdict,
        "decision": res.decision,
        "labels": _labels(res),
        "questions": _questions(res),
        "model_check": check,
        "warnings": warnings,
        "odds": _odds_table(res),
        "parameters": _parameter_table(res),
        "signed_rank": f"Wilcoxon signed-rank test on the {len(res.shrinkage)} per-dataset mean differences: "
                       f"p = {format_probability(res.signed_rank_p)}. {SIGNED_RANK_NOTE}",
        "per_dataset": _per_dataset(res),
        "per_dataset_note": _per_dataset_note(res),
        "sensitivity": sensitivity,
        "sensitivity_note": sensitivity_note,
        "diagnostics": Table(["diagnostic", "value"],
                             [[label, _number(d[key])] for key, label in DIAGNOSTIC_NAMES.items() if key in d]),
        "settings": Table(["setting", "value"], [[key, _setting(value)] for key, value in res.settings.items()]),
        "experiments": [Link(str(e), experiment_route(e)) for e in ctx.experiment_ids],
        "comparison": Link(ctx.comparison_run_id, run_route(ctx.comparison_run_id, ctx.comparison_experiment_id))
        if ctx.comparison_run_id else None,
        "runs": _source_runs(ctx),
    }


def render_html(res: HierarchicalResult, figures_png: dict[str, bytes], ctx: ReportContext | None = None) -> str:
    """The report as one self-contained HTML page (:func:`.report_html.page`)."""
    return report_html.page(blocks(res, ctx or ReportContext()), figures_png)


# --- Markdown ---------------------------------------------------------------------------------------------------

def _md_questions(doc: Description, b: dict[str, Any]) -> None:
    """The two questions side by side: one column each, a sentence each on what it answers."""
    questions = b["questions"]
    rows = [[b["labels"][o], *(format_probability(q.probs[o]) for q in questions)] for o in OUTCOMES]
    doc.table(["outcome", *(q.title for q in questions)], [*rows, ["", *(q.footer for q in questions)]])
    doc.lines([strong(q.title, raw(":")), raw(" "), q.sentence] for q in questions)


def _md_table(doc: Description, table: Table) -> Description:
    return doc.table(table.header, table.rows)


def render_markdown(res: HierarchicalResult, ctx: ReportContext | None = None, figures: bool = True) -> Markdown:
    """The report as Markdown, valid as an MLflow run description (showdown; no raw HTML); ``figures``: the run
    holds the figures, and the description says how to read the model-fit plot."""
    b = blocks(res, ctx or ReportContext())
    doc = Description().heading(3, b["title"]).paragraph(b["subtitle"]).paragraph(strong(b["verdict"]))
    _md_questions(doc, b)
    if b["model_check"]:
        head, *items = b["model_check"]
        doc.quote([raw("⚠️ **Model check.** "), head], items)
    for warning in b["warnings"]:
        doc.warning(warning)
    _md_table(_md_table(doc, b["odds"]), b["parameters"]).paragraph(b["signed_rank"])
    if figures:
        doc.heading(4, "Model fit").paragraph(f"{FIGURE_CAPTIONS['model_fit']} Figure: plots/model_fit.png.")
    _md_table(doc.heading(4, "Diagnostics"), b["diagnostics"])
    if b["sensitivity"] is not None:
        _md_table(doc.heading(4, "Sensitivity").paragraph(strong(b["sensitivity_note"])), b["sensitivity"])
    _md_table(doc.heading(4, "Settings"), b["settings"])
    _md_sources(doc, b)
    return doc.done()


def _md_sources(doc: Description, b: dict[str, Any]) -> None:
    if b["experiments"] or b["comparison"] or b["runs"]:
        doc.heading(4, "Source runs")
    if b["experiments"]:
        doc.paragraph("Experiments: ", *_separated(b["experiments"]))
    if b["comparison"]:
        doc.paragraph("Comparison run: ", b["comparison"])
    if b["runs"]:
        table, more = b["runs"]
        _md_table(doc, table)
        if more:
            doc.paragraph(f"and {more} more runs")


def _separated(links: list[Link]) -> list[Any]:
    """The links with ", " between them."""
    return [part for i, link in enumerate(links) for part in ([raw(", ")] if i else []) + [link]]
