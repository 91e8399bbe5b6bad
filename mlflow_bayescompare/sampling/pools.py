"""The processes of a ``concurrent.futures.ProcessPoolExecutor``: the one use of the standard library's
insides (the pool's private ``_processes`` table, in Python 3.10 to 3.14), for the callers that kill or reap a
pool's processes themselves (:mod:`.workers`, :mod:`.pystan_backend`, the server's job runner)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import BaseProcess

__all__ = ["pool_processes"]


def pool_processes(pool: ProcessPoolExecutor | None) -> dict[int, BaseProcess]:
    """The pool's live worker processes by pid, as of now (a copy); none for ``None`` or a pool not yet started."""
    return dict(getattr(pool, "_processes", None) or {})
