"""mlflow-bayescompare: is model A really better than model B across datasets, or practically the same?

The Bayesian hierarchical correlated t-test of Corani, Benavoli, Demšar, Mangili & Zaffalon (Machine Learning,
2017), run on per-fold cross-validation scores read from MLflow and logged back as a comparison run.
"""

from .correlated_t.engine import correlated_t_test
from .correlated_t.result import CorrelatedTTestResult
from .errors import BayesCompareError, InputError, SamplingError
from .hierarchical.engine import hierarchical_test
from .hierarchical.result import HierarchicalResult
from .options import FitOptions, ModelsOptions, PairOptions, RankOptions, SourceOptions
from .ranking.engine import rank_models
from .ranking.result import RankingResult
from .signed_rank.engine import SignedRankResult, signed_rank_test
from .tracking.cvlog import log_cv_scores

__all__ = ["hierarchical_test", "HierarchicalResult", "signed_rank_test", "SignedRankResult", "correlated_t_test",
           "CorrelatedTTestResult", "rank_models", "RankingResult", "log_cv_scores", "FitOptions", "RankOptions",
           "SourceOptions", "PairOptions", "ModelsOptions", "BayesCompareError", "InputError", "SamplingError"]
