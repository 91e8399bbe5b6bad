"""``correlated_t_test``: the Bayesian correlated t-test of G. Corani and A. Benavoli, *A Bayesian approach for
comparing cross-validated algorithms on multiple data sets* (Machine Learning 100, 2015), on ONE dataset.

Model.  x_1 … x_n are the n = k·r per-fold differences x = a − b of one dataset (k folds, r repeats, run-major).
The folds share training data, so the x_i are correlated with the correlation ρ of Nadeau & Bengio: ρ = 1/k for
k-fold and repeated k-fold cross-validation, ρ = n_test/(n_train + n_test) for repeated hold-out (e.g.
ShuffleSplit).  Under the paper's prior the posterior of the mean difference μ is Student-t with n − 1 degrees of
freedom, location x̄ and scale² = (1/n + ρ/(1 − ρ)) s², s² the sample variance
(:func:`.formula.correlated_t_posterior`).  P(left), P(rope), P(right) are its masses below −rope, inside
[−rope, rope] and above rope, exact (no sampling), as baycomp's ``CorrelatedTTest`` computes them; with constant
differences (s = 0) the posterior is a point mass at x̄.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats

from ...scores.tensor import CVTensor, from_arrays
from ...shared import posterior_summary
from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.options import FitOptions, build
from ...vocabulary.outcomes import Orientation, outcome_label
from ...vocabulary.versions import versions
from . import formula
from .result import CorrelatedTTestResult

__all__ = ["correlated_t_test", "as_tensor", "ODDS_DRAWS", "HEADER"]

#: The count the exact masses are read as for :func:`.posterior_summary.posterior_odds`: the draws the package's
#: sampled tests summarise at their defaults (4 chains × 1000 draws).  The odds are then those a sampled test would
#: report with the same probabilities, graded on the same scale, and stay finite (at most 8001) when a mass is 0.
ODDS_DRAWS = FitOptions.chains * FitOptions.draws
#: The header of every problem the test refuses.
HEADER = "Cannot run the Bayesian correlated t-test:"
_ACROSS = "across datasets use hierarchical_test on the per-fold scores or signed_rank_test on the per-dataset means"


def correlated_t_test(scores_a=None, scores_b=None, *, diffs=None, folds=None, n_train: int | None = None,
                      n_test: int | None = None, dataset: str | None = None, model_a: str | None = None,
                      model_b: str | None = None, options: FitOptions | None = None,
                      **settings) -> CorrelatedTTestResult:
    """Compare model A with model B on the per-fold scores of one dataset.

    Args:
        scores_a, scores_b: the paired per-fold scores, 1-D, run-major (repeat · folds + fold); or a
            :class:`.CVTensor` of one dataset as ``scores_a`` (its folds are used).
        diffs: the differences ``a - b`` instead of the scores.
        folds: the folds k of the cross-validation: ρ = 1/k, and the number of scores must be a multiple of k.
        n_train, n_test: for repeated hold-out splits (ShuffleSplit) instead of ``folds``: the sizes of each split's
            training and test sets, ρ = n_test/(n_train + n_test).
        dataset: its name (default ``dataset 0``).
        options: a :class:`~.options.FitOptions`; ``settings`` are its fields as keywords, which override it.  The
            test uses ``rope``, ``greater_is_better``, ``threshold`` and ``rho`` (ρ directly, e.g. 0 for independent
            splits; it overrides ``folds``); it draws nothing, so the MCMC settings and the seed do not apply.

    Returns:
        :class:`CorrelatedTTestResult`, oriented as the other tests: x = a − b, the paper's *right* (μ > rope) is
        "A better" when greater is better.
    """
    started = time.perf_counter()
    opts = build(FitOptions, options, **settings)
    tensor = as_tensor(scores_a, scores_b, diffs, folds, dataset, model_a, model_b)
    x, k = tensor.diffs[0], tensor.folds[0]
    rho, reason = formula.correlation(k, opts.rho, n_train, n_test, header=HEADER)
    df, loc, scale = formula.correlated_t_posterior(x, rho)
    p_left, p_rope, p_right = formula.correlated_t_masses(df, loc, scale, opts.rope)
    orientation = Orientation(opts.greater_is_better)
    probs = orientation.orient(p_left, p_rope, p_right)
    odds = posterior_summary.posterior_odds(probs, ODDS_DRAWS)
    decision, sentence = posterior_summary.verdict(probs, odds, tensor.model_a, tensor.model_b, opts.threshold)
    low, high = (loc, loc) if scale == 0 else stats.t.interval(posterior_summary.HDI_PROB, df, loc=loc, scale=scale)
    n = len(x)
    sd = float(scale / np.sqrt(1 / n + rho / (1 - rho)))  # s, as the posterior has it (0 for a point mass)
    warnings = _warnings(n, loc, scale, opts.rope, orientation, tensor.model_a, tensor.model_b)
    return CorrelatedTTestResult(
        model_a=tensor.model_a, model_b=tensor.model_b, greater_is_better=opts.greater_is_better, rope=opts.rope,
        p_left=p_left, p_rope=p_rope, p_right=p_right, next_probs=np.array([[p_left, p_rope, p_right]]),
        verdict=sentence, decision=decision, odds=odds, evidence=posterior_summary.evidence(odds),
        dataset=tensor.datasets[0], n=n, folds=k, df=df, loc=loc, scale=scale, rho=rho, rho_reason=reason, sd=sd,
        mean_difference={"mean": loc, "hdi_low": float(low), "hdi_high": float(high)},
        nadeau_bengio_p=formula.nadeau_bengio_p(df, loc, scale), scores=tensor.table.reset_index(drop=True),
        diagnostics={"warnings": warnings, "seconds": time.perf_counter() - started},
        settings={"test": CorrelatedTTestResult.test, "rope": opts.rope,
                  "greater_is_better": opts.greater_is_better, "threshold": opts.threshold, "rho": rho,
                  "rho_reason": reason, "folds": k, "n_train": n_train, "n_test": n_test,
                  "dataset": tensor.datasets[0], "versions": versions()},
    )


# --------------------------------------------------------------------------------------------------- inputs


def as_tensor(scores_a=None, scores_b=None, diffs=None, folds=None, dataset=None, model_a=None,
              model_b=None) -> CVTensor:
    """The per-fold differences of one dataset from any input form :func:`correlated_t_test` accepts, checked by
    :func:`.tensor.from_arrays` (paired lengths, finite values at named positions, at least 2 scores, a whole
    number of repeats of ``folds``, folds ≥ 2)."""
    if isinstance(scores_a, CVTensor):
        problems = []
        if len(scores_a.datasets) != 1:
            problems.append(_one_dataset(len(scores_a.datasets)))
        if folds is not None:
            problems.append("a CVTensor carries its folds; pass folds= only with arrays")
        if problems:
            raise InputError(problems, header=HEADER)
        return scores_a
    problems = []
    given = {"scores_a": scores_a, "scores_b": scores_b, "diffs": diffs}
    rows = {name: [_vector(value, name, problems)] for name, value in given.items() if value is not None}
    if problems:
        raise InputError(problems, header=HEADER)
    try:
        return from_arrays(rows.get("scores_a"), rows.get("scores_b"), diffs=rows.get("diffs"), folds=folds,
                           datasets=None if dataset is None else [dataset], model_a=model_a or "A",
                           model_b=model_b or "B")
    except InputError as e:
        raise InputError(e.problems, header=HEADER) from None


def _vector(x, name: str, problems: list[str]) -> np.ndarray:
    """``x`` as a 1-D float array; anything else noted in ``problems``."""
    try:
        v = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        problems.append(f"{name} holds non-numeric values")
        return np.array([])
    if v.ndim != 1:
        problems.append(f"{name} must be 1-D, the per-fold scores of one dataset; got shape {v.shape} ({_ACROSS})")
    return v


def _one_dataset(q: int) -> str:
    return f"the correlated t-test compares two models on one dataset, not {q}; {_ACROSS}"


# --------------------------------------------------------------------------------------------------- summaries


def _warnings(n: int, loc: float, scale: float, rope: float, orientation: Orientation, model_a: str,
              model_b: str) -> list[str]:
    """Constant differences (logged once): the posterior is a point mass (scale 0)."""
    warnings = []
    if scale == 0:
        side = orientation.sides[0 if loc < -rope else 2 if loc > rope else 1]
        warnings.append(f"all {n} differences are {loc:.4g} (zero variance): the posterior of the mean "
                        f"difference is a point mass at {loc:.4g}, so its probabilities are 0 or 1 (all on "
                        f"'{outcome_label(side, model_a, model_b)}'); more folds or repeats would show how much the "
                        "difference varies")
    for warning in warnings:
        log.warning(warning)
    return warnings
