"""Errors with messages a user can act on: what is wrong and where (dataset, model, fold, run)."""

from __future__ import annotations


class BayesCompareError(Exception):
    """Base class of every error this package raises on purpose."""


class InputError(BayesCompareError, ValueError):
    """Bad input.  ``problems`` lists every problem found, each naming its dataset / model / fold / run; ``footer``
    says, once, what the user can do about them."""

    def __init__(self, problems: str | list[str], header: str | None = None, footer: list[str] = ()):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.footer = list(footer)
        lines = self.problems if header is None else [header, *("  - " + p for p in self.problems)]
        super().__init__("\n".join([*lines, *footer]))


class SamplingError(BayesCompareError, RuntimeError):
    """Stan failed to compile, initialise or sample; the message carries Stan's own words."""
