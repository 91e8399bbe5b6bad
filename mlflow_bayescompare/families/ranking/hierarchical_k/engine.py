"""``rank_hierarchical``: the hierarchical model of Corani et al. (2017) extended to k models
(``stan/hierarchical_k.stan``, whose header holds the model, its exact rewrites and why one noise scale per dataset),
fitted to the fold scores of many datasets.  The paper's δ_i ~ t_ν(δ0, σ0) [eq:delta_i] becomes, for the k − 1
contrasts of a dataset, a multivariate Student-t with an unstructured scale matrix Ω = σ0² R: σ0 has the paper's
prior U(0, 1000 sd) and R a rotation-invariant Wishart shape, so that each pair of models has its own spread (issue 38)
and two models are the paper's model exactly.

Pipeline: :class:`~.engine.Scores` (oriented so that greater is better) → :func:`stan_inputs` (per dataset the fold
means' contrast coordinates v_i = H_S'ȳ_i over the models S it has and the residual sum of squares c_i, scaled to the
data's within-dataset spread; the paper's data-derived prior bounds; the sampler's change of variables
:func:`whitening`) → ``stan/hierarchical_k.stan`` → :func:`.result.summarise`.  A dataset some models
lack is fitted as it is (the program's rewrite 5: exact, nothing imputed); one with fewer than two models carries no
contrast and is left out.  The ranking (P(best), ranks) reads this joint fit; every pair is then fitted alone by the
program's model at k = 2, sampled by Gibbs (:func:`pair_tests`: the paper's model of the pair, so a pair's numbers
are compare's and no other model moves them).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from ....sampling import pair_gibbs, sampler
from ....vocabulary.console import log
from ....vocabulary.errors import InputError
from ....vocabulary.options import RANKING_PAIR_WARMUP, FitOptions, RankOptions
from ....vocabulary.outcomes import counted, divergent_transitions
from ....vocabulary.progress import Progress, notify
from ..common import lacking_lines, listed
from .result import HierarchicalRankingResult, PairFit, pair_fit, ranked_order, summarise

__all__ = ["rank_hierarchical", "pair_tests", "sample_program", "stan_inputs", "sufficient", "sufficient_data",
           "tau_forms", "helmert", "present", "selection", "contrasts", "population_fit", "whitening", "Inputs",
           "HEADER", "FORM", "NU_CAP", "RETRY_ADAPT_DELTA", "PAIR_THIN"]

HEADER = "Cannot rank the models with the hierarchical model:"
#: how the program samples (its header): the datasets' effects integrated out
FORM = "effects integrated out, contrasts rotated by Omega's eigenvectors; log sigma_i and 1/lambda_i sampled"
#: the largest ν :func:`tau_forms` estimates (a Gaussian population)
NU_CAP = 100.0
#: the target acceptance rate of the second fit when the first diverges
RETRY_ADAPT_DELTA = 0.95
#: every PAIR_THIN-th sweep of a ranking's pairs is kept (benchmarks/README.md, "The ranking's pairs by Gibbs": ν's
#: autocorrelation on 4-fold data)
PAIR_THIN = 4


def helmert(k: int) -> np.ndarray:
    """(k, k − 1): an orthonormal basis of the vectors that sum to zero (bbt.stan's and hierarchical_k.stan's H)."""
    basis = np.zeros((k, k - 1))
    for j in range(1, k):
        basis[:j, j - 1] = 1 / np.sqrt(j * (j + 1))
        basis[j, j - 1] = -j / np.sqrt(j * (j + 1))
    return basis


@dataclass
class Inputs:
    """The Stan data (scaled) and what turns the draws back into metric units: ``scale`` (the data were divided by
    it), the Helmert ``basis`` (δ = H d), ``rho`` and ``n`` per dataset fitted, the datasets whose residuals were all
    zero (``patched``); the ``scores`` fitted and the datasets left out for holding fewer than two models
    (``left_out``)."""

    stan_data: dict
    scale: float
    basis: np.ndarray
    rho: np.ndarray
    n: np.ndarray
    patched: list[str]
    scores: Any
    left_out: list[str] = field(default_factory=list)

    def ragged_note(self, lines: bool = False) -> str | None:
        """What the fit did with the models some datasets lack (None on a complete grid); ``lines``: each model's
        lack on a line of its own (the terminal's warning, readable with many models)."""
        between = "\n  " if lines else "; "
        parts = lacking_lines(self.scores.lacking())
        if parts:
            parts = [f"each dataset's models are compared where they have scores (nothing imputed):"
                     f"{between if lines else ' '}{between.join(parts)}"]
        if self.left_out:
            parts.append(f"left out, for holding fewer than two models: {listed(self.left_out)}")
        return between.join(parts) or None


def rank_hierarchical(scores, opts: RankOptions, progress: Progress | None = None) -> HierarchicalRankingResult:
    """Rank the models of ``scores`` (a :class:`~.engine.Scores` of two datasets or more, oriented so that greater
    is better) by the hierarchical model."""
    inputs = stan_inputs(scores, opts)
    note = inputs.ragged_note(lines=True)
    if note:
        log.warning("the hierarchical model: %s", note)
    if inputs.patched:
        log.warning("no residual variation across folds on %s (the models' scores move together): their noise "
                    "is taken as U(±rope), as the two-model test does", ", ".join(inputs.patched[:12]))
    pair_warmup = opts.warmup
    opts = opts.with_seed().with_warmup()
    notify(progress, "sampling", f"{len(scores.models)} models on {counted(len(inputs.scores.datasets), 'dataset')} "
                                 f"(hierarchical model, {opts.chains} chains × {opts.draws} draws)")
    run, form = sample_program(inputs.stan_data, opts, progress)
    order = ranked_order(scores, inputs, run, opts)
    pairs = [(order[i], worse) for i in range(len(order)) for worse in order[i + 1:]] if len(order) > 2 else []
    given = dict(scores.pair_tests or {})
    fits = pair_tests(scores, [p for p in pairs if frozenset(p) not in given],
                      dataclasses.replace(opts, warmup=pair_warmup), progress)
    return summarise(scores, inputs, run, opts, form=form, pair_fits={**given, **fits} if pairs else None)


def pair_tests(scores, pairs: list[tuple[str, str]], opts: RankOptions,
               progress: Progress | None = None) -> dict[frozenset[str], PairFit | None]:
    """Each pair's own fit of the program's model at k = 2, on the datasets both models have, with the ranking's seed
    and its models in the order of their names (a mirrored order would sample other draws of the same posterior):
    the paper's model of the pair's difference, priors included (the program's header), i.e. ``compare``'s
    hierarchical test.  The pairs are sampled together by Gibbs (:mod:`....sampling.pair_gibbs`: a pair's draws
    depend on its own data alone), :data:`~....vocabulary.options.RANKING_PAIR_WARMUP` sweeps of warm-up unless
    ``opts.warmup`` is given, then ``opts.draws`` × :data:`PAIR_THIN` sweeps per chain, every :data:`PAIR_THIN`-th
    kept.  A pair's numbers thus depend on its two models' scores alone: another model joining or leaving cannot
    move them (issue 38, items 3-4).  A pair the model cannot test (fewer than two shared datasets) gets ``None``
    and a warning naming it."""
    fits: dict[frozenset[str], PairFit | None] = {}
    fitted = []
    for a, b in sorted(tuple(sorted(pair)) for pair in pairs):  # one order per pair, whatever the ranking's
        index = [scores.models.index(a), scores.models.index(b)]
        alone = dataclasses.replace(scores, models=[a, b], blocks=[block[:, index] for block in scores.blocks])
        try:
            fitted.append((alone, stan_inputs(alone, opts)))
        except InputError as error:
            log.warning("the pair %s vs %s is not tested: %s", a, b, "; ".join(error.problems))
            fits[frozenset((a, b))] = None
    if not fitted:
        return fits
    warmup = opts.warmup if opts.warmup is not None else RANKING_PAIR_WARMUP
    start = time.perf_counter()

    def report(sweep: int, sweeps: int) -> None:
        notify(progress, "sampling", f"{counted(len(fitted), 'pair')}, each fitted alone (Gibbs, {opts.chains} chains "
                                     f"× {opts.draws} draws): sweep {sweep} of {sweeps} "
                                     f"({time.perf_counter() - start:.0f} s)")

    runs = pair_gibbs.sample_pairs([inputs.stan_data for _, inputs in fitted], chains=opts.chains, draws=opts.draws,
                                   warmup=warmup, thin=PAIR_THIN, seed=opts.seed, report=report)
    form = f"{pair_gibbs.FORM}; {warmup} sweeps of warm-up, every {PAIR_THIN}th of the next kept"
    for (alone, inputs), run in zip(fitted, runs):
        fits[frozenset(alone.models)] = pair_fit(alone, inputs, run, form)
    return fits


def stan_inputs(scores, opts: RankOptions) -> Inputs:
    """The data block of ``stan/hierarchical_k.stan``, checked: on each dataset every model it has (at least two;
    a dataset with fewer is left out) scored on every fold (at least 2 folds), ρ known, the models linked by the
    datasets they share.  Every problem at once."""
    fitted, left_out = _with_contrasts(scores)
    rho = _correlations(scores, fitted, opts)
    k, blocks = len(fitted.models), fitted.blocks
    models = [present(b) for b in blocks]
    n = np.array([len(b) for b in blocks])
    p = np.array([len(s) - 1 for s in models])
    v, c = sufficient(blocks, rho)
    spread = np.sqrt(c * (1 - rho) / ((n - 1) * p))  # a model's residual sd on each dataset
    scale = float(spread.mean()) if spread.mean() > 0 else opts.metric_rope
    v, c = [x / scale for x in v], c / scale**2
    patched = [d for d, value in zip(fitted.datasets, c) if value <= 1e-12]
    if patched:  # as prepare.py's noise U(±rope) on a constant dataset: its expected residual sum of squares
        floor = (n - 1) * p * (opts.metric_rope / scale) ** 2 / 3 / (1 - rho)
        c = np.where(c <= 1e-12, floor, c)
    largest = max(float(np.max(np.ptp(b[:, s], axis=1))) for b, s in zip(blocks, models)) / scale
    upper = FitOptions.std_upper_bound
    data = {**sufficient_data(v, c, n, rho, models, k), "d_bound": max(largest, opts.metric_rope / scale) / 2**0.5,
            "sigma_high": 0.0, "alpha_low": FitOptions.alpha_bounds[0], "alpha_high": FitOptions.alpha_bounds[1],
            "beta_low": FitOptions.beta_bounds[0], "beta_high": FitOptions.beta_bounds[1]}
    among = float(np.sqrt(population_fit(data)[1]))
    data["sigma0_high"] = upper * (among if among > 0 else 1.0)
    data.update(tau_forms(data), shape_df=float(k - 1), whiten=whitening(data).tolist())
    return Inputs(data, scale, helmert(k), rho, n, patched, fitted, left_out)


def present(block: np.ndarray) -> np.ndarray:
    """The indices of the models (columns) with scores in a dataset's block (a missing model: a NaN column)."""
    return np.flatnonzero(~np.isnan(block).all(axis=0))


def selection(models: np.ndarray, k: int) -> np.ndarray:
    """A_i = H_S' E_S H (p_i × p): the contrast coordinates of the models ``models`` (S) of k, from δ's (the
    program's rewrite 5); the identity with every model."""
    return helmert(len(models)).T @ helmert(k)[models]


def sufficient(blocks: list[np.ndarray], rho: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Per dataset (a block: folds × k, a missing model's column NaN), over the models S it has, v_i = H_S'ȳ_i and
    c_i = tr(H_S'W_iH_S)/(1 − ρ_i) (the program's rewrites 1-2 and 5)."""
    v, c = [], []
    for block in blocks:
        scored = block[:, present(block)]
        basis = helmert(scored.shape[1])
        v.append(basis.T @ scored.mean(axis=0))
        c.append(np.sum(((scored - scored.mean(axis=0)) @ basis) ** 2))
    return v, np.array(c) / (1 - rho)


def sufficient_data(v: list[np.ndarray], c: np.ndarray, n: np.ndarray, rho: np.ndarray,
                    models: list[np.ndarray] | None = None, k: int | None = None) -> dict:
    """The data block's entries that carry the data: k, q, p_i, c, m, w, the datasets with every model (q_c,
    idx_c, v_c: their v_i as rows) and those some of the k models lack (q_r, idx_r, P_r, v_r, A_r, seg_start,
    seg_len: their v_i and A_i stacked), from each dataset's v_i and its ``models`` (indices; default: all k =
    len(v_i) + 1)."""
    k = k or len(v[0]) + 1
    models = [np.arange(k)] * len(v) if models is None else models
    ragged = [i for i, s in enumerate(models) if len(s) < k]
    complete = [i for i, s in enumerate(models) if len(s) == k]
    rows = np.array([len(s) - 1 for s in models])
    return {"k": k, "q": len(v), "p_i": rows.astype(float).tolist(), "c": np.asarray(c).tolist(),
            "m": (n / (1 + (n - 1) * rho)).tolist(), "w": ((n - 1) * rows).astype(float).tolist(),
            "q_c": len(complete), "idx_c": [i + 1 for i in complete],
            "v_c": np.vstack([np.empty((0, k - 1))] + [v[i] for i in complete]).tolist(),
            "q_r": len(ragged), "idx_r": [i + 1 for i in ragged], "P_r": int(rows[ragged].sum()),
            "v_r": np.concatenate([np.empty(0)] + [v[i] for i in ragged]).tolist(),
            "A_r": np.vstack([np.empty((0, k - 1))] + [selection(models[i], k) for i in ragged]).tolist(),
            "seg_start": (np.cumsum([0] + [rows[i] for i in ragged])[:-1] + 1).astype(int).tolist(),
            "seg_len": rows[ragged].astype(int).tolist()}


def contrasts(data: dict) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each dataset's v_i and A_i (the identity where it has every model), read back from the Stan data."""
    p, q = data["k"] - 1, data["q"]
    v, maps = [np.empty(0)] * q, [np.eye(p)] * q
    for i, row in zip(data["idx_c"], np.asarray(data["v_c"], dtype=float).reshape(-1, p)):
        v[i - 1] = row
    stacked, values = np.asarray(data["A_r"], dtype=float).reshape(-1, p), np.asarray(data["v_r"], dtype=float)
    for i, start, rows in zip(data["idx_r"], data["seg_start"], data["seg_len"]):
        v[i - 1], maps[i - 1] = values[start - 1:start - 1 + rows], stacked[start - 1:start - 1 + rows]
    return v, maps


def population_fit(data: dict) -> tuple[list[np.ndarray], float]:
    """The residuals v_i − A_i d̂ of the least-squares fit of v_i ~ A_i d and their variance per coordinate,
    Σ|v_i − A_i d̂|² / (Σ p_i − p): with every model on every dataset d̂ is the mean of the v_i, and this the mean
    over the coordinates of their sample variance (the spread of v, tr(Ω̂)/p)."""
    v, maps = contrasts(data)
    d_hat = np.linalg.solve(sum(a.T @ a for a in maps), sum(a.T @ x for a, x in zip(maps, v)))
    residuals = [x - a @ d_hat for a, x in zip(maps, v)]
    freedom = sum(len(r) for r in residuals) - len(d_hat)
    return residuals, (sum(float(r @ r) for r in residuals) / freedom if freedom > 0 else 0.0)


def whitening(data: dict, steps: int = 50) -> np.ndarray:
    """G (p × p, lower-triangular), the program's change of variables W = G Q G' that puts the posterior of Q near
    the identity (the header's Sampling; any G gives the same posterior): the Cholesky factor of p times Tyler's
    estimate of the shape of the complete datasets' residuals v_i − d̂ (the shape of an elliptical population,
    robust to its heavy tails), trace p; the identity when fewer than p + 1 datasets have every model."""
    p = data["k"] - 1
    residuals, _ = population_fit(data)
    complete = np.array([r for r in residuals if len(r) == p])
    complete = complete[np.linalg.norm(complete, axis=1) > 0] if len(complete) else complete
    if len(complete) <= p:
        return np.sqrt(p) * np.eye(p)
    shape = np.eye(p)
    for _ in range(steps):  # Tyler's fixed point: Σ ∝ mean of r r' / (r' Σ⁻¹ r)
        weights = np.einsum("ij,jk,ik->i", complete, np.linalg.inv(shape), complete)
        shape = (complete / weights[:, None]).T @ complete
        shape = p * shape / np.trace(shape)
    return np.linalg.cholesky(p * (shape + 1e-6 * np.eye(p)))


def tau_forms(data: dict) -> dict:
    """Which datasets sample τ_i = 1/λ_i through ω_i = σ0²λ_i (``idx_tau``) and which standardised (``idx_z``; the
    program's header): through ω_i where the data carry more information about log λ_i than its prior does,
    p_i/2 · r_i² > 1/trigamma(ν̂/2), with r_i = s0² / (s0² + σ_i²/m_i) the population's share of the variance of
    v_i (s0² a moment estimate of the population's variance, from :func:`population_fit`; σ_i² ≈ c_i / w_i) and
    ν̂ = 4 + 6/κ from the excess kurtosis κ of the residuals v_i − A_i d̂ (a Student-t's is 6/(ν − 4)), at most
    :data:`NU_CAP`.  Heavy tails (Wainer's 16 models, ν near 1) give through ω_i, Gaussian datasets (ν large, λ_i
    near 1 a priori) standardised."""
    c, m, w, p = (np.asarray(data[key], dtype=float) for key in ("c", "m", "w", "p_i"))
    noise = c / w / m
    residuals, variance = population_fit(data)
    population = max(variance - float(np.median(noise)), 1e-12)
    standard = np.concatenate([r / np.sqrt(population + e) for r, e in zip(residuals, noise)])
    kurtosis = float(np.mean(standard**4) / np.mean(standard**2) ** 2 - 3)
    nu = min(4 + 6 / kurtosis, NU_CAP) if kurtosis > 0 else NU_CAP
    information = (p / 2) * (population / (population + noise)) ** 2
    itself = information > 1 / special.polygamma(1, nu / 2)
    index = np.arange(1, len(c) + 1)
    return {"q_tau": int(itself.sum()), "idx_tau": index[itself].tolist(), "idx_z": index[~itself].tolist()}


def _with_contrasts(scores) -> tuple:
    """``scores`` on the datasets where two models or more have scores, and the names of the others."""
    keep = [len(present(b)) >= 2 for b in scores.blocks]
    counts = tuple(scores.fold_counts) or (None,) * len(keep)
    fitted = dataclasses.replace(
        scores, datasets=[d for d, k in zip(scores.datasets, keep) if k],
        blocks=[b for b, k in zip(scores.blocks, keep) if k], fold_counts=tuple(f for f, k in zip(counts, keep) if k))
    return fitted, [d for d, k in zip(scores.datasets, keep) if not k]


def _correlations(scores, fitted, opts: RankOptions) -> np.ndarray:
    """ρ per dataset ``fitted`` (``opts.rho``, else 1/folds), after checking that the model applies to ``scores``;
    every problem at once."""
    problems = []
    partial = [f"{d} ({', '.join(_with_gaps(scores.models, b))})" for d, b in zip(scores.datasets, scores.blocks)
               if _with_gaps(scores.models, b)]
    if partial:
        problems.append(f"models lack some fold scores on {counted(len(partial), 'dataset')} ({listed(partial)}): "
                        "the hierarchical model takes a dataset some models lack, not a model that lacks some folds "
                        "(drop_incomplete drops those datasets; --model bbt counts no game where a score is missing)")
    short = [d for d, b in zip(fitted.datasets, fitted.blocks) if len(b) < 2]
    if short:
        problems.append(f"{counted(len(short), 'dataset')} hold one score per model ({listed(short)}): the "
                        "hierarchical model needs the fold scores (--model bbt ranks per-dataset means)")
    few = len(scores.datasets) - len(fitted.datasets)
    if len(fitted.datasets) < 2:
        problems.append("the hierarchical model ranks models across two datasets or more"
                        + (f" that hold two models or more ({counted(few, 'dataset')} hold fewer)" if few else ""))
    groups = _groups(fitted)
    if len(groups) > 1 and fitted.datasets:
        problems.append(f"no dataset links the models {' to '.join('{' + ', '.join(g) + '}' for g in groups)}: "
                        "nothing in the data compares one group with another")
    counts = list(fitted.fold_counts)
    unknown = [d for d, f in zip(fitted.datasets, counts) if f is None]
    if opts.rho is None and unknown:
        problems.append(f"the folds per repeat are unknown on {listed(unknown)}: pass folds=K (ρ = 1/K, the "
                        "correlation between folds) or rho=ρ")
    wrong = [f"{d} ({len(b)} scores, {f} folds)" for d, b, f in zip(fitted.datasets, fitted.blocks, counts)
             if f and len(b) % f]
    if wrong:
        problems.append(f"scores per model are not a whole number of repeats of the folds on {listed(wrong)}")
    if problems:
        raise InputError(problems, header=HEADER)
    if opts.rho is not None:
        return np.full(len(fitted.datasets), float(opts.rho))
    return 1.0 / np.array(counts, dtype=float)


def _with_gaps(models: list[str], block: np.ndarray) -> list[str]:
    """The models with scores on some of a dataset's folds but not on all."""
    missing = np.isnan(block)
    return [m for m, some, every in zip(models, missing.any(axis=0), missing.all(axis=0)) if some and not every]


def _groups(scores) -> list[list[str]]:
    """The models in groups linked by the datasets they share (one group: every contrast meets the data)."""
    group = list(range(len(scores.models)))

    def root(j: int) -> int:
        while group[j] != j:
            j = group[j]
        return j

    for block in scores.blocks:
        first, *others = present(block)
        for j in others:
            group[root(j)] = root(first)
    roots = [root(j) for j in range(len(group))]
    return [[m for m, r in zip(scores.models, roots) if r == top] for top in dict.fromkeys(roots)]


def sample_program(data: dict, opts: RankOptions, progress: Progress | None) -> tuple[sampler.Run, str]:
    """Sample ``stan/hierarchical_k.stan`` as ``rank`` does: when the fit diverges, sample again at adapt_delta 0.95
    and keep the fit with fewer divergences."""
    def run(adapt_delta):
        return sampler.run("hierarchical_k", data, chains=opts.chains, draws=opts.draws, warmup=opts.warmup,
                           seed=opts.seed, backend=opts.backend, progress=progress, adapt_delta=adapt_delta)

    form = f"{FORM} ({data['q_tau']} as itself, {data['q'] - data['q_tau']} standardised)"
    first = run(None)
    divergences = int(first.sampler["divergent__"].sum())
    if not divergences:
        return first, form
    second = run(RETRY_ADAPT_DELTA)
    tried = int(second.sampler["divergent__"].sum())
    best, note = ((second, f"adapt_delta {RETRY_ADAPT_DELTA:g} after {divergent_transitions(divergences)}")
                  if tried < divergences else
                  (first, f"adapt_delta {RETRY_ADAPT_DELTA:g} was tried too ({divergent_transitions(tried)})"))
    best.seconds = first.seconds + second.seconds
    return best, f"{form}; {note}"
