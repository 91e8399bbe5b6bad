"""Time a new user's first run (empty caches: the Stan programs compile) against the cached run, for ``compare``
and the ``demo`` command, through the command line as a user runs it.

Each command runs twice in a process of its own with the caches pointed at a temporary folder (``XDG_CACHE_HOME``,
which moves both httpstan's cache and this package's; ``MLFLOW_BAYESCOMPARE_CACHE`` unset), so the user's cache is
untouched: first with that folder empty, then again with what the first run left.  ``compare`` gets caches of its
own (it compiles the hierarchical program only) and a sqlite store of two models x 6 datasets x 10 x 10-fold CV
logged by ``log_cv_scores``; the demo logs its own store.  Printed per command: the seconds to its first line of
output and to its end, first and cached side by side, with their ratio, the CPU seconds of the command and the
processes it waited for, and what the first runs left in the cache.

    python benchmarks/bench_firstrun.py [--commands compare,demo] [--checkout PATH]

``--checkout`` runs the package of another source tree (e.g. an earlier commit, exported with ``git archive``).
"""

from __future__ import annotations

import argparse
import os
import resource
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODELS, DATASETS, FOLDS, REPEATS = ("a", "b"), 6, 10, 10


@dataclass
class Timing:
    first_output: float  # seconds to the first line on stdout or stderr
    total: float
    cpu: float  # CPU seconds of the command and every process it waited for (its compiles, Stan's samplers)
    load: float  # the machine's load average (1 minute) at the end
    returncode: int
    output: list[str]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict, cwd: Path) -> Timing:
    """Run ``command`` and time its first line of output (either stream) and its end."""
    start, cpu, first, lines = time.perf_counter(), _children_cpu(), None, []
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                line = key.fileobj.readline()
                if not line:
                    selector.unregister(key.fileobj)
                    continue
                first = first if first is not None else time.perf_counter() - start
                lines.append(line.decode(errors="replace").rstrip())
    returncode = process.wait()
    return Timing(first if first is not None else float("nan"), time.perf_counter() - start, _children_cpu() - cpu,
                  os.getloadavg()[0], returncode, lines)


def cli_env(checkout: Path, cache: Path) -> dict:
    """The environment of a run: the package of ``checkout`` first on the path, every cache under ``cache``."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("MLFLOW_BAYESCOMPARE_CACHE", "MLFLOW_TRACKING_URI")}
    env["XDG_CACHE_HOME"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH")) if p)
    return env


def first_and_cached(name: str, arguments: list[str], checkout: Path, work: Path) -> tuple[Timing, Timing, Path]:
    """The command run with empty caches, then again with what that run left; the cache folder."""
    cache = work / f"cache-{name}"
    cache.mkdir()
    env = cli_env(checkout, cache)
    command = [sys.executable, "-m", "mlflow_bayescompare.cli", *arguments]
    runs = []
    for kind in ("first", "cached"):
        timing = timed(command, env, work)
        print(f"  {name} ({kind} run): {timing.first_output:.1f} s to the first line, {timing.total:.0f} s in all, "
              f"{timing.cpu:.0f} CPU s, load {timing.load:.1f}, exit {timing.returncode}", flush=True)
        if timing.returncode != 0:
            sys.exit("\n".join(timing.output[-30:]))
        runs.append(timing)
    return runs[0], runs[1], cache


def log_store(work: Path) -> str:
    """A sqlite store with the compare's runs: model b 0.01 more accurate than a on every dataset."""
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # no database set-up lines
    from mlflow import MlflowClient

    from mlflow_bayescompare import log_cv_scores

    uri = f"sqlite:///{work / 'compare.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("firstrun", artifact_location=(work / "artifacts").as_uri())
    rng = np.random.default_rng(1)
    for dataset in range(DATASETS):
        base = rng.uniform(0.7, 0.9)
        for i, model in enumerate(MODELS):
            scores = base + 0.01 * i + rng.normal(0, 0.02, FOLDS * REPEATS)
            log_cv_scores(model, f"d{dataset}", scores, folds=FOLDS, repeats=REPEATS, experiment_id=experiment_id,
                          client=client)
    return uri


def megabytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def cache_report(cache: Path) -> str:
    """What a first run left in its cache: httpstan's compiled models, this package's folder, any ``build/``."""
    models = sorted((cache / "httpstan").glob("*/models/*"))
    ours = cache / "mlflow-bayescompare"
    sizes = ", ".join(f"{m.name} {megabytes(m):.1f} MB" for m in models)
    return (f"httpstan models: {sizes or 'none'}; mlflow-bayescompare/: {megabytes(ours):.1f} MB"
            f" (build/ {'present' if (ours / 'build').exists() else 'absent'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", default="compare,demo", help="which to time, of compare and demo")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="source tree whose package runs")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    print(f"checkout {checkout}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-firstrun-") as folder:
        work = Path(folder)
        commands = args.commands.split(",")
        if "compare" in commands:
            compare = ["compare", "--experiment-name", "firstrun", "--model-a", "a", "--model-b", "b", "--metric",
                       "accuracy", "--seed", "1", "--tracking-uri", log_store(work)]
            rows.append(("compare", *first_and_cached("compare", compare, checkout, work)))
        if "demo" in commands:
            demo = ["demo", "--tracking-uri", f"sqlite:///{work / 'demo.db'}"]
            rows.append(("demo", *first_and_cached("demo", demo, checkout, work)))
        print(f"\n{'command':8} {'first output s (first, cached)':>31} {'total s (first, cached)':>25} "
              f"{'ratio':>6} {'CPU s (first, cached)':>22}")
        for name, first, cached, _ in rows:
            print(f"{name:8} {first.first_output:>16.1f} {cached.first_output:>14.1f} {first.total:>14.0f} "
                  f"{cached.total:>10.0f} {first.total / cached.total:>6.1f} {first.cpu:>12.0f} {cached.cpu:>9.0f}")
        print("\ncaches after the first runs:")
        for name, *_, cache in rows:
            print(f"  {name}: {cache_report(cache)}")


if __name__ == "__main__":
    main()
