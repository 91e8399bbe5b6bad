"""Report step: everything a result's MLflow run will hold, computed before the run is touched.

A :class:`Bundle` is the run's name, tags, params and metrics plus a directory of artifacts (the reports, plots,
tables, the posterior and the Stan program with its data).  :mod:`.runlog` writes it to a run.  Building it needs no
MLflow, so a failure here never leaves a half-written run, and it can be built in a worker process.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_TAG_VAL_LENGTH

from ..vocabulary import tags as T
from ..vocabulary.keys import KEYS_ARTIFACT, named_keys
from ..vocabulary.options import WARMUP
from ..vocabulary.outcomes import divergent_transitions, jsonable
from ..vocabulary.versions import stan_version

PAIRS_TABLE = "pairs.parquet"  # a matrix run's table of its pairs

__all__ = ["PAIRS_TABLE", "write_pairs_table", "Bundle", "PackedBundle", "comparison_bundle", "matrix_bundle",
           "ranking_bundle", "ranking_metrics", "model_keys", "signed_rank_bundle", "correlated_t_bundle",
           "cached_pair_bundle", "comparison_tags", "comparison_params",
           "comparison_metrics", "diagnostics_problem", "source_runs", "run_name", "models_run_name", "fit_tag",
           "COMPARISON_ARTIFACTS", "PAIR_SUMMARY_ARTIFACTS"]

#: What a comparison run holds, relative to its artifact root; a matrix's pair run without its report
#: (:data:`PAIR_SUMMARY_ARTIFACTS`) holds the same minus the figures and report.html.
COMPARISON_ARTIFACTS = (
    "report.html", "report.md", "summary.json", "shrinkage.csv", "cv_differences.csv", "posterior.nc",
    *(f"plots/{name}.{ext}" for name in ("simplex", "posterior", "shrinkage", "model_fit") for ext in ("png", "svg")),
    "stan/hierarchical.stan", "stan/data.json",
)
PAIR_SUMMARY_ARTIFACTS = tuple(a for a in COMPARISON_ARTIFACTS if a != "report.html" and not a.startswith("plots/"))
#: Under the title of a pair run's description when it has no report: where the rest is.
NO_REPORT_NOTE = ("_This pair of a matrix holds no figures, HTML report or PSIS-LOO model check: run the matrix "
                  "with `--pair-reports` (`pair_reports=True`), or compare the pair on its own with this run's "
                  f"params (with `--warmup {WARMUP}` if its diagnostics say the full warm-up was kept)._")


@dataclass
class Bundle:
    """A run's content, computed: ``directory`` holds the artifacts.  :meth:`cleanup` (or ``with``) removes a
    directory the bundle made itself."""

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

    def packed(self) -> PackedBundle:
        """This bundle with its artifacts read into memory, and its own directory removed: to send it from another
        machine (a Ray worker) to the process that logs it."""
        files = {path.relative_to(self.directory).as_posix(): path.read_bytes()
                 for path in sorted(self.directory.rglob("*")) if path.is_file()}
        self.cleanup()
        return PackedBundle(self.name, self.tags, self.params, self.metrics, files)


@dataclass
class PackedBundle:
    """A :class:`Bundle` whose artifacts travel as bytes (``files``, by relative path)."""

    name: str
    tags: dict[str, str]
    params: dict[str, str]
    metrics: dict[str, float]
    files: dict[str, bytes]

    def unpacked(self, directory: Path) -> Bundle:
        """The bundle again, its artifacts written into ``directory``."""
        for relative, content in self.files.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        return Bundle(self.name, self.tags, self.params, self.metrics, directory)


def run_name(model_a: str, model_b: str, metric: str) -> str:
    return f"{model_a} vs {model_b} · {metric}"


def models_run_name(kind: str, count: int, metric: str) -> str:
    """The name of a matrix or a ranking run of ``count`` models."""
    return f"{'ranking of ' if kind == 'ranking' else ''}{count} models · {metric}"


def _directory(directory: Path | None, prefix: str) -> tuple[Path, tempfile.TemporaryDirectory | None]:
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        return directory, None
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    return Path(tmp.name), tmp


def comparison_bundle(result, tensor, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
                      run_id: str | None = None, experiment_id: str | None = None,
                      directory: Path | None = None, figures: bool = True) -> Bundle:
    """The comparison run of ``result`` (fitted on ``tensor``); ``run_id`` when the run already exists, in
    ``experiment_id`` (the report then links to itself); ``directory`` to write the artifacts into (default: a
    temporary directory); ``figures=False`` for a matrix's pair run without figures and HTML report."""
    from ..families.hierarchical import plots, report
    from ..sampling.programs import STAN_FILE
    from ..shared.figures import write_png_and_svg

    root, tmp = _directory(directory, "bayescompare-")
    try:
        ctx = report.ReportContext(title=run_name(result.model_a, result.model_b, metric), metric=metric,
                                   experiment_ids=[str(e) for e in experiment_ids],
                                   source_runs=source_runs(tensor, experiment_ids), comparison_run_id=run_id,
                                   comparison_experiment_id=experiment_id)
        markdown = report.render_markdown(result, ctx, figures=figures)
        if figures:
            pngs = write_png_and_svg(plots.all_figures(result), root / "plots")
            (root / "report.html").write_text(report.render_html(result, pngs, ctx), encoding="utf-8")
        else:
            markdown = _noting_no_report(markdown)
        (root / "stan").mkdir(exist_ok=True)
        (root / "report.md").write_text(markdown, encoding="utf-8")
        (root / "summary.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        result.shrinkage.to_csv(root / "shrinkage.csv", index=False)
        tensor.table.to_csv(root / "cv_differences.csv", index=False)
        _write_posterior(result, root / "posterior.nc")
        shutil.copyfile(STAN_FILE, root / "stan" / "hierarchical.stan")
        (root / "stan" / "data.json").write_text(json.dumps(result.stan_data, indent=1, default=jsonable))
        run_tags = {**comparison_tags(result, metric=metric, experiment_ids=experiment_ids, figures=figures),
                    T.NOTE: fit_tag(markdown)}
        return Bundle(ctx.title, run_tags, comparison_params(result, layout=layout), comparison_metrics(result),
                      root, tmp)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


def comparison_tags(result, *, metric: str, experiment_ids: Sequence[str], figures: bool = True) -> dict[str, str]:
    """The ``bayescompare.*`` tags of a comparison run (without the description); ``figures=False``: a matrix's
    pair run without figures and HTML report."""
    left_out = result.settings.get("datasets_left_out")
    return {
        **({} if figures else {T.REPORT: T.NO_REPORT}),
        **({T.DATASETS_LEFT_OUT: fit_tag(T.joined_names(left_out))} if left_out else {}),
        T.KIND: "comparison",
        T.TEST: result.test,
        T.MODEL_A: result.model_a,
        T.MODEL_B: result.model_b,
        T.METRIC: metric,
        T.VERDICT: result.verdict,
        T.DECISION: result.decision,
        T.SOURCE_EXPERIMENTS: ",".join(str(e) for e in experiment_ids),
        T.DIAGNOSTICS: diagnostics_problem(result) or "ok",
    }


def comparison_params(result, *, layout: str | None = None) -> dict[str, str]:
    """Everything needed to reproduce the fit: the engine's settings, the layout read and the versions used."""
    params: dict[str, Any] = {}
    for key, value in result.settings.items():
        if key == "versions":  # versions -> version.<package>
            params.update({f"{key.rstrip('s')}.{k}": v for k, v in value.items()})
        elif isinstance(value, (list, tuple)) and len(value) > 1 and all(v == value[0] for v in value):
            params[key] = value[0]  # one fold count / rho shared by every dataset
        elif value is not None:
            params[key] = value
    if layout is not None:
        params["layout"] = layout
    params["version.stan"] = stan_version(result.settings.get("backend"))
    return {key: _param_value(value) for key, value in params.items() if value is not None}


def comparison_metrics(result) -> dict[str, float]:
    """The numbers shown in MLflow's runs table and charts (non-finite values are left out; summary.json has them)."""
    diag = result.diagnostics
    metrics: dict[str, Any] = {
        "p_a_better": result.p_a_better,
        "p_rope": result.p_rope,
        "p_b_better": result.p_b_better,
        "p_delta0_a_better": result.p_delta0_a_better,
        "p_delta0_rope": result.p_delta0_rope,
        "p_delta0_b_better": result.p_delta0_b_better,
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
        "compile_seconds": diag.get("compile_seconds"),
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


def matrix_bundle(summary, rows, *, experiment_ids: Sequence[str], layout: str | None = None, ranking=None,
                  directory: Path | None = None, child_runs: bool = True,
                  run_params: dict[str, str] | None = None) -> Bundle:
    """The parent run of a matrix comparison: the matrices of P(row better than column) and P(rope) (plot and
    CSV) and the ranking: the ``ranking`` of all models (:func:`..tracking.ranking.engine.rank_scores`) when given (its
    tables and plots, as a ranking run holds them), else the pairs' summary.  ``rows`` are the pairs'
    :class:`~.matrix.PairRow` (their table, ``pairs.parquet``, is written by :func:`write_pairs_table` once the
    child runs are logged, or without them: ``child_runs=False``); ``run_params`` are added to its params (how the
    matrix ran)."""
    from ..families.ranking.report import JOINT_DIFFERS
    from ..shared.figures import write_png_and_svg
    from .matrix import dataset_count, matrix_figure, ranking_markdown

    root, tmp = _directory(directory, "bayescompare-matrix-")
    try:
        best = summary.ranking["model"].iloc[0]
        if ranking is not None:
            with ranking_bundle(ranking, metric=summary.metric, experiment_ids=experiment_ids, layout=layout,
                                directory=root) as bbt:
                best = bbt.tags[T.BEST]
            markdown = (bbt.tags[T.NOTE] + "\n" + ranking_markdown(summary, matrix_only=True, child_runs=child_runs)
                        + (f"\n{JOINT_DIFFERS}\n" if ranking.model == "hierarchical" else ""))
        else:
            markdown = ranking_markdown(summary, child_runs=child_runs)
            summary.ranking.to_csv(root / "ranking.csv", index=False)
        write_png_and_svg({"matrix": matrix_figure(summary)}, root)
        (root / "ranking.md").write_text(markdown, encoding="utf-8")
        summary.better.rename_axis("model").to_csv(root / "p_better.csv")
        summary.rope.rename_axis("model").to_csv(root / "p_rope.csv")
        params = comparison_params(rows[0], layout=layout)
        params["models"] = _param_value(list(summary.models))
        params.update(run_params or {})
        run_tags = {
            **({T.RANKING: ranking.model} if ranking is not None else {}),
            T.KIND: "matrix",
            T.MODELS: fit_tag(T.joined_names(summary.models)),
            T.METRIC: summary.metric,
            T.BEST: str(best),
            T.SOURCE_EXPERIMENTS: ",".join(str(e) for e in experiment_ids),
            T.NOTE: fit_tag(markdown),
            T.PAIRS_TABLE: PAIRS_TABLE,
        }
        metrics = {"n_models": float(len(summary.models)), "n_pairs": float(len(rows)),
                   "n_pairs_cached": float(sum(row.cached for row in rows)),
                   "n_datasets": float(max(dataset_count(r) for r in rows)),
                   **(ranking_metrics(ranking) if ranking is not None else {})}
        return Bundle(models_run_name("matrix", len(summary.models), summary.metric), run_tags, params, metrics,
                      root, tmp)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


def cached_pair_bundle(row, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
                       directory: Path | None = None) -> Bundle:
    """The run of a matrix's pair read from the cache (a :class:`~.matrix.PairRow` of an earlier matrix's pairs
    table): its verdict, probabilities, diagnostics and settings, no artifacts, and the run that fitted it
    (:data:`~..vocabulary.tags.CACHED_FROM`) when that matrix logged one."""
    from ..shared.report_html import format_probability

    root, tmp = _directory(directory, "bayescompare-")
    title = run_name(row.model_a, row.model_b, metric)
    where = (f"its posterior and tables are in run `{row.run_id}`" if row.run_id else
             "that matrix kept it in its pairs table only")
    markdown = (f"# {title}\n\n_Read from the cache of earlier matrices: the same scores, options, Stan program and "
                f"package version were fitted before; {where} (`--refresh` fits it again)._\n\n"
                f"**{row.verdict}**: P({row.model_a} better) = {format_probability(row.p_a_better)}, "
                f"P(rope) = {format_probability(row.p_rope)}, P({row.model_b} better) = "
                f"{format_probability(row.p_b_better)} ({row.test} test).\n")
    tags = {**comparison_tags(row, metric=metric, experiment_ids=experiment_ids, figures=False),
            **({T.CACHED_FROM: row.run_id} if row.run_id else {}), T.NOTE: fit_tag(markdown)}
    metrics = {"p_a_better": row.p_a_better, "p_rope": row.p_rope, "p_b_better": row.p_b_better,
               "n_datasets": row.n_datasets, **row.diagnostics}
    return Bundle(title, tags, comparison_params(row, layout=layout),
                  {key: float(v) for key, v in metrics.items() if _finite(v)}, root, tmp)


def write_pairs_table(rows, directory: Path, signer=None) -> None:
    """The matrix's pairs table (:func:`~.matrix.pairs_frame`) as ``pairs.parquet`` in ``directory``: every pair's
    probabilities, verdict, decision, test, diagnostics, child run and cache key, and with a
    :class:`~.cachekey.Signer` each row's ``signature`` (the pair cache reads only the rows signed for it)."""
    from .matrix import pairs_frame

    frame = pairs_frame(rows)
    if signer is not None:
        frame["signature"] = [signer.sign(row) for row in rows]
    frame.to_parquet(directory / PAIRS_TABLE, index=False)


def _write_posterior(result, path: Path) -> None:
    """The result's draws as arviz's NetCDF file, uncompressed: zlib shrinks MCMC draws by about 3% and takes three
    times as long to write (0.12 s more for a comparison of 100 datasets)."""
    result.to_inference_data().to_netcdf(str(path), compress=False)


def _noting_no_report(markdown: str) -> str:
    """``markdown`` with :data:`NO_REPORT_NOTE` under its title (a long description is cut at its end)."""
    title, _, rest = markdown.partition("\n\n")
    return f"{title}\n\n{NO_REPORT_NOTE}\n\n{rest}"


def fit_tag(text: str, limit: int = MAX_TAG_VAL_LENGTH) -> str:
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


def ranking_bundle(result, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
                   directory: Path | None = None) -> Bundle:
    """The run of a ranking of several models: its tables (the hierarchical model: ranking, pairs and versus; BBT:
    ranking, pairs, wins and the posterior predictive check; the joint model of one dataset: ranking, pairs and the
    fold scores), its figures (PNG and SVG: :func:`..tracking.ranking.plots.all_figures`), the reports, the posterior
    and, for the models sampled by Stan, the program with its data.
    Per model, the metrics ``p_best.<model>`` and ``mean_rank.<model>`` (on one dataset also
    ``diff_to_leader.<model>``), their keys listed with the models' names in :data:`..vocabulary.keys.KEYS_ARTIFACT`."""
    from ..families.ranking import plots as ranking_plots
    from ..families.ranking import report as ranking_report
    from ..families.ranking.engine import RANKING_PROGRAMS
    from ..sampling.programs import PROGRAMS
    from ..shared.figures import write_png_and_svg

    root, tmp = _directory(directory, "bayescompare-ranking-")
    try:
        pngs = write_png_and_svg(ranking_plots.all_figures(result), root / "plots")
        markdown = ranking_report.render_markdown(result, metric)
        (root / "report.md").write_text(markdown, encoding="utf-8")
        (root / "report.html").write_text(ranking_report.render_html(result, metric, pngs), encoding="utf-8")
        (root / "summary.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        for name, table in result.tables().items():
            table.to_csv(root / f"{name}.csv", index=False)
        _write_model_keys(result, root)
        _write_posterior(result, root / "posterior.nc")
        program = RANKING_PROGRAMS.get(result.model)  # the joint model of one dataset samples no Stan program
        if program:
            (root / "stan").mkdir(exist_ok=True)
            shutil.copyfile(PROGRAMS[program], root / "stan" / f"{program}.stan")
            (root / "stan" / "data.json").write_text(json.dumps(result.stan_data, indent=1, default=jsonable))
        models = T.joined_names(map(str, result.models))
        run_tags = {T.KIND: "ranking", T.RANKING: result.model, T.MODELS: fit_tag(models), T.METRIC: metric,
                    T.BEST: result.best,
                    T.SOURCE_EXPERIMENTS: ",".join(str(e) for e in experiment_ids),
                    T.DIAGNOSTICS: diagnostics_problem(result) or "ok", T.NOTE: fit_tag(markdown)}
        params = {k: v for k, v in comparison_params(result, layout=layout).items() if k != "datasets"}
        return Bundle(models_run_name("ranking", len(result.models), metric), run_tags, params,
                      ranking_metrics(result), root, tmp)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise


def ranking_metrics(result) -> dict[str, float]:
    """``p_best.<model>`` and ``mean_rank.<model>`` (keys MLflow accepts: :func:`model_keys`; on one dataset also
    ``diff_to_leader.<model>`` in metric units), the sizes and the sampler's health (or the joint model's ρ and
    Monte-Carlo error)."""
    metrics: dict[str, Any] = {"n_models": len(result.models), "n_datasets": len(result.settings.get("datasets", [])),
                               "rho": result.settings.get("rho"),
                               **{k: result.diagnostics.get(k) for k in ("rhat_max", "ess_bulk_min", "divergences",
                                                                          "sampling_seconds", "compile_seconds",
                                                                          "mc_se_max")}}
    for column, keys in model_keys(result).items():
        values = dict(zip(result.ranking["model"].astype(str), result.ranking[column]))
        metrics.update({key: values[model] for model, key in keys.items()})
    return {key: float(v) for key, v in metrics.items() if _finite(v)}


def model_keys(result) -> dict[str, dict[str, str]]:
    """Per metric of a ranking's models (``p_best``, ``mean_rank``, ``diff_to_leader``), each model's key
    (:func:`..vocabulary.keys.named_keys`)."""
    models = result.ranking["model"].astype(str)
    columns = [c for c in ("p_best", "mean_rank", "diff_to_leader") if c in result.ranking.columns]
    return {column: named_keys(column, models) for column in columns}


def _write_model_keys(result, root: Path) -> None:
    """The :data:`..vocabulary.keys.KEYS_ARTIFACT` of a ranking: ``{key: model}`` for each key :func:`model_keys`
    built."""
    mapping = {key: model for keys in model_keys(result).values() for model, key in keys.items()}
    (root / KEYS_ARTIFACT).write_text(json.dumps(mapping, indent=1, ensure_ascii=False), encoding="utf-8")


def signed_rank_bundle(result, means, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
                       directory: Path | None = None, figures: bool = True) -> Bundle:
    """The comparison run of a Bayesian signed-rank test on per-dataset means (``means``, a
    :class:`~..tracking.tensor.DatasetMeans`): its reports, the probability simplex, the means and the summary
    (``figures=False``: without the simplex and report.html, as :func:`comparison_bundle`)."""
    from ..families.hierarchical.plots import plot_simplex
    from ..families.signed_rank import report as signed_rank_report

    metrics = {"signed_rank_p": result.signed_rank_p, "n_datasets": len(result.datasets),
               **{k: result.diagnostics.get(k) for k in ("mc_se_max", "sampling_seconds")}}
    return _one_figure_bundle(result, signed_rank_report, "simplex", lambda: plot_simplex(result),
                              {"dataset_means.csv": means.table}, metrics, metric=metric,
                              experiment_ids=experiment_ids, layout=layout, directory=directory, figures=figures)


def correlated_t_bundle(result, *, metric: str, experiment_ids: Sequence[str], layout: str | None = None,
                        directory: Path | None = None, figures: bool = True) -> Bundle:
    """The comparison run of a Bayesian correlated t-test on the per-fold scores of one dataset: its reports, the
    posterior of the mean difference (``plots/posterior``), the per-fold scores (``cv_differences.csv``) and the
    summary (``figures=False``: without the figure and report.html, as :func:`comparison_bundle`)."""
    from ..families.correlated_t import plots as correlated_t_plots
    from ..families.correlated_t import report as correlated_t_report

    metrics = {"mean_difference": result.loc, "mean_difference_hdi_low": result.mean_difference["hdi_low"],
               "mean_difference_hdi_high": result.mean_difference["hdi_high"], "posterior_scale": result.scale,
               "rho": result.rho, "nadeau_bengio_p": result.nadeau_bengio_p, "n_differences": result.n}
    return _one_figure_bundle(result, correlated_t_report, "posterior",
                              lambda: correlated_t_plots.plot_posterior(result), {"cv_differences.csv": result.scores},
                              metrics, metric=metric, experiment_ids=experiment_ids, layout=layout,
                              directory=directory, figures=figures)


def _one_figure_bundle(result, report, figure_name: str, draw, tables: dict, test_metrics: dict, *, metric: str,
                       experiment_ids: Sequence[str], layout: str | None, directory: Path | None,
                       figures: bool) -> Bundle:
    """The run of a two-model test whose report shows one figure (``draw()``, saved as ``plots/<figure_name>``):
    ``report.md``, ``report.html`` (unless ``figures=False``), ``summary.json``, the ``tables`` by file name, and
    the probabilities, odds and ``test_metrics`` as metrics."""
    from ..shared.figures import write_png_and_svg

    root, tmp = _directory(directory, "bayescompare-")
    try:
        markdown = report.render_markdown(result, metric)
        if figures:
            png = write_png_and_svg({figure_name: draw()}, root / "plots")[figure_name]
            (root / "report.html").write_text(report.render_html(result, metric, png), encoding="utf-8")
        else:
            markdown = _noting_no_report(markdown)
        (root / "report.md").write_text(markdown, encoding="utf-8")
        (root / "summary.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        for name, table in tables.items():
            table.to_csv(root / name, index=False)
        run_tags = {**comparison_tags(result, metric=metric, experiment_ids=experiment_ids, figures=figures),
                    T.NOTE: fit_tag(markdown)}
        metrics = {"p_a_better": result.p_a_better, "p_rope": result.p_rope, "p_b_better": result.p_b_better,
                   **test_metrics, **{"odds_" + k.replace("/", "_vs_"): v for k, v in result.odds.items()}}
        return Bundle(run_name(result.model_a, result.model_b, metric), run_tags,
                      comparison_params(result, layout=layout),
                      {k: float(v) for k, v in metrics.items() if _finite(v)}, root, tmp)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise
