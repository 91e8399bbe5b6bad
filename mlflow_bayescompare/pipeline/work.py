"""What every pipeline does around its work: reach the tracking server and record its stages (:func:`begin`), and
end its RUNNING run FAILED with the reason when the work fails (:func:`failing_run`)."""

from __future__ import annotations

import contextlib
import time

from mlflow import MlflowClient

from ..reads import reach
from ..runs import runlog
from ..vocabulary.progress import Progress

__all__ = ["begin", "failing_run"]


def begin(tracking_uri: str | None, run_id: str | None, progress: Progress | None):
    """A pipeline's client (of a tracking server that answers: :func:`~..reads.reach.check_reachable`), its
    progress hook (recording the stage in ``run_id`` when given) and start time."""
    client = MlflowClient(tracking_uri)
    reach.check_reachable(client.tracking_uri)
    return client, runlog.stage_recorder(client, run_id, progress), int(time.time() * 1000)


@contextlib.contextmanager
def failing_run(client, run_id: str | None):
    """End the RUNNING ``run_id`` FAILED with the error when the work fails (nothing to do without one)."""
    try:
        yield
    except BaseException as exc:
        if run_id is not None:
            runlog.fail_if_running(client, run_id, str(exc) or type(exc).__name__)
        raise
