"""``expand_compound_assignment``: ``x += y`` becomes ``x = x + (y)``; ``i++;`` becomes ``i = i + 1;``.

NatGen's "confusing/compound assignment" rewrites (Chakraborty et al., FSE 2022) and the
operator rewrites of Rabin et al. (IST 2021) and CODA (Tian et al., ASE 2023). Only
side-effect-free targets are expanded (the target is evaluated twice afterwards), the right
side is parenthesised (``x *= y + z`` is ``x = x * (y + z)``). Java's implicit narrowing is
kept with a cast to the declared type, and targets of unknown type are skipped. Python
expands only names provably bound to numbers or strings (``lst += other`` mutates in place).
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import has_ancestor, is_pure, paren
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.base import register

_OPS = {"+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", ">>>=", "//=", "**=", "@="}
_JAVA_CAST = {"byte", "short", "char", "int", "long", "float"}
_JAVA_NOCAST = {"double", "Double", "Long", "Integer", "String", "boolean", "Boolean"}
_C_LVALUES = {
    "identifier",
    "field_expression",
    "subscript_expression",
    "pointer_expression",
    "parenthesized_expression",
}
_JAVA_LVALUES = {"identifier", "field_access", "array_access"}
_PY_SCALAR_CALLS = {b"int", b"float", b"str", b"len", b"ord", b"abs", b"round", b"chr", b"hex", b"bin"}
_ASSIGNMENTS = frozenset({"assignment_expression", "update_expression"})
_PY_SCOPES = frozenset({"function_definition", "module"})


def _java_declarations(src: Source) -> dict[str, list[Node]]:
    """Java declarators by declared name, indexed once per sample."""
    index = src.cache.get("java_declarations")
    if index is None:
        index = {}
        for decl in src.nodes("variable_declarator", "formal_parameter", "catch_formal_parameter"):
            ident = decl.child("name")
            if ident is not None:
                index.setdefault(src.text(ident), []).append(decl)
        src.cache["java_declarations"] = index
    return index


def _java_type(src: Source, target: Node) -> str | None:
    """Declared (element) type of a Java target, or None if unknown."""
    base: Node | None = target
    dims = 0
    while base is not None and base.type == "array_access":
        base, dims = base.child("array"), dims + 1
    if base is None:
        return None
    if base.type == "field_access" and (obj := base.child("object")) is not None and obj.type == "this":
        base = base.child("field")
    if base is None or base.type != "identifier":
        return None
    name = src.text(base)
    types = set()
    for decl in _java_declarations(src).get(name, ()):
        holder = decl.parent if decl.type == "variable_declarator" else decl
        typ = holder.child("type") if holder is not None else None
        if typ is None:
            return None
        extra = src.text(decl).count("[]") if decl.type == "variable_declarator" else 0
        text = src.text(typ).replace(" ", "") + "[]" * extra
        if dims:
            if not text.endswith("[]" * dims):
                return None
            text = text[: len(text) - 2 * dims]
        types.add(text)
    return types.pop() if len(types) == 1 else None


def _py_scalar(src: Source, target: Node) -> bool:
    """True if every plain assignment to the name in its scope binds a number or string."""
    if target.type != "identifier":
        return False
    scope = src.enclosing(target, _PY_SCOPES) or src.root
    summaries = src.cache.setdefault("py_scalar", {})
    summary = summaries.get(id(scope))
    if summary is None:
        summary = summaries[id(scope)] = _py_scalar_summary(src, scope)
    return summary.get(src.data[target.start : target.end], False)


def _py_scalar_summary(src: Source, scope: Node) -> dict[bytes, bool]:
    """For each name bound in ``scope`` (one walk): True if it is only ever bound to scalars
    (numbers, strings, ``range`` loop indices), False otherwise."""
    out: dict[bytes, bool] = {}

    def mark(name: bytes, ok: bool) -> None:
        out[name] = out.get(name, True) and ok

    for node in scope.walk():
        if node.type == "for_statement" or node.type == "for_in_clause":
            left, right = node.child("left"), node.child("right")
            if left is not None:
                fn = right.child("function") if right is not None and right.type == "call" else None
                ok = fn is not None and src.data[fn.start : fn.end] == b"range" and left.type == "identifier"
                for n in left.walk():
                    if n.type == "identifier":
                        mark(src.data[n.start : n.end], ok)
        if node.type != "assignment" and node.type != "named_expression":
            continue
        left = node.child("left") or node.child("name")
        if left is None:
            continue
        whole = src.data[left.start : left.end]
        value = node.child("right") or node.child("value")
        mark(whole, value is not None and _py_scalar_expr(src, value))
        for n in left.walk():
            if n.type == "identifier" and src.data[n.start : n.end] != whole:
                mark(src.data[n.start : n.end], False)  # bound by unpacking: type unknown
    return out


def _py_scalar_expr(src: Source, node: Node) -> bool:
    while node.type == "unary_operator" and node.named_children:  # -x, +x, ~x: iteratively
        node = node.named_children[-1]
    if node.type in ("integer", "float"):
        return True
    if node.type == "string":
        return True
    if node.type == "call":
        fn = node.child("function")
        return fn is not None and src.data[fn.start : fn.end] in _PY_SCALAR_CALLS
    return False


def _expand(src: Source, edits: Edits, node: Node) -> bool:
    lang = src.language
    if node.type == "update_expression":
        if node.parent is None or not (node.parent.type == "expression_statement" or node.field == "update"):
            return False
        target = node.named_children[0] if node.named_children else None
        op_text = src.text(node).replace(src.text(target), "", 1).strip() if target is not None else ""
        if op_text not in ("++", "--"):
            return False
        op, right_text, right = op_text[0], "1", None
    else:
        op_node = node.child("operator")
        target, right = node.child("left"), node.child("right")
        if op_node is None or target is None or right is None or src.text(op_node) not in _OPS:
            return False
        op = src.text(op_node)[:-1]
        right_text = paren(edits.render_node(right), right)
    if target is None or not is_pure(target, lang):
        return False
    cast = ""
    if lang == "c" and target.type not in _C_LVALUES:
        return False
    if lang == "java":
        if target.type not in _JAVA_LVALUES:
            return False
        typ = _java_type(src, target)
        if typ is None or (typ not in _JAVA_CAST and typ not in _JAVA_NOCAST):
            return False
        narrow = {"byte", "short", "char"} if right is None else _JAVA_CAST
        cast = f"({typ}) " if typ in narrow else ""
    if lang == "python" and not _py_scalar(src, target):
        return False
    t = edits.render_node(target)
    value = f"{t} {op} {right_text}"
    edits.replace_node(node, f"{t} = {cast}({value})" if cast else f"{t} = {value}")
    return True


@register("expand_compound_assignment", ("c", "java", "python"))
def expand_compound_assignment(src: Source, rng: random.Random) -> str | None:
    """Expand every eligible compound assignment and statement-level increment."""
    kinds = ("augmented_assignment",) if src.language == "python" else ("assignment_expression", "update_expression")
    edits = Edits(src.data)
    changed = False
    for node in sorted(src.nodes(*kinds), key=lambda n: n.end - n.start):
        if src.language != "python" and node.type == "assignment_expression" and has_ancestor(src, node, _ASSIGNMENTS):
            continue
        if edits.overlaps(node.start, node.end):
            continue
        changed |= _expand(src, edits, node)
    return edits.apply() if changed else None
