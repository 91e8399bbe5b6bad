"""Data with a known mean difference δ for the operating characteristics: a design's data drawn many times
(replicates along the first axis), reduced to what each look reads — the posterior masses at every look and the
confidence sequence — by cumulative sums, so a whole design runs in seconds.

Every scenario keeps the differences within the scores' range by clipping the noise symmetrically around the
truth, so the mean stays exactly the truth (and the confidence sequence's boundedness holds).

Cross-validation (``correlated-t``; σ = ``planning_sd``, ρ the design's correlation, x_{jf} the difference of fold
f in repeat j):

* ``assumed``: what the correlated t-test assumes (Corani & Benavoli 2015; Nadeau & Bengio 2003): every pair of the
  n differences correlates ρ, x_{jf} = δ + a + e_{jf} with a dataset effect a ~ N(0, ρσ²) shared by all folds
  and e ~ N(0, (1 − ρ)σ²); its posterior is then exactly calibrated at one look;
* ``repeats``: ρ within a repeat only (a repeat effect u_j ~ N(0, ρσ²), none shared across repeats): repeats
  average the partitions away, which the test's fixed ρ/(1 − ρ) term does not credit;
* ``misspecified``: both effects (a ~ N(0, ρσ²), u_j ~ N(0, ρ(1 − ρ)σ²): folds of one repeat correlate
  2ρ − ρ², more than the test assumes) and heavy tails (e from Student-t with 3 degrees of freedom, scaled to
  variance (1 − ρ)²σ²).

Several datasets' cross-validation (``hierarchical``; δ the datasets' mean difference δ0, τ = ``planning_spread``,
q = ``dataset_count``): dataset i's own difference δ_i = δ0 + τ z_i and its folds drawn as one ``correlated-t``
dataset around it, every dataset's repeats growing together; a look reads each dataset's (n, x̄_i, s_i²), and its
probabilities are the stand-in's (:mod:`.standin`: the real test is a Stan fit per look):

* ``assumed``: what the hierarchical test assumes of the datasets, z_i ~ N(0, 1) (its Gaussian variant), each
  dataset's folds as ``correlated-t``'s ``assumed``;
* ``misspecified``: z_i from Student-t(3) scaled to variance 1 (a few datasets far out), each dataset's folds as
  ``correlated-t``'s ``misspecified`` with its own noise sd, ``planning_sd`` times a log-normal factor (sd 0.5 on
  the log scale, mean square 1).

(The folds' noise is clipped around the dataset's effect, not around δ_i: the same unless a difference nears the
scores' range.)

Evaluation items (``eval-binary``, ``eval-continuous``):

* ``iid``: exchangeable items (what the Dirichlet and the Bayesian bootstrap assume);
* ``clustered``: items in clusters of :data:`CLUSTER_SIZE` (e.g. questions on one document) whose differences
  correlate :data:`ICC`, arriving cluster by cluster; pass/fail: each cluster draws the share q of its
  disagreements A wins from a Beta around (1 + δ/D)/2 (D = ``planning_sd``², the disagreement rate; the Beta's
  concentration at least 1, so less correlated where D is too small to carry it); continuous:
  a cluster effect N(0, ICC·σ²) plus Student-t(3) item noise of variance (1 − ICC)σ² (before its tails are
  clipped to the scores' range: at σ = 0.2 on [0, 1] scores the item variance is then 0.85σ²).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .confseq import confidence_sequence
from .design import CV_TESTS, Design
from .posteriors import bootstrap_masses, correlated_t_masses, paired_binary_masses
from .standin import standin_masses

__all__ = ["SCENARIOS", "CLUSTER_SIZE", "ICC", "Paths", "simulate", "draw"]

#: The scenarios of each test, by name, in words (the module's docstring gives their models).
SCENARIOS = {
    "correlated-t": {"assumed": "the correlated t-test's own model (every pair of folds correlates rho)",
                     "repeats": "rho within a repeat only (a repeat effect, independent repeats)",
                     "misspecified": "a dataset effect, a repeat effect (folds of a repeat correlate 2rho - rho²) "
                                     "and Student-t(3) fold noise"},
    "hierarchical": {"assumed": "datasets' differences Normal around their mean, the correlated t-test's model within "
                                "each",
                     "misspecified": "datasets' differences Student-t(3) around their mean, each dataset's noise sd "
                                     "its own, a repeat effect and Student-t(3) fold noise within each"},
    "eval-binary": {"iid": "independent items",
                    "clustered": "clusters of 10 items whose differences correlate 0.1, arriving together"},
    "eval-continuous": {"iid": "independent items, Normal noise",
                        "clustered": "clusters of 10 items whose differences correlate 0.1, arriving together, "
                                     "Student-t(3) item noise"},
}
CLUSTER_SIZE = 10
ICC = 0.1
_PATHS_AT_ONCE = 250  # simulated paths whose stand-in integrals are held at once
_CHUNK = 200_000  # draws held at once (arrays of this size stay in the cache: twice as fast as 10 times more)


@dataclass(frozen=True)
class Paths:
    """One scenario at one truth, replicated: ``masses`` (3, replicates, looks) the posterior's P(left), P(rope),
    P(right) at each look; ``cs_low``, ``cs_high`` (replicates, looks) the confidence sequence there (None without
    ``cs_check``); ``covered`` (replicates,) whether it held the truth after every unit (None without)."""

    masses: np.ndarray
    cs_low: np.ndarray | None
    cs_high: np.ndarray | None
    covered: np.ndarray | None


def simulate(design: Design, scenario: str, difference: float, replicates: int,
             rng: np.random.Generator) -> Paths:
    """``replicates`` runs of ``design`` in ``scenario`` with true mean difference δ = ``difference`` (a − b)."""
    statistics, sequence = draw(design, scenario, difference, replicates, rng)
    masses = {"correlated-t": _correlated_t_masses, "hierarchical": _standin_masses, "eval-binary": _binary_masses,
              "eval-continuous": _bootstrap_masses}[design.test]
    return Paths(np.array(masses(design, *statistics)), *sequence)


def draw(design: Design, scenario: str, difference: float, replicates: int, rng: np.random.Generator) -> tuple:
    """The draws reduced to what the looks read, (replicates, looks) each: (n, mean, variance with ddof=1) for
    ``correlated-t``, (wins, losses, n) for ``eval-binary``, (n, mean, variance with 1/n, the largest |difference|)
    for ``eval-continuous``;
    and the confidence sequence's (low, high, covered), or three None."""
    drawer = {"correlated-t": _cross_validation, "hierarchical": _datasets, "eval-binary": _binary,
              "eval-continuous": _continuous}[design.test]
    group = (design.folds or 1) * (design.dataset_count or 1) if design.test in CV_TESTS else 1
    per_chunk = max(1, _CHUNK // (design.max_size * group))
    parts = [drawer(design, scenario, difference, min(per_chunk, replicates - start), rng)
             for start in range(0, replicates, per_chunk)]
    statistics, sequence = zip(*parts)
    statistics = tuple(np.concatenate(s) for s in zip(*statistics))
    return statistics, ((None,) * 3 if sequence[0] is None else tuple(np.concatenate(s) for s in zip(*sequence)))


def _correlated_t_masses(design: Design, count, mean, variance):
    return correlated_t_masses(count, mean, variance, design.correlation, design.rope)


def _standin_masses(design: Design, count, means, variances):
    """The stand-in's masses, :data:`_PATHS_AT_ONCE` paths at a time (its integral holds nodes × datasets per look)."""
    parts = [standin_masses(means[start:start + _PATHS_AT_ONCE], variances[start:start + _PATHS_AT_ONCE],
                            count[start:start + _PATHS_AT_ONCE, :, None], design.correlation, design.rope)
             for start in range(0, len(means), _PATHS_AT_ONCE)]
    return tuple(np.concatenate(side) for side in zip(*parts))


def _binary_masses(design: Design, wins, losses, count):
    return paired_binary_masses(wins, losses, count, design.prior_concentration, design.rope)


def _bootstrap_masses(design: Design, count, mean, variance, reach):
    return bootstrap_masses(count, mean, variance, reach, design.rope)


def _sequence(design: Design, units: np.ndarray, target) -> tuple | None:
    """The confidence sequence at the looks, and whether it held ``target`` at every look."""
    if not design.cs_check:
        return None
    low, high = confidence_sequence(units, design.cs_alpha, design.half_range, design.looks)
    target = np.reshape(target, (-1, 1))
    return low, high, ((low <= target) & (target <= high)).all(axis=1)


def _clipped(noise: np.ndarray, truth, half_range: float) -> np.ndarray:
    """``noise`` clipped to ±(half_range − |truth|): symmetric, so the mean stays ``truth``."""
    bound = half_range - np.abs(truth)
    return np.clip(noise, -bound, bound)


def _student3(rng: np.random.Generator, shape) -> np.ndarray:
    """Student-t(3) draws scaled to variance 1."""
    return rng.standard_t(3, shape) / np.sqrt(3)


def _cross_validation(design: Design, scenario: str, difference: float, count: int, rng) -> tuple:
    repeats, folds, rho, sd = design.max_size, design.folds or 1, design.correlation, design.planning_sd
    shared, repeat, tails = {"assumed": (rho, 0.0, False), "repeats": (0.0, rho, False),
                             "misspecified": (rho, rho * (1 - rho), True)}[scenario]
    fold_sd = sd * np.sqrt(1 - shared - repeat)
    dataset = np.clip(np.sqrt(shared) * sd * rng.standard_normal((count, 1, 1)), -design.half_range / 2,
                      design.half_range / 2)
    noise = np.sqrt(repeat) * sd * rng.standard_normal((count, repeats, 1)) + fold_sd * (
        _student3(rng, (count, repeats, folds)) if tails else rng.standard_normal((count, repeats, folds)))
    truth = difference + dataset  # this dataset's expected difference
    centred = dataset + _clipped(noise, truth, design.half_range)  # x − δ
    at = np.asarray(design.looks) - 1
    n = (at + 1) * folds
    first = np.cumsum(centred.sum(axis=2), axis=1)[:, at]
    second = np.cumsum((centred**2).sum(axis=2), axis=1)[:, at]
    variance = np.maximum(second - first**2 / n, 0) / (n - 1)
    statistics = np.broadcast_to(n, first.shape), difference + first / n, variance
    return statistics, _sequence(design, difference + centred.mean(axis=2), truth[:, 0, 0])


def _datasets(design: Design, scenario: str, difference: float, count: int, rng) -> tuple:
    """Each dataset's (n, x̄_i, s_i²) at the looks, (count, looks, datasets); no confidence sequence."""
    q, tails = design.dataset_count, scenario == "misspecified"
    effect = _student3(rng, (count, q)) if tails else rng.standard_normal((count, q))
    truth = difference + design.planning_spread * effect  # δ_i
    scale = np.exp(0.5 * rng.standard_normal((count, q)) - 0.25) if tails else np.ones((count, q))
    means, variances = [], []
    for i in range(q):
        (n, mean, variance), _ = _cross_validation(design, scenario, 0.0, count, rng)
        means.append(truth[:, i, None] + scale[:, i, None] * mean)
        variances.append(scale[:, i, None] ** 2 * variance)
    return (np.asarray(n), np.stack(means, axis=-1), np.stack(variances, axis=-1)), None


def _binary(design: Design, scenario: str, difference: float, count: int, rng) -> tuple:
    items, disagree = design.max_size, design.planning_sd**2
    if scenario == "iid":
        u = rng.random((count, items))
        d = (u < (disagree + difference) / 2).astype(np.int8) - ((u >= (disagree + difference) / 2)
                                                                  & (u < disagree)).astype(np.int8)
    else:
        share = (1 + difference / disagree) / 2
        spread = ICC * (disagree - difference**2) / (4 * disagree**2)  # Var(q), for Corr(d_i, d_j) = ICC
        concentration = max(share * (1 - share) / spread - 1, 1.0)  # less correlated where D cannot carry it
        clusters = -(-items // CLUSTER_SIZE)
        q = np.repeat(rng.beta(concentration * share, concentration * (1 - share), (count, clusters)),
                      CLUSTER_SIZE, axis=1)[:, :items]
        d = (rng.random((count, items)) < disagree) * (2 * (rng.random((count, items)) < q) - 1).astype(np.int8)
    at = np.asarray(design.looks) - 1
    wins, losses = np.cumsum(d == 1, axis=1)[:, at], np.cumsum(d == -1, axis=1)[:, at]
    return (wins, losses, np.broadcast_to(at + 1, wins.shape)), _sequence(design, d, difference)


def _continuous(design: Design, scenario: str, difference: float, count: int, rng) -> tuple:
    items, sd = design.max_size, design.planning_sd
    if scenario == "iid":
        noise = sd * rng.standard_normal((count, items))
    else:
        clusters = -(-items // CLUSTER_SIZE)
        effect = np.repeat(np.sqrt(ICC) * sd * rng.standard_normal((count, clusters)), CLUSTER_SIZE,
                           axis=1)[:, :items]
        noise = effect + np.sqrt(1 - ICC) * sd * _student3(rng, (count, items))
    centred = _clipped(noise, difference, design.half_range)
    at = np.asarray(design.looks) - 1
    n = at + 1
    first, second = np.cumsum(centred, axis=1)[:, at], np.cumsum(centred**2, axis=1)[:, at]
    variance = np.maximum(second / n - (first / n) ** 2, 0)
    reach = np.maximum.accumulate(np.abs(difference + centred), axis=1)[:, at]  # R of the family's prior
    statistics = np.broadcast_to(n, first.shape), difference + first / n, variance, reach
    return statistics, _sequence(design, difference + centred, difference)
