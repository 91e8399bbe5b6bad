"""One look of a watch (:func:`look_once`, what :func:`.watch.watch_runs` repeats): find the watch run of these
sources, refuse another design than the one registered there (naming what changed), read the sources
(:mod:`.watchsources`), refuse a source run deleted (or replaced) since an earlier look read it, look
(:func:`..sequential.look`), and keep the look in the run (:mod:`..runs.watchrun`), registering the design with its
operating characteristics at the first.

What an earlier look read is checked twice: its source runs must still be there (a deleted one is named), and the
scores of every earlier look must be the same (each row keeps a digest of the paired scores it read), so that the
path the run keeps is the path the data give.  A later look at CV runs reads only the runs that can be new or
changed, taking the others' scores from the last look (:mod:`.watchgrown`), and at evaluation runs with traces only
the traces started since (:mod:`.watchevals`); a look whose answer would be anything but ``continue`` reads every
run's history (every trace) again and looks again on those scores before it is kept or returned, so that a decision
rests on no score taken unread.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time

import numpy as np
from mlflow.exceptions import MlflowException

from ..reads.collect import resolve_experiments
from ..runs import runlog, watchrun
from ..sequential import Design, check_unchanged, look, operating_characteristics
from ..sequential.design import CV_TESTS
from ..vocabulary.console import log
from ..vocabulary.errors import InputError
from ..vocabulary.outcomes import counted
from ..vocabulary.progress import notify
from .watchevals import read_kept_evals
from .watchgrown import read_grown
from .watchhier import read_datasets, remember, stan_posterior
from .watchrequest import WatchOutcome, WatchRequest
from .watchsources import SourceRun, WatchData, read_cv

__all__ = ["look_once", "OC_REPLICATES", "OC_REPLICATES_HIERARCHICAL", "OC_SEED", "selection", "digests"]

#: the simulation of a design registered at its first look: runs per scenario and truth (fewer for
#: ``hierarchical``, whose stand-in integrates over σ0 at every look of every run: within the 10 s of issue 41), and
#: its seed
OC_REPLICATES = 4000
OC_REPLICATES_HIERARCHICAL = 1000
OC_SEED = 0
_HEADER = "Cannot look again:"


def selection(request: WatchRequest, experiment_ids: list[str]) -> dict:
    """What a watch reads, as given (the experiments resolved to ids): the same request finds the same watch run."""
    w = request.watch
    if not request.cv:
        return {"kind": "evals", "run_a": w.run_a, "run_b": w.run_b, "scorer": w.scorer, "pair_key": w.pair_key,
                "table_artifact": w.table_artifact}
    s, p = request.source, request.pair
    chosen = {"datasets": list(w.datasets)} if request.design.test == "hierarchical" else {"dataset": w.dataset}
    return {"kind": "cv", "experiment_ids": sorted(experiment_ids), "metric": s.metric, "model_a": p.model_a,
            "model_b": p.model_b, **chosen, "model_key": s.model_key, "dataset_key": s.dataset_key,
            "filter": s.filter_string, "layout": s.layout}


def look_once(client, request: WatchRequest, *, log: bool = True, run_id: str | None = None, progress=None,
              can_read=None) -> WatchOutcome:
    """One look (the module's docstring); ``run_id``: the watch run to look into (the server's job)."""
    design = request.design
    ids = _source_experiments(client, request)
    sources = watchrun.sources_hash(selection(request, ids))
    notify(progress, "fetching", "finding the watch run")
    found = _found(client, request, ids, sources, run_id) if log or run_id else None
    recorded = watchrun.read_recorded(client, found, design) if found is not None else None
    if recorded is not None:
        check_unchanged(recorded.design, design)
        if not request.cv:
            _check_sources(client, recorded, design, None)
    data = _read_checked(client, request, ids, progress, can_read, recorded, reuse=True)
    notify(progress, "reporting", f"{data.model_a} vs {data.model_b}: {_available(design, data)}")
    now = look(design, data.scores_a, data.scores_b, posterior=_posterior(design, progress))
    if data.reused and now.answer != "continue":  # no decision on a score taken unread from the last look
        notify(progress, "fetching", "verifying every source run before deciding (the scores of "
                                     f"{counted(data.reused, 'run')} were taken unread from the last look)")
        data = _read_checked(client, request, ids, progress, can_read, recorded, reuse=False)
        now = look(design, data.scores_a, data.scores_b, posterior=_posterior(design, progress))
    sizes = sorted({r.size for r in now.rows} | {r["size"] for r in (recorded.rows if recorded else [])})
    prints = digests(design, data, sizes)
    if recorded is not None:
        _check_digests(recorded, design, prints, data.runs, data.changed)
    outcome = WatchOutcome(now, design, data.model_a, data.model_b, data.measure, data.dataset, sources=data.runs,
                           notes=list(data.notes))
    if not log and run_id is None:
        outcome.notes.append("not logged: the design is not registered and this look is kept nowhere")
        return outcome
    header = watchrun.Header(data.model_a, data.model_b, data.measure, data.dataset, tuple(data.experiment_ids),
                             sources)
    return _kept(client, request, outcome, header, found, recorded, prints, progress, data)


def _source_experiments(client, request: WatchRequest) -> list[str]:
    s = request.source
    return resolve_experiments(client, s.experiment_names, s.experiment_ids) if request.cv else []


def _target(client, request: WatchRequest, ids: list[str], create: bool) -> str | None:
    """The experiment of the watch run: the target asked for, else the first source experiment (run A's for
    evaluation runs); None when it does not exist yet and ``create`` is false."""
    default = ids if request.cv else [client.get_run(request.watch.run_a).info.experiment_id]
    if create:
        return runlog.resolve_target(client, request.watch.target_experiment, default)
    return runlog.existing_target(client, request.watch.target_experiment, default)


def _found(client, request: WatchRequest, ids: list[str], sources: str, run_id: str | None):
    """The watch run of these sources: ``run_id`` (checked to be one), else the one in the target, or None."""
    if run_id is not None:
        run = client.get_run(run_id)
        if run.data.tags.get(watchrun.T.WATCH_SOURCES) != sources:
            raise InputError(f"run {run_id} is not the watch run of these sources", header=_HEADER)
        return run
    try:
        target = _target(client, request, ids, create=False)
    except MlflowException:
        return None  # run A unreadable: the read names it
    return None if target is None else watchrun.find(client, target, sources)


def _posterior(design: Design, progress):
    """The posterior of a look: the design's own (:func:`..sequential.posteriors.posterior_for`), or for
    ``hierarchical`` the Stan fit's (:func:`.watchhier.stan_posterior`)."""
    return stan_posterior(design, progress) if design.test == "hierarchical" else None


def _read_checked(client, request: WatchRequest, ids: list[str], progress, can_read, recorded,
                  reuse: bool) -> WatchData:
    """The sources' paired scores (:func:`_read`), every source run an earlier look read among them."""
    data = _read(client, request, ids, progress, can_read, recorded, reuse)
    if recorded is not None:
        _check_sources(client, recorded, request.design, {r.run_id for r in data.runs})
        if request.design.test == "hierarchical":  # its earlier looks are Stan fits: not fitted again
            remember(request.design, data.scores_a, data.scores_b, recorded.rows)
    return data


def _read(client, request: WatchRequest, ids: list[str], progress, can_read, recorded, reuse: bool) -> WatchData:
    """The sources' paired scores: several datasets' for ``hierarchical``; CV runs by what the watch run keeps
    (:mod:`.watchgrown`; ``reuse``: the scores of the runs unchanged since the last look taken from it) when it
    can, else as the first look read them."""
    if request.design.test == "hierarchical":
        return read_datasets(client, request.design, request.source, request.pair, request.watch.datasets, ids,
                             progress)
    if request.cv:
        state = recorded.state if recorded is not None else None
        if state is not None and (request.watch.dataset or state.get("dataset")) == state.get("dataset"):
            grown = read_grown(client, request.design, request.source, request.pair, ids, state,
                               recorded.reads if reuse else None, progress)
            if not isinstance(grown, str):
                return grown
            notify(progress, "fetching", f"reading the runs as at the first look: {grown}")
        return read_cv(client, request.design, request.source, request.pair, request.watch.dataset, ids, progress)
    return read_kept_evals(request.design, request.watch, recorded.reads if recorded is not None else None,
                           narrow=reuse, tracking_uri=client.tracking_uri, can_read=can_read, progress=progress)


def _available(design: Design, data: WatchData) -> str:
    group = (design.folds or 1) if design.test in CV_TESTS else 1
    return f"{counted(data.scores_a.shape[-1] // group, design.unit[:-1])} so far"


def digests(design: Design, data: WatchData, sizes) -> dict[int, str]:
    """A digest of the paired scores each look of ``sizes`` reads (the first size × folds scores, of every dataset
    for ``hierarchical``, or items), for the sizes the data hold: sha256 of both score vectors' float64 bytes, taken
    cumulatively (one pass)."""
    group = (design.folds or 1) if design.test in CV_TESTS else 1
    pairs = np.stack([data.scores_a, data.scores_b], axis=-1).astype(np.float64)  # (…, scores, 2)
    hasher, done, out = hashlib.sha256(), 0, {}
    for size in sizes:
        end = size * group
        if end > pairs.shape[-2]:
            break
        hasher.update(np.ascontiguousarray(pairs[..., done:end, :]).tobytes())
        done, out[size] = end, hasher.copy().hexdigest()[:16]
    return out


def _check_sources(client, recorded, design: Design, present: set[str] | None) -> None:
    """Every source run an earlier look read must still be read: one deleted (or gone, or no longer selected) since
    is named, with the looks that read it.  ``present``: the run ids read now (None: ask MLflow about each)."""
    problems = []
    for source in recorded.sources:
        if present is not None and source["run_id"] in present:
            continue
        state = _state(client, source["run_id"])
        if state == "active" and present is None:
            continue
        why = {"deleted": "was deleted", "gone": "no longer exists"}.get(
            state, "is no longer among the runs read (its tags, the filter or its experiment changed)")
        problems.append(f"source run {source['run_id']} (side {source['side']}, {source['name']}: {source['read']}) "
                        f"{why} since an earlier look read it")
    if problems:
        raise InputError(problems, header=f"{_HEADER} the looks already made ({_last(recorded, design)}) read runs "
                                          "that changed:",
                         footer=["Restore the run (mlflow runs restore --run-id …), or start a new watch (another "
                                 "target experiment)."])


def _state(client, run_id: str) -> str:
    try:
        return client.get_run(run_id).info.lifecycle_stage
    except MlflowException:
        return "gone"


def _check_digests(recorded, design: Design, now: dict[int, str], runs: list[SourceRun], changed: list[str]) -> None:
    """The scores each earlier look read must be those the runs give now: the first look whose scores differ names
    the source runs that hold the repeats it read beyond the look before (CV runs), or the ``changed`` evaluation
    runs (whose earlier traces are not as the last look kept them)."""
    problems, before = [], 0
    for row in recorded.rows:
        size = row["size"]
        if size not in now:
            problems.append(f"the look at {size} {design.unit} read {size}; the runs now hold fewer")
        elif row.get("digest") and row["digest"] != now[size]:
            held = "" if problems else _holding(runs, before, size, changed)
            problems.append(f"the scores of the first {size} {design.unit} differ from those the look at {size} "
                            f"read (a source run was changed, replaced or reordered{held})")
        before = size
    if problems:
        raise InputError(problems[:5], header=f"{_HEADER} the data of earlier looks changed:",
                         footer=["Start a new watch (another target experiment) to look at these data."])


def _holding(runs: list[SourceRun], after: int, upto: int, changed: list[str]) -> str:
    """``: source run … (side A, rf: repeat 3), …``: the CV source runs holding repeats ``after`` + 1 … ``upto``;
    ``: earlier traces changed in source run … (side A, prompt-A: …)``: the evaluation runs ``changed``."""
    traced = [r for r in runs if r.run_id in changed]
    if traced:
        return ": earlier traces changed in " + ", ".join(f"source run {r.run_id} (side {r.side}, {r.name})"
                                                          for r in traced)
    held = [r for r in runs if r.read.startswith("repeat") and _overlaps(r.read, after, upto)]
    return (": " + ", ".join(f"source run {r.run_id} (side {r.side}, {r.name}: {r.read})" for r in held)
            + " or the runs before them") if held else ""


def _overlaps(read: str, after: int, upto: int) -> bool:
    """Do the repeats ``read`` (``repeat 3``, ``repeats 3-5``) meet repeats ``after`` + 1 … ``upto``?"""
    first, _, last = read.split(" ", 1)[1].partition("-")
    return int(first) <= upto and int(last or first) > after


def _last(recorded, design: Design) -> str:
    return f"the last at {recorded.rows[-1]['size']} {design.unit}" if recorded.rows else "none yet"


def _kept(client, request: WatchRequest, outcome: WatchOutcome, header, found, recorded, prints: dict[int, str],
          progress, data: WatchData) -> WatchOutcome:
    """The look kept in the watch run (with ``data``'s state and reads, what the next look reads by): the design
    registered first
    when it is not yet (with its operating characteristics); the run ends FAILED, with the error, if writing the
    look fails."""
    design = request.design
    if recorded is None:
        operating = _simulate(design, progress)
        experiment_id = found.info.experiment_id if found is not None else \
            _target(client, request, list(header.source_experiments), create=True)
        run_id = watchrun.register(client, experiment_id, header, design, operating,
                                   start_time=int(time.time() * 1000),
                                   run_id=None if found is None else found.info.run_id)
        rows, status, outcome.registered = [], "RUNNING", True
    else:
        experiment_id, operating, run_id = found.info.experiment_id, recorded.operating, recorded.run_id
        rows, status = recorded.rows, recorded.status
    outcome.run_id, outcome.experiment_id, outcome.operating = run_id, experiment_id, operating
    if status != "RUNNING":  # the design has answered already: later data are not read
        outcome.rows = rows
        return outcome
    notify(progress, "logging", outcome.progress_line())
    try:
        outcome.rows = watchrun.log_looks(client, run_id, header, design, outcome.look, rows,
                                          [dataclasses.asdict(r) for r in outcome.sources], operating, prints,
                                          data.state, None if recorded is None else found.data.tags,
                                          reads=data.reads)
    except BaseException as exc:
        runlog.fail_if_running(client, run_id, f"logging a look failed: {type(exc).__name__}: {exc}")
        raise
    return outcome


def _simulate(design: Design, progress) -> dict:
    """The design's operating characteristics (:func:`..sequential.operating_characteristics`), their sentences
    among them; a design whose false-decision rate exceeds its nominal level is said plainly, with the threshold
    that meets it."""
    clear = 2 * design.rope
    widest = design.planning_sd**2 if design.test == "eval-binary" else design.half_range
    if clear >= widest:  # pass rates cannot differ by more than the share of items the models disagree on
        clear = (design.rope + widest) / 2
    replicates = OC_REPLICATES_HIERARCHICAL if design.test == "hierarchical" else OC_REPLICATES
    notify(progress, "sampling", f"simulating the design: {replicates} runs per scenario and truth")
    oc = operating_characteristics(design, replicates=replicates, seed=OC_SEED, clear=clear)
    if oc.exceeds:
        offer = (f"threshold {oc.offered_threshold:.4g} keeps it: register the design with it" if
                 oc.offered_threshold is not None else "no threshold of the grid keeps it: look less often, or "
                 "widen the rope")
        log.warning("the design's simulated false-decision rate %.3f exceeds its nominal %g under this stopping "
                    "rule; %s", oc.false_decision, design.nominal_error, offer)
    return {**oc.to_dict(), "lines": oc.lines()}
