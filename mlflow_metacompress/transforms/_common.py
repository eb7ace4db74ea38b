"""Helpers shared by the transformation modules: fresh names, purity and precedence checks,
Java reachability, and Python block/indentation handling."""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.identifiers import _all_identifiers, is_valid_identifier

_POOL = ("value", "item", "result", "temp", "data", "count", "index", "buffer", "entry", "flag",
         "size", "offset", "cursor", "acc", "current", "elem", "key", "total", "state", "token",
         "limit", "step", "node", "pos", "len", "res", "tmp", "val", "var", "num")

_IMPURE = {
    "c": {"call_expression", "assignment_expression", "update_expression", "gnu_asm_expression"},
    "java": {"method_invocation", "object_creation_expression", "assignment_expression",
             "update_expression", "array_creation_expression"},
    "python": {"call", "await", "yield", "named_expression"},
}
_PRIMARY = {"identifier", "number_literal", "char_literal", "string_literal", "concatenated_string",
            "parenthesized_expression", "call_expression", "field_expression", "subscript_expression",
            "decimal_integer_literal", "hex_integer_literal", "octal_integer_literal", "binary_integer_literal",
            "decimal_floating_point_literal", "hex_floating_point_literal", "character_literal",
            "true", "false", "null_literal", "this", "field_access", "method_invocation", "array_access",
            "integer", "float", "string", "attribute", "subscript", "call", "none", "True", "False", "NULL"}


class NameFactory:
    """Fresh identifiers that collide with nothing in the code nor with each other."""

    def __init__(self, src: Source, rng: random.Random, prefix: str = "") -> None:
        self.taken = set(_all_identifiers(src))
        self.language = src.language
        self.rng = rng
        self.prefix = prefix

    def __call__(self, hint: str | None = None) -> str:
        for attempt in range(1000):
            base = hint if hint and attempt == 0 else self.rng.choice(_POOL)
            name = f"{self.prefix}{base}" if attempt < 3 else f"{self.prefix}{base}_{self.rng.randrange(100)}"
            if name not in self.taken and is_valid_identifier(name, self.language):
                self.taken.add(name)
                return name
        raise RuntimeError("could not find a fresh identifier")  # pragma: no cover


def is_pure(node: Node, language: str) -> bool:
    """No calls, assignments, increments (or Python awaits/yields/walrus) inside ``node``."""
    bad = _IMPURE[language]
    return not any(n.type in bad for n in node.walk())


def paren(src_text: str, node: Node) -> str:
    """``src_text`` (the rendering of ``node``) wrapped in parentheses unless primary."""
    return src_text if node.type in _PRIMARY else f"({src_text})"


def has_ancestor(node: Node, types: set[str] | tuple[str, ...], stop: Node | None = None) -> bool:
    for anc in node.ancestors():
        if anc is stop:
            return False
        if anc.type in types:
            return True
    return False


def java_may_not_complete(src: Source, stmt: Node | None) -> bool:
    """Conservative javac reachability: True if ``stmt`` might not complete normally (JLS 14.22),
    in which case nothing may be appended after it."""
    if stmt is None:
        return False
    t = stmt.type
    if t in ("return_statement", "throw_statement", "break_statement", "continue_statement",
             "yield_statement"):
        return True
    if t == "block":
        kids = [c for c in stmt.named_children if c.type not in ("line_comment", "block_comment")]
        return bool(kids) and java_may_not_complete(src, kids[-1])
    if t == "if_statement":
        alt = stmt.child("alternative")
        return alt is not None and java_may_not_complete(src, stmt.child("consequence")) and \
            java_may_not_complete(src, alt)
    if t in ("while_statement", "for_statement", "do_statement"):
        cond = stmt.child("condition")
        return cond is None or src.text(cond).strip("() \n\t") == "true"
    if t in ("expression_statement", "local_variable_declaration", "empty_statement"):
        return False
    return any(n.type in ("return_statement", "throw_statement", "break_statement", "continue_statement",
                          "yield_statement") for n in stmt.walk())


# ---- Python blocks ---------------------------------------------------------------------

def py_block_on_own_lines(src: Source, header: Node, block: Node | None) -> bool:
    """True if ``block`` starts on a line after ``header``'s first line (not ``if x: y``)."""
    return block is not None and bool(block.named_children) and block.row > header.row


def py_block_lines(src: Source, block: Node, rendered: str | None = None) -> str:
    """The block's text from the start of its first line (indentation included)."""
    start = src.line_start(block.start)
    text = rendered if rendered is not None else src.text(block)
    return src.data[start:block.start].decode("utf-8") + text


def py_indent(src: Source, node: Node) -> str:
    start = src.line_start(node.start)
    return src.data[start:node.start].decode("utf-8")


def py_has_multiline_string(src: Source, node: Node) -> bool:
    return any(n.type == "string" and b"\n" in src.data[n.start:n.end] for n in node.walk())


def reindent(text: str, extra: str) -> str:
    """Prefix every non-empty line of ``text`` with ``extra``."""
    return "".join(extra + line if line.strip() else line for line in text.splitlines(keepends=True))
