"""CPU seconds per test, per phase and per file: where CI's time goes, measured in what a shared machine does not
distort (pytest's ``--durations`` are wall seconds, stretched by every other process on the cores).  Opt-in:

    CPU_TIMES=1 python -m pytest    # a table by file at the end (conftest.py loads this); CPU_TIMES_JSON=path: each
                                    # test's phases too.  Or -p cpu_times with tests/ on PYTHONPATH.

Each phase (set-up, call, tear-down) is charged the CPU time of the pytest process (each xdist worker's own) and of
the processes it has reaped meanwhile (a server stopped in a fixture's tear-down is charged there, with the job
processes it reaped): ``getrusage`` of self and children.  A process never reaped by its parent is not counted."""

from __future__ import annotations

import json
import os
import resource
from collections import defaultdict

import pytest

__all__ = ["pytest_configure", "pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown",
           "pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_terminal_summary"]

_KEY = pytest.StashKey[dict]()
_seen: list[tuple[str, str, float, float]] = []  # (nodeid, phase, cpu seconds, wall seconds), in the controller
_role: dict[str, bool] = {"worker": False}


def pytest_configure(config):
    _role["worker"] = hasattr(config, "workerinput")


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _measured(item, phase):
    start = _cpu()
    yield
    item.stash.setdefault(_KEY, {})[phase] = _cpu() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _measured(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _measured(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _measured(item, "teardown")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    seconds = item.stash.get(_KEY, {}).get(call.when)
    if seconds is not None:
        outcome.get_result().user_properties.append(("cpu_seconds", seconds))


def pytest_runtest_logreport(report):
    cpu = dict(report.user_properties).get("cpu_seconds")
    if cpu is not None and not _role["worker"]:
        _seen.append((report.nodeid, report.when, cpu, report.duration))


def pytest_terminal_summary(terminalreporter, config):
    if _role["worker"] or not _seen:
        return
    by_file: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for nodeid, phase, cpu, wall in _seen:
        where = by_file[nodeid.split("::")[0]]
        where[f"{phase}_cpu"] += cpu
        where[f"{phase}_wall"] += wall
    write = terminalreporter.write_line
    write("CPU seconds by file (set-up + call + tear-down; wall seconds of the same phases):")
    total = defaultdict(float)
    for name, row in sorted(by_file.items(), key=lambda kv: -sum(v for k, v in kv[1].items() if k.endswith("cpu"))):
        cpu = sum(row[f"{p}_cpu"] for p in ("setup", "call", "teardown"))
        wall = sum(row[f"{p}_wall"] for p in ("setup", "call", "teardown"))
        for key, value in row.items():
            total[key] += value
        write(f"  {cpu:8.1f} cpu  {row['setup_cpu'] + row['teardown_cpu']:7.1f} setup+teardown  "
              f"{row['call_cpu']:7.1f} call  {wall:8.1f} wall  {name}")
    write(f"  {sum(v for k, v in total.items() if k.endswith('cpu')):8.1f} cpu in all")
    if os.environ.get("CPU_TIMES_JSON"):
        with open(os.environ["CPU_TIMES_JSON"], "w") as out:
            json.dump([dict(zip(("nodeid", "phase", "cpu", "wall"), row)) for row in _seen], out)
