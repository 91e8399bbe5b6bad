"""The registered design of a stop-when-decided comparison (mlflow_bayescompare.sequential.design): its canonical
JSON and fingerprint, the refusal of a later look under a changed design (every changed field named), its looks,
and bad designs refused with every problem named at once, through the product's option machinery."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from mlflow_bayescompare.sequential.design import SCHEMA, Design, changes, check_unchanged, from_json
from mlflow_bayescompare.vocabulary.errors import InputError
from mlflow_bayescompare.vocabulary.optionparse import parse_fields

CV = dict(test="correlated-t", folds=10, min_size=2, max_size=30, planning_sd=0.02)
HIER = dict(test="hierarchical", folds=10, min_size=2, max_size=20, planning_sd=0.02, dataset_count=8,
            planning_spread=0.01)
EVAL = dict(test="eval-binary", min_size=100, max_size=2000, look_every=100, planning_sd=0.45, rope=0.03)


def test_the_json_round_trips_and_the_fingerprint_is_its_sha256():
    for fields in (CV, EVAL, {**EVAL, "look_every": None, "look_at": [100, 700, 2000], "gate": "both",
                                 "cs_check": True}):
        design = Design(**fields)
        text = design.canonical_json()
        assert from_json(text) == design and from_json(text).canonical_json() == text
        assert design.fingerprint == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert json.loads(text)["schema"] == SCHEMA and " " not in text
        # the same design written another way (indented, keys in another order, ints for floats) is the same design
        loose = json.dumps(dict(reversed(list(json.loads(text).items()))), indent=2)
        assert from_json(loose).fingerprint == design.fingerprint


def test_defaults_are_written_into_the_design_so_equal_designs_share_one_fingerprint():
    implicit = Design(**CV)
    explicit = Design(**CV, look_every=1, nominal_error=0.05, threshold=0.95, rope=0.01)
    assert implicit.fingerprint == explicit.fingerprint
    assert (implicit.look_every, implicit.nominal_error, Design(**EVAL).prior_concentration) == (1, 0.05, 1.0)


def test_the_fingerprint_of_a_registered_design_does_not_move():
    """A design registered with an earlier version must keep its fingerprint: this one was registered with
    schema 1.  Changing the canonical form (a new field, another number format) must bump SCHEMA instead."""
    registered = Design(**CV, cs_check=True)  # the default then (the sequence is now asked for: ``cs``)
    assert registered.fingerprint == "47e3c5ab85ba816faffc3c7992252b72da6691400167082e1f32bbe8ae352551"


def test_every_changed_field_is_named_and_the_later_look_refused():
    registered = Design(**CV)
    new = Design(**{**CV, "folds": 5, "max_size": 40, "threshold": 0.99, "gate": "both", "cs_check": True})
    assert changes(registered, new) == ["threshold: 0.95 → 0.99", "nominal_error: 0.05 → 0.01",
                                        "max_size: 30 → 40", "folds: 10 → 5", "cs_check: false → true",
                                        'gate: "bayes" → "both"']
    with pytest.raises(InputError) as caught:
        check_unchanged(registered, new)
    text = str(caught.value)
    assert text.startswith(f"a later look with a different design is refused: the registered design "
                           f"({registered.fingerprint[:12]}) differs in")
    assert "  - folds: 10 → 5" in text and "Register a new design" in text
    check_unchanged(registered, from_json(registered.canonical_json()))  # the same design passes
    for f in dataclasses.fields(Design):  # each field alone is seen
        value = getattr(registered, f.name)
        other = {"test": "correlated-t", "rope": 0.02, "threshold": 0.9, "nominal_error": 0.1,
                 "greater_is_better": False, "min_size": 3, "max_size": 31, "look_every": 2, "look_at": (2, 30),
                 "folds": 5, "rho": 0.2, "prior_concentration": None, "score_range": (0.0, 2.0),
                 "planning_sd": 0.03, "cs_check": True, "cs_alpha": 0.1, "gate": "bayes", "dataset_count": None,
                 "planning_spread": None}[f.name]
        if other == value:
            continue
        extra = {"look_every": None} if f.name == "look_at" else {}
        changed = changes(registered, dataclasses.replace(registered, **{f.name: other}, **extra))
        assert any(line.startswith(f"{f.name}: ") for line in changed), f.name


def test_a_hierarchical_design_keeps_its_planning_values_and_the_older_designs_their_json():
    """The fields hierarchical added are in its design.json, and absent from the JSON of the designs without them
    (whose fingerprints therefore stay: the test above)."""
    design = Design(**HIER)
    fields = json.loads(design.canonical_json())
    assert (fields["dataset_count"], fields["planning_spread"], design.unit) == (8, 0.01, "repeats")
    assert from_json(design.canonical_json()).fingerprint == design.fingerprint
    assert "dataset_count" not in json.loads(Design(**CV).canonical_json())
    assert changes(design, Design(**{**HIER, "dataset_count": 9})) == ["dataset_count: 8 → 9"]


def test_the_looks_follow_the_schedule_and_end_at_the_budget():
    assert Design(**CV).looks == tuple(range(2, 31))
    assert Design(**{**CV, "look_every": 4}).looks == (2, 6, 10, 14, 18, 22, 26, 30)
    assert Design(**{**CV, "min_size": 30}).looks == (30,)
    assert Design(**EVAL).looks[:3] == (100, 200, 300) and Design(**EVAL).looks[-1] == 2000
    assert Design(**{**EVAL, "look_every": None, "look_at": "100,500,2000"}).looks == (100, 500, 2000)
    assert (Design(**CV).unit, Design(**EVAL).unit, Design(**CV).correlation) == ("repeats", "items", 0.1)


@pytest.mark.parametrize("fields, problem", [
    (dict(CV, test="paired"), "test must be one of correlated-t, hierarchical, eval-binary, eval-continuous"),
    (dict(CV, test="hierarchical"), "hierarchical needs dataset_count (the number of datasets read)"),
    (dict(HIER, planning_spread=None), "hierarchical needs planning_spread"),
    (dict(HIER, dataset_count=2), "dataset_count must be a whole number >= 3"),
    (dict(HIER, cs_check=True), "the confidence sequence covers one dataset's repeats"),
    (dict(HIER, folds=None), "hierarchical needs folds"),
    (dict(CV, dataset_count=8), "dataset_count applies to hierarchical only, not correlated-t"),
    (dict(CV, threshold=0.5), "threshold must be a finite number > 0.5 and < 1"),
    (dict(CV, rope=0), "rope must be a finite number > 0"),
    (dict(CV, rope=1), "rope 1 must be smaller than the widest difference of two scores, 1"),
    (dict(CV, folds=None), "correlated-t needs folds"),
    (dict(CV, folds=None, rho=0.1, min_size=1), "min_size must be at least 2"),
    (dict(CV, min_size=31), "min_size 31 exceeds max_size 30"),
    (dict(CV, max_size=20_000), "max_size 20000 exceeds 10000 repeats"),
    (dict(CV, look_every=2, look_at=[2, 30]), "give look_every or look_at, not both"),
    (dict(CV, look_every=None, look_at=[2, 2, 30]), "look_at must be strictly ascending"),
    (dict(CV, look_every=None, look_at=[1, 30]), "look_at's first look 1 is before min_size 2"),
    (dict(CV, look_every=None, look_at=[2, 20]), "look_at's last look must be the budget max_size 30; got 20"),
    (dict(CV, look_every=None, look_at=[2, 2.5, 30]), "look_at must be whole numbers of repeats"),
    (dict(CV, max_size=2000), "is 1999 looks; at most 500"),
    (dict(CV, prior_concentration=1), "prior_concentration applies to eval-binary only"),
    (dict(EVAL, folds=10), "folds applies to correlated-t and hierarchical only, not eval-binary"),
    (dict(EVAL, min_size=1), "min_size must be at least 2 items"),
    (dict(EVAL, planning_sd=0.1), "planning_sd² = 0.01 is the fraction of items on which the models disagree"),
    (dict(EVAL, score_range=(0, 100)), "eval-binary scores are pass (1) or fail (0)"),
    (dict(CV, planning_sd=2), "planning_sd 2 exceeds the widest difference of two scores 1"),
    (dict(CV, gate="both", cs_check=False), "gate 'both' needs the confidence sequence"),
    (dict(CV, cs_alpha=0.7), "cs_alpha must be a finite number > 0 and <= 0.5"),
    (dict(CV, planning_sd=None), "planning_sd is required"),
])
def test_a_bad_design_is_refused_naming_the_problem(fields, problem):
    with pytest.raises(InputError, match="^invalid design:") as caught:
        Design(**fields)
    assert any(problem in p for p in caught.value.problems), caught.value.problems


def test_every_problem_is_named_at_once_and_bad_json_is_refused():
    with pytest.raises(InputError) as caught:
        Design(test="eval-continuous", min_size=5, max_size=2, planning_sd=-1, folds=3, gate="either")
    assert len(caught.value.problems) == 4  # planning_sd, gate, folds, sizes
    for text, problem in (("[1]", "must hold an object"), ("{", "is not JSON"),
                          ('{"schema": 1, "bogus": 1}', "unknown field 'bogus'"),
                          ('{"schema": 2}', "design.json's schema is 2; this version reads schema 1")):
        with pytest.raises(InputError, match=problem):
            from_json(text)


def test_the_json_api_and_the_command_line_read_a_design_by_the_options_machinery():
    """The ``watch`` command can take a design as options: public names, flags and their messages."""
    [design] = parse_fields({**CV, "lower_is_better": True, "cs": True}, [Design])
    assert (design.greater_is_better, design.cs_check) == (False, True)
    assert Design(**CV).cs_check is False  # on request
    with pytest.raises(InputError, match="Invalid value for '--max-size': must be a whole number"):
        parse_fields({**CV, "max_size": "many"}, [Design], origin="cli")
