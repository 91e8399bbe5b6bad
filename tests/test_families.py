"""The family table (:mod:`mlflow_bayescompare.families`): every row has every part, importable and callable the
way the pipeline calls it, its words, a Stan program the package has, and the option values agree with it; a row that
lacks a part, or names one the pipeline cannot call, is caught."""

from __future__ import annotations

import dataclasses
import inspect
import types

import pytest

from mlflow_bayescompare import families
from mlflow_bayescompare.families.ranking.common import CredibleRule
from mlflow_bayescompare.sampling.programs import PROGRAMS
from mlflow_bayescompare.vocabulary import options
from mlflow_bayescompare.vocabulary.claims import RANKING_CLAIMS
from mlflow_bayescompare.vocabulary.outcomes import TwoModelResult

#: how the pipeline calls each part: the arguments it binds to the part's signature
PAIR_CALLS = {
    "fit": ((None, None, None), {"matrix_pair": True, "model_check": False}),
    "check": ((None, None, None), {}),
    "describe": ((None, None), {}),
    "detail": ((None,), {}),
    "run": ((None, None), {"metric": "m", "experiment_ids": ["1"], "layout": "steps", "run_id": None,
                           "experiment_id": None, "directory": None, "figures": True}),
    "plots": ((None,), {}),
}
RANKING_CALLS = {
    "engine": ((None, None, None), {}),
    "check": ((None, None), {}),
    "refuse": ((None, None), {}),
    "text": ((None,), {}),
    "run": ((None,), {"metric": "m", "experiment_ids": ["1"], "layout": "steps", "directory": None}),
    "plots": ((None,), {}),
}
TAKES = {"folds", "one dataset", "means"}
ROWS = [*families.PAIR_TESTS.values(), *families.RANKING_MODELS.values()]


def problems(row: families.Family) -> list[str]:
    """What is wrong with a row: a part missing, not importable, or not callable as the pipeline calls it; a result
    that is not the family's; words missing; a Stan program the package lacks."""
    pair = isinstance(row, families.PairTest)
    calls, optional = (PAIR_CALLS, {"detail"}) if pair else (RANKING_CALLS, {"check", "refuse", "differs"})
    found = []
    for name in row.PARTS:
        if not getattr(row, name):
            found += [] if name in optional else [f"{row.name}: no {name}"]
            continue
        try:
            part = row.part(name)
        except (ImportError, AttributeError) as exc:
            found.append(f"{row.name}: {name} {getattr(row, name)!r} does not import ({exc})")
            continue
        if name in calls:
            args, kwargs = calls[name]
            try:
                inspect.signature(part).bind(*args, **kwargs)
            except TypeError as exc:
                found.append(f"{row.name}: {name} cannot be called as the pipeline calls it ({exc})")
    found += _kind_problems(row, pair)
    found += [f"{row.name}: no {w}" for w in ("title", "page_title", "reference") if not getattr(row, w)]
    if row.program is not None and row.program not in PROGRAMS:
        found.append(f"{row.name}: Stan program {row.program!r} is not in sampling.programs.PROGRAMS")
    if row.takes not in TAKES:
        found.append(f"{row.name}: takes {row.takes!r}, not one of {sorted(TAKES)}")
    return found


def _kind_problems(row: families.Family, pair: bool) -> list[str]:
    """The result class, the report module and (of a pair test) the engine, by the kind of the row."""
    found = []
    try:
        result, report = row.part("result"), row.part("report")
    except (ImportError, AttributeError):
        return found  # said above
    if not isinstance(report, types.ModuleType) or not all(hasattr(report, f) for f in ("render_markdown",
                                                                                        "render_html")):
        found.append(f"{row.name}: report {row.report!r} is not a module with render_markdown and render_html")
    if pair:
        if not (isinstance(result, type) and issubclass(result, TwoModelResult) and result.test == row.name):
            found.append(f"{row.name}: result {row.result!r} is not a TwoModelResult whose test is {row.name!r}")
        if row.engine and not callable(row.part("engine")):
            found.append(f"{row.name}: engine {row.engine!r} is not callable")
    else:
        if not (isinstance(result, type) and getattr(result, "model", None) == row.name
                and isinstance(getattr(result, "rule", None), CredibleRule)):
            found.append(f"{row.name}: result {row.result!r} has not this model's name and credible rule")
        if not set(row.claims) <= set(RANKING_CLAIMS) or "best=" not in row.claims:
            found.append(f"{row.name}: claims {row.claims} are not ranking claims with best=")
        if row.differs and not isinstance(row.part("differs"), str):
            found.append(f"{row.name}: differs {row.differs!r} is not a sentence")
    return found


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{type(r).__name__}:{r.name}")
def test_every_row_has_every_part(row):
    assert problems(row) == []


@pytest.mark.parametrize("broken, said", [
    ({"run": ""}, "no run"),
    ({"plots": "hierarchical.plots:no_such_figures"}, "plots 'hierarchical.plots:no_such_figures' does not import"),
    ({"report": "hierarchical.no_such_report"}, "does not import"),
    ({"fit": "hierarchical.engine:hierarchical_test"}, "fit cannot be called as the pipeline calls it"),
    ({"check": "hierarchical.summary:side_masses"}, "check cannot be called as the pipeline calls it"),
    ({"result": "signed_rank.engine:SignedRankResult"}, "is not a TwoModelResult whose test is 'hierarchical'"),
    ({"program": "hierarchical_v2"}, "Stan program 'hierarchical_v2' is not in"),
])
def test_a_row_that_lacks_a_part_is_caught(broken, said):
    row = dataclasses.replace(families.pair_test("hierarchical"), **broken)
    assert any(said in p for p in problems(row)), problems(row)


def test_a_ranking_row_that_lacks_a_part_is_caught():
    row = families.ranking_model("bbt")
    assert any("no text" in p for p in problems(dataclasses.replace(row, text="")))
    assert any("engine cannot be called" in p for p in
               problems(dataclasses.replace(row, engine="ranking.bbt.engine:rank_wins")))
    assert any("credible rule" in p for p in
               problems(dataclasses.replace(row, result="ranking.joint.result:JointRankingResult")))


def test_the_options_name_the_families_of_the_table():
    """The option values (declared at the bottom layer, below the table) are the table's names; ``auto`` picks one
    family for each kind of data, and the ranking a user cannot ask for (the joint model) is the one-dataset one."""
    assert set(options.TESTS) - {"auto"} == set(families.PAIR_TESTS)
    assert set(options.RANK_MODELS) - {"auto"} < set(families.RANKING_MODELS)
    assert [m.takes for m in families.RANKING_MODELS.values() if m.name not in options.RANK_MODELS] == ["one dataset"]
    for table in (families.PAIR_TESTS, families.RANKING_MODELS):
        assert sorted(f.takes for f in table.values()) == sorted(TAKES)
        assert {families.taking(t, table).takes for t in TAKES} == TAKES


def test_the_table_imports_nothing_heavy():
    """The command line reads the table's words before it imports the engines: importing it loads no engine."""
    import subprocess
    import sys

    probe = ("import sys, mlflow_bayescompare.families as f; "
             "print(sorted(m for m in sys.modules if m.startswith(('numpy', 'mlflow.', 'scipy', 'pandas'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_the_public_face_exports_the_pipelines_and_every_result_they_return():
    """``mlflow_bayescompare`` names the pipelines, the outcomes they return and every family's result class (the
    rankings' among them), and each of its names imports."""
    import mlflow_bayescompare as face
    from mlflow_bayescompare.pipeline import compare

    exported = {getattr(face, name) for name in face.__all__}
    assert {compare.compare_runs, compare.compare_matrix, compare.rank_runs, compare.require} <= exported
    assert {getattr(compare, n) for n in compare.__all__ if n.endswith("Outcome") and n != "Outcome"} <= exported
    missing = [row.result for row in ROWS if row.part("result") not in exported]
    assert not missing, f"result classes the face does not export: {missing}"
