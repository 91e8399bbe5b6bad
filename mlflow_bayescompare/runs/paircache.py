"""The cache of a matrix's pairs, kept in the tracking server: every matrix run holds its pairs table
(``pairs.parquet``, :class:`~.matrix.PairRow` records), each row keyed by a content hash of what decided it
(:func:`pair_key`) and signed for its requester (:mod:`.cachekey`); a later matrix in the same target experiment
reads back the tables of the runs that hold its requester's cache (:func:`read`), takes the rows whose signature is
the requester's and whose child run is that run's, and of those only the rows that answer the pair they are read for
(:func:`mismatch`: names, test, settings, probabilities, verdict), and fits the rest.  Nothing is kept on the disk of
the machine that ran it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..families import pair_test
from ..reads.identify import search_runs
from ..sampling import programs
from ..shared.posterior_summary import decide, verdict_opening
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.console import log
from ..vocabulary.outcomes import counted
from ..vocabulary.versions import versions
from .bundle import PAIRS_TABLE
from .cachekey import Signer
from .matrix import PairRow

__all__ = ["pair_key", "read", "mismatch", "MAX_RUNS"]

MAX_RUNS = 20  # the latest matrix runs whose tables are read: each holds every pair it had, fitted or read
_FORMAT = "pair-key-1"  # changes when the key's recipe does


def pair_key(data: Any, test: str, fit) -> str:
    """The hash of what decides a pair's result: its data (the paired scores, dataset names and fold counts; not
    the runs they came from), the test, the options (``fit``, seed included), the Stan program the test samples
    and this package's version."""
    digest = hashlib.sha256()
    name = pair_test(test).program
    program = programs.program_code(name) if name else ""
    for part in (_FORMAT, versions().get("mlflow-bayescompare", ""), test, program, fit.to_dict(), data):
        _feed(digest, part)
    return digest.hexdigest()


def read(client, experiment_id: str, signer: Signer) -> dict[str, PairRow]:
    """The rows of the pairs tables of the latest :data:`MAX_RUNS` FINISHED matrix runs of ``experiment_id`` that
    hold ``signer``'s cache (tag :data:`~..vocabulary.tags.CACHE_FOR`), by key (a newer run's row first), each
    marked ``cached``: only rows signed by ``signer`` whose child run (if any) is one of that run's.  A run that
    claims the requester's cache but holds other rows (forged, or altered since) is named in a warning."""
    runs = client.search_runs([experiment_id], max_results=MAX_RUNS, order_by=["attributes.start_time DESC"],
                              filter_string=f"tags.`{T.KIND}` = 'matrix' and tags.`{T.PAIRS_TABLE}` = "
                                            f"'{PAIRS_TABLE}' and tags.`{T.CACHE_FOR}` = '{signer.fingerprint}' "
                                            "and attributes.status = 'FINISHED'")
    rows: dict[str, PairRow] = {}
    with tempfile.TemporaryDirectory(prefix="bayescompare-cache-") as folder:
        for run in runs:
            path = mlflow_internals.download_artifact(client, PAIRS_TABLE, str(Path(folder) / run.info.run_id),
                                                      run_id=run.info.run_id)
            records = pd.read_parquet(path).to_dict(orient="records")
            children = _children(client, experiment_id, run.info.run_id) \
                if any(isinstance(record.get("run_id"), str) for record in records) else set()
            refused: dict[str, int] = {}
            for record in records:
                row, problem = _verified(record, signer, children)
                if row is None:
                    refused[problem] = refused.get(problem, 0) + 1
                else:
                    rows.setdefault(row.key, dataclasses.replace(row, cached=True))
            if refused:
                log.warning("matrix run %s is tagged as holding your pair cache, but %d of its %s are not taken "
                            "(%s): not read from it", run.info.run_id,
                            sum(refused.values()), counted(len(records), "row"),
                            ", ".join(f"{n} {why}" for why, n in refused.items()))
    return rows


def mismatch(row: PairRow, pair: tuple[str, str], test: str, fit) -> str | None:
    """Why ``row`` (of the cache, under the pair's key) does not answer ``pair`` as ``test`` with the options
    ``fit``, or None when it does: its names and test, the settings it records against ``fit`` (those ``fit``
    gives), probabilities in [0, 1] summing to 1, and a decision and verdict that follow from them by the decision
    rule (:func:`~..shared.posterior_summary.decide`)."""
    if (row.model_a, row.model_b) != tuple(pair) or row.test != test:
        return "names another pair or test"
    given = {name: getattr(fit, name, None) for name in _SETTINGS}
    if any(name in row.settings and value is not None and row.settings[name] != json.loads(json.dumps(value))
           for name, value in given.items()):
        return "was fitted with other settings"
    probs = {"a_better": row.p_a_better, "rope": row.p_rope, "b_better": row.p_b_better}
    if not all(math.isfinite(p) and 0 <= p <= 1 for p in probs.values()) or abs(sum(probs.values()) - 1) > 1e-6:
        return "holds probabilities that are not a distribution"
    if row.decision != decide(probs, fit.threshold) \
            or not row.verdict.startswith(verdict_opening(probs, row.model_a, row.model_b, fit.threshold)):
        return "holds a verdict its probabilities do not give"
    return None


#: the options a pair's settings record as given (a seed or a warm-up not given is drawn, or chosen, by the fit)
_SETTINGS = ("rope", "greater_is_better", "threshold", "seed", "chains", "draws", "prior")


def _verified(record: dict, signer: Signer, children: set[str]) -> tuple[PairRow | None, str]:
    """The row of a pairs table's ``record`` when ``signer`` signed it and its child run is one of ``children``;
    else None and why."""
    try:
        row = PairRow.from_record(record)
    except (KeyError, TypeError, ValueError):
        return None, "unreadable"
    if not signer.signed(row, record.get("signature")):
        return None, "not signed for you: forged, or altered since"
    if row.run_id is not None and row.run_id not in children:
        return None, "whose child run is gone"
    return row, ""


def _children(client, experiment_id: str, run_id: str) -> set[str]:
    """The ids of the FINISHED child runs of ``run_id``, in ``experiment_id``."""
    return {r.info.run_id for r in search_runs(client, [experiment_id], f"tags.`{T.PARENT}` = '{run_id}' and "
                                                                         "attributes.status = 'FINISHED'")}


def _feed(digest, value: Any) -> None:
    """Feed ``value`` to ``digest`` in a form that names its type and shape, so that different values never feed
    the same bytes; a dataclass's ``table`` (the source rows, with run ids and times) is left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(type(value).__name__.encode())
        for f in dataclasses.fields(value):
            if f.name != "table":
                _feed(digest, f.name)
                _feed(digest, getattr(value, f.name))
    elif isinstance(value, np.ndarray):
        digest.update(f"array{value.dtype.str}{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict):
        digest.update(f"dict{len(value)}".encode())
        for key in sorted(value, key=str):
            _feed(digest, str(key))
            _feed(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    else:
        digest.update(f"{type(value).__name__}:{value!r};".encode())
