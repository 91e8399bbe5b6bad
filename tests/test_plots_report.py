"""Figures and reports on a real fit: classifiers 1 (nbc) vs 3 (hnb) of the paper's data on its first 8 datasets."""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import re
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from mlflow_bayescompare import plots, report
from mlflow_bayescompare.hierarchical import hierarchical_test
from mlflow_bayescompare.report import ReportContext, format_probability

DATA = Path(__file__).parent / "data" / "uci_classification.csv"
SCRIPT = "<script>alert(1)</script>"
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _scores(df: pd.DataFrame, classifier: int, datasets: list[int]) -> np.ndarray:
    rows = df[(df.ClassifierID == classifier) & df.DatasetID.isin(datasets)]
    rows = rows.sort_values(["DatasetID", "Key.Run", "Key.Fold"])
    return rows["Percent.correct"].to_numpy().reshape(len(datasets), 100)


@pytest.fixture(scope="module")
def res():
    df = pd.read_csv(DATA)
    datasets = sorted(df.DatasetID.unique())[:8]
    return hierarchical_test(_scores(df, 1, datasets), _scores(df, 3, datasets), rope=0.01, folds=10, seed=1,
                             model_a="nbc", model_b="hnb", datasets=[f"uci-{d}" for d in datasets],
                             sensitivity=True)


@pytest.fixture(scope="module")
def figures(res):
    return plots.all_figures(res)


@pytest.fixture(scope="module")
def pngs(figures):
    return {name: plots.figure_png(fig) for name, fig in figures.items()}


def _hostile(res):
    """The same result with a script tag as model A and Markdown metacharacters in the dataset names."""
    shrinkage = res.shrinkage.copy()
    shrinkage["dataset"] = [f"d|{i}`*_[x]" for i in range(len(shrinkage))]
    return dataclasses.replace(res, model_a=SCRIPT, verdict=f"{SCRIPT} is not better", shrinkage=shrinkage)


def _runs(res, n_extra=0):
    runs = [{"model": m, "dataset": d, "run_id": f"{i:032x}", "experiment_id": "7"}
            for i, (m, d) in enumerate((m, d) for m in (res.model_a, res.model_b) for d in res.shrinkage.dataset)]
    runs += [{"model": "x", "dataset": "y", "run_id": f"e{i:031x}", "experiment_id": "7"} for i in range(n_extra)]
    return runs


# --- figures ------------------------------------------------------------------------------------------------------


def test_all_figures_are_figures_and_leave_pyplot_alone(res):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    figs = plots.all_figures(res)
    assert set(figs) == {"simplex", "posterior", "shrinkage", "model_fit"}
    assert all(isinstance(f, Figure) for f in figs.values())
    assert plt.get_fignums() == before


def test_simplex_shows_every_draw_as_density_and_the_probabilities(res, figures):
    ax = figures["simplex"].axes[0]
    hexbins = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_array() is not None]
    assert len(hexbins) == 1
    assert hexbins[0].get_array().sum() == len(res.next_probs)
    texts = " ".join(t.get_text() for t in ax.texts)
    for p in (res.p_left, res.p_rope, res.p_right):
        assert f"P = {p:.3f}" in texts
    # greater is better: the paper's left (first vertex) is "B better"
    assert f"p({res.model_b} better)" in texts and f"p({res.model_a} better)" in texts
    assert len(figures["simplex"].axes) == 2  # the triangle and its colour bar


def test_posterior_predictive_is_a_density_and_rope_is_marked(res, figures):
    top, bottom = figures["posterior"].axes
    x, y = top.lines[0].get_data()
    assert 0.95 < np.trapezoid(y, x) <= 1.001
    for ax in (top, bottom):
        texts = [t.get_text() for t in ax.texts]
        assert f"← {res.model_b} better" in texts and f"{res.model_a} better →" in texts
        assert any(f"rope ±{res.rope:g}" == h for h in ax.get_legend_handles_labels()[1])


def test_shrinkage_has_one_row_per_dataset_and_grows_with_datasets(res, figures):
    ax = figures["shrinkage"].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(res.shrinkage["dataset"])
    hdi = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(hdi[0].get_segments()) == len(res.shrinkage)

    many = pd.concat([res.shrinkage] * 13, ignore_index=True).head(100)
    many["dataset"] = [f"a rather long common prefix before dataset {i:03d}" for i in range(100)]
    big = plots.plot_shrinkage(dataclasses.replace(res, shrinkage=many))
    assert big.get_figheight() > 3 * figures["shrinkage"].get_figheight()
    labels = [t.get_text() for t in big.axes[0].get_yticklabels()]
    assert len(labels) == 100 and len(set(labels)) == 100 and max(map(len, labels)) <= 32


def test_model_fit_compares_predictive_with_kde_of_shrinkage(res, figures):
    ax = figures["model_fit"].axes[0]
    assert len(ax.lines) == 2  # predictive and KDE
    rug = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(rug[0].get_segments()) == len(res.shrinkage)


def test_pngs_decode(pngs):
    for name, png in pngs.items():
        image = matplotlib.image.imread(io.BytesIO(png), format="png")
        height, width = image.shape[:2]
        assert 300 < height < 4000 and 500 < width < 1200, name


# --- Markdown -----------------------------------------------------------------------------------------------------


def test_markdown_has_verdict_probabilities_and_reading_aids(res):
    md = report.render_markdown(res, ReportContext(metric="accuracy"))
    assert f"**{report.md_escape(res.verdict)}**" in md
    for p in (res.p_a_better, res.p_rope, res.p_b_better):
        assert format_probability(p) in md
    assert f"P(A better): {res.model_a} better than {res.model_b}" in md
    assert "signed-rank" in md and f"p = {res.signed_rank_p:.3f}" in md
    assert "Conclusion stable" in md or "Conclusion changes when" in md
    assert "posterior odds" in md and "weak" in md
    assert md.count("> ⚠️ **Warning:**") == len(res.diagnostics["warnings"])


def test_markdown_warns_and_links_runs(res):
    warned = dataclasses.replace(res, diagnostics={**res.diagnostics, "warnings": ["3 divergent transitions"]})
    ctx = ReportContext(tracking_url="http://mlflow.example:5000/", experiment_ids=["7"],
                        source_runs=_runs(res, n_extra=60), comparison_run_id="c0ffee")
    md = report.render_markdown(warned, ctx)
    assert "> ⚠️ **Warning:** 3 divergent transitions" in md
    links = re.findall(r"\]\((http://mlflow\.example:5000/#/experiments/7/runs/[0-9a-f]{32})\)", md)
    assert len(links) == report.MAX_RUN_LINKS
    assert f"and {len(res.shrinkage) * 2 + 60 - report.MAX_RUN_LINKS} more runs" in md
    assert "[c0ffee](http://mlflow.example:5000/#/runs/c0ffee)" in md

    plain = report.render_markdown(res, ReportContext(source_runs=_runs(res)))
    assert "](" not in plain and f"{0:032x}" in plain


def test_markdown_escapes_user_strings(res):
    md = report.render_markdown(_hostile(res))
    assert SCRIPT not in md and ESCAPED_SCRIPT in md
    assert "`" not in md and "d|" not in md
    for block in md.split("\n\n"):  # every table keeps its column count despite the "|" in names
        rows = [line for line in block.splitlines() if line.startswith("|")]
        assert len({line.count("|") for line in rows}) <= 1


# --- HTML ---------------------------------------------------------------------------------------------------------


def test_html_is_self_contained(res, pngs):
    page = report.render_html(res, pngs, ReportContext(metric="accuracy", source_runs=_runs(res)))
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page)
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 4
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert html.escape(res.verdict) in page
    for p in (res.p_a_better, res.p_rope, res.p_b_better):
        assert format_probability(p) in page
    for dataset in res.shrinkage["dataset"]:
        assert f"<td>{dataset}</td>" in page


def test_html_links_only_to_the_tracking_server(res, pngs):
    ctx = ReportContext(tracking_url="https://mlflow.example", source_runs=_runs(res), comparison_run_id="c0ffee")
    page = report.render_html(res, pngs, ctx)
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert len(hrefs) == 2 * len(res.shrinkage) + 1
    assert all(h.startswith("https://mlflow.example/#/") for h in hrefs)
    assert not re.search(r'src="https?:', page)


def test_html_escapes_user_strings(res, pngs):
    hostile = _hostile(res)
    page = report.render_html(hostile, pngs, ReportContext(title=SCRIPT, metric=SCRIPT, source_runs=_runs(hostile)))
    assert SCRIPT not in page and "<script" not in page
    assert ESCAPED_SCRIPT in page
