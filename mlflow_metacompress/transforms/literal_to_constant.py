"""``literal_to_constant``: hoist a literal into a named constant declared at function start.

A semantics-preserving "constant extraction" in the spirit of NatGen's naturalising
rewrites (Chakraborty et al., FSE 2022), Rabin et al.'s transformation families (IST 2021)
and CODA's structure perturbations (Tian et al., ASE 2023). In each function one
seed-chosen literal value is declared once (C: ``const T``; Java: ``final T``, a constant
variable, so implicit narrowing still compiles; Python: a plain local) and its eligible
occurrences are replaced. The literal's type is kept (``1u``, ``1.0f``, ``'a'`` is ``int``
in C). Never touched: case labels, array sizes, annotations, static and global
initialisers, initialiser lists, enums, bit-fields, preprocessor lines, C ``0`` (it may be
a null pointer), arguments of ALL-CAPS (macro) calls, constructor ``this``/``super`` calls,
docstrings, f-strings and Python ``match`` patterns.
"""

from __future__ import annotations

import random
import re

from mlflow_metacompress.transforms._common import NameFactory, py_block_on_own_lines, py_indent
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import UNITS, Node, Source
from mlflow_metacompress.transforms.base import register

_POOL = ("LIMIT", "FACTOR", "OFFSET", "BASE", "THRESHOLD", "COUNT", "SIZE", "STEP", "MAGIC", "VALUE", "K")
_KINDS = {
    "c": ("number_literal", "char_literal"),
    "java": (
        "decimal_integer_literal",
        "hex_integer_literal",
        "octal_integer_literal",
        "binary_integer_literal",
        "decimal_floating_point_literal",
        "character_literal",
        "string_literal",
    ),
    "python": ("integer", "float", "string"),
}
_BLOCKED = {
    "c": {
        "case_statement",
        "array_declarator",
        "abstract_array_declarator",
        "initializer_list",
        "enumerator",
        "bitfield_clause",
        "attribute_specifier",
        "attribute_declaration",
        "gnu_asm_expression",
        "static_assert_declaration",
        "preproc_arg",
    },
    "java": {
        "switch_label",
        "annotation",
        "marker_annotation",
        "element_value_pair",
        "explicit_constructor_invocation",
        "class_body",
        "annotation_argument_list",
    },
    "python": {
        "case_pattern",
        "parameters",
        "lambda_parameters",
        "type",
        "decorator",
        "concatenated_string",
        "global_statement",
    },
}


def _c_type(text: str) -> str | None:
    if text.startswith("'"):
        return "int"
    low = text.lower()
    is_hex = low.startswith("0x")
    if "." in low or ("p" in low if is_hex else "e" in low):
        return "float" if low.endswith("f") else "long double" if low.endswith("l") else "double"
    match = re.fullmatch(r"(0x[0-9a-f]+|0b[01]+|[0-9]+)(u?l{0,2}u?)", low)
    if match is None:
        return None
    digits, suffix = match.groups()
    value = int(
        digits,
        16 if is_hex else 2 if digits.startswith("0b") else 8 if digits.startswith("0") and len(digits) > 1 else 10,
    )
    if value == 0:
        return None  # may be a null pointer constant
    unsigned, longs = "u" in suffix, suffix.count("l")
    decimal = not (is_hex or digits.startswith("0"))
    if longs == 2:
        return "unsigned long long" if unsigned else "long long"
    if longs == 0 and value <= 2**31 - 1 and not unsigned:
        return "int"
    if longs == 0 and value <= 2**32 - 1 and (unsigned or not decimal):
        return "unsigned int"
    if value <= 2**63 - 1 and not unsigned:
        return "long"
    return "unsigned long" if value <= 2**64 - 1 and (unsigned or not decimal) else None


def _java_type(node: Node, text: str) -> str | None:
    if node.type == "string_literal":
        return "String"
    if node.type == "character_literal":
        return "char"
    low = text.lower()
    if node.type == "decimal_floating_point_literal":
        return "float" if low.endswith("f") else "double"
    if text in ("2147483648", "9223372036854775808L", "9223372036854775808l"):
        return None  # only legal as the operand of unary minus
    return "long" if low.endswith("l") else "int"


def _blocks(src: Source, node: Node) -> bool:
    """True if a literal at or below ``node`` (inside the unit) must not be hoisted because of ``node``."""
    lang, t = src.language, node.type
    parent = node.parent
    if parent is not None and parent.type == "case_statement" and node.field == "value":
        return True  # a case label (its body is fine)
    if (t in _BLOCKED[lang] and t != "case_statement") or t.startswith("preproc"):
        return True
    if lang == "c" and t == "call_expression":
        fn = node.child("function")
        return fn is not None and re.fullmatch(r"[A-Z_][A-Z0-9_]*", src.text(fn)) is not None
    if lang == "c" and t == "declaration":
        return any(c.type == "storage_class_specifier" and src.text(c) == "static" for c in node.children)
    return lang == "python" and t == "function_definition"  # a nested function: only the unit's own body


def _eligible(src: Source, lit: Node, unit: Node, memo: dict[int, bool]) -> bool:
    """No node between ``lit`` (included) and ``unit`` blocks it. ``memo`` (one per unit) holds
    the answer for nodes already seen, so all literals of a unit cost time linear in its size."""
    path: list[Node] = []
    node: Node | None = lit
    blocked = False
    while node is not None and node is not unit:
        known = memo.get(id(node))
        if known is not None:
            blocked = known
            break
        path.append(node)
        node = node.parent
    if node is None:
        return False
    for p in reversed(path):  # from just below the unit down to the literal
        blocked = blocked or _blocks(src, p)
        memo[id(p)] = blocked
    return not blocked


def _python_ok(src: Source, lit: Node) -> bool:
    if lit.type != "string":
        return True
    start = src.text(lit)
    if any(c.type == "interpolation" for c in lit.children) or re.match(r"[A-Za-z]*[fF]", start):
        return False
    stmt = lit.parent
    return not (stmt is not None and stmt.type == "expression_statement" and len(stmt.named_children) == 1)


def _declaration(src: Source, name: str, text: str, typ: str | None) -> str:
    if src.language == "c":
        return f"const {typ} {name} = {text};"
    if src.language == "java":
        return f"final {typ} {name} = {text};"
    return f"{name} = {text}"


def _insert_point(src: Source, unit: Node) -> tuple[int, str] | None:
    """Byte offset and text prefix/suffix pattern for a declaration at the start of the body."""
    body = unit.child("body")
    if body is None:
        return None
    if src.language == "python":
        stmts = [c for c in body.named_children if c.type != "comment"]  # a comment may sit at column 0
        if not stmts or not py_block_on_own_lines(src, unit, body):
            return None
        first = stmts[0]
        if (
            first.type == "expression_statement"
            and len(first.named_children) == 1
            and first.named_children[0].type == "string"
        ):
            if len(stmts) == 1:
                return None
            first = stmts[1]
        indent = py_indent(src, first)
        if indent.strip() or src.line_start(first.start) + len(indent) != first.start:
            return None
        return first.start, "\n" + indent
    stmts = [c for c in body.named_children if "comment" not in c.type]
    if stmts and stmts[0].type == "explicit_constructor_invocation":
        return stmts[0].end, " "
    return body.start + 1, " "


@register("literal_to_constant", ("c", "java", "python"))
def literal_to_constant(src: Source, rng: random.Random) -> str | None:
    """In every function, replace one seed-chosen literal value by a named constant."""
    lang = src.language
    edits = Edits(src.data)
    fresh = NameFactory(src, rng)
    changed = False
    literals = src.nodes(*_KINDS[lang])  # document order, as a walk of each unit would meet them
    for unit in src.nodes(*UNITS[lang]):
        if lang != "python" and src.enclosing(unit, UNITS[lang]) is not None:
            continue
        point = _insert_point(src, unit)
        if point is None:
            continue
        groups: dict[str, list[Node]] = {}
        memo: dict[int, bool] = {}
        for lit in literals:
            if lit.start < point[0] or lit.end > unit.end or not _eligible(src, lit, unit, memo):
                continue
            if lang == "python" and not _python_ok(src, lit):
                continue
            groups.setdefault(src.text(lit), []).append(lit)
        typed = {
            t: (_c_type(t) if lang == "c" else _java_type(n[0], t) if lang == "java" else "") for t, n in groups.items()
        }
        choices = sorted(t for t, typ in typed.items() if typ is not None)
        if not choices:
            continue
        text = rng.choice(choices)
        name = fresh(rng.choice(_POOL))
        decl = _declaration(src, name, text, typed[text])
        pos, sep = point
        edits.insert(pos, decl + sep if lang == "python" else sep + decl)
        for lit in groups[text]:
            before = src.data[lit.start - 1 : lit.start]
            after = src.data[lit.end : lit.end + 1]
            pad_l = " " if re.match(rb"[A-Za-z0-9_$]", before) else ""
            pad_r = " " if re.match(rb"[A-Za-z0-9_$]", after) else ""
            edits.replace_node(lit, pad_l + name + pad_r)
        changed = True
    return edits.apply() if changed else None
