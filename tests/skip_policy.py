"""What a run that must run everything (``MLFLOW_BAYESCOMPARE_REQUIRE_SERVICES=1``, as ``.ci/run`` sets) does with a
skip: a test or a module that skips for a reason outside :data:`ALLOWED_SKIPS` fails there instead, with its reason,
so a green CI has run every other test.  This covers every way to skip (``pytest.skip``, a ``skipif`` mark,
``pytest.importorskip``, a module-level skip); :func:`servers.unavailable` already fails under the switch with the
service's own words.  Loaded by ``conftest.py``; a plugin module of its own so that ``test_skip_policy.py`` can run it
in a pytest of its own (``-p skip_policy``)."""

from __future__ import annotations

import os

import pytest

__all__ = ["ALLOWED_SKIPS", "REQUIRE_ENV", "pytest_runtest_makereport", "pytest_make_collect_report"]

REQUIRE_ENV = "MLFLOW_BAYESCOMPARE_REQUIRE_SERVICES"
#: the skips allowed under the switch, by a phrase of their reason, and why CI cannot run those tests
ALLOWED_SKIPS = {
    "no CmdStan installation found": "CmdStan comes only from cmdstanpy's installer, which downloads it from "
                                     "GitHub; no PyPI or Debian package ships a CmdStan that compiles (README, "
                                     "*Run the tests*)",
}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_unlisted_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_unlisted_skip(outcome.get_result())


def _fail_unlisted_skip(report) -> None:
    if os.environ.get(REQUIRE_ENV) != "1" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if any(phrase in reason for phrase in ALLOWED_SKIPS):
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped: {reason}\n{REQUIRE_ENV}=1 allows a skip only for: "
                       f"{'; '.join(ALLOWED_SKIPS)} (tests/skip_policy.py)")
