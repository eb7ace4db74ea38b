"""The package's architecture rules (issues 11 and 24):

- no import cycles between modules of ``mlflow_metacompress``, counting imports inside
  functions and under ``if TYPE_CHECKING:`` (a loop a type checker must untangle is a loop
  a reader must untangle too; issue 34), checked on an AST import graph;
- no module only re-exports another (the shims of moved modules are gone; issue 34);
- no function or method is longer than 80 lines, counted whole (issue 34; :func:`function_lines`);
- one meaning per name: a class name, and ``parse_config``, are defined once (issue 34);
- no two top-level packages (or top-level modules such as ``cli.py``) import each other:
  every joint between them points one way, on the same graph;
- no loop between folders (sub-packages, e.g. ``distill`` and ``distill/search``; issue 45):
  imports between folders point one way, on the same graph;
- a local evaluation never imports a Spark module (the engine is chosen once);
- extensions are one file: a copy of an attack recipe or of a transformation saved
  under a new module name, with its name string changed, is discovered and runs;
- commands leave the working directory empty (caches and runs go elsewhere).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mlflow_metacompress

PACKAGE = Path(mlflow_metacompress.__file__).resolve().parent
ROOT = PACKAGE.name


# --------------------------------------------------------------------------- import graph


def module_names() -> dict[str, Path]:
    """``{dotted name: file}`` of every module (a package is its ``__init__.py``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = (ROOT, *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth: inside functions and ``if TYPE_CHECKING:`` too."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def _ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def import_graph() -> dict[str, dict[str, list[int]]]:
    """``{importer: {imported: [line, ...]}}`` over the package's modules.

    ``from X import y`` is an edge to submodule ``X.y`` when it exists, and to ``X`` (its
    ``__init__`` runs) unless ``X`` is a package enclosing the importer and ``y`` is a
    submodule (``from . import y``). Importing ``a.b.c`` also runs the ``__init__`` of
    ``a.b``: an edge unless ``a.b`` encloses the importer (Python initialises it first).
    """
    modules = module_names()
    graph: dict[str, dict[str, list[int]]] = {m: {} for m in modules}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        package = name if is_pkg else name.rpartition(".")[0]
        enclosing = _ancestors(name) | ({name} if is_pkg else set())

        def add(target: str, line: int, name: str = name) -> None:
            if target in modules and target != name:
                graph[name].setdefault(target, []).append(line)

        def add_with_parents(target: str, line: int, enclosing: set[str] = enclosing) -> None:
            add(target, line)
            for parent in _ancestors(target):
                if parent not in enclosing:
                    add(parent, line)

        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add_with_parents(alias.name, node.lineno)
                continue
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith(ROOT):
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in modules:  # from X import submodule: X's __init__ runs unless X encloses us
                    add_with_parents(sub, node.lineno)
                else:  # a name defined in X (for a package: in its __init__)
                    add_with_parents(source, node.lineno)
                    add(source, node.lineno)
    return graph


def strongly_connected(graph: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def describe(component: list[str], graph: dict[str, dict[str, list[int]]]) -> str:
    members = set(component)
    edges = [
        f"    {a} -> {b} (line {', '.join(map(str, sorted(set(lines))))})"
        for a in component
        for b, lines in sorted(graph[a].items())
        if b in members
    ]
    return "  cycle among " + ", ".join(component) + ":\n" + "\n".join(edges)


@pytest.mark.slow
def test_import_graph_sees_relative_function_level_and_package_edges():
    graph = import_graph()
    # function-level relative import: the attack CLI reads tables lazily
    assert "mlflow_metacompress.data.tables" in graph["mlflow_metacompress.attacks.cli"]
    # an import under `if TYPE_CHECKING:` is an edge too (the loop imports the config's type there)
    assert "mlflow_metacompress.evaluation.config_model" in graph["mlflow_metacompress.evaluation.loop"]
    # a package __init__ re-exporting its submodules
    assert "mlflow_metacompress.attacks.results" in graph["mlflow_metacompress.attacks"]
    # importing a name from another package runs its __init__
    assert (
        "mlflow_metacompress.data" in graph["mlflow_metacompress.data.tables"]
        or "mlflow_metacompress.data.codexglue" in graph["mlflow_metacompress.data.tables"]
    )
    assert strongly_connected({"a": {"b": [1]}, "b": {"a": [2]}, "c": {"a": [3]}}) == [["a", "b"], ["c"]]


def test_a_type_checking_loop_is_found_and_named(tmp_path, monkeypatch):
    """Two modules importing each other only under TYPE_CHECKING and inside a function: the
    cycle test's graph sees the loop and names both files' lines."""
    pkg = tmp_path / ROOT
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    graph = import_graph()
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    assert cycles == [[f"{ROOT}.a", f"{ROOT}.b"]]
    text = describe(cycles[0], graph)
    assert f"{ROOT}.a -> {ROOT}.b (line 3)" in text and f"{ROOT}.b -> {ROOT}.a (line 2)" in text


@pytest.mark.slow
def test_no_import_cycles_between_modules():
    graph = import_graph()
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    assert not cycles, "import cycles (function-level and TYPE_CHECKING imports included):\n" + "\n".join(
        describe(c, graph) for c in cycles
    )


# --------------------------------------------------------------------------- re-export shims


def only_reexports(source: str) -> bool:
    """True when a module's code is nothing but imports, ``__all__`` and its docstring: a
    shim that keeps an old import path working."""
    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    imports = [n for n in body if isinstance(n, ast.ImportFrom) and n.module != "__future__"]
    rest = [
        n
        for n in body
        if not isinstance(n, (ast.Import, ast.ImportFrom))
        and not (isinstance(n, (ast.Assign, ast.AnnAssign)) and "__all__" in ast.unparse(n).split("=")[0])
    ]
    return bool(imports) and not rest


def test_the_shim_detector_tells_a_shim_from_a_module():
    assert only_reexports(
        '"""Moved."""\nfrom __future__ import annotations\nfrom .x import a, b\n__all__ = ["a", "b"]\n'
    )
    assert not only_reexports("from .x import a\n\ndef f():\n    return a\n")
    assert not only_reexports('"""Empty package."""\n')


@pytest.mark.slow
def test_no_module_only_reexports_another():
    """Packages' ``__init__`` files gather their public names and are allowed to; any other
    module that only imports and re-exports is a leftover shim: import from the real home."""
    shims = [
        name
        for name, path in module_names().items()
        if path.name != "__init__.py" and only_reexports(path.read_text(encoding="utf-8"))
    ]
    assert not shims, f"modules that only re-export another (import from the real home instead): {shims}"


# --------------------------------------------------------------------------- joints between packages


def top_level(module: str) -> str | None:
    """The top-level package or module of ``module`` (``attacks`` for
    ``mlflow_metacompress.attacks.runner``, ``cli`` for ``mlflow_metacompress.cli``); None
    for the root package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def package_edges(graph: dict[str, dict[str, list[int]]]) -> dict[tuple[str, str], dict[tuple[str, int], str]]:
    """``{(importer's top level, imported top level): {(importing module, line): imported module}}``
    for every edge of ``graph`` that crosses from one top-level package or module to another
    (the most specific imported module per importing line)."""
    out: dict[tuple[str, str], dict[tuple[str, int], str]] = {}
    for importer, targets in graph.items():
        for target, lines in targets.items():
            a, b = top_level(importer), top_level(target)
            if a is None or b is None or a == b:
                continue
            found = out.setdefault((a, b), {})
            for line in set(lines):
                known = found.get((importer, line))
                if known is None or len(target) > len(known):
                    found[(importer, line)] = target
    return out


def mutual_pairs(edges: dict[tuple[str, str], dict[tuple[str, int], str]]) -> list[tuple[str, str]]:
    """The pairs of top-level packages that import each other, each sorted, in order."""
    return sorted({tuple(sorted(pair)) for pair in edges if (pair[1], pair[0]) in edges})  # type: ignore[misc]


# --------------------------------------------------------------------------- function length

MAX_FUNCTION_LINES = 80


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's length counted the plain way (issue 34: "no function over 80 lines"):
    from its first decorator (else its ``def`` line) to its last line, signature,
    docstring, blank lines and comments included. A nested function counts towards its
    enclosing function and is also measured on its own."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    assert node.end_lineno is not None
    return node.end_lineno - start + 1


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function or method under ``root`` whose
    :func:`function_lines` exceed ``limit``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (n := function_lines(node)) > limit:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_the_function_length_rule_counts_decorators_signature_and_docstring(tmp_path):
    def docstring(n: int, indent: int) -> str:
        pad = " " * indent
        return pad + '"""' + f"\n{pad}".join(["A long docstring."] * n) + '"""\n'

    def statements(n: int, indent: int) -> str:
        return "".join(f"{' ' * indent}x{i} = {i}\n" for i in range(n))

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        f"def fits(\n    a,\n    b,\n):\n{docstring(2, 4)}{statements(74, 4)}"  # 4 + 2 + 74 = 80
        f"def signed(\n    a,\n    b,\n):\n{statements(77, 4)}"  # the signature counts: 81
        f"@decorator\n@other(\n    1,\n)\ndef decorated():\n{statements(76, 4)}"  # decorators count: 81
        f"class C:\n    def method(self):\n{docstring(30, 8)}{statements(50, 8)}"  # the docstring counts: 81
        f"def outer():\n    def inner():\n{statements(80, 8)}    return inner\n"  # 81 and 83
    )
    found = long_functions(pkg)
    assert sorted(f.split(" ", 1)[1] for f in found) == [
        "decorated (81 lines)",
        "inner (81 lines)",
        "method (81 lines)",
        "outer (83 lines)",
        "signed (81 lines)",
    ]
    assert all(f.startswith("pkg/m.py:") for f in found)


@pytest.mark.slow
def test_no_function_is_longer_than_80_lines():
    """Issue 34: a function a reader can hold; split a longer one into named steps."""
    found = long_functions(PACKAGE)
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines (see function_lines):\n" + "\n".join(found)


# --------------------------------------------------------------------------- one meaning per name


def top_level_definitions(kind: type) -> dict[str, list[str]]:
    """Each public top-level name of ``kind`` (``ast.ClassDef``, ``ast.FunctionDef``) to the modules defining it."""
    found: dict[str, list[str]] = {}
    for name, path in sorted(module_names().items()):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, kind) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(name)
    return found


@pytest.mark.slow
def test_one_meaning_per_class_name():
    """Issue 34: ``Outcome`` meant an attack's result and an evaluation's; a class name is
    defined once. The exception is each method's ``Options`` (the method protocol of
    :mod:`mlflow_metacompress.distill.discovery` reads ``module.Options``)."""
    shared = {k: v for k, v in top_level_definitions(ast.ClassDef).items() if len(v) > 1 and k != "Options"}
    assert not shared, f"class names defined in more than one module: {shared}"
    methods = top_level_definitions(ast.ClassDef)["Options"]
    assert all(m.startswith(f"{ROOT}.distill.methods.") for m in methods), methods


def test_parse_config_means_the_evaluator_config_only():
    """Issue 34: ``parse_config`` meant three things; it is the ``evaluator_config`` parser only."""
    assert top_level_definitions(ast.FunctionDef)["parse_config"] == [f"{ROOT}.evaluation.config"]


def describe_pair(pair: tuple[str, str], edges: dict[tuple[str, str], dict[tuple[str, int], str]]) -> str:
    """The pair and every importing line, both ways, with the line's text."""
    files = module_names()
    out = [f"  {pair[0]} <-> {pair[1]}:"]
    for a, b in (pair, pair[::-1]):
        for (importer, line), target in sorted(edges[(a, b)].items()):
            path = files[importer]
            text = path.read_text(encoding="utf-8").splitlines()[line - 1].strip()
            out.append(f"    {path.relative_to(PACKAGE.parent)}:{line} ({a} -> {b}: {target}): {text}")
    return "\n".join(out)


@pytest.mark.slow
def test_package_edges_find_mutual_pairs_and_name_the_lines():
    graph = {
        "mlflow_metacompress": {"mlflow_metacompress.cli": [1]},
        "mlflow_metacompress.cli": {"mlflow_metacompress.attacks.cli": [30]},
        "mlflow_metacompress.attacks": {},
        "mlflow_metacompress.attacks.cli": {
            "mlflow_metacompress.cli": [77],
            "mlflow_metacompress.attacks.runner": [5],
        },
        "mlflow_metacompress.attacks.runner": {
            "mlflow_metacompress.evaluation.variants": [38],
            "mlflow_metacompress.evaluation": [38],
        },
        "mlflow_metacompress.evaluation": {},
        "mlflow_metacompress.evaluation.variants": {},
    }
    edges = package_edges(graph)
    assert edges[("attacks", "evaluation")] == {
        ("mlflow_metacompress.attacks.runner", 38): "mlflow_metacompress.evaluation.variants"
    }
    assert ("attacks", "attacks") not in edges  # inside one package is no joint
    assert mutual_pairs(edges) == [("attacks", "cli")]  # the root package's own imports are no joint
    edges[("evaluation", "attacks")] = {("mlflow_metacompress.evaluation.variants", 1): "mlflow_metacompress.attacks"}
    assert mutual_pairs(edges) == [("attacks", "cli"), ("attacks", "evaluation")]
    # the real graph: a known one-way joint is seen (the evaluator's variants run the attacks)
    real = package_edges(import_graph())
    assert ("evaluation", "attacks") in real and ("evaluation", "relations") in real


@pytest.mark.slow
def test_no_two_top_level_packages_import_each_other():
    """Every joint between top-level packages and modules points one way (imports inside
    functions counted): the failure names each pair and the importing lines both ways."""
    edges = package_edges(import_graph())
    pairs = mutual_pairs(edges)
    assert not pairs, "top-level packages that import each other (function-level imports included):\n" + "\n".join(
        describe_pair(p, edges) for p in pairs
    )


# --------------------------------------------------------------------------- loops between folders


def folder(module: str, packages: set[str]) -> str:
    """The folder (sub-package) ``module`` lives in: a package is its own folder, a file
    belongs to its package's folder. The root package's own files (``cli.py``,
    ``cache.py``) are units of their own, as in :func:`top_level`, so that every
    sub-package importing ``cache`` is no loop with ``cli``."""
    if module in packages:
        return module
    parent = module.rpartition(".")[0]
    return module if parent == ROOT else parent


def folder_graph(
    graph: dict[str, dict[str, list[int]]], packages: set[str]
) -> tuple[dict[str, dict[str, list[int]]], dict[tuple[str, str], list[tuple[str, int, str]]]]:
    """The graph between folders (:func:`folder`), and for each folder edge its importing
    lines ``(importing module, line, imported module)``."""
    folders: dict[str, dict[str, list[int]]] = {}
    lines: dict[tuple[str, str], list[tuple[str, int, str]]] = {}
    for importer, targets in graph.items():
        a = folder(importer, packages)
        folders.setdefault(a, {})
        for target, at in targets.items():
            b = folder(target, packages)
            folders.setdefault(b, {})
            if a != b:
                folders[a].setdefault(b, []).extend(at)
                lines.setdefault((a, b), []).extend((importer, line, target) for line in sorted(set(at)))
    return folders, lines


def describe_folder_loop(
    component: list[str], lines: dict[tuple[str, str], list[tuple[str, int, str]]], files: dict[str, Path]
) -> str:
    """The folders of a loop and every importing line between them, with the line's text."""
    members = set(component)
    out = ["  loop among folders " + ", ".join(component) + ":"]
    for (a, b), found in sorted(lines.items()):
        if a in members and b in members:
            for importer, line, target in sorted(set(found)):
                path = files.get(importer)
                text = path.read_text(encoding="utf-8").splitlines()[line - 1].strip() if path else ""
                out.append(f"    {a} -> {b}: {importer}:{line} ({target}): {text}")
    return "\n".join(out)


def folder_loops(graph: dict[str, dict[str, list[int]]], files: dict[str, Path]) -> list[str]:
    """One description per loop between folders of ``graph`` (empty when imports between
    folders point one way)."""
    packages = {name for name, path in files.items() if path.name == "__init__.py"}
    folders, lines = folder_graph(graph, packages)
    loops = [c for c in strongly_connected(folders) if len(c) > 1]
    return [describe_folder_loop(c, lines, files) for c in loops]


def test_a_planted_loop_between_folders_is_found_and_named(tmp_path, monkeypatch):
    """A file of ``pkg`` importing ``pkg/sub`` inside a function while ``pkg/sub`` imports
    a sibling file of that file (no loop between files): the folders' loop is found and
    both importing lines are named; a root-level file is a unit of its own."""
    pkg = tmp_path / ROOT
    (pkg / "distill" / "search").mkdir(parents=True)
    for init in (pkg, pkg / "distill", pkg / "distill" / "search"):
        (init / "__init__.py").write_text("")
    (pkg / "cache.py").write_text("X = 1\n")
    (pkg / "cli.py").write_text("from .distill import context\n")
    (pkg / "distill" / "arch.py").write_text("from ..cache import X\n")
    (pkg / "distill" / "context.py").write_text("def f():\n    from .search.build import g\n    return g\n")
    (pkg / "distill" / "search" / "build.py").write_text("from ..arch import X\n\ndef g():\n    return X\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    graph, files = import_graph(), module_names()
    assert not [c for c in strongly_connected(graph) if len(c) > 1]  # no loop between files
    loops = folder_loops(graph, files)
    assert len(loops) == 1, loops
    text = loops[0]
    assert f"loop among folders {ROOT}.distill, {ROOT}.distill.search:" in text
    assert f"{ROOT}.distill.context:2 ({ROOT}.distill.search.build): from .search.build import g" in text
    assert f"{ROOT}.distill.search.build:1 ({ROOT}.distill.arch): from ..arch import X" in text
    # the fix: the function moves to the sub-folder; imports point one way
    (pkg / "distill" / "context.py").write_text("Y = 2\n")
    assert folder_loops(import_graph(), module_names()) == []


@pytest.mark.slow
def test_no_import_loops_between_folders():
    """Issue 45: imports between folders (sub-packages such as ``distill`` and
    ``distill/search``) point one way, function-level and TYPE_CHECKING imports counted;
    the failure names the folders and the importing lines."""
    loops = folder_loops(import_graph(), module_names())
    assert not loops, "import loops between folders:\n" + "\n".join(loops)


_LOCAL_EVALUATION = r"""
import json, sys

import mlflow
import numpy as np
import pandas as pd

codes = [
    "int add(int a, int b) {\n  int count = a + b;\n  return count;\n}\n",
    "int sub(int x, int y) {\n  int total = x - y;\n  for (int i = 0; i < 3; i++) total++;\n  return total;\n}\n",
] * 4
frame = pd.DataFrame({"func": codes, "target": [1, 0] * 4})  # both models right on every row


def model(df):
    p = np.array([0.85 if "count" in c else 0.15 for c in df["func"]])
    return np.stack([1 - p, p], axis=1)


with mlflow.start_run():
    result = mlflow.models.evaluate(
        model=model, data=frame, targets="target", model_type="metacompress", evaluators="metacompress",
        evaluator_config={"teacher": model, "language": "c", "transforms": ["rename_variables"],
                          "attacks": ["wir_random_zeng_2022"], "attack_budget": 5, "progress": False,
                          "bootstrap_samples": 0},
    )
local = sorted(m for m in sys.modules if m.startswith("mlflow_metacompress") and "spark" in m)
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.engines import get_engine

spark_cfg = parse_config({"teacher": "models:/t/1", "engine": "spark", "transforms": []}, frame, model_given=True)
chosen = get_engine(spark_cfg)
print(json.dumps({"metrics": sorted(result.metrics), "local": local, "chosen": chosen.name,
                  "after": sorted(m for m in sys.modules if m.startswith("mlflow_metacompress") and "spark" in m)}))
"""


@pytest.mark.slow
def test_a_local_evaluation_never_imports_a_spark_module(tracking):
    """The engine is chosen once (evaluation/engines.py): an evaluation through the real
    entry point with transformations and an attack on the local engine imports none of the
    package's Spark modules (MLflow itself imports pyspark when it is installed); choosing
    ``spark`` imports the Spark engine. A fresh interpreter, so other tests' imports do not count."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")])}
    env["MLFLOW_TRACKING_URI"] = tracking
    done = subprocess.run(
        [sys.executable, "-c", _LOCAL_EVALUATION], capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "mr1_violation_rate/rename_variables" in seen["metrics"]
    assert "attack_wir_random_zeng_2022/student_asr" in seen["metrics"]  # the attack ran
    assert seen["local"] == []
    assert seen["chosen"] == "spark" and "mlflow_metacompress.evaluation.spark_engine" in seen["after"]


# --------------------------------------------------------------------------- one-file extensions


@pytest.fixture
def copy_module(tmp_path):
    """Copy a module of the package to a new module name, replacing a quoted string, in a
    private copy of the whole package (``tmp_path/site``): other xdist workers, and the Spark
    executors they start, keep discovering the real package's recipes and transformations
    while this runs. The test then runs its checks in a subprocess on that copy
    (:func:`_run_in_copy`)."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / ROOT, ignore=shutil.ignore_patterns("__pycache__"))

    def copy(package: str, module: str, old: str, new: str) -> str:
        folder = site.joinpath(*package.split("."))
        text = (folder / f"{module}.py").read_text(encoding="utf-8")
        assert f'"{old}"' in text, f"{module}.py no longer holds the string {old!r}"
        (folder / f"{new}.py").write_text(text.replace(f'"{old}"', f'"{new}"'), encoding="utf-8")
        return new

    copy.site = site  # type: ignore[attr-defined]
    return copy


def _run_in_copy(site: Path, script: str) -> None:
    """Run ``script`` in a fresh interpreter that imports the package from ``site`` first;
    its assertion errors fail the test with the subprocess's output."""
    import subprocess
    import textwrap

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(repo)])}
    # an editable install's finder would import the checkout before PYTHONPATH: drop it
    prelude = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in getattr(f, '__module__', '')]\n"
        f"import {ROOT}\n"
        f"assert {ROOT}.__file__.startswith({str(site)!r}), {ROOT}.__file__\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        env=env,
        cwd=site,  # not the checkout, which "-c" would put first on sys.path
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _name_sensitive(df: pd.DataFrame) -> np.ndarray:
    p = np.array([0.85 if "count" in c else 0.15 for c in df[df.columns[0]]])
    return np.stack([1 - p, p], axis=1)


@pytest.mark.slow
def test_a_copied_attack_recipe_is_listed_and_runs(copy_module, tracking):
    new = copy_module(
        "mlflow_metacompress.attacks.recipes",
        "wir_random_zeng_2022",
        "wir_random_zeng_2022",
        f"wir_copy_{uuid.uuid4().hex[:8]}",
    )
    _run_in_copy(
        copy_module.site,
        f"""
        import mlflow, numpy as np, pandas as pd, pytest
        from mlflow_metacompress.attacks import ATTACKS, list_attacks, run_attack
        from tests.support.attacks import CODES, LABELS

        def name_sensitive(df):
            p = np.array([0.85 if "count" in c else 0.15 for c in df[df.columns[0]]])
            return np.stack([1 - p, p], axis=1)

        new = {new!r}
        assert new in list_attacks() and "wir_random_zeng_2022" in list_attacks()
        assert new in ATTACKS
        frame = pd.DataFrame({{"func": CODES, "target": LABELS}})
        direct = run_attack(new, name_sensitive, frame, ["func"], LABELS, "c", budget=60, progress=False)
        assert direct.attack == new and direct.metrics()["asr"] > 0
        with mlflow.start_run():
            result = mlflow.models.evaluate(
                model=name_sensitive, data=frame, targets="target",
                model_type="metacompress", evaluators="metacompress",
                evaluator_config={{"teacher": name_sensitive, "language": "c", "transforms": [],
                                   "attacks": [new], "attack_budget": 60, "progress": False}},
            )
        assert f"attack_{{new}}/student_asr" in result.metrics
        assert result.metrics[f"attack_{{new}}/student_asr"] == pytest.approx(direct.metrics()["asr"])
        """,
    )


def test_unknown_attack_names_list_the_known_ones():
    from mlflow_metacompress.attacks import ATTACKS, list_attacks
    from mlflow_metacompress.attacks.recipes import get_attack

    with pytest.raises(KeyError, match="unknown attack 'nope'.*mhm_zhang_2020"):
        get_attack("nope")
    with pytest.raises(KeyError, match="mhm_zhang_2020"):
        ATTACKS["nope"]
    assert sorted(ATTACKS) == list_attacks()


def test_a_broken_recipe_module_is_not_swallowed(copy_module):
    new = copy_module(
        "mlflow_metacompress.attacks.recipes", "mhm_zhang_2020", "mhm_zhang_2020", f"broken_{uuid.uuid4().hex[:8]}"
    )
    path = copy_module.site / ROOT / "attacks" / "recipes" / f"{new}.py"
    path.write_text(path.read_text() + "\nfrom ..search import no_such_search_strategy\n")
    _run_in_copy(
        copy_module.site,
        """
        import pytest
        from mlflow_metacompress.attacks import list_attacks
        with pytest.raises(ImportError, match="no_such_search_strategy"):
            list_attacks()
        """,
    )


def test_a_copied_transformation_is_listed_and_applies(copy_module):
    """Owned by the transforms package's discovery: a copy of swap_operands under a new name."""
    new = copy_module(
        "mlflow_metacompress.transforms", "swap_operands", "swap_operands", f"swap_copy_{uuid.uuid4().hex[:8]}"
    )
    _run_in_copy(
        copy_module.site,
        f"""
        from mlflow_metacompress.transforms import apply_transform, list_transforms
        new = {new!r}
        assert new in list_transforms("c")
        code = "int f(int a, int b) {{\\n  if (a < b) return 1;\\n  return 0;\\n}}\\n"
        original = apply_transform(code, "swap_operands", "c")
        assert "b > a" in original
        assert apply_transform(code, new, "c") == original
        """,
    )


# --------------------------------------------------------------------------- an empty working directory


@pytest.fixture
def empty_cwd(tmp_path, monkeypatch, _migrated_db):
    """An empty working directory; tracking store, artifacts and caches live elsewhere."""
    import mlflow

    work, store = tmp_path / "work", tmp_path / "store"
    work.mkdir()
    store.mkdir()
    shutil.copy(_migrated_db, store / "mlflow.db")
    uri = f"sqlite:///{store}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_METACOMPRESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("METACOMPRESS_CACHE_DIR", str(tmp_path / "cache"))
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    from mlflow import MlflowClient

    client = MlflowClient(uri, uri)
    experiment = client.create_experiment("empty-cwd", artifact_location=(store / "artifacts").as_uri())
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment)
    monkeypatch.chdir(work)
    yield work, store, uri
    if mlflow.active_run():
        mlflow.end_run()
    mlflow.set_tracking_uri(None)
    mlflow.set_registry_uri(None)


@pytest.fixture
def logged_models(empty_cwd, tiny_classifiers):
    """Teacher and student logged as MLflow models (artifacts under the store, not the cwd)."""
    import mlflow

    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, student = tiny_classifiers
    uris = {}
    for role, model in (("teacher", teacher), ("student", student)):
        with mlflow.start_run(experiment_id=os.environ["MLFLOW_EXPERIMENT_ID"]):
            uris[role] = log_code_classifier(model, tok, code_columns=["func"]).model_uri
    return uris


def _write_data(path: Path) -> None:
    from tests.conftest import toy_frame

    df = toy_frame(8, seed=3)
    path.write_text("".join(json.dumps(r) + "\n" for r in df.to_dict("records")))


@pytest.mark.slow
def test_evaluate_with_models_leaves_an_empty_cwd_empty(empty_cwd, logged_models, tmp_path, capsys):
    from mlflow_metacompress.cli import main

    work, _, uri = empty_cwd
    data = tmp_path / "data.jsonl"
    _write_data(data)
    code = main(
        [
            "--tracking-uri",
            uri,
            "evaluate",
            "--student",
            logged_models["student"],
            "--teacher",
            logged_models["teacher"],
            "--data",
            str(data),
            "--targets",
            "target",
            "--evaluator-config",
            json.dumps({"language": "c", "transforms": ["swap_operands"], "progress": False}),
        ]
    )
    assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "mr1_violation_rate/metamorphic" in out and "run_id:" in out
    assert sorted(os.listdir(work)) == []


@pytest.mark.slow
def test_attack_cli_leaves_an_empty_cwd_empty(empty_cwd, logged_models, tmp_path, capsys):
    from mlflow_metacompress.cli import main

    work, _, uri = empty_cwd
    data = tmp_path / "data.jsonl"
    _write_data(data)
    code = main(
        [
            "--tracking-uri",
            uri,
            "attack",
            "--model",
            logged_models["student"],
            "--data",
            str(data),
            "--attack",
            "wir_random_zeng_2022",
            "--budget",
            "5",
            "--language",
            "c",
            "--limit",
            "3",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "Attack success rate" in capsys.readouterr().out
    assert sorted(os.listdir(work)) == []


@pytest.mark.slow
def test_distill_student_leaves_an_empty_cwd_empty(empty_cwd, tiny_classifiers, tmp_path, capsys):
    """``metacompress distill student`` against a tiny registered teacher, no ``--cache-dir``:
    soft labels go to MLFLOW_METACOMPRESS_CACHE, nothing to the working directory."""
    import mlflow

    from mlflow_metacompress.cli import main
    from mlflow_metacompress.models.pyfunc import log_code_classifier
    from tests.conftest import toy_frame

    work, _, uri = empty_cwd
    tok, teacher, _ = tiny_classifiers
    with mlflow.start_run(experiment_id=os.environ["MLFLOW_EXPERIMENT_ID"]):
        log_code_classifier(teacher, tok, registered_model_name="empty-cwd-teacher", code_columns=["func"])
    folder = tmp_path / "data" / "devign"
    folder.mkdir(parents=True)
    for split, n, seed in (("train", 24, 0), ("valid", 8, 1), ("test", 8, 2)):
        toy_frame(n, seed).assign(idx=range(n), project="toy").to_json(
            folder / f"{split}.jsonl", orient="records", lines=True
        )
    code = main(
        [
            "--tracking-uri",
            uri,
            "distill",
            "student",
            "--method",
            "compressor",
            "--data-dir",
            str(tmp_path / "data"),
            "--teacher",
            "models:/empty-cwd-teacher/1",
            "--size-mb",
            "0.1",
            "--population",
            "4",
            "--generations",
            "2",
            "--epochs",
            "1",
            "--batch-size",
            "8",
            "--max-length",
            "64",
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert sorted(os.listdir(work)) == []


# --------------------------------------------------------------------------- artifact names


def _string_constants(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every string constant that is not a docstring, with its line."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_artifact_names_are_declared_in_one_module():
    """The evaluator, the report, the gates and the study read every artifact name from
    ``artifact_names``: no other module spells one out (help texts and messages aside, which
    name them in prose)."""
    from mlflow_metacompress import artifact_names as names

    spelled = {
        names.SUMMARY,
        names.PER_SAMPLE,
        names.WORST_DISCREPANCIES,
        *names.PLOTS,
        names.PROVENANCE,
        names.SUMMARY_PATH,
        names.PER_SAMPLE_PATH,
        f"{names.ARTIFACT_DIR}/",
        f"{names.ATTACK_TABLES}/",
        names.COMPARISON_CSV,
        names.COMPARISON_MD,
    }
    found = []
    for name, path in module_names().items():
        if name == f"{ROOT}.artifact_names":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{name}:{line}: {text!r}" for line, text in _string_constants(tree) if text in spelled]
    assert not found, "artifact names spelled outside mlflow_metacompress.artifact_names:\n" + "\n".join(found)
    assert (names.ARTIFACT_DIR, names.SUMMARY_PATH, names.PER_SAMPLE_PATH) == (
        "metacompress",
        "metacompress/summary.json",
        "metacompress/per_sample.parquet",
    )  # public interface: the names never change


def test_every_lazy_package_export_resolves_at_its_home():
    """Each name a package exports lazily (``_EXPORTS``) imports, from the module that defines
    it: a moved or renamed module (issue 34: engine → loop) cannot leave a dangling export."""
    for name, path in module_names().items():
        if path.name != "__init__.py" or "_EXPORTS" not in path.read_text(encoding="utf-8"):
            continue
        package = importlib.import_module(name)
        for attr, home in package._EXPORTS.items():
            value = getattr(package, attr)
            module = importlib.import_module(f".{home}", name)
            assert getattr(value, "__module__", module.__name__) == module.__name__, (name, attr, home)
