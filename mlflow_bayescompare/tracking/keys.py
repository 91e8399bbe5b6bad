"""Metric and param keys derived from names (a ranking's ``p_best.<model>``), built in this one place.

MLflow refuses many names as parts of a key: a model called ``https://host/a`` or ``b/../c`` would make the
ranking's ``log_batch`` fail after the work is done.  :func:`named_keys` gives every name a key MLflow's own
validator accepts (:func:`.mlflow_internals.is_valid_key`), distinct for distinct names, and readable.  A name of
letters, digits and ``_-. `` keeps itself as the key (unless MLflow refuses it, e.g. for its length); any other has
every other character replaced by ``_`` (also ``/``, which MLflow's UI reads as a folder, and ``:``, which MLflow
refuses on Windows) and a digest of the name appended, so that two names which read alike (``a/b``, ``a:b``) never
share a key.  Such a key holds only those characters, which MLflow takes on every platform.  A run lists its keys
and their names in :data:`KEYS_ARTIFACT`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH

from .mlflow_internals import is_valid_key

__all__ = ["KEYS_ARTIFACT", "named_keys", "metric_key", "split_metric_key"]

#: the artifact of a run that maps each key derived from a name back to it: ``{key: name}``
KEYS_ARTIFACT = "metric_keys.json"
_DIGITS = 12  # hex digits of a name's SHA-256 in its key, when the name is not the key as it is


def named_keys(prefix: str, names: Iterable[str]) -> dict[str, str]:
    """name -> its key: ``<prefix>.<name>``, or ``<prefix>.<readable name>-<digest>`` when the name is not readable
    as it is, MLflow would refuse the plain key, or another name's key is the same (see the module's docstring).
    The keys do not depend on the order of the names."""
    names = list(dict.fromkeys(str(n) for n in names))
    digested = {n for n in names if _readable(n) != n}
    while True:
        keys = {n: _key(prefix, n, n in digested) for n in names}
        counts = Counter(keys.values())
        clashing = {n for n, key in keys.items() if counts[key] > 1 or not is_valid_key(key)} - digested
        if not clashing:
            return keys
        digested |= clashing


def _readable(name: str) -> str:
    """``name`` with every character but letters, digits and ``_-. `` replaced by ``_``."""
    return "".join(c if c.isalnum() or c in "_-. " else "_" for c in name)


def _key(prefix: str, name: str, digested: bool) -> str:
    if not digested:
        return f"{prefix}.{name}"
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_DIGITS]
    room = MAX_ENTITY_KEY_LENGTH - len(prefix) - len(digest) - 2
    return f"{prefix}.{_readable(name)[:room]}-{digest}"


def metric_key(metric: str, name: str) -> str:
    """A metric's own metric, param or artifact in the run of a decision on several metrics: ``accuracy/p_a_better``
    (MLflow's charts group the keys by the part before ``/``; ``metric`` is a name MLflow took as a metric key)."""
    return f"{metric}/{name}"


def split_metric_key(key: str, metrics: Iterable[str]) -> tuple[str, str] | None:
    """``(metric, name)`` of a key of :func:`metric_key` (a metric's name may hold ``/``: the longest matches), else
    None."""
    for metric in sorted(metrics, key=len, reverse=True):
        if key.startswith(metric + "/"):
            return metric, key[len(metric) + 1:]
    return None
