"""Layer 4, the test families, one package each: the two-model tests (:mod:`.hierarchical`, :mod:`.signed_rank`,
:mod:`.correlated_t`), the ranking models of k models (:mod:`.ranking`: hierarchical-k, joint, BBT) and the test of
systems evaluated on the same items (:mod:`.evals`: evaluation runs).  A family
imports only itself and the layers below (one declared exception: :mod:`.correlated_t.formula`, see
``docs/architecture.md``).

**The family table.**  Every family is one row here (:data:`PAIR_TESTS`, :data:`RANKING_MODELS`, :data:`EVAL_TESTS`)
naming its parts
by where they live, ``"<module under families>:<name>"``, imported when first used (:meth:`Family.part`), and its
words.  The pipeline, the run writers, the command line, the server and its page look a family up here
(:func:`pair_test`, :func:`ranking_model`, :func:`taking`) instead of branching on its name; a new family is a package
and one row (``tests/test_families.py`` checks that every row has every part, with the signature the pipeline
calls).  This module imports nothing heavy: the command line reads the words before it imports the engines.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

__all__ = ["Family", "PairTest", "RankingModel", "EvalTest", "PAIR_TESTS", "RANKING_MODELS", "EVAL_TESTS",
           "pair_test", "ranking_model", "eval_test", "taking", "tests_named", "page_words"]


@dataclass(frozen=True)
class Family:
    """What every family names.  ``name``: the result's ``test`` (or ``model``) field, the option's value and the
    run's tag; ``title``, ``page_title`` and ``reference``: its words in the reports and the terminal, on the server's
    page, and its paper; ``result``: the result class; ``run``: the run writer (it builds the run's
    :class:`~..shared.run_content.Bundle`); ``report``: the module with ``render_markdown`` and ``render_html``;
    ``plots``: the function of the report's figures; ``program``: its Stan program
    (:data:`~..sampling.programs.PROGRAMS`; None: closed form or Monte Carlo); ``takes``: the data ``auto`` chooses
    it for (``folds`` across datasets, the folds of ``one dataset``, per-dataset ``means``; ``items``: the items of
    evaluation runs)."""

    name: str
    title: str
    page_title: str
    reference: str
    result: str
    run: str
    report: str
    plots: str
    program: str | None
    takes: str

    #: the parts named by where they live (checked by tests/test_families.py)
    PARTS = ("result", "run", "report", "plots")

    def part(self, name: str) -> Any:
        """The part ``name`` (a field naming ``"<module>:<name>"`` or a module), imported now."""
        module, _, attribute = getattr(self, name).partition(":")
        loaded = import_module(f".{module}", __name__)
        return getattr(loaded, attribute) if attribute else loaded


@dataclass(frozen=True)
class PairTest(Family):
    """A two-model test.  ``engine``: its public function; ``fit``: the fit step as the pipeline calls it,
    ``fit(data, options, progress=None, *, matrix_pair=False, model_check=True)``; ``check``: the pre-flight of a
    pair's data, ``check(data, options, collected)`` (raises an InputError); ``describe``: the progress line's words,
    ``describe(data, options)``; ``detail``: what the terminal adds to its name, ``detail(result)`` (or None);
    ``next_dataset``: its probabilities are those of the next dataset (the page says so); ``means_layout``: why it
    refuses runs that hold one score each, when it does before their folds are read (or None)."""

    engine: str = ""
    fit: str = ""
    check: str = ""
    describe: str = ""
    detail: str | None = None
    next_dataset: bool = False
    means_layout: str | None = None

    PARTS = (*Family.PARTS, "engine", "fit", "check", "describe", "detail")


@dataclass(frozen=True)
class RankingModel(Family):
    """A model that ranks k models.  ``engine``: ``rank(scores, options, progress=None)`` on the scores read by
    :mod:`.ranking.scores`; ``check``: its pre-flight of those scores, ``check(scores, options)`` (or None);
    ``refuse``: its refusal of scores that some model lacks on a dataset unless ``skip_missing``, ``refuse(scores,
    options)`` (or None: it takes such datasets as they are); ``text``: the lines the terminal prints under the
    ranking, ``text(result)``; ``differs``: how its pairs relate to the pair tests shown beside it (or None);
    ``columns``: the ranking table's columns the terminal shows; ``claims``: the prefixes of the ranking claims it
    answers (:data:`~..vocabulary.claims.RANKING_CLAIMS`); ``versus``: it answers ``vs`` (every model against one);
    ``metric_rope``: it reads the rope in metric units (``metric_rope``); ``short``: its name where a line names the
    model that ranked (the page's Past comparisons: ``ranking of 4 models · BBT``)."""

    engine: str = ""
    check: str | None = None
    refuse: str | None = None
    text: str = ""
    differs: str | None = None
    columns: tuple[str, ...] = ()
    claims: tuple[str, ...] = ("best=",)
    versus: bool = False
    metric_rope: bool = True
    short: str = ""

    PARTS = (*Family.PARTS, "engine", "check", "refuse", "text", "differs")


@dataclass(frozen=True)
class EvalTest(Family):
    """A test of systems evaluated on the same items (evaluation runs), paired per item, on the tidy table of
    :mod:`.evals.pairing`.  ``engine``: two systems, ``engine(table, system_a, system_b, scorers, **settings)``;
    ``rank``: k systems, ``rank(table, systems, scorers, *, vs, **settings)``, whose result class is ``ranking``;
    ``check``: the pre-flight of a read table, ``check(table, systems, options)`` (raises an InputError; returns the
    scorers compared); ``run`` and ``ranking_run``: the run writers, ``run(result, table, read, *, next_suite,
    directory, figures)`` and ``ranking_run(result, table, read, *, directory, figures)``; ``text``: the terminal's
    lines, ``text(result)``; ``gate``: a claim about a system across scorers, ``gate(result, claims, *, better_on,
    threshold)``."""

    engine: str = ""
    rank: str = ""
    ranking: str = ""
    ranking_run: str = ""
    check: str = ""
    text: str = ""
    gate: str = ""

    PARTS = (*Family.PARTS, "engine", "rank", "ranking", "ranking_run", "check", "text", "gate")


#: The two-model tests, by name.
PAIR_TESTS = {family.name: family for family in (
    PairTest(
        name="hierarchical", title="Bayesian hierarchical test on the per-fold scores",
        page_title="Bayesian hierarchical test on the per-fold scores", reference="Corani et al. 2017",
        engine="hierarchical.engine:hierarchical_test", result="hierarchical.result:HierarchicalResult",
        fit="hierarchical.run:fit", check="hierarchical.run:check", describe="hierarchical.run:describe",
        run="hierarchical.run:bundle", report="hierarchical.report", plots="hierarchical.plots:all_figures",
        program="hierarchical", takes="folds", next_dataset=True),
    PairTest(
        name="signed-rank", title="Bayesian signed-rank test on the per-dataset means",
        page_title="Bayesian signed-rank test on the per-dataset means (the runs hold one score per dataset)",
        reference="Benavoli et al. 2017", engine="signed_rank.engine:signed_rank_test",
        result="signed_rank.engine:SignedRankResult", fit="signed_rank.run:fit", check="signed_rank.run:check",
        describe="signed_rank.run:describe", run="signed_rank.run:bundle", report="signed_rank.report",
        plots="signed_rank.plots:all_figures", program=None, takes="means"),
    PairTest(
        name="correlated-t", title="Bayesian correlated t-test on the per-fold scores of one dataset",
        page_title="Bayesian correlated t-test on the per-fold scores of one dataset (the models share one dataset)",
        reference="Corani & Benavoli 2015", engine="correlated_t.engine:correlated_t_test",
        result="correlated_t.result:CorrelatedTTestResult", fit="correlated_t.run:fit", check="correlated_t.run:check",
        describe="correlated_t.run:describe", detail="correlated_t.run:detail", run="correlated_t.run:bundle",
        report="correlated_t.report", plots="correlated_t.plots:all_figures", program=None, takes="one dataset",
        means_layout="the correlated t-test needs the per-fold scores of one dataset: log every fold's score, or use "
                     "the signed-rank test (--test signed-rank) across datasets"),
)}

#: The models that rank k models, by name (the result's ``model``).
RANKING_MODELS = {family.name: family for family in (
    RankingModel(
        name="hierarchical", title="hierarchical model of k models",
        page_title="hierarchical model of k models, Corani et al. 2017 extended",
        reference="Corani et al. 2017, extended to k models",
        engine="ranking.hierarchical_k.engine:rank_hierarchical", check="ranking.hierarchical_k.engine:stan_inputs",
        result="ranking.hierarchical_k.result:HierarchicalRankingResult", run="ranking.run:bundle",
        report="ranking.hierarchical_k.report", plots="ranking.hierarchical_k.plots:all_figures",
        text="ranking.hierarchical_k.report:text_lines", differs="ranking.hierarchical_k.report:DIFFERS",
        program="hierarchical_k", takes="folds",
        columns=("model", "p_best", "p_best_next", "mean_rank", "rank_low", "rank_high", "effect", "diff_to_leader",
                 "diff_low", "diff_high"),
        claims=("best=", "none-better=", "not-worse-than-best="), versus=True, short="hierarchical"),
    RankingModel(
        name="bbt", title="Bayesian Bradley-Terry", page_title="Bayesian Bradley–Terry", reference="Wainer 2023",
        engine="ranking.bbt.engine:rank_bbt", refuse="ranking.bbt.engine:refuse_lacking",
        result="ranking.bbt.result:RankingResult", run="ranking.run:bundle",
        report="ranking.bbt.report", plots="ranking.bbt.plots:all_figures", text="ranking.bbt.report:text_lines",
        differs="ranking.bbt.report:DIFFERS", program="bbt", takes="means",
        columns=("model", "p_best", "mean_rank", "rank_low", "rank_high", "strength"), metric_rope=False, short="BBT"),
    RankingModel(
        name="joint-t", title="joint correlated-t model of one dataset's folds",
        page_title="joint correlated-t model of one dataset's folds", reference="Corani & Benavoli 2015, generalised",
        engine="ranking.joint.engine:rank_one_dataset", check="ranking.joint.engine:joint_inputs",
        result="ranking.joint.result:JointRankingResult", run="ranking.run:bundle", report="ranking.joint.report",
        plots="ranking.joint.plots:all_figures", text="ranking.joint.report:text_lines", program=None,
        takes="one dataset", versus=True, short="joint-t",
        columns=("model", "p_best", "mean_rank", "rank_low", "rank_high", "mean", "diff_to_leader", "diff_low",
                 "diff_high")),
)}


#: The tests of systems evaluated on the same items, by name (the result's ``test``).
EVAL_TESTS = {family.name: family for family in (
    EvalTest(
        name="paired-evals", title="paired comparison of evaluation runs, item by item (exact, no MCMC)",
        page_title="paired comparison of evaluation runs, item by item",
        reference="Dirichlet 2×2 and ordinal tables, the Bayesian bootstrap (Rubin 1981); clusters after Miller 2024",
        engine="evals.engine:compare_evaluations", rank="evals.engine:rank_evaluations",
        result="evals.result:EvalComparisonResult", ranking="evals.result:EvalRanking", check="evals.run:check",
        run="evals.run:bundle", ranking_run="evals.run:ranking_bundle", report="evals.report",
        plots="evals.plots:all_figures", text="evals.report:text_lines", gate="evals.gates:check", program=None,
        takes="items"),
)}


def pair_test(name: str) -> PairTest:
    """The two-model test ``name`` (a result's ``test``)."""
    return PAIR_TESTS[name]


def ranking_model(name: str) -> RankingModel:
    """The ranking model ``name`` (a result's ``model``)."""
    return RANKING_MODELS[name]


def eval_test(name: str = "paired-evals") -> EvalTest:
    """The test of evaluation runs ``name`` (a result's ``test``)."""
    return EVAL_TESTS[name]


def taking(data: str, table: dict[str, Family] = PAIR_TESTS) -> Family:
    """The family of ``table`` that ``auto`` chooses for ``data`` (``folds``, ``one dataset``, ``means``)."""
    return next(family for family in table.values() if family.takes == data)


def tests_named(tests, references: bool = False) -> str:
    """The tests that answered (a matrix's pairs may need more than one), by name, with their papers if asked."""
    return "; ".join(f"{PAIR_TESTS[t].title} ({PAIR_TESTS[t].reference})" if references else PAIR_TESTS[t].title
                     for t in tests)


def page_words() -> dict[str, dict[str, dict[str, Any]]]:
    """What the server's page shows of each family (it names none itself): a test's words and whether its
    probabilities are the next dataset's; a ranking model's words, whether it reads the rope in metric units,
    how its pairs relate to the pair tests beside it, and its short name; a test of evaluation runs both ways (it
    compares two and ranks k; ``per``: what a decision is made per, metric or scorer) and among ``evaluations``, the
    words of the page's part that starts one."""
    evals = {t.name: {"title": t.page_title, "reference": t.reference} for t in EVAL_TESTS.values()}
    return {"tests": {**{t.name: {"title": t.page_title, "next_dataset": t.next_dataset, "per": "metric"}
                         for t in PAIR_TESTS.values()},
                      **{name: {"title": e["title"], "next_dataset": False, "per": "scorer"}
                         for name, e in evals.items()}},
            "rankings": {**{m.name: {"title": m.page_title, "metric_rope": m.metric_rope,
                                     "short": m.short, "differs": m.part("differs") if m.differs else None}
                            for m in RANKING_MODELS.values()},
                         **{name: {"title": e["title"], "metric_rope": True, "short": None, "differs": None,
                                   "next_dataset": False}
                            for name, e in evals.items()}},
            "evaluations": evals}
