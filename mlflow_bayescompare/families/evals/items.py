"""What a comparison of evaluation runs shows item by item, and how its answer moves with the rope: the per-item
values of both systems (``pairs.csv``, the items where they disagree first) and the rope sensitivity (the three
probabilities of each scorer at fractions and multiples of its rope, from the same posterior draws)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...vocabulary.options import direction_word
from .kinds import Kind, as_numbers
from .result import EvalComparisonResult, EvalComparisons, three_way

__all__ = ["ROPE_FACTORS", "PAIRS_COLUMNS", "kind_of", "pairs_table", "rope_sensitivity"]

#: the multiples of each scorer's rope the sensitivity table shows (0: no rope, every difference counts)
ROPE_FACTORS = (0.0, 0.5, 1.0, 2.0, 4.0)
PAIRS_COLUMNS = ["scorer", "item", "cluster", "suite", "value_a", "value_b", "difference", "repeats_a", "repeats_b",
                 "outcome", "inputs"]


def kind_of(result: EvalComparisonResult) -> Kind:
    """The scorer's :class:`.kinds.Kind` as the comparison chose it."""
    k = result.kind
    return Kind(k["kind"], k["greater_is_better"], None if k["levels"] is None else tuple(k["levels"]), k["source"])


def pairs_table(table: pd.DataFrame, result: EvalComparisons, inputs: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per (scorer, paired item): each system's value (the mean of its repeats, in the kind's numbers: pass
    1, fail 0, an ordinal level's number, a resource's log), B − A, the repeats and the outcome (``B better``, ``A
    better``, ``tied``; ``missing`` when a system has no value); per scorer the items where the systems disagree
    first, the largest differences first."""
    a, b = result.system_a, result.system_b
    frames = [_one_scorer(table, a, b, scorer, one) for scorer, one in result.by_scorer.items()]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PAIRS_COLUMNS)
    out["inputs"] = out["item"].map(inputs or {}).fillna("")
    return out[PAIRS_COLUMNS]


def _one_scorer(table: pd.DataFrame, a: str, b: str, scorer: str, result: EvalComparisonResult) -> pd.DataFrame:
    mine = table[(table["scorer"] == scorer) & table["system"].isin([a, b])].reset_index(drop=True)
    kind = kind_of(result)
    numbers = as_numbers(mine["value"].astype(object), kind, scorer,
                         lambda i: f"item {mine['item'].iloc[i]!r} of system {mine['system'].iloc[i]!r}")
    mine = mine.assign(x=numbers, cluster=mine.get("cluster", ""), suite=mine.get("suite", ""))
    grouped = mine.groupby(["item", "system"])["x"].agg(["mean", "count"]).unstack("system")
    both = mine.groupby("item")["system"].nunique() == 2  # rows of both systems (a value of each, or none)
    grouped = grouped.loc[both[both].index]
    labels = mine.drop_duplicates("item").set_index("item")[["cluster", "suite"]].fillna("")
    value_a, value_b = grouped["mean"].get(a), grouped["mean"].get(b)
    d = value_b - value_a
    better = d if kind.greater_is_better else -d
    outcome = np.where(d.isna(), "missing", np.where(better > 0, "B better", np.where(better < 0, "A better", "tied")))
    counts = grouped["count"]
    out = pd.DataFrame({"scorer": scorer, "item": grouped.index.astype(str), "value_a": value_a.to_numpy(),
                        "value_b": value_b.to_numpy(), "difference": d.to_numpy(), "repeats_a": counts[a].to_numpy(),
                        "repeats_b": counts[b].to_numpy(), "outcome": outcome})
    out["cluster"] = out["item"].map(labels["cluster"]).fillna("")
    out["suite"] = out["item"].map(labels["suite"]).fillna("")
    order = np.lexsort((-out["difference"].abs().fillna(-1).to_numpy(), (out["outcome"] == "tied").to_numpy()))
    return out.iloc[order]


def rope_sensitivity(result: EvalComparisons, factors=ROPE_FACTORS) -> pd.DataFrame:
    """Per scorer and rope (``factors`` × its rope): P(A better), P(rope), P(B better) and the decision, from the
    comparison's own draws of B − A (the package's one rule, :func:`.result.three_way`)."""
    rows = []
    for scorer, one in result.by_scorer.items():
        threshold = one.settings["threshold"]
        for factor in factors:
            w = three_way(one.draws, factor * one.rope, one.greater_is_better, one.model_a, one.model_b, threshold)
            rows.append({"scorer": scorer, "rope": factor * one.rope, "factor": factor,
                         "better": direction_word(one.greater_is_better), "p_a_better": w["probs"]["a_better"],
                         "p_rope": w["probs"]["rope"], "p_b_better": w["probs"]["b_better"],
                         "decision": w["decision"]})
    return pd.DataFrame(rows)
