"""The keys built from names (:mod:`mlflow_bayescompare.vocabulary.keys`): a name MLflow takes keeps itself, any other
is made readable and gets its digest, and no two names share a key, whatever their order, even where a name is spelt
like another's digested key (a ranking's ``p_best.<model>`` would otherwise overwrite another model's)."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from mlflow_bayescompare import rank_models
from mlflow_bayescompare.families.ranking.run import model_keys, ranking_metrics
from mlflow_bayescompare.vocabulary.keys import joined_key, metric_folder, metric_key, named_keys
from mlflow_bayescompare.vocabulary.mlflow_internals import is_valid_key


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:12]


#: "a/b" is keyed p_best.a_b-<its digest>; the second name is spelt like that key's model part
CLASH = ["a/b", f"a_b-{_digest('a/b')}"]


def test_a_readable_name_keeps_itself_and_another_gets_its_digest():
    keys = named_keys("p_best", ["rf", "rf-1.2 beta", "a/b", "a:b"])
    assert keys["rf"] == "p_best.rf" and keys["rf-1.2 beta"] == "p_best.rf-1.2 beta"
    assert keys["a/b"] == f"p_best.a_b-{_digest('a/b')}" and keys["a:b"] == f"p_best.a_b-{_digest('a:b')}"
    assert all(is_valid_key(k) for k in keys.values())


def test_a_name_spelt_like_another_names_digested_key_gets_a_key_of_its_own():
    for names in (CLASH, CLASH[::-1], [*CLASH, "a_b"]):
        keys = named_keys("p_best", names)
        assert len(set(keys.values())) == len(names), keys
        assert keys["a/b"] == f"p_best.{CLASH[1]}"  # the digested name keeps its key, whatever the order ...
        assert keys[CLASH[1]] == f"p_best.{CLASH[1]}-{_digest(CLASH[1])}"  # ... and the one spelt like it is digested
        assert named_keys("p_best", reversed(names)) == keys


def test_a_name_spelt_like_two_digested_keys_in_a_row_still_gets_its_own():
    """The clash resolved for one name can meet another name spelt like the new key: digested again, until none
    clash."""
    second = f"{CLASH[1]}-{_digest(CLASH[1])}"
    keys = named_keys("p_best", [*CLASH, second])
    assert len(set(keys.values())) == 3 and keys[second] == f"p_best.{second}-{_digest(second)}"


def test_a_ranking_of_models_whose_keys_would_clash_logs_each_models_own_p_best():
    """A ranking (the joint model of one dataset: closed form) of models named like CLASH: each model's P(best) and
    mean rank under its own key, none overwritten, and the keys map back to the names."""
    rng = np.random.default_rng(3)
    fold = rng.normal(0.8, 0.02, 10)
    frame = pd.DataFrame({m: fold + shift + rng.normal(0, 0.01, 10) for m, shift in zip([*CLASH, "c"],
                                                                                        (0.02, 0.0, -0.02))})
    res = rank_models(frame.assign(db="one"), dataset="db", folds=10, seed=1)
    metrics, keys = ranking_metrics(res), model_keys(res)
    p_best = dict(zip(res.ranking["model"], res.ranking["p_best"]))
    assert {model: metrics[key] for model, key in keys["p_best"].items()} == p_best
    assert len({*keys["p_best"].values()}) == 3 and len(p_best) == 3
    assert {key for column in keys.values() for key in column.values()} <= set(metrics)


def test_metric_keys_join_as_they_are_where_mlflow_takes_them():
    assert metric_key("accuracy", "p_a_better") == "accuracy/p_a_better" == joined_key("accuracy", "p_a_better")
    odd = metric_key("../x", "p_rope")
    assert is_valid_key(odd) and odd != metric_key("__x", "p_rope") and odd == metric_key("../x", "p_rope")
    assert metric_folder("accuracy") == "accuracy" and "/" not in metric_folder("a/../b")
