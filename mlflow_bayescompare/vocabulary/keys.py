"""Metric and param keys derived from names (a ranking's ``p_best.<model>``), built in this one place.

MLflow refuses many names as parts of a key: a model called ``https://host/a`` or ``b/../c`` would make the
ranking's ``log_batch`` fail after the work is done.  :func:`named_keys` gives every name a key MLflow's own
validator accepts (:func:`.mlflow_internals.is_valid_key`), distinct for distinct names, and readable.  A name of
letters, digits and ``_-. `` keeps itself as the key (unless MLflow refuses it, e.g. for its length); any other has
every other character replaced by ``_`` (also ``/``, which MLflow's UI reads as a folder, and ``:``, which MLflow
refuses on Windows) and a digest of the name appended, so that two names which read alike (``a/b``, ``a:b``) never
share a key.  Such a key holds only those characters, which MLflow takes on every platform.  A run lists its keys
and their names in :data:`KEYS_ARTIFACT`.

A decision on several metrics keys each metric's values by the metric's name (:func:`metric_key`,
:func:`metric_folder`; its tags through :func:`.tags.metric_tag`), by the same rule: as they are where MLflow takes
them, else readable, cut to fit and with a digest (a metric named by 240 characters, a model's key that fills its
250).  Its run lists them in its :data:`KEYS_ARTIFACT` (:func:`..runs.several.several_metrics_bundle`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH

from .mlflow_internals import is_valid_key

__all__ = ["KEYS_ARTIFACT", "named_keys", "metric_key", "metric_folder", "joined_key"]

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
    digest = _digest(name)
    room = MAX_ENTITY_KEY_LENGTH - len(prefix) - len(digest) - 2
    return f"{prefix}.{_readable(name)[:room]}-{digest}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGITS]


def joined_key(first: str, second: str) -> str:
    """``<first>/<second>`` where MLflow takes it as a key; else both parts readable (no ``/``, no leading dot), cut
    to fit, and the digest of the whole appended: the same parts always give the same key."""
    key = f"{first}/{second}"
    if is_valid_key(key):
        return key
    digest = _digest(key)
    first, second = (_readable(part).lstrip(".") or "_" for part in (first, second))
    room = MAX_ENTITY_KEY_LENGTH - len(digest) - 1
    return f"{first[:max(room // 2, room - 1 - len(second))]}/{second}"[:room] + f"-{digest}"


def metric_key(metric: str, name: str) -> str:
    """A metric's own metric or param in the run of a decision on several metrics: ``accuracy/p_a_better``
    (MLflow's charts group the keys by the part before ``/``), by :func:`joined_key`."""
    return joined_key(metric, name)


def metric_folder(metric: str) -> str:
    """The folder of a metric's artifacts in the run of a decision on several metrics: its name where MLflow would
    take it as a key and a file system as a path (at most 255 bytes), else readable, cut, with its digest."""
    if is_valid_key(metric) and len(metric.encode("utf-8", "surrogatepass")) <= 255:
        return metric
    return f"{(_readable(metric).lstrip('.') or '_')[:50]}-{_digest(metric)}"
