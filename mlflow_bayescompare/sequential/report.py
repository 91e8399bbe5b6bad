"""A design's operating characteristics in sentences (:meth:`.OperatingCharacteristics.lines`), and a look's answer
in one (:func:`look_sentence`): what the watch run's description and the ``watch`` command print."""

from __future__ import annotations

from ..shared.report_html import format_probability
from ..vocabulary.outcomes import outcome_label

__all__ = ["oc_lines", "look_sentence", "probabilities_text", "ANSWER_WORDS"]

#: a look's answers in words
ANSWER_WORDS = {"continue": "continue", "a_better": "{a} better", "b_better": "{b} better",
                "equivalent": "practically equivalent", "inconclusive": "inconclusive at the budget"}


def oc_lines(oc) -> list[str]:
    """The simulation's report: the false-decision rate against its level, the threshold offered, each scenario's
    answers and stopping sizes, the fixed size of the same power and the confidence sequence's coverage."""
    worst = oc.worst()
    lines = [f"{oc.replicates} simulated runs per scenario and truth (seed {oc.seed}), in {oc.seconds:.1f} s.",
             f"False decisions at threshold {oc.threshold:g}: at most {worst.false_decision:.3f} "
             f"(± {worst.standard_error:.3f}; {worst.scenario}, {worst.truth}), "
             f"{'ABOVE' if oc.exceeds else 'within'} the nominal {oc.nominal_error:g}."]
    lines += _offer(oc)
    for c in oc.cells:
        shares = ", ".join(f"{word} {share:.3f}" for word, share in c.answers.items())
        lines.append(f"{c.scenario}, {c.truth} (a - b = {c.difference:g} in A's favour): {shares}; stops after "
                     f"{c.mean_size:.1f} {oc.unit} on average (median {c.median_size:g}, 90% by {c.p90_size:g}), "
                     f"{c.at_budget:.0%} at the budget.")
    for f in oc.fixed_size:
        fixed = (f"a single look needs {f.fixed_size} {oc.unit} for the same power (at threshold "
                 f"{f.fixed_threshold:.4g}, which keeps its own false decisions within {oc.nominal_error:g})"
                 if f.fixed_size is not None else "no single look within the budget has the same power")
        lines.append(f"{f.scenario}, at threshold {f.threshold:.4g}: P(A better) = {f.power:.3f} at a difference of "
                     f"{oc.clear:g} after {f.mean_size_clear:.1f} {oc.unit} on average ({f.mean_size_none:.1f} with "
                     f"no difference); {fixed}.")
    covered = [c for c in oc.cells if c.cs_coverage is not None]
    if covered:
        low = min(covered, key=lambda c: c.cs_coverage)
        lines.append(f"The confidence sequence held the truth at every look in at least {low.cs_coverage:.3f} of "
                     f"runs ({low.scenario}, {low.truth}).")
    return lines


def _offer(oc) -> list[str]:
    if oc.offered_threshold is None:
        return [f"No threshold of the grid keeps every simulated false-decision rate within {oc.nominal_error:g}: "
                "look less often, or widen the rope."]
    if not oc.exceeds and oc.offered_threshold >= oc.threshold:
        return []
    at = max(c.false_decision for c in oc.cells_at_offered) if oc.cells_at_offered else oc.false_decision
    verb = "keeps" if oc.exceeds else "would keep"
    each = ", ".join(f"{s} {'none' if t is None else f'{t:.4g}'}" for s, t in oc.offered_by_scenario.items())
    return [f"Threshold {oc.offered_threshold:.4g} {verb} every simulated false-decision rate within "
            f"{oc.nominal_error:g} (at most {at:.3f})" + (": register the design with it" if oc.exceeds else "")
            + f"; each scenario alone would need: {each}."]


def probabilities_text(row, model_a: str, model_b: str) -> str:
    """``P(rf better) 0.912, P(practically equivalent) 0.080, P(svm better) 0.008`` of a :class:`.look.LookRow`."""
    return ", ".join(f"P({outcome_label(o, model_a, model_b)}) {format_probability(p)}"
                     for o, p in (("a_better", row.p_a_better), ("rope", row.p_rope), ("b_better", row.p_b_better)))


def look_sentence(look, design, model_a: str, model_b: str) -> str:
    """A look's answer in one sentence: what was read, what the posterior says at the look it is read at, and what
    to do (``continue``: add data and look again)."""
    unit, word = design.unit, ANSWER_WORDS[look.answer].format(a=model_a, b=model_b)
    if look.row is None:
        return f"Continue: the first look is at {design.min_size} {unit}; {look.available} read so far."
    said = probabilities_text(look.row, model_a, model_b)
    if look.answer == "continue":
        following = next(s for s in design.looks if s > look.size)
        return (f"Continue: at {look.size} {unit}, {said}, none at the threshold {design.threshold:g} yet; the next "
                f"look is at {following} {unit}.")
    if look.answer == "inconclusive":
        return f"Inconclusive at the budget of {design.max_size} {unit}: {said}, none at {design.threshold:g}."
    gate = ", and the confidence sequence agrees" if design.gate == "both" else ""
    return f"Decided at {look.size} {unit}: {word} ({said}; threshold {design.threshold:g}{gate})."
