"""Scope analysis behind the single identifier renamer (C, Java, Python).

Finds, for every name, its *occurrences* in variable position and its *declarations*
with the scope node that owns them. A name is a renamable local when it is declared in
a function and every occurrence resolves to a declaration in an enclosing scope inside
a function; names that may denote globals, fields, macros, types, imports, labels or
(for Python) parameters are blocked. Renaming all occurrences of such a name to a
fresh name is then consistent. The conditions implement the identifier-renaming rules of
NatGen (Chakraborty et al., FSE 2022), CODA (Tian et al., ASE 2023) and Rabin et al.
(IST 2021), with the pitfalls measured on real programs listed in issue 3.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from mlflow_metacompress.transforms._tree import UNITS, Node, Source

_WORD = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*")

_SCOPES = {
    "c": frozenset({"compound_statement", "for_statement", "function_definition"}),
    "java": frozenset(
        {
            "block",
            "for_statement",
            "enhanced_for_statement",
            "catch_clause",
            "switch_block",
            "try_with_resources_statement",
            "lambda_expression",
            "method_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
        }
    ),
    "python": frozenset(
        {
            "function_definition",
            "lambda",
            "list_comprehension",
            "set_comprehension",
            "dictionary_comprehension",
            "generator_expression",
            "class_definition",
        }
    ),
}
_FUNCTION = frozenset({"function_definition"})
_FUNCTION_DECLARATOR = frozenset({"function_declarator"})
_LAMBDA = frozenset({"lambda_expression"})
_JAVA_IMPORTS = frozenset({"import_declaration", "package_declaration"})
_PY_WALRUS_SCOPES = frozenset({"function_definition", "lambda", "class_definition"})
_C_DECLARATOR_WRAPPERS = {
    "init_declarator",
    "pointer_declarator",
    "array_declarator",
    "parenthesized_declarator",
    "attributed_declarator",
}
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
_PY_SKIP_FIELDS = {
    ("attribute", "attribute"),
    ("keyword_argument", "name"),
    ("function_definition", "name"),
    ("class_definition", "name"),
}
_PY_DYNAMIC = {b"locals", b"vars", b"eval", b"exec", b"dir", b"globals"}


@dataclass
class Analysis:
    """Result of scope analysis: occurrences, declarations and blocked names."""

    occurrences: dict[str, list[Node]] = field(default_factory=dict)
    valid: dict[str, bool] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)
    params: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    macros: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)


class _Ranges:
    """Byte ranges of some nodes; ``covers(node)`` says whether one of them contains ``node``
    in O(log n) (prefix maxima of the ends over ranges sorted by start)."""

    def __init__(self, nodes: list[Node]) -> None:
        spans = sorted((n.start, n.end) for n in nodes)
        self.starts = [s for s, _ in spans]
        self.max_end: list[int] = []
        best = -1
        for _, e in spans:
            best = max(best, e)
            self.max_end.append(best)

    def covers(self, node: Node) -> bool:
        i = bisect.bisect_right(self.starts, node.start) - 1
        return i >= 0 and self.max_end[i] >= node.end


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
        return ("param", src.enclosing(node, _FUNCTION))
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
        return ("decl", src.enclosing(node, _SCOPES["c"]))
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


def _c_analyse(src: Source, out: Analysis) -> None:
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
        _record(out, name, node)
    _resolve(src, out, decls, _SCOPES["c"])


def _java_declaration(src: Source, node: Node) -> Node | None:
    """The scope node that a declaring identifier declares into, else None."""
    parent = node.parent
    if parent is None:
        return None
    ptype = parent.type
    if ptype == "variable_declarator" and node.field == "name":
        holder = parent.parent
        if holder is not None and holder.type in ("local_variable_declaration", "spread_parameter"):
            return src.enclosing(node, _SCOPES["java"])
        return None
    if (
        ptype in ("formal_parameter", "catch_formal_parameter", "enhanced_for_statement", "resource")
        and node.field == "name"
    ):
        return src.enclosing(node, _SCOPES["java"])
    if ptype == "inferred_parameters" or (ptype == "lambda_expression" and node.field == "parameters"):
        return src.enclosing(node, _LAMBDA)
    if ptype in ("instanceof_expression", "type_pattern", "record_pattern_component") and node.field in ("name", None):
        return src.enclosing(node, UNITS["java"])
    return None


def _java_analyse(src: Source, out: Analysis) -> None:
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
        _record(out, name, node)
    _resolve(src, out, decls, _SCOPES["java"])


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


def _py_analyse(src: Source, out: Analysis) -> None:
    scopes = _SCOPES["python"]
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
            unit = src.enclosing(call, _FUNCTION) or src.root
            if id(unit) not in dynamic_units:  # walk each unit once, however many calls it has
                dynamic_units.add(id(unit))
                out.blocked.update(src.text(n) for n in unit.walk() if n.type == "identifier")
    for node in src.nodes("identifier"):
        parent = node.parent
        if parent is None or (parent.type, node.field) in _PY_SKIP_FIELDS:
            continue
        if parent.type == "dotted_name":
            continue
        _record(out, src.text(node), node)
    _resolve(src, out, decls, scopes - {"class_definition"})


def _record(out: Analysis, name: str, node: Node) -> None:
    if name not in out.occurrences:
        out.occurrences[name] = []
        out.order.append(name)
    out.occurrences[name].append(node)


def _resolve(src: Source, out: Analysis, decls: dict[str, dict[int, Node]], scopes: frozenset[str]) -> None:
    """Mark a name valid iff each occurrence sees a declaration in an enclosing scope, inside
    a function unit. Scopes are byte ranges, so each occurrence costs O(log n), not its depth."""
    units = _Ranges(src.nodes(*UNITS[src.language]))
    for name, nodes in out.occurrences.items():
        owners = _Ranges([n for n in decls.get(name, {}).values() if n.type in scopes])
        ok = bool(owners.starts)
        for node in nodes:
            if not ok:
                break
            ok = owners.covers(node) and units.covers(node)
        out.valid[name] = ok


def analyse(src: Source) -> Analysis:
    """Run the language's scope analysis over a parsed source."""
    out = Analysis()
    {"c": _c_analyse, "java": _java_analyse, "python": _py_analyse}[src.language](src, out)
    return out
