"""How the pipeline runs the comparison of evaluation runs (the parts its row of the family table names): the
pre-flight of a read table against the request (:func:`check`), the engine's settings from the options
(:func:`engine_settings`), and the runs it writes: a comparison of A and B (:func:`bundle`) and a ranking of k
systems (:func:`ranking_bundle`), each built whole before MLflow is touched (:mod:`...shared.run_content`).

A run on several scorers is shaped as a decision on several metrics (:mod:`...runs.several`), the scorers in the
metrics' place, so the server, its page and the list of past comparisons read it as they read one: each scorer's
values under ``<scorer>/<name>`` (:func:`...vocabulary.keys.metric_key`), its verdict and decision as
``<tag>/<scorer>``, its tables in its folder (:func:`...vocabulary.keys.metric_folder`), and
:data:`...vocabulary.keys.KEYS_ARTIFACT` mapping them back; on one scorer, as a comparison of one metric."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ...reads.evaluations import EvaluationRead
from ...shared.run_content import Bundle, finite, fit_tag, new_directory, param_value, run_name
from ...vocabulary import tags as T
from ...vocabulary.claims import eval_claim
from ...vocabulary.errors import InputError
from ...vocabulary.keys import KEYS_ARTIFACT, metric_folder, metric_key, named_keys
from ...vocabulary.optionspec import PerMetric
from ...vocabulary.outcomes import json_ready
from .gates import joint_probability
from .items import pairs_table, rope_sensitivity
from .pairing import align, listed
from .plots import all_figures, ranking_figures
from .report import render_html, render_markdown
from .result import EvalComparisonResult, EvalComparisons, EvalRanking
from .suites import suite_inputs

__all__ = ["check", "engine_settings", "suite_settings", "bundle", "ranking_bundle", "TEST"]

TEST = EvalComparisonResult.test  # the result's test: the family table's name


def engine_settings(options, scorers: Sequence[str]) -> dict:
    """The keywords of :func:`.engine.compare_evaluations` (and ``rank_evaluations``) from an
    :class:`~...vocabulary.options.EvalOptions`: each per-scorer option as scorer → value (a bare value for every
    scorer), the threshold, the draws and the seed."""
    return {"rope": _per_scorer(options.rope, scorers), "kinds": _per_scorer(options.kinds, scorers) or None,
            "direction": _per_scorer(options.direction, scorers), "threshold": options.threshold,
            "draws": options.draws, "seed": options.seed}


def _per_scorer(value, scorers: Sequence[str]) -> dict | None:
    if value is None:
        return None
    named, bare = (dict(value.values), value.default) if isinstance(value, PerMetric) else ({}, value)
    chosen = {s: named.get(s, bare) for s in scorers}
    return {s: v for s, v in chosen.items() if v is not None}


def check(table: pd.DataFrame, systems: Sequence[str], options) -> list[str]:
    """The pre-flight of a read table against the request, every problem in one :class:`InputError`: the systems
    pair (:func:`.pairing.align`: the scorers, their kinds and directions, the overlap), each per-scorer option
    names scorers compared, the claim reads on them, and several suites feed the test across suites.  Returns the
    scorers compared."""
    aligned = align(table, systems, list(options.scorers) or None, _per_scorer(options.kinds, _scorers_of(table)),
                    _per_scorer(options.direction, _scorers_of(table)))
    scorers = list(aligned.scorers)
    problems = [f"{name} names scorer(s) not compared: {listed(stray)} (scorers: {listed(scorers)})"
                for name, value in (("rope", options.rope), ("kinds", options.kinds), ("direction", options.direction))
                if isinstance(value, PerMetric) and (stray := [s for s, _ in value.values if s not in scorers])]
    if problems:
        raise InputError(problems, header="invalid evaluation settings:")
    if options.claim is not None:
        eval_claim(options.claim, scorers)
    if options.suite is not None and len(systems) == 2:
        for scorer in scorers:
            suite_inputs(table, systems[0], systems[1], scorer, **suite_settings(options, scorer))
    return scorers


def suite_settings(options, scorer: str) -> dict:
    """The keywords of :func:`.suites.suite_inputs` for one scorer, from the options."""
    settings = engine_settings(options, [scorer])
    return {"rope": (settings["rope"] or {}).get(scorer), "kinds": settings["kinds"],
            "direction": (settings["direction"] or {}).get(scorer)}


def _scorers_of(table: pd.DataFrame) -> list[str]:
    return list(pd.unique(table["scorer"].astype(str))) if "scorer" in table else []


# --------------------------------------------------------------------------------------------------- the runs


def bundle(result: EvalComparisons, table: pd.DataFrame, read: EvaluationRead, *, next_suite: dict | None = None,
           request: dict[str, str] | None = None, directory: Path | None = None, figures: bool = True) -> Bundle:
    """The comparison run of A and B: its description and reports, ``pairs.csv`` (every paired item's values, the
    disagreements first), ``rope_sensitivity.csv``, ``summary.json``, the figures; per scorer the probabilities,
    B − A and its HDI; across scorers the joint claims; tags naming both source runs; ``request``: the options as
    asked, logged as params."""
    root, tmp = new_directory(directory, "bayescompare-evals-")
    try:
        scorers = list(result.by_scorer)
        markdown = str(render_markdown(result, read, next_suite=next_suite))
        _comparison_files(root, result, table, read, markdown, next_suite, figures)
        keyed = _Keyed(scorers)
        for scorer, one in result.by_scorer.items():
            keyed.values(scorer, _scorer_metrics(one, (next_suite or {}).get(scorer)))
            keyed.params(scorer, {"rope": one.rope, "kind": one.kind["kind"],
                                  "greater_is_better": one.greater_is_better})
            keyed.tags(scorer, {T.VERDICT: one.verdict, T.DECISION: one.decision})
        if len(scorers) > 1:
            keyed.metrics.update(_across(result, scorers))
        keyed.write_map(root)
        decisions = set(result.decisions.values())
        verdict = result.line() if len(scorers) > 1 else result.by_scorer[scorers[0]].verdict
        tags = {**keyed.tag_values, T.KIND: "comparison", T.TEST: TEST, T.MODEL_A: result.system_a,
                T.MODEL_B: result.system_b, T.METRIC: ",".join(scorers), T.RUN_A: read.runs[0].run_id,
                T.RUN_B: read.runs[1].run_id, **_source_tags(read), T.DIAGNOSTICS: "ok", T.VERDICT: fit_tag(verdict),
                **({T.DECISION: decisions.pop()} if len(decisions) == 1 else {}), T.NOTE: fit_tag(markdown)}
        params = {**_settings_params(result.settings), **keyed.param_values, **(request or {})}
        return Bundle(run_name(result.system_a, result.system_b, ", ".join(scorers)), tags,
                      {k: param_value(v) for k, v in params.items()}, _finite(keyed.metrics), root, tmp)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


def _comparison_files(root: Path, result: EvalComparisons, table: pd.DataFrame, read: EvaluationRead,
                      markdown: str, next_suite: dict | None, figures: bool) -> None:
    """The artifacts of a comparison run: report.md, summary.json, pairs.csv, rope_sensitivity.csv and, with
    ``figures``, the figures and report.html."""
    pairs, sensitivity = pairs_table(table, result, read.inputs), rope_sensitivity(result)
    _write_common(root, markdown, {"result": result.to_dict(), "read": _read_dict(read),
                                   "next_suite": {s: r.to_dict() for s, r in (next_suite or {}).items()}})
    pairs.to_csv(root / "pairs.csv", index=False)
    sensitivity.to_csv(root / "rope_sensitivity.csv", index=False)
    if figures:
        pngs = _figures(all_figures(result), root)
        (root / "report.html").write_text(render_html(result, read, pngs, sensitivity=sensitivity, pairs=pairs,
                                                      next_suite=next_suite), encoding="utf-8")


def ranking_bundle(result: EvalRanking, table: pd.DataFrame, read: EvaluationRead, *,
                   request: dict[str, str] | None = None, directory: Path | None = None,
                   figures: bool = True) -> Bundle:
    """The ranking run of k systems: per scorer ``ranking.csv`` and ``versus.csv`` (in the scorer's folder when
    there are several), each system's P(best) as ``p_best.<system>``, the best system's tag, the description and
    reports; ``table`` is not read (the result holds the rankings)."""
    root, tmp = new_directory(directory, "bayescompare-evals-")
    try:
        scorers = list(result.by_scorer)
        keyed, keys = _Keyed(scorers), named_keys("p_best", result.systems)
        for scorer, ranking in result.by_scorer.items():
            folder = root / metric_folder(scorer) if len(scorers) > 1 else root
            folder.mkdir(parents=True, exist_ok=True)
            ranking.ranking.rename(columns={"system": "model"}).to_csv(folder / "ranking.csv", index=False)
            ranking.versus.rename(columns={"system": "model"}).to_csv(folder / "versus.csv", index=False)
            keyed.values(scorer, {keys[s]: p for s, p in zip(ranking.ranking["system"], ranking.ranking["p_best"])})
            keyed.params(scorer, {"rope": ranking.rope, "kind": ranking.kind["kind"],
                                  "greater_is_better": ranking.kind["greater_is_better"]})
            keyed.tags(scorer, {T.BEST: str(ranking.ranking["system"].iloc[0])})
        markdown = str(render_markdown(result, read))
        _write_common(root, markdown, {"result": result.to_dict(), "read": _read_dict(read)})
        if figures:
            pngs = _figures(ranking_figures(result), root)
            (root / "report.html").write_text(render_html(result, read, pngs), encoding="utf-8")
        keyed.write_map(root)
        verdict = " · ".join(r.statement for r in result.by_scorer.values())
        tags = {**keyed.tag_values, T.KIND: "ranking", T.TEST: TEST, T.RANKING: TEST, T.METRIC: ",".join(scorers),
                T.MODELS: fit_tag(T.joined_names(result.systems)), **_source_tags(read), T.DIAGNOSTICS: "ok",
                T.VERDICT: fit_tag(verdict), T.NOTE: fit_tag(markdown)}
        params = {**_settings_params(result.settings), **keyed.param_values,
                  "vs": result.settings.get("vs") or "best", **(request or {})}
        name = f"ranking of {len(result.systems)} evaluation runs · {', '.join(scorers)}"
        return Bundle(name, tags, {k: param_value(v) for k, v in params.items()}, _finite(keyed.metrics), root, tmp)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


# --------------------------------------------------------------------------------------------------- helpers


class _Keyed:
    """A run's metrics, params and tags of each scorer: as they are on one scorer, ``<scorer>/<name>`` (and
    ``<tag>/<scorer>``) on several, each such key listed in :data:`KEYS_ARTIFACT`."""

    def __init__(self, scorers: list[str]):
        self.several = len(scorers) > 1
        self.metrics: dict[str, float] = {}
        self.param_values: dict[str, object] = {}
        self.tag_values: dict[str, str] = {}
        self.mapping = {f"{metric_folder(s)}/": {"metric": s, "name": ""} for s in scorers} if self.several else {}

    def _key(self, scorer: str, name: str, tag: bool = False) -> str:
        if not self.several:
            return name
        key = T.metric_tag(name, scorer) if tag else metric_key(scorer, name)
        self.mapping[key] = {"metric": scorer, "name": name}
        return key

    def values(self, scorer: str, values: dict) -> None:
        self.metrics.update({self._key(scorer, k): v for k, v in values.items()})

    def params(self, scorer: str, values: dict) -> None:
        self.param_values.update({self._key(scorer, k): v for k, v in values.items()})

    def tags(self, scorer: str, values: dict) -> None:
        self.tag_values.update({self._key(scorer, k, tag=True): fit_tag(str(v)) for k, v in values.items()})

    def write_map(self, root: Path) -> None:
        if self.several:
            (root / KEYS_ARTIFACT).write_text(json.dumps(self.mapping, indent=1, ensure_ascii=False),
                                              encoding="utf-8")


def _across(result: EvalComparisons, scorers: list[str]) -> dict[str, float]:
    """The claims about B across every scorer (:data:`.gates.ACROSS`), as the run's metrics."""
    return {"p_b_not_worse_on_all": joint_probability(result, "not-worse"),
            "p_b_improves": joint_probability(result, "not-worse", better_on=scorers)}


def _scorer_metrics(one, next_suite=None) -> dict[str, float]:
    d, counts = one.difference, one.counts
    out = {"p_a_better": one.p_a_better, "p_rope": one.p_rope, "p_b_better": one.p_b_better,
           "difference": d["mean"], "difference_hdi_low": d["hdi_low"], "difference_hdi_high": d["hdi_high"],
           "superiority": one.superiority["mean"], "n_items": counts["items"], "baseline_p_value":
           one.baseline["p_value"]}
    if counts.get("clusters"):
        out["n_clusters"] = counts["clusters"]
    if one.more_items and one.more_items.get("more") is not None:
        out["more_items_to_decide"] = one.more_items["more"]
    if next_suite is not None:
        out.update({f"next_suite_{p}": getattr(next_suite, p) for p in ("p_a_better", "p_rope", "p_b_better")})
    return out


def _source_tags(read: EvaluationRead) -> dict[str, str]:
    experiments = list(dict.fromkeys(r.experiment_id for r in read.runs))
    return {T.SOURCE_RUNS: ",".join(r.run_id for r in read.runs), T.SOURCE_EXPERIMENTS: ",".join(experiments)}


def _settings_params(settings: dict) -> dict:
    out = {}
    for key, value in settings.items():
        if key == "versions":
            out.update({f"version.{k}": v for k, v in value.items()})
        elif key != "rope" and value is not None:
            out[key] = value
    return out


def _read_dict(read: EvaluationRead) -> dict:
    return json_ready({"pairing": read.pairing, "pair_key": read.pair_key, "scorers": read.scorers,
                       "unpaired": read.unpaired, "notes": read.notes, "inputs": read.inputs,
                       "runs": [vars(r) for r in read.runs]})


def _write_common(root: Path, markdown: str, summary: dict) -> None:
    (root / "report.md").write_text(markdown, encoding="utf-8")
    (root / "summary.json").write_text(json.dumps(json_ready(summary), indent=2), encoding="utf-8")


def _figures(figures: dict, root: Path) -> dict[str, bytes]:
    from ...shared.figures import write_png_and_svg  # matplotlib: imported when a figure is drawn

    return write_png_and_svg(figures, root / "plots")


def _finite(metrics: dict) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if finite(v)}
