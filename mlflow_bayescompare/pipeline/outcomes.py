"""What the pipelines return: an :class:`Outcome` (a result read from MLflow runs and where it was logged), a
comparison's, a ranking's, a matrix's, and a decision on several metrics'."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..runs.matrix import MatrixSummary
from ..shared.report_html import format_probability
from ..vocabulary.options import direction_word
from ..vocabulary.outcomes import combined_line, json_ready
from ..vocabulary.uiroutes import evaluation_comparison_route

__all__ = ["Outcome", "ComparisonOutcome", "MatrixOutcome", "RankingOutcome", "MetricsOutcome", "EvalsOutcome"]


@dataclass
class Outcome:
    """A result read from MLflow runs plus where it was logged: the engine's result (``result``) and its
    attributes (``verdict``, ``ranking`` …), readable on the outcome directly."""

    result: Any
    metric: str
    experiment_ids: list[str]
    layout: str | None = None
    run_id: str | None = None
    experiment_id: str | None = None

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "result":
            raise AttributeError(name)
        return getattr(self.result, name)

    def to_dict(self) -> dict[str, Any]:
        """The result's JSON summary plus ``metric``, ``layout``, ``source_experiment_ids`` and where it was logged."""
        return {**self.result.to_dict(), "metric": self.metric, "layout": self.layout,
                "source_experiment_ids": self.experiment_ids, "run_id": self.run_id,
                "experiment_id": self.experiment_id}


@dataclass
class RankingOutcome(Outcome):
    """A ranking's result (:class:`~..families.ranking.hierarchical_k.result.HierarchicalRankingResult`, BBT's
    :class:`~..families.ranking.bbt.result.RankingResult` or
    :class:`~..families.ranking.joint.result.JointRankingResult`: ``ranking``, ``pairs`` …) and its ranking run."""


@dataclass
class ComparisonOutcome(Outcome):
    """A two-model test's result (:class:`HierarchicalResult`, :class:`SignedRankResult` or
    :class:`CorrelatedTTestResult`), the data it was fitted on (``tensor``: the paired folds, or the per-dataset
    means) and where it was logged."""

    tensor: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "n_datasets": len(self.tensor.datasets),
                "datasets_left_out": dict(self.tensor.left_out)}


@dataclass
class EvalsOutcome(Outcome):
    """A comparison (:class:`~..families.evals.result.EvalComparisons`: ``by_scorer``, ``line()``, …) or a ranking
    (:class:`~..families.evals.result.EvalRanking`) of evaluation runs, what was read (``read``: the runs, the
    pairing, the unpaired items), the tidy ``table`` of their scores, per scorer the hierarchical test's answer for
    the next suite (``next_suite``, with several suites) and where it was logged; ``metric`` is the scorers,
    comma-separated."""

    read: Any = None
    table: Any = field(default=None, repr=False)
    next_suite: dict | None = None

    @property
    def compare_route(self) -> str | None:
        """MLflow's own side-by-side view of the two runs (a route of its UI), when both are in one experiment."""
        runs = self.read.runs
        if len(runs) != 2 or runs[0].experiment_id != runs[1].experiment_id:
            return None
        return evaluation_comparison_route(runs[0].experiment_id, runs[0].run_id, runs[1].run_id)

    def to_dict(self) -> dict[str, Any]:
        """The result's JSON, the runs read (id, name, system, kind, items, errored assessments), the pairing, the
        unpaired items, the next suite's answers, MLflow's view of the two runs and where it was logged."""
        read = self.read
        return json_ready({**self.result.to_dict(), "metric": self.metric, "source_experiment_ids": self.experiment_ids,
                           "runs": [{"run_id": r.run_id, "name": r.name, "system": r.system, "kind": r.kind,
                                     "experiment_id": r.experiment_id, "items": r.items, "errored": r.errored}
                                    for r in read.runs],
                           "pairing": read.pairing, "pair_key": read.pair_key, "unpaired": read.unpaired,
                           "next_suite": {s: r.to_dict() for s, r in (self.next_suite or {}).items()} or None,
                           "mlflow_compare_route": self.compare_route, "run_id": self.run_id,
                           "experiment_id": self.experiment_id})


@dataclass
class MetricsOutcome:
    """One decision on several metrics: each metric's :class:`ComparisonOutcome` or :class:`RankingOutcome`
    (``by_metric``, in the order asked), the line that sums them up (``verdict``) and the one run that holds them."""

    by_metric: dict[str, ComparisonOutcome | RankingOutcome]
    run_id: str | None = None
    experiment_id: str | None = None

    @property
    def ranked(self) -> bool:
        return isinstance(next(iter(self.by_metric.values())), RankingOutcome)

    @property
    def verdict(self) -> str:
        """A comparison's :func:`~..vocabulary.outcomes.combined_line`; a ranking's best model on each metric."""
        if self.ranked:
            return "Best: " + "; ".join(f"{o.ranking['model'].iloc[0]} on {m} (P(best) "
                                        f"{format_probability(o.ranking['p_best'].iloc[0])})"
                                        for m, o in self.by_metric.items()) + "."
        first = next(iter(self.by_metric.values()))
        return combined_line(first.model_a, first.model_b, {m: o.decision for m, o in self.by_metric.items()})

    def summary_rows(self) -> tuple[list[str], list[list[str]]]:
        """The table of the metrics that opens the run's reports: header and one row per metric."""
        if self.ranked:
            header = ["metric", "better", "rope", "ranking model", "best", "P(best)", "second", "P(best) of second"]
            return header, [[m, direction_word(o.settings["greater_is_better"]),
                             f"±{o.settings['metric_rope']:g}", o.model, *_leaders(o.ranking)]
                            for m, o in self.by_metric.items()]
        first = next(iter(self.by_metric.values()))
        header = ["metric", "better", "rope", "test", f"P({first.model_a} better)", "P(rope)",
                  f"P({first.model_b} better)", "verdict"]
        return header, [[m, direction_word(o.greater_is_better), f"±{o.rope:g}", o.test,
                         *map(format_probability, (o.p_a_better, o.p_rope, o.p_b_better)), o.verdict]
                        for m, o in self.by_metric.items()]

    def to_dict(self) -> dict[str, Any]:
        """``metrics``: each metric's JSON (as a one-metric outcome's), with the verdict and where it was logged."""
        return {"metric": ",".join(self.by_metric), "verdict": self.verdict,
                "metrics": {m: o.to_dict() for m, o in self.by_metric.items()},
                "run_id": self.run_id, "experiment_id": self.experiment_id}


def _leaders(ranking) -> list[str]:
    """The first two models of a ranking table and their P(best)."""
    top = ranking.head(2)
    cells = [[str(r.model), format_probability(r.p_best)] for r in top.itertuples()]
    return [*cells[0], *(cells[1] if len(cells) > 1 else ["", ""])]


@dataclass
class MatrixOutcome:
    """Every pair's :class:`ComparisonOutcome` (keyed ``(a, b)`` in the order of ``models``), the summary
    (``better``/``rope`` matrices, ``ranking``) and the parent run."""

    models: list[str]
    pairs: dict[tuple[str, str], ComparisonOutcome]
    summary: MatrixSummary
    bbt: Any = None  # the ranking of all models at once (three or more): BBT, or the joint model on one dataset
    run_id: str | None = None
    experiment_id: str | None = None
    cached: int = 0  # the pairs read from the cache of earlier matrices

    @property
    def ranking(self):
        """The ranking of all models (P(best), mean rank …) with three or more models, else the pair's summary."""
        return self.bbt.ranking if self.bbt is not None else self.summary.ranking

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": self.models,
            "metric": self.summary.metric,
            "test": ",".join(self.summary.tests),  # the tests that compared the pairs (one, as a rule)
            "pairs_cached": self.cached,
            "run_id": self.run_id,
            "experiment_id": self.experiment_id,
            "ranking": self.ranking.to_dict(orient="records"),
            "p_better": _nested(self.summary.better),  # p_better[row][column] = P(row better than column)
            "p_rope": _nested(self.summary.rope),
            "pairs": [
                {"model_a": a, "model_b": b, "test": o.test, "p_a_better": o.p_a_better, "p_rope": o.p_rope,
                 "p_b_better": o.p_b_better, "verdict": o.verdict, "decision": o.decision, "run_id": o.run_id,
                 "datasets_left_out": dict(o.tensor.left_out)}
                for (a, b), o in self.pairs.items()
            ],
        }


def _nested(frame) -> dict:
    """``{row: {column: value}}`` with ``None`` on the diagonal."""
    return frame.astype(object).where(frame.notna(), None).to_dict(orient="index")

