"""The ``demo`` command: the paper's Friedman experiment at small scale, end to end on a local MLflow store.

LDA, CART and naive Bayes (scikit-learn) on a few settings of Friedman's functions #1-#3 (sample size, noise, 0 or 20
extra N(0, 1) features; Corani et al. 2017, Sec. "Experiments with Friedman's functions"), each regression target
turned into two classes by its median.  Every model sees the same 10x10 stratified cross-validation splits.  The
per-fold accuracies are logged in the steps layout (:func:`.cvlog.log_cv_scores`); :func:`.pipeline.compare.rank_runs`
ranks
the three models together (a ranking run) and :func:`.pipeline.compare.compare_runs` compares LDA with CART, the paper's
pair (a comparison run).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .reads.reach import check_reachable
from .simulation.friedman import NOISE, Setting, classifiers, generate
from .vocabulary.console import redact_uri, ui_address
from .vocabulary.options import SamplerOptions
from .vocabulary.outcomes import counted
from .vocabulary.progress import TerminalProgress

EXPERIMENT = "bayescompare-demo"
MODELS = ("lda", "cart", "nb")
METRIC = "accuracy"


#: A spread of the paper's 54 settings, interleaved over the three functions (paper: n ∈ {30, 100, 1000}).
SETTINGS = tuple(
    Setting(f, NOISE[f][k], n, extra)
    for n, k, extra in ((100, 1, 0), (30, 1, 20), (300, 0, 0), (100, 2, 20), (30, 0, 0), (300, 2, 20))
    for f in (1, 2, 3)
)


def default_tracking_uri() -> str:
    """MLflow's embedded default store, made explicit: ``sqlite:///mlflow.db`` in the current directory."""
    return f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def run_demo(
    tracking_uri: str | None = None,
    *,
    n_settings: int = 12,
    repeats: int = 10,
    folds: int = 10,
    seed: int = 1,
    chains: int = SamplerOptions.chains,
    draws: int = SamplerOptions.draws,
    echo: Callable[[str], None] = print,
):
    """Generate, cross-validate and log; rank the three models, then compare LDA with CART (the paper's pair).
    Returns the :class:`ComparisonOutcome` of the pair.  The three Stan programs compile (once per machine) while
    the models are cross-validated, the live line counting from the start; the first line is printed before MLflow
    is imported."""
    from .families import ranking_model
    from .sampling.programs import PROGRAMS
    from .sampling.sampler import Compiles

    uri = tracking_uri or default_tracking_uri()
    echo(f"Demo: {', '.join(MODELS)} on {n_settings} Friedman settings, {repeats}x{folds} cross-validation "
         f"(seed {seed})\n  tracking URI: {redact_uri(uri)}")
    with TerminalProgress(sys.stderr) as progress, Compiles(PROGRAMS, progress=progress) as compiles:
        experiment_id, run_ids = _log_settings(uri, SETTINGS[:n_settings], repeats=repeats, folds=folds, seed=seed,
                                               echo=progress.above(echo))
        from .families.ranking.report import headline
        from .pipeline.compare import compare_runs, rank_runs

        common = dict(experiment_ids=[experiment_id], metric=METRIC, seed=seed, tracking_uri=uri,
                      on_duplicate="latest", chains=chains, draws=draws,
                      filter_string=runs_filter(run_ids))
        compiled = compiles.wait(progress)
        if any(compiled.values()):
            progress.above(echo)(f"  compiled {counted(sum(map(bool, compiled.values())), 'Stan program')} in "
                                 f"{max(compiled.values()):.0f} s (once per machine)")
        ranking = rank_runs(models=MODELS, progress=progress, **common)
        outcome = compare_runs(model_a=MODELS[0], model_b=MODELS[1], progress=progress, **common)
    shown = tracking_uri or "sqlite:///mlflow.db"
    rows = ranking.ranking[["model", "p_best", "mean_rank"]].to_string(index=False, float_format=lambda v: f"{v:.3f}")
    a, b = MODELS[:2]
    address, serve = ui_address(shown, outcome.experiment_id, outcome.run_id)
    family = ranking_model(ranking.result.model)  # the ranking and the pair test beside it: how they relate
    differs = f"{family.part('differs')}\n" if family.differs else ""
    echo(f"\nRanking of {len(MODELS)} models ({family.title}):\n{rows}\n{headline(ranking.result)}\n"
         f"  ranking run: {ui_address(shown, ranking.experiment_id, ranking.run_id)[0]}\n"
         f"\nVerdict ({a} vs {b}): {outcome.verdict}\n"
         f"  P({a} better) = {outcome.p_a_better:.3f}   P(rope) = {outcome.p_rope:.3f}   "
         f"P({b} better) = {outcome.p_b_better:.3f}   (rope ±{outcome.rope:g} accuracy)\n{differs}"
         f"\nComparison run {outcome.run_id} in experiment '{EXPERIMENT}': {address}"
         + (f"\n  serve it with: {serve}" if serve else ""))
    return outcome


def _log_settings(uri: str, settings, *, repeats: int, folds: int, seed: int, echo) -> tuple[str, list[str]]:
    """Cross-validate every model on every setting (the same folds for all) and log the scores, steps layout, into
    the demo's experiment; its id and the runs' ids.  A setting whose runs an earlier demo logged with the same seed,
    folds and repeats is read from them instead: a demo run again logs no second copy of its source runs."""
    from mlflow import MlflowClient

    from .reads.cvlog import log_cv_scores
    from .vocabulary import tags as T  # MLflow comes with it: after the first line

    client = MlflowClient(uri)
    check_reachable(client.tracking_uri)
    experiment_id = _experiment(client, EXPERIMENT)
    echo(f"  experiment:   {EXPERIMENT} (id {experiment_id})")
    earlier = _earlier_runs(client, experiment_id, seed=seed, repeats=repeats, folds=folds)
    start, logged, run_ids = time.perf_counter(), 0, []
    for i, setting in enumerate(settings):
        found = {m: earlier.get((m, setting.name)) for m in MODELS}
        fresh = None in found.values()
        if fresh:
            X, y = friedman_classification(setting, np.random.default_rng([seed, i]))
            scores = paired_cv(X, y, repeats=repeats, folds=folds, seed=seed + i)
            found = {model: (log_cv_scores(model, setting.name, values, metric=METRIC, folds=folds, repeats=repeats,
                                           experiment_id=experiment_id, client=client,
                                           params={"function": setting.function, "n": setting.n,
                                                   "noise": setting.noise, "extra_features": setting.extra_features,
                                                   "seed": seed},
                                           tags={T.DEMO: "friedman"}), float(np.mean(values)))
                     for model, values in scores.items()}
            logged += len(scores)
        run_ids += [run_id for run_id, _ in found.values()]
        means = {m: mean for m, (_, mean) in found.items()}
        echo(f"  [{i + 1}/{len(settings)}] {setting.name}: mean accuracy "
             + ", ".join(f"{m} {v:.3f}" for m, v in means.items()) + ("" if fresh else " (an earlier demo's runs)"))
    reused = len(MODELS) * len(settings) - logged
    echo((f"  cross-validated and logged {logged} runs in {time.perf_counter() - start:.0f} s" if logged else "")
         + ("; " if logged and reused else "")
         + (f"{'  ' if not logged else ''}reused {reused} runs an earlier demo logged with seed {seed} (not logged "
            "again)" if reused else ""))
    return experiment_id, run_ids


def runs_filter(run_ids: list[str]) -> str:
    """The MLflow filter of this demo's runs (its own and those reused): not an earlier demo's of other settings."""
    return f"attributes.run_id IN ({', '.join(repr(str(r)) for r in run_ids)})"


def _earlier_runs(client, experiment_id: str, *, seed: int, repeats: int,
                  folds: int) -> dict[tuple[str, str], tuple[str, float]]:
    """The finished runs an earlier demo logged with this seed, folds and repeats: (model, dataset) → the run's id
    and its mean accuracy."""
    from .vocabulary import tags as T

    found = client.search_runs(
        [experiment_id], f"tags.`{T.DEMO}` = 'friedman' AND params.seed = '{seed}' AND params.cv_folds = "
                         f"'{folds}' AND params.cv_repeats = '{repeats}' AND attributes.status = 'FINISHED'",
        max_results=1000)
    return {(r.data.tags.get("model"), r.data.tags.get("dataset")):
            (r.info.run_id, r.data.metrics.get(f"{METRIC}_mean", float("nan"))) for r in found}


def friedman_classification(setting: Setting, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``setting.n`` instances with two classes split at the median of y (estimated on 10,000 instances)."""
    X, y = _friedman(setting, setting.n, rng)
    _, y_large = _friedman(setting, 10_000, np.random.default_rng(setting.function))
    return X, (y > np.median(y_large)).astype(int)


def paired_cv(X: np.ndarray, y: np.ndarray, *, repeats: int, folds: int, seed: int) -> dict[str, np.ndarray]:
    """Accuracy of each model on the same repeated stratified folds, run-major (repeat * folds + fold)."""
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedStratifiedKFold

    models = _models()
    out = {name: [] for name in models}
    splits = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LDA on small samples with 20 noise features warns about collinearity
        for train, test in splits.split(X, y):
            for name, model in models.items():
                fitted = clone(model).fit(X[train], y[train])
                out[name].append(float(np.mean(fitted.predict(X[test]) == y[test])))
    return {name: np.array(values) for name, values in out.items()}


def _models() -> dict:
    """The paper's LDA and CART (:func:`.simulation.friedman.classifiers`), and Gaussian naive Bayes as the third
    model of the ranking."""
    from sklearn.naive_bayes import GaussianNB

    lda, cart = classifiers()
    return {"lda": lda, "cart": cart, "nb": GaussianNB()}


def _friedman(setting: Setting, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return generate(setting, n, int(rng.integers(2**31 - 1)), rng)


def _experiment(client, name: str) -> str:
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found is not None else client.create_experiment(name)
