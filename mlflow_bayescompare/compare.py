"""Python API of the whole pipeline: collect → tensor → fit → summarise → report → log.

:func:`compare_runs` compares two models, :func:`compare_matrix` every pair of several, :func:`require` turns an
outcome into a yes/no for gating a model's promotion.  The CLI (:mod:`.cli`) is a thin layer over these.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.util
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

from mlflow import MlflowClient

from . import runlog
from .collect import collect_scores, resolve_experiments
from .errors import InputError
from .hierarchical import hierarchical_test
from .matrix import MatrixSummary, model_pairs, summarise
from .tensor import CVTensor

CLAIMS = ("a-better", "not-worse", "equivalent")


@dataclass
class ComparisonOutcome:
    """The engine's :class:`HierarchicalResult` plus where it was logged.  Attributes of the result
    (``p_a_better``, ``verdict``, ``shrinkage`` …) are readable on the outcome directly."""

    result: Any
    tensor: CVTensor
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
        """The result's JSON summary plus ``run_id``, ``experiment_id``, ``metric``, ``source_experiment_ids``."""
        return {
            **self.result.to_dict(),
            "metric": self.metric,
            "layout": self.layout,
            "n_datasets": len(self.tensor.datasets),
            "source_experiment_ids": self.experiment_ids,
            "run_id": self.run_id,
            "experiment_id": self.experiment_id,
        }


@dataclass
class MatrixOutcome:
    """Every pair's :class:`ComparisonOutcome` (keyed ``(a, b)`` in the order of ``models``), the summary
    (``better``/``rope`` matrices, ``ranking``) and the parent run."""

    models: list[str]
    pairs: dict[tuple[str, str], ComparisonOutcome]
    summary: MatrixSummary
    run_id: str | None = None
    experiment_id: str | None = None

    @property
    def ranking(self):
        return self.summary.ranking

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": self.models,
            "metric": self.summary.metric,
            "run_id": self.run_id,
            "experiment_id": self.experiment_id,
            "ranking": self.summary.ranking.to_dict(orient="records"),
            "p_better": _nested(self.summary.better),  # p_better[row][column] = P(row better than column)
            "p_rope": _nested(self.summary.rope),
            "pairs": [
                {"model_a": a, "model_b": b, "p_a_better": o.p_a_better, "p_rope": o.p_rope,
                 "p_b_better": o.p_b_better, "verdict": o.verdict, "decision": o.decision, "run_id": o.run_id}
                for (a, b), o in self.pairs.items()
            ],
        }


def compare_runs(
    experiment_names: Sequence[str] = (),
    experiment_ids: Sequence[str] = (),
    *,
    metric: str,
    model_a: str,
    model_b: str,
    rope: float = 0.01,
    greater_is_better: bool = True,
    folds: int | None = None,
    seed: int | None = None,
    log: bool = True,
    target_experiment_id: str | None = None,
    filter_string: str = "",
    layout: str = "auto",
    tracking_uri: str | None = None,
    drop_incomplete: bool = False,
    on_duplicate: str = "error",
    prior: str = "hierarchical",
    chains: int = 4,
    draws: int = 1000,
    threshold: float = 0.95,
    sensitivity: bool = False,
    backend: str = "auto",
    model_tag: str = "model",
    dataset_tag: str = "dataset",
    progress: bool = False,
    run_id: str | None = None,
) -> ComparisonOutcome:
    """Compare ``model_a`` with ``model_b`` on the per-fold ``metric`` logged in the given experiments.

    Reads the runs (layout steps/keys/children, auto-detected), pairs the folds, runs the hierarchical test and,
    with ``log=True``, logs a comparison run into ``target_experiment_id`` (default: the first source experiment).
    ``run_id`` names a RUNNING comparison run to fill (see :func:`runlog.start_comparison_run`): its stage tag
    follows the work and it ends FAILED, with the error, if anything goes wrong.
    """
    client = MlflowClient(tracking_uri)
    try:
        ids = resolve_experiments(client, experiment_names, experiment_ids)
        _stage(client, run_id, "fetching")
        collected = collect_scores(
            client, ids, metric, [model_a, model_b], filter_string=filter_string, layout=layout,
            model_tag=model_tag, dataset_tag=dataset_tag, folds=folds, progress=progress,
        )
        tensor = _pair(collected, model_a, model_b, drop_incomplete, on_duplicate)
        _stage(client, run_id, "sampling")
        if progress:
            print(f"bayescompare: sampling {model_a} vs {model_b} on {len(tensor.datasets)} datasets "
                  f"({chains} chains x {draws} draws)", file=sys.stderr)
        result = _fit(tensor, _fit_settings(rope, greater_is_better, prior, chains, draws, threshold, seed,
                                             backend, sensitivity))
    except BaseException as exc:
        if run_id is not None:
            runlog.fail_run(client, run_id, exc)
        raise
    outcome = ComparisonOutcome(result, tensor, metric, ids, layout=collected.layout)
    if log or run_id is not None:
        outcome.run_id = runlog.log_comparison(
            client, result, tensor, metric=metric, experiment_ids=ids, experiment_id=target_experiment_id,
            layout=collected.layout, run_id=run_id, tracking_url=server_url(client),
        )
        outcome.experiment_id = client.get_run(outcome.run_id).info.experiment_id
    return outcome


def compare_matrix(
    experiment_names: Sequence[str] = (),
    experiment_ids: Sequence[str] = (),
    *,
    metric: str,
    models: Sequence[str],
    rope: float = 0.01,
    greater_is_better: bool = True,
    folds: int | None = None,
    seed: int | None = None,
    log: bool = True,
    target_experiment_id: str | None = None,
    filter_string: str = "",
    layout: str = "auto",
    tracking_uri: str | None = None,
    drop_incomplete: bool = False,
    on_duplicate: str = "error",
    prior: str = "hierarchical",
    chains: int = 4,
    draws: int = 1000,
    threshold: float = 0.95,
    backend: str = "auto",
    model_tag: str = "model",
    dataset_tag: str = "dataset",
    progress: bool = False,
    jobs: int | None = None,
) -> MatrixOutcome:
    """Compare every pair of ``models``: one child comparison run per pair under a parent run holding the matrix
    plot of P(row better than column) and P(rope) and the ranking.  Pairs are fitted in up to ``jobs`` processes
    (default: one per CPU); the processes are spawned, so a script calling this with ``jobs`` > 1 needs the usual
    ``if __name__ == "__main__":`` guard."""
    pairs = model_pairs(models)
    client = MlflowClient(tracking_uri)
    ids = resolve_experiments(client, experiment_names, experiment_ids)
    collected = collect_scores(
        client, ids, metric, list(models), filter_string=filter_string, layout=layout,
        model_tag=model_tag, dataset_tag=dataset_tag, folds=folds, progress=progress,
    )
    tensors = {pair: _pair(collected, *pair, drop_incomplete, on_duplicate) for pair in pairs}
    settings = _fit_settings(rope, greater_is_better, prior, chains, draws, threshold, seed, backend, False)
    if progress:
        print(f"bayescompare: sampling {len(pairs)} pairs ({chains} chains x {draws} draws each)", file=sys.stderr)
    results = _fit_all(tensors, settings, jobs)
    outcomes = {
        pair: ComparisonOutcome(results[pair], tensors[pair], metric, ids, layout=collected.layout)
        for pair in pairs
    }
    summary = summarise(results, models, metric)
    matrix = MatrixOutcome([str(m) for m in models], outcomes, summary)
    if log:
        parent_id, child_ids = runlog.log_matrix(
            client, summary, [(results[p], tensors[p]) for p in pairs], metric=metric, experiment_ids=ids,
            experiment_id=target_experiment_id, layout=collected.layout, tracking_url=server_url(client),
        )
        matrix.run_id = parent_id
        matrix.experiment_id = client.get_run(parent_id).info.experiment_id
        for pair, child_id in zip(pairs, child_ids):
            outcomes[pair].run_id, outcomes[pair].experiment_id = child_id, matrix.experiment_id
    return matrix


def require(outcome, claim: str = "a-better", threshold: float = 0.95) -> bool:
    """Does the posterior support ``claim`` about model A at ``threshold``?

    ``a-better``: P(A better) ≥ threshold; ``not-worse``: P(A better) + P(rope) ≥ threshold;
    ``equivalent``: P(rope) ≥ threshold.  ``outcome`` is a :class:`ComparisonOutcome` or a result.
    """
    if claim not in CLAIMS:
        raise InputError(f"unknown claim {claim!r}: choose one of {', '.join(CLAIMS)}")
    if not 0 < threshold <= 1:
        raise InputError(f"threshold must lie in (0, 1]; got {threshold}")
    return claim_probability(outcome, claim) >= threshold


def claim_probability(outcome, claim: str) -> float:
    """The posterior probability of ``claim`` (see :func:`require`)."""
    return {
        "a-better": outcome.p_a_better,
        "not-worse": outcome.p_a_better + outcome.p_rope,
        "equivalent": outcome.p_rope,
    }[claim]


def server_url(client) -> str | None:
    """The tracking server's base URL when the store is a server (links in reports), else ``None``."""
    uri = str(client.tracking_uri)
    return uri.rstrip("/") if uri.startswith(("http://", "https://")) else None


def run_url_path(experiment_id: str, run_id: str) -> str:
    """The MLflow UI's (hash-routed) path of a run."""
    return f"#/experiments/{experiment_id}/runs/{run_id}"


# ------------------------------------------------------------------------------------------------------ steps


def _pair(collected, model_a, model_b, drop_incomplete, on_duplicate) -> CVTensor:
    """Tensor step: pair the two models' folds by (dataset, repeat, fold)."""
    return collected.tensor(model_a, model_b, drop_incomplete=drop_incomplete, on_duplicate=on_duplicate)


def _fit_settings(rope, greater_is_better, prior, chains, draws, threshold, seed, backend, sensitivity) -> dict:
    return dict(rope=rope, greater_is_better=greater_is_better, prior=prior, chains=chains, draws=draws,
                threshold=threshold, seed=seed, backend=backend, sensitivity=sensitivity)


def _fit(tensor: CVTensor, settings: dict):
    """Fit step: the hierarchical test on one pair."""
    return hierarchical_test(tensor, **settings)


def _fit_all(tensors: dict, settings: dict, jobs: int | None) -> dict:
    """Fit every pair, in parallel processes when more than one job is allowed.  Each process compiles (or loads
    from the on-disk cache) the Stan model once."""
    workers = max(1, min(jobs or os.cpu_count() or 1, os.cpu_count() or 1, len(tensors)))
    if workers == 1:
        return {pair: _fit(tensor, settings) for pair, tensor in tensors.items()}
    context = multiprocessing.get_context("spawn")  # Stan's backends do not survive a fork of a used process
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init)
    try:
        with _ctrl_c_ignored_by_new_workers():
            futures = {pair: pool.submit(_fit, tensor, settings) for pair, tensor in tensors.items()}
        results = {pair: future.result() for pair, future in futures.items()}
    except BaseException:  # Ctrl-C or a failed pair: stop the other fits now instead of running them to the end
        _abandon(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _abandon(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and SIGTERM the workers (each kills its pystan sampler processes first)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(10)


@contextlib.contextmanager
def _ctrl_c_ignored_by_new_workers():
    """Ignore SIGINT while the pool spawns its workers (``submit`` starts them): a spawned process inherits the
    ignored signal and Python then installs no KeyboardInterrupt handler, so a Ctrl-C that arrives while a worker is
    still importing cannot make it print a traceback.  :func:`_worker_init` keeps it ignored; Ctrl-C is the
    parent's.  Only the main thread can change signal handlers; elsewhere this does nothing."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:  # None: set outside Python
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_init() -> None:
    """Start-up of a pool worker.  pystan samples in its own (forked) process pool; a multiprocessing child joins
    its non-daemon children when it exits, and nothing else would stop that pool, so the worker would hang.
    A finalizer that runs before the join shuts it down.  Ctrl-C is the parent's to handle (it stops the workers
    with SIGTERM, see :func:`_abandon`), so workers ignore SIGINT, as pystan's own sampler processes do."""
    multiprocessing.util.Finalize(None, _stop_pystan_pool, exitpriority=100)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_terminate)


def _worker_terminate(signum, frame) -> None:
    from .fit import _stop_pystan_workers

    _stop_pystan_workers()
    os._exit(128 + signum)


def _stop_pystan_pool() -> None:
    services = sys.modules.get("httpstan.services_stub")
    if services is not None:
        services.executor.shutdown(wait=True)


def _nested(frame) -> dict:
    """``{row: {column: value}}`` with ``None`` on the diagonal."""
    return frame.astype(object).where(frame.notna(), None).to_dict(orient="index")


def _stage(client, run_id: str | None, stage: str) -> None:
    if run_id is not None:
        runlog.set_stage(client, run_id, stage)
