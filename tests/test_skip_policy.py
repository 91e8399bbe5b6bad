"""The skip policy of a run that must run everything (``tests/skip_policy.py``): under
``MLFLOW_BAYESCOMPARE_REQUIRE_SERVICES=1`` a skip outside the allowed list fails its test, whichever way it skips
(``pytest.skip``, a ``skipif`` mark, ``pytest.importorskip`` in a test or at a module's top), and so does a missing
test package asked through ``servers.require_module``; the allowed skip (CmdStan) stays a skip; without the switch
every one of them skips.  Each run is a pytest of its own on two small modules."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from skip_policy import REQUIRE_ENV

TESTS = Path(__file__).resolve().parent

CASES = '''
import pytest
from servers import require_module


def test_cmdstan():
    pytest.skip("no CmdStan installation found (cmdstanpy.cmdstan_path() fails); pystan covers the model")


def test_any_other_reason():
    pytest.skip("not today")


@pytest.mark.skipif(True, reason="a mark's condition")
def test_marked():
    pass


def test_required_oracle():
    require_module("no_such_oracle_package", "the oracle is not installed")


def test_importorskip():
    pytest.importorskip("no_such_oracle_package")


def test_runs():
    pass
'''
MODULE_SKIP = 'import pytest\n\npytest.importorskip("no_such_oracle_package")\n\n\ndef test_never_runs():\n    pass\n'


def _outcomes(tmp_path: Path, require: bool) -> dict[str, str]:
    """Run the two modules in a pytest of their own with the skip policy; each test's (or module's) outcome."""
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    env = {k: v for k, v in os.environ.items() if k not in (REQUIRE_ENV, "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(TESTS.parent), env.get("PYTHONPATH", "")])
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the installed plugins cost seconds and play no part
    if require:
        env[REQUIRE_ENV] = "1"
    report = tmp_path / f"report-{require}.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-p", "skip_policy", "-p", "no:cacheprovider", "-q",
                    "--continue-on-collection-errors", f"--junitxml={report}", "test_cases.py",
                    "test_module_skip.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("skipped", "failure", "error")]
        outcomes[case.get("name") or case.get("classname")] = kinds[0] if kinds else "passed"
    return outcomes


@pytest.mark.parametrize("require", [True, False], ids=["required", "not-required"])
def test_only_the_listed_skips_pass_when_everything_must_run(tmp_path, require):
    outcomes = _outcomes(tmp_path, require)
    others = "failure" if require else "skipped"
    assert outcomes == {"test_cmdstan": "skipped", "test_any_other_reason": others,
                        "test_marked": "error" if require else "skipped",  # a mark skips in the set-up
                        "test_required_oracle": others, "test_importorskip": others, "test_runs": "passed",
                        "test_module_skip": "error" if require else "skipped"}, outcomes
