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
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from mlflow_bayescompare.families.hierarchical import plots, report
from mlflow_bayescompare.families.hierarchical.engine import hierarchical_test
from mlflow_bayescompare.families.hierarchical.report import ReportContext
from mlflow_bayescompare.shared.figures import figure_png, save
from mlflow_bayescompare.shared.markdown import escape as md_escape
from mlflow_bayescompare.shared.report_html import FIGURE_CAPTIONS, format_numbers, format_probability
from mlflow_bayescompare.vocabulary.outcomes import COLORS, OUTCOMES

DATA = Path(__file__).parent / "data" / "uci_classification.csv"
SCRIPT = "<script>alert(1)</script>"
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
#: What showdown's GitHub flavour (MLflow's run description) turns into links or markup in plain text.
SHOWDOWN_AUTOLINKS = {
    "url": re.compile(r"(https?|ftp|dict)://|www\.", re.I),
    "e-mail or @mention": re.compile(r"@"),
    "emoji": re.compile(r":[^\s:]+:"),
}
URL_NAMES = {"model_a": "https://evil.example/x", "model_b": "www.evil.example", "metric": "mail@evil.example"}


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
    return {name: figure_png(fig) for name, fig in figures.items()}


def _hostile(res):
    """The same result with a script tag as model A and Markdown metacharacters in the dataset names."""
    shrinkage = res.shrinkage.copy()
    shrinkage["dataset"] = [f"d|{i}`*_[x]" for i in range(len(shrinkage))]
    return dataclasses.replace(res, model_a=SCRIPT, verdict=f"{SCRIPT} is not better", shrinkage=shrinkage)


def _urls(res):
    """Model, dataset and verdict names that are bare URLs, e-mail addresses, @mentions and emoji codes."""
    shrinkage = res.shrinkage.copy()
    shrinkage["dataset"] = ["https://d.example/p", "www.d.example", "a@d.example", "@bob", ":smile:",
                            "ftp://d.example", "WWW.D.EXAMPLE", "d.example"][: len(shrinkage)]
    return dataclasses.replace(res, model_a=URL_NAMES["model_a"], model_b=URL_NAMES["model_b"], shrinkage=shrinkage,
                               verdict=f"{URL_NAMES['model_a']} is better :+1:")


def _checked(res):
    """The result with the model check's columns set: dataset 1 not fitted (k̂ 0.9), dataset 2 in conflict."""
    shrinkage = res.shrinkage.copy()
    shrinkage["pareto_k"] = [0.1, 0.9, *[0.2] * (len(shrinkage) - 2)]
    shrinkage["conflict"] = [i == 2 for i in range(len(shrinkage))]
    return dataclasses.replace(res, shrinkage=shrinkage, diagnostics={**res.diagnostics, "warnings": [
        "1 dataset(s) the Student-t population does not fit (PSIS-LOO Pareto k̂ > 0.7): x", "3 divergent transitions"]})


def _runs(res, n_extra=0, experiment_id="7"):
    runs = [{"model": m, "dataset": d, "run_id": f"{i:032x}", "experiment_id": experiment_id}
            for i, (m, d) in enumerate((m, d) for m in (res.model_a, res.model_b) for d in res.shrinkage.dataset)]
    runs += [{"model": "x", "dataset": "y", "run_id": f"e{i:031x}", "experiment_id": "7"} for i in range(n_extra)]
    return runs


def _renderer(fig):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


# --- figures ------------------------------------------------------------------------------------------------------


def test_all_figures_are_figures_and_leave_pyplot_alone(res):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    figs = plots.all_figures(res)
    assert set(figs) == {"simplex", "posterior", "shrinkage", "model_fit"}
    assert all(isinstance(f, Figure) for f in figs.values())
    assert plt.get_fignums() == before


def test_the_palette_lives_in_result_only():
    for name in ("A_COLOR", "B_COLOR", "ROPE_COLOR", "outcome_labels", "outcome_colors"):
        assert not hasattr(plots, name) and not hasattr(report, name)


def test_simplex_puts_a_left_rope_on_top_b_right(res, figures):
    ax = figures["simplex"].axes[0]
    [hexbin] = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_array() is not None]
    counts = np.asarray(hexbin.get_array(), dtype=float)
    assert counts.sum() == len(res.next_probs)
    areas = res.orientation.orient(*np.asarray(res.next_probs).T)  # vertices (0, 0), (0.5, 0.87), (1, 0)
    expected = (0.5 * areas["rope"].mean() + areas["b_better"].mean(), np.sqrt(3) / 2 * areas["rope"].mean())
    assert np.average(hexbin.get_offsets(), axis=0, weights=counts) == pytest.approx(expected, abs=0.02)
    texts = {t.get_position(): t for t in ax.texts}
    left, top, right = (texts[min(texts)], texts[max(texts, key=lambda p: p[1])], texts[max(texts)])
    for text, outcome, label in ((left, "a_better", "nbc better"), (top, "rope", "practically equivalent"),
                                 (right, "b_better", "hnb better")):
        assert text.get_text() == f"p({label})\nP = {res.probabilities[outcome]:.3f}"
        assert to_hex(text.get_color()) == COLORS[outcome]


def test_posterior_predictive_is_smooth_and_keeps_the_areas(res, figures):
    top, _ = figures["posterior"].axes
    x, y = top.lines[0].get_data()
    assert 0.98 < np.trapezoid(y, x) <= 1.001
    curvature = np.gradient(np.gradient(y, x), x)
    signs = np.sign(curvature[np.abs(curvature) > 1e-3 * np.abs(curvature).max()])
    assert np.count_nonzero(np.diff(signs)) <= 4  # two inflections; the 2000-spike mixture had 16
    areas = res.orientation.orient(*np.asarray(res.next_probs).T)
    for outcome, (lo, hi) in res.orientation.orient((-np.inf, -res.rope), (-res.rope, res.rope),
                                                    (res.rope, np.inf)).items():
        inside = (x >= lo) & (x <= hi)
        assert np.trapezoid(y[inside], x[inside]) == pytest.approx(areas[outcome].mean(), abs=0.02)


def test_density_panels_shade_each_side_in_its_model_colour(res, figures):
    for ax in figures["posterior"].axes:
        fills = [to_hex(c.get_facecolor()[0], keep_alpha=False) for c in ax.collections
                 if isinstance(c, PolyCollection)]
        assert fills == [COLORS[o] for o in OUTCOMES]
        texts = {t.get_text(): to_hex(t.get_color()) for t in ax.texts}
        assert texts == {"← hnb better": COLORS["b_better"], "nbc better →": COLORS["a_better"]}
    labels = [t.get_text() for t in figures["posterior"].axes[1].get_legend().get_texts()]
    assert labels[::2] == [f"nbc better: P = {res.p_delta0_a_better:.3f}",  # the first row (legends fill by column)
                           f"practically equivalent: P = {res.p_delta0_rope:.3f}",
                           f"hnb better: P = {res.p_delta0_b_better:.3f}"]


def test_titles_side_labels_and_legends_do_not_overlap(res):
    fig = plots.plot_posterior(dataclasses.replace(res, model_a="a" * 30, model_b="b" * 30))
    renderer = _renderer(fig)
    for ax in fig.axes:
        boxes = [ax.title.get_window_extent(renderer), ax.get_legend().get_window_extent(renderer),
                 *(t.get_window_extent(renderer) for t in ax.texts)]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        assert 0 <= boxes[1].x0 and boxes[1].x1 <= fig.bbox.x1  # the legend fits the figure


def test_shrinkage_has_one_row_per_dataset_and_grows_with_datasets(res, figures):
    ax = figures["shrinkage"].axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert [label.split("  ⚠")[0] for label in labels] == list(res.shrinkage["dataset"])
    [hdi] = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(hdi.get_segments()) == len(res.shrinkage)

    many = pd.concat([res.shrinkage] * 13, ignore_index=True).head(100)
    many["dataset"] = [f"a rather long common prefix before dataset {i:03d}" for i in range(100)]
    big = plots.plot_shrinkage(dataclasses.replace(res, shrinkage=many.drop(columns=["pareto_k", "conflict"])))
    assert big.get_figheight() > 3 * figures["shrinkage"].get_figheight()
    labels = [t.get_text() for t in big.axes[0].get_yticklabels()]
    assert len(labels) == 100 and len(set(labels)) == 100 and max(map(len, labels)) <= 32


def test_shrinkage_keeps_the_axis_on_the_bulk_and_marks_what_it_clips(res):
    twelve = pd.concat([res.shrinkage] * 2, ignore_index=True).head(12)
    twelve["mle"] = twelve["shrunk"]
    twelve.loc[3, ["mle", "hdi_high"]] = [1.5, 1.6]  # one mean difference far beyond the others
    ax = plots.plot_shrinkage(dataclasses.replace(res, shrinkage=twelve)).axes[0]
    lo, hi = ax.get_xlim()
    bulk = twelve.drop(index=3)
    assert hi < 0.1 and (bulk["hdi_high"].max() - bulk["hdi_low"].min()) / (hi - lo) > 0.8
    assert [(t.get_text(), t.get_position()) for t in ax.texts] == [("HDI 1.6, MLE 1.5", (hi, 3 - 0.1))]
    arrows = [line for line in ax.lines if line.get_marker() == ">"]
    assert [line.get_xydata().tolist() for line in arrows] == [[[hi, 3.0]]]


def test_shrinkage_marks_the_model_check(res):
    ax = plots.plot_shrinkage(_checked(res)).axes[0]
    labels = ax.get_yticklabels()
    flagged = {i: t.get_text() for i, t in enumerate(labels) if "⚠" in t.get_text()}
    assert flagged == {1: "uci-2  ⚠ $\\hat{k}$ 0.90", 2: "uci-3  ⚠ conflict"}
    assert {to_hex(labels[i].get_color()) for i in flagged} == {plots.FLAG_COLOR}
    unchecked = res.shrinkage.drop(columns=["pareto_k", "conflict"])
    ax = plots.plot_shrinkage(dataclasses.replace(res, shrinkage=unchecked)).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(res.shrinkage["dataset"])


def test_model_fit_compares_predictive_with_kde_of_shrinkage(res, figures):
    ax = figures["model_fit"].axes[0]
    predictive, kde = ax.lines
    assert to_hex(predictive.get_color()) not in COLORS.values()  # blue and orange mean the models
    x, y = predictive.get_data()
    assert 0.98 < np.trapezoid(y, x) <= 1.001
    [rug] = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert sorted(s[0][0] for s in rug.get_segments()) == pytest.approx(sorted(res.shrinkage["shrunk"]))


def test_the_model_fit_plot_says_how_to_read_it(res, pngs):
    """Its caption, in the report and the run's description, says what is plotted, what a good fit looks like and
    what the usual mismatch (a predictive wider than the shrunk estimates) means."""
    guide = FIGURE_CAPTIONS["model_fit"]
    for words in ("predictive density", "shrinkage estimates", "when the model fits", "Student-t", "towards δ0"):
        assert words in guide
    page = report.render_html(res, pngs)
    assert re.search(r'<img alt="model_fit"[^>]*><figcaption>' + re.escape(html.escape(guide)), page)
    md = str(report.render_markdown(res))
    assert "#### Model fit\n\n" in md and f"{guide} Figure: plots/model_fit.png." in html.unescape(md)
    assert "Model fit" not in str(report.render_markdown(res, figures=False))  # a matrix's pair run without figures


def test_pngs_are_sharp_at_twice_the_size(figures, pngs):
    for name, png in pngs.items():
        height, width = matplotlib.image.imread(io.BytesIO(png), format="png").shape[:2]
        fig = figures[name]
        assert (width, height) == (round(fig.get_figwidth() * 200), round(fig.get_figheight() * 200)), name


def test_save_chooses_the_format_by_suffix(figures, tmp_path):
    fig = figures["model_fit"]
    assert save(fig, tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in save(fig, tmp_path / "f.svg").read_bytes()[:400]
    assert save(fig, tmp_path / "f.PDF").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ValueError, match="png, .svg or .pdf"):
        save(fig, tmp_path / "f.jpg")


# --- Markdown -----------------------------------------------------------------------------------------------------


def test_markdown_answers_both_questions_side_by_side(res):
    md = str(report.render_markdown(res, ReportContext(metric="accuracy")))
    assert f"**{md_escape(res.verdict)}**" in md
    rows = [f"| nbc better | {res.p_a_better:.3f} | {res.p_delta0_a_better:.3f} |",
            f"| practically equivalent (±0.01) | {res.p_rope:.3f} | {res.p_delta0_rope:.3f} |",
            f"| hnb better | {res.p_b_better:.3f} | {res.p_delta0_b_better:.3f} |"]
    assert "\n".join(rows) in md
    assert "decision (threshold 0.95): inconclusive" in md and res.decision == "inconclusive"
    assert md_escape(report.NEXT_DATASET) in md and md_escape(report.MEAN_DIFFERENCE) in md
    assert f"| nbc better : hnb better | {res.odds['a_better/b_better']:.2f} |" in md
    assert f"p = {res.signed_rank_p:.3f}" in md
    assert "Conclusion stable: inconclusive under all 9 settings tried" in md


def test_markdown_lists_the_model_check_once(res):
    md = str(report.render_markdown(_checked(res)))
    assert "> ⚠️ **Model check.** Pareto k̂ &gt; 0.7: the Student-t population does not fit the dataset" in md
    assert "> * Dataset uci-2: Pareto k̂ 0.90: the Student-t population does not fit this dataset; the paper" in md
    assert "> * Dataset uci-3: conflict: its own data say" in md
    assert md.count("> ⚠️ **Warning:**") == 1 and "> ⚠️ **Warning:** 3 divergent transitions" in md
    unchecked = res.shrinkage.drop(columns=["pareto_k", "conflict"])
    plain = str(report.render_markdown(dataclasses.replace(_checked(res), shrinkage=unchecked)))
    assert "Model check" not in plain and plain.count("> ⚠️ **Warning:**") == 2


def test_markdown_links_runs_by_relative_routes(res):
    ctx = ReportContext(experiment_ids=["7"], source_runs=_runs(res, n_extra=60), comparison_run_id="c0ffee",
                        comparison_experiment_id="9")
    md = str(report.render_markdown(res, ctx))
    links = re.findall(r"\]\(([^)]*)\)", md)
    run = r"#/experiments/7/runs/[0-9a-f]{32}\?workflowType=machine_learning"  # MLflow's model-training view
    runs = [link for link in links if re.fullmatch(run, link)]
    assert len(runs) == report.MAX_RUN_LINKS
    assert set(links) - set(runs) == {"#/experiments/7?workflowType=machine_learning",
                                      "#/experiments/9/runs/c0ffee?workflowType=machine_learning"}
    assert f"and {len(res.shrinkage) * 2 + 60 - report.MAX_RUN_LINKS} more runs" in md
    assert not re.search("https?:", md)
    several = str(report.render_markdown(res, ReportContext(source_runs=_runs(res, experiment_id=None))))
    assert f"[{0:032x}](#/runs/{0:032x})" in several


def test_markdown_escapes_user_strings(res):
    md = str(report.render_markdown(_hostile(res)))
    assert "<script" not in md and SCRIPT in html.unescape(md)
    assert "`" not in md and "d|" not in md
    for block in md.split("\n\n"):  # every table keeps its column count despite the "|" in names
        rows = [line for line in block.splitlines() if line.startswith("|")]
        assert len({line.count("|") for line in rows}) <= 1


def test_markdown_names_never_become_links(res):
    hostile = _urls(res)
    md = str(report.render_markdown(hostile, ReportContext(metric=URL_NAMES["metric"], source_runs=_runs(hostile))))
    for kind, pattern in SHOWDOWN_AUTOLINKS.items():
        assert not pattern.search(md), kind
    shown = html.unescape(md)
    assert all(name in shown for name in [*URL_NAMES.values(), *hostile.shrinkage["dataset"]])
    assert md_escape("0.950 and Sec. 3") == "0.950 and Sec. 3"  # numbers and sentences stay readable


# --- numbers ------------------------------------------------------------------------------------------------------

EXPONENT_OR_NEGATIVE_ZERO = re.compile(r"\d[eE][-+]?\d|-0\.0*(?![0-9]*[1-9])")


def test_one_rule_for_probabilities_and_one_for_metric_values():
    """Probabilities: three decimals, ``<0.001``/``>0.999`` at the ends, a half rounded up as the page's script
    rounds it, never a negative zero.  Values in metric units: one number of decimals per column, no exponent."""
    probabilities = (6.66e-18, -2.7e-17, 0.0625, 0.0005, 0.5, 0.99999, 1.0, None, float("nan"))
    assert [format_probability(p) for p in probabilities] == \
        ["<0.001", "0.000", "0.063", "0.001", "0.500", ">0.999", "1.000", "–", "–"]
    assert format_numbers([0.03544, 0.01449, 3.988e-05, 0.0503]) == ["0.0354", "0.0145", "0.0000", "0.0503"]
    assert format_numbers([-1e-9, 0.5, None]) == ["0.000", "0.500", "–"]
    assert format_numbers([1.588e-06, 0.7, 0.71234]) == ["0.000", "0.700", "0.712"]
    assert format_numbers([32.42, 1.004, 85.43]) == ["32.4", "1.0", "85.4"]


def _decimals(cells) -> set[int]:
    return {len(c.rpartition(".")[2]) if "." in c else 0 for c in cells}


def test_reports_write_metric_values_with_one_number_of_decimals_per_column(res):
    """The hierarchical report's numbers: no exponent or negative zero, each per-dataset column and each parameter
    with one number of decimals, the probabilities by the one rule."""
    b = report.blocks(res, ReportContext())
    per_dataset, parameters = b["per_dataset"], b["parameters"]
    cells = [c for t in (per_dataset, parameters) for row in t.rows for c in row[1:]]
    assert not [c for c in cells if EXPONENT_OR_NEGATIVE_ZERO.search(str(c))]
    for column in (2, 3):  # MLE, shrunk
        assert len(_decimals([row[column] for row in per_dataset.rows])) == 1
    assert len(_decimals([part for row in per_dataset.rows for part in row[4].split(" to ")])) == 1
    for row in parameters.rows:
        assert len(_decimals([*row[1:4], *row[4].split(" to ")])) == 1, row
    shrunk = [res.orientation.orient(r.p_left, r.p_rope, r.p_right) for r in res.shrinkage.itertuples()]
    assert [row[5:8] for row in per_dataset.rows] == [[format_probability(s[o]) for o in OUTCOMES] for s in shrunk]


# --- HTML ---------------------------------------------------------------------------------------------------------


def test_html_is_self_contained(res, pngs):
    page = report.render_html(res, pngs, ReportContext(metric="accuracy", source_runs=_runs(res)))
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page)
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    images = re.findall(r'<img alt="(\w+)" width="(\d+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert [name for name, _, _ in images] == ["simplex", "posterior", "shrinkage", "model_fit"]
    for name, width, data in images:
        assert base64.b64decode(data) == pngs[name]
        assert int(width) == round(int.from_bytes(pngs[name][16:20], "big") / 2)  # 200 dpi shown at 100
    assert html.escape(res.verdict) in page
    for dataset in res.shrinkage["dataset"]:
        assert f"<td>{dataset}</td>" in page


def test_html_shows_both_questions_in_outcome_order(res, pngs):
    """Titled as the page titles them: "Next dataset" (the headline, which the page shows above the report) and
    "Mean difference across datasets (δ0)"; the run description's columns say the same."""
    page = report.render_html(res, pngs)
    assert re.findall(r'<div class="card[^"]*"><h2>([^<]*)</h2>', page)[:2] == [
        "Next dataset", html.escape("Mean difference across datasets (δ0)")]
    assert "| outcome | Next dataset | Mean difference across datasets (δ0) |" in str(report.render_markdown(res))
    for title, probs in (("Next dataset", res.probabilities), ("Mean difference across datasets (δ0)",
                                                                res.delta0_probs)):
        card = page[page.index(f"<h2>{html.escape(title)}</h2>"):]
        legend = re.findall(r'<span style="--c:(#\w+)">([^<]*): <b>([\d.]+)</b>', card)[:3]
        assert legend == [(COLORS["a_better"], "nbc better", f"{probs['a_better']:.3f}"),
                          (COLORS["rope"], "practically equivalent (±0.01)", f"{probs['rope']:.3f}"),
                          (COLORS["b_better"], "hnb better", f"{probs['b_better']:.3f}")]


def test_html_flags_the_model_check(res, pngs):
    page = report.render_html(_checked(res), pngs)
    assert re.findall(r'<tr class="flag"><td>([^<]*)</td>', page) == ["uci-2", "uci-3"]
    assert page.count("<li>Dataset ") == 2 and "Pareto k̂ &gt; 0.7" in page
    assert page.count('<div class="warn">') == 2  # the model check and the divergences


def test_html_links_relative_to_mlflow_ui(res, pngs):
    ctx = ReportContext(experiment_ids=["7"], source_runs=_runs(res), comparison_run_id="c0ffee",
                        comparison_experiment_id="7")
    hrefs = re.findall(r'href="([^"]*)"', report.render_html(res, pngs, ctx))
    assert len(hrefs) == 2 * len(res.shrinkage) + 2
    assert {"../#/experiments/7?workflowType=machine_learning",
            "../#/experiments/7/runs/c0ffee?workflowType=machine_learning",
            f"../#/experiments/7/runs/{0:032x}?workflowType=machine_learning"} <= set(hrefs)
    assert all(h.startswith("../#/") for h in hrefs)


def test_html_escapes_user_strings(res, pngs):
    hostile = _hostile(res)
    page = report.render_html(hostile, pngs, ReportContext(title=SCRIPT, metric=SCRIPT, source_runs=_runs(hostile)))
    assert SCRIPT not in page and "<script" not in page
    assert ESCAPED_SCRIPT in page
    urls = _urls(res)
    page = report.render_html(urls, pngs, ReportContext(metric=URL_NAMES["metric"], source_runs=_runs(urls)))
    assert all(h.startswith("../#/") for h in re.findall(r'href="([^"]*)"', page))
    assert html.escape(URL_NAMES["model_a"]) in page
