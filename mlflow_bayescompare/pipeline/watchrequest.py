"""What goes into a watch (:class:`WatchRequest`: from the command line's or the JSON API's fields,
:func:`watch_request`, or from a Python call's keywords, :func:`from_keywords`) and what comes out of it
(:class:`WatchOutcome`, the decision object :func:`.watch.watch_runs` returns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..sequential import Design, Look
from ..sequential.design import CV_TESTS
from ..sequential.report import ANSWER_WORDS, look_sentence, probabilities_text
from ..vocabulary.errors import InputError
from ..vocabulary.options import WATCH_EXCLUDED, PairOptions, SourceOptions, WatchOptions, parse_fields
from ..vocabulary.options import from_keywords as options_from_keywords
from ..vocabulary.outcomes import json_ready
from .watchsources import SourceRun

__all__ = ["WatchRequest", "WatchOutcome", "watch_request", "from_keywords", "CV_ONLY", "EVALS_ONLY"]

#: what a watch of CV runs reads that a watch of evaluation runs does not, and the other way round (public names)
CV_ONLY = ("experiment_name", "experiment_id", "metric", "layout", "model_key", "dataset_key", "model_tag",
           "dataset_tag", "filter", "model_a", "model_b", "dataset", "datasets")
EVALS_ONLY = ("run_a", "run_b", "scorer", "pair_key", "table_artifact")


@dataclass(frozen=True)
class WatchRequest:
    """One watch: the design, what it reads besides (:class:`~..vocabulary.options.WatchOptions`) and, for CV runs,
    the sources and models as ``compare`` takes them (None for evaluation runs)."""

    design: Design
    watch: WatchOptions
    source: SourceOptions | None = None
    pair: PairOptions | None = None

    @property
    def cv(self) -> bool:
        """It reads CV runs (``correlated-t``, ``hierarchical``), not evaluation runs."""
        return self.design.test in CV_TESTS


@dataclass
class WatchOutcome:
    """The answer of a watch at its latest look (:attr:`look`: the rows of every scheduled look reached), what it
    compared, its watch run, the operating characteristics of its design (``operating``: when this call registered
    it; else those recorded), the rows the run keeps, the source runs read and what the reading said."""

    look: Look
    design: Design
    model_a: str
    model_b: str
    measure: str
    dataset: str | None = None
    run_id: str | None = None
    experiment_id: str | None = None
    registered: bool = False
    operating: dict | None = None
    rows: list[dict] = field(default_factory=list)
    sources: list[SourceRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def answer(self) -> str:
        """``continue``, ``a_better``, ``b_better``, ``equivalent`` or ``inconclusive``."""
        return self.look.answer

    @property
    def decided(self) -> bool:
        """A model is better, or they are practically equivalent."""
        return self.answer in ("a_better", "b_better", "equivalent")

    def sentence(self) -> str:
        return look_sentence(self.look, self.design, self.model_a, self.model_b)

    def progress_line(self) -> str:
        """``7 of 30 repeats: P(rf better) 0.912, …``: the size so far and the current probabilities."""
        so_far = f"{self.look.available} of {self.design.max_size} {self.design.unit}"
        row = self.look.row
        return so_far if row is None else f"{so_far}: {probabilities_text(row, self.model_a, self.model_b)}"

    def to_dict(self) -> dict[str, Any]:
        words = ANSWER_WORDS[self.answer].format(a=self.model_a, b=self.model_b)
        return json_ready({
            "kind": "watch", "answer": self.answer, "answer_words": words, "decided": self.decided,
            "sentence": self.sentence(), "size": self.look.size, "available": self.look.available,
            "unit": self.design.unit, "row": None if self.look.row is None else dataclasses.asdict(self.look.row),
            "looks": [dataclasses.asdict(r) for r in self.look.rows], "model_a": self.model_a,
            "model_b": self.model_b, "measure": self.measure, "dataset": self.dataset, "run_id": self.run_id,
            "experiment_id": self.experiment_id, "registered": self.registered, "design": self.design.to_dict(),
            "fingerprint": self.design.fingerprint, "operating": self.operating, "rows": self.rows,
            "sources": [dataclasses.asdict(s) for s in self.sources], "notes": [*self.look.notes, *self.notes],
            "seconds": self.seconds})


# --------------------------------------------------------------------------------------------------- the request


def watch_request(fields: Mapping[str, Any], origin: str = "json", exclude: Sequence[str] = ()) -> WatchRequest:
    """A watch from the public fields of the command line (``origin="cli"``) or the JSON API: the design's ``test``
    says which sources it reads (CV runs for ``correlated-t`` and ``hierarchical``, else two evaluation runs); a
    field of the other kind is refused, named, with every other problem."""
    given = {k for k, v in fields.items() if v not in (None, (), False)}
    cv = fields.get("test") in (None, *CV_TESTS)
    wrong, classes = (EVALS_ONLY, [Design, WatchOptions, SourceOptions, PairOptions]) if cv else \
        (CV_ONLY, [Design, WatchOptions])
    problems = [f"{_shown(k, origin)} applies to {'an evaluation watch' if cv else 'CV runs'}, not "
                f"test {fields.get('test') or 'correlated-t'}" for k in wrong if k in given]
    header = "invalid options:" if origin == "cli" else "invalid request:"
    try:
        parsed = parse_fields({k: v for k, v in fields.items() if k not in wrong}, classes, origin=origin,
                              exclude=(*WATCH_EXCLUDED, *exclude))
    except InputError as exc:
        raise InputError(problems + exc.problems, header=header) from None
    if problems:
        raise InputError(problems, header=header)
    return _checked(WatchRequest(*parsed))


def _shown(name: str, origin: str) -> str:
    return "--" + name.replace("_", "-") if origin == "cli" else f"'{name}'"


def _checked(request: WatchRequest) -> WatchRequest:
    """What a watch needs of its sources, by its test, named."""
    problems = []
    if request.cv and request.design.folds is None:
        problems.append("a watch of CV runs needs the design's folds (the folds of each repeat, as the runs log "
                        "them)")
    if not request.cv and request.watch.run_a is None:
        problems.append(f"a watch of test {request.design.test} reads two evaluation runs: name them (run_a, run_b)")
    if request.cv and request.source is not None and "," in request.source.metric:
        problems.append(f"a watch reads one metric; got {request.source.metric!r}")
    w = request.watch
    test = request.design.test
    problems += [f"{name} applies to an evaluation watch, not {test}" for name in EVALS_ONLY
                 if request.cv and getattr(w, name) is not None]
    if test != "correlated-t" and w.dataset is not None:
        problems.append(f"dataset applies to correlated-t (one dataset's CV runs), not {test}"
                        + (": name the datasets (datasets)" if test == "hierarchical" else ""))
    if test != "hierarchical" and w.datasets:
        problems.append(f"datasets applies to hierarchical (several datasets' CV runs), not {test}")
    if problems:
        raise InputError(problems, header="Cannot watch:")
    return request


def from_keywords(experiment_names, experiment_ids, options: dict, design=None, source=None,
                  watch=None) -> WatchRequest:
    """The request of a Python call: the option objects given, with the keywords naming their fields replaced."""
    options = dict(options)
    if experiment_names or experiment_ids:
        options["experiment_names"] = (experiment_names,) if isinstance(experiment_names, str) else \
            tuple(experiment_names)
        options["experiment_ids"] = (experiment_ids,) if isinstance(experiment_ids, str) else tuple(experiment_ids)
    design_names = {f.name for f in dataclasses.fields(Design)}
    (design,) = options_from_keywords({k: v for k, v in options.items() if k in design_names}, (Design, design))
    rest = {k: v for k, v in options.items() if k not in design_names}
    if design.test not in CV_TESTS:
        stray = sorted(set(rest) - {f.name for f in dataclasses.fields(WatchOptions)})
        if stray or source is not None:
            raise InputError(f"{', '.join(stray) or 'source'} applies to CV runs, not {design.test}",
                             header="Cannot watch:")
        (watch,) = options_from_keywords(rest, (WatchOptions, watch))
        return _checked(WatchRequest(design, watch))
    watch_names = {f.name for f in dataclasses.fields(WatchOptions)}
    (watch,) = options_from_keywords({k: v for k, v in rest.items() if k in watch_names}, (WatchOptions, watch))
    pair_names = {"model_a", "model_b"}
    source_part = {k: v for k, v in rest.items() if k not in watch_names | pair_names}
    (source,) = options_from_keywords(source_part, (SourceOptions, source))
    pair = PairOptions(model_a=rest.get("model_a"), model_b=rest.get("model_b"))
    return _checked(WatchRequest(design, watch, source, pair))
