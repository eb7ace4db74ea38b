"""Scope analysis of Python sources: assignment, loop, pattern and walrus targets.

Parameters, class attributes, globals, imports and every name of a unit that calls
``locals``/``eval``/... are blocked; see
:mod:`mlflow_metacompress.transforms._scope_resolution` for the renaming rules (NatGen,
Chakraborty et al., FSE 2022; CODA, Tian et al., ASE 2023; Rabin et al., IST 2021).
"""

from __future__ import annotations

from mlflow_metacompress.transforms._scope_resolution import FUNCTION, SCOPES, Analysis, record, resolve
from mlflow_metacompress.transforms._tree import Node, Source

_PY_WALRUS_SCOPES = frozenset({"function_definition", "lambda", "class_definition"})
_PY_SKIP_FIELDS = {
    ("attribute", "attribute"),
    ("keyword_argument", "name"),
    ("function_definition", "name"),
    ("class_definition", "name"),
}
_PY_DYNAMIC = {b"locals", b"vars", b"eval", b"exec", b"dir", b"globals"}


_PY_TARGET_GROUPS = frozenset(
    {
        "pattern_list",
        "tuple_pattern",
        "list_pattern",
        "tuple",
        "list",
        "parenthesized_expression",
        "list_splat_pattern",
        "as_pattern_target",
        "expression_list",
    }
)


def _py_targets(node: Node | None) -> list[Node]:
    """Identifiers bound by an assignment target, in order (iterative: any nesting depth)."""
    out: list[Node] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur is None:
            continue
        if cur.type == "identifier":
            out.append(cur)
        elif cur.type in _PY_TARGET_GROUPS:
            stack.extend(reversed(cur.named_children))
    return out


def _py_param_names(params: Node) -> list[Node]:
    out = []
    for ch in params.named_children:
        if ch.type == "identifier":
            out.append(ch)
        elif ch.type in ("default_parameter", "typed_default_parameter"):
            out.extend(n for n in [ch.child("name")] if n is not None and n.type == "identifier")
        elif ch.type in ("typed_parameter", "list_splat_pattern", "dictionary_splat_pattern"):
            out.extend(n for n in ch.named_children[:1] if n.type == "identifier")
            out.extend(
                n
                for n in ch.named_children[:1]
                if n.type in ("list_splat_pattern", "dictionary_splat_pattern")
                for n in n.named_children
                if n.type == "identifier"
            )
    return out


def py_analyse(src: Source, out: Analysis) -> None:
    scopes = SCOPES["python"]
    decls: dict[str, dict[int, Node]] = {}

    def declare(ident: Node, scope: Node | None) -> None:
        if scope is None:
            return
        name = src.text(ident)
        if scope.type == "class_definition":
            out.blocked.add(name)
        decls.setdefault(name, {})[id(scope)] = scope
        out.declared.add(name)

    for p in src.nodes("parameters", "lambda_parameters"):
        for ident in _py_param_names(p):
            out.params.add(src.text(ident))
            out.blocked.add(src.text(ident))
    for node in src.nodes("assignment", "augmented_assignment"):
        for ident in _py_targets(node.child("left")):
            declare(ident, src.enclosing(node, scopes))
    for node in src.nodes("for_statement", "for_in_clause"):
        for ident in _py_targets(node.child("left")):
            declare(ident, src.enclosing(node, scopes))
    for node in src.nodes("as_pattern"):
        for ident in _py_targets(node.child("alias")):
            declare(ident, src.enclosing(node, scopes))
    for node in src.nodes("named_expression"):
        name = node.child("name")
        if name is not None:
            declare(name, src.enclosing(node, _PY_WALRUS_SCOPES))
    for node in src.nodes(
        "global_statement",
        "nonlocal_statement",
        "import_statement",
        "import_from_statement",
        "future_import_statement",
        "case_pattern",
        "function_definition",
        "class_definition",
    ):
        idents = (
            [node.child("name")]
            if node.type in ("function_definition", "class_definition")
            else [n for n in node.walk() if n.type == "identifier"]
        )
        for named in idents:
            if named is not None:
                out.blocked.add(src.text(named))
    for node in src.nodes("interpolation"):
        if any(ch.type == "=" for ch in node.children):
            out.blocked.update(src.text(n) for n in node.walk() if n.type == "identifier")
    dynamic_units: set[int] = set()
    for call in src.nodes("call"):
        fn = call.child("function")
        if fn is not None and fn.type == "identifier" and src.data[fn.start : fn.end] in _PY_DYNAMIC:
            unit = src.enclosing(call, FUNCTION) or src.root
            if id(unit) not in dynamic_units:  # walk each unit once, however many calls it has
                dynamic_units.add(id(unit))
                out.blocked.update(src.text(n) for n in unit.walk() if n.type == "identifier")
    for node in src.nodes("identifier"):
        parent = node.parent
        if parent is None or (parent.type, node.field) in _PY_SKIP_FIELDS:
            continue
        if parent.type == "dotted_name":
            continue
        record(out, src.text(node), node)
    resolve(src, out, decls, scopes - {"class_definition"})
