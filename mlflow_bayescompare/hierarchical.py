"""``hierarchical_test``: the Bayesian hierarchical correlated t-test of Corani et al. (2017), end to end.

Pipeline: inputs → :mod:`.tensor` (paired differences) → :mod:`.prepare` (scaling, bounds) → :mod:`.fit`
(Stan) → :mod:`.summary` (probabilities, shrinkage, odds, verdict, diagnostics) → :class:`.HierarchicalResult`.
"""

from __future__ import annotations

import sys
from importlib import metadata

import numpy as np
import pandas as pd

from . import baselines, fit, prepare, summary
from . import model as stan_model
from .errors import InputError
from .result import HierarchicalResult, divergent_transitions
from .tensor import CVTensor, from_arrays, from_tidy

SENSITIVITY_ROPES = (0.005, 0.01, 0.02)
SENSITIVITY_PRIORS = ("hierarchical", "gamma(2,0.1)", "gaussian")


def hierarchical_test(
    scores_a=None,
    scores_b=None,
    *,
    diffs=None,
    rope: float = 0.01,
    folds=None,
    rho=None,
    datasets=None,
    model_a: str | None = None,
    model_b: str | None = None,
    greater_is_better: bool = True,
    prior: str = "hierarchical",
    threshold: float = 0.95,
    chains: int = 4,
    draws: int = 1000,
    warmup: int = 1000,
    seed: int | None = None,
    backend: str = "auto",
    sensitivity: bool = False,
    std_upper_bound: float = 1000.0,
    alpha_bounds: tuple[float, float] = (0.5, 5.0),
    beta_bounds: tuple[float, float] = (0.05, 0.15),
) -> HierarchicalResult:
    """Compare model A with model B across datasets.

    Args:
        scores_a, scores_b: paired scores, 2-D arrays (datasets × runs·folds, run-major) or lists of 1-D arrays
            (datasets may differ in length); or a tidy DataFrame as ``scores_a`` with columns dataset, model,
            repeat, fold, score (``model_a``/``model_b`` pick the models); or a :class:`CVTensor`.
        diffs: the differences ``a - b`` instead of the scores.
        rope: half-width of the region of practical equivalence, in score units (Sec. 3.1; default ±0.01).
        folds: folds of the cross-validation (ρ = 1/folds, Nadeau & Bengio; Sec. 2), one number or one per dataset.
        rho: the correlation given directly instead of ``folds``.
        greater_is_better: False for losses and errors: then a *lower* score of A counts as A better.
        prior: ν prior, ``hierarchical`` (paper default), ``gamma(2,0.1)``, ``gamma(1,0.0345)`` or ``gaussian``.
        threshold: probability at which an outcome is declared (step 4 of the paper's inference; 1 - α).
        chains, draws, warmup, seed, backend: MCMC settings; ``backend`` is auto, cmdstanpy or pystan.
        sensitivity: also fit the priors ``hierarchical``, ``gamma(2,0.1)``, ``gaussian`` and evaluate ropes
            0.005, 0.01, 0.02 (the paper's sensitivity analysis); the table lands in ``result.sensitivity``.
        std_upper_bound, alpha_bounds, beta_bounds: the hyper-prior bounds of Sec. 3 (σ̄ = 1000·s̄, α ∈ U(0.5, 5),
            β ∈ U(0.05, 0.15)).

    Returns:
        :class:`HierarchicalResult`.  Orientation: x = a − b; the paper's *right* (x > rope) is "A better" when
        greater is better, its *left* (x < −rope) is "B better"; ``p_a_better``/``p_b_better`` apply it.
    """
    tensor = _as_tensor(scores_a, scores_b, diffs, datasets, folds, model_a, model_b)
    _check_settings(threshold=threshold, chains=chains, draws=draws, warmup=warmup)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31 - 1))
    rho_values = prepare.correlations(tensor.datasets, folds if folds is not None else tensor.folds, rho)
    settings = {
        "rope": rope,
        "folds": folds if folds is not None else tensor.folds,
        "rho": rho_values.tolist(),
        "prior": prior,
        "threshold": threshold,
        "greater_is_better": greater_is_better,
        "chains": chains,
        "draws": draws,
        "warmup": warmup,
        "seed": seed,
        "std_upper_bound": std_upper_bound,
        "alpha_bounds": list(alpha_bounds),
        "beta_bounds": list(beta_bounds),
        "versions": _versions(),
    }
    run = _Runner(tensor, rho_values, rope, seed, backend, chains, draws, warmup,
                  std_upper_bound, alpha_bounds, beta_bounds)
    result = run.result(prior, greater_is_better, threshold, settings)
    if sensitivity:
        result.sensitivity = _sensitivity(run, result, greater_is_better, threshold)
        result.sensitivity_note = summary.sensitivity_note(result.sensitivity, result.decision)
    return result


class _Runner:
    """Prepares the data once per prior and turns a fit into a result."""

    def __init__(self, tensor, rho, rope, seed, backend, chains, draws, warmup, upper, alpha, beta):
        self.tensor, self.rho, self.rope, self.seed = tensor, rho, rope, seed
        self.backend, self.chains, self.draws, self.warmup = backend, chains, draws, warmup
        self.bounds = {"std_upper_bound": upper, "alpha_bounds": alpha, "beta_bounds": beta}
        self.form: dict[str, str] = {}  # per prior: how δ_i was sampled, for the diagnostics

    def fit(self, prior: str):
        prepared = prepare.prepare(
            self.tensor.datasets,
            self.tensor.diffs,
            rope=self.rope,
            rho=self.rho,
            prior_code=stan_model.prior_code(prior),
            rng=np.random.default_rng(self.seed),
            **self.bounds,
        )
        posterior = self._sample(prepared.stan_data)
        self.form[prior] = _form(prepared.stan_data)
        if posterior.divergences:
            # prepare's choice of centred vs non-centred δ_i rests on a point estimate of the spread of the δ_i,
            # which is rough when q is small; when it shows divergences, try the other form, keep the better fit.
            switched = prepare.switch_parameterisation(prepared.stan_data)
            retry = self._sample(switched)
            other, other_divergences = _form(switched), retry.divergences
            seconds = posterior.seconds + retry.seconds  # the reported sampling time covers both fits
            if retry.divergences < posterior.divergences:
                other, other_divergences = self.form[prior], posterior.divergences
                prepared.stan_data, posterior = switched, retry
            posterior.seconds = seconds
            self.form[prior] = (f"{_form(prepared.stan_data)}; {other} was tried too "
                                f"({divergent_transitions(other_divergences)})")
        return prepared, posterior

    def _sample(self, stan_data: dict) -> fit.Fit:
        return fit.sample(stan_data, chains=self.chains, draws=self.draws, warmup=self.warmup, seed=self.seed,
                          backend=self.backend)

    def result(self, prior, greater_is_better, threshold, settings) -> HierarchicalResult:
        prepared, posterior = self.fit(prior)
        tensor, scale = self.tensor, prepared.scale
        areas = summary.next_dataset_areas(posterior.draws, prepared.rope_scaled)
        p_left, p_rope, p_right = summary.winner_fractions(areas)
        a_is_right = greater_is_better
        probs = {
            "a_better": p_right if a_is_right else p_left,
            "rope": p_rope,
            "b_better": p_left if a_is_right else p_right,
        }
        odds = summary.posterior_odds(probs, len(areas))
        decision, sentence = summary.verdict(probs, odds, tensor.model_a, tensor.model_b, threshold)
        draws = _score_units(posterior.draws, scale)
        shrink = summary.shrinkage_table(draws["delta"], self.rope)
        means = np.array([np.mean(x) for x in tensor.diffs])
        table = pd.concat(
            [
                pd.DataFrame({"dataset": tensor.datasets, "n": prepared.n, "rho": self.rho, "mle": means}),
                shrink,
                baselines.per_dataset(tensor.diffs, self.rho, self.rope),
            ],
            axis=1,
        )
        table["p_a_better"] = table["p_right"] if a_is_right else table["p_left"]
        table["p_b_better"] = table["p_left"] if a_is_right else table["p_right"]
        table["perturbed"] = table["dataset"].isin(prepared.perturbed)
        diagnostics = {**summary.diagnostics(posterior), "parameterisation": self.form[prior]}
        if len(tensor.datasets) == 1:
            diagnostics["warnings"].append(
                "one dataset only: the between-dataset spread σ0 is not identified, so the next-dataset "
                "probabilities mostly reflect the prior; read the per-dataset (correlated t-test) columns instead"
            )
        for warning in diagnostics["warnings"]:
            print(f"mlflow-bayescompare: warning: {warning}", file=sys.stderr)
        diagnostics["warnings"] += prepared.warnings  # already issued as UserWarning by prepare
        return HierarchicalResult(
            model_a=tensor.model_a,
            model_b=tensor.model_b,
            greater_is_better=greater_is_better,
            rope=self.rope,
            p_left=p_left,
            p_rope=p_rope,
            p_right=p_right,
            next_probs=areas,
            verdict=sentence,
            decision=decision,
            odds=odds,
            evidence=summary.evidence(odds),
            shrinkage=table,
            delta0=summary.describe(draws["delta0"]),
            sigma0=summary.describe(draws["sigma0"]),
            nu=summary.describe(draws["nu"]) if "nu" in draws else None,
            signed_rank_p=baselines.signed_rank_p(means),
            diagnostics=diagnostics,
            settings={**settings, "backend": posterior.backend, "scale": scale, "perturbed": prepared.perturbed},
            draws=draws,
            stan_data=prepared.stan_data,
        )


def _form(stan_data: dict) -> str:
    return "non-centred δ_i" if stan_data["q_nc"] else "centred δ_i"


def _score_units(draws: dict[str, np.ndarray], scale: float) -> dict[str, np.ndarray]:
    """Undo the scaling of :mod:`.prepare`; ν = 1 + ν'."""
    out = {name: draws[name] * scale for name in ("delta0", "sigma0", "delta")}
    if "nu_minus_one" in draws:
        out["nu"] = 1 + draws["nu_minus_one"]
    for name in ("gamma_alpha", "gamma_beta"):
        if name in draws:
            out[name] = draws[name]
    return out


def _sensitivity(run: _Runner, main: HierarchicalResult, greater_is_better, threshold) -> pd.DataFrame:
    """The conclusion under each ν prior × rope (paper, Sec. "Sensitivity analysis on real-world data sets")."""
    rows = []
    for prior in SENSITIVITY_PRIORS:
        draws = main.draws if prior == main.settings["prior"] else None
        scale = main.settings["scale"]
        if draws is None:
            prepared, posterior = run.fit(prior)
            draws = _score_units(posterior.draws, prepared.scale)
        scaled = {"delta0": draws["delta0"] / scale, "sigma0": draws["sigma0"] / scale}
        if "nu" in draws:
            scaled["nu_minus_one"] = draws["nu"] - 1
        for rope in SENSITIVITY_ROPES:
            p_left, p_rope, p_right = summary.winner_fractions(summary.next_dataset_areas(scaled, rope / scale))
            probs = {
                "a_better": p_right if greater_is_better else p_left,
                "rope": p_rope,
                "b_better": p_left if greater_is_better else p_right,
            }
            odds = summary.posterior_odds(probs, draws["delta0"].size)
            decision, _ = summary.verdict(probs, odds, main.model_a, main.model_b, threshold)
            rows.append({"prior": prior, "rope": rope, "p_a_better": probs["a_better"], "p_rope": p_rope,
                         "p_b_better": probs["b_better"], "decision": decision})
    return pd.DataFrame(rows)


def _as_tensor(scores_a, scores_b, diffs, datasets, folds, model_a, model_b) -> CVTensor:
    if isinstance(scores_a, CVTensor):
        return scores_a
    if isinstance(scores_a, pd.DataFrame):
        models = list(pd.unique(scores_a["model"])) if "model" in scores_a else []
        if model_a is None or model_b is None:
            if len(models) != 2:
                raise InputError(f"name model_a and model_b: the DataFrame holds models {models}")
            model_a, model_b = (model_a or models[0]), (model_b or models[1])
        return from_tidy(scores_a, model_a, model_b, folds=folds)
    return from_arrays(
        scores_a, scores_b, diffs=diffs, datasets=datasets, folds=folds, model_a=model_a or "A", model_b=model_b or "B"
    )


def _check_settings(*, threshold, chains, draws, warmup) -> None:
    problems = []
    if not 0 < threshold < 1:
        problems.append(f"threshold must lie in (0, 1); got {threshold}")
    for name, value, low in (("chains", chains, 1), ("draws", draws, 10), ("warmup", warmup, 10)):
        if not isinstance(value, (int, np.integer)) or value < low:
            problems.append(f"{name} must be a whole number >= {low}; got {value!r}")
    if problems:
        raise InputError(problems, header="invalid sampler settings:")


def _versions() -> dict[str, str]:
    out = {}
    for package in ("mlflow-bayescompare", "mlflow", "pystan", "httpstan", "cmdstanpy", "arviz"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out
