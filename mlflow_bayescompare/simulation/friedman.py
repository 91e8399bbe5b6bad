"""LDA vs CART on Friedman's functions, Corani et al. (2017), Sec. "Experiments with Friedman's functions".

54 settings (Table "friedman-settings"): function F#1/F#2/F#3 x noise sd x n in {30, 100, 1000} x {0, 20} extra
N(0, 1) features; the regression target is turned into two classes by its median.  Orientation: x = acc(lda) -
acc(cart), so *right* = lda more accurate, the paper's ground truth.  :func:`generate` and :func:`classifiers` are
also the ``demo`` command's data and models.  ``examples/reproduce_paper/friedman.py`` runs :func:`experiment`.
scikit-learn, SciPy, pandas and the engine are imported where they are used: the command line imports this module.
"""

from __future__ import annotations

import multiprocessing
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache
from itertools import product

import numpy as np

__all__ = ["NOISE", "Setting", "SETTINGS", "generate", "sample", "median", "sample_classes", "classifiers",
           "friedman_cv", "actual_delta", "evidence", "cross_validate", "analyse", "experiment", "parallel_map"]

NOISE = {1: (0.5, 1, 2), 2: (62.5, 125, 250), 3: (0.05, 0.1, 0.2)}  # half, original, twice the original sd
SIZES = (30, 100, 1000)
EXTRA_FEATURES = (0, 20)


@dataclass(frozen=True)
class Setting:
    """One of Friedman's functions with a noise sd, a sample size and extra N(0, 1) features.  ``str``: the paper's
    table notation; :attr:`name`: a dataset name (the demo's)."""

    function: int
    noise: float
    n: int
    extra_features: int

    def __str__(self):
        return f"F#{self.function} sd={self.noise:g} n={self.n} +{self.extra_features}"

    @property
    def name(self) -> str:
        return f"friedman{self.function}_n{self.n}_sd{self.noise:g}_x{self.extra_features}"


SETTINGS = [Setting(f, s, n, k) for f in NOISE for s, n, k in product(NOISE[f], SIZES, EXTRA_FEATURES)]


def generate(setting: Setting, n: int, random_state: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n instances of ``setting``: features (F#1 has 10, F#2/F#3 have 4, drawn by scikit-learn from
    ``random_state``, then the extra noise features from ``rng``) and y."""
    from sklearn import datasets

    make = getattr(datasets, f"make_friedman{setting.function}")
    more = {"n_features": 10} if setting.function == 1 else {}
    X, y = make(n, noise=setting.noise, random_state=random_state, **more)
    return np.hstack([X, rng.standard_normal((n, setting.extra_features))]), y


def sample(setting, n, rng):
    """:func:`generate` with scikit-learn's seed drawn from ``rng``."""
    return generate(setting, n, int(rng.integers(2**31)), rng)


@cache
def median(setting):
    """The class boundary: the median of y on 10,000 independently generated instances (Sec. "Friedman")."""
    return float(np.median(sample(setting, 10_000, np.random.default_rng(SETTINGS.index(setting)))[1]))


def sample_classes(setting, n, rng):
    X, y = sample(setting, n, rng)
    return X, (y > median(setting)).astype(int)


def classifiers():
    """lda and cart without tuning; the tree uses rpart's defaults minsplit = 20, minbucket = 7 (caret's cart)."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.tree import DecisionTreeClassifier

    cart = DecisionTreeClassifier(min_samples_split=20, min_samples_leaf=7, random_state=0)
    return LinearDiscriminantAnalysis(), cart


def friedman_cv(setting, runs=10, folds=10, seed=None):
    """One data set of ``setting`` and ``runs`` x ``folds`` paired stratified CV: (acc_lda, acc_cart), run-major."""
    from sklearn.model_selection import RepeatedStratifiedKFold

    rng = np.random.default_rng(seed)
    X, y = sample_classes(setting, setting.n, rng)
    splits = RepeatedStratifiedKFold(n_splits=folds, n_repeats=runs, random_state=int(rng.integers(2**31)))
    with warnings.catch_warnings():  # n = 30 can leave fewer than 10 members in a class; folds stay valid
        warnings.filterwarnings("ignore", "The least populated class", UserWarning)
        acc = np.array(
            [
                [model.fit(X[train], y[train]).score(X[test], y[test]) for model in classifiers()]
                for train, test in splits.split(X, y)
            ]
        )
    return acc[:, 0], acc[:, 1]


def actual_delta(setting, reps=500, seed=None, test_size=5000):
    """delta_i = acc(lda) - acc(cart) averaged over ``reps`` fresh training sets, each scored on a fresh
    ``test_size`` test set (Sec. "Measuring delta_i")."""
    rng = np.random.default_rng(seed)
    d = np.empty(reps)
    for j in range(reps):
        X, y = sample_classes(setting, setting.n, rng)
        X_test, y_test = sample_classes(setting, test_size, rng)
        lda, cart = (model.fit(X, y).score(X_test, y_test) for model in classifiers())
        d[j] = lda - cart
    return d.mean()


def evidence(runs, threshold=0.95):
    """Posterior-odds categories of Secs. "Interpreting posterior odds" and "Friedman" (right = lda better).

    Uses the engine's odds (half-draw corrected).  "Positive evidence for left/rope" means over *both* other
    outcomes, like the paper's categories for right; with "either", a P(left) of 0.01 against a P(rope) of
    0 would already count.
    """
    right_left, right_rope, rope_left = runs.odds_right_left, runs.odds_right_rope, runs.odds_rope_left
    below = runs.p_right <= threshold
    strong = below & (right_rope > 20) & (right_left > 20)
    return runs.assign(
        strong_right=strong,
        positive_right=below & ~strong & (right_rope > 3) & (right_left > 3),
        positive_rope=(right_rope < 1 / 3) & (rope_left > 3),
        positive_left=(rope_left < 1 / 3) & (right_left < 1 / 3),
    )


def cross_validate(seed, pool):
    """The data of one replicate of :func:`experiment` (``seed``: its ``SeedSequence``): 2/3 of each function's
    settings in ``pool``, drawn at random, one cross-validated data set each, and the seed of its Stan fit."""
    rng = np.random.default_rng(seed)
    chosen = []
    for f in NOISE:
        of_f = [s for s in pool if s.function == f]
        chosen += [of_f[i] for i in np.sort(rng.choice(len(of_f), size=round(2 * len(of_f) / 3), replace=False))]
    acc_lda, acc_cart = map(np.array, zip(*(friedman_cv(s, seed=int(rng.integers(2**31))) for s in chosen)))
    return chosen, acc_lda, acc_cart, int(rng.integers(2**31))


def analyse(rep, chosen, acc_lda, acc_cart, fit_seed, truth, **fit_kwargs):
    """Both tests on one replicate's data, as one table row."""
    from scipy.stats import wilcoxon

    from ..families.hierarchical.engine import hierarchical_test
    from .studies import ROPE

    result = hierarchical_test(
        acc_lda, acc_cart, rope=ROPE, folds=10, model_a="lda", model_b="cart", seed=fit_seed, **fit_kwargs
    )
    delta = np.array([truth[s] for s in chosen])
    means = (acc_lda - acc_cart).mean(axis=1)
    return {
        "rep": rep,
        "q": len(chosen),
        "p_left": result.p_left,
        "p_rope": result.p_rope,
        "p_right": result.p_right,
        "odds_right_left": result.odds["a_better/b_better"],
        "odds_right_rope": result.odds["a_better/rope"],
        "odds_rope_left": result.odds["rope/b_better"],
        "signed_rank_p": wilcoxon(means).pvalue,
        "mse_mle": np.mean((means - delta) ** 2),
        "mse_shrinkage": np.mean((result.shrinkage["shrunk"].to_numpy() - delta) ** 2),
    }


def experiment(pool, truth, reps=200, seed=0, jobs=1, **fit_kwargs):
    """Sec. "Assessing the conclusions of the tests": each replicate draws 2/3 of each function's settings in
    ``pool`` (12 of 18 in the paper), cross-validates one data set per setting and runs both tests.

    The cross-validation (the expensive part) runs in ``jobs`` processes, the Stan fits in this one; every
    replicate has its own seed, so the table does not depend on ``jobs``."""
    import pandas as pd

    seeds = np.random.SeedSequence(seed).spawn(reps)
    data = parallel_map(cross_validate, [(s, pool) for s in seeds], jobs)
    return evidence(pd.DataFrame([analyse(rep, *d, truth, **fit_kwargs) for rep, d in enumerate(data)]))


def parallel_map(function, argument_tuples, jobs):
    """``[function(*args) for args in argument_tuples]``, in ``jobs`` fresh (spawned) processes when jobs > 1.
    Only scikit-learn work goes there: pystan's own process pool does not shut down inside a pool worker."""
    if jobs == 1:
        return [function(*args) for args in argument_tuples]
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(function, *zip(*argument_tuples)))
