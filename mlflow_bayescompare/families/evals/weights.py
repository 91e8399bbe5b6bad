"""Posterior draws of means under Dirichlet weights: the Bayesian bootstrap (Rubin 1981, "The Bayesian bootstrap",
Annals of Statistics 9) of items or of clusters of items, with prior pseudo-observations for discrete scores, drawn
in chunks of bounded memory.

Model.  Atoms j = 1..J (the items, or the clusters of items) carry, for each column c, the sum S_jc of their items'
values and the count n_j of their items with a value.  The population is the atoms re-weighted by
w ~ Dirichlet(1, ..., 1); the mean of column c is the ratio

    m_c = (Σ_j w_j S_jc + s̄ Σ_p u_p v_pc) / (Σ_j w_j n_j + s̄ Σ_p u_p)

over items (n_j = 1) the Bayesian bootstrap's weighted mean, whose posterior has mean x̄ and variance
(1/(n + 1)) (1/n) Σ (x_i − x̄)² (Rubin 1981, Sec. 2); over clusters the ratio estimator of a cluster sample,
whose spread is that of the clusters' totals, the variance a cluster-robust standard error estimates (Miller 2024,
"Adding error bars to evals", Sec. 2.2).  The second terms are prior pseudo-observations p with Dirichlet parameter
a_p and values v_pc, each the size s̄ of an average atom: over items with the cells of a finite table as pseudo-
observations this is exactly the table's Dirichlet posterior Dir(n_cell + a_cell) (the aggregation property of the
Dirichlet), and over clusters its counterpart with pseudo-clusters.

A Dirichlet draw is a vector of Gamma draws divided by their sum, and the ratio needs no division: each draw takes
w_j ~ Gamma(1) and u_p ~ Gamma(a_p).  Several groups of columns (the scorers) share the atoms' weights w in a draw,
so that a statement about several scorers is read off the same draws, while each group has its own pseudo-
observations.  At most :data:`CHUNK_ELEMENTS` weights are held at once; atoms alike in every group are drawn as one
(the sum of m Gamma(1) draws is a Gamma(m) draw), which makes a pass/fail table of any size four atoms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CHUNK_ELEMENTS", "Prior", "Group", "atom_sums", "weighted_means"]

#: the atoms' weights held at once: 4 Mi doubles, 32 MB (100,000 items: 41 draws a chunk)
CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Prior:
    """Pseudo-observations: Dirichlet parameters ``shapes`` (P,) and ``values`` (P, columns)."""

    shapes: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class Group:
    """The columns that share a denominator and pseudo-observations (one scorer): per atom the sums of its items'
    values ``sums`` (J, columns) and the count of its items with values ``counts`` (J,)."""

    sums: np.ndarray
    counts: np.ndarray
    prior: Prior | None = None

    @property
    def atom_size(self) -> float:
        """s̄: the mean count of items of the atoms that have any."""
        return float(self.counts.sum() / max(np.count_nonzero(self.counts), 1))


def atom_sums(values: np.ndarray, atoms: np.ndarray, n_atoms: int) -> tuple[np.ndarray, np.ndarray]:
    """Per atom, the sums of the rows of ``values`` (items × columns) whose columns are all known, and their count;
    ``atoms`` gives each item's atom."""
    known = ~np.isnan(values).any(axis=1)
    sums = np.stack([np.bincount(atoms[known], weights=column[known], minlength=n_atoms) for column in values.T],
                    axis=1)
    return sums, np.bincount(atoms[known], minlength=n_atoms).astype(float)


def weighted_means(groups: Sequence[Group], draws: int, rng: np.random.Generator,
                   chunk: int = CHUNK_ELEMENTS) -> list[np.ndarray]:
    """Per group, (draws, columns) posterior draws of its columns' means (module docstring), the atoms' weights
    shared by every group in a draw; at most ``chunk`` weights held at once (without pseudo-observations the draws
    do not depend on it: the weights are the same stream in any chunks).  Atoms alike in every group (a pass/fail
    table's items: four kinds) are drawn as one of weight Gamma(their number), the sum of their Gamma(1) weights."""
    sizes = [g.atom_size for g in groups]
    groups, multiplicity = _merged(groups)
    atoms = groups[0].sums.shape[0]
    stacked = np.hstack([np.column_stack([g.sums, g.counts]) for g in groups])  # one pass over the weights
    ends = np.cumsum([g.sums.shape[1] + 1 for g in groups])
    out = [np.empty((draws, g.sums.shape[1])) for g in groups]
    step = max(1, chunk // max(atoms, 1))
    for start in range(0, draws, step):
        size = min(step, draws - start)
        if multiplicity is None:
            w = rng.standard_exponential((size, atoms))
        else:
            w = rng.standard_gamma(multiplicity, size=(size, atoms))
        products = w @ stacked
        for group, atom_size, means, end in zip(groups, sizes, out, ends):
            top, bottom = products[:, end - group.sums.shape[1] - 1:end - 1], products[:, end - 1]
            if group.prior is not None:
                u = rng.standard_gamma(group.prior.shapes, size=(size, len(group.prior.shapes)))
                top = top + atom_size * (u @ group.prior.values)
                bottom = bottom + atom_size * u.sum(axis=1)
            means[start:start + size] = top / bottom[:, None]
    return out


def _merged(groups: Sequence[Group]) -> tuple[list[Group], np.ndarray | None]:
    """The groups with their alike atoms merged, and each merged atom's number; None (the groups as they are) when
    fewer than half the atoms would go."""
    rows = np.hstack([np.column_stack([g.sums, g.counts]) for g in groups])
    if len(rows) < 64:
        return list(groups), None
    unique, multiplicity = np.unique(rows, axis=0, return_counts=True)
    if 2 * len(unique) > len(rows):
        return list(groups), None
    merged, start = [], 0
    for g in groups:
        width = g.sums.shape[1]
        merged.append(Group(unique[:, start:start + width], unique[:, start + width], g.prior))
        start += width + 1
    return merged, multiplicity.astype(float)
