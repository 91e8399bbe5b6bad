"""Stop when decided (issue 41): :func:`watch_runs`, what ``mlflow-bayescompare watch`` and the server's watch jobs
call.  It reads two models' growing CV runs (or two growing evaluation runs), looks at them under a registered design
(:mod:`..sequential`) and answers ``continue``, ``a_better``, ``b_better``, ``equivalent`` or ``inconclusive`` (at
the budget), once (a pipeline calls it after each repeat or batch) or following the runs until the design decides
(``follow``).  The design is registered in a watch run at the first look, and every look is kept there
(:mod:`..runs.watchrun`; one look: :mod:`.watchlook`).  What goes in and comes out: :mod:`.watchrequest`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..sequential import Design
from ..vocabulary.options import SourceOptions, WatchOptions
from ..vocabulary.progress import Progress, duration, notify
from . import watchlook
from .watchrequest import WatchOutcome, WatchRequest, from_keywords
from .work import begin

__all__ = ["watch_runs"]


def watch_runs(experiment_names: Sequence[str] = (), experiment_ids: Sequence[str] = (), *,
               request: WatchRequest | None = None, design: Design | None = None, source: SourceOptions | None = None,
               watch: WatchOptions | None = None, log: bool = True, tracking_uri: str | None = None,
               run_id: str | None = None, progress: Progress | None = None, can_read=None,
               **options) -> WatchOutcome:
    """Look at two models' growing runs under a registered design and answer (the module's docstring).

    The sources: for ``test="correlated-t"`` the CV runs of ``model_a`` and ``model_b`` on one ``dataset`` in the
    given experiments, as :func:`~.compare.compare_runs` reads them (``metric``, ``model_key`` …: fields of
    :class:`~..vocabulary.options.SourceOptions`); for ``eval-binary``/``eval-continuous`` the evaluation runs
    ``run_a`` and ``run_b`` and their ``scorer``.  ``options`` are fields of the
    :class:`~..sequential.design.Design` (``test``, ``rope``, ``threshold``, ``min_size``, ``max_size``,
    ``planning_sd`` …), of those classes and of :class:`~..vocabulary.options.WatchOptions` (``follow``,
    ``interval``, ``timeout``, ``target_experiment``); or give ``request``.  With ``log=True`` the first look
    registers the design in a watch run of the target experiment (default: the first source experiment; run A's
    for evaluation runs) with its operating characteristics, and every look is added to it; a later look under
    another design is refused naming what changed, and a source run deleted since is named.  ``run_id`` names the
    watch run to look into (the server's job).  ``progress`` hears the stages and, following, the size so far and
    the probabilities."""
    if request is None:
        request = from_keywords(experiment_names, experiment_ids, options, design, source, watch)
    client, progress, _ = begin(tracking_uri, run_id, progress)
    started, registered = time.monotonic(), None
    while True:
        outcome = watchlook.look_once(client, request, log=log, run_id=run_id, progress=progress,
                                      can_read=can_read)
        outcome.seconds = time.monotonic() - started
        registered = outcome if outcome.registered else registered
        if registered is not None:  # following: the look that registered the design says so in the last one too
            outcome.registered, outcome.operating = True, registered.operating
        if not request.watch.follow or outcome.answer != "continue":
            return outcome
        timeout, interval = request.watch.timeout, request.watch.interval
        if timeout is not None and outcome.seconds + interval > timeout:
            outcome.notes.append(f"stopped following after {outcome.seconds:.0f} s (timeout {timeout:g} s): "
                                 "undecided so far")
            return outcome
        notify(progress, "fetching", f"{outcome.progress_line()}; next read in {interval:g} s, "
                                     f"{duration(outcome.seconds)} in all")
        time.sleep(interval)
