"""Summarise step for several models: pairwise probability matrices, a ranking, the matrix plot and its text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .errors import InputError


@dataclass
class MatrixSummary:
    """``better.loc[r, c]`` = P(r better than c) on the next dataset; ``rope`` = P(practically equivalent);
    ``ranking`` = one row per model, best first; ``test`` = the test that compared the pairs (every pair's
    result's ``test``)."""

    models: list[str]
    metric: str
    better: pd.DataFrame
    rope: pd.DataFrame
    ranking: pd.DataFrame
    test: str


def model_pairs(models: Sequence[str]) -> list[tuple[str, str]]:
    """Every unordered pair (in the order given); at least two distinct models are required."""
    models = [str(m) for m in models]
    dup = sorted({m for m in models if models.count(m) > 1})
    if dup:
        raise InputError(f"models listed more than once: {', '.join(dup)}")
    if len(models) < 2:
        raise InputError(f"a matrix comparison needs at least 2 models, got {len(models)}: {', '.join(models)}")
    return list(combinations(models, 2))


def summarise(results: dict[tuple[str, str], object], models: Sequence[str], metric: str) -> MatrixSummary:
    """Fill the matrices from one two-model result per pair (the hierarchical, signed-rank or correlated t-test)
    and rank the models.

    Models are ranked by their mean P(better) against the others; wins/equivalents/losses count the pairs whose
    decision (under the test's threshold) went that way.
    """
    models = [str(m) for m in models]
    better = pd.DataFrame(np.nan, index=models, columns=models)
    rope = better.copy()
    tally = {m: {"wins": 0, "equivalent": 0, "losses": 0, "inconclusive": 0} for m in models}
    for (a, b), res in results.items():
        better.loc[a, b], better.loc[b, a] = res.p_a_better, res.p_b_better
        rope.loc[a, b] = rope.loc[b, a] = res.p_rope
        outcome = {"a_better": ("wins", "losses"), "b_better": ("losses", "wins"),
                   "equivalent": ("equivalent", "equivalent")}.get(res.decision, ("inconclusive", "inconclusive"))
        tally[a][outcome[0]] += 1
        tally[b][outcome[1]] += 1
    ranking = pd.DataFrame({
        "model": models,
        "mean_p_better": better.mean(axis=1).to_numpy(),
        "mean_p_rope": rope.mean(axis=1).to_numpy(),
        "mean_p_worse": better.mean(axis=0).to_numpy(),
        **{key: [tally[m][key] for m in models] for key in ("wins", "equivalent", "losses", "inconclusive")},
    })
    ranking = ranking.sort_values(["mean_p_better", "wins"], ascending=False, kind="stable").reset_index(drop=True)
    ranking.insert(0, "rank", np.arange(1, len(ranking) + 1))
    return MatrixSummary(models, metric, better, rope, ranking, next(iter(results.values())).test)


def matrix_figure(summary: MatrixSummary) -> Figure:
    """Two heat maps: P(row better than column) and P(rope), each cell annotated."""
    k = len(summary.models)
    size = 1.6 + 0.7 * k
    fig = Figure(figsize=(2 * size + 1.2, size), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, frame, title, cmap in (
        (axes[0], summary.better, "P(row better than column)", "Blues"),
        (axes[1], summary.rope, "P(practically equivalent)", "Greys"),
    ):
        values = frame.to_numpy(dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values), vmin=0, vmax=1, cmap=cmap)
        for i, j in np.ndindex(values.shape):
            if np.isfinite(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center",
                        color="white" if values[i, j] > 0.6 else "black", fontsize=9)
        ax.set_xticks(range(k), summary.models, rotation=45, ha="right")
        ax.set_yticks(range(k), summary.models)
        ax.set_title(title, fontsize=10)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(f"Pairwise comparison · {summary.metric}", fontsize=11)
    return fig


def ranking_markdown(summary: MatrixSummary, matrix_only: bool = False) -> str:
    """The run description of a matrix run: the pairs' ranking table (unless ``matrix_only``, when the parent
    holds the ranking of all models instead) and the P(better) matrix."""
    from .report_html import md_escape
    from .result import TEST_NAMES, TEST_REFERENCES

    lines = []
    if not matrix_only:
        lines += [
            f"# Ranking of {len(summary.models)} models · {md_escape(summary.metric)}", "",
            "Ranked by mean probability of being practically better than another model on the next dataset "
            f"({TEST_NAMES[summary.test]}, {TEST_REFERENCES[summary.test]}). Each pair has its own child "
            "comparison run.", "",
            "| rank | model | mean P(better) | mean P(rope) | mean P(worse) | wins | equivalent | losses | "
            "inconclusive |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [f"| {row.rank} | {md_escape(row.model)} | {row.mean_p_better:.3f} | {row.mean_p_rope:.3f} | "
                  f"{row.mean_p_worse:.3f} | {row.wins} | {row.equivalent} | {row.losses} | {row.inconclusive} |"
                  for row in summary.ranking.itertuples(index=False)]
        lines.append("")
    lines += [f"Pairwise comparisons by the {TEST_NAMES[summary.test]} (one child run each), "
              "P(row better than column):", "",
              "| | " + " | ".join(map(md_escape, summary.models)) + " |", "|---|" + "---:|" * len(summary.models)]
    for m in summary.models:
        cells = ["–" if not np.isfinite(v) else f"{v:.3f}" for v in summary.better.loc[m]]
        lines.append(f"| {md_escape(m)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
