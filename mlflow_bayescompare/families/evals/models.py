"""The paired models of each kind of score, exact for small samples (no normal approximation, no MCMC).

* pass/fail: a Dirichlet posterior over the paired 2×2 table (n11, n10, n01, n00) with α per cell
  (:data:`PRIOR_ALPHA`): the difference of the pass rates is p01 − p10 (B passes where A fails, minus the reverse),
  the Bayesian counterpart of McNemar's test.  Conditional on the discordant mass, p01 / (p01 + p10) is
  Beta(n01 + α, n10 + α); with α = 1, P(p01 < p10) is exactly the one-sided mid-p value of McNemar's exact test.
* ordinal (levels x_1 < ... < x_K): a Dirichlet over the K×K joint table of the paired levels, the same prior mass
  4α spread evenly over its cells (so a 2-level scale is the pass/fail model); the mean-score difference and the
  probability of superiority P(B better on an item) + ½ P(tie).
* continuous: the Bayesian bootstrap of the paired items (Rubin 1981) with the same prior on the score's scale: 4α
  pseudo-observations at the corners of the square of side R (R the largest difference between A and B on one
  item or cluster), i.e. at differences 0, +R, −R, 0, as the 2×2 table's cells are.  Measured: without them
  (``alpha=0``, Rubin's own) equal systems were called "B better" in 8.7% of 10-item and 11.3% of 5-cluster
  replicates, with them in 1.9% and 0.8%; at 200 items the two agree (benchmarks/README.md).  On the log scale
  (``log`` kind) the difference is the log of the ratio of the geometric means.
* clusters: the atoms of the Dirichlet are the clusters, with the ratio estimator (:mod:`.weights`); the pseudo-
  observations are pseudo-clusters of the average size.

Why these and not a normal approximation: Bowyer et al. (2025, "Position: Don't use the CLT in LLM evals with fewer
than a few hundred datapoints") show CLT intervals under-cover at these sizes; pairing removes the items' shared
difficulty from the difference (Miller 2024, "Adding error bars to evals", Sec. 4).  The prior α = 1 was chosen by
exact enumeration of the "B better" calls on equal pass/fail systems at the 0.95 rule: α = 1 keeps them at or
below 5.0% at every size from 10 to 1,000 items when the systems disagree on at most half the items (5.95% at
worst beyond), where α = 1/2 reaches 6.8%, 1/4 11.2% and 0 (the Bayesian bootstrap of the items) 25%; and by
simulation under clusters, repeats and judge noise: benchmarks/README.md, "Comparing evaluation runs".

Every function returns draws of B − A in the scorer's units (pass rate, scale points, units, log units).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...vocabulary.errors import InputError
from ...vocabulary.options import EVAL_DRAWS
from .kinds import Kind
from .weights import Group, Prior, atom_sums, weighted_means

__all__ = ["PRIOR_ALPHA", "PRIOR_MASS", "MAX_PRIOR_CELLS", "DRAWS", "PairedDraws", "paired_draws",
           "pass_fail_draws", "ordinal_draws", "continuous_draws", "atoms_of", "scorer_group", "scale", "superiority"]

#: the Dirichlet parameter of each cell of a 2×2 table; a larger table spreads the same mass 4α over its cells
PRIOR_ALPHA = 1.0
#: the prior's pseudo-observations in all: 4α
PRIOR_MASS = 4 * PRIOR_ALPHA
#: the cells of a joint table of k systems' levels used as pseudo-observations at most (beyond: a uniform sample;
#: a 2×2 table, 0-10 ratings of 2 systems or pass/fail of 8 systems are whole)
MAX_PRIOR_CELLS = 256
#: posterior draws by default (the option's: :data:`..vocabulary.options.EVAL_DRAWS`)
DRAWS = EVAL_DRAWS


@dataclass
class PairedDraws:
    """Posterior draws of one scorer's comparison: ``difference`` B − A, the means of A and B, and the probability
    of superiority (B better on an item, ties half)."""

    difference: np.ndarray
    mean_a: np.ndarray
    mean_b: np.ndarray
    superiority: np.ndarray


def superiority(a: np.ndarray, b: np.ndarray, greater_is_better: bool) -> np.ndarray:
    """Per item: 1 when B is better, ½ on a tie, 0 when A is better (NaN where a value is missing)."""
    sign = np.sign(b - a) * (1 if greater_is_better else -1)
    return (sign + 1) / 2


def atoms_of(clusters, n: int) -> tuple[np.ndarray, int]:
    """Each item's atom (its cluster's code, or the item itself when ``clusters`` is None) and the atoms' count."""
    if clusters is None:
        return np.arange(n), n
    codes, names = pd.factorize(np.asarray(clusters, dtype=object))
    if len(codes) != n:
        raise InputError(f"{len(codes)} cluster labels for {n} items")
    return codes, len(names)


def scorer_group(values: np.ndarray, kind: Kind, atoms: np.ndarray, n_atoms: int, rng: np.random.Generator,
                 alpha: float = PRIOR_ALPHA) -> Group:
    """One scorer's :class:`.weights.Group`: the columns are the k systems' values (items × k), and with two
    systems the superiority; the pseudo-observations are the cells of the joint table of :func:`scale`."""
    k = values.shape[1]
    columns = values if k != 2 else np.column_stack([values, superiority(values[:, 0], values[:, 1],
                                                                         kind.greater_is_better)])
    sums, counts = atom_sums(columns, atoms, n_atoms)
    if not counts.any():
        raise InputError("no item has a value for every system")
    return Group(sums, counts, _prior(kind, scale(kind, sums[:, :k], counts), k, rng, alpha))


def scale(kind: Kind, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The levels whose joint table holds the pseudo-observations: a discrete kind's own; for a continuous kind the
    two values c ± R/2, c the grand mean and R the largest difference between two systems' means on one atom, so
    that the pseudo-observations' differences are 0 and ±R, the 2×2 table's prior on the continuous scale."""
    if kind.discrete:
        return kind.values
    means = sums[counts > 0] / counts[counts > 0, None]
    centre, reach = means.mean(), float((means.max(axis=1) - means.min(axis=1)).max())
    return np.array([centre - reach / 2, centre + reach / 2])


def _prior(kind: Kind, levels: np.ndarray, k: int, rng: np.random.Generator, alpha: float) -> Prior | None:
    """The cells of the joint table of k systems' ``levels``, mass 4α in all (α per cell of a 2×2 table); beyond
    :data:`MAX_PRIOR_CELLS` cells, that many drawn uniformly."""
    if alpha == 0:
        return None
    total = len(levels) ** k
    if total <= MAX_PRIOR_CELLS:
        cells = np.array(list(itertools.product(levels, repeat=k)), dtype=float)
    else:
        cells = levels[rng.integers(len(levels), size=(MAX_PRIOR_CELLS, k))]
    if k == 2:
        cells = np.column_stack([cells, superiority(cells[:, 0], cells[:, 1], kind.greater_is_better)])
    return Prior(np.full(len(cells), 4 * alpha / len(cells)), cells)


def paired_draws(a: Sequence[float], b: Sequence[float], kind: Kind, clusters=None, *, alpha: float = PRIOR_ALPHA,
                 draws: int = DRAWS, seed: int | None = None) -> PairedDraws:
    """Posterior draws of one scorer's comparison of A and B on their paired items (module docstring): ``a``,
    ``b`` the per-item values (NaN: missing; a pass is 1, a fail 0; a log kind's values are logs already),
    ``clusters`` a label per item or None."""
    values = np.column_stack([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    rng = np.random.default_rng(seed)
    atoms, n_atoms = atoms_of(clusters, len(values))
    means = weighted_means([scorer_group(values, kind, atoms, n_atoms, rng, alpha)], draws, rng)[0]
    return PairedDraws(means[:, 1] - means[:, 0], means[:, 0], means[:, 1], means[:, 2])


def pass_fail_draws(a, b, clusters=None, *, greater_is_better: bool = True, **settings) -> PairedDraws:
    """:func:`paired_draws` of pass/fail values (1 pass, 0 fail): the Dirichlet posterior of the paired 2×2 table."""
    return paired_draws(a, b, Kind("pass_fail", greater_is_better, (0, 1), "given"), clusters, **settings)


def ordinal_draws(a, b, levels: Sequence[float], clusters=None, *, greater_is_better: bool = True,
                  **settings) -> PairedDraws:
    """:func:`paired_draws` of ordinal values among ``levels`` (numbers, in order): the Dirichlet posterior of the
    joint table."""
    return paired_draws(a, b, Kind("ordinal", greater_is_better, tuple(levels), "given"), clusters, **settings)


def continuous_draws(a, b, clusters=None, *, log: bool = False, greater_is_better: bool = True,
                     **settings) -> PairedDraws:
    """:func:`paired_draws` of continuous values: the Bayesian bootstrap of the paired items (``log``: of the logs
    of positive values, so the difference is the log of the ratio of the geometric means)."""
    values = [np.asarray(v, dtype=float) for v in (a, b)]
    if log:
        if any((v <= 0).any() for v in values):
            raise InputError("the log scale takes positive values only")
        values = [np.log(v) for v in values]
    return paired_draws(*values, Kind("log" if log else "continuous", greater_is_better, None, "given"), clusters,
                        **settings)
