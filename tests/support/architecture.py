"""The AST tools of the architecture rules (``tests/core/test_architecture.py``): the
package's import graph (imports inside functions and under ``TYPE_CHECKING`` counted), its
strongly connected parts, the joints between top-level packages and between folders, re-export
shims, function lengths, top-level definitions and string constants. ``PACKAGE`` is the folder
read; a test may point it at a planted package."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mlflow_metacompress

PACKAGE = Path(mlflow_metacompress.__file__).resolve().parent
ROOT = PACKAGE.name


def module_names() -> dict[str, Path]:
    """``{dotted name: file}`` of every module (a package is its ``__init__.py``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = (ROOT, *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_in(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth: inside functions and ``if TYPE_CHECKING:`` too."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def ancestors(name: str) -> set[str]:
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
        enclosing = ancestors(name) | ({name} if is_pkg else set())

        def add(target: str, line: int, name: str = name) -> None:
            if target in modules and target != name:
                graph[name].setdefault(target, []).append(line)

        def add_with_parents(target: str, line: int, enclosing: set[str] = enclosing) -> None:
            add(target, line)
            for parent in ancestors(target):
                if parent not in enclosing:
                    add(parent, line)

        for node in imports_in(ast.parse(path.read_text(encoding="utf-8"), str(path))):
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


def top_level_definitions(kind: type) -> dict[str, list[str]]:
    """Each public top-level name of ``kind`` (``ast.ClassDef``, ``ast.FunctionDef``) to the modules defining it."""
    found: dict[str, list[str]] = {}
    for name, path in sorted(module_names().items()):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, kind) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(name)
    return found


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


def string_constants(tree: ast.AST) -> Iterator[tuple[int, str]]:
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
