"""Scope analysis of Java sources: local variables, parameters, lambdas and patterns.

Fields, constants, method and type names, labels and imports are blocked; see
:mod:`mlflow_metacompress.transforms._scope_resolution` for the renaming rules (NatGen,
Chakraborty et al., FSE 2022; CODA, Tian et al., ASE 2023; Rabin et al., IST 2021).
"""

from __future__ import annotations

from mlflow_metacompress.transforms._scope_resolution import SCOPES, Analysis, record, resolve
from mlflow_metacompress.transforms._tree import UNITS, Node, Source

_LAMBDA = frozenset({"lambda_expression"})
_JAVA_IMPORTS = frozenset({"import_declaration", "package_declaration"})
_JAVA_SKIP_FIELDS = {
    ("method_invocation", "name"),
    ("field_access", "field"),
    ("method_declaration", "name"),
    ("constructor_declaration", "name"),
    ("class_declaration", "name"),
    ("interface_declaration", "name"),
    ("enum_declaration", "name"),
    ("record_declaration", "name"),
    ("annotation_type_declaration", "name"),
    ("annotation", "name"),
    ("marker_annotation", "name"),
    ("enum_constant", "name"),
    ("element_value_pair", "key"),
    ("compact_constructor_declaration", "name"),
}
_JAVA_SKIP_PARENTS = {
    "labeled_statement",
    "break_statement",
    "continue_statement",
    "scoped_identifier",
    "package_declaration",
    "import_declaration",
    "type_parameter",
    "annotation_type_element_declaration",
}


def _java_declaration(src: Source, node: Node) -> Node | None:
    """The scope node that a declaring identifier declares into, else None."""
    parent = node.parent
    if parent is None:
        return None
    ptype = parent.type
    if ptype == "variable_declarator" and node.field == "name":
        holder = parent.parent
        if holder is not None and holder.type in ("local_variable_declaration", "spread_parameter"):
            return src.enclosing(node, SCOPES["java"])
        return None
    if (
        ptype in ("formal_parameter", "catch_formal_parameter", "enhanced_for_statement", "resource")
        and node.field == "name"
    ):
        return src.enclosing(node, SCOPES["java"])
    if ptype == "inferred_parameters" or (ptype == "lambda_expression" and node.field == "parameters"):
        return src.enclosing(node, _LAMBDA)
    if ptype in ("instanceof_expression", "type_pattern", "record_pattern_component") and node.field in ("name", None):
        return src.enclosing(node, UNITS["java"])
    return None


def java_analyse(src: Source, out: Analysis) -> None:
    for node in src.nodes("variable_declarator"):
        holder = node.parent
        name_node = node.child("name")
        if (
            name_node is not None
            and holder is not None
            and holder.type in ("field_declaration", "constant_declaration")
        ):
            out.blocked.add(src.text(name_node))
    decls: dict[str, dict[int, Node]] = {}
    for node in src.nodes("identifier"):
        parent = node.parent
        name = src.text(node)
        if parent is None:
            continue
        if (parent.type, node.field) in _JAVA_SKIP_FIELDS or parent.type in _JAVA_SKIP_PARENTS:
            continue
        if parent.type == "method_reference" and parent.children and parent.children[0] is not node:
            continue
        if src.enclosing(node, _JAVA_IMPORTS) is not None:
            continue
        scope = _java_declaration(src, node)
        if scope is not None:
            decls.setdefault(name, {})[id(scope)] = scope
            out.declared.add(name)
        record(out, name, node)
    resolve(src, out, decls, SCOPES["java"])
