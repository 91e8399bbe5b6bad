"""The pairs of a matrix (:func:`~.compare.compare_matrix`) and the two-model fit they share with a comparison: each
pair read from the cache of earlier matrices (:mod:`..runs.paircache`) or fitted by the engine chosen in
:func:`engine` (worker processes on this machine, :mod:`..sampling.workers`, or a Ray cluster,
:mod:`..sampling.ray_engine`), then logged (:func:`log_family`) as child runs under the parent, or only in the
parent's pairs table."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..families import PAIR_TESTS
from ..families import pair_test as family
from ..runs import paircache, runlog
from ..runs.bundle import cached_pair_bundle, write_pairs_table
from ..runs.cachekey import Signer
from ..runs.matrix import PairRow
from ..sampling import ray_engine, workers
from ..scores.tensor import left_out_note
from ..vocabulary.console import log
from ..vocabulary.options import FitOptions, MatrixOptions
from ..vocabulary.outcomes import counted
from ..vocabulary.progress import Progress, notify
from ..vocabulary.tags import CACHE_FOR

__all__ = ["PairWork", "Fitted", "pair_test", "pair_bundle", "engine", "fit_all", "cached_rows", "log_family"]


@dataclass(frozen=True)
class PairWork:
    """What every pair of a matrix is fitted and reported with: ``report`` (figures, HTML report, model check),
    ``slim`` (only its :class:`~..runs.matrix.PairRow` comes back: no child run will be logged), ``shipped`` (its run's
    artifacts come back as bytes: the worker is on another machine)."""

    fit: FitOptions
    metric: str
    experiment_ids: tuple[str, ...]
    layout: str
    report: bool = False
    slim: bool = False
    shipped: bool = False


@dataclass
class Fitted:
    """Every pair's result (a test's result, or the :class:`~..runs.matrix.PairRow` of a slim or cached pair), its row,
    and the bundle of its child run (for the pairs fitted to be logged)."""

    results: dict[tuple[str, str], Any]
    rows: dict[tuple[str, str], PairRow]
    bundles: dict[tuple[str, str], Any]

    @property
    def cached(self) -> int:
        return sum(row.cached for row in self.rows.values())


def pair_test(data, test: str, fit: FitOptions, progress: Progress | None = None, *, matrix_pair: bool = False,
              model_check: bool = True):
    """Fit step of a pair by ``test`` (the pre-flight's choice): its family's fit step (its row of the family table)
    on the data the pre-flight built for it, with the model check of a test that has one unless
    ``model_check=False``, and a ``matrix_pair``'s warm-up."""
    result = family(test).part("fit")(data, fit, progress, matrix_pair=matrix_pair, model_check=model_check)
    return _noting_left_out(result, data)


def _noting_left_out(result, data):
    """``result`` with the datasets its pair left out (:attr:`~..scores.tensor.CVTensor.left_out`) in its settings
    (the run's param and tag) and its warnings (the reports)."""
    if data.left_out:
        result.settings["datasets_left_out"] = dict(data.left_out)
        result.diagnostics.setdefault("warnings", []).append(left_out_note(data.left_out, data.datasets))
    return result


def pair_bundle(result, data, metric: str, ids, layout: str, *, run_id: str | None = None,
                experiment_id: str | None = None, directory: Path | None = None, figures: bool = True):
    """Report step of a comparison: the run of whichever test answered (its family's run writer), to be logged in
    ``experiment_id`` (as ``run_id`` when that run exists), its artifacts written into ``directory`` (default: a
    temporary one); ``figures=False`` for a matrix's pair run without figures and HTML report."""
    return family(result.test).part("run")(result, data, metric=metric, experiment_ids=ids, layout=layout,
                                           run_id=run_id, experiment_id=experiment_id, directory=directory,
                                           figures=figures)


@contextlib.contextmanager
def engine(how: MatrixOptions, jobs: int | None, pairs: int, progress: Progress | None) -> Iterator[Callable]:
    """The engine ``how`` names, started for ``pairs`` pairs (up to ``jobs`` at once), as its ``run_all`` bound to
    its workers; a single pair is fitted here, even when a Ray cluster was asked for (it would only add the
    cluster's start-up), and the log says so.  The workers start up while the caller goes on."""
    if how.engine == "ray" and pairs > 1:
        with ray_engine.started(jobs, pairs, _warm_up, address=how.ray_address, progress=progress) as cluster:
            yield functools.partial(ray_engine.run_all, pool=cluster)
        return
    if how.engine == "ray":
        log.info("one pair: fitted in this process, not on the Ray cluster")
    with workers.started(jobs, pairs, warm_up=_warm_up) as pool:
        yield functools.partial(workers.run_all, pool=pool)


def cached_rows(client, target: str | None, how: MatrixOptions, signer: Signer | None) -> dict[str, PairRow]:
    """The rows of the cache (earlier matrices' pairs tables in ``target`` signed by ``signer``), none with
    ``refresh``, no target or no signer."""
    if how.refresh or target is None or signer is None:
        return {}
    return paircache.read(client, target, signer)


def fit_all(run_all: Callable, checked, work: PairWork, cache: dict[str, PairRow], folder: Path | None,
            progress: Progress | None) -> Fitted:
    """Every pair of ``checked`` (the pre-flight's): read from ``cache`` when its key is there, else fitted by
    ``run_all`` (:func:`engine`), with its child run's bundle written into ``folder`` (None: no child runs).  With
    an empty cache the pairs go to the workers as the pre-flight builds them; else every pair is built first, to
    count what is left to fit."""
    keys: dict = {}
    hits: dict = {}
    refused: list[str] = []

    def tasks(built):
        for i, (pair, data) in enumerate(built):
            keys[pair] = paircache.pair_key(data, checked.tests[pair], work.fit)
            row = cache.get(keys[pair])
            problem = None if row is None else paircache.mismatch(row, pair, checked.tests[pair], work.fit)
            if row is not None and problem is None:
                hits[pair] = row
                continue
            if problem is not None:
                refused.append(f"{pair[0]} vs {pair[1]}: its cached row {problem}")
            yield pair, (data, checked.tests[pair], None if folder is None else folder / str(i), work)

    if not cache:
        fitted = run_all(fit_pair, tasks(checked.pairs()), total=len(checked.plan.pairs), progress=progress)
        return _gathered(checked.plan.pairs, fitted, hits, keys, folder, work)
    todo = list(tasks(checked.pairs()))
    if refused:
        log.warning("not read from the cache, fitted again: %s", "; ".join(refused))
    log.info("%s of %d read from the cache of earlier matrices (--refresh fits them again); %s to fit",
             counted(len(hits), "pair"), len(checked.plan.pairs), counted(len(todo), "pair"))
    fitted = run_all(fit_pair, todo, total=len(todo), progress=progress)
    return _gathered(checked.plan.pairs, fitted, hits, keys, folder, work)


def fit_pair(data, test: str, folder: Path | None, work: PairWork):
    """One pair, in a worker: its test (the pre-flight's choice, on the data it built for the pair) and, when it
    will be logged as a child run (``folder``), that run's bundle; a ``slim`` pair gives its row alone."""
    result = pair_test(data, test, work.fit, matrix_pair=True, model_check=work.report)
    if work.slim:
        return PairRow.of(result), None
    if folder is None:
        return result, None
    bundle = pair_bundle(result, data, work.metric, work.experiment_ids, work.layout,
                         directory=None if work.shipped else folder, figures=work.report)
    return result, bundle.packed() if work.shipped else bundle


def log_family(client, parent, fitted: Fitted, target: str, run_id: str | None, started: int,
               progress: Progress | None, signer: Signer | None, datasets=()) -> str:
    """Log the child runs of the pairs fitted with a bundle under the parent (created now, unless it is the
    RUNNING ``run_id``), then the parent's own bundle with the pairs table (each row naming its child run, and
    signed by ``signer`` for the cache of its requester, whose fingerprint the parent carries) and ``datasets`` (the
    source runs' dataset inputs) as its inputs.  Children are written by a few threads when the store is a server.
    A failed child fails the parent."""
    if signer is not None:
        parent.tags[CACHE_FOR] = signer.fingerprint
    if run_id is None:
        run_id = runlog.start_run(client, target, name=parent.name, tags=parent.tags, stage="logging",
                                  start_time=started)
    notify(progress, "logging")
    threads = 4 if str(client.tracking_uri).startswith(("http://", "https://")) else 1
    try:
        with ThreadPoolExecutor(threads) as pool:
            children = list(fitted.bundles.items())
            ids = pool.map(lambda item: runlog.log_bundle(client, item[1], experiment_id=target,
                                                          parent_run_id=run_id, start_time=started), children)
            for (pair, _), child_id in zip(children, ids):
                fitted.rows[pair].run_id = child_id
        write_pairs_table(list(fitted.rows.values()), parent.directory, signer)
    except BaseException as exc:
        runlog.fail_run(client, run_id, exc)
        raise
    return runlog.log_bundle(client, parent, run_id=run_id, progress=progress, datasets=datasets)


def _gathered(pairs, fitted: dict, hits: dict, keys: dict, folder: Path | None, work: PairWork) -> Fitted:
    """The pairs' results, rows and bundles, in the order of ``pairs``; shipped bundles written into ``folder``, and
    there too the runs of the pairs read from the cache, so that every pair of a matrix logged with child runs has
    one under it."""
    out = Fitted({}, {}, {})
    for i, pair in enumerate(pairs):
        if pair in hits:
            out.results[pair] = out.rows[pair] = hits[pair]
            if folder is not None:
                out.bundles[pair] = cached_pair_bundle(hits[pair], metric=work.metric,
                                                       experiment_ids=work.experiment_ids, layout=work.layout,
                                                       directory=folder / str(i))
            continue
        result, bundle = fitted[pair]
        out.results[pair] = result
        out.rows[pair] = dataclasses.replace(result if isinstance(result, PairRow) else PairRow.of(result),
                                             key=keys[pair])
        if bundle is not None:
            out.bundles[pair] = bundle if hasattr(bundle, "directory") else bundle.unpacked(folder / str(i))
    return out


def _warm_up() -> None:
    """A matrix worker's first task: import every test's fit step and run writer (the families' engines, MLflow,
    arviz), while the caller is busy elsewhere."""
    for test in PAIR_TESTS.values():
        test.part("fit"), test.part("run")
