"""Report step of a decision on several metrics: one run that holds each metric's comparison or ranking.

Each metric's run content is built as usual (a :class:`~.bundle.Bundle`, in the folder ``<metric>/``); the run of
the decision holds them all, by one rule: a metric's own values carry its name, ``<metric>/<name>`` for metrics
(MLflow's charts group them by that prefix), params and artifacts, ``<tag>/<metric>`` for the verdict and decision
tags (they stay under ``bayescompare.``; the diagnostics are one tag, ``metric: problem; …`` or ``ok``, not one a
metric that the Tags panel would list as ``ok`` again and again); params and tags every metric shares are logged
once, as they are.  Where MLflow would refuse such a key (or a file system the folder), it is made one it takes
(:mod:`..vocabulary.keys`), and the run's :data:`~..vocabulary.keys.KEYS_ARTIFACT` maps each key and folder built from
a metric's name back to the metric and the name.  Its description, report.md and report.html open with the decision
(:func:`~..vocabulary.outcomes.combined_line`) and a table of the metrics, then give each metric's own report as a
section.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from ..shared import report_html
from ..shared.markdown import Description, Markdown, raw, strong
from ..shared.run_content import Bundle, fit_tag
from ..vocabulary import tags as T
from ..vocabulary.keys import KEYS_ARTIFACT, metric_folder, metric_key

__all__ = ["several_metrics_bundle"]

#: where the description says each metric's own files are
WHERE_NOTE = (f"Each metric's report, tables and posterior are under its name in the artifacts (`<metric>/`; "
              f"`{KEYS_ARTIFACT}` maps a folder or key that could not be the name back to it).")
#: tags of the decision's own (the metrics' are combined into these, not copied)
_COMBINED = (T.METRIC, T.VERDICT, T.DECISION, T.DIAGNOSTICS, T.NOTE)


def several_metrics_bundle(bundles: dict[str, Bundle], directory: Path, *, name: str, verdict: str,
                           summary_header: list[str], summary_rows: list[list[str]]) -> Bundle:
    """The run of one decision on ``bundles`` (each metric's, by metric, built into ``directory /``
    :func:`~..vocabulary.keys.metric_folder`), its artifacts in ``directory``: named ``name``, its verdict ``verdict``
    (the combined line), opening with the table ``summary_header`` / ``summary_rows`` (one row per metric)."""
    metrics = list(bundles)
    tags, params, values, mapping = {}, {}, {}, {f"{metric_folder(m)}/": {"metric": m, "name": ""} for m in metrics}

    def own(key: str, metric: str, name: str) -> str:
        mapping[key] = {"metric": metric, "name": name}
        return key

    for metric, bundle in bundles.items():
        values.update({own(metric_key(metric, k), metric, k): v for k, v in bundle.metrics.items()})
        for key in (T.VERDICT, T.DECISION):  # the diagnostics: one tag naming each metric's problem
            if key in bundle.tags:
                tags[own(T.metric_tag(key, metric), metric, key)] = bundle.tags[key]
    for source, out, keyed in ((lambda b: b.tags, tags, T.metric_tag), (lambda b: b.params, params, None)):
        keys = {k for b in bundles.values() for k in source(b) if k not in _COMBINED}
        for key in sorted(keys):
            given = {m: source(b).get(key) for m, b in bundles.items()}
            if len(set(given.values())) == 1:
                out[key] = next(iter(given.values()))
            else:
                out.update({own(keyed(key, m) if keyed else metric_key(m, key), m, key): v
                            for m, v in given.items() if v is not None})
    (directory / KEYS_ARTIFACT).write_text(json.dumps(mapping, indent=1, ensure_ascii=False), encoding="utf-8")
    decisions = {b.tags.get(T.DECISION) for b in bundles.values()}
    problems = [f"{m}: {b.tags[T.DIAGNOSTICS]}" for m, b in bundles.items()
                if b.tags.get(T.DIAGNOSTICS, "ok") != "ok"]
    tags.update({T.METRIC: ",".join(metrics), T.VERDICT: fit_tag(verdict), T.DIAGNOSTICS: "; ".join(problems) or "ok",
                 **({T.DECISION: decisions.pop()} if len(decisions) == 1 and None not in decisions else {})})
    markdown = _markdown(name, verdict, summary_header, summary_rows, bundles)
    (directory / "report.md").write_text(str(markdown), encoding="utf-8")
    (directory / "report.html").write_text(_html(name, verdict, summary_header, summary_rows, directory, metrics),
                                           encoding="utf-8")
    tags[T.NOTE] = fit_tag(str(markdown))
    return Bundle(name, tags, params, values, directory, description=markdown)


def _markdown(name: str, verdict: str, header: list[str], rows: list[list[str]],
              bundles: dict[str, Bundle]) -> Markdown:
    """The description: the decision, the table of metrics, then each metric's own description, a level down."""
    doc = Description().heading(1, name).paragraph(strong(verdict)).table(header, rows)
    doc.paragraph(raw(WHERE_NOTE))
    for metric, bundle in bundles.items():
        doc.heading(2, metric)
        if bundle.description is not None:
            doc.include(bundle.description.nested())
    return doc.done()


_STYLE = re.compile(r"<style>(.*?)</style>", re.S)
_MAIN = re.compile(r"<main>(.*)</main>", re.S)


def _html(name: str, verdict: str, header: list[str], rows: list[list[str]], directory: Path,
          metrics: list[str]) -> str:
    """One self-contained page: the decision and its table, then each metric's report page as a section."""
    styles, sections = [], []
    for metric in metrics:
        path = directory / metric_folder(metric) / "report.html"
        page = path.read_text(encoding="utf-8") if path.exists() else ""
        styles += [s for s in _STYLE.findall(page) if s not in styles]
        body = _MAIN.search(page)
        sections.append(f'<section id="metric-{html.escape(metric, quote=True)}" class="metric">'
                        f"{body.group(1) if body else ''}</section>")
    head = (f'<div class="card {report_html.SUMMARY}"><h1>{html.escape(name)}</h1>'
            f'<p class="strong">{html.escape(verdict)}</p>'
            f"{report_html.plain_table(header, rows)}</div>")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{html.escape(name)}</title><style>{''.join(styles)}"
            "section.metric{border-top:3px solid #cbd2d9;margin-top:24px;padding-top:8px}</style></head><body><main>"
            + head + "\n".join(sections) + "</main></body></html>\n")
