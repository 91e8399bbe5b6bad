"""A design's operating characteristics in sentences (:meth:`.OperatingCharacteristics.lines`): what the run page
and the ``watch`` command print beside the design."""

from __future__ import annotations

__all__ = ["oc_lines"]


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
