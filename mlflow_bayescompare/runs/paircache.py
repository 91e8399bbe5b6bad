"""The cache of a matrix's pairs, kept in the tracking server: every matrix run holds its pairs table
(``pairs.parquet``, :class:`~.matrix.PairRow` records), each row keyed by a content hash of what decided it
(:func:`pair_key`), and a later matrix in the same target experiment reads those tables back (:func:`read`) and fits
only the pairs whose key none of them holds.  Nothing is kept on the disk of the machine that ran it."""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..families import pair_test
from ..sampling import programs
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.versions import versions
from .bundle import PAIRS_TABLE
from .matrix import PairRow

__all__ = ["pair_key", "read", "MAX_RUNS"]

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


def read(client, experiment_id: str) -> dict[str, PairRow]:
    """The rows of the pairs tables of the latest :data:`MAX_RUNS` FINISHED matrix runs of ``experiment_id``, by
    key (a newer run's row first), each marked ``cached``."""
    runs = client.search_runs([experiment_id], max_results=MAX_RUNS, order_by=["attributes.start_time DESC"],
                              filter_string=f"tags.`{T.KIND}` = 'matrix' and tags.`{T.PAIRS_TABLE}` = "
                                            f"'{PAIRS_TABLE}' and attributes.status = 'FINISHED'")
    rows: dict[str, PairRow] = {}
    with tempfile.TemporaryDirectory(prefix="bayescompare-cache-") as folder:
        for run in runs:
            path = mlflow_internals.download_artifact(client, PAIRS_TABLE, str(Path(folder) / run.info.run_id),
                                                      run_id=run.info.run_id)
            for record in pd.read_parquet(path).to_dict(orient="records"):
                rows.setdefault(str(record["key"]), dataclasses.replace(PairRow.from_record(record), cached=True))
    return rows


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
