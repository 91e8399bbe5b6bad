"""Where a run's model and dataset names come from (``--model-key``, ``--dataset-key``): the one grammar of a key,
the MLflow filter that finds the runs carrying it, and the value a run holds under it.

A key is ``tag:<name>`` (the default: ``tag:model``, ``tag:dataset``), ``param:<name>``, ``run-name``, ``input``
(the dataset only: the run's dataset inputs, ``mlflow.log_input`` or autolog, read by :mod:`..reads.identify`) or
``logged-model`` (the model only: the name of the run's logged model, read by :mod:`..reads.identify`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InputError

__all__ = ["RunKey", "parse_key", "DEFAULT_KEYS", "NAMED_KINDS", "ROLE_KINDS"]

#: the kinds that name a tag or a param after the colon
NAMED_KINDS = ("tag", "param")
#: the kinds each role accepts
ROLE_KINDS = {"model": ("tag", "param", "run-name", "logged-model"), "dataset": ("tag", "param", "run-name", "input")}
DEFAULT_KEYS = {"model": "tag:model", "dataset": "tag:dataset"}


@dataclass(frozen=True)
class RunKey:
    """One key: its role (``model`` or ``dataset``), its kind and, for a tag or a param, the name."""

    role: str
    kind: str
    name: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.kind in NAMED_KINDS else self.kind

    @property
    def is_default(self) -> bool:
        return str(self) == DEFAULT_KEYS[self.role]

    @property
    def described(self) -> str:
        """``tag 'model'``, ``param 'estimator'``, ``the run name``, ``a dataset input``, ``a logged model``."""
        return {"tag": f"tag '{self.name}'", "param": f"param '{self.name}'", "run-name": "the run name",
                "input": "a dataset input", "logged-model": "a logged model"}[self.kind]

    @property
    def column(self) -> str | None:
        """The MLflow search column of a tag, a param or the run name; None for what is read beside the run."""
        return {"tag": f"tags.`{self.name}`", "param": f"params.`{self.name}`",
                "run-name": "attributes.run_name"}.get(self.kind)

    def present_clause(self) -> str:
        """The filter that the runs carrying the key match (``""``: every run, the key is read client-side)."""
        return f"{self.column} IS NOT NULL" if self.kind in NAMED_KINDS else ""

    def equals_clause(self, value: str) -> str:
        """The filter of the runs whose value is ``value``, quoted with whichever quote it lacks (MLflow has no
        escapes); ``""`` when no filter says it (both quotes, or a key read client-side)."""
        if self.column is None or ("'" in value and '"' in value):
            return ""
        quote = "'" if "'" not in value else '"'
        return f"{self.column} = {quote}{value}{quote}"

    def read(self, run) -> str | None:
        """The run's value under a tag, param or run-name key (None when it has none)."""
        if self.kind == "tag":
            return run.data.tags.get(self.name)
        if self.kind == "param":
            return run.data.params.get(self.name)
        if self.kind == "run-name":
            return run.info.run_name or None
        raise ValueError(f"{self} is read by tracking.identify")


def parse_key(text, role: str) -> RunKey:
    """The key ``text`` of ``role`` (``model`` or ``dataset``); an :class:`InputError` saying what is wrong."""
    accepted = ", ".join(f"{k}:<name>" if k in NAMED_KINDS else k for k in ROLE_KINDS[role])
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{role}_key must be one of {accepted}; got {text!r}")
    kind, colon, name = text.strip().partition(":")
    kind = kind.strip().lower().replace("_", "-")
    if kind not in ROLE_KINDS[role] or bool(colon) != (kind in NAMED_KINDS) or (colon and not name):
        raise InputError(f"{role}_key must be one of {accepted}; got {text!r}")
    if "`" in name:
        raise InputError(f"{role}_key {text!r} contains a backtick, which MLflow's filters cannot express")
    return RunKey(role, kind, name)
