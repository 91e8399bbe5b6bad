"""Summarise step for several models: pairwise probability matrices, a ranking, the matrix plot and its text, and
the pairs table (one :class:`PairRow` per pair) that a matrix run holds and its cache reads back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..shared.markdown import Description, Markdown
from ..vocabulary.errors import InputError

__all__ = ["MatrixSummary", "PairRow", "model_pairs", "summarise", "matrix_figure", "ranking_markdown",
           "pairs_frame", "dataset_count", "DIAGNOSTIC_COLUMNS", "ANNOTATED_UP_TO"]

#: the sampler's diagnostics a pairs table holds, one column each (NaN for a test without them)
DIAGNOSTIC_COLUMNS = ("rhat_max", "ess_bulk_min", "ess_tail_min", "divergences", "treedepth_hits",
                      "sampling_seconds")
ANNOTATED_UP_TO = 15  # models: above, the matrix plot's cells are not written on (they would not be readable)


@dataclass
class MatrixSummary:
    """``better.loc[r, c]`` = P(r better than c) on the next dataset; ``rope`` = P(practically equivalent);
    ``ranking`` = one row per model, best first; ``tests`` = the tests that compared the pairs, in the order of the
    pairs (one, unless some pairs share one dataset, or one score per dataset, and others folds)."""

    models: list[str]
    metric: str
    better: pd.DataFrame
    rope: pd.DataFrame
    ranking: pd.DataFrame
    tests: tuple[str, ...]


@dataclass
class PairRow:
    """One pair of a matrix as its pairs table holds it: what :func:`summarise` and a matrix run need of a pair's
    result, without its draws.  ``key`` identifies what decided it (the cache's key), ``run_id`` its child run (if
    any), ``cached`` whether it was read from an earlier matrix's table."""

    model_a: str
    model_b: str
    test: str
    p_a_better: float
    p_rope: float
    p_b_better: float
    verdict: str
    decision: str
    n_datasets: int
    diagnostics: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    run_id: str | None = None
    cached: bool = False

    @classmethod
    def of(cls, result, key: str = "") -> PairRow:
        """The row of a two-model test's result."""
        diagnostics = getattr(result, "diagnostics", None) or {}
        return cls(result.model_a, result.model_b, result.test, float(result.p_a_better), float(result.p_rope),
                   float(result.p_b_better), result.verdict, result.decision, dataset_count(result),
                   {name: diagnostics.get(name) for name in DIAGNOSTIC_COLUMNS if name in diagnostics},
                   json.loads(json.dumps(result.settings, default=_plain)), key)

    def record(self) -> dict[str, Any]:
        """The row's columns: the diagnostics spread into :data:`DIAGNOSTIC_COLUMNS`, the settings as JSON."""
        return {"model_a": self.model_a, "model_b": self.model_b, "test": self.test, "p_a_better": self.p_a_better,
                "p_rope": self.p_rope, "p_b_better": self.p_b_better, "verdict": self.verdict,
                "decision": self.decision, "n_datasets": self.n_datasets,
                **{name: _number(self.diagnostics.get(name)) for name in DIAGNOSTIC_COLUMNS},
                "run_id": self.run_id, "cached": self.cached, "key": self.key,
                "settings": json.dumps(self.settings, sort_keys=True)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> PairRow:
        """The row of a pairs table's record (:meth:`record`), read back."""
        diagnostics = {name: record[name] for name in DIAGNOSTIC_COLUMNS
                       if record.get(name) is not None and np.isfinite(record[name])}
        run_id = record.get("run_id")
        return cls(str(record["model_a"]), str(record["model_b"]), str(record["test"]),
                   float(record["p_a_better"]), float(record["p_rope"]), float(record["p_b_better"]),
                   str(record["verdict"]), str(record["decision"]), int(record["n_datasets"]), diagnostics,
                   json.loads(record["settings"]), str(record["key"]), run_id if isinstance(run_id, str) else None)


def pairs_frame(rows: Sequence[PairRow]) -> pd.DataFrame:
    """The pairs table: one record (:meth:`PairRow.record`) per pair."""
    return pd.DataFrame([row.record() for row in rows])


def dataset_count(result) -> int:
    """The number of datasets a two-model result (or a :class:`PairRow`) compared the models on."""
    return result.n_datasets


def _where_pairs_are(child_runs: bool) -> str:
    if child_runs:
        return "Each pair has its own child comparison run."
    return "Every pair's probabilities, verdict and diagnostics are in the artifact pairs.parquet."


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float, np.number)) else float("nan")


def _plain(value):
    """JSON for numpy values."""
    return value.tolist() if isinstance(value, (np.ndarray, np.generic)) else str(value)


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
    return MatrixSummary(models, metric, better, rope, ranking, tuple(dict.fromkeys(r.test for r in results.values())))


def matrix_figure(summary: MatrixSummary) -> Figure:
    """Two heat maps: P(row better than column) and P(rope), each cell annotated."""
    k = len(summary.models)
    size = 1.6 + 0.7 * k if k <= ANNOTATED_UP_TO else min(4 + 0.18 * k, 24)
    labels = max(4, min(9, 240 // k))  # the names' font size: smaller as they crowd
    fig = Figure(figsize=(2 * size + 1.2, size), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, frame, title, cmap in (
        (axes[0], summary.better, "P(row better than column)", "Blues"),
        (axes[1], summary.rope, "P(practically equivalent)", "Greys"),
    ):
        values = frame.to_numpy(dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values), vmin=0, vmax=1, cmap=cmap)
        for i, j in np.ndindex(values.shape if k <= ANNOTATED_UP_TO else (0, 0)):
            if np.isfinite(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center",
                        color="white" if values[i, j] > 0.6 else "black", fontsize=9)
        ax.set_xticks(range(k), summary.models, rotation=45 if k <= ANNOTATED_UP_TO else 90, ha="right",
                      fontsize=labels)
        ax.set_yticks(range(k), summary.models, fontsize=labels)
        ax.set_title(title, fontsize=10)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(f"Pairwise comparison · {summary.metric}", fontsize=11)
    return fig


def ranking_markdown(summary: MatrixSummary, matrix_only: bool = False, child_runs: bool = True) -> Markdown:
    """The run description of a matrix run: the pairs' ranking table (unless ``matrix_only``, when the parent
    holds the ranking of all models instead) and the P(better) matrix; ``child_runs=False`` when the pairs
    are in the pairs table only."""
    from ..families import tests_named
    from ..shared.report_html import format_probability as p

    doc = Description()
    if not matrix_only:
        doc.heading(1, f"Ranking of {len(summary.models)} models · {summary.metric}")
        doc.paragraph("Ranked by mean probability of being practically better than another model on the next dataset "
                      f"({tests_named(summary.tests, references=True)}). {_where_pairs_are(child_runs)}")
        doc.table(["rank", "model", "mean P(better)", "mean P(rope)", "mean P(worse)", "wins", "equivalent", "losses",
                   "inconclusive"],
                  [[row.rank, row.model, p(row.mean_p_better), p(row.mean_p_rope), p(row.mean_p_worse), row.wins,
                    row.equivalent, row.losses, row.inconclusive] for row in summary.ranking.itertuples(index=False)],
                  align=["right", "left", *["right"] * 7])
    doc.paragraph(f"Pairwise comparisons by the {tests_named(summary.tests)} "
                  f"({'one child run each' if child_runs else 'pairs.parquet'}), P(row better than column):")
    doc.table(["", *summary.models], [[m, *(p(v) for v in summary.better.loc[m])] for m in summary.models],
              align=["left", *["right"] * len(summary.models)])
    return doc.done()
