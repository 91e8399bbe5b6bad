"""``pip install mlflow-bayescompare`` works on every platform: the wheel's dependencies resolve, from PyPI, to
wheels only (nothing to build), and pystan comes along exactly where httpstan publishes wheels.

pip applies ``--platform`` to the wheels it accepts but evaluates environment markers (``sys_platform == 'win32'``
and the like) for the machine it runs on.  So each resolution runs pip with its marker environment set to the
target machine's, the way pip on that machine would see it; the report's ``environment`` shows what was used.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = [pytest.mark.network, pytest.mark.slow]  # pip resolves five platforms from PyPI: minutes

ROOT = Path(__file__).resolve().parents[1]
INDEX = "https://pypi.org/simple"
PYTHON = "3.11"
_COMMON = {"implementation_name": "cpython", "implementation_version": "3.11.9", "python_full_version": "3.11.9",
           "platform_python_implementation": "CPython", "python_version": PYTHON}
#: platform tag → (the marker environment of such a machine, whether the markers promise pystan there)
PLATFORMS = {
    "manylinux2014_x86_64": (dict(os_name="posix", sys_platform="linux", platform_system="Linux",
                                  platform_machine="x86_64", platform_release="6.1.0", platform_version="#1 SMP"),
                             True),
    "manylinux2014_aarch64": (dict(os_name="posix", sys_platform="linux", platform_system="Linux",
                                   platform_machine="aarch64", platform_release="6.1.0", platform_version="#1 SMP"),
                              False),
    "win_amd64": (dict(os_name="nt", sys_platform="win32", platform_system="Windows", platform_machine="AMD64",
                       platform_release="10", platform_version="10.0.19045"), False),
    "macosx_14_0_arm64": (dict(os_name="posix", sys_platform="darwin", platform_system="Darwin",
                               platform_machine="arm64", platform_release="23.6.0", platform_version="Darwin 23.6.0"),
                          True),
    "macosx_13_0_x86_64": (dict(os_name="posix", sys_platform="darwin", platform_system="Darwin",
                                platform_machine="x86_64", platform_release="22.6.0",
                                platform_version="Darwin 22.6.0"), True),
}
#: pip with its marker environment replaced by the JSON in argv[1]; the rest of argv is pip's command line
_PIP_FOR = """import json, sys
from pip._vendor.packaging import markers
environment = json.loads(sys.argv[1])
markers.default_environment = lambda: dict(environment)
from pip._internal.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen(f"{INDEX}/pip/", timeout=15) as response:
            return response.status == 200
    except OSError:
        return False


def _pip_env() -> dict:
    """This environment without the local pip configuration (extra indexes, local wheels, constraints): the
    resolution is PyPI's alone, as for a user."""
    keep = ("PIP_CERT", "PIP_DEFAULT_TIMEOUT")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in keep}
    return {**env, "PIP_CONFIG_FILE": os.devnull}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The package's wheel, built from a copy of the sources (a build in place would leave ``build/`` behind)."""
    if not _pypi_reachable():
        pytest.skip(f"PyPI is unreachable ({INDEX})")
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("stan", "mlflow_bayescompare"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp)],
                   check=True, capture_output=True, text=True, timeout=300)
    return next(tmp.glob("mlflow_bayescompare-*.whl"))


def _resolve(wheel: Path, tag: str, report: Path) -> subprocess.CompletedProcess:
    environment = {**_COMMON, **PLATFORMS[tag][0]}
    command = [sys.executable, "-c", _PIP_FOR, json.dumps(environment), "install", "--dry-run", "--ignore-installed",
               "--only-binary=:all:", "--platform", tag, "--python-version", PYTHON, "--implementation", "cp",
               "--target", str(report.with_suffix(".target")), "--index-url", INDEX, "--report", str(report),
               "--disable-pip-version-check", "--progress-bar", "off", str(wheel)]
    return subprocess.run(command, capture_output=True, text=True, env=_pip_env(), timeout=600)


@pytest.mark.timeout(1200)  # its own limits: 300 s to build the wheel, 600 s for pip
def test_every_platform_installs_from_wheels_with_pystan_where_httpstan_has_wheels(wheel, tmp_path):
    reports = {tag: tmp_path / f"{tag}.json" for tag in PLATFORMS}
    with ThreadPoolExecutor(len(PLATFORMS)) as pool:
        runs = dict(zip(PLATFORMS, pool.map(lambda tag: _resolve(wheel, tag, reports[tag]), PLATFORMS)))
    problems = [problem for tag, run in runs.items() for problem in _problems(tag, run, reports[tag])]
    assert problems == [], "\n\n".join(problems)


def _problems(tag: str, run: subprocess.CompletedProcess, report_file: Path) -> list[str]:
    """What is wrong with one platform's resolution: it failed, something would be built, or pystan is not where
    the markers promise it."""
    if run.returncode != 0:
        why = "\n".join(run.stdout.splitlines()[-12:])  # pip's account of the conflict ends its output
        return [f"{tag}: pip could not resolve from wheels alone:\n{why}\n{run.stderr[-2000:]}"]
    report = json.loads(report_file.read_text())
    if report["environment"]["sys_platform"] != PLATFORMS[tag][0]["sys_platform"]:
        return [f"{tag}: pip resolved for {report['environment']['sys_platform']}, not for this platform"]
    installs = {item["metadata"]["name"].lower(): item["download_info"]["url"] for item in report["install"]}
    problems = [f"{tag}: would build {name} ({url})" for name, url in installs.items() if not url.endswith(".whl")]
    problems += [f"{tag}: {name} missing" for name in ("mlflow-bayescompare", "cmdstanpy") if name not in installs]
    promised = PLATFORMS[tag][1]
    problems += [f"{tag}: {name} {'missing' if promised else 'included'}" for name in ("pystan", "httpstan")
                 if (name in installs) != promised]
    return problems
