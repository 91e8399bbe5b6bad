"""A watch run: the registered design of a stop-when-decided comparison and every look at its sources, kept in one
MLflow run of its own kind (``bayescompare.kind`` = ``watch``) that stays RUNNING between looks.

What it holds:

* at the first look (:func:`register`): ``design.json`` (the design's canonical JSON) and the fingerprint tag, the
  design as params, its operating characteristics (``operating_characteristics.json``, with their sentences; a few
  as metrics ``oc_*``), and the tag of the sources it reads (:func:`sources_hash`), by which a later look finds it
  (:func:`find`);
* at every look (:func:`log_looks`): the rows of the scheduled looks newly reached (``looks.json`` and
  ``looks.csv``, rewritten whole, one row more per look; the probabilities as metrics with ``step`` = the look's
  size, so MLflow's charts show the path), the source runs read, the answer tag, the description and (CV runs)
  the state tag by which the next look reads (``bayescompare.watch_state``) with, beside it, ``watch_reads.json``:
  the rows and source runs of ``looks.json``, what each source run gave (:mod:`..pipeline.watchgrown`; of
  evaluation runs with traces, each trace's item and values: :mod:`..pipeline.watchevals`) and the
  operating characteristics; a decided design (or one at its budget) ends the run FINISHED with its verdict.  A
  later look finds in the run's tags all it needs to decide what to read (:func:`read_recorded`), and reads back
  only ``watch_reads.json`` (without the state tag: ``looks.json`` and the operating characteristics).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
from mlflow.entities import Metric, Param, RunStatus, RunTag
from mlflow.exceptions import MlflowException

from ..sequential import Design, from_json
from ..sequential.report import ANSWER_WORDS, look_sentence
from ..shared import markdown
from ..shared.report_html import format_probability
from ..shared.run_content import fit_tag, param_value, run_name
from ..vocabulary import mlflow_internals
from ..vocabulary import tags as T
from ..vocabulary.errors import BayesCompareError
from .runlog import start_run

__all__ = ["Header", "Recorded", "DESIGN_JSON", "OPERATING_JSON", "LOOKS_JSON", "LOOKS_CSV", "READS_JSON",
           "LOOK_METRICS", "sources_hash", "find", "read_recorded", "register", "log_looks", "run_title"]

DESIGN_JSON = "design.json"
OPERATING_JSON = "operating_characteristics.json"
LOOKS_JSON = "looks.json"
LOOKS_CSV = "looks.csv"
#: what a CV look keeps for the next: its rows and source runs (as in ``looks.json``), what each source run gave and
#: the operating characteristics: the one artifact a later look reads back
READS_JSON = "watch_reads.json"
#: the metrics of each look, logged with step = its size
LOOK_METRICS = ("p_a_better", "p_rope", "p_b_better", "cs_low", "cs_high")
_LOOK_COLUMNS = ("size", "p_a_better", "p_rope", "p_b_better", "bayes_answer", "cs_low", "cs_high", "cs_answer",
                 "answer", "digest", "time")
_FINAL = ("a_better", "b_better", "equivalent", "inconclusive")


@dataclass(frozen=True)
class Header:
    """What a watch compares, in the names its run shows: models (or systems) A and B, the metric (or scorer), the
    dataset of CV runs, the source experiments, and the hash of the selection (:func:`sources_hash`)."""

    model_a: str
    model_b: str
    measure: str
    dataset: str | None
    source_experiments: tuple[str, ...]
    sources: str


@dataclass(frozen=True)
class Recorded:
    """What a watch run holds: its registered design, the rows of its looks so far, the source runs it read, its
    operating characteristics (their dict, with ``lines``), what the next look reads by (its state tag) and what
    each source run gave at the last look (``reads``: :mod:`..pipeline.watchgrown`)."""

    run_id: str
    status: str
    design: Design
    rows: list[dict]
    sources: list[dict]
    operating: dict
    state: dict | None = None
    reads: dict | None = None


def run_title(header: Header) -> str:
    """``rf vs svm · accuracy on iris``: what a watch compares."""
    return run_name(header.model_a, header.model_b, header.measure) + (
        f" on {header.dataset}" if header.dataset else "")


def sources_hash(selection: dict) -> str:
    """The sha256 of a selection's canonical JSON: the tag by which a later look finds its watch run."""
    text = json.dumps(selection, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def find(client, experiment_id: str, sources: str):
    """The watch run of ``sources`` in the experiment (RUNNING or FINISHED; the oldest when several), or None.  A
    FAILED watch is abandoned: the next look starts a new one."""
    runs = client.search_runs([experiment_id], f"tags.`{T.KIND}` = '{T.WATCH}' AND tags.`{T.WATCH_SOURCES}` = "
                                               f"'{sources}'", max_results=50, order_by=["attributes.start_time ASC"])
    return next((r for r in runs if r.info.status in ("RUNNING", "FINISHED")), None)


def read_recorded(client, run, design: Design) -> Recorded | None:
    """The design and looks a watch run holds; None when it holds no design yet (a run the server's accept step
    created for its first look).  What decides the next read comes with the run (its tags); ``design.json`` is read
    only when the run's fingerprint is not ``design``'s (to name what changed), once a look was kept
    ``watch_reads.json`` when the run has the state tag (else, or without it, ``looks.json``), and the operating
    characteristics when that did not hold them."""
    tags = run.data.tags
    state = json.loads(tags[T.WATCH_STATE]) if T.WATCH_STATE in tags else None
    looks = _looks(client, run, state is not None) if T.WATCH_ANSWER in tags else {}
    operating = looks.get("operating")
    try:  # the registration's last upload: without it the design is registered again (the fingerprint is the tag)
        operating = operating or json.loads(mlflow_internals.read_top_text(client, run, OPERATING_JSON))
    except MlflowException:
        return None
    if tags.get(T.DESIGN_FINGERPRINT) != design.fingerprint:
        design = from_json(mlflow_internals.read_top_text(client, run, DESIGN_JSON))
    return Recorded(run.info.run_id, run.info.status, design, looks.get("rows", []), looks.get("sources", []),
                    operating, state, looks.get("reads"))


def _looks(client, run, kept: bool) -> dict:
    """The rows and source runs of the looks kept (and ``kept``: what each source run gave at the last)."""
    if kept:
        try:
            return json.loads(mlflow_internals.read_top_text(client, run, READS_JSON))
        except MlflowException:  # a run kept by an earlier version
            pass
    return json.loads(mlflow_internals.read_top_text(client, run, LOOKS_JSON))


def register(client, experiment_id: str, header: Header, design: Design, operating: dict, *, start_time: int,
             run_id: str | None = None) -> str:
    """Register ``design`` in a new watch run (or in ``run_id``, created by the server's accept step): its
    ``design.json``, fingerprint, params and operating characteristics.  Returns the run's id."""
    tags = watch_tags(header, design)
    if run_id is None:
        run_id = start_run(client, experiment_id, name=run_title(header) + " · watch", tags=tags, stage="logging",
                           start_time=start_time)
    metrics = {"oc_false_decision_rate": operating.get("false_decision"),
               "oc_offered_threshold": operating.get("offered_threshold")}
    for truth, key in (("no difference", "oc_expected_size_no_difference"), ("clear", "oc_expected_size_clear")):
        sizes = [c["mean_size"] for c in operating.get("cells", []) if c["truth"] == truth]
        metrics[key] = max(sizes) if sizes else None
    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items() if v is not None],
                     params=[Param(k, param_value(v)) for k, v in design.to_params().items()],
                     tags=[RunTag(k, v) for k, v in tags.items()])
    _log_texts(client, run_id, {DESIGN_JSON: design.canonical_json(),
                                OPERATING_JSON: json.dumps(operating, indent=1, allow_nan=False)})
    return run_id


def watch_tags(header: Header, design: Design) -> dict[str, str]:
    """The tags of a watch run: its kind, what it compares, its sources and its design's fingerprint."""
    return {T.KIND: T.WATCH, T.MODEL_A: header.model_a, T.MODEL_B: header.model_b, T.METRIC: header.measure,
            T.TEST: design.test, T.SOURCE_EXPERIMENTS: ",".join(header.source_experiments),
            T.WATCH_SOURCES: header.sources, T.DESIGN_FINGERPRINT: design.fingerprint,
            **({T.DATASET: header.dataset} if header.dataset else {})}


def log_looks(client, run_id: str, header: Header, design: Design, look, rows: list[dict], sources: list[dict],
              operating: dict, digests: dict[int, str], state: dict | None = None,
              tagged: dict[str, str] | None = None, reads: dict | None = None) -> list[dict]:
    """Log the rows of ``look`` newly reached after the recorded ``rows`` (the whole table again, with ``state``
    ``watch_reads.json``: the rows, the sources, ``reads`` and ``operating``; then in one batch the metrics at step
    = size, the answer, the description and ``state``: what the next look reads by; of the tags, those whose value
    is not already the run's, ``tagged``); end the run FINISHED once the design has answered.  Returns every row."""
    now = int(time.time() * 1000)
    last = max((r["size"] for r in rows), default=0)
    new = [_row(r, look, design, digests[r.size], now) for r in look.rows if r.size > last]
    every = rows + new
    metrics = [Metric(name, float(row[name]), now, int(row["size"])) for row in new for name in LOOK_METRICS
               if row[name] is not None]
    words = ANSWER_WORDS[look.answer].format(a=header.model_a, b=header.model_b)
    sentence = look_sentence(look, design, header.model_a, header.model_b)
    note = description(header, design, operating, every, sentence)
    table = pd.DataFrame(every, columns=list(_LOOK_COLUMNS))
    texts = {LOOKS_JSON: json.dumps({"fingerprint": design.fingerprint, "unit": design.unit, "answer": look.answer,
                                     "answer_words": words, "size": look.size, "available": look.available,
                                     "rows": every, "sources": sources, "notes": list(look.notes)}, indent=1),
             LOOKS_CSV: table.to_csv(index=False), "report.md": str(note)}
    if state is not None:  # rewritten at every look that writes the state: never behind looks.json
        texts[READS_JSON] = json.dumps({"rows": every, "sources": sources, "reads": reads, "operating": operating},
                                       separators=(",", ":"))
    _log_texts(client, run_id, texts, check=False)
    tags = {T.WATCH_ANSWER: look.answer, T.VERDICT: fit_tag(sentence), T.NOTE: fit_tag(str(note)), T.STAGE: "done",
            **({T.DECISION: "inconclusive" if look.answer == "inconclusive" else look.answer}
               if look.answer in _FINAL else {}),
            **({T.WATCH_STATE: json.dumps(state, sort_keys=True)} if state is not None else {})}
    client.log_batch(run_id, metrics=metrics, tags=[RunTag(k, v) for k, v in tags.items()
                                                    if (tagged or {}).get(k) != v])
    if look.answer in _FINAL:
        mlflow_internals.end_run(client, run_id, RunStatus.to_string(RunStatus.FINISHED))
    return every


def _row(row, look, design: Design, digest: str, now: int) -> dict:
    """A look's row as the run keeps it: the watch's answer there (``continue`` before the look it is read at)."""
    answer = look.answer if row.size == look.size else "continue"
    return {**asdict(row), "answer": answer, "digest": digest, "time": now}


def _log_texts(client, run_id: str, texts: dict[str, str], check: bool = True) -> None:
    """Upload ``texts`` as the run's top-level artifacts; ``check``: list them after (MLflow's upload raises when it
    fails: the listing is the registration's second look, not repeated at each look)."""
    with tempfile.TemporaryDirectory(prefix="bayescompare-watch-") as tmp:
        for name, text in texts.items():
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        client.log_artifacts(run_id, tmp)
    if not check:
        return
    present = {a.path for a in client.list_artifacts(run_id)}
    if set(texts) - present:
        raise BayesCompareError(f"artifacts missing after upload: {', '.join(sorted(set(texts) - present))}")


def description(header: Header, design: Design, operating: dict, rows: list[dict], sentence: str):
    """The run's description (:mod:`..shared.markdown`): the answer, the looks, the registered design and its
    operating characteristics."""
    a, b, unit = header.model_a, header.model_b, design.unit
    doc = markdown.Description().heading(1, markdown.raw("Watch: "), run_title(header))
    doc.paragraph(markdown.strong(sentence))
    head = [f"{unit}", f"P({a} better)", "P(rope)", f"P({b} better)", "posterior", "answer"]
    cs = design.cs_check
    if cs:
        head[5:5] = ["sequence low", "sequence high", "sequence"]
    table = []
    for r in rows:
        cells = [r["size"], format_probability(r["p_a_better"]), format_probability(r["p_rope"]),
                 format_probability(r["p_b_better"]), _said(r["bayes_answer"], a, b)]
        if cs:
            cells += [f"{r['cs_low']:.4g}", f"{r['cs_high']:.4g}", _said(r["cs_answer"], a, b)]
        table.append([*cells, _said(r["answer"], a, b)])
    doc.heading(2, markdown.raw("Looks"))
    if table:
        doc.table(head, table, ["right"] * 4 + ["left"] * (len(head) - 4))
    else:
        doc.paragraph(markdown.emphasis("No look yet: the first is at ", design.min_size, " ", unit, "."))
    doc.heading(2, markdown.raw("Registered design "), markdown.emphasis(design.fingerprint[:12]))
    doc.table(["field", "value"], [[k, v] for k, v in design.to_params().items()])
    doc.heading(2, markdown.raw("Operating characteristics"))
    if operating.get("exceeds"):
        doc.warning(f"the simulated false-decision rate {operating['false_decision']:.3f} exceeds the nominal "
                    f"{design.nominal_error:g} under this stopping rule")
    doc.lines([[line] for line in operating.get("lines", [])])
    return doc.done()


def _said(answer: str | None, a: str, b: str) -> str:
    return "" if answer is None else ANSWER_WORDS[answer].format(a=a, b=b)
