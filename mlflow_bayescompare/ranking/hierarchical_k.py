"""``rank_hierarchical``: the hierarchical model of Corani et al. (2017) extended to k models
(``stan/hierarchical_k.stan``, whose header holds the model, its exact rewrites and why one noise scale per dataset),
fitted to the fold scores of many datasets.

Pipeline: :class:`~.engine.Scores` (oriented so that greater is better) → :func:`stan_inputs` (per dataset the fold
means' contrast coordinates v_i = H'ȳ_i and the residual sum of squares c_i, scaled to the data's within-dataset
spread; the paper's data-derived prior bounds) → ``stan/hierarchical_k.stan`` →
:func:`.hierarchical_k_result.summarise`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from ..console import log
from ..errors import InputError
from ..options import FitOptions, RankOptions
from ..progress import Progress, notify
from ..result import counted, divergent_transitions
from ..sampling import sampler
from .hierarchical_k_result import HierarchicalRankingResult, summarise

__all__ = ["rank_hierarchical", "stan_inputs", "sufficient", "sufficient_data", "tau_forms", "helmert", "Inputs",
           "HEADER", "FORM", "NU_CAP", "RETRY_ADAPT_DELTA"]

HEADER = "Cannot rank the models with the hierarchical model:"
#: how the program samples (its header): the datasets' effects integrated out
FORM = "effects integrated out; log sigma_i and 1/lambda_i sampled"
#: the largest ν :func:`tau_forms` estimates (a Gaussian population)
NU_CAP = 100.0
#: the target acceptance rate of the second fit when the first diverges
RETRY_ADAPT_DELTA = 0.95


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
    it), the Helmert ``basis`` (δ = H d), ``rho`` and ``n`` per dataset, the datasets whose residuals were all zero
    (``patched``)."""

    stan_data: dict
    scale: float
    basis: np.ndarray
    rho: np.ndarray
    n: np.ndarray
    patched: list[str]


def rank_hierarchical(scores, opts: RankOptions, progress: Progress | None = None) -> HierarchicalRankingResult:
    """Rank the models of ``scores`` (a :class:`~.engine.Scores` of two datasets or more, oriented so that greater
    is better) by the hierarchical model."""
    inputs = stan_inputs(scores, opts)
    opts = opts.with_seed().with_warmup()
    notify(progress, "sampling", f"{len(scores.models)} models on {counted(len(scores.datasets), 'dataset')} "
                                 f"(hierarchical model, {opts.chains} chains × {opts.draws} draws)")
    run, form = _sample(inputs.stan_data, opts, progress)
    return summarise(scores, inputs, run, opts, form=form)


def stan_inputs(scores, opts: RankOptions) -> Inputs:
    """The data block of ``stan/hierarchical_k.stan``, checked: every model scored on every fold of every dataset
    (at least 2 folds), ρ known.  Every problem at once."""
    k, blocks = len(scores.models), scores.blocks
    rho = _correlations(scores, opts)
    n = np.array([len(b) for b in blocks])
    v, c = sufficient(blocks, rho)
    spread = np.sqrt(c * (1 - rho) / ((n - 1) * (k - 1)))  # a model's residual sd on each dataset
    scale = float(spread.mean()) if spread.mean() > 0 else opts.metric_rope
    v, c = v / scale, c / scale**2
    patched = [d for d, value in zip(scores.datasets, c) if value <= 1e-12]
    if patched:  # as prepare.py's noise U(±rope) on a constant dataset: its expected residual sum of squares
        floor = (n - 1) * (k - 1) * (opts.metric_rope / scale) ** 2 / 3 / (1 - rho)
        c = np.where(c <= 1e-12, floor, c)
        log.warning("no residual variation across folds on %s (the models' scores move together): their noise "
                    "is taken as U(±rope), as the two-model test does", ", ".join(patched[:12]))
    largest = max(float(np.max(np.ptp(b, axis=1))) for b in blocks) / scale
    upper = FitOptions.std_upper_bound
    among = float(np.sqrt(np.mean(np.var(v, axis=0, ddof=1))))
    data = {**sufficient_data(v, c, n, rho), "d_bound": max(largest, opts.metric_rope / scale) / 2**0.5,
            "sigma0_high": upper * (among if among > 0 else 1.0), "sigma_high": 0.0,
            "alpha_low": FitOptions.alpha_bounds[0], "alpha_high": FitOptions.alpha_bounds[1],
            "beta_low": FitOptions.beta_bounds[0], "beta_high": FitOptions.beta_bounds[1]}
    data.update(tau_forms(data))
    return Inputs(data, scale, helmert(k), rho, n, patched)


def sufficient(blocks: list[np.ndarray], rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per dataset (a block: folds × k), v_i = H'ȳ_i and c_i = tr(H'W_iH)/(1 − ρ_i) (the program's rewrites 1-2)."""
    basis = helmert(blocks[0].shape[1])
    v = np.array([basis.T @ b.mean(axis=0) for b in blocks])
    c = np.array([np.sum(((b - b.mean(axis=0)) @ basis) ** 2) for b in blocks]) / (1 - rho)
    return v, c


def sufficient_data(v: np.ndarray, c: np.ndarray, n: np.ndarray, rho: np.ndarray) -> dict:
    """The data block's entries that carry the data: k, q, v, c, m and w."""
    k = v.shape[1] + 1
    return {"k": k, "q": len(v), "v": v.tolist(), "c": c.tolist(), "m": (n / (1 + (n - 1) * rho)).tolist(),
            "w": ((n - 1) * (k - 1)).astype(float).tolist()}


def tau_forms(data: dict) -> dict:
    """Which datasets sample τ_i = 1/λ_i through ω_i = σ0²λ_i (``idx_tau``) and which standardised (``idx_z``; the
    program's header): through ω_i where the data carry more information about log λ_i than its prior does,
    (k − 1)/2 · r_i² > 1/trigamma(ν̂/2), with r_i = s0² / (s0² + σ_i²/m_i) the population's share of the variance of
    v_i (s0² a moment estimate of the population's variance, σ_i² ≈ c_i / w_i) and ν̂ = 4 + 6/κ from the excess
    kurtosis κ of the centred v (a Student-t's is 6/(ν − 4)), at most :data:`NU_CAP`.  Heavy tails (Wainer's 16 models,
    ν near 1) give through ω_i, Gaussian datasets (ν large, λ_i near 1 a priori) standardised."""
    v, c, m, w = (np.asarray(data[key], dtype=float) for key in ("v", "c", "m", "w"))
    noise = c / w / m
    centred = v - v.mean(axis=0)
    population = max(float(np.mean(np.var(v, axis=0, ddof=1))) - float(np.median(noise)), 1e-12)
    standard = (centred / np.sqrt(population + noise)[:, None]).ravel()
    kurtosis = float(np.mean(standard**4) / np.mean(standard**2) ** 2 - 3)
    nu = min(4 + 6 / kurtosis, NU_CAP) if kurtosis > 0 else NU_CAP
    information = (v.shape[1] / 2) * (population / (population + noise)) ** 2
    itself = information > 1 / special.polygamma(1, nu / 2)
    index = np.arange(1, len(v) + 1)
    return {"q_tau": int(itself.sum()), "idx_tau": index[itself].tolist(), "idx_z": index[~itself].tolist()}


def _correlations(scores, opts: RankOptions) -> np.ndarray:
    """ρ per dataset (``opts.rho``, else 1/folds), after checking that the model applies; every problem at once."""
    problems = []
    incomplete = [d for d, b in zip(scores.datasets, scores.blocks) if np.isnan(b).any()]
    if incomplete:
        problems.append(f"models lack scores on {counted(len(incomplete), 'dataset')} "
                        f"({', '.join(incomplete[:12])}): the hierarchical model needs every model on every fold "
                        "(drop_incomplete drops those datasets; --model bbt counts no game where a score is missing)")
    short = [d for d, b in zip(scores.datasets, scores.blocks) if len(b) < 2]
    if short:
        problems.append(f"{counted(len(short), 'dataset')} hold one score per model ({', '.join(short[:12])}): the "
                        "hierarchical model needs the fold scores (--model bbt ranks per-dataset means)")
    if len(scores.datasets) < 2:
        problems.append("the hierarchical model ranks models across two datasets or more")
    counts = list(scores.fold_counts) or [None] * len(scores.datasets)
    unknown = [d for d, f in zip(scores.datasets, counts) if f is None]
    if opts.rho is None and unknown:
        problems.append(f"the folds per repeat are unknown on {', '.join(unknown[:12])}: pass folds=K (ρ = 1/K, the "
                        "correlation between folds) or rho=ρ")
    wrong = [f"{d} ({len(b)} scores, {f} folds)" for d, b, f in zip(scores.datasets, scores.blocks, counts)
             if f and len(b) % f]
    if wrong:
        problems.append(f"scores per model are not a whole number of repeats of the folds on {', '.join(wrong[:12])}")
    if problems:
        raise InputError(problems, header=HEADER)
    if opts.rho is not None:
        return np.full(len(scores.datasets), float(opts.rho))
    return 1.0 / np.array(counts, dtype=float)


def _sample(data: dict, opts: RankOptions, progress: Progress | None) -> tuple[sampler.Run, str]:
    """Sample; when the fit diverges, sample again at adapt_delta 0.95 and keep the fit with fewer divergences."""
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
