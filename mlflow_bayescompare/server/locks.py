"""Host-wide locks (``flock``-ed files): job slots, one sweep and one start-up compile per host.

Locks are released by the kernel when their holder dies, so a crash never leaves one taken.  Without ``fcntl``
(not POSIX) there are no host-wide locks: every try succeeds.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

__all__ = ["try_lock", "job_slot"]


@contextlib.contextmanager
def try_lock(path: Path):
    """Yield True holding the lock ``path``, or False at once when another process holds it."""
    try:
        import fcntl
    except ImportError:
        yield True
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def job_slot(state_dir: Path, slots: int, poll: float = 0.5):
    """Hold one of ``slots`` host-wide slots (files ``slot-<i>.lock`` under ``state_dir``) for the duration."""
    while True:
        for i in range(slots):
            with try_lock(state_dir / f"slot-{i}.lock") as locked:
                if locked:
                    yield i
                    return
        time.sleep(poll)
