"""Read scores from MLflow runs into a tidy table: per-fold scores in three layouts (steps, keys, children), or one
score per (model, dataset) (means); the layouts and their readers are :mod:`.layouts`."""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from ..scores.tensor import FOLDS_ONE, CVTensor, DatasetMeans, dataset_means, from_tidy, means_from_tidy
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.console import redact_uri
from ..vocabulary.errors import InputError
from ..vocabulary.options import LAYOUTS
from ..vocabulary.progress import Progress
from ..vocabulary.runkey import DEFAULT_KEYS, RunKey, parse_key
from . import layouts
from .fetch import fetch_histories
from .identify import Identified, guard, identify, is_comparison, search_runs, unreachable

# fetch_histories moved to .fetch; it is re-exported here for the callers that import it from collect
__all__ = ["SCORE_COLUMNS", "CollectedScores", "resolve_experiments", "discover",
           "collect_scores", "fetch_histories", "run_keys", "check_filter"]

SCORE_COLUMNS = ["dataset", "model", "repeat", "fold", "score", "run_id", "start_time", "folds"]


@dataclass
class CollectedScores:
    """Tidy per-fold scores (columns ``SCORE_COLUMNS``; ``folds`` is the run's fold count) and how they were read.

    In the means layout every (model, dataset) has one score, at repeat 0 and fold 0, with ``folds`` 1.
    """

    scores: pd.DataFrame
    layout: str
    folds: dict[str, int]
    experiment_ids: list[str]
    runs_by_model: dict[str, list[str]]
    metric: str
    fetch_method: str  # "bulk" (server endpoint), "store" (store bulk call), "threads", "search" (no history)
    model_key: str = DEFAULT_KEYS["model"]  # the keys the runs were read by (given, or detected)
    dataset_key: str = DEFAULT_KEYS["dataset"]
    notes: list[str] = field(default_factory=list)  # what the reading said: keys detected, names that collide
    left_out: dict[str, str] = field(default_factory=dict)  # datasets left out for every pair, and why
    #: each model's dataset inputs (MLflow ``Dataset`` entities of its runs' ``mlflow.log_input``), each once
    inputs: dict[str, list] = field(default_factory=dict)

    def datasets_of(self, models: Sequence[str]) -> list:
        """The dataset inputs of ``models``' runs, each (name, digest) once: what a run that compares them logs as
        its own inputs, so that MLflow's UI shows the datasets it compared."""
        seen: dict[tuple[str, str], Any] = {}
        for model in models:
            for dataset in self.inputs.get(model, ()):
                seen.setdefault((dataset.name, dataset.digest), dataset)
        return list(seen.values())

    def common(self, models: list[str]) -> CollectedScores:
        """These scores on the datasets every one of ``models`` has (``--drop-incomplete`` of a matrix: one set for
        every pair); the others are :attr:`left_out`."""
        have = self.scores[self.scores["model"].isin(models)].groupby("dataset")["model"].nunique()
        lacking = {ds: f"not every model has it (--drop-incomplete): {_lacking(self.scores, ds, models)}"
                   for ds in have.index[have < len(set(models))]}
        if not lacking:
            return self
        return dataclasses.replace(self, scores=self.scores[~self.scores["dataset"].isin(lacking)],
                                   left_out={**self.left_out, **lacking})

    def lacking(self, models: Sequence[str]) -> dict[str, list[str]]:
        """The datasets of these scores on which each of ``models`` has none, by model (those lacking none left
        out)."""
        have = self.scores.groupby("model")["dataset"].agg(set)
        datasets = list(dict.fromkeys(self.scores["dataset"]))
        out = {m: [d for d in datasets if d not in have.get(m, set())] for m in models}
        return {m: ds for m, ds in out.items() if ds}

    def tensor(self, model_a: str, model_b: str, **kwargs) -> CVTensor:
        """Pair two models' per-fold scores (keyword arguments go to ``from_tidy``, e.g. ``on_duplicate``)."""
        if self.layout == "means":
            raise InputError(f"the runs hold one '{self.metric}' score per model and dataset (the means layout), but "
                             "the hierarchical test needs the per-fold scores: use the signed-rank test "
                             "(--test signed-rank), or log every fold's score")
        tensor = from_tidy(self.scores, model_a, model_b, time_col="start_time", **kwargs)
        tensor.metric, tensor.left_out = self.metric, {**self.left_out, **tensor.left_out}
        return tensor

    def means(self, model_a: str, model_b: str, **kwargs) -> DatasetMeans:
        """The two models' score per dataset: as logged (means layout), or their paired fold scores averaged after
        the tensor's checks (other layouts).  Problems are reported, and keyword arguments read, as by
        :meth:`tensor`."""
        if self.layout == "means":
            means = means_from_tidy(self.scores, model_a, model_b, time_col="start_time", **kwargs)
        else:
            means = dataset_means(self.tensor(model_a, model_b, **kwargs))
        means.metric, means.left_out = self.metric, {**self.left_out, **means.left_out}
        return means


def _lacking(scores: pd.DataFrame, dataset: str, models: list[str]) -> str:
    """``no scores of 'a', 'b'``: the models without scores on ``dataset``."""
    present = set(scores.loc[scores["dataset"] == dataset, "model"])
    return "no scores of " + ", ".join(f"'{m}'" for m in models if m not in present)


# ---------------------------------------------------------------------------------------------- public


def resolve_experiments(client: MlflowClient, names=(), ids=()) -> list[str]:
    """Experiment ids for the given names and ids, in order; unknown or deleted ones raise one InputError."""
    out, problems = [], []
    for name in names:
        with guard(client):
            exp = client.get_experiment_by_name(name)
        if exp is None or exp.lifecycle_stage != "active":
            problems.append(f"no experiment named '{name}'{_did_you_mean(client, name)}")
        else:
            out.append(exp.experiment_id)
    for eid in ids:
        try:
            exp = client.get_experiment(str(eid))
        except MlflowException as e:
            if e.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
                raise unreachable(client, e) from e
            exp = None
        if exp is None or exp.lifecycle_stage != "active":
            problems.append(f"no experiment with id '{eid}'")
        else:
            out.append(exp.experiment_id)
    if problems:
        raise InputError(problems, header=f"Unknown experiment(s) at {redact_uri(client.tracking_uri)}:")
    if not out:
        raise InputError("name at least one experiment (by name or id)")
    return list(dict.fromkeys(out))


def _did_you_mean(client: MlflowClient, name: str) -> str:
    """``; did you mean 'x'?`` for the active experiments (that the client may read) named close to ``name``."""
    with guard(client):
        names = [e.name for e in client.search_experiments(max_results=1000)]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def run_keys(model_key: RunKey | str = DEFAULT_KEYS["model"], dataset_key: RunKey | str = DEFAULT_KEYS["dataset"],
             model_tag: str | None = None, dataset_tag: str | None = None) -> tuple[RunKey, RunKey]:
    """The model and dataset keys of a call (:mod:`..vocabulary.runkey`); ``model_tag``/``dataset_tag`` are the earlier
    API's names of ``tag:<name>`` keys."""
    keys = []
    for role, key, tag in (("model", model_key, model_tag), ("dataset", dataset_key, dataset_tag)):
        key = f"tag:{tag}" if tag is not None else key
        keys.append(key if isinstance(key, RunKey) else parse_key(key, role))
    return keys[0], keys[1]


def discover(client: MlflowClient, experiment_ids: list[str], *, model_key: RunKey | str = DEFAULT_KEYS["model"],
             dataset_key: RunKey | str = DEFAULT_KEYS["dataset"], filter_string: str = "", strict: bool = True,
             **tag_keys) -> dict:
    """Models, datasets and metric names (fold keys folded into their base name; the ``<metric>_mean`` and
    ``<metric>_std`` summaries of a metric left out) found in the experiments, and the keys the runs were read
    by.  Unless ``strict``, runs that cannot be told apart give empty lists (and the reason as ``problem``).  What
    the look notes (the keys detected) is said by the collect that reads the scores, not here."""
    model_key, dataset_key = run_keys(model_key, dataset_key, **tag_keys)
    try:
        found = identify(client, experiment_ids, model_key, dataset_key, filter_string=filter_string, warn=False)
    except InputError as exc:
        if strict:
            raise
        return {"models": [], "datasets": [], "metrics": [], "runs": 0, "model_key": str(model_key),
                "dataset_key": str(dataset_key), "problem": str(exc)}
    per_fold = f"{layouts.tag(T.PARENT)} IS NOT NULL AND {layouts.tag('fold')} IS NOT NULL"
    children = search_runs(client, experiment_ids, per_fold, limit=1000)
    metrics = {re.sub(r"_fold_\d+$", "", k) for r in [*found.runs, *children] for k in r.data.metrics}
    metrics -= {f"{m}_{summary}" for m in metrics for summary in ("mean", "std")}  # log_cv_scores' summaries
    return {
        "models": sorted(set(found.models.values())),
        "datasets": sorted(set(found.datasets.values())),
        "metrics": sorted(metrics),
        "runs": len(found.runs),
        "model_key": str(found.model_key),
        "dataset_key": str(found.dataset_key),
    }


def collect_scores(client: MlflowClient, experiment_ids: list[str], metric: str, models: list[str] | None = None,
                   *, filter_string: str = "", layout: str = "auto", model_key: RunKey | str = DEFAULT_KEYS["model"],
                   dataset_key: RunKey | str = DEFAULT_KEYS["dataset"], folds: int | None = None,
                   progress: Progress | None = None, **tag_keys) -> CollectedScores:
    """Read every per-fold score of ``metric`` for ``models`` (all models found if None), or in the means layout
    the one score of each run.

    Runs count when they have a model and a dataset under ``model_key`` and ``dataset_key`` (:mod:`..vocabulary.runkey`;
    ``model_tag``/``dataset_tag`` name tag keys, as the earlier API did); comparison runs are skipped.
    ``folds`` overrides the runs' ``cv_folds`` param.  ``progress`` (see :mod:`..tracking.progress`) hears the
    ``fetching`` stage: runs listed, metric histories read.
    """
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    if folds is not None and (not float(folds).is_integer() or int(folds) < 2):
        raise InputError(f"folds must be an integer >= 2, got {folds!r}")
    check_filter(filter_string)
    keys = run_keys(model_key, dataset_key, **tag_keys)
    found = _model_runs(client, experiment_ids, models, filter_string, *keys, progress=progress)
    runs, read, asked = found.runs, None, layout
    if layout == "auto":
        layout, read = layouts.detect(client, experiment_ids, found, metric, folds, progress)
    if layout == "means":
        raw, method = read or layouts.read_means(client, runs, metric, progress)
        layouts.check_single_values(raw, found, metric)
        run_folds = {r.info.run_id: (1, 1) for r in runs}
    else:
        run_folds = _run_folds(found, folds)
        raw, method = layouts.READERS[layout](client, experiment_ids, runs, metric, run_folds, progress)
        if folds is not None:
            _check_whole_repeats(raw, found, int(folds))
    if raw.empty:
        raise InputError(f"metric '{metric}' not found in the {layout} layout ({layouts.LAYOUT_SHAPES[layout]}); "
                         f"metrics present: {', '.join(layouts.metrics_present(runs)) or 'none'}"
                         + ("; layout 'auto' tells the layout from the runs" if asked != "auto" else ""))
    scores = _tidy(raw, found, run_folds)
    by_model: dict[str, list[str]] = {}
    inputs: dict[str, dict] = {}
    for r in runs:
        by_model.setdefault(found.model(r), []).append(r.info.run_id)
        for given in (r.inputs.dataset_inputs if r.inputs is not None else ()):
            inputs.setdefault(found.model(r), {}).setdefault((given.dataset.name, given.dataset.digest), given.dataset)
    ds_folds = scores.drop_duplicates("dataset").set_index("dataset")["folds"].astype(int).to_dict()
    return CollectedScores(scores, layout, ds_folds, list(experiment_ids), by_model, metric, method,
                           str(found.model_key), str(found.dataset_key), found.notes,
                           inputs={m: list(d.values()) for m, d in inputs.items()})


# ---------------------------------------------------------------------------------------------- runs


def _model_runs(client, experiment_ids, models, filter_string, model_key: RunKey, dataset_key: RunKey, *,
                progress: Progress | None = None) -> Identified:
    """The runs of the wanted models with a model and a dataset; errors for missing models, naming the models
    present, or for a key no run carries, naming what the runs carry."""
    found = identify(client, experiment_ids, model_key, dataset_key, models=None if models is None else list(models),
                     filter_string=filter_string, progress=progress)
    if not found.runs and not search_runs(client, experiment_ids, "", limit=1):
        raise InputError(f"{_experiments(client, experiment_ids)} {'has' if len(experiment_ids) == 1 else 'have'} no "
                         "runs", header="Cannot collect scores:")
    key, matching = found.model_key, f" that matches the filter {filter_string!r}" if filter_string.strip() else ""
    absent = [m for m in (models or []) if m not in set(found.models.values())]
    problems = []
    if absent:
        present = discover(client, experiment_ids, model_key=key, dataset_key=found.dataset_key)["models"]
        problems += [f"model '{m}' is in no run {_with(key)}{matching}; models present: "
                     f"{', '.join(present) or 'none'}" for m in absent]
    if not found.runs and not problems:
        problems.append(f"no run in {_experiments(client, experiment_ids)} has {key.described} and "
                        f"{found.dataset_key.described}" + (f" and matches {filter_string!r}" if filter_string else ""))
    if problems and not found.models:
        problems.append(_carried(client, experiment_ids, filter_string))
    if problems:
        raise InputError(problems, header="Cannot collect scores:")
    return found


def _experiments(client, experiment_ids) -> str:
    """``experiment 'Default' (id 0)``, ``experiments 'a' (id 1) and 'b' (id 2)``: each by its name and id."""
    with guard(client):
        named = [f"'{client.get_experiment(str(eid)).name}' (id {eid})" for eid in experiment_ids]
    return f"experiment{'s' if named[1:] else ''} {', '.join(named[:-1])}{' and ' if named[1:] else ''}{named[-1]}"


def _with(key: RunKey) -> str:
    """``tagged 'model'``, ``with param 'estimator'``, ``with the run name`` …: how a run holds a model name."""
    return f"tagged '{key.name}'" if key.kind == "tag" else f"with {key.described}"


def _carried(client, experiment_ids, filter_string: str, limit: int = 1000) -> str:
    """The params and tags the runs carry (of the first ``limit`` runs), for a key that matches nothing."""
    runs = [r for r in search_runs(client, experiment_ids, filter_string, limit=limit) if not is_comparison(r)]
    tags = sorted({k for r in runs for k in r.data.tags if not k.startswith(("mlflow.", "bayescompare."))})
    params = sorted({k for r in runs for k in r.data.params})
    return (f"the runs carry params: {', '.join(params[:30]) or 'none'}; tags: {', '.join(tags[:30]) or 'none'} "
            "(name where the model and dataset are with --model-key and --dataset-key: tag:NAME, param:NAME, "
            "run-name, input for the dataset, logged-model for the model)")


def _run_folds(found: Identified, folds) -> dict[str, tuple[int, int]]:
    """run id -> (folds, repeats) from ``folds`` or the params ``cv_folds`` / ``cv_repeats``.  ``folds`` stands in
    for a param that is missing or unreadable, and may not contradict one that is readable."""
    out, problems, unknown, contradicted = {}, [], [], {}
    for r in found.runs:
        p, rid = r.data.params, r.info.run_id
        logged = _int_param(p, "cv_folds", rid, problems if folds is None else [])
        if folds is not None and logged not in (None, int(folds)):
            contradicted.setdefault(logged, []).append(r)
        k = folds if folds is not None else logged
        reps = _int_param(p, "cv_repeats", rid, problems) or 1
        if k is None and "cv_folds" not in p:
            unknown.append(rid)
        elif k is not None:
            out[rid] = (int(k), reps)
    if unknown:
        problems.append(f"the number of folds is unknown for {len(unknown)} run(s) (e.g. {', '.join(unknown[:5])}): "
                        "pass --folds K (folds=K) or log the run param 'cv_folds'")
    problems += [f"--folds {folds} (folds={folds}) contradicts the param cv_folds={logged} logged by "
                 f"{_places(rs, found)}; leave --folds out to use the logged folds"
                 for logged, rs in sorted(contradicted.items())]
    if problems:
        raise InputError(problems, header="Cannot tell the cross-validation folds:")
    return out


def _places(runs, found: Identified, shown: int = 3) -> str:
    """"dataset 'd' model 'm', … and N more runs" for ``runs``."""
    named = sorted(f"dataset '{found.dataset(r)}' model '{found.model(r)}'" for r in runs)[:shown]
    return ", ".join(named) + (f" and {len(runs) - shown} more runs" if len(runs) > shown else "")


def _check_whole_repeats(raw: pd.DataFrame, found: Identified, folds: int) -> None:
    """Where ``folds`` stands in for the param ``cv_folds`` (:func:`_run_folds`), each dataset's fold scores must
    make whole repeats of it: the most scores a run logs (a global index: its highest + 1) a multiple of
    ``folds``; the folds per repeat (runs whose children are tagged ``repeat``) ``folds`` exactly; and a run's
    scores as many repeats of ``folds`` as its param ``cv_repeats`` says."""
    assumed = {r.info.run_id: r for r in found.runs if _int_param(r.data.params, "cv_folds", r.info.run_id, []) is None}
    part = raw[raw["run_id"].isin(assumed)]
    per_repeat = part["repeat"] >= 0 if "repeat" in part else pd.Series(False, index=part.index)
    problems = _contradicted_repeats(part[~per_repeat], found, assumed, folds)
    for labelled, rows in ((False, part[~per_repeat]), (True, part[per_repeat])):
        rows = rows.assign(dataset=rows["run_id"].map(lambda rid: found.dataset(assumed[rid])))
        for dataset, top in rows.sort_values("fold", kind="stable").groupby("dataset").last().iterrows():
            count, run = int(top["fold"]) + 1, assumed[top["run_id"]]
            where = f"dataset '{dataset}' (model '{found.model(run)}', run {run.info.run_id})"
            if labelled and count != folds:
                problems.append(f"{where} holds {count} folds per repeat, not --folds {folds} (folds={folds})")
            elif not labelled and count % folds:
                problems.append(f"{where} logs {count} fold scores: not a whole number of repeats of --folds "
                                f"{folds} (folds={folds})")
    if problems:
        raise InputError(problems, header="Cannot tell the cross-validation folds:")


def _contradicted_repeats(rows: pd.DataFrame, found: Identified, runs: dict, folds: int) -> list[str]:
    """Where the scores of the runs among ``rows`` (at a global fold index) make another number of repeats of
    ``folds`` than their param ``cv_repeats`` says (a last repeat that lacks folds counts as one), by number."""
    contradicted = {}
    for run_id, top in rows.groupby("run_id")["fold"].max().items():
        made = -(-(int(top) + 1) // folds)
        logged = _int_param(runs[run_id].data.params, "cv_repeats", run_id, [])
        if logged not in (None, made):
            contradicted.setdefault((made, logged), []).append(runs[run_id])
    return [f"--folds {folds} (folds={folds}) makes {made} repeats of the fold scores logged by "
            f"{_places(rs, found)}, which contradicts their param cv_repeats={logged}; leave --folds out, or give "
            f"the folds that make {logged} repeats" for (made, logged), rs in sorted(contradicted.items())]


def _int_param(params: dict, key: str, run_id: str, problems: list[str]) -> int | None:
    if key not in params:
        return None
    try:
        value = float(params[key])
    except ValueError:
        value = None
    low = 2 if key == "cv_folds" else 1
    if value is None or not value.is_integer() or value < low:
        why = f"not a whole number >= {low}"
        if key == "cv_folds" and value == 1:
            why += f" ({FOLDS_ONE}; give the folds (--folds K) if the param is wrong)"
        problems.append(f"run {run_id}: param '{key}' is {params[key]!r}, {why}")
        return None
    return int(value)


def _tidy(raw: pd.DataFrame, found: Identified, run_folds) -> pd.DataFrame:
    """Attach dataset, model, start time and folds to the raw scores; split global fold indexes; sort by dataset."""
    info = pd.DataFrame([(r.info.run_id, found.dataset(r), found.model(r), r.info.start_time,
                          run_folds[r.info.run_id][0]) for r in found.runs],
                        columns=["run_id", "dataset", "model", "start_time", "folds"])
    df = raw.merge(info, on="run_id", how="inner")
    if "repeat" not in df:
        df["repeat"] = -1
    is_global = df["repeat"] < 0
    df.loc[is_global, "repeat"] = df.loc[is_global, "fold"] // df.loc[is_global, "folds"]
    df.loc[is_global, "fold"] = df.loc[is_global, "fold"] % df.loc[is_global, "folds"]
    df = df.sort_values(["dataset", "model", "repeat", "fold"], kind="stable", ignore_index=True)
    return df[SCORE_COLUMNS].astype({"repeat": "int64", "fold": "int64", "score": "float64"})


# ---------------------------------------------------------------------------------------------- search


def check_filter(filter_string: str) -> None:
    """An :class:`InputError` quoting ``filter_string`` and MLflow's complaint when MLflow's own parser refuses it
    (before any search: a search would fail at the tracking server, after the command had started)."""
    problem = mlflow_internals.filter_problem(filter_string)
    if problem is not None:
        raise InputError(f"invalid filter string {filter_string!r}: {problem}")
