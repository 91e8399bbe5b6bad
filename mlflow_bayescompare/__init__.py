"""mlflow-bayescompare: is model A really better than model B across datasets, or practically the same?

The Bayesian hierarchical correlated t-test of Corani, Benavoli, Demšar, Mangili & Zaffalon (Machine Learning,
2017), run on per-fold cross-validation scores read from MLflow and logged back as a comparison run; the Bayesian
correlated t-test on one dataset, the Bayesian signed-rank test on per-dataset means, and rankings of many models.

The public face: the names of :data:`__all__`, and nothing else (a module's own names may move between releases).
The pipelines on MLflow runs (``compare_runs``, ``compare_matrix``, ``rank_runs``, ``require``; ``watch_runs``, stop
when decided; on evaluation runs ``compare_evaluation_runs``, ``rank_evaluation_runs``, ``require_evaluations``)
and the outcomes they return; the tests and the ranking on scores in hand (``hierarchical_test``,
``correlated_t_test``, ``signed_rank_test``, ``rank_models``, ``rank_wins``) and every result class they return;
the options; the errors; ``log_cv_scores``.  They are imported on first use, so that importing a part of the
package (the command line, above all) does not import MLflow, ArviZ, SciPy and matplotlib before it needs them.
"""

from importlib import import_module

#: each public name and the module that defines it: the pipelines on MLflow runs and what they return, the tests and
#: the ranking on scores in hand and their results, the options, the errors, and the helper that logs scores
_HOMES = {
    "compare_runs": ".pipeline.compare",
    "compare_matrix": ".pipeline.compare",
    "rank_runs": ".pipeline.compare",
    "require": ".pipeline.compare",
    "ComparisonOutcome": ".pipeline.compare",
    "MatrixOutcome": ".pipeline.compare",
    "RankingOutcome": ".pipeline.compare",
    "MetricsOutcome": ".pipeline.compare",
    "watch_runs": ".pipeline.watch",
    "WatchOutcome": ".pipeline.watchrequest",
    "compare_evaluation_runs": ".pipeline.evals",
    "rank_evaluation_runs": ".pipeline.evals",
    "require_evaluations": ".pipeline.evals",
    "EvalsOutcome": ".pipeline.evals",
    "hierarchical_test": ".families.hierarchical.engine",
    "HierarchicalResult": ".families.hierarchical.result",
    "signed_rank_test": ".families.signed_rank.engine",
    "SignedRankResult": ".families.signed_rank.engine",
    "correlated_t_test": ".families.correlated_t.engine",
    "CorrelatedTTestResult": ".families.correlated_t.result",
    "rank_models": ".families.ranking.engine",
    "rank_wins": ".families.ranking.bbt.engine",
    "HierarchicalRankingResult": ".families.ranking.hierarchical_k.result",
    "JointRankingResult": ".families.ranking.joint.result",
    "RankingResult": ".families.ranking.bbt.result",
    "log_cv_scores": ".reads.cvlog",
    "FitOptions": ".vocabulary.options",
    "RankOptions": ".vocabulary.options",
    "SourceOptions": ".vocabulary.options",
    "PairOptions": ".vocabulary.options",
    "ModelsOptions": ".vocabulary.options",
    "MatrixOptions": ".vocabulary.options",
    "WatchOptions": ".vocabulary.options",
    "EvalOptions": ".vocabulary.options",
    "BayesCompareError": ".vocabulary.errors",
    "InputError": ".vocabulary.errors",
    "SamplingError": ".vocabulary.errors",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
