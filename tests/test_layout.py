"""The package's layout: imports flow one way through the pipeline's layers, no import circle, no symlink in the
repository, and the Stan programs of the top-level ``stan/`` reach both an installed wheel and an editable install.

The layers, from the bottom (docs/architecture.md draws the same picture in words):

0. vocabulary and plumbing: errors, options and the claims they name, progress and console, tags, keys built from
   names and UI routes, the shared result words;
1. read and shape: MLflow reads (``tracking.collect``, ``fetch``, ``cvlog``, ``search``), the tensor (``scores``), the
   Stan layer (``sampling``), the summaries every test shares (``posterior_summary``, ``baselines``), figures and the
   report page;
2. the test families, each a package that imports only itself and the layers below: ``hierarchical``,
   ``signed_rank``, ``correlated_t``, ``ranking`` (and any family added later);
3. what a run holds and how it is written (``tracking.bundle``, ``tracking.runlog``), the matrix summary, and the
   stop-when-decided designs (``sequential``: pure numpy/scipy, on the families' posteriors);
4. the pipeline: ``preflight``, ``pairfits`` (a matrix's pairs), ``compare``;
5. the entry points: ``cli``, ``demo``, ``client``, ``server``, ``simulation``; and the package's face
   (``__init__``) on top.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mlflow_bayescompare"
FAMILIES = ("hierarchical", "signed_rank", "correlated_t", "ranking")

#: each module's layer, by its dotted name under the package (the first matching prefix wins)
LAYERS = [
    (0, ("errors", "claims", "optionspec", "optionparse", "options", "versions", "progress", "console", "result",
         "tracking.tags", "tracking.keys", "tracking.runkey", "tracking.uiroutes", "tracking.mlflow_internals",
         "scores.tidy_checks", "sampling.pools",
         "sampling.convergence")),
    (1, ("tracking.collect", "tracking.identify", "tracking.fetch", "tracking.cvlog", "tracking.reach",
         "tracking.search", "scores", "sampling", "posterior_summary", "baselines", "figures", "report_html")),
    (2, FAMILIES),
    (3, ("tracking.bundle", "tracking.several", "tracking.runlog", "tracking.paircache", "matrix", "sequential")),
    (4, ("preflight", "pairfits", "compare")),
    (5, ("cli", "demo", "client", "server", "simulation")),
    (6, ("",)),  # the package's face, mlflow_bayescompare/__init__.py
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports, at its top or inside a function (a lazy import still ties)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{source}.{alias.name}"
                found.add(target if target in modules else source)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(name: str) -> int:
    local = name[len(PACKAGE) + 1:] if name != PACKAGE else ""
    for layer, prefixes in LAYERS:
        if any(local == p or local.startswith(p + ".") or (p == "" and local == "") for p in prefixes):
            return layer
    raise AssertionError(f"{name} has no layer: add it to LAYERS (and to docs/architecture.md)")


def _family(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FAMILIES else None


def test_the_import_graph_has_no_circle():
    graph, state, circles = _graph(), {}, []

    def visit(node, trail):
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                circles.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_imports_flow_down_the_layers_and_families_stay_apart():
    wrong = []
    for name, targets in sorted(_graph().items()):
        for target in sorted(targets):
            if _layer(target) > _layer(name):
                wrong.append(f"{name} (layer {_layer(name)}) imports {target} (layer {_layer(target)})")
            elif _family(name) and _family(target) and _family(name) != _family(target):
                wrong.append(f"{name} imports another family's {target}")
    assert not wrong, "\n".join(wrong)


def test_the_layer_check_catches_a_lazy_import_that_runs_back_up(tmp_path):
    """The check itself: a function of the Stan layer that imports the pipeline is seen, and is an upward import."""
    stray = tmp_path / "sampler.py"
    stray.write_text("def f():\n    from .. import compare\n")
    name = f"{PACKAGE}.sampling.sampler"
    assert f"{PACKAGE}.compare" in _imports(name, stray, _modules())
    assert _layer(f"{PACKAGE}.compare") > _layer(name)


def test_the_repository_holds_no_symlink():
    links = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_symlink() and ".git" not in p.parts]
    assert not links, f"symlinks break on Windows clones: {links}"


def test_an_editable_install_finds_every_stan_program():
    from mlflow_bayescompare.sampling import programs

    assert programs.STAN_DIR == ROOT / "stan"
    assert {p.name for p in programs.PROGRAMS.values()} == {p.name for p in (ROOT / "stan").glob("*.stan")}
    assert all(p.is_file() for p in programs.PROGRAMS.values())


@pytest.mark.slow
def test_the_wheel_holds_every_stan_program_and_finds_them_installed(tmp_path):
    """Built from a copy of the sources (pip fetches the build backend pyproject names), the wheel holds
    ``mlflow_bayescompare/stan/*.stan`` for every file of ``stan/``; installed, the package reads them there."""
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("stan", PACKAGE):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        (source / name).write_bytes((ROOT / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path)],
                   check=True, capture_output=True, text=True, timeout=300)
    wheel = next(tmp_path.glob("mlflow_bayescompare-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"{PACKAGE}/stan/{p.name}" for p in (ROOT / "stan").glob("*.stan")}
    assert expected and expected <= names, f"missing from the wheel: {sorted(expected - names)}"
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    probe = ("from mlflow_bayescompare.sampling import programs; "
             "print(programs.STAN_DIR); print(all(p.is_file() for p in programs.PROGRAMS.values()))")
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    where, found = done.stdout.split()[-2:]
    assert Path(where) == target / PACKAGE / "stan" and found == "True"
