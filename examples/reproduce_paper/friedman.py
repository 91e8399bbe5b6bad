"""LDA vs CART on Friedman's functions, Corani et al. (2017), Sec. "Experiments with Friedman's functions".

54 settings (Table "friedman-settings"): function F#1/F#2/F#3 x noise sd x n in {30, 100, 1000} x {0, 20} extra
N(0, 1) features; the regression target is turned into two classes by its median.  Orientation: x = acc(lda) -
acc(cart), so *right* = lda more accurate, the paper's ground truth.

    python examples/reproduce_paper/friedman.py --reps 200 --truth-reps 500 --jobs 2  # the paper's scale
    python examples/reproduce_paper/friedman.py --reps 5 --settings 18 --truth-reps 50
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy.stats import wilcoxon
from sklearn.datasets import make_friedman1, make_friedman2, make_friedman3
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.tree import DecisionTreeClassifier

from mlflow_bayescompare import hierarchical_test

ROPE = 0.01
MAKERS = {1: make_friedman1, 2: make_friedman2, 3: make_friedman3}
NOISE = {1: (0.5, 1, 2), 2: (62.5, 125, 250), 3: (0.05, 0.1, 0.2)}  # half, original, twice the original sd
SIZES = (30, 100, 1000)
EXTRA_FEATURES = (0, 20)


@dataclass(frozen=True)
class Setting:
    function: int
    noise: float
    n: int
    extra_features: int

    def __str__(self):
        return f"F#{self.function} sd={self.noise:g} n={self.n} +{self.extra_features}"


SETTINGS = [Setting(f, s, n, k) for f in MAKERS for s, n, k in product(NOISE[f], SIZES, EXTRA_FEATURES)]


def sample(setting, n, rng):
    """n instances of ``setting``: features (F#1 has 10, F#2/F#3 have 4, plus the extra noise features) and y."""
    seed = int(rng.integers(2**31))
    if setting.function == 1:
        X, y = make_friedman1(n, n_features=10, noise=setting.noise, random_state=seed)
    else:
        X, y = MAKERS[setting.function](n, noise=setting.noise, random_state=seed)
    return np.hstack([X, rng.standard_normal((n, setting.extra_features))]), y


@lru_cache(maxsize=None)
def median(setting):
    """The class boundary: the median of y on 10,000 independently generated instances (Sec. "Friedman")."""
    return float(np.median(sample(setting, 10_000, np.random.default_rng(SETTINGS.index(setting)))[1]))


def sample_classes(setting, n, rng):
    X, y = sample(setting, n, rng)
    return X, (y > median(setting)).astype(int)


def classifiers():
    """lda and cart without tuning; the tree uses rpart's defaults minsplit = 20, minbucket = 7 (caret's cart)."""
    cart = DecisionTreeClassifier(min_samples_split=20, min_samples_leaf=7, random_state=0)
    return LinearDiscriminantAnalysis(), cart


def friedman_cv(setting, runs=10, folds=10, seed=None):
    """One data set of ``setting`` and ``runs`` x ``folds`` paired stratified CV: (acc_lda, acc_cart), run-major."""
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
    for f in MAKERS:
        of_f = [s for s in pool if s.function == f]
        chosen += [of_f[i] for i in np.sort(rng.choice(len(of_f), size=round(2 * len(of_f) / 3), replace=False))]
    acc_lda, acc_cart = map(np.array, zip(*(friedman_cv(s, seed=int(rng.integers(2**31))) for s in chosen)))
    return chosen, acc_lda, acc_cart, int(rng.integers(2**31))


def analyse(rep, chosen, acc_lda, acc_cart, fit_seed, truth, **fit_kwargs):
    """Both tests on one replicate's data, as one table row."""
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


def summarise(runs):
    return pd.Series(
        {
            "reps": len(runs),
            "power signed-rank (p < 0.05)": (runs.signed_rank_p < 0.05).mean(),
            "power hierarchical (P(right) > 0.95)": (runs.p_right > 0.95).mean(),
            "strong evidence for lda, P(right) <= 0.95": runs.strong_right.mean(),
            "positive (not strong) evidence for lda": runs.positive_right.mean(),
            "positive evidence for rope": runs.positive_rope.mean(),
            "positive evidence for cart (left)": runs.positive_left.mean(),
            "MSE MLE": runs.mse_mle.mean(),
            "MSE shrinkage": runs.mse_shrinkage.mean(),
        }
    )


def plot(runs):
    fig = Figure(figsize=(5, 5), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(runs.mse_mle, runs.mse_shrinkage, s=12)
    top = max(runs.mse_mle.max(), runs.mse_shrinkage.max()) * 1.05
    ax.plot([0, top], [0, top], "k--", lw=1)
    ax.set(xlabel="MSE of the MLE", ylabel="MSE of the shrinkage estimates", xlim=(0, top), ylim=(0, top),
           title="Friedman's functions: estimation of the δ_i")
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="replicates of the experiment (paper: 200)")
    parser.add_argument("--settings", type=int, default=len(SETTINGS),
                        help="use N of the 54 settings, spread evenly over the table (default: all)")
    parser.add_argument("--truth-reps", type=int, default=500, help="training sets per true delta_i (paper: 500)")
    parser.add_argument("--truth", type=Path, help="reuse the friedman_truth.csv of an earlier run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("reproduce_paper_results"))
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=1, help="processes (results do not depend on it)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    pool = [SETTINGS[i] for i in np.linspace(0, len(SETTINGS) - 1, args.settings).round().astype(int)]

    start = time.perf_counter()
    if args.truth:
        saved = pd.read_csv(args.truth, index_col=0)["delta"]
        truth = {s: saved[str(s)] for s in pool}
    else:
        work = [(s, args.truth_reps, [args.seed, i]) for i, s in enumerate(pool)]
        truth = dict(zip(pool, parallel_map(actual_delta, work, args.jobs)))
    deltas = np.array(list(truth.values()))
    pd.Series({str(s): d for s, d in truth.items()}, name="delta").to_csv(args.out / "friedman_truth.csv")
    source = args.truth or f"{args.truth_reps} training sets per setting"
    print(f"== ground truth ({source}, {time.perf_counter() - start:.0f} s)")
    print(f"settings: {len(pool)}; mean delta (delta0): {deltas.mean():.4f}; right of the rope: "
          f"{np.mean(deltas > ROPE):.0%}; in the rope: {np.mean(np.abs(deltas) <= ROPE):.0%}; "
          f"left: {np.mean(deltas < -ROPE):.0%}   (paper: delta0 = 0.02, 65% right of the rope)")

    start = time.perf_counter()
    runs = experiment(pool, truth, reps=args.reps, seed=args.seed, jobs=args.jobs,
                      chains=args.chains, draws=args.draws, warmup=args.warmup)
    runs.to_csv(args.out / "friedman_runs.csv", index=False)
    plot(runs).savefig(args.out / "friedman.png", dpi=120)
    print(f"\n== tests ({args.reps} reps, q = {runs.q.iloc[0]}, {time.perf_counter() - start:.0f} s)")
    print(summarise(runs).to_string(float_format="{:.4g}".format))
    print("paper (200 reps, q = 36): power 28% signed-rank vs 27.5% hierarchical; strong evidence 11%, further "
          "positive 33%; rope 2%; left 0%; shrinkage MSE ~60% lower than MLE")


if __name__ == "__main__":
    main()
