"""Scope analysis of C sources: declarations, parameters, function names and macros.

Names used in a preprocessor line and the names of functions are blocked; see
:mod:`mlflow_metacompress.transforms._scope_resolution` for the renaming rules (NatGen,
Chakraborty et al., FSE 2022; CODA, Tian et al., ASE 2023; Rabin et al., IST 2021).
"""

from __future__ import annotations

import re

from mlflow_metacompress.transforms._scope_resolution import FUNCTION, SCOPES, Analysis, record, resolve
from mlflow_metacompress.transforms._tree import Node, Source

_WORD = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*")
_FUNCTION_DECLARATOR = frozenset({"function_declarator"})
_C_DECLARATOR_WRAPPERS = {
    "init_declarator",
    "pointer_declarator",
    "array_declarator",
    "parenthesized_declarator",
    "attributed_declarator",
}


def _is_c_function_name(node: Node) -> bool:
    """True for the declared name of a function (definition or prototype)."""
    child, parent = node, node.parent
    while parent is not None and parent.type in _C_DECLARATOR_WRAPPERS - {
        "pointer_declarator",
        "parenthesized_declarator",
    }:
        child, parent = parent, parent.parent
    return parent is not None and parent.type == "function_declarator" and child.field == "declarator"


def _c_declaration(src: Source, node: Node) -> tuple[str, Node | None] | None:
    """Classify an identifier as ('decl'|'param'|'ignore', scope) or None if a plain use."""
    parent = node.parent
    if parent is None:
        return None
    if parent.type == "parameter_list":  # K&R parameter names
        return ("param", src.enclosing(node, FUNCTION))
    if node.field != "declarator":
        return None
    child: Node = node
    cur: Node | None = parent
    while cur is not None and cur.type in _C_DECLARATOR_WRAPPERS | {"function_declarator"}:
        if cur.type == "function_declarator" and child is node:
            return None
        child, cur = cur, cur.parent
        if child.field != "declarator" and not (cur is not None and cur.type == "parenthesized_declarator"):
            return None
    if cur is None:
        return None
    if cur.type == "declaration":
        return ("decl", src.enclosing(node, SCOPES["c"]))
    if cur.type == "parameter_declaration":
        fdecl = src.enclosing(node, _FUNCTION_DECLARATOR)
        if fdecl is not None and fdecl.parent is not None and fdecl.parent.type == "function_definition":
            return ("param", fdecl.parent)
        return ("ignore", None)
    return None


def macro_names(src: Source) -> set[str]:
    """Every word inside a C preprocessor line (empty for Java and Python), once per sample.

    Kept apart from :func:`analyse` so that a transformation that only needs the names in
    use (fresh-name generation) does not pay for the whole scope analysis.
    """
    names = src.cache.get("macros")
    if names is None:
        names = set()
        if src.language == "c":
            for node in src.nodes(
                "preproc_def",
                "preproc_function_def",
                "preproc_call",
                "preproc_if",
                "preproc_ifdef",
                "preproc_elif",
                "preproc_include",
            ):
                for tok in _WORD.findall(src.data[node.start : node.end]):
                    names.add(tok.decode())
        src.cache["macros"] = names
    return names


def c_analyse(src: Source, out: Analysis) -> None:
    out.macros = set(macro_names(src))
    out.blocked |= out.macros
    decls: dict[str, dict[int, Node]] = {}
    for node in src.nodes("identifier"):
        name = src.text(node)
        if _is_c_function_name(node):
            out.blocked.add(name)
            continue
        kind = _c_declaration(src, node)
        if kind is not None and kind[0] == "ignore":
            continue
        if kind is not None and kind[1] is not None:
            decls.setdefault(name, {})[id(kind[1])] = kind[1]
            out.declared.add(name)
        record(out, name, node)
    resolve(src, out, decls, SCOPES["c"])
