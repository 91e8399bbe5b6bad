"""The tags of the runs this package writes: one home for their names and for the kinds of run.

A run written by the package carries ``bayescompare.kind``: ``comparison`` (two models), ``matrix`` (every pair of
several models, the pairs as child runs), ``ranking`` (several models ranked at once) or ``watch`` (a registered
stop-when-decided design and its looks at two models' growing runs; RUNNING between its looks).  Runs of these
kinds are never read back as source runs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from .keys import joined_key

__all__ = [
    "KIND", "KINDS", "STAGE", "SKIPPED", "ERROR", "NOTE", "PARENT", "USER", "MODEL_A", "MODEL_B", "MODELS", "METRIC",
    "VERDICT", "DECISION", "DIAGNOSTICS", "TEST", "REPORT", "NO_REPORT", "BEST", "RANKING", "SOURCE_EXPERIMENTS",
    "STRICT", "REQUIRE", "DATASETS_LEFT_OUT", "CACHED_FROM", "CACHE_FOR", "metric_tag", "joined_names", "split_names",
    "JOB_OWNER", "JOB_REQUEST", "DEMO", "WATCH", "DESIGN_FINGERPRINT", "WATCH_SOURCES", "WATCH_ANSWER", "DATASET",
    "RUN_A", "RUN_B", "SOURCE_RUNS", "WATCH_STATE",
]

KIND = "bayescompare.kind"
KINDS = ("comparison", "matrix", "ranking", "watch")
WATCH = "watch"  # the kind of a watch run (pipeline/watch.py)
STAGE = "bayescompare.stage"  # where the work on the run is (progress.STAGES)
SKIPPED = "bayescompare.stages_skipped"  # comma-separated stages the work went past without doing (compiling: cached)
ERROR = "bayescompare.error"  # why the run FAILED
MODEL_A = "bayescompare.model_a"
MODEL_B = "bayescompare.model_b"
MODELS = "bayescompare.models"  # the models of a matrix or ranking run (joined_names)
METRIC = "bayescompare.metric"
VERDICT = "bayescompare.verdict"
DECISION = "bayescompare.decision"
DIAGNOSTICS = "bayescompare.diagnostics"  # "ok" or the sampler's problems
TEST = "bayescompare.test"  # which test answered: hierarchical, signed-rank or correlated-t
REPORT = "bayescompare.report"  # NO_REPORT on a matrix's pair run logged without figures and HTML report
NO_REPORT = "none"
PAIRS_TABLE = "bayescompare.pairs_table"  # the artifact of a matrix run holding its pairs (and the cache's rows)
BEST = "bayescompare.best"  # the best model of a matrix or ranking
RANKING = "bayescompare.ranking"  # the model that ranked them: hierarchical, bbt, or joint-t (one dataset's folds)
DEMO = "bayescompare.demo"  # the demo's source runs (value: friedman), by which a demo finds an earlier demo's runs
SOURCE_EXPERIMENTS = "bayescompare.source_experiment_ids"
# a comparison of evaluation runs (its test: paired-evals) names the runs it read, the systems it compared
RUN_A = "bayescompare.run_a"  # the baseline evaluation run A
RUN_B = "bayescompare.run_b"  # the candidate evaluation run B
SOURCE_RUNS = "bayescompare.source_run_ids"  # every evaluation run read, in the order of the systems, comma-separated
STRICT = "bayescompare.strict"  # set by --strict when the sampler's output failed the gate
REQUIRE = "bayescompare.require"  # "<claim>@<threshold>" asked of a server job
DATASETS_LEFT_OUT = "bayescompare.datasets_left_out"  # the datasets a pair did not compare (joined_names)
CACHED_FROM = "bayescompare.cached_from"  # on a matrix's pair run read from the cache: the run that fitted it
CACHE_FOR = "bayescompare.cache_for"  # on a matrix run whose pairs table is signed: whose cache (runs/cachekey.py)
DATASET = "bayescompare.dataset"  # the dataset a watch reads the growing CV repeats of
DESIGN_FINGERPRINT = "bayescompare.design_fingerprint"  # a watch run's registered design: sha256 of its design.json
WATCH_SOURCES = "bayescompare.watch_sources"  # sha256 of the selection a watch reads: a later look finds it by it
WATCH_ANSWER = "bayescompare.watch_answer"  # continue, a_better, b_better, equivalent or inconclusive
WATCH_STATE = "bayescompare.watch_state"  # what a later look of a CV watch reads by (JSON: layout, keys, dataset)


def metric_tag(tag: str, metric: str) -> str:
    """A metric's own tag in the run of a decision on several metrics: ``bayescompare.verdict/accuracy`` (a key
    MLflow takes: :func:`.keys.joined_key`); the run's :data:`METRIC` lists its metrics, comma-separated."""
    return joined_key(tag, metric)


def joined_names(names: Iterable[str]) -> str:
    """Model or dataset names in one tag value, comma-separated as a CSV line: a name holding a comma or a quote is
    quoted (a search's candidates are named ``C=1, kernel=rbf``), so :func:`split_names` gives the names back."""
    line = io.StringIO()
    csv.writer(line, lineterminator="").writerow(list(names))
    return line.getvalue()


def split_names(value: str | None) -> list[str]:
    """The names of a :func:`joined_names` tag value (a plain comma-separated one too)."""
    return [name for name in next(csv.reader([value or ""]), []) if name]


# jobs run by the server app: the request, and who owns the work (to tell a live job from an orphan), as JSON in
# one tag each, so that MLflow's Tags panel shows two lines of bookkeeping, not seven
JOB_OWNER = "bayescompare.job"  # {"host", "pid", "pid_start", "machine_boot_id", "server_boot_id"} (server/owners.py)
JOB_REQUEST = "bayescompare.job.request"

# MLflow's own
NOTE = "mlflow.note.content"  # the run description (markdown)
PARENT = "mlflow.parentRunId"
USER = "mlflow.user"
