"""The worker processes of ``sampling/subprocesses.py``: a script without a ``__main__`` guard can use them, results
come back in the order of the tasks, and a worker that dies is named with its exit code and last words.  (Ctrl-C and a
task's exception, through the ranking's pairs: ``tests/test_pair_gibbs.py``.)"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_bayescompare.sampling import subprocesses


def square(x: int, report=None) -> int:
    """A task: x², telling ``report`` which task it is."""
    if report:
        report(x, 1)
    return x * x


def leave(code: int, report=None) -> None:
    """A task whose worker dies at once, saying so on its standard error."""
    os.write(2, b"leaving now\n")
    os._exit(code)


def test_a_script_without_a_main_guard_runs_its_tasks_in_workers(tmp_path):
    # spawned workers would import this script again as __mp_main__ and start workers of their own (Python refuses:
    # "An attempt has been made to start a new process before the current process has finished its bootstrapping
    # phase"); these start a new Python on the script's sys.path instead, so the script runs once
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from mlflow_bayescompare.sampling import subprocesses\n"
        "from test_subprocesses import square\n"
        "heard = []\n"
        "print('start')\n"
        "print(subprocesses.run(square, [(2,), (3,), (4,), (5,)], [1, 4, 2, 2], 2, lambda *done: heard.append(done)))\n"
        "print(heard)\n")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]),
                                                                 os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env=environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["start", "[4, 9, 16, 25]", "[(2, 1)]"]  # the first task's progress alone


@pytest.mark.timeout(120)
def test_a_worker_that_dies_is_named_with_its_exit_code_and_last_words():
    with pytest.raises(RuntimeError, match=r"a worker process ended \(exit code 3\): leaving now"):
        subprocesses.run(leave, [(3,), (3,)], [1, 1], 2)


def test_one_task_or_one_core_runs_here():
    # no process started for one task or one core: report is called in this process
    heard = []
    assert subprocesses.run(square, [(6,)], [1], 2, lambda *done: heard.append(done)) == [36]
    assert subprocesses.run(square, [(2,), (3,)], [1, 1], 1, lambda *done: heard.append(done)) == [4, 9]
    assert heard == [(6, 1), (2, 1)]
