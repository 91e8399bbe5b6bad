"""The input contract of the evaluation comparisons (``families/evals/pairing.py``): the tidy table paired per
scorer, repeats averaged with their counts and spread, clusters and suites, unpaired and missing items counted and
named, and every malformed table refused with what and where."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from mlflow_bayescompare.families.evals.pairing import align
from mlflow_bayescompare.vocabulary.errors import InputError


def table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["system", "item", "repeat", "scorer", "value", "cluster", "suite"])


def basic(n: int = 10) -> list[tuple]:
    rows = []
    for i in range(n):
        for system, passed in (("A", i % 2 == 0), ("B", i % 3 != 0)):
            rows.append((system, f"q{i}", 0, "correct", passed, f"p{i // 5}", ""))
            rows.append((system, f"q{i}", 0, "latency", 1.0 + i / 10 + (system == "B"), f"p{i // 5}", ""))
    return rows


def test_items_are_paired_per_scorer_with_their_kind_and_clusters():
    aligned = align(table(basic()), ["A", "B"])
    assert list(aligned.scorers) == ["correct", "latency"]
    correct = aligned.scorers["correct"]
    assert correct.kind.name == "pass_fail" and aligned.scorers["latency"].kind.name == "log"
    np.testing.assert_array_equal(correct.values[:, 0], [1, 0] * 5)
    np.testing.assert_array_equal(correct.values[:, 1], [i % 3 != 0 for i in range(10)])
    assert list(aligned.items) == [f"q{i}" for i in range(10)] and aligned.suites is None
    np.testing.assert_array_equal(aligned.clusters, [0] * 5 + [1] * 5)
    assert aligned.unpaired == {"A": [], "B": []} and not aligned.warnings


def test_repeats_are_averaged_with_their_counts_and_spread():
    rows = [("A", "q0", r, "s", v, "", "") for r, v in enumerate([0.2, 0.4, 0.9])]
    rows += [("B", "q0", 0, "s", 0.5, "", ""), ("A", "q1", 0, "s", 0.1, "", ""), ("B", "q1", 0, "s", None, "", ""),
             ("B", "q1", 1, "s", 0.7, "", ""), ("A", "q2", 0, "s", 0.3, "", ""), ("B", "q2", 0, "s", 0.6, "", "")]
    scores = align(table(rows), ["A", "B"]).scorers["s"]
    np.testing.assert_allclose(scores.values, [[0.5, 0.5], [0.1, 0.7], [0.3, 0.6]])
    np.testing.assert_array_equal(scores.repeats, [[3, 1], [1, 1], [1, 1]])
    assert scores.within[0, 0] == pytest.approx(np.var([0.2, 0.4, 0.9], ddof=1)) and np.isnan(scores.within[0, 1])


def test_unpaired_and_missing_items_are_counted_and_named(caplog):
    """Items only one system has are left out, named per system, with a warning that gives the numbers; an item
    whose value is missing (an errored assessment) for one scorer stays paired for the others."""
    rows = [r for r in basic(12) if not (r[0] == "B" and r[1] in ("q10", "q11"))]
    rows += [("B", "q99", 0, "correct", True, "", "")]
    rows = [(*r[:4], None, *r[5:]) if (r[0], r[1], r[3]) == ("A", "q3", "correct") else r for r in rows]
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        aligned = align(table(rows), ["A", "B"])
    assert aligned.unpaired == {"A": ["q99"], "B": ["q10", "q11"]}
    assert aligned.items_per_system == {"A": 12, "B": 11} and len(aligned.items) == 10
    assert "10 items paired (A has 12, B has 11); left out as unpaired: 1 not evaluated for A ('q99'); 2 not " \
           "evaluated for B ('q10', 'q11')" in caplog.text and aligned.warnings
    assert aligned.scorers["correct"].missing == {"A": ["q3"], "B": []}
    assert aligned.scorers["correct"].complete.sum() == 9 and aligned.scorers["latency"].complete.sum() == 10


def test_items_pair_within_their_suite_and_optional_columns_may_be_left_out():
    rows = [(s, "q1", 0, "x", v, "", suite) for s, v, suite in
            (("A", 1.0, "math"), ("B", 2.0, "math"), ("A", 3.0, "code"), ("B", 5.0, "code"))]
    aligned = align(table(rows), ["A", "B"])
    assert list(aligned.items) == ["math/q1", "code/q1"] and list(aligned.suites) == ["math", "code"]
    bare = table(rows)[["system", "item", "scorer", "value"]].assign(item=["q1", "q1", "q2", "q2"])
    assert align(bare, ["A", "B"]).scorers["x"].values.tolist() == [[1.0, 2.0], [3.0, 5.0]]
    with pytest.raises(InputError, match=r"1 item paired \(A has 1, B has 1\): a comparison needs at least 2"):
        align(bare.iloc[:2], ["A", "B"])


@pytest.mark.parametrize("change, message", [
    (lambda t: t.drop(columns="value"), r"the table lacks the column\(s\) value"),
    (lambda t: t.assign(system="A"), r"system\(s\) 'B' not in the table \(its systems: 'A'\)"),
    (lambda t: pd.concat([t, t.iloc[:1]]), r"1 \(system, item, repeat, scorer\) rows appear more than once: item 'q0' "
                                           r"repeat 0 of scorer 'correct', system 'A'"),
    (lambda t: t.assign(repeat=t["repeat"].astype(float) + 0.5), r"column repeat holds values that are not whole"),
    (lambda t: t.assign(cluster=np.where(t["system"] == "A", t["cluster"], "other")),
     r"item\(s\) 'q0', 'q1', .* carry more than one cluster"),
    (lambda t: t[~((t["system"] == "B") & (t["scorer"] == "latency"))],
     r"scorer 'latency' is not held by system\(s\) 'B'"),
])
def test_malformed_tables_are_refused(change, message):
    with pytest.raises(InputError, match=message):
        align(change(table(basic())), ["A", "B"], ["correct", "latency"])


def test_a_low_overlap_is_refused_with_the_numbers():
    rows = [r for r in basic(10) if r[0] == "A" or r[1] in ("q0", "q1")]
    rows += [("B", f"z{i}", 0, s, True if s == "correct" else 1.0, "", "") for i in range(8)
             for s in ("correct", "latency")]
    with pytest.raises(InputError, match=r"2 items paired \(A has 10, B has 10\): 20% of the smaller system's "
                                         r"items, below 50%"):
        align(table(rows), ["A", "B"])
    assert len(align(table(rows), ["A", "B"], min_overlap=0.1).items) == 2
    subset = [r for r in basic(10) if r[0] == "A" or r[1] in ("q0", "q1", "q2", "q3")]
    assert len(align(table(subset), ["A", "B"]).items) == 4  # all of the smaller system's items: a subset is fine


def test_scorers_kinds_and_directions_are_checked_against_the_table():
    with pytest.raises(InputError, match=r"kinds names scorers not compared: 'rouge'"):
        align(table(basic()), ["A", "B"], kinds={"rouge": "continuous"})
    with pytest.raises(InputError, match=r"name at least two different systems; got 'A', 'A'"):
        align(table(basic()), ["A", "A"])
    lower = align(table(basic()), ["A", "B"], direction={"correct": "lower"})
    assert not lower.scorers["correct"].kind.greater_is_better
    with pytest.raises(InputError, match="must be a pandas DataFrame"):
        align([{"system": "A"}], ["A", "B"])
