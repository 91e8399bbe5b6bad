"""A ranking's MLflow run, of whichever model ranked (its row of the family table names its report, figures and
Stan program): :func:`bundle` builds it, before the run is touched."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...shared.run_content import (
    Bundle,
    comparison_params,
    diagnostics_problem,
    finite,
    fit_tag,
    models_run_name,
    new_directory,
    write_posterior,
)
from ...vocabulary import tags as T
from ...vocabulary.keys import KEYS_ARTIFACT, named_keys
from ...vocabulary.outcomes import jsonable
from .. import ranking_model

__all__ = ["bundle", "ranking_metrics", "model_keys"]


def bundle(result, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
           directory: Path | None = None) -> Bundle:
    """The run of a ranking of several models: its tables (the hierarchical model: ranking, pairs and versus; BBT:
    ranking, pairs, wins and the posterior predictive check; the joint model of one dataset: ranking, pairs and the
    fold scores), its figures (PNG and SVG: its model's ``plots``), the reports, the posterior and, for the models
    sampled by Stan, the program with its data (each model's parts: its row of the family table).
    Per model, the metrics ``p_best.<model>`` and ``mean_rank.<model>`` (on one dataset also
    ``diff_to_leader.<model>``), their keys listed with the models' names in
    :data:`....vocabulary.keys.KEYS_ARTIFACT`."""
    from ...sampling.programs import PROGRAMS
    from ...shared.figures import write_png_and_svg

    family = ranking_model(result.model)
    report = family.part("report")
    root, tmp = new_directory(directory, "bayescompare-ranking-")
    try:
        pngs = write_png_and_svg(family.part("plots")(result), root / "plots")
        markdown = report.render_markdown(result, metric)
        (root / "report.md").write_text(str(markdown), encoding="utf-8")
        (root / "report.html").write_text(report.render_html(result, metric, pngs), encoding="utf-8")
        (root / "summary.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        for name, table in result.tables().items():
            table.to_csv(root / f"{name}.csv", index=False)
        _write_model_keys(result, root)
        write_posterior(result, root / "posterior.nc")
        program = family.program  # the joint model of one dataset samples no Stan program
        if program:
            (root / "stan").mkdir(exist_ok=True)
            shutil.copyfile(PROGRAMS[program], root / "stan" / f"{program}.stan")
            (root / "stan" / "data.json").write_text(json.dumps(result.stan_data, indent=1, default=jsonable))
        models = T.joined_names(map(str, result.models))
        run_tags = {T.KIND: "ranking", T.RANKING: result.model, T.MODELS: fit_tag(models), T.METRIC: metric,
                    T.BEST: result.best,
                    T.SOURCE_EXPERIMENTS: ",".join(str(e) for e in experiment_ids),
                    T.DIAGNOSTICS: diagnostics_problem(result) or "ok", T.NOTE: fit_tag(str(markdown))}
        params = {k: v for k, v in comparison_params(result, layout=layout).items() if k != "datasets"}
        return Bundle(models_run_name("ranking", len(result.models), metric), run_tags, params,
                      ranking_metrics(result), root, tmp, markdown)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


def ranking_metrics(result) -> dict[str, float]:
    """``p_best.<model>`` and ``mean_rank.<model>`` (keys MLflow accepts: :func:`model_keys`; on one dataset also
    ``diff_to_leader.<model>`` in metric units), the sizes and the sampler's health (or the joint model's ρ and
    Monte-Carlo error; ``pair_…``: the worst of the pairs' own fits)."""
    metrics: dict[str, Any] = {"n_models": len(result.models), "n_datasets": len(result.settings.get("datasets", [])),
                               "rho": result.settings.get("rho"),
                               **{k: result.diagnostics.get(k) for k in ("rhat_max", "ess_bulk_min", "divergences",
                                                                          "sampling_seconds", "compile_seconds",
                                                                          "mc_se_max")},
                               **{f"pair_{k}": (result.diagnostics.get("pair_tests") or {}).get(k)
                                  for k in ("rhat_max", "ess_bulk_min", "divergences", "sampling_seconds")}}
    for column, keys in model_keys(result).items():
        values = dict(zip(result.ranking["model"].astype(str), result.ranking[column]))
        metrics.update({key: values[model] for model, key in keys.items()})
    return {key: float(v) for key, v in metrics.items() if finite(v)}


def model_keys(result) -> dict[str, dict[str, str]]:
    """Per metric of a ranking's models (``p_best``, ``mean_rank``, ``diff_to_leader``), each model's key
    (:func:`....vocabulary.keys.named_keys`)."""
    models = result.ranking["model"].astype(str)
    columns = [c for c in ("p_best", "mean_rank", "diff_to_leader") if c in result.ranking.columns]
    return {column: named_keys(column, models) for column in columns}


def _write_model_keys(result, root: Path) -> None:
    """The :data:`....vocabulary.keys.KEYS_ARTIFACT` of a ranking: ``{key: model}`` for each key :func:`model_keys`
    built."""
    mapping = {key: model for keys in model_keys(result).values() for model, key in keys.items()}
    (root / KEYS_ARTIFACT).write_text(json.dumps(mapping, indent=1, ensure_ascii=False), encoding="utf-8")
