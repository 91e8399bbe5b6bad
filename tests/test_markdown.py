"""The runs' descriptions are inert: hostile model, dataset, metric and verdict names in every kind of description the
package writes (a comparison by each test, a matrix pair with and without its report, a matrix pair read from the
cache, a matrix with and without its ranking, a ranking by each model and against one model, a decision on several
metrics) become no link, image, HTML element, table
cell or heading — checked on the text, and through MLflow's own Markdown renderer (showdown's GitHub flavour, loaded
from MLflow's installed UI) in headless Chromium.  And the one writer of descriptions (:mod:`..shared.markdown`)
takes raw Markdown only from the package's constants."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import mlflow
import numpy as np
import pytest
from mlflow.entities import Metric
from servers import chromium_page, require_chromium

from mlflow_bayescompare.pipeline import compare as api
from mlflow_bayescompare.reads.cvlog import log_cv_scores
from mlflow_bayescompare.shared import markdown
from mlflow_bayescompare.vocabulary import tags as T

PACKAGE = Path(__file__).resolve().parents[1] / "mlflow_bayescompare"
FAST = {"chains": 2, "draws": 200, "seed": 5}
MODELS = ['<img src=x onerror=alert("a")>', "[x](javascript:alert(2))", "![x](http://evil.example/p.png)"]
DATASETS = ["`code` | pipe | ~~del~~", "line\nbreak **bold** # heading", "L" * 300, "https://evil.example/d",
            "@bob :smile: www.evil.example <b>b</b>"]
SECOND_METRIC = "javascript:evil.example/m www.evil.example"  # a metric name MLflow accepts


def test_raw_markdown_comes_only_from_the_package_constants():
    """Every ``raw(...)`` takes one string literal or UPPER_CASE name; ``Raw(...)`` is made in markdown.py only."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name == "Raw" and path.name != "markdown.py":
                found.append(f"{path.name}:{node.lineno}: Raw(...) outside markdown.py")
            if name == "raw":
                (arg,) = node.args
                constant = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                if not (constant or isinstance(arg, ast.Name) and arg.id.isupper()):
                    found.append(f"{path.name}:{node.lineno}: raw({ast.unparse(arg)})")
    assert found == []
    with pytest.raises(TypeError):  # a Markdown is made by a Description only
        markdown.Markdown(())


@pytest.fixture(scope="module")
def descriptions(tmp_path_factory, _empty_sqlite_db):
    """Every kind of description, written by the real pipeline into a sqlite store, by run name."""
    tmp = tmp_path_factory.mktemp("markdown")
    (tmp / "mlflow.db").write_bytes(_empty_sqlite_db.read_bytes())
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    eid = client.create_experiment('<script>alert("e")</script>', artifact_location=(tmp / "a").as_uri())
    rng = np.random.default_rng(1)
    for i, model in enumerate(MODELS):
        for dataset in DATASETS:
            scores = np.clip(0.7 + 0.02 * i + rng.normal(0, 0.03, 10), 0, 1)
            run_id = log_cv_scores(model, dataset, scores, folds=10, experiment_id=eid, client=client, run_name="r")
            client.log_batch(run_id, metrics=[Metric(SECOND_METRIC, float(v), 0, step)
                                              for step, v in enumerate(rng.normal(1.0, 0.1, 10))])
    one = {"filter_string": f"tags.dataset = '{DATASETS[3]}'"}
    common = {"experiment_ids": [eid], "tracking_uri": uri, "metric": "accuracy", **FAST}
    api.compare_runs(model_a=MODELS[0], model_b=MODELS[1], **common)  # the hierarchical test
    api.compare_runs(model_a=MODELS[0], model_b=MODELS[2], test="signed-rank", **common)
    api.compare_runs(model_a=MODELS[1], model_b=MODELS[2], **one, **common)  # the correlated t-test
    api.compare_runs(model_a=MODELS[0], model_b=MODELS[1], **{**common, "metric": f"accuracy,{SECOND_METRIC}"})
    api.rank_runs(vs=MODELS[2], **common)  # the hierarchical model of k models, with its table against one model
    api.rank_runs(model="bbt", **common)
    api.rank_runs(**one, **common)  # the joint model of one dataset
    api.compare_matrix(**common)  # a matrix: its ranking, its pairs without their report
    api.compare_matrix(**common)  # the same matrix again: every pair read from the cache
    api.compare_matrix(models=MODELS[:2], **common)  # a matrix of two models: no ranking, the pairs' summary
    runs = client.search_runs([eid], f"tags.`{T.KIND}` != ''", max_results=100)
    return {f"{r.data.tags[T.KIND]} {r.info.run_name} {r.info.run_id}": r.data.tags[T.NOTE] for r in runs}


def _kinds(descriptions) -> set[str]:
    kinds = set()
    for name, text in descriptions.items():
        kinds.add(name.split()[0] + (" cached" if "Read from the cache" in text else "")
                  + (" without report" if "holds no figures" in text else ""))
    return kinds


@pytest.mark.slow
def test_every_description_keeps_every_name_as_text(descriptions):
    assert {"comparison", "comparison cached", "comparison without report", "ranking", "matrix"} <= \
        _kinds(descriptions)
    tests = {t for text in descriptions.values() for t in ("signed-rank", "correlated t-test", "hierarchical")
             if t in text}
    assert tests == {"signed-rank", "correlated t-test", "hierarchical"}
    shown = {name: html.unescape(text) for name, text in descriptions.items()}
    rankings = [text for name, text in shown.items() if name.startswith("ranking ")]
    for words in ("(hierarchical model)", "(one dataset)", "Bradley-Terry", f"Against {MODELS[2]}"):
        assert any(words in text for text in rankings), words  # every ranking model, and the --vs table
    matrices = [text for name, text in shown.items() if name.startswith("matrix ")]
    assert any("P(best)" in text for text in matrices)  # a matrix's ranking of all models, nested
    assert any(text.startswith("# Ranking of 2 models") for text in matrices)  # the pairs' own summary
    # a decision on several metrics: a row per metric, then each metric's description nested (the tag is cut)
    assert any("\n## accuracy\n" in text and f"\n| {SECOND_METRIC} |" in text for text in shown.values())
    for name, text in descriptions.items():
        outside_code = re.sub(r"`[^`\n]*`", "", text)
        assert "<" not in outside_code, name  # no HTML: every '<' of a name is an entity
        assert all(target.startswith("#/") for target in re.findall(r"\]\(([^)]*)", text)), name
        assert not re.search(r"(https?|ftp)://|www\.|@\w|:\w+:", outside_code, re.I), name
        for block in text.split("\n\n"):  # a table keeps its columns whatever '|' its names hold
            rows = [line for line in block.splitlines() if line.startswith("|")]
            assert len({line.count("|") for line in rows}) <= 1, (name, block)
    shown = html.unescape("\n".join(descriptions.values()))
    for value in [*MODELS, *(" ".join(d.split()) for d in DATASETS), SECOND_METRIC]:
        assert value in shown


def _showdown_chunk() -> str:
    """The chunk of MLflow's UI that holds showdown, the Markdown converter of its run descriptions."""
    build = Path(mlflow.__file__).parent / "server" / "js" / "build" / "static" / "js"
    for path in sorted(build.glob("*.js")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "showdown.helper" in text and ".push([[" in text and "makeHtml" in text and len(text) < 500_000:
            return text
    pytest.fail(f"no showdown chunk in {build}")


#: what showdown makes of Markdown's own constructs: anything else (an img, a script, an iframe) came from a name
MARKDOWN_ELEMENTS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "strong", "em", "table", "thead", "tbody", "tr", "th",
                     "td", "blockquote", "ul", "li", "code", "br", "hr", "a", "del"}


@pytest.mark.slow
@pytest.mark.browser
def test_mlflows_renderer_makes_no_link_image_or_html_of_a_name(descriptions):
    require_chromium()
    with chromium_page() as (page, dialogs):
        page.set_content("<!DOCTYPE html><html><body></body></html>")
        page.add_script_tag(content="globalThis.webpackChunk_mlflow_mlflow = [];")
        page.add_script_tag(content=_showdown_chunk())
        rendered = page.evaluate("""texts => {
            const modules = globalThis.webpackChunk_mlflow_mlflow[0][1];
            const module = {exports: {}};
            Object.values(modules)[0](module, module.exports, () => undefined);
            const converter = new module.exports.Converter();
            converter.setFlavor("github");  // as MLflow's run page renders a description
            return texts.map(text => {
                const doc = new DOMParser().parseFromString(converter.makeHtml(text), "text/html");
                const all = [...doc.body.querySelectorAll("*")];
                return {tags: [...new Set(all.map(e => e.tagName.toLowerCase()))],
                        links: [...doc.body.querySelectorAll("a")].map(a => a.getAttribute("href")),
                        handlers: all.flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith("on")),
                        text: doc.body.textContent};
            });
        }""", list(descriptions.values()))
    assert dialogs == []
    for name, out in zip(descriptions, rendered):
        assert set(out["tags"]) <= MARKDOWN_ELEMENTS, (name, out["tags"])
        assert all(href.startswith("#/") for href in out["links"]), (name, out["links"])
        assert out["handlers"] == [], name
    shown = " ".join(" ".join(out["text"].split()) for out in rendered)
    for value in [*MODELS, *(" ".join(d.split()) for d in DATASETS), SECOND_METRIC]:
        assert value in shown, value
