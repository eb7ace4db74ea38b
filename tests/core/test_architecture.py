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
- artifact names are declared in one module, and every lazy package export resolves.

The AST tools live in ``tests/support/architecture.py``; one-file extensions and the local
engine are checked in ``test_extensions.py``, the empty working directory in ``test_empty_cwd.py``.
"""

from __future__ import annotations

import ast
import importlib

import pytest

from tests.support import architecture
from tests.support.architecture import (
    MAX_FUNCTION_LINES,
    PACKAGE,
    ROOT,
    describe,
    describe_pair,
    folder_loops,
    import_graph,
    long_functions,
    module_names,
    mutual_pairs,
    only_reexports,
    package_edges,
    string_constants,
    strongly_connected,
    top_level_definitions,
)


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
    monkeypatch.setattr(architecture, "PACKAGE", pkg)  # the folder the graph reads
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
    monkeypatch.setattr(architecture, "PACKAGE", pkg)  # the folder the graph reads
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
        found += [f"{name}:{line}: {text!r}" for line, text in string_constants(tree) if text in spelled]
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
