"""Every option of the package, its default, its allowed values and its help, written once.

Options come in frozen dataclasses, one per concern:

* :class:`SourceOptions`: where the scores are and how to read them (experiments, metric, layout, tags, filter, ...);
* :class:`SamplerOptions`: the MCMC settings (chains, draws, warm-up, seed, backend), which :class:`FitOptions` and
  :class:`RankOptions` extend;
* :class:`FitOptions`: the two-model tests (the hierarchical test of Corani et al. 2017, the Bayesian
  signed-rank test and the Bayesian correlated t-test): rope, direction, prior, threshold and the hyper-prior bounds;
* :class:`PairOptions`: the two models of a comparison and the claim to require;
* :class:`WatchOptions`: what a stop-when-decided watch reads besides its design (the dataset, or two evaluation runs
  and their scorer) and how it follows them (the design itself: :class:`~..sequential.design.Design`);
* :class:`ModelsOptions`: the models of a matrix or ranking, and whether a matrix's pairs get full reports;
* :class:`MatrixOptions`: how a matrix runs (on this machine or a Ray cluster), what it logs at large k, and its
  cache of pair results;
* :class:`RankOptions`: the ranking of many models (the hierarchical model of k models or the Bayesian Bradley-Terry
  model of Wainer 2023 across datasets, the joint correlated-t model of the folds on one dataset);
* :class:`EvalOptions`: a comparison of evaluation runs (``compare-evals``): the runs, how their items pair and
  cluster, the scorers, and the paired models' settings.

Each field carries an :class:`~.optionspec.Option` spec in its metadata (:mod:`.optionspec`).  Constructing an
object validates it and cleans the values (numpy numbers become Python numbers, lists become tuples, prior aliases
their canonical name); every problem is reported at once in one :class:`~.errors.InputError`, and nothing downstream
checks a value again.  :func:`parse_fields` builds the objects of a request from the command line's or the JSON API's
fields, :func:`click_options` declares the command-line options from the same specs (both in :mod:`.optionparse`),
and ``to_params()`` gives a run's params.  To add an option, add one field here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .claims import CLAIMS, EVAL_CLAIM_WORDS
from .errors import InputError
from .optionparse import build, checked_click_option, click_options, defaults, from_keywords, parse_fields, public_name
from .optionspec import Option, OptionsBase, PerMetric, option, required_option
from .runkey import DEFAULT_KEYS, RunKey, parse_key

__all__ = [
    "Option", "SourceOptions", "SamplerOptions", "FitOptions", "PairOptions", "WatchOptions", "WATCH_EXCLUDED",
    "ModelsOptions", "MatrixOptions", "RankOptions", "EvalOptions", "ENGINES", "RAY_ADDRESS_ENV", "EVAL_KINDS",
    "EVAL_DRAWS",
    "parse_fields", "click_options", "checked_click_option", "build", "from_keywords", "defaults", "public_name",
    "draw_seed", "per_metric", "PerMetric", "DIRECTIONS", "direction_word", "PRIORS", "PRIOR_ALIASES", "BACKENDS",
    "LAYOUTS", "TESTS", "RANK_MODELS", "WARMUP", "MATRIX_PAIR_WARMUP", "RANKING_PAIR_WARMUP",
]

#: ν priors of the hierarchical test (paper, Table "prior-nu"), in the order of the Stan program's ``nu_prior`` flag
#: (:func:`..sampling.programs.prior_code`); aliases map to these names.
PRIORS = (
    "hierarchical",  # ν' ~ Gamma(α, β), α ~ U(0.5, 5), β ~ U(0.05, 0.15)   (paper's default)
    "gamma(2,0.1)",  # Juárez & Steel (2010)
    "gamma(1,0.0345)",  # Kruschke (2013)
    "gaussian",  # δ_i ~ N(δ0, σ0)
)
PRIOR_ALIASES = {"juarez-steel": "gamma(2,0.1)", "kruschke": "gamma(1,0.0345)", "normal": "gaussian"}
BACKENDS = ("auto", "cmdstanpy", "pystan")
LAYOUTS = ("auto", "steps", "keys", "children", "means")
TESTS = ("auto", "hierarchical", "signed-rank", "correlated-t")
ENGINES = ("local", "ray")
RAY_ADDRESS_ENV = "RAY_ADDRESS"  # Ray's own variable, which ray.init reads too
#: the ranking models across datasets (:attr:`RankOptions.model`)
RANK_MODELS = ("auto", "hierarchical", "bbt")
#: a metric's direction (``--direction fit_time=lower``): is a higher score better?
DIRECTIONS = {"higher": True, "lower": False}
#: the kinds of an evaluation scorer's values (``families/evals/kinds.py`` reads them from here)
EVAL_KINDS = ("pass_fail", "ordinal", "continuous", "log")
#: the posterior draws of a comparison of evaluation runs (the count the sampled tests summarise: 4 chains × 1000)
EVAL_DRAWS = 4000


def direction_word(greater_is_better: bool) -> str:
    """``higher`` or ``lower``: the word of :data:`DIRECTIONS` for a metric's direction."""
    return next(word for word, better in DIRECTIONS.items() if better == greater_is_better)


_DIRECTION_HELP = ("Per metric, whether higher or lower is better: fit_time=lower,accuracy=higher (a bare value "
                   "applies to every metric not named; the rest follow --lower-is-better).")
MAX_FILTER = 2000
#: Warm-up iterations per chain when none are given: a comparison's, as the authors' 4 × (1000 + 1000)
#: (shared/reference/implementations.md) ...
WARMUP = 1000
#: ... and each pair's of a matrix: Stan's windowed adaptation at its shortest complete length (75 + 25 + 50 + 100 +
#: 50), as the calibration tests sample; on 100 datasets a third less sampling time, the same R-hat and ESS
#: (benchmarks/README.md, bench_scale).
MATRIX_PAIR_WARMUP = 300
#: ... and the Gibbs sweeps of a ranking's pairs (sampling/pair_gibbs.py; benchmarks/README.md, "The ranking's pairs
#: by Gibbs")
RANKING_PAIR_WARMUP = 300


# --------------------------------------------------------------------------------------------------- the options


def _target_experiment() -> Any:
    """The one spec of the target experiment, which a comparison's sources and a watch's both carry."""
    return option(None, "Log the result into this experiment (an id, or a name: a new name, not a number, is "
                        "created); default: the first source (an evaluation watch: run A's experiment).", "str",
                  nullable=True)


@dataclass(frozen=True)
class SourceOptions(OptionsBase):
    """Where the per-fold scores are and how to read them from MLflow."""

    _what = "source options"

    metric: str = required_option("Per-fold metric to compare, e.g. accuracy; several, comma-separated "
                                  "(accuracy,roc_auc,fit_time), make one decision with a result per metric.", "str")
    experiment_names: tuple[str, ...] = option((), "Source experiment by name (repeatable).", "strings",
                                                public="experiment_name", high=20)
    experiment_ids: tuple[str, ...] = option((), "Source experiment by id (repeatable).", "strings",
                                              public="experiment_id", high=20)
    layout: str = option("auto", "How the per-fold scores are logged.", "choice", choices=LAYOUTS)
    model_key: str = option(DEFAULT_KEYS["model"], "Where a run's model name comes from: tag:NAME, param:NAME, "
                                                   "run-name, or logged-model (the name of the run's logged model). "
                                                   "Without the default tag in the runs, a param that varies across "
                                                   "them is looked for.", "str")
    dataset_key: str = option(DEFAULT_KEYS["dataset"], "Where a run's dataset name comes from: tag:NAME, param:NAME, "
                                                       "run-name, or input (the run's dataset inputs, as "
                                                       "mlflow.log_input and autolog log them, told apart by digest). "
                                                       "Without the default tag in the runs, dataset inputs are looked "
                                                       "for.", "str")
    model_tag: str | None = option(None, "Run tag naming the model: the same as --model-key tag:NAME.", "str",
                                   nullable=True)
    dataset_tag: str | None = option(None, "Run tag naming the dataset: the same as --dataset-key tag:NAME.", "str",
                                     nullable=True)
    filter_string: str = option("", "Extra MLflow search filter, e.g. \"params.version = '2'\".", "str",
                                 public="filter", max_length=MAX_FILTER)
    folds: int | None = option(None, "Folds per repeat, when runs lack the param cv_folds.", "int", low=2,
                                high=10_000, nullable=True)
    on_duplicate: str = option("error", "When a model has several runs on a dataset, use the latest.", "choice",
                                choices=("error", "latest"), public="latest", flag_value="latest")
    drop_incomplete: bool = option(False, "Drop datasets with missing folds (with a warning).", "bool",
                                    flag_value=True)
    target_experiment: str | None = _target_experiment()
    search_run: str | None = option(None, "Read a scikit-learn GridSearchCV/RandomizedSearchCV run logged by "
                                          "mlflow.sklearn.autolog(): its candidates are the models, named by their "
                                          "setting ('C=1, kernel=rbf', or best), --metric its scorer ('score' for "
                                          "one).", "str", nullable=True, max_length=64)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics asked for: ``metric`` split at its commas (MLflow's metric names hold none)."""
        return tuple(m.strip() for m in self.metric.split(",") if m.strip())

    def _cross_checks(self) -> list[str]:
        problems = []
        if isinstance(self.metric, str):
            metrics = self.metrics
            if not metrics or len(metrics) != len(self.metric.split(",")):
                problems.append(f"metric names an empty metric: {self.metric!r}; write METRIC or METRIC,METRIC,...")
            elif len(set(metrics)) < len(metrics):
                problems.append(f"metric names a metric twice: {self.metric!r}")
            else:
                object.__setattr__(self, "metric", ",".join(metrics))
        if self.search_run is not None and (self.experiment_names or self.experiment_ids):
            problems.append("search_run is read from its own experiment: give no experiment_name or experiment_id "
                            "with it")
        for role in ("model", "dataset"):
            problems += self._key_problems(role)
        return problems

    def _key_problems(self, role: str) -> list[str]:
        """The key of ``role``, with its old tag option folded in (``model_tag="algo"`` is ``model_key="tag:algo"``):
        its problems, or none once it is set."""
        key, tag = getattr(self, f"{role}_key"), getattr(self, f"{role}_tag")
        if isinstance(tag, str):
            if "`" in tag:
                return [f"{role}_tag contains a backtick, which MLflow's filters cannot express; got {tag!r}"]
            if not tag.strip():
                return [f"{role}_tag must not be empty"]
            if key not in (DEFAULT_KEYS[role], f"tag:{tag}"):
                return [f"{role}_tag {tag!r} is the key 'tag:{tag}', but {role}_key is {key!r}: give one of the two"]
            key = f"tag:{tag}"
        if not isinstance(key, str):  # its own check said so
            return []
        try:
            parsed = parse_key(key, role)
        except InputError as exc:
            return exc.problems
        object.__setattr__(self, f"{role}_key", str(parsed))
        object.__setattr__(self, f"{role}_tag", None)
        return []

    def run_key(self, role: str) -> RunKey:
        """The parsed ``model_key`` or ``dataset_key``."""
        return parse_key(getattr(self, f"{role}_key"), role)


def draw_seed() -> int:
    """A fresh seed, for settings given none (a result records the seed it used, so it can be reproduced)."""
    return int(np.random.SeedSequence().entropy % (2**31 - 1))


@dataclass(frozen=True)
class SamplerOptions(OptionsBase):
    """The MCMC settings, which the two-model tests and the ranking share (their fields come first in both)."""

    _what = "sampler settings"

    chains: int = option(4, "MCMC chains.", "int", low=1, high=64)
    draws: int = option(1000, "Posterior draws per chain, after the warm-up.", "int", low=10, high=1_000_000)
    warmup: int | None = option(None, f"Warm-up iterations per chain (default: {WARMUP}; {MATRIX_PAIR_WARMUP} for "
                                      f"the pairs of a matrix, {RANKING_PAIR_WARMUP} Gibbs sweeps for a ranking's).",
                                "int", low=10, high=1_000_000, nullable=True)
    seed: int | None = option(None, "Seed of every random choice (for reproducible probabilities).", "int", low=0,
                               high=2**32 - 1, nullable=True)
    backend: str = option("auto", "Stan backend: pystan where it is installed, else cmdstanpy (with CmdStan).",
                           "choice", choices=BACKENDS)

    def with_warmup(self, default: int = WARMUP) -> SamplerOptions:
        """These settings with the warm-up given, or ``default`` when none was."""
        return self if self.warmup is not None else dataclasses.replace(self, warmup=default)

    def with_seed(self) -> SamplerOptions:
        """These settings with the seed given, or a fresh one (:func:`draw_seed`) when none was."""
        return self if self.seed is not None else dataclasses.replace(self, seed=draw_seed())

    def sampler_settings(self) -> dict[str, int | str | None]:
        """The MCMC settings alone, by field name (to sample another model alike)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(SamplerOptions)}


@dataclass(frozen=True)
class FitOptions(SamplerOptions):
    """The settings of the two-model tests (Corani et al. 2017; Benavoli et al. 2017 for the signed-rank test;
    Corani & Benavoli 2015 for the correlated t-test)."""

    _what = "test settings"

    rope: float | PerMetric = option(0.01, "Half-width of the region of practical equivalence, in metric units; "
                                           "per metric: accuracy=0.01,fit_time=0.5 (metrics not named: 0.01, or a "
                                           "bare value given with them).", "per_metric", low=0, low_open=True)
    greater_is_better: bool = option(True, "The metric is a loss or error (lower is better).", "bool",
                                      public="lower_is_better", flag_value=False)
    direction: str | PerMetric | None = option(None, _DIRECTION_HELP, "per_metric", choices=tuple(DIRECTIONS),
                                               nullable=True)
    test: str = option("auto", "Which test: the hierarchical test on per-fold scores across datasets, the "
                                "signed-rank test on per-dataset means, the correlated t-test on the per-fold scores "
                                "of one dataset, or auto (signed-rank when every run holds one score, correlated-t "
                                "when the two models share one dataset, else hierarchical).",
                        "choice", choices=TESTS)
    prior: str = option("hierarchical", "Prior on the degrees of freedom ν of the hierarchical test.", "choice",
                         choices=PRIORS, aliases=PRIOR_ALIASES)
    threshold: float = option(0.95, "Probability at which an outcome is declared.", "float", low=0, high=1,
                               low_open=True, high_open=True)
    rho: float | tuple[float, ...] | None = option(
        None, "Correlation between folds, one value or one per dataset (default 1/folds; 0 for independent "
              "hold-out splits).", "numbers", low=0, high=1, high_open=True, nullable=True)
    sensitivity: bool = option(False, "Also report the conclusion under other priors and ropes.", "bool",
                                flag_value=True)
    std_upper_bound: float = option(1000.0, "Upper bounds of σ_i and σ0, in multiples of the data's spread.",
                                     "float", low=0, low_open=True)
    alpha_bounds: tuple[float, float] = option((0.5, 5.0), "Bounds of the uniform prior on α (ν' ~ Gamma(α, β)).",
                                                "pair", low=0, low_open=True)
    beta_bounds: tuple[float, float] = option((0.05, 0.15), "Bounds of the uniform prior on β.", "pair", low=0,
                                               low_open=True)


@dataclass(frozen=True)
class PairOptions(OptionsBase):
    """The two models of a comparison, and the claim about A that must hold (``--require``)."""

    _what = "models"

    model_a: str = required_option("Model A (value of the model tag).", "str")
    model_b: str = required_option("Model B.", "str")
    claim: str | None = option(None, "Exit 1 unless the posterior supports this claim about A at the threshold.",
                                "choice", choices=tuple(CLAIMS), public="require", nullable=True)

    def _cross_checks(self) -> list[str]:
        if self.model_a is not None and self.model_a == self.model_b:
            return [f"model A and model B are both {self.model_a!r}; compare two different models"]
        return []


@dataclass(frozen=True)
class WatchOptions(OptionsBase):
    """What a watch (``mlflow-bayescompare watch``, :mod:`..pipeline.watch`) reads besides its design: for
    ``correlated-t`` the dataset of two models' CV runs (found as ``compare`` finds them: :class:`SourceOptions`,
    :class:`PairOptions`), for ``hierarchical`` their datasets; for an evaluation test two evaluation runs and their
    scorer; and how it follows them."""

    _what = "watch options"

    dataset: str | None = option(None, "correlated-t: the dataset whose repeats grow (default: the one dataset both "
                                       "models have).", "str", nullable=True)
    datasets: tuple[str, ...] = option((), "hierarchical: a dataset read (repeatable; default: every dataset both "
                                           "models have).", "strings")
    run_a: str | None = option(None, "eval-binary, eval-continuous: the evaluation run of system A (its id).", "str",
                               nullable=True, max_length=64)
    run_b: str | None = option(None, "eval-binary, eval-continuous: the evaluation run of system B.", "str",
                               nullable=True, max_length=64)
    scorer: str | None = option(None, "eval-binary, eval-continuous: the scorer compared (default: the one scorer "
                                      "both runs have).", "str", nullable=True)
    pair_key: str | None = option(None, "eval-binary, eval-continuous: the field that pairs the items, "
                                        "inputs.<field> or tag:<name> (default: the test case, else the inputs).",
                                  "str", nullable=True)
    table_artifact: str | None = option(None, "eval-binary, eval-continuous: the runs' table artifact to read (a "
                                              "harness's long table, or eval_results_table.json).", "str",
                                        nullable=True)
    target_experiment: str | None = _target_experiment()
    follow: bool = option(False, "Read the runs again every --interval seconds until the design decides (or "
                                 "--timeout passes).", "bool", flag_value=True)
    interval: float = option(30.0, "With --follow: seconds between two reads of the runs.", "float", low=0.1)
    timeout: float | None = option(None, "With --follow: give up after this many seconds (the answer is then "
                                         "'continue').", "float", low=0, nullable=True)

    def _cross_checks(self) -> list[str]:
        if (self.run_a is None) != (self.run_b is None):
            return ["name both evaluation runs, run_a and run_b"]
        if self.run_a is not None and self.run_a == self.run_b:
            return [f"run_a and run_b are both {self.run_a!r}; watch two different runs"]
        return []


#: the fields of :class:`SourceOptions` and :class:`PairOptions` a watch does not take (its design's folds are the
#: runs', a model's runs are its repeats, its target experiment is :attr:`WatchOptions.target_experiment`, its claim
#: the design's answer)
WATCH_EXCLUDED = ("SourceOptions.folds", "SourceOptions.target_experiment", "on_duplicate", "drop_incomplete",
                  "search_run", "claim")


@dataclass(frozen=True)
class ModelsOptions(OptionsBase):
    """The models of a matrix or a ranking (none means every model found), and what a matrix's pair runs hold."""

    _what = "models"

    models: tuple[str, ...] = option((), "Models to compare (comma-separated, or ';'-separated when the names hold "
                                          "commas, as a search's candidates do; default: every model found).",
                                      "strings", high=200)
    pair_reports: bool = option(False, "Give each pair of a matrix the figures, HTML report and PSIS-LOO model "
                                        "check of a comparison run (about 3 s more per pair); without, a pair's "
                                        "run holds its numbers, tables and posterior.", "bool", flag_value=True)

    def __post_init__(self) -> None:
        _split_names(self, "models")
        super().__post_init__()

    def _cross_checks(self) -> list[str]:
        if not isinstance(self.models, tuple):  # not a list of names: its own check said so
            return []
        repeated = sorted({m for m in self.models if self.models.count(m) > 1})
        return [f"models listed more than once: {', '.join(repeated)}"] if repeated else []


def _split_names(options, name: str) -> None:
    """``"a,b,c"`` (or a list of that one string, as the command line gives it) is three names, and
    ``"C=1, kernel=rbf; C=10, kernel=rbf"`` two (a list that holds a ``;`` is split there only: a scikit-learn
    search's candidates hold commas); a list of several names is taken as given (so parsing is idempotent)."""
    given = getattr(options, name)
    given = [given] if isinstance(given, str) else given
    if isinstance(given, (list, tuple)) and len(given) == 1 and isinstance(given[0], str):
        split = tuple(m.strip() for m in given[0].split(";" if ";" in given[0] else ",") if m.strip())
        object.__setattr__(options, name, split)
    elif isinstance(given, (list, tuple)) and all(isinstance(m, str) for m in given):
        object.__setattr__(options, name, tuple(m.strip() for m in given if m.strip()))


@dataclass(frozen=True)
class MatrixOptions(OptionsBase):
    """How a matrix runs and what it logs: the engine that fits its pairs, the child runs at large k and the cache
    of pair results kept in the tracking server.  None of these changes a pair's numbers."""

    _what = "matrix settings"

    engine: str = option("local", "Where the pairs are fitted: local (worker processes on this machine) or ray (a Ray "
                                  "cluster: pip install \"mlflow-bayescompare[ray]\").", "choice", choices=ENGINES)
    ray_address: str | None = option(None, "The Ray cluster of --engine ray (host:port or ray://host:port; default: "
                                           "Ray's own choice, a cluster started on this machine or a new local one).",
                                     "str", nullable=True, envvar=RAY_ADDRESS_ENV, max_length=300)
    child_runs_up_to: int = option(50, "Log one child run per pair up to this many pairs; above, the parent run's "
                                       "pairs table (pairs.parquet) alone holds them, unless --child-runs.", "int",
                                   low=0, high=1_000_000)
    child_runs: bool = option(False, "Log one child run per pair whatever their number.", "bool", flag_value=True)
    refresh: bool = option(False, "Fit every pair again instead of reading the pairs already fitted alike from "
                                  "earlier matrices' pairs tables in the target experiment.", "bool", flag_value=True)

    def logs_child_runs(self, pairs: int) -> bool:
        """Whether a matrix of ``pairs`` pairs logs one child run per pair."""
        return self.child_runs or pairs <= self.child_runs_up_to


@dataclass(frozen=True)
class RankOptions(SamplerOptions):
    """The settings of the ranking of several models: across datasets the hierarchical model of k models
    (``stan/hierarchical_k.stan``) or the Bayesian Bradley-Terry model (Wainer 2023; bbtcomp's defaults), and on one
    dataset the joint correlated-t model of the folds (``metric_rope``,
    ``rho``, ``threshold``, ``hdi_prob``, the direction, and ``chains`` × ``draws`` draws from ``seed``)."""

    _what = "ranking settings"

    model: str = option("auto", "Ranking model across datasets: hierarchical (Corani et al. 2017 extended to k "
                                "models, on the fold scores), bbt (Bayesian Bradley-Terry, Wainer 2023, on each "
                                "dataset's wins), or auto (hierarchical on fold scores, bbt on per-dataset means). "
                                "On one dataset the joint correlated-t model of the folds ranks.", "choice",
                        choices=RANK_MODELS)
    vs: str | None = option(None, "Compare every model with this one (a model, or best for the leader): one row "
                                  "per model, P(better / equivalent / worse) on the next dataset (the hierarchical "
                                  "model; on one dataset, on it: the joint model), the expected difference and a "
                                  "verdict.", "str", nullable=True, max_length=200)
    greater_is_better: bool = option(True, "The metric is a loss or error (lower is better).", "bool",
                                      public="lower_is_better", flag_value=False)
    local_rope: str = option("paired", "When a dataset is a tie between two models: paired (|mean of the fold "
                                        "differences| <= factor x their sd), unpaired (|difference of the means| <= "
                                        "factor x the root mean square of the two sds) or off (equal means only).",
                              "choice", choices=("paired", "unpaired", "off"))
    local_rope_factor: float = option(0.4, "The local ROPE's factor d_min (an effect size).", "float", low=0)
    ties: str = option("spread", "How ties enter the model: spread (half of them, rounded up, to each model), "
                                  "add (all to each), forget (dropped) or davidson (Davidson's tie model).",
                        "choice", choices=("spread", "add", "forget", "davidson"))
    hyper_prior: str = option("lognormal", "Prior of sigma, the spread of the strengths: LogNormal(0, scale), "
                                            "half-Cauchy(0, scale) or half-normal(0, scale).", "choice",
                               choices=("lognormal", "cauchy", "normal"),
                               aliases={"0": "lognormal", "1": "lognormal", "2": "cauchy", "3": "normal",
                                        "half-cauchy": "cauchy", "half-normal": "normal"})
    hyper_scale: float = option(0.5, "Scale of the prior of sigma.", "float", low=0, low_open=True)
    rope: tuple[float, float] = option((0.45, 0.55), "Region of practical equivalence of P(win).", "pair", low=0,
                                        high=1)
    hdi_prob: float = option(0.89, "Probability mass of the reported highest-density intervals.", "float", low=0,
                              high=1, low_open=True, high_open=True)
    threshold: float = option(0.95, "Two models differ credibly when P(better on the next dataset) reaches this "
                                     "(hierarchical model; bbt: P(P(win) > 0.5); one dataset: when this HDI of their "
                                     "difference lies beyond the metric rope).", "float",
                               low=0.5, high=1, high_open=True)
    metric_rope: float | PerMetric = option(0.01, "Half-width of the region of practical equivalence in metric "
                                                  "units (the hierarchical model and the joint model of one dataset's "
                                                  "folds); per metric: accuracy=0.01,fit_time=0.5.", "per_metric",
                                            low=0, low_open=True)
    direction: str | PerMetric | None = option(None, _DIRECTION_HELP, "per_metric", choices=tuple(DIRECTIONS),
                                               nullable=True)
    rho: float | None = option(None, "On one dataset: the correlation between folds (default 1/folds; 0 for "
                                     "independent hold-out splits).", "float", low=0, high=1, high_open=True,
                               nullable=True)
    drop_incomplete: bool = option(False, "Drop datasets on which a model lacks scores (with a warning).", "bool",
                                    flag_value=True)
    skip_missing: bool = option(False, "Where a model lacks a score (NaN or no row), its pairs count no game on "
                                        "what it lacks (the paper's missing data; bbtcomp's NA handling).", "bool",
                                 flag_value=True)

    def _cross_checks(self) -> list[str]:
        problems = []
        if self.vs is not None and self.model == "bbt":
            problems.append("vs compares models with the hierarchical model; it has no answer under model bbt")
        if self.drop_incomplete is True and self.skip_missing is True:
            problems.append("drop_incomplete and skip_missing exclude each other: choose one")
        low, high = self.rope if isinstance(self.rope, tuple) and len(self.rope) == 2 else (0.0, 1.0)
        if isinstance(low, float) and isinstance(high, float) and not low < 0.5 < high:
            problems.append(f"rope must contain 0.5 (P(win) of two equal models); got {low:g},{high:g}")
        return problems


_FIELD_HELP = "inputs.<field> (a field of the item's inputs; a table's column) or tag:<name> (a trace tag)"


@dataclass(frozen=True)
class EvalOptions(OptionsBase):
    """A comparison of evaluation runs (``mlflow.genai.evaluate``, ``mlflow.models.evaluate`` or a long table): two
    runs A and B, or two or more ranked, paired per item (``families/evals``; no MCMC)."""

    _what = "evaluation settings"

    run_a: str | None = option(None, "The baseline evaluation run A (its run id); differences are B - A.", "str",
                               nullable=True, max_length=64)
    run_b: str | None = option(None, "The candidate evaluation run B (its run id).", "str", nullable=True,
                               max_length=64)
    runs: tuple[str, ...] = option((), "Evaluation runs to rank instead (run ids, comma-separated): P(best) per "
                                       "scorer and each run against --vs.", "strings", high=20)
    vs: str | None = option(None, "With --runs: compare every run with this one (a run id, or best for the "
                                  "leader).", "str", nullable=True, max_length=500)
    scorers: tuple[str, ...] = option((), "Scorers to compare (comma-separated; default: every scorer the runs "
                                          "share; latency adds each trace's duration).", "strings", high=50)
    rope: float | PerMetric | None = option(None, "Half-width of practical equivalence in the scorer's units, per "
                                                  "scorer: correctness=0.02,latency=0.05 (default: 0.01 of the "
                                                  "scale's span: 1 point of a pass rate, 0.04 of a 1-5 rating, 1% of "
                                                  "a latency).", "per_metric", low=0, low_open=True, nullable=True,
                                            per="scorer")
    direction: str | PerMetric | None = option(None, "Per scorer, whether higher or lower is better: "
                                                     "latency=lower (default: lower for latency, cost and tokens).",
                                               "per_metric", choices=tuple(DIRECTIONS), nullable=True, per="scorer")
    kinds: str | PerMetric | None = option(None, "Per scorer, the kind of its values when detection should not "
                                                 "choose: grade=ordinal.", "per_metric", choices=EVAL_KINDS,
                                           nullable=True, per="scorer")
    cluster: str | None = option(None, f"What groups related items (passage, template, conversation): {_FIELD_HELP}."
                                       " The answer then rests on the clusters.", "str", nullable=True)
    pair_key: str | None = option(None, f"What pairs the runs' items when their inputs differ: {_FIELD_HELP} "
                                        "(default: the @mlflow.test case, else the inputs themselves).", "str",
                                  nullable=True)
    suite: str | None = option(None, f"What names an item's evaluation suite: {_FIELD_HELP}; several suites add "
                                     "the hierarchical test across them, answering for the next suite.", "str",
                               nullable=True, public="dataset_key")
    table_artifact: str | None = option(None, "The runs' table to read (an eval_results_table.json of "
                                              "mlflow.models.evaluate, or a long table of item, scorer, value).",
                                        "str", nullable=True)
    threshold: float = option(0.95, "Probability at which an outcome is declared.", "float", low=0, high=1,
                               low_open=True, high_open=True)
    draws: int = option(EVAL_DRAWS, "Posterior draws (exact models: no MCMC).", "int", low=100, high=1_000_000)
    seed: int | None = option(None, "Seed of the posterior draws (for reproducible probabilities).", "int", low=0,
                               high=2**32 - 1, nullable=True)
    claim: str | PerMetric | None = option(None, "Exit 1 unless the posterior supports this claim about B at the "
                                                 "threshold: better, not-worse or equivalent on every scorer, per "
                                                 "scorer (correctness=better,latency=not-worse), or improves (not "
                                                 "worse on every scorer, better on one); jointly.", "per_metric",
                                           choices=EVAL_CLAIM_WORDS, nullable=True, public="require", per="scorer")
    target_experiment: str | None = option(None, "Log the result into this experiment (an id, or a name: a new "
                                                  "name, not a number, is created); default: run A's.", "str",
                                            nullable=True)

    def __post_init__(self) -> None:
        _split_names(self, "runs")
        _split_names(self, "scorers")
        super().__post_init__()

    @property
    def ranked(self) -> bool:
        """Three or more runs (``runs``) ranked, rather than A and B compared."""
        return bool(self.runs)

    @property
    def run_ids(self) -> tuple[str, ...]:
        return self.runs if self.ranked else (self.run_a, self.run_b)

    def _cross_checks(self) -> list[str]:
        pair, runs = (self.run_a, self.run_b), self.runs if isinstance(self.runs, tuple) else ()
        if runs and any(pair):
            return ["give run_a and run_b (a comparison) or runs (a ranking), not both"]
        problems = []
        if not runs and not all(pair):
            problems.append("name the evaluation runs: run_a and run_b, or runs (two or more)")
        if runs and len(runs) < 2:
            problems.append(f"runs ranks two or more evaluation runs; got {len(runs)}")
        if all(pair) and self.run_a.strip() == self.run_b.strip():
            problems.append(f"run A and run B are both {self.run_a!r}; compare two different runs")
        if self.vs is not None and not runs:
            problems.append("vs compares every run of a ranking with one: give runs")
        if self.claim is not None and runs:
            problems.append("require is a claim about B against A: compare two runs (run_a, run_b)")
        return problems


def per_metric(source: SourceOptions, options: FitOptions | RankOptions) -> dict[str, tuple[SourceOptions, Any]]:
    """One request's options for each of its metrics (:attr:`SourceOptions.metrics`), in the order asked: the
    source reading that metric alone, and the test's options with its rope (``rope``, or a ranking's
    ``metric_rope``) and direction (``direction``, else ``greater_is_better``) resolved to plain values.  A rope or
    direction that names a metric not asked for is an :class:`~.errors.InputError`."""
    rope_field = "metric_rope" if isinstance(options, RankOptions) else "rope"
    ropes, directions = getattr(options, rope_field), options.direction
    asked = source.metrics
    problems = [f"{name} names metric {m!r}, which was not asked for (metric: {', '.join(asked)})"
                for name, given in ((public_name(_field(type(options), rope_field)), ropes), ("direction", directions))
                if isinstance(given, PerMetric) for m, _ in given.values if m not in asked]
    if problems:
        raise InputError(problems, header="invalid options:")
    default_rope = _field(type(options), rope_field).default
    out = {}
    for metric in asked:
        rope = ropes.get(metric, default_rope) if isinstance(ropes, PerMetric) else ropes
        direction = directions.get(metric, None) if isinstance(directions, PerMetric) else directions
        better = options.greater_is_better if direction is None else DIRECTIONS[direction]
        out[metric] = (dataclasses.replace(source, metric=metric),
                       dataclasses.replace(options, **{rope_field: rope}, greater_is_better=better, direction=None))
    return out


def _field(cls, name: str) -> dataclasses.Field:
    return next(f for f in dataclasses.fields(cls) if f.name == name)
