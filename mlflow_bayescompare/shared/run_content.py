"""What every run a family writes shares: the :class:`Bundle` (a run's name, tags, params and metrics, and a
directory of its artifacts, computed before the run is touched: :mod:`...runs.runlog` writes it), the run's name,
a comparison's tags and params, the description cut to fit a tag, and the run of a two-model test whose report shows
one figure.  Each family's own run writer (its ``run`` module) builds its bundle from these; building needs no
MLflow server, so a failure never leaves a half-written run, and it can be done in a worker process."""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_TAG_VAL_LENGTH

from ..vocabulary import tags as T
from ..vocabulary.options import WARMUP
from ..vocabulary.outcomes import divergent_transitions, jsonable
from ..vocabulary.versions import stan_version
from .markdown import Markdown, raw

__all__ = ["Bundle", "PackedBundle", "run_name", "models_run_name", "new_directory", "comparison_tags",
           "comparison_params", "diagnostics_problem", "write_posterior",
           "fit_tag", "param_value", "finite", "one_figure_bundle", "NO_REPORT_NOTE"]

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
    #: the run's description as written (its tag may be cut to fit): a decision on several metrics nests it
    description: Markdown | None = field(default=None, repr=False)

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
        return PackedBundle(self.name, self.tags, self.params, self.metrics, files, self.description)


@dataclass
class PackedBundle:
    """A :class:`Bundle` whose artifacts travel as bytes (``files``, by relative path)."""

    name: str
    tags: dict[str, str]
    params: dict[str, str]
    metrics: dict[str, float]
    files: dict[str, bytes]
    description: Markdown | None = None

    def unpacked(self, directory: Path) -> Bundle:
        """The bundle again, its artifacts written into ``directory``."""
        for relative, content in self.files.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        return Bundle(self.name, self.tags, self.params, self.metrics, directory, description=self.description)


def run_name(model_a: str, model_b: str, metric: str) -> str:
    """The name of a comparison run: ``rf vs svm · accuracy``."""
    return f"{model_a} vs {model_b} · {metric}"


def models_run_name(kind: str, count: int, metric: str) -> str:
    """The name of a matrix or a ranking run of ``count`` models."""
    return f"{'ranking of ' if kind == 'ranking' else ''}{count} models · {metric}"


def new_directory(directory: Path | None, prefix: str) -> tuple[Path, tempfile.TemporaryDirectory | None]:
    """The folder of a bundle's artifacts: ``directory`` (made), else a new temporary one, returned to clean up."""
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        return directory, None
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    return Path(tmp.name), tmp


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
    return {key: param_value(value) for key, value in params.items() if value is not None}


def diagnostics_problem(result, rhat_limit: float = 1.01) -> str | None:
    """Why the sampler's output should not be trusted (R-hat above ``rhat_limit``, divergences), or ``None``."""
    diag = result.diagnostics
    problems = []
    rhat = diag.get("rhat_max")
    if rhat is not None and finite(rhat) and rhat > rhat_limit:
        problems.append(f"R-hat {rhat:.3f} > {rhat_limit}")
    if diag.get("divergences"):
        problems.append(divergent_transitions(int(diag["divergences"])))
    pairs = diag.get("pair_tests") or {}  # a ranking whose pairs are each fitted alone: the worst pair's
    if finite(pairs.get("rhat_max")) and pairs["rhat_max"] > rhat_limit:
        problems.append(f"a pair's fit: R-hat {pairs['rhat_max']:.3f} > {rhat_limit}")
    if pairs.get("divergences"):
        problems.append(f"the pairs' fits: {divergent_transitions(int(pairs['divergences']))}")
    return "; ".join(problems) or None


def write_posterior(result, path: Path) -> None:
    """The result's draws as arviz's NetCDF file, uncompressed: zlib shrinks MCMC draws by about 3% and takes three
    times as long to write (0.12 s more for a comparison of 100 datasets)."""
    result.to_inference_data().to_netcdf(str(path), compress=False)


def fit_tag(text: str, limit: int = MAX_TAG_VAL_LENGTH) -> str:
    """``text`` cut at a line boundary to fit in a tag value, saying so when cut."""
    if len(text) <= limit:
        return text
    note = "\n\n… (cut to fit; the full report is the artifact report.md)"
    cut = text[: limit - len(note)]
    return cut[: cut.rfind("\n") if "\n" in cut else len(cut)] + note


def param_value(value: Any) -> str:
    """``value`` as a run's param: JSON for a list or a mapping, cut to MLflow's longest param value."""
    text = json.dumps(value, default=jsonable) if isinstance(value, (list, tuple, dict)) else str(value)
    return text if len(text) <= MAX_PARAM_VAL_LENGTH else text[: MAX_PARAM_VAL_LENGTH - 1] + "…"


def finite(value: Any) -> bool:
    """Whether ``value`` is a finite number (what a run's metric can hold)."""
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def one_figure_bundle(result, report, all_figures, tables: dict, test_metrics: dict, *, metric: str,
                      experiment_ids: Sequence[str], layout: str | None, directory: Path | None,
                      figures: bool) -> Bundle:
    """The run of a two-model test whose report shows one figure (``all_figures(result)``, one figure by name, saved
    as ``plots/<name>``): ``report.md``, ``report.html`` (unless ``figures=False``), ``summary.json``, the ``tables``
    by file name, and the probabilities, odds and ``test_metrics`` as metrics."""
    from .figures import write_png_and_svg  # matplotlib: imported when a figure is drawn

    root, tmp = new_directory(directory, "bayescompare-")
    try:
        markdown = report.render_markdown(result, metric)
        if figures:
            (png,) = write_png_and_svg(all_figures(result), root / "plots").values()
            (root / "report.html").write_text(report.render_html(result, metric, png), encoding="utf-8")
        else:
            markdown = markdown.with_note(raw(NO_REPORT_NOTE))
        (root / "report.md").write_text(str(markdown), encoding="utf-8")
        (root / "summary.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
        for name, table in tables.items():
            table.to_csv(root / name, index=False)
        run_tags = {**comparison_tags(result, metric=metric, experiment_ids=experiment_ids, figures=figures),
                    T.NOTE: fit_tag(str(markdown))}
        metrics = {"p_a_better": result.p_a_better, "p_rope": result.p_rope, "p_b_better": result.p_b_better,
                   **test_metrics, **{"odds_" + k.replace("/", "_vs_"): v for k, v in result.odds.items()}}
        return Bundle(run_name(result.model_a, result.model_b, metric), run_tags,
                      comparison_params(result, layout=layout),
                      {k: float(v) for k, v in metrics.items() if finite(v)}, root, tmp, markdown)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise
