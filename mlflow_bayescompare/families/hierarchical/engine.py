"""``hierarchical_test``: the Bayesian hierarchical correlated t-test of Corani et al. (2017), end to end.

Pipeline: inputs → :mod:`...scores.tensor` (paired differences) → :mod:`.prepare` (scaling, bounds) →
:mod:`...sampling.sampler` (Stan) → the draws back in score units (:func:`.summary.score_units`) → :mod:`.summary` and
:mod:`...shared.posterior_summary` (probabilities, shrinkage, odds, verdict, diagnostics) →
:class:`.HierarchicalResult`.  One unit for the rope: every answer reads the draws and the rope in score units; only
the model check reads the Stan data and its draws in their scaled units (a likelihood, no rope).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...sampling import programs, sampler
from ...scores.tensor import CVTensor, from_arrays, from_tidy
from ...shared import baselines, posterior_summary
from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.options import WARMUP, FitOptions, build
from ...vocabulary.outcomes import Orientation, divergent_transitions
from ...vocabulary.progress import Progress
from ...vocabulary.versions import versions
from . import prepare, summary
from .result import HierarchicalResult

__all__ = ["hierarchical_test", "as_tensor", "SENSITIVITY_ROPES", "SENSITIVITY_PRIORS"]

SENSITIVITY_ROPES = (0.005, 0.01, 0.02)
SENSITIVITY_PRIORS = ("hierarchical", "gamma(2,0.1)", "gaussian")
#: the step-size adaptation's target acceptance rate: Stan's default for the first fit, and the retries' after it
#: diverged (benchmarks/README.md, "Divergences left by the retry")
STAN_ADAPT_DELTA = 0.8
RETRY_ADAPT_DELTA = 0.95


def hierarchical_test(scores_a=None, scores_b=None, *, diffs=None, folds=None, datasets=None,
                      model_a: str | None = None, model_b: str | None = None, options: FitOptions | None = None,
                      progress: Progress | None = None, model_check: bool = True, default_warmup: int = WARMUP,
                      **settings) -> HierarchicalResult:
    """Compare model A with model B across datasets.

    Args:
        scores_a, scores_b: paired scores, 2-D arrays (datasets × runs·folds, run-major) or lists of 1-D arrays
            (datasets may differ in length); or a tidy DataFrame as ``scores_a`` with columns dataset, model,
            repeat, fold, score (``model_a``/``model_b`` pick the models); or a :class:`CVTensor`.
        diffs: the differences ``a - b`` instead of the scores.
        folds: folds of the cross-validation (ρ = 1/folds, Nadeau & Bengio; Sec. 2), one number or one per dataset.
        options: a :class:`~.options.FitOptions`; ``settings`` are its fields given as keywords instead (rope,
            greater_is_better, prior, threshold, rho, chains, draws, warmup, seed, backend, sensitivity and the
            hyper-prior bounds of Sec. 3), which override ``options``.
        progress: a hook receiving the stages ``compiling`` (the first time on a machine) and ``sampling``.
        model_check: compute each dataset's PSIS-LOO Pareto k̂ (the shrinkage table's ``pareto_k``; a fraction of
            the sampling: benchmarks/README.md, "The model check's cost"); a matrix's pairs skip it unless they get
            full reports.
        default_warmup: the warm-up when the options give none.  Shorter than :data:`~.options.WARMUP` (a
            matrix's pairs: :data:`~.options.MATRIX_PAIR_WARMUP`), a fit whose chains then disagree (R-hat above
            the limit) is sampled again after the full warm-up, and the one with the smaller R-hat is kept.

    Returns:
        :class:`HierarchicalResult`.  Orientation: x = a − b; the paper's *right* (x > rope) is "A better" when
        greater is better, its *left* (x < −rope) is "B better"; ``p_a_better``/``p_b_better`` apply it.
    """
    opts = build(FitOptions, options, **settings)
    retry_warmup = opts.warmup is None and default_warmup < WARMUP
    opts = opts.with_warmup(default_warmup)
    tensor = as_tensor(scores_a, scores_b, diffs, datasets, folds, model_a, model_b)
    opts = opts.with_seed()
    folds = folds if folds is not None else tensor.folds
    rho = prepare.correlations(tensor.datasets, folds, opts.rho)
    fitter = _Fitter(tensor, rho, opts, progress, model_check, retry_warmup)
    result = fitter.result(folds)
    if opts.sensitivity:
        result.sensitivity = _sensitivity(fitter, result)
        result.sensitivity_note = summary.sensitivity_note(result.sensitivity, result.decision)
    return result


class _Fitter:
    """Fits the model on one tensor, once per prior asked for, and turns a fit into a result."""

    def __init__(self, tensor: CVTensor, rho: np.ndarray, opts: FitOptions, progress: Progress | None,
                 model_check: bool = True, retry_warmup: bool = False):
        self.tensor, self.rho, self.opts, self.progress = tensor, rho, opts, progress
        self.model_check, self.retry_warmup = model_check, retry_warmup
        self.form: dict[str, str] = {}  # per prior: how δ_i was sampled, for the diagnostics
        self.rhat: dict[str, float] = {}  # per prior: the kept fit's R-hat, when the warm-up retry computed it

    def fit(self, prior: str) -> tuple[prepare.Prepared, sampler.Fit]:
        """Prepare and sample in the form of δ_i prepare chose, at Stan's default adapt delta.  When that fit
        diverges, re-sample at :data:`RETRY_ADAPT_DELTA`, non-centred first, then centred if it still diverges,
        and keep the fit with the fewest divergences (a retry on a tie).  With ``retry_warmup`` (a matrix's pair,
        whose default warm-up is short), a kept fit whose chains disagree (R-hat above the limit) is sampled again
        after the full warm-up, and the one with the smaller R-hat is kept.  The reported times cover every fit.

        Measured (benchmarks/README.md, "Divergences left by the retry"): on the demo's data the non-centred form's
        few divergences sit in σ0's upper tail and go at a smaller step size, while the centred form has a funnel
        at small σ0 that a smaller step size seldom cures; a centred fit's divergences go in the non-centred form.
        """
        opts = self.opts
        prepared = prepare.prepare(
            self.tensor.datasets, self.tensor.diffs, rope=opts.rope, rho=self.rho,
            prior_code=programs.prior_code(prior), rng=np.random.default_rng(opts.seed),
            std_upper_bound=opts.std_upper_bound, alpha_bounds=opts.alpha_bounds, beta_bounds=opts.beta_bounds,
        )
        first = _Try(prepared.stan_data, None, self._sample(prepared.stan_data))
        tries = [first]
        for noncentred in (True, False):
            if not tries[-1].posterior.divergences:
                break
            stan_data = {**prepared.stan_data, **prepare.delta_form(prepared.stan_data["q"], noncentred)}
            tries.append(_Try(stan_data, RETRY_ADAPT_DELTA, self._sample(stan_data, RETRY_ADAPT_DELTA)))
        kept = min([*tries[1:], first], key=lambda t: t.posterior.divergences)  # a retry wins a tie
        self.form[prior] = _tried(tries, kept)
        if self.retry_warmup:
            kept.rhat = posterior_summary.rhat_max(kept.posterior)
            if kept.rhat > posterior_summary.RHAT_LIMIT:
                full = _Try(kept.stan_data, kept.adapt_delta, self._sample(kept.stan_data, kept.adapt_delta, WARMUP))
                full.rhat = posterior_summary.rhat_max(full.posterior)
                tries.append(full)
                short, kept = kept, min(full, kept, key=lambda t: t.rhat)  # the full warm-up wins a tie
                self.form[prior] += (f"; R-hat {short.rhat:.3f} after {opts.warmup} warm-up iterations, "
                                     f"{full.rhat:.3f} after {WARMUP}: kept the "
                                     f"{'full' if kept is full else 'short'} warm-up")
            self.rhat[prior] = kept.rhat
        posterior = kept.posterior
        if len(tries) > 1:  # the reported times cover every fit
            posterior.seconds = sum(t.posterior.seconds for t in tries)
            posterior.compile_seconds = sum(t.posterior.compile_seconds for t in tries)
        prepared.stan_data = kept.stan_data
        return prepared, posterior

    def _sample(self, stan_data: dict, adapt_delta: float | None = None, warmup: int | None = None) -> sampler.Fit:
        o = self.opts
        return sampler.sample(stan_data, chains=o.chains, draws=o.draws, warmup=warmup or o.warmup, seed=o.seed,
                          backend=o.backend, progress=self.progress, adapt_delta=adapt_delta)

    def result(self, folds) -> HierarchicalResult:
        opts, tensor = self.opts, self.tensor
        prepared, posterior = self.fit(opts.prior)
        draws = summary.score_units(posterior.draws, prepared.scale)
        areas = summary.next_dataset_areas(draws, opts.rope)
        p_left, p_rope, p_right = posterior_summary.winner_fractions(areas)
        orientation = Orientation(opts.greater_is_better)
        probs = orientation.orient(p_left, p_rope, p_right)
        odds = posterior_summary.posterior_odds(probs, len(areas))
        decision, sentence = posterior_summary.verdict(probs, odds, tensor.model_a, tensor.model_b, opts.threshold)
        table = self._shrinkage(prepared, posterior, draws, orientation)
        return HierarchicalResult(
            model_a=tensor.model_a, model_b=tensor.model_b, greater_is_better=opts.greater_is_better,
            rope=opts.rope, p_left=p_left, p_rope=p_rope, p_right=p_right, next_probs=areas, verdict=sentence,
            decision=decision, odds=odds, evidence=posterior_summary.evidence(odds),
            shrinkage=table,
            delta0=posterior_summary.describe(draws["delta0"]), sigma0=posterior_summary.describe(draws["sigma0"]),
            delta0_probs=orientation.orient(*summary.side_masses(draws["delta0"], opts.rope)),
            nu=posterior_summary.describe(draws["nu"]) if "nu" in draws else None,
            signed_rank_p=baselines.signed_rank_p([np.mean(x) for x in tensor.diffs]),
            diagnostics=self._diagnostics(posterior, prepared, table),
            settings={**opts.to_dict(), "folds": folds, "rho": self.rho.tolist(), "versions": versions(),
                      "backend": posterior.backend, "scale": prepared.scale, "perturbed": prepared.perturbed},
            draws=draws, stan_data=prepared.stan_data, sample_stats=posterior.sampler,
        )

    def _shrinkage(self, prepared: prepare.Prepared, posterior: sampler.Fit, draws: dict,
                   orientation: Orientation) -> pd.DataFrame:
        """One row per dataset: the MLE, the shrinkage estimate with its HDI and side probabilities, the
        per-dataset baselines, each oriented as A better / B better too, and the model check: the dataset's
        PSIS-LOO Pareto k̂ (unless skipped) and whether its own strong evidence was shrunk to the opposite side."""
        tensor = self.tensor
        table = pd.concat([
            pd.DataFrame({"dataset": tensor.datasets, "n": prepared.n, "rho": self.rho,
                          "mle": [np.mean(x) for x in tensor.diffs]}),
            summary.shrinkage_table(draws["delta"], self.opts.rope),
            summary.per_dataset(tensor.diffs, self.rho, self.opts.rope),
        ], axis=1)
        oriented = orientation.orient(table["p_left"], table["p_rope"], table["p_right"])
        table["p_a_better"], table["p_b_better"] = oriented["a_better"], oriented["b_better"]
        table["perturbed"] = table["dataset"].isin(prepared.perturbed)
        if self.model_check:
            table["pareto_k"] = summary.dataset_pareto_k(prepared.stan_data, posterior.draws)
        table["conflict"] = summary.conflicts(table, self.opts.threshold)
        return table

    def _diagnostics(self, posterior: sampler.Fit, prepared: prepare.Prepared, table: pd.DataFrame) -> dict:
        diagnostics = {**posterior_summary.diagnostics(posterior, self.rhat.get(self.opts.prior)),
                       "parameterisation": self.form[self.opts.prior]}
        if len(self.tensor.datasets) == 1:
            diagnostics["warnings"].append(
                "one dataset only: the between-dataset spread σ0 is not identified, so the next-dataset "
                "probabilities mostly reflect the prior; read the per-dataset (correlated t-test) columns instead"
            )
        diagnostics["warnings"] += _model_check_warnings(table, self.opts.threshold)
        for warning in diagnostics["warnings"]:
            log.warning(warning)
        diagnostics["warnings"] += prepared.warnings  # already said by prepare
        return diagnostics


def _model_check_warnings(table: pd.DataFrame, threshold: float) -> list[str]:
    """The datasets the Student-t population does not fit (Pareto k̂ > 0.7) and those whose own strong evidence
    the shrinkage turned around, by name."""
    out = []
    poor = table[table["pareto_k"] > summary.PARETO_K_LIMIT] if "pareto_k" in table else table.iloc[:0]
    if len(poor):
        out.append(f"{len(poor)} dataset(s) the Student-t population does not fit (PSIS-LOO Pareto k̂ > "
                   f"{summary.PARETO_K_LIMIT}): " + ", ".join(f"{r.dataset} (k̂ {r.pareto_k:.2f})"
                                                          for r in poor.head(10).itertuples()))
    turned = table[table["conflict"]]
    if len(turned):
        out.append(f"{len(turned)} dataset(s) whose own evidence (correlated t-test P ≥ {threshold:g}) the "
                   "hierarchical estimate turns to the other side: " + ", ".join(
                       f"{r.dataset} (mean difference {r.mle:.3g}, shrunk to {r.shrunk:.3g})"
                       for r in turned.head(10).itertuples()))
    return out


def _form(stan_data: dict) -> str:
    return "non-centred δ_i" if stan_data["q_nc"] else "centred δ_i"


@dataclasses.dataclass
class _Try:
    """One fit of :meth:`_Fitter.fit`: its Stan data (the form of δ_i), adapt delta (None: Stan's default),
    posterior and, when computed, R-hat."""

    stan_data: dict
    adapt_delta: float | None
    posterior: sampler.Fit
    rhat: float | None = None


def _tried(tries: list[_Try], kept: _Try) -> str:
    """How δ_i was sampled and, after a retry, what else was tried: ``non-centred δ_i; centred δ_i was tried too
    (18 divergent transitions at Stan's default adapt delta 0.8); kept: adapt delta 0.95``.  A fit in the kept
    form that was not kept is "the same form"."""
    form = _form(kept.stan_data)
    if len(tries) == 1:
        return form
    others: dict[str, list[str]] = {}
    for t in tries:
        if t is not kept:
            name = _form(t.stan_data)
            others.setdefault("the same form" if name == form else name, []).append(
                f"{divergent_transitions(t.posterior.divergences)} at {_adapt_delta(t.adapt_delta)}")
    return "; ".join([form, *(f"{name} was tried too ({', '.join(counts)})" for name, counts in others.items()),
                      f"kept: {_adapt_delta(kept.adapt_delta)}"])


def _adapt_delta(value: float | None) -> str:
    return f"adapt delta {value:g}" if value is not None else f"Stan's default adapt delta {STAN_ADAPT_DELTA:g}"


def _sensitivity(fitter: _Fitter, main: HierarchicalResult) -> pd.DataFrame:
    """The conclusion under each ν prior × rope (paper, Sec. "Sensitivity analysis on real-world data sets"), the
    draws and the ropes in score units."""
    rows = []
    orientation, threshold = main.orientation, fitter.opts.threshold
    for prior in SENSITIVITY_PRIORS:
        draws = main.draws
        if prior != fitter.opts.prior:
            prepared, posterior = fitter.fit(prior)
            draws = summary.score_units(posterior.draws, prepared.scale)
        for rope in SENSITIVITY_ROPES:
            areas = summary.next_dataset_areas(draws, rope)
            probs = orientation.orient(*posterior_summary.winner_fractions(areas))
            odds = posterior_summary.posterior_odds(probs, draws["delta0"].size)
            decision, _ = posterior_summary.verdict(probs, odds, main.model_a, main.model_b, threshold)
            rows.append({"prior": prior, "rope": rope, "p_a_better": probs["a_better"], "p_rope": probs["rope"],
                         "p_b_better": probs["b_better"], "decision": decision})
    return pd.DataFrame(rows)


def as_tensor(scores_a, scores_b, diffs=None, datasets=None, folds=None, model_a=None, model_b=None) -> CVTensor:
    """The paired differences of any input form ``hierarchical_test`` accepts."""
    if isinstance(scores_a, CVTensor):
        return scores_a
    if isinstance(scores_a, pd.DataFrame):
        models = list(pd.unique(scores_a["model"])) if "model" in scores_a else []
        if model_a is None or model_b is None:
            if len(models) != 2:
                raise InputError(f"name model_a and model_b: the DataFrame holds models {models}")
            model_a, model_b = (model_a or models[0]), (model_b or models[1])
        return from_tidy(scores_a, model_a, model_b, folds=folds)
    return from_arrays(scores_a, scores_b, diffs=diffs, datasets=datasets, folds=folds,
                       model_a=model_a or "A", model_b=model_b or "B")
