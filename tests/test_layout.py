"""The package's layout: imports flow one way through the pipeline's layers (its folders), no import circle between
modules or between folders, families apart, no symlink in the repository, and the Stan programs of the top-level
``stan/`` reach both an installed wheel and an editable install.

The layers, from the bottom, one folder each (:data:`LAYERS`; docs/architecture.md draws the same picture in words):

0. ``vocabulary``: errors, options and the claims they name, progress and console, tags, keys built from names and
   UI routes, the outcome words, MLflow's private names;
1. ``scores`` (the tensor) and ``sampling`` (the Stan layer);
2. ``reads``: MLflow reads (``collect``, ``fetch``, ``identify``, ``search``, ``cvlog``; evaluation runs,
   ``evaluations`` and its readers);
3. ``shared``: what every family shares (posterior summaries, the Wilcoxon baseline, figures, the report page, a
   run's content);
4. ``families``: the family table (``families/__init__.py``) and the test families, each a package that imports only
   itself, the table and the layers below (:data:`FAMILIES`; the rooms of the ranking apart from each other, over the
   ranking's shared modules), with the borrowings declared in :data:`BORROWED`;
5. ``sequential``: the stop-when-decided designs (pure numpy/scipy, on the families' posteriors);
6. ``runs``: a matrix's runs, writing a run, the pair cache;
7. ``pipeline``: ``preflight``, ``pairfits`` (a matrix's pairs), ``compare``;
8. the entry points: ``cli``, ``demo``, ``client``, ``server``, ``simulation``; and the package's face
   (``__init__``) on top.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mlflow_bayescompare"
#: the families (the first matching prefix under ``families`` wins): each imports only itself, the family table, the
#: ranking's shared modules (a ranking model's room) and the layers below
FAMILIES = ("hierarchical", "signed_rank", "correlated_t", "evals", "ranking.bbt", "ranking.joint",
            "ranking.hierarchical_k", "ranking")

#: each module's layer, by its dotted name under the package (the first matching prefix wins): a folder is a layer
LAYERS = [
    (0, ("vocabulary",)),
    (1, ("scores", "sampling")),
    (2, ("reads",)),
    (3, ("shared",)),
    (4, ("families",)),
    (5, ("sequential",)),
    (6, ("runs",)),
    (7, ("pipeline",)),
    (8, ("cli", "cli_text", "cli_signals", "demo", "client", "server", "simulation")),
    (9, ("",)),  # the package's face, mlflow_bayescompare/__init__.py
]
#: a family's module that others read, by who may: the correlated t-test's formula (the posterior of one dataset's
#: mean difference and its ρ) is each dataset's own evidence in the hierarchical test and each pair's posterior in the
#: joint ranking of one dataset; it lives in its family, and these two import it (docs/architecture.md says why)
BORROWED = {"families.correlated_t.formula": ("families.hierarchical", "families.ranking.joint")}

#: the longest module, in lines, and the longest function, in lines of code (its docstring not counted)
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 60
#: the modules that stay longer, each with why (a module on this list that is no longer long fails too)
LONG_MODULES = {
    "sampling/pystan_backend.py": "its header lists every private pystan/httpstan name it uses, and the chain reader "
                                  "must stay next to the sampler pool it reads",
    "vocabulary/options.py": "every option once, each field beside its spec (default, allowed values, bounds, help): "
                             "the one home of the options",
    "scores/tensor.py": "the per-fold tensor and the per-dataset means go through one pipeline of checks (normalise, "
                        "keep the shared datasets, keep the complete ones, pair) that a split would spread",
}
#: the folders beside the package: each imports the package and its own files, never another's
BESIDE = ("tests", "benchmarks", "examples")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports, at its top or inside a function (a lazy import still ties)."""
    package = name if path.name == "/__init__.py" else name.rpartition(".")[0]
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
    """The family of a module under ``families/`` (:data:`FAMILIES`), None for the family table and the rest."""
    local = name[len(PACKAGE) + 1:]
    return next((f for f in FAMILIES if local == f"families.{f}" or local.startswith(f"families.{f}.")), None)


def _apart(name: str, target: str) -> bool:
    """Whether ``name`` importing ``target`` crosses from one family into another: allowed are its own family, the
    ranking's shared modules from one of its rooms, and the borrowings of :data:`BORROWED`."""
    source, other = _family(name), _family(target)
    if not source or not other or source == other or source.startswith(other + "."):
        return False
    local = name[len(PACKAGE) + 1:]
    borrowers = BORROWED.get(target[len(PACKAGE) + 1:], ())
    return not any(local == b or local.startswith(b + ".") for b in borrowers)


def _folder(name: str) -> str:
    """A module's folder under the package, the node of the folders' graph (a module at the package's root is a node
    of its own; the face is the package's name)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of a directed graph, each found once from its first node met (depth first)."""
    state, circles = {}, []

    def visit(node, trail):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                circles.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return circles


def test_the_import_graph_has_no_circle():
    circles = _circles(_graph())
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_imports_flow_down_the_layers_and_families_stay_apart():
    wrong = []
    for name, targets in sorted(_graph().items()):
        for target in sorted(targets):
            if _layer(target) > _layer(name):
                wrong.append(f"{name} (layer {_layer(name)}) imports {target} (layer {_layer(target)})")
            elif _apart(name, target):
                wrong.append(f"{name} imports another family's {target}")
    assert not wrong, "\n".join(wrong)


def test_the_folders_graph_has_no_circle_and_no_arrow_up():
    """The house drawn with folders as nodes (a folder's arrow: any of its modules importing another folder's): no
    circle, and every arrow runs down the layers (folders of one layer, such as scores/ and sampling/, may not import
    each other both ways)."""
    folders: dict[str, set[str]] = {}
    for name, targets in _graph().items():
        folders.setdefault(_folder(name), set()).update(_folder(t) for t in targets if _folder(t) != _folder(name))
    layer = {folder: _layer(PACKAGE if folder == PACKAGE else f"{PACKAGE}.{folder}") for folder in folders}
    up = [f"{a} (layer {layer[a]}) -> {b} (layer {layer[b]})" for a, targets in sorted(folders.items())
          for b in sorted(targets) if layer[b] > layer[a]]
    circles = _circles(folders)
    assert not up and not circles, "\n".join(up + ["circle: " + " -> ".join(c) for c in circles])
    assert {"vocabulary", "reads", "scores", "sampling", "shared", "families", "runs", "pipeline"} <= set(folders)


def test_the_family_check_sees_a_crossing_and_allows_the_declared_borrowings():
    """The check itself: a family importing another's module is seen; a ranking room importing the ranking's shared
    modules, and the borrowers of the correlated t-test's formula, are not."""
    f = f"{PACKAGE}.families"
    assert _apart(f"{f}.signed_rank.engine", f"{f}.hierarchical.summary")
    assert _apart(f"{f}.ranking.bbt.result", f"{f}.ranking.joint.result")
    assert _apart(f"{f}.signed_rank.engine", f"{f}.correlated_t.formula")
    assert _apart(f"{f}.ranking.common", f"{f}.ranking.bbt.result")  # the shared modules name no room
    assert not _apart(f"{f}.ranking.bbt.result", f"{f}.ranking.common")
    assert not _apart(f"{f}.hierarchical.summary", f"{f}.correlated_t.formula")
    assert not _apart(f"{f}.ranking.joint.engine", f"{f}.correlated_t.formula")
    assert not _apart(f"{f}.ranking.run", f)  # the family table


def test_the_layer_check_catches_a_lazy_import_that_runs_back_up(tmp_path):
    """The check itself: a function of the Stan layer that imports the pipeline is seen, and is an upward import."""
    stray = tmp_path / "sampler.py"
    stray.write_text("def f():\n    from ..pipeline import compare\n")
    name = f"{PACKAGE}.sampling.sampler"
    assert f"{PACKAGE}.pipeline.compare" in _imports(name, stray, _modules())
    assert _layer(f"{PACKAGE}.pipeline.compare") > _layer(name)


def _function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines of code: from its first statement after the docstring to its end."""
    body = node.body[1:] if ast.get_docstring(node) and len(node.body) > 1 else node.body
    return node.end_lineno - body[0].lineno + 1


def test_modules_and_functions_stay_short():
    """Modules of at most :data:`MAX_MODULE_LINES` lines (but the named :data:`LONG_MODULES`) and functions of at
    most :data:`MAX_FUNCTION_LINES` lines of code, in the package's Python modules."""
    long_modules, long_functions = {}, []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        local = path.relative_to(ROOT / PACKAGE).as_posix()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules[local] = len(text.splitlines())
        long_functions += [f"{local}: {node.name} ({_function_lines(node)} lines)" for node in ast.walk(ast.parse(text))
                           if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and _function_lines(node) > MAX_FUNCTION_LINES]
    unlisted = {m: n for m, n in long_modules.items() if m not in LONG_MODULES}
    stale = sorted(set(LONG_MODULES) - set(long_modules))
    assert not unlisted and not stale and not long_functions, (
        f"modules over {MAX_MODULE_LINES} lines: {unlisted}; listed as long but no longer: {stale}; "
        f"functions over {MAX_FUNCTION_LINES} lines of code: {long_functions}")


def test_the_size_check_sees_a_long_function(tmp_path):
    """The check itself: a function of 61 lines of code, its docstring not counted, is long; one of 60 is not."""
    body = "    x = 0\n" * 60
    tree = ast.parse(f'def f():\n    """Doc.\n\n    More.\n    """\n{body}    return x\n')
    assert _function_lines(tree.body[0]) == MAX_FUNCTION_LINES + 1
    assert _function_lines(ast.parse(f"def g():\n{body}").body[0]) == MAX_FUNCTION_LINES


def _imported(tree: ast.AST) -> set[str]:
    """The top-level names of the modules a file imports (absolute imports)."""
    nodes = list(ast.walk(tree))
    names = {alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names}
    return names | {node.module.split(".")[0] for node in nodes
                    if isinstance(node, ast.ImportFrom) and node.module and not node.level}


def _edits_sys_path(tree: ast.AST) -> bool:
    """Whether a file calls ``sys.path.insert``, ``append`` or ``extend``."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in ("insert", "append", "extend") and ast.unparse(node.func.value) == "sys.path"
               for node in ast.walk(tree))


def test_tests_benchmarks_and_examples_import_the_package_not_each_other():
    """``tests/``, ``benchmarks/`` and ``examples/`` import the package and their own files, never a file of another
    (what they share lives in the package, e.g. :mod:`mlflow_bayescompare.simulation`), and put no folder on
    ``sys.path``."""
    files = {d: sorted((ROOT / d).rglob("*.py")) for d in BESIDE}
    stems = {d: {p.stem for p in paths} for d, paths in files.items()}
    wrong = []
    for folder, paths in files.items():
        foreign = set().union(*(stems[d] for d in BESIDE if d != folder)) - stems[folder]
        for path in paths:
            tree, local = ast.parse(path.read_text(encoding="utf-8")), path.relative_to(ROOT).as_posix()
            wrong += [f"{local} imports {name} of another folder" for name in sorted(_imported(tree) & foreign)]
            if _edits_sys_path(tree):
                wrong.append(f"{local} puts a folder on sys.path")
    assert not wrong, "\n".join(wrong)


def test_no_test_skips_silently_on_a_missing_module():
    """A test that needs an optional module asks for it through ``servers.require_module`` (it fails under
    ``MLFLOW_BAYESCOMPARE_REQUIRE_SERVICES=1``), never ``pytest.importorskip``, which would skip in CI unseen."""
    calls = [f"{path.relative_to(ROOT).as_posix()}:{node.lineno}" for path in sorted((ROOT / "tests").rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("importorskip")]
    assert not calls, f"pytest.importorskip: {calls}"


def test_the_repository_holds_no_symlink():
    links = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_symlink() and ".git" not in p.parts]
    assert not links, f"symlinks break on Windows clones: {links}"


def test_an_editable_install_finds_every_stan_program():
    from mlflow_bayescompare.sampling import programs

    assert programs.STAN_DIR == ROOT / "stan"
    assert {p.name for p in programs.PROGRAMS.values()} == {p.name for p in (ROOT / "stan").glob("*.stan")}
    assert all(p.is_file() for p in programs.PROGRAMS.values())


def test_every_package_folder_is_in_the_wheel():
    """``pyproject.toml`` lists the packages by hand (the Stan programs' folder is mapped in as one): a folder missing
    from the list would be missing from every non-editable install, which no editable run would notice."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # tomllib is Python 3.11+; the list is plain
    listed = set(re.findall(r'"([\w.]+)"', text[text.index("\npackages = ["):].split("]", 1)[0]))
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / PACKAGE).rglob("__init__.py")}
    assert folders - listed == set(), f"add to pyproject.toml's packages: {sorted(folders - listed)}"
    assert listed - folders == {f"{PACKAGE}.stan"}, f"not package folders: {sorted(listed - folders)}"


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
