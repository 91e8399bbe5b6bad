"""CVTensor construction and validation: from arrays and from tidy tables."""

from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd
import pytest

from mlflow_bayescompare.scores.tensor import TABLE_COLUMNS, dataset_means, from_arrays, from_tidy, means_from_tidy
from mlflow_bayescompare.vocabulary.errors import InputError


def tidy(models=("rf", "svm"), datasets=("iris", "wine"), folds=5, repeats=1, seed=0) -> pd.DataFrame:
    """Complete synthetic scores: one run per (model, dataset), global fold index, no repeat column."""
    rng = np.random.default_rng(seed)
    rows = [(d, m, g, rng.uniform(0.7, 0.9), f"run-{m}-{d}", i)
            for i, (m, d) in enumerate((m, d) for m in models for d in datasets) for g in range(folds * repeats)]
    return pd.DataFrame(rows, columns=["dataset", "model", "fold", "score", "run_id", "start_time"])


def problems_of(excinfo) -> list[str]:
    return excinfo.value.problems


# ---------------------------------------------------------------------------------------------- arrays


def test_from_arrays_2d_and_lists():
    a, b = np.arange(20.0).reshape(2, 10), np.ones((2, 10))
    t = from_arrays(a, b, datasets=["x", "y"], folds=5, model_a="rf", model_b="svm")
    assert (t.model_a, t.model_b, t.datasets, t.folds) == ("rf", "svm", ["x", "y"], [5, 5])
    np.testing.assert_array_equal(t.diffs[1], a[1] - 1)
    assert t.diffs[0].dtype == np.float64
    assert list(t.table.columns) == TABLE_COLUMNS
    assert t.table["repeat"].tolist()[:6] == [0, 0, 0, 0, 0, 1] and t.table["fold"].tolist()[5] == 0

    t = from_arrays([[0.9, 0.8, 0.7], [0.5, 0.6]], [[0.8, 0.8, 0.8], [0.4, 0.4]], folds=[3, None])
    assert [len(d) for d in t.diffs] == [3, 2] and t.folds == [3, None]
    assert t.datasets == ["dataset 0", "dataset 1"]


def test_from_arrays_diffs_only():
    t = from_arrays(diffs=[np.array([0.1, -0.1, 0.2, 0.0])], datasets=["d"], folds=2)
    np.testing.assert_allclose(t.diffs[0], [0.1, -0.1, 0.2, 0.0])
    assert t.table["score_a"].isna().all()


def test_from_arrays_collects_every_problem():
    a = [[0.9, np.nan, 0.7], [0.5], ["x", 1.0]]
    b = [[0.8, 0.8, 0.8], [0.4], [1.0, 1.0]]
    with pytest.raises(InputError) as e:
        from_arrays(a, b, datasets=["x", "y", "z"], model_a="m", model_b="m")
    msg = str(e.value)
    assert "both 'm'" in msg and "scores_a[2] holds non-numeric values" in msg
    with pytest.raises(InputError) as e:
        from_arrays(a[:2], b[:2], datasets=["x", "y"], folds=2)
    msg = str(e.value)
    assert "dataset 'x': non-finite score at positions 1" in msg
    assert "dataset 'y': 1 score(s); need at least 2" in msg
    assert "dataset 'x': 3 scores is not a whole number of repeats of 2 folds" in msg


@pytest.mark.parametrize("kwargs, text", [
    (dict(scores_a=np.ones(5), scores_b=np.ones(5)), "must be 2-D"),
    (dict(scores_a=np.ones((2, 4)), scores_b=np.ones((3, 4))), "scores_a has 2 datasets but scores_b has 3"),
    (dict(scores_a=np.ones((1, 4)), scores_b=np.ones((1, 3))), "dataset 'dataset 0': 4 scores for 'A' but 3 for 'B'"),
    (dict(scores_a=np.ones((2, 4)), scores_b=np.ones((2, 4)), datasets=["a"]), "1 labels for 2 datasets"),
    (dict(scores_a=np.ones((2, 4)), scores_b=np.ones((2, 4)), datasets=["a", "a"]), "dataset names repeat: 'a'"),
    (dict(scores_a=np.ones((1, 4)), scores_b=np.ones((1, 4)), folds=1), "folds must be an integer >= 2"),
    (dict(scores_a=np.ones((1, 4))), "pass both scores_a and scores_b"),
    (dict(scores_a=np.ones((1, 4)), scores_b=np.ones((1, 4)), diffs=np.ones((1, 4))), "not both"),
])
def test_from_arrays_bad_input(kwargs, text):
    with pytest.raises(InputError) as e:
        from_arrays(**kwargs)
    assert text in str(e.value)


# ---------------------------------------------------------------------------------------------- tidy


def test_from_tidy_paper_data(uci):
    t = from_tidy(uci, 1, 2, dataset_col="DatasetID", model_col="ClassifierID", repeat_col="Key.Run",
                  fold_col="Key.Fold", score_col="Percent.correct")
    assert len(t.datasets) == 54 and t.datasets[:3] == ["1", "2", "3"]
    assert set(t.folds) == {10} and all(len(d) == 100 for d in t.diffs)
    one = uci[uci.DatasetID == 2].sort_values(["Key.Run", "Key.Fold"])
    a = one[one.ClassifierID == 1]["Percent.correct"].to_numpy()
    b = one[one.ClassifierID == 2]["Percent.correct"].to_numpy()
    np.testing.assert_allclose(t.diffs[1], a - b)
    assert list(t.table.columns) == TABLE_COLUMNS and t.table["run_id_a"].isna().all()


def test_from_tidy_global_index_split_and_order():
    df = tidy(datasets=("wine", "iris"), folds=3, repeats=2).sample(frac=1, random_state=1)
    t = from_tidy(df, "rf", "svm", folds=3)
    first = list(dict.fromkeys(df["dataset"]))
    assert t.datasets == first and t.folds == [3, 3]
    table = t.table[t.table.dataset == "iris"]
    assert table["repeat"].tolist() == [0, 0, 0, 1, 1, 1] and table["fold"].tolist() == [0, 1, 2, 0, 1, 2]
    assert table["run_id_a"].unique().tolist() == ["run-rf-iris"]
    ordered = df[df.dataset == "iris"].sort_values("fold")
    expected = ordered[ordered.model == "rf"]["score"].to_numpy() - ordered[ordered.model == "svm"]["score"].to_numpy()
    np.testing.assert_allclose(t.diffs[first.index("iris")], expected)


def test_from_tidy_folds_unknown_without_repeat_column():
    t = from_tidy(tidy(folds=4).drop(columns=["run_id"]), "rf", "svm")
    assert t.folds == [None, None] and len(t.diffs[0]) == 4 and t.table["run_id_a"].isna().all()


def test_from_tidy_folds_column_and_dict():
    df = tidy(folds=5, repeats=2).assign(folds=5)
    assert from_tidy(df, "rf", "svm").folds == [5, 5]
    assert from_tidy(tidy(folds=5), "rf", "svm", folds={"iris": 5, "wine": 5}).folds == [5, 5]


def test_missing_and_extra_folds_are_named():
    df = tidy(datasets=("iris",), folds=20)
    df = df[~((df.model == "rf") & df.fold.isin([3, 17]))]
    with pytest.raises(InputError) as e:
        from_tidy(df, "rf", "svm", folds=20)
    assert problems_of(e) == ["dataset 'iris': model 'rf' lacks folds 3, 17"]

    with_repeat = tidy(datasets=("iris",), folds=4).assign(repeat=lambda d: d.fold // 2, fold=lambda d: d.fold % 2)
    with_repeat = with_repeat[~((with_repeat.model == "svm") & (with_repeat.repeat == 1))]
    with pytest.raises(InputError) as e:
        from_tidy(with_repeat, "rf", "svm")
    assert problems_of(e) == ["dataset 'iris': model 'svm' lacks repeat 1 folds 0-1"]

    extra = tidy(datasets=("iris",), folds=3).assign(repeat=0)
    extra = pd.concat([extra, extra[(extra.model == "rf") & (extra.fold == 0)].assign(fold=7)])
    with pytest.raises(InputError) as e:
        from_tidy(extra, "rf", "svm", folds=3)
    assert problems_of(e) == ["dataset 'iris': model 'rf' has extra fold 7 beyond 3 folds"]


def test_every_problem_reported_at_once():
    df = tidy(models=("rf", "svm", "knn"), datasets=("iris", "wine", "digits", "adult", "cars"), folds=4)
    df.loc[(df.model == "rf") & (df.dataset == "iris") & (df.fold == 1), "score"] = np.nan
    df.loc[(df.model == "svm") & (df.dataset == "iris") & (df.fold == 2), "score"] = np.inf
    df = df[~((df.model == "svm") & (df.dataset == "wine"))]                         # one model only
    df = df[~((df.model == "svm") & (df.dataset == "digits") & (df.fold == 3))]     # missing fold
    dup = df[(df.model == "rf") & (df.dataset == "adult")].assign(run_id="run-rf-adult-2", start_time=99)
    df = pd.concat([df, dup])                                                         # two runs
    df["folds"] = 4
    df.loc[(df.model == "svm") & (df.dataset == "cars"), "folds"] = 2                # fold count differs
    with pytest.raises(InputError) as e:
        from_tidy(df, "rf", "svm")
    problems = problems_of(e)
    assert str(e.value).startswith("Cannot compare 'rf' with 'svm':")
    assert "dataset 'iris' model 'rf' (run run-rf-iris): score is nan at fold 1" in problems
    assert "dataset 'iris' model 'svm' (run run-svm-iris): score is inf at fold 2" in problems
    assert "dataset 'digits': model 'svm' lacks fold 3" in problems
    assert "dataset 'adult': model 'rf' has 2 runs (run-rf-adult, run-rf-adult-2)" in problems
    assert "dataset 'cars': fold count differs: 'rf' uses 4 folds, 'svm' uses 2" in problems
    assert len(problems) == 5  # wine, which svm lacks, is left out: not a problem
    assert str(e.value).endswith(  # what to do, said once
        "\nto keep the latest run of each model on a dataset: --latest on the command line, on_duplicate='latest' "
        "in Python (or delete or filter out the extra runs)\nto leave out the datasets with missing or extra folds "
        "or scores: --drop-incomplete on the command line, drop_incomplete=True in Python")


def test_a_pair_compares_the_datasets_both_models_have(caplog):
    df = tidy(models=("rf", "svm", "knn"), datasets=("iris", "wine", "digits"), folds=4)
    ragged = df[~((df.model == "svm") & (df.dataset == "wine")) & ~((df.model == "rf") & (df.dataset == "digits"))]
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        tensor = from_tidy(ragged, "rf", "svm")
        means = means_from_tidy(ragged[ragged.fold == 0], "rf", "svm")
    assert tensor.datasets == means.datasets == ["iris"]
    assert tensor.left_out == means.left_out == {"wine": "no scores of 'svm'", "digits": "no scores of 'rf'"}
    assert ("rf vs svm: left out 2 datasets only one of the two models has: 'wine' (no scores of 'svm'), 'digits' "
            "(no scores of 'rf'); compared on the 1 both have ('iris'): one dataset, on which the correlated t-test "
            "compares the folds") in caplog.text
    assert dataset_means(tensor).left_out == tensor.left_out
    alone = df[~((df.model == "svm") & df.dataset.isin(["iris", "wine"])) & ~((df.model == "rf")
                                                                            & (df.dataset == "digits"))]
    with pytest.raises(InputError, match="'rf' and 'svm' share no dataset: 'rf' has 'iris', 'wine'; 'svm' has "
                                         "'digits'"):
        from_tidy(alone, "rf", "svm")


def test_one_line_per_dataset_model_and_kind():
    df = tidy(datasets=("x", "y"), folds=10, repeats=10)
    df = df.assign(repeat=df.fold // 10, fold=df.fold % 10, score=df.score.astype(object))
    rf_y3 = (df.model == "rf") & (df.dataset == "y") & (df.repeat == 3)
    df.loc[(df.model == "rf") & (df.dataset == "x"), "score"] = np.nan                    # 100 NaN scores
    df.loc[rf_y3 & df.fold.isin([1, 2, 3]), "score"] = np.finfo(np.float64).max           # MLflow's inf
    df.loc[rf_y3 & (df.fold == 5), "score"] = -np.inf
    df.loc[(df.model == "svm") & (df.dataset == "y") & (df.repeat == 3) & (df.fold == 5), "score"] = "abc"
    df = df[~((df.model == "svm") & (df.dataset == "y") & (df.repeat >= 7) & (df.fold < 3))]
    with pytest.raises(InputError) as e:
        from_tidy(df, "rf", "svm")
    assert problems_of(e) == [
        "dataset 'y' model 'svm' (run run-svm-y): score 'abc' is not a number at repeat 3 fold 5",
        "dataset 'x' model 'rf' (run run-rf-x): score is nan at repeats 0-9 folds 0-9",
        "dataset 'y' model 'rf' (run run-rf-y): score is inf (MLflow stores inf as 1.79769e+308) at repeat 3 "
        "folds 1-3; score is -inf at repeat 3 fold 5",
        "dataset 'y': model 'svm' lacks repeats 7-9 folds 0-2",
    ]


def test_all_nan_dataset_is_one_line():
    df = tidy(datasets=("iris",), folds=200)
    df.loc[df.model == "svm", "score"] = np.nan
    with pytest.raises(InputError) as e:
        from_tidy(df, "rf", "svm")
    assert problems_of(e) == ["dataset 'iris' model 'svm' (run run-svm-iris): score is nan at folds 0-199"]


def test_duplicate_runs_keep_latest():
    df = tidy(folds=3)
    newer = df[(df.model == "rf") & (df.dataset == "iris")].assign(run_id="newer", start_time=100, score=0.0)
    df = pd.concat([newer, df])
    t = from_tidy(df, "rf", "svm", time_col="start_time", on_duplicate="latest")
    iris = t.table[t.table.dataset == "iris"]
    assert (iris["run_id_a"] == "newer").all() and (iris["score_a"] == 0.0).all()
    with pytest.raises(InputError, match="needs time_col"):
        from_tidy(df, "rf", "svm", on_duplicate="latest")


def test_duplicate_scores_without_run_ids():
    df = tidy(datasets=("iris",), folds=3).drop(columns="run_id")
    df = pd.concat([df, df.iloc[[0]]])
    with pytest.raises(InputError) as e:
        from_tidy(df, "rf", "svm")
    assert problems_of(e) == ["dataset 'iris' model 'rf': more than one score at fold 0"]


@pytest.mark.parametrize("change, text", [
    (lambda d: d.assign(score=d.score.astype(object).where(d.index != 0, "n/a")),
     "dataset 'iris' model 'rf' (run run-rf-iris): score 'n/a' is not a number at fold 0"),
    (lambda d: d.assign(fold=d.fold.astype(object).where(d.index != 0, "one")),
     "dataset 'iris' model 'rf': fold 'one' is not an integer"),
    (lambda d: d[d.fold < 1], "dataset 'iris': 1 paired score(s); need at least 2"),
])
def test_bad_values(change, text):
    with pytest.raises(InputError) as e:
        from_tidy(change(tidy(datasets=("iris",), folds=3)), "rf", "svm")
    assert text in problems_of(e)


def test_model_problems():
    with pytest.raises(InputError) as e:
        from_tidy(tidy(), "rf", "rf")
    assert "model_a and model_b are both 'rf'; compare two different models" in problems_of(e)
    with pytest.raises(InputError) as e:
        from_tidy(tidy(), "xgb", "svm")
    assert problems_of(e) == ["model 'xgb' has no scores; models present: rf, svm"]
    with pytest.raises(InputError, match="missing column\\(s\\) 'score'; columns present"):
        from_tidy(tidy().drop(columns="score"), "rf", "svm")


def test_drop_incomplete_warns_and_drops(caplog):
    df = tidy(datasets=("iris", "wine", "digits"), folds=3)
    df = df[~((df.model == "svm") & (df.dataset == "wine") & (df.fold == 2))]
    df.loc[(df.model == "rf") & (df.dataset == "digits") & (df.fold == 0), "score"] = np.nan
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        t = from_tidy(df, "rf", "svm", folds=3, drop_incomplete=True)
    assert t.datasets == ["iris"] and len(t.diffs) == 1
    [record] = [r for r in caplog.records if r.name == "mlflow_bayescompare"]
    assert record.levelno == logging.WARNING
    assert re.search(r"dropping 2 incomplete dataset\(s\):.*'wine'.*lacks fold 2", record.getMessage())
    with pytest.raises(InputError, match="Every dataset is incomplete"):
        from_tidy(df[df.dataset != "iris"], "rf", "svm", folds=3, drop_incomplete=True)


def test_drop_incomplete_still_raises_on_duplicates():
    df = tidy(folds=3)
    df = pd.concat([df, df[(df.model == "rf") & (df.dataset == "iris")].assign(run_id="again")])
    with pytest.raises(InputError, match="has 2 runs"):
        from_tidy(df, "rf", "svm", drop_incomplete=True)


def test_100_datasets_100_folds_10_models():
    """Its time is benchmarks/bench_inputs.py's ``from_tidy``."""
    df = tidy(models=[f"m{i}" for i in range(10)], datasets=[f"d{i}" for i in range(100)], folds=10, repeats=10)
    t = from_tidy(df, "m3", "m7", folds=10, time_col="start_time")
    assert len(t.datasets) == 100 and all(len(d) == 100 for d in t.diffs)
