"""Log step: turn a finished comparison into an MLflow *comparison run*.

Two phases, so a failure never leaves a FINISHED run with half its artifacts:

1. :func:`build_bundle` computes everything (report strings, figures, CSVs, the netcdf posterior, the Stan data) in a
   temporary directory, touching no run;
2. :func:`log_comparison` creates the run (or fills one the caller created RUNNING, as the server does), logs the
   bundle and ends the run FINISHED.  If logging fails the run ends FAILED with the error in ``bayescompare.error``.

The stage of a run being worked on is kept in the tag ``bayescompare.stage`` (:func:`set_stage`), so a process that
did not start the work can follow it.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from mlflow.entities import Metric, Param, RunStatus, RunTag
from mlflow.utils.time import get_current_time_millis
from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH, MAX_TAG_VAL_LENGTH

from .errors import BayesCompareError
from .result import divergent_transitions, jsonable

TAG_KIND = "bayescompare.kind"
TAG_STAGE = "bayescompare.stage"
TAG_ERROR = "bayescompare.error"
TAG_NOTE = "mlflow.note.content"
TAG_PARENT = "mlflow.parentRunId"

#: Stages a comparison run goes through, in order; ``failed`` may replace any of them.
STAGES = ("queued", "fetching", "compiling", "sampling", "reporting", "logging", "done", "failed")

ARTIFACTS = (
    "report.html",
    "report.md",
    "summary.json",
    "shrinkage.csv",
    "cv_differences.csv",
    "posterior.nc",
    "plots/simplex.png",
    "plots/posterior.png",
    "plots/shrinkage.png",
    "plots/model_fit.png",
    "stan/hierarchical.stan",
    "stan/data.json",
)


@dataclass
class Bundle:
    """Everything a comparison run will hold, computed before the run exists.  ``directory`` holds the artifacts;
    call :meth:`cleanup` (or use it as a context manager) when done."""

    name: str
    tags: dict[str, str]
    params: dict[str, str]
    metrics: dict[str, float]
    directory: Path
    _tmp: tempfile.TemporaryDirectory | None = field(default=None, repr=False)

    def cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Bundle:
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()


def run_name(model_a: str, model_b: str, metric: str) -> str:
    return f"{model_a} vs {model_b} · {metric}"


# --------------------------------------------------------------------------------------------------- phase 1: compute


def build_bundle(
    result,
    tensor,
    *,
    metric: str,
    experiment_ids: Sequence[str],
    layout: str | None = None,
    tracking_url: str | None = None,
    run_id: str | None = None,
    extra_tags: dict[str, str] | None = None,
) -> Bundle:
    """Compute tags, params, metrics and every artifact of the comparison run of ``result`` (fitted on ``tensor``).

    ``run_id`` is the comparison run's id when it already exists (the report then links to itself);
    ``tracking_url`` is the server's base URL, used for links in the report when the store is a server.
    """
    from . import plots, report
    from .model import STAN_FILE

    tmp = tempfile.TemporaryDirectory(prefix="bayescompare-")
    root = Path(tmp.name)
    try:
        ctx = report.ReportContext(
            title=run_name(result.model_a, result.model_b, metric),
            metric=metric,
            experiment_ids=[str(e) for e in experiment_ids],
            source_runs=source_runs(tensor, experiment_ids),
            tracking_url=tracking_url,
            comparison_run_id=run_id,
        )
        figures = plots.all_figures(result)
        pngs = {key: plots.figure_png(fig) for key, fig in figures.items()}
        markdown = report.render_markdown(result, ctx)
        html = report.render_html(result, pngs, ctx)

        (root / "plots").mkdir()
        (root / "stan").mkdir()
        for key, png in pngs.items():
            (root / "plots" / f"{key}.png").write_bytes(png)
        (root / "report.md").write_text(markdown, encoding="utf-8")
        (root / "report.html").write_text(html, encoding="utf-8")
        (root / "summary.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        result.shrinkage.to_csv(root / "shrinkage.csv", index=False)
        tensor.table.to_csv(root / "cv_differences.csv", index=False)
        result.to_inference_data().to_netcdf(str(root / "posterior.nc"))
        shutil.copyfile(STAN_FILE, root / "stan" / "hierarchical.stan")
        (root / "stan" / "data.json").write_text(json.dumps(result.stan_data, indent=1, default=jsonable))

        tags = comparison_tags(result, metric=metric, experiment_ids=experiment_ids)
        tags[TAG_NOTE] = _fit_tag(markdown)
        tags.update(extra_tags or {})
        return Bundle(
            name=ctx.title,
            tags=tags,
            params=comparison_params(result, layout=layout),
            metrics=comparison_metrics(result),
            directory=root,
            _tmp=tmp,
        )
    except BaseException:
        tmp.cleanup()
        raise


def comparison_tags(result, *, metric: str, experiment_ids: Sequence[str]) -> dict[str, str]:
    """The ``bayescompare.*`` tags of a comparison run (without the description)."""
    return {
        TAG_KIND: "comparison",
        "bayescompare.model_a": result.model_a,
        "bayescompare.model_b": result.model_b,
        "bayescompare.metric": metric,
        "bayescompare.verdict": result.verdict,
        "bayescompare.decision": result.decision,
        "bayescompare.source_experiment_ids": ",".join(str(e) for e in experiment_ids),
        "bayescompare.diagnostics": diagnostics_problem(result) or "ok",
    }


def comparison_params(result, *, layout: str | None = None) -> dict[str, str]:
    """Everything needed to reproduce the fit: the engine's settings, the layout read and the versions used."""
    params: dict[str, Any] = {}
    for key, value in result.settings.items():
        if isinstance(value, dict):  # e.g. versions -> version.<package>
            params.update({f"{key.rstrip('s')}.{k}": v for k, v in value.items()})
        elif isinstance(value, (list, tuple)) and len(value) > 1 and all(v == value[0] for v in value):
            params[key] = value[0]  # one fold count / rho shared by every dataset
        else:
            params[key] = value
    params["greater_is_better"] = result.greater_is_better
    params.setdefault("rope", result.rope)
    if layout is not None:
        params["layout"] = layout
    for key, value in versions(result.settings.get("backend")).items():
        params.setdefault(key, value)
    return {key: _param_value(value) for key, value in params.items()}


def comparison_metrics(result) -> dict[str, float]:
    """The numbers shown in MLflow's runs table and charts (non-finite values are left out; summary.json has them)."""
    diag = result.diagnostics
    metrics: dict[str, Any] = {
        "p_a_better": result.p_a_better,
        "p_rope": result.p_rope,
        "p_b_better": result.p_b_better,
        "delta0_mean": result.delta0.get("mean"),
        "delta0_hdi_low": result.delta0.get("hdi_low"),
        "delta0_hdi_high": result.delta0.get("hdi_high"),
        "sigma0_mean": result.sigma0.get("mean"),
        "nu_median": (result.nu or {}).get("median"),
        "signed_rank_p": result.signed_rank_p,
        "n_datasets": len(result.shrinkage),
        "rhat_max": diag.get("rhat_max"),
        "ess_bulk_min": diag.get("ess_bulk_min"),
        "divergences": diag.get("divergences"),
        "sampling_seconds": diag.get("sampling_seconds"),
    }
    for key, value in result.odds.items():
        metrics["odds_" + key.replace("/", "_vs_")] = value
    return {key: float(v) for key, v in metrics.items() if _finite(v)}


def diagnostics_problem(result, rhat_limit: float = 1.01) -> str | None:
    """Why the sampler's output should not be trusted (R-hat above ``rhat_limit``, divergences), or ``None``."""
    diag = result.diagnostics
    problems = []
    rhat = diag.get("rhat_max")
    if rhat is not None and _finite(rhat) and rhat > rhat_limit:
        problems.append(f"R-hat {rhat:.3f} > {rhat_limit}")
    if diag.get("divergences"):
        problems.append(divergent_transitions(int(diag["divergences"])))
    return "; ".join(problems) or None


def source_runs(tensor, experiment_ids: Sequence[str] = ()) -> list[dict[str, str]]:
    """One entry per source run, models A then B: ``{"model", "dataset", "run_id"}`` plus ``experiment_id`` when
    there is a single source experiment (with several, the report links to the run alone)."""
    table = tensor.table
    extra = {"experiment_id": str(experiment_ids[0])} if len(experiment_ids) == 1 else {}
    out = []
    for model, column in ((tensor.model_a, "run_id_a"), (tensor.model_b, "run_id_b")):
        pairs = table[["dataset", column]].drop_duplicates()
        out += [{"model": model, "dataset": str(d), "run_id": str(r), **extra}
                for d, r in pairs.itertuples(index=False)]
    return out


def versions(backend: str | None = None) -> dict[str, str]:
    """Versions of this package, MLflow and the Stan used (the engine's ``settings["versions"]`` has the rest)."""
    out = {
        "version.mlflow-bayescompare": _version("mlflow-bayescompare") or "not installed",
        "version.mlflow": _version("mlflow") or _version("mlflow-skinny"),
    }
    if backend == "cmdstanpy":
        try:
            import cmdstanpy

            out["version.stan"] = f"CmdStan {cmdstanpy.cmdstan_version()}"
        except Exception:  # CmdStan found at fit time but its version file is unreadable
            out["version.stan"] = "CmdStan (unknown version)"
    elif backend == "pystan":
        out["version.stan"] = f"pystan {_version('pystan')}, httpstan {_version('httpstan')}"
    return {k: v for k, v in out.items() if v}


# ------------------------------------------------------------------------------------------------------ phase 2: log


def start_comparison_run(
    client,
    experiment_id: str,
    *,
    model_a: str,
    model_b: str,
    metric: str,
    source_experiment_ids: Sequence[str] = (),
    parent_run_id: str | None = None,
    stage: str = "queued",
) -> str:
    """Create an empty RUNNING comparison run (the job record a server hands back before the work starts)."""
    tags = {
        TAG_KIND: "comparison",
        "bayescompare.model_a": model_a,
        "bayescompare.model_b": model_b,
        "bayescompare.metric": metric,
        "bayescompare.source_experiment_ids": ",".join(str(e) for e in source_experiment_ids),
        TAG_STAGE: stage,
    }
    if parent_run_id:
        tags[TAG_PARENT] = parent_run_id
    run = client.create_run(str(experiment_id), tags=tags, run_name=run_name(model_a, model_b, metric))
    return run.info.run_id


def set_stage(client, run_id: str, stage: str) -> None:
    """Record how far the work on ``run_id`` has got."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    client.set_tag(run_id, TAG_STAGE, stage)


def fail_run(client, run_id: str, error: BaseException | str) -> None:
    """End ``run_id`` FAILED with ``error`` in the ``bayescompare.error`` tag."""
    message = error if isinstance(error, str) else (str(error) or type(error).__name__)
    client.log_batch(run_id, tags=[RunTag(TAG_ERROR, _fit_tag(message)), RunTag(TAG_STAGE, "failed")])
    client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))


def log_comparison(
    client,
    result,
    tensor,
    *,
    metric: str,
    experiment_ids: Sequence[str],
    experiment_id: str | None = None,
    layout: str | None = None,
    run_id: str | None = None,
    parent_run_id: str | None = None,
    tracking_url: str | None = None,
    extra_tags: dict[str, str] | None = None,
) -> str:
    """Log the comparison of ``result`` (fitted on ``tensor``) as an MLflow run and return its id.

    The run goes into ``experiment_id`` (default: the first source experiment).  With ``run_id`` the given RUNNING
    run is filled instead of creating one.  Everything is computed before the run is touched; a failure while
    logging ends the run FAILED (tag ``bayescompare.error``) and re-raises.
    """
    if run_id is not None:
        set_stage(client, run_id, "reporting")
    try:
        bundle = build_bundle(
            result,
            tensor,
            metric=metric,
            experiment_ids=experiment_ids,
            layout=layout,
            tracking_url=tracking_url,
            run_id=run_id,
            extra_tags=extra_tags,
        )
    except BaseException as exc:
        if run_id is not None:
            fail_run(client, run_id, exc)
        raise
    with bundle:
        if parent_run_id:
            bundle.tags[TAG_PARENT] = parent_run_id
        if run_id is None:
            target = str(experiment_id if experiment_id is not None else experiment_ids[0])
            tags = {**bundle.tags, TAG_STAGE: "logging"}
            run_id = client.create_run(target, tags=tags, run_name=bundle.name).info.run_id
        else:
            client.update_run(run_id, name=bundle.name)
            set_stage(client, run_id, "logging")
        try:
            write_bundle(client, run_id, bundle)
            set_stage(client, run_id, "done")
            client.set_terminated(run_id, RunStatus.to_string(RunStatus.FINISHED))
        except BaseException as exc:
            fail_run(client, run_id, exc)
            raise
    return run_id


def write_bundle(client, run_id: str, bundle: Bundle) -> None:
    """Log the bundle's tags, params, metrics (``log_batch``, in chunks MLflow accepts) and artifacts."""
    now = get_current_time_millis()
    tags = [RunTag(k, v) for k, v in bundle.tags.items()]
    params = [Param(k, v) for k, v in bundle.params.items()]
    metrics = [Metric(k, v, now, 0) for k, v in bundle.metrics.items()]
    for chunk in _chunks(tags, MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, tags=chunk)
    for chunk in _chunks(params, MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, params=chunk)
    client.log_batch(run_id, metrics=metrics)
    client.log_artifacts(run_id, str(bundle.directory))
    expected = {p.relative_to(bundle.directory).as_posix() for p in bundle.directory.rglob("*") if p.is_file()}
    missing = expected - set(_artifact_paths(client, run_id))
    if missing:
        raise BayesCompareError(f"artifacts missing after upload: {', '.join(sorted(missing))}")


# --------------------------------------------------------------------------------------------------- matrix runs


def build_matrix_bundle(summary, results, *, experiment_ids: Sequence[str], layout: str | None = None) -> Bundle:
    """The parent run of a matrix comparison: the matrix plot, the ranking (CSV + markdown) and the probability
    matrices, computed before the run exists.  ``results`` are the pairs' :class:`HierarchicalResult` objects."""
    from .matrix import matrix_figure, ranking_markdown
    from .plots import figure_png

    tmp = tempfile.TemporaryDirectory(prefix="bayescompare-matrix-")
    root = Path(tmp.name)
    try:
        markdown = ranking_markdown(summary)
        (root / "matrix.png").write_bytes(figure_png(matrix_figure(summary)))
        (root / "ranking.md").write_text(markdown, encoding="utf-8")
        summary.ranking.to_csv(root / "ranking.csv", index=False)
        summary.better.rename_axis("model").to_csv(root / "p_better.csv")
        summary.rope.rename_axis("model").to_csv(root / "p_rope.csv")
        first = next(iter(results))
        params = comparison_params(first, layout=layout)
        params["models"] = _param_value(list(summary.models))
        tags = {
            TAG_KIND: "matrix",
            "bayescompare.models": _fit_tag(",".join(summary.models)),
            "bayescompare.metric": summary.metric,
            "bayescompare.best": str(summary.ranking["model"].iloc[0]),
            "bayescompare.source_experiment_ids": ",".join(str(e) for e in experiment_ids),
            TAG_NOTE: _fit_tag(markdown),
        }
        metrics = {"n_models": float(len(summary.models)), "n_pairs": float(len(results)),
                   "n_datasets": float(max(len(r.shrinkage) for r in results))}
        name = f"{len(summary.models)} models · {summary.metric}"
        return Bundle(name=name, tags=tags, params=params, metrics=metrics, directory=root, _tmp=tmp)
    except BaseException:
        tmp.cleanup()
        raise


def log_matrix(
    client,
    summary,
    pairs: Sequence[tuple[Any, Any]],
    *,
    metric: str,
    experiment_ids: Sequence[str],
    experiment_id: str | None = None,
    layout: str | None = None,
    tracking_url: str | None = None,
) -> tuple[str, list[str]]:
    """Log a parent run holding ``summary`` and one child comparison run per ``(result, tensor)`` in ``pairs``.

    Returns ``(parent_run_id, child_run_ids)``.  If any child fails the parent ends FAILED too.
    """
    bundle = build_matrix_bundle(summary, [r for r, _ in pairs], experiment_ids=experiment_ids, layout=layout)
    target = str(experiment_id if experiment_id is not None else experiment_ids[0])
    with bundle:
        parent = client.create_run(target, tags={**bundle.tags, TAG_STAGE: "logging"}, run_name=bundle.name)
        parent_id = parent.info.run_id
        try:
            children = [
                log_comparison(client, result, tensor, metric=metric, experiment_ids=experiment_ids,
                               experiment_id=target, layout=layout, parent_run_id=parent_id,
                               tracking_url=tracking_url)
                for result, tensor in pairs
            ]
            write_bundle(client, parent_id, bundle)
            set_stage(client, parent_id, "done")
            client.set_terminated(parent_id, RunStatus.to_string(RunStatus.FINISHED))
        except BaseException as exc:
            fail_run(client, parent_id, exc)
            raise
    return parent_id, children


# --------------------------------------------------------------------------------------------------------- helpers


def _artifact_paths(client, run_id: str, path: str | None = None) -> list[str]:
    out = []
    for info in client.list_artifacts(run_id, path):
        out += _artifact_paths(client, run_id, info.path) if info.is_dir else [info.path]
    return out


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _fit_tag(text: str, limit: int = MAX_TAG_VAL_LENGTH) -> str:
    """``text`` cut at a line boundary to fit in a tag value, saying so when cut."""
    if len(text) <= limit:
        return text
    note = "\n\n… (cut to fit; the full report is the artifact report.md)"
    cut = text[: limit - len(note)]
    return cut[: cut.rfind("\n") if "\n" in cut else len(cut)] + note


def _param_value(value: Any) -> str:
    text = json.dumps(value, default=jsonable) if isinstance(value, (list, tuple, dict)) else str(value)
    return text if len(text) <= MAX_PARAM_VAL_LENGTH else text[: MAX_PARAM_VAL_LENGTH - 1] + "…"


def _finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
