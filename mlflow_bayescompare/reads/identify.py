"""Find the runs that hold scores and name each one's model and dataset by the keys of :mod:`..vocabulary.runkey`: a
tag, a param, the run name, the run's dataset inputs (named by dataset name, told apart by digest) or its logged model.

With the default keys (``tag:model``, ``tag:dataset``) and no run carrying such a tag, the runs are looked at: their
dataset inputs name the datasets, and a param that every run carries and that varies within a dataset names the
models.  What was used is said; when nothing fits, what the runs carry is listed.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException

from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.console import log, redact_uri
from ..vocabulary.errors import BayesCompareError, InputError
from ..vocabulary.progress import Progress, notify
from ..vocabulary.runkey import RunKey

__all__ = ["Identified", "identify", "search_runs", "top_level", "is_comparison", "guard", "unreachable",
           "and_clauses", "PAGE", "MODEL_PARAMS"]

PAGE = 10_000
#: params that name a model, preferred when several params vary across the runs
MODEL_PARAMS = ("model", "model_name", "model_type", "estimator", "estimator_name", "classifier", "regressor",
                "algorithm", "algo", "learner")
#: params of the cross-validation itself, never a model's name
_CV_PARAMS = ("cv_folds", "cv_repeats")
#: the contexts of a run's dataset inputs that name the dataset it was trained on, when it has several
_TRAINING_CONTEXTS = ("training", "train")
_SHOWN = 5


@dataclass
class Identified:
    """The source runs (top level, not the package's own) with a model and a dataset under the keys used
    (``model_key``, ``dataset_key``: those given, or those detected), their names by run id, and what was said
    about them (``notes``: the keys detected, dataset names that collide)."""

    runs: list
    models: dict[str, str]
    datasets: dict[str, str]
    model_key: RunKey
    dataset_key: RunKey
    notes: list[str] = field(default_factory=list)

    def model(self, run) -> str:
        return self.models[run.info.run_id]

    def dataset(self, run) -> str:
        return self.datasets[run.info.run_id]


def identify(client, experiment_ids: list[str], model_key: RunKey, dataset_key: RunKey, *,
             models: list[str] | None = None, filter_string: str = "",
             progress: Progress | None = None, warn: bool = True) -> Identified:
    """The runs of ``models`` (every model when None) in the experiments, named by the keys (detected when a
    default key's tag is on no run, see the module's docstring).  Runs whose model is known but not their dataset,
    and dataset inputs a run cannot be told by, are errors that name the runs.  The notes (the keys detected,
    colliding dataset names) are logged as warnings unless ``warn=False`` (a look that the collect will repeat)."""
    model_key, dataset_key, notes = _keys(client, experiment_ids, model_key, dataset_key, filter_string)
    runs = top_level([r for r in _model_runs(client, experiment_ids, model_key, models, filter_string, progress)
                      if not is_comparison(r)])
    names = _model_names(client, experiment_ids, runs, model_key)
    runs = [r for r in runs if names.get(r.info.run_id) is not None
            and (models is None or names[r.info.run_id] in models)]
    datasets, problems, collide = _dataset_names(runs, dataset_key)
    lacking = [r.info.run_id for r in runs if r.info.run_id not in datasets and r.info.run_id not in problems]
    if model_key.kind == "run-name":  # every run has a name: those without a dataset are other runs
        runs, lacking = [r for r in runs if r.info.run_id not in lacking], []
    listed = [problems[r.info.run_id] for r in runs if r.info.run_id in problems][:_SHOWN]
    if lacking:
        listed.append(f"{len(lacking)} run(s) have {model_key.described} but no {dataset_key.described} (e.g. "
                      f"{', '.join(lacking[:_SHOWN])}); {_fix(dataset_key)} or filter them out")
    if listed:
        raise InputError(listed, header="Cannot collect scores:")
    for note in (notes + collide) if warn else ():
        log.warning("%s", note)
    return Identified(runs, {r.info.run_id: names[r.info.run_id] for r in runs}, datasets, model_key, dataset_key,
                      notes + collide)


def _fix(key: RunKey) -> str:
    return {"tag": "tag them", "param": "log the param", "input": "log their dataset (mlflow.log_input)"}.get(
        key.kind, "name them")


# ---------------------------------------------------------------------------------------------- the keys


def _keys(client, experiment_ids, model_key: RunKey, dataset_key: RunKey, filter_string: str):
    """The keys to read the runs by: those given, or, for a default key whose tag no run carries, the one the
    runs show (:func:`_detect`); and the notes saying what was detected."""
    absent = [key for key in (model_key, dataset_key) if key.is_default
              and not search_runs(client, experiment_ids, and_clauses(filter_string, key.present_clause()), limit=1)]
    if not absent:
        return model_key, dataset_key, []
    runs = top_level([r for r in search_runs(client, experiment_ids, filter_string) if not is_comparison(r)])
    if not runs:  # nothing to tell apart: the caller says what is missing
        return model_key, dataset_key, []
    found = {}
    for key in sorted(absent, key=lambda k: k.role != "dataset"):  # the dataset first: the model's param varies in it
        found[key.role] = _detect(runs, key, found.get("dataset", (None,))[0] or dataset_key)
    problems = [problem for key, problem in found.values() if problem]
    if problems:
        raise InputError(problems, header="Cannot tell the runs apart:")
    keys = {"model": model_key, "dataset": dataset_key, **{role: key for role, (key, _) in found.items()}}
    said = " and ".join(f"{found[role][0].described} for the {role} (--{role}-key {found[role][0]})"
                        for role in ("model", "dataset") if role in found)
    note = f"no run carries {' or '.join(k.described for k in absent)}: the runs are read by {said}"
    return keys["model"], keys["dataset"], [note]


def _detect(runs, key: RunKey, dataset_key: RunKey) -> tuple[RunKey | None, str | None]:
    """The key the runs show for ``key``'s role, or what they carry and a request for a key."""
    if key.role == "dataset":
        if any(r.inputs.dataset_inputs for r in runs if r.inputs is not None):
            return RunKey("dataset", "input"), None
        return None, _ask(runs, key, "no run has dataset inputs (mlflow.log_input) either")
    varying = _varying_params(runs, _training_input if dataset_key.kind == "input" else dataset_key.read)
    known = [p for p in varying if p.lower() in MODEL_PARAMS]
    chosen = varying if len(varying) == 1 else known if len(known) == 1 else []
    if chosen:
        return RunKey("model", "param", chosen[0]), None
    why = (f"several params vary across the runs ({', '.join(varying)})" if varying else
           "no param that every run carries varies across them")
    return None, _ask(runs, key, why)


def _varying_params(runs, dataset_of) -> list[str]:
    """Params every run carries, with several values within a dataset (``dataset_of(run)``: a dataset's own
    params name no model), not the cross-validation's."""
    if not runs:
        return []
    common = set.intersection(*(set(r.data.params) for r in runs)) - set(_CV_PARAMS)
    out = []
    for name in sorted(common):
        per_dataset: dict = {}
        for r in runs:
            per_dataset.setdefault(dataset_of(r), set()).add(r.data.params[name])
        if any(len(values) > 1 for values in per_dataset.values()):
            out.append(name)
    return out


def _ask(runs, key: RunKey, why: str) -> str:
    """No key found for ``key``'s role: what the runs carry, and the keys to give."""
    tags = sorted({k for r in runs for k in r.data.tags if not k.startswith(("mlflow.", "bayescompare."))})
    params = sorted({k for r in runs for k in r.data.params})
    kinds = "tag:NAME, param:NAME, run-name or " + ("logged-model" if key.role == "model" else "input")
    return (f"no run carries {key.described} for the {key.role} and {why}; the {len(runs)} run(s) carry "
            f"params: {_some(params)}; tags: {_some(tags)}. Say where the {key.role} is with --{key.role}-key "
            f"({key.role}_key): {kinds}")


def _some(names: list[str], shown: int = 20) -> str:
    return (", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")) or "none"


# ---------------------------------------------------------------------------------------------- the names


def _model_runs(client, experiment_ids, key: RunKey, models, filter_string, progress) -> list:
    """The runs carrying the model key (those of ``models`` when given, by a filter where the key has one)."""
    if models is None or any(not key.equals_clause(m) for m in models):
        return search_runs(client, experiment_ids, and_clauses(filter_string, key.present_clause()),
                           progress=progress)
    runs = [r for m in dict.fromkeys(models) for r in search_runs(
        client, experiment_ids, and_clauses(filter_string, key.equals_clause(m)), progress=progress)]
    return list({r.info.run_id: r for r in runs}.values())


def _model_names(client, experiment_ids, runs, key: RunKey) -> dict[str, str | None]:
    """run id -> its model's name under ``key`` (None when it has none; a run with several logged models of
    different names is one of them, named by the first in name order, and said)."""
    if key.kind != "logged-model":
        return {r.info.run_id: key.read(r) for r in runs}
    by_id, by_run = {}, {}
    with guard(client):
        token = None
        while True:
            page = client.search_logged_models(list(experiment_ids), max_results=100, page_token=token)
            for m in page:
                by_id[m.model_id] = m.name
                by_run.setdefault(m.source_run_id, set()).add(m.name)
            token = page.token
            if not token:
                break
    out = {}
    for r in runs:
        outputs = getattr(r, "outputs", None)
        named = by_run.get(r.info.run_id, set()) | {by_id[o.model_id] for o in getattr(outputs, "model_outputs", [])
                                                     if o.model_id in by_id}
        out[r.info.run_id] = min(named) if named else None
        if len(named) > 1:
            log.warning("run %s has logged models named %s: it is read as '%s'", r.info.run_id,
                        ", ".join(sorted(named)), min(named))
    return out


def _dataset_names(runs, key: RunKey) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """run id -> its dataset's name; run id -> why its dataset inputs name no one dataset; notes of dataset
    inputs whose names collide (two digests under one name: shown as ``name@digest``)."""
    if key.kind != "input":
        return {r.info.run_id: v for r in runs if (v := key.read(r)) is not None}, {}, []
    chosen, problems = {}, {}
    for r in runs:
        found = _training_input(r)
        if isinstance(found, str):
            problems[r.info.run_id] = found
        elif found is not None:
            chosen[r.info.run_id] = found
    digests: dict[str, set[str]] = {}
    for name, digest in chosen.values():
        digests.setdefault(name, set()).add(digest)
    collide = {name for name, ds in digests.items() if len(ds) > 1}
    notes = [f"dataset inputs named '{name}' have {len(digests[name])} digests "
             f"({', '.join(sorted(digests[name]))}): they are different datasets, named "
             f"{', '.join(f'{name}@{d}' for d in sorted(digests[name]))}" for name in sorted(collide)]
    names = {rid: f"{name}@{digest}" if name in collide else name for rid, (name, digest) in chosen.items()}
    return names, problems, notes


def _training_input(run) -> tuple[str, str] | str | None:
    """The (name, digest) of the run's one dataset input, or of the one it was trained on when it has several
    (context ``training`` or ``train``); a message when that does not decide; None without inputs."""
    inputs = list(run.inputs.dataset_inputs) if run.inputs is not None else []
    found = {(i.dataset.name, i.dataset.digest): _context(i) for i in inputs}
    if len(found) > 1:
        training = {k: c for k, c in found.items() if c in _TRAINING_CONTEXTS}
        if len(training) == 1:
            return next(iter(training))
        shown = ", ".join(f"'{n}' (digest {d}, context {c or 'none'})" for (n, d), c in sorted(found.items()))
        return (f"run {run.info.run_id} has {len(found)} dataset inputs ({shown}) and not one with context "
                f"'training' or 'train': name its dataset with --dataset-key tag:NAME or param:NAME")
    return next(iter(found), None)


def _context(dataset_input) -> str | None:
    return next((t.value for t in dataset_input.tags if t.key == mlflow_internals.DATASET_CONTEXT), None)


# ---------------------------------------------------------------------------------------------- search


def search_runs(client, experiment_ids, filter_string, limit=None, progress: Progress | None = None,
                deleted: bool = False) -> list:
    """Every run matching the filter (paged ``PAGE`` at a time), or the first ``limit``; ``deleted``: the deleted
    runs only."""
    runs, token = [], None
    view = ViewType.DELETED_ONLY if deleted else ViewType.ACTIVE_ONLY
    with guard(client):
        while True:
            page = client.search_runs(list(experiment_ids), filter_string, run_view_type=view,
                                      max_results=limit or PAGE, page_token=token)
            runs += page
            token = page.token
            if token:
                notify(progress, "fetching", f"listed {len(runs)} runs")
            if not token or limit:
                return runs


def top_level(runs) -> list:
    """Drop runs whose parent is also in the list (per-fold children that copy the tags)."""
    ids = {r.info.run_id for r in runs}
    return [r for r in runs if r.data.tags.get(T.PARENT) not in ids]


def is_comparison(run) -> bool:
    return run.data.tags.get(T.KIND) in T.KINDS


def and_clauses(*clauses: str) -> str:
    return " AND ".join(c for c in clauses if c.strip())


@contextmanager
def guard(client):
    """Turn a failing MLflow call (e.g. an unreachable server) into a message naming the tracking URI."""
    try:
        yield
    except MlflowException as e:
        raise unreachable(client, e) from e


def unreachable(client, e: MlflowException) -> BayesCompareError:
    return BayesCompareError(f"MLflow at {redact_uri(client.tracking_uri)} failed: {redact_uri(e.message)}")
