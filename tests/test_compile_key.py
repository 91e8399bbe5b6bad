"""One compile serves every way of starting the same Python (issue 40, item 7).  httpstan names a compiled program by
a hash that holds ``sys.executable`` as spelled, so ``mlflow-bayescompare compile`` (the console script: its
shebang's ``python3.11``) left ``python3 train.py`` and ``python train.py`` to compile again, for minutes each.  The
package names it by the interpreter's real path and httpstan's installation (``pystan_backend.interpreter_key``):
after ``compile``, a fit started through ``python3``, ``python`` or any link to the interpreter finds the program
compiled.  A virtual environment with an httpstan of its own still compiles apart: its programs link to that
installation's libraries."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_bayescompare.sampling import programs, pystan_backend

pytestmark = pytest.mark.slow  # four interpreters started (seconds each); a cold cache would compile for minutes

ROOT = Path(__file__).resolve().parents[1]
#: a fit of the hierarchical program: the seconds it spent compiling (0: found in the cache), and whether it announced
#: the stage "compiling"
FIT = """
import numpy as np
from mlflow_bayescompare.families.hierarchical import prepare
from mlflow_bayescompare.sampling import sampler
rng = np.random.default_rng(0)
data = prepare.prepare(["a", "b"], [rng.normal(0.01, 0.02, 10), rng.normal(0.0, 0.02, 10)], rope=0.01,
                       rho=np.full(2, 0.1), prior_code=0, rng=rng).stan_data
stages = []
fit = sampler.sample(data, chains=1, draws=30, warmup=30, seed=1, backend="pystan",
                     progress=lambda stage, detail=None: stages.append(stage))
print(fit.compile_seconds, "compiling" in stages)
"""


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def test_compile_then_a_fit_started_each_way_finds_the_program_compiled(tmp_path):
    script = shutil.which("mlflow-bayescompare")
    command = [script] if script else [sys.executable, "-m", "mlflow_bayescompare.cli"]
    done = subprocess.run([*command, "compile", "--program", "hierarchical", "--backend", "pystan"], env=_env(),
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    links = tmp_path / "bin"
    links.mkdir()
    spellings = [sys.executable]
    for name in ("python3", "python", "train-python"):
        (links / name).symlink_to(sys.executable)
        spellings.append(str(links / name))
    for python in spellings:
        ran = subprocess.run([python, "-c", FIT], env=_env(), capture_output=True, text=True, timeout=1800)
        assert ran.returncode == 0, ran.stderr[-2000:]
        assert ran.stdout.split()[-2:] == ["0.0", "False"], (python, ran.stdout, ran.stderr[-2000:])


def test_the_key_is_the_interpreters_real_path_and_httpstans_installation(tmp_path):
    import httpstan

    key = pystan_backend.interpreter_key()
    assert key.splitlines() == [os.path.realpath(sys.executable), os.path.realpath(Path(httpstan.__file__).parent)]
    link = tmp_path / "python3"
    link.symlink_to(sys.executable)
    name = subprocess.run([str(link), "-c", "from mlflow_bayescompare.sampling import programs, pystan_backend; "
                           "print(pystan_backend.model_name(programs.program_code()))"],
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert name.stdout.strip() == pystan_backend.model_name(programs.program_code()), name.stderr[-2000:]
