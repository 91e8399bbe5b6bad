"""A design's operating characteristics (mlflow_bayescompare.sequential.operating, worded by .report): with one
look, the simulated false-decision rates equal the fixed-size correlated t-test's, known in closed form; with many
looks the naive "stop at 0.95" rule inflates them, the simulation says so, and the threshold it offers keeps them
within the nominal level on fresh replicates."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from mlflow_bayescompare.sequential.design import Design
from mlflow_bayescompare.sequential.operating import operating_characteristics
from mlflow_bayescompare.vocabulary.errors import InputError


def one_look_rates(n: int, rho: float, sd: float, rope: float, threshold: float, delta: float) -> dict[str, float]:
    """P(decide right), P(left), P(rope) of the correlated t-test at one look on n differences that correlate ρ
    pairwise (its own model), Normal with sd σ and mean δ, exactly: x̄ ~ N(δ, τ²), τ² = σ²(ρ + (1 − ρ)/n), and
    independently V = (n − 1)s²/((1 − ρ)σ²) ~ χ²(n − 1), so the posterior's scale is c = τ√(V/(n − 1)).  Given c,
    right ⟺ x̄ ≥ rope + q·c (q the t quantile of the threshold), left the mirror, rope ⟺ |x̄| ≤ h(c) where the
    posterior's rope mass T((r − h)/c) − T((−r − h)/c) equals the threshold; integrate over V."""
    tau, df = sd * np.sqrt(rho + (1 - rho) / n), n - 1
    q = stats.t.ppf(threshold, df)

    def half_width(c: float) -> float:
        mass = lambda h: stats.t.cdf((rope - h) / c, df) - stats.t.cdf((-rope - h) / c, df) - threshold
        return optimize.brentq(mass, 0, rope) if mass(0) > 0 else -1.0

    def given(v: float) -> np.ndarray:
        c = tau * np.sqrt(v / df)
        h = half_width(c)
        inside = stats.norm.cdf((h - delta) / tau) - stats.norm.cdf((-h - delta) / tau) if h >= 0 else 0.0
        return np.array([stats.norm.sf((rope + q * c - delta) / tau), stats.norm.cdf((-rope - q * c - delta) / tau),
                         inside]) * stats.chi2.pdf(v, df)

    right, left, rope_mass = integrate.quad_vec(given, 0, np.inf, epsabs=1e-10)[0]
    return {"right": right, "left": left, "rope": rope_mass}


def _cell(oc, scenario: str, truth: str):
    return next(c for c in oc.cells if (c.scenario, c.truth) == (scenario, truth))


@pytest.mark.parametrize("sd, rope, repeats, folds", [(0.02, 0.002, 2, 5), (0.005, 0.01, 5, 10)])
def test_one_look_false_decisions_are_the_fixed_size_tests_closed_form(sd, rope, repeats, folds):
    """One look at ``repeats`` repeats, the correlated t-test's own model ("assumed"): the simulated false-decision
    rates (no difference: "better" either way; the rope's edge: "equivalent" or "B better") against the exact ones,
    to 4 Monte Carlo standard errors.  The first setting has "better" decided often with no difference (a rope
    small against the spread), the second "equivalent" often at the edge."""
    design = Design(test="correlated-t", folds=folds, min_size=repeats, max_size=repeats, planning_sd=sd, rope=rope,
                    cs_check=False)
    oc = operating_characteristics(design, replicates=20_000, seed=5)
    n, rho = repeats * folds, 1 / folds
    none, edge = one_look_rates(n, rho, sd, rope, 0.95, 0.0), one_look_rates(n, rho, sd, rope, 0.95, rope)
    for truth, exact in (("no difference", none["right"] + none["left"]), ("rope edge", edge["rope"] + edge["left"])):
        cell = _cell(oc, "assumed", truth)
        se = np.sqrt(exact * (1 - exact) / 20_000)
        assert cell.false_decision == pytest.approx(exact, abs=4 * se + 1e-4), truth
        assert (cell.mean_size, cell.at_budget) == (repeats, 1.0)
    assert max(none["right"] + none["left"], edge["rope"] + edge["left"]) > 0.02  # the check has something to see
    assert _cell(oc, "assumed", "rope edge").answers["a_better"] == pytest.approx(edge["right"], abs=0.006)


def test_the_naive_rule_inflates_with_many_looks_and_the_offered_threshold_keeps_the_level():
    """Evaluation items, 20 looks (every 50 of 1000) against one look at 1000, at the naive 0.95: one look keeps
    the edge's false decisions near 0.05, twenty inflate them (well above 0.05); the report says ABOVE and offers a
    threshold, which on fresh replicates keeps every scenario within 0.05 (to 2 standard errors)."""
    base = dict(test="eval-continuous", max_size=1000, planning_sd=0.25, rope=0.03, cs_check=False)
    single = operating_characteristics(Design(**base, min_size=1000), replicates=3000, seed=1)
    many = operating_characteristics(Design(**base, min_size=50, look_every=50), replicates=3000, seed=1)
    one, twenty = _cell(single, "iid", "rope edge"), _cell(many, "iid", "rope edge")
    assert one.false_decision <= 0.05 + 2 * one.standard_error
    assert twenty.false_decision > 2 * 0.05 and twenty.false_decision > one.false_decision + 6 * twenty.standard_error
    assert many.exceeds and any("ABOVE the nominal 0.05" in line for line in many.lines())
    offered = many.offered_threshold
    assert 0.95 < offered < 1 and any(f"Threshold {offered:.4g} keeps" in line for line in many.lines())
    fresh = operating_characteristics(Design(**base, min_size=50, look_every=50, threshold=offered,
                                             nominal_error=0.05), replicates=3000, seed=2)
    worst = fresh.worst()
    assert worst.false_decision <= 0.05 + 2 * worst.standard_error and fresh.cells[0].mean_size < 1000


def test_the_report_names_sizes_savings_and_the_sequences_coverage():
    design = Design(test="correlated-t", folds=10, min_size=2, max_size=12, planning_sd=0.01, rope=0.01,
                    cs_check=True)
    oc = operating_characteristics(design, replicates=1000, seed=3)
    text = "\n".join(oc.lines())
    assert "1000 simulated runs per scenario and truth (seed 3)" in text
    assert "repeats on average" in text and ("for the same power" in text or "no single look" in text)
    assert "each scenario alone would need" in text or not oc.exceeds
    assert "The confidence sequence held the truth at every look in at least" in text
    assert {c.scenario for c in oc.cells} == {"assumed", "repeats", "misspecified"} and len(oc.cells) == 9
    for cell in oc.cells:
        assert sum(cell.answers.values()) == pytest.approx(1) and 2 <= cell.mean_size <= 12
        assert cell.cs_coverage >= 0.95
    summary = oc.to_dict()
    assert summary["fingerprint"] == design.fingerprint and len(summary["cells"]) == 9


def test_a_simulation_that_cannot_hold_its_truth_is_refused():
    """Pass rates cannot differ by more than the share of items on which the models disagree (the default clear
    difference, twice the rope, would exceed it here); a clear difference must exceed the rope."""
    design = Design(test="eval-binary", min_size=100, max_size=500, look_every=100, planning_sd=0.2, rope=0.03)
    with pytest.raises(InputError, match="clear must lie between the rope 0.03 and the share of items on which the "
                                         "models disagree, planning_sd² = 0.04; got 0.06"):
        operating_characteristics(design)
    with pytest.raises(InputError) as caught:
        operating_characteristics(design, clear=0.01, replicates=10)
    assert caught.value.problems == ["replicates must be a whole number of at least 100; got 10",
                                     "clear must lie between the rope 0.03 and the share of items on which the models "
                                     "disagree, planning_sd² = 0.04; got 0.01"]
