"""The text the command line prints of an outcome (the JSON of ``--json`` is the outcome's own ``to_dict``): a
comparison's probabilities and verdict, a matrix's pairs, a ranking's table in its model's columns, the claims of
``--require`` and where the run was logged.  Numbers follow the reports' rules (:mod:`.shared.report_html`)."""

from __future__ import annotations

import textwrap

from .families import eval_test, pair_test, ranking_model, tests_named
from .shared.report_html import format_numbers, format_probability
from .vocabulary import claims
from .vocabulary.console import redact_uri, ui_address
from .vocabulary.outcomes import counted

__all__ = ["exit_codes", "EXIT_CODES", "WATCH_EXITS", "WATCH_EXIT_CODES", "comparison_text", "matrix_text",
           "ranking_text", "ranking_lines", "watch_text",
           "evals_text"]



def exit_codes(*, require: bool = True, strict: bool = True) -> str:
    """The exit codes of a command, as its ``--help`` ends: what 1 means names only the options it has."""
    failures = [*(["the claim of --require is not supported"] if require else []),
                *(["--strict found sampler problems"] if strict else []), "Stan failed"]
    one = textwrap.wrap(f"1  {', '.join(failures)}, or MLflow failed during the work", 80,
                        initial_indent="  ", subsequent_indent="     ")
    return "\n".join(["\b", "Exit codes:", "  0  done" + (" (and, with --require, the claim is supported)" if require
                                                        else ""), *one,
                      "  2  bad input: unknown experiment, model or metric, incomplete folds, bad option,",
                      "     a tracking server that does not answer",
                      '  143  stopped by SIGTERM (sampling and workers stopped; Ctrl-C: "Aborted!", 1)'])


EXIT_CODES = exit_codes()

#: ``watch``'s exit code for each answer: a pipeline tells "add data and call again" apart from "decided"
WATCH_EXITS = {"a_better": 0, "b_better": 0, "equivalent": 0, "continue": 3, "inconclusive": 4}
WATCH_EXIT_CODES = """\b
Exit codes:
  0  decided: A better, B better, or practically equivalent
  3  continue: not decided yet (add repeats or items, and look again)
  4  inconclusive at the budget (the design's max size reached undecided)
  1  MLflow failed during the work
  2  bad input: unknown experiment, model, run or metric, a bad option, a design
     other than the one registered, a source run deleted since an earlier look
  143  stopped by SIGTERM (the watch run stays RUNNING for the next look)"""


def _claim_lines(checked: dict[str | None, claims.Report]) -> list[str]:
    """The claims that hold; one that does not is said once, by the command's error line (``cli._claimed``)."""
    return [(f"{m}: " if m else "") + c.line() for m, c in checked.items() if c.supported]


def _table(rows: list[tuple[str, str]], indent: str = "  ") -> list[str]:
    """Label/value rows with the values aligned in one column."""
    width = max(len(label) for label, _ in rows)
    return [f"{indent}{label.ljust(width)}  {value}" for label, value in rows]


def _where(tracking_uri, kind: str, run_id: str, experiment_id: str) -> list[str]:
    address, serve = ui_address(tracking_uri, experiment_id, run_id)
    lines = [f"{kind} {run_id} in experiment {experiment_id}: {address}"]
    if serve:
        lines.append(f"  (serve it with: {serve})")
    return lines


def comparison_text(outcome, checked: dict[str | None, claims.Report], tracking_uri) -> str:
    """A comparison's result; on several metrics each metric's, then the decision
    (:func:`~.vocabulary.outcomes.combined_line`)."""
    if not hasattr(outcome, "by_metric"):
        lines = _comparison_lines(outcome, tracking_uri)
    else:
        lines = [line for one in outcome.by_metric.values() for line in _comparison_lines(one, tracking_uri)]
        lines.append(f"Decision: {outcome.verdict}")
    lines += _claim_lines(checked)
    if outcome.run_id:
        lines += _where(tracking_uri, "Comparison run", outcome.run_id, outcome.experiment_id)
    return "\n".join(lines)


def _comparison_lines(outcome, tracking_uri) -> list[str]:
    a, b = outcome.model_a, outcome.model_b
    family = pair_test(outcome.result.test)
    test = family.title + (family.part("detail")(outcome.result) if family.detail else "")  # e.g. which ρ, and why
    datasets = counted(len(outcome.tensor.datasets), "dataset")
    lines = [f"{a} vs {b} · {outcome.metric}: {datasets} ({outcome.layout} layout), "
             f"rope ±{outcome.rope:g}, {redact_uri(tracking_uri) or 'sqlite:///mlflow.db'}", f"  {test}"]
    lines += _table([(f"P({a} better)", f"{outcome.p_a_better:.3f}"), ("P(rope)", f"{outcome.p_rope:.3f}"),
                     (f"P({b} better)", f"{outcome.p_b_better:.3f}")])
    lines.append(f"Verdict: {outcome.verdict}")
    lines += _left_out_lines(outcome)
    if getattr(outcome.result, "sensitivity", None) is not None:
        lines += ["Sensitivity (other priors and ropes):", f"  {outcome.sensitivity_note}",
                  *("  " + line for line in outcome.sensitivity.to_string(
                      index=False, float_format=lambda v: f"{v:.3f}").splitlines())]
    return lines


def _left_out_lines(outcome) -> list[str]:
    """``Left out: 'x' (no scores of 'b'), …``: the datasets a pair did not compare, when there are any."""
    left_out = outcome.tensor.left_out
    return [f"Left out: {', '.join(f'{d!r} ({why})' for d, why in left_out.items())}"] if left_out else []


def matrix_text(outcome, tracking_uri) -> str:
    metric = outcome.summary.metric
    if outcome.bbt is not None:  # three models or more: ranked at once, as `rank` prints it
        lines = ranking_lines(outcome.bbt, metric)
    else:
        lines = [f"Ranking of {len(outcome.models)} models · {metric}:",
                 outcome.ranking.to_string(index=False, float_format=lambda v: f"{v:.3f}")]
    beside = outcome.bbt is not None and outcome.bbt.model == "hierarchical"
    lines.append(f"Pairs: {tests_named(outcome.summary.tests)} (the more probably better model first)"
                 + ("; beside each, the ranking's P(first better) and whether it is credible" if beside else ""))
    width = max(len(f"{a} vs {b}") for a, b in outcome.pairs)
    for o in outcome.pairs.values():
        (first, p_first), (second, p_second) = sorted(((o.model_a, o.p_a_better), (o.model_b, o.p_b_better)),
                                                      key=lambda side: -side[1])
        lines.append(f"  {f'{first} vs {second}'.ljust(width)}  P(first) {p_first:.3f} · rope {o.p_rope:.3f} · "
                     f"P(second) {p_second:.3f}  {o.verdict}"
                     + (_ranked_pair(outcome.bbt, first, second) if beside else ""))
        lines += ["  " + line for line in _left_out_lines(o)]
    ranked = ranking_model(outcome.bbt.model) if outcome.bbt is not None else None
    if ranked is not None and ranked.differs and ranked.part("differs") not in lines:  # unless the ranking said it
        lines.append(ranked.part("differs"))
    if outcome.run_id:
        lines += _where(tracking_uri, "Parent run", outcome.run_id, outcome.experiment_id)
    return "\n".join(lines)


def _ranked_pair(ranking, first: str, second: str) -> str:
    """`` | ranking 0.962 credible``: the hierarchical ranking's P(first better) for a pair of a matrix, and its
    credible rule's word (:func:`.families.ranking.common.credible`), shown beside compare's verdict."""
    pairs = ranking.pairs
    row = pairs[pairs["better"].isin((first, second)) & pairs["worse"].isin((first, second))]
    if row.empty:
        return ""
    r = row.iloc[0]
    p_first = r.p_better if r.better == first else r.p_worse
    credible = bool(r.credible) and r.better == first
    return f" | ranking {p_first:.3f}{' credible' if credible else ''}"


def _ranking_table(ranking, columns: list[str]) -> str:
    """A ranking's table as the reports write its numbers: probabilities by their rule, each column in the metric's
    units with one number of decimals (:mod:`.shared.report_html`)."""
    shown, n = ranking[columns].astype(object), len(ranking)
    gaps = [c for c in columns if c in _GAP]  # one quantity: shown with one number of decimals
    texts = format_numbers([v for c in gaps for v in ranking[c]])
    for column in columns[1:]:
        values = ranking[column].tolist()
        shown[column] = [format_probability(v) for v in values] if column.startswith("p_") else \
            [f"{v:.2f}" for v in values] if column == "mean_rank" else \
            [f"{v:g}" for v in values] if column.startswith("rank_") else \
            texts[gaps.index(column) * n:][:n] if column in gaps else format_numbers(values)
    return shown.to_string(index=False)


#: a ranking's gap to the leader and its interval
_GAP = ("diff_to_leader", "diff_low", "diff_high")


def ranking_lines(result, metric: str) -> list[str]:
    """A ranking of three models or more as ``rank`` and ``matrix`` print it: the header naming the model that
    ranked them, the table (its model's columns), the headline and its model's own lines (on one dataset ρ and the
    rope; the hierarchical model's pairs; why BBT's pairs differ from the pair tests')."""
    from .families.ranking.report import headline

    family = ranking_model(result.model)
    return [f"Ranking of {len(result.ranking)} models · {metric} ({family.title}):",
            _ranking_table(result.ranking, list(family.columns)), headline(result), *family.part("text")(result)]


def ranking_text(outcome, checked: dict[str | None, claims.Report], tracking_uri) -> str:
    """A ranking; on several metrics, each metric's, then the models side by side (:func:`_side_by_side`)."""
    if not hasattr(outcome, "by_metric"):
        lines = ranking_lines(outcome.result, outcome.metric)
    else:
        lines = [line for m, one in outcome.by_metric.items() for line in ranking_lines(one.result, m)]
        lines += _side_by_side(outcome)
    lines += _claim_lines(checked)
    if outcome.run_id:
        lines += _where(tracking_uri, "Ranking run", outcome.run_id, outcome.experiment_id)
    return "\n".join(lines)


def _side_by_side(outcome) -> list[str]:
    """The rankings of several metrics side by side: per model, its P(best) and mean rank on each metric."""
    import pandas as pd

    table = pd.concat({m: o.ranking.set_index("model")[["p_best", "mean_rank"]]
                       for m, o in outcome.by_metric.items()}, axis=1)
    table.columns = [f"{name} {m}" for m, name in table.columns]
    return ["Side by side (P(best), mean rank):",
            table.reset_index().to_string(index=False, formatters={  # as each metric's ranking shows them
                c: format_probability if c.startswith("p_best") else "{:.2f}".format for c in table.columns}),
            outcome.verdict]


def watch_text(outcome, tracking_uri) -> str:
    """A watch's answer (:class:`~.pipeline.watchrequest.WatchOutcome`): what it compared, the answer in a sentence,
    each look's probabilities, the design's operating characteristics when this look registered it, the source runs
    read and where the watch run is."""
    a, b, design = outcome.model_a, outcome.model_b, outcome.design
    on = f" on {outcome.dataset}" if outcome.dataset else ""
    lines = [f"{a} vs {b} · {outcome.measure}{on}: {design.test}, rope ±{design.rope:g}, threshold "
             f"{design.threshold:g}, looks at {_sizes(design.looks)} {design.unit} (design {design.fingerprint[:12]})",
             outcome.sentence()]
    if outcome.look.rows:
        lines += _table([(f"{r.size} {design.unit}", _look_probabilities(r, a, b)) for r in outcome.look.rows])
    if outcome.registered and outcome.operating:
        lines += ["Design registered; its operating characteristics (simulated):",
                  *("  " + line for line in outcome.operating.get("lines", []))]
    lines += [f"Note: {note}" for note in [*outcome.look.notes, *outcome.notes]]
    if outcome.run_id:
        lines += _where(tracking_uri, "Watch run", outcome.run_id, outcome.experiment_id)
    return "\n".join(lines)


def _look_probabilities(row, a: str, b: str) -> str:
    said = (f"P({a} better) {format_probability(row.p_a_better)}  P(rope) {format_probability(row.p_rope)}  "
            f"P({b} better) {format_probability(row.p_b_better)}")
    return said if row.cs_low is None else f"{said}  sequence [{row.cs_low:.4g}, {row.cs_high:.4g}]"


def _sizes(sizes: tuple[int, ...]) -> str:
    """``2, 3, …, 30``: a schedule of looks, shortened."""
    return ", ".join(map(str, sizes)) if len(sizes) <= 5 else f"{sizes[0]}, {sizes[1]}, …, {sizes[-1]}"


def evals_text(outcome, checked: dict | None, tracking_uri) -> str:
    """A comparison of evaluation runs (per scorer B − A, its HDI, the probabilities, the verdict, the items that
    would decide an inconclusive one, the decision; the claims across scorers) or a ranking of them (per scorer its
    table and its sentence); the claim of ``--require`` (joint, and each scorer's); where it was logged and MLflow's
    own side-by-side view of the two runs."""
    from .families.evals.gates import across
    from .families.evals.words import subtitle

    family, result = eval_test(), outcome.result
    ranked = not hasattr(result, "system_a")
    head = f"Ranking of {len(result.systems)} evaluation runs" if ranked else \
        f"{result.system_a} vs {result.system_b} · evaluation runs"
    lines = [f"{head}: {subtitle(result, outcome.read)}", f"  {family.title}", *family.part("text")(result)]
    if not ranked and len(result.by_scorer) > 1:
        lines.append("Across scorers, about " + result.system_b + ": " + " · ".join(
            f"P({claim}) {format_probability(p)}" for claim, p in across(result).items()))
    for scorer, r in (outcome.next_suite or {}).items():
        lines.append(f"Next suite · {scorer}: P({r.model_a} better) {format_probability(r.p_a_better)} · P(rope) "
                     f"{format_probability(r.p_rope)} · P({r.model_b} better) {format_probability(r.p_b_better)}: "
                     f"{r.verdict}")
    if checked:
        lines.append(checked["joint"].line())
        if len(checked["scorers"]) > 1:
            lines += [f"  {scorer} alone: {report.line()}" for scorer, report in checked["scorers"].items()]
    if outcome.run_id:
        lines += _where(tracking_uri, "Comparison run" if not ranked else "Ranking run", outcome.run_id,
                        outcome.experiment_id)
    route = outcome.compare_route
    if route:
        first = outcome.read.runs[0]
        lines.append(f"MLflow's side-by-side view of the two runs: "
                     f"{ui_address(tracking_uri, first.experiment_id, first.run_id, route)[0]}")
    return "\n".join(lines)
