"""Helpers shared by the transformation modules: fresh names, purity and precedence checks,
Java reachability, and Python block/indentation handling."""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.identifiers import _all_identifiers, is_valid_identifier

_POOL = (
    "value",
    "item",
    "result",
    "temp",
    "data",
    "count",
    "index",
    "buffer",
    "entry",
    "flag",
    "size",
    "offset",
    "cursor",
    "acc",
    "current",
    "elem",
    "key",
    "total",
    "state",
    "token",
    "limit",
    "step",
    "node",
    "pos",
    "len",
    "res",
    "tmp",
    "val",
    "var",
    "num",
)

_IMPURE = {
    "c": {"call_expression", "assignment_expression", "update_expression", "gnu_asm_expression"},
    "java": {
        "method_invocation",
        "object_creation_expression",
        "assignment_expression",
        "update_expression",
        "array_creation_expression",
    },
    "python": {"call", "await", "yield", "named_expression"},
}
_PRIMARY = {
    "identifier",
    "number_literal",
    "char_literal",
    "string_literal",
    "concatenated_string",
    "parenthesized_expression",
    "call_expression",
    "field_expression",
    "subscript_expression",
    "decimal_integer_literal",
    "hex_integer_literal",
    "octal_integer_literal",
    "binary_integer_literal",
    "decimal_floating_point_literal",
    "hex_floating_point_literal",
    "character_literal",
    "true",
    "false",
    "null_literal",
    "this",
    "field_access",
    "method_invocation",
    "array_access",
    "integer",
    "float",
    "string",
    "attribute",
    "subscript",
    "call",
    "none",
    "True",
    "False",
    "NULL",
}


class NameFactory:
    """Fresh identifiers that collide with nothing in the code nor with each other.

    A few seed-chosen tries from a pool of natural names, then a counter suffix: the
    factory never runs out, however many names a function already uses.
    """

    _RANDOM_TRIES = 60

    def __init__(self, src: Source, rng: random.Random, prefix: str = "") -> None:
        self.taken = set(_all_identifiers(src))
        self.language = src.language
        self.rng = rng
        self.prefix = prefix
        self._counter = 100
        self._tries = self._RANDOM_TRIES  # drops once the pool is exhausted, keeping calls O(1)

    def _take(self, name: str) -> bool:
        if name not in self.taken and is_valid_identifier(name, self.language):
            self.taken.add(name)
            return True
        return False

    def __call__(self, hint: str | None = None) -> str:
        for attempt in range(self._tries):
            base = hint if hint and attempt == 0 else self.rng.choice(_POOL)
            name = f"{self.prefix}{base}" if attempt < 3 else f"{self.prefix}{base}_{self.rng.randrange(100)}"
            if self._take(name):
                return name
        self._tries = 3
        base = hint if hint and is_valid_identifier(f"{self.prefix}{hint}_1", self.language) else self.rng.choice(_POOL)
        while True:  # terminates: finitely many names are taken
            name = f"{self.prefix}{base}_{self._counter}"
            self._counter += 1
            if self._take(name):
                return name


def is_pure(node: Node, language: str) -> bool:
    """No calls, assignments, increments (or Python awaits/yields/walrus) inside ``node``."""
    bad = _IMPURE[language]
    return not any(n.type in bad for n in node.walk())


def paren(src_text: str, node: Node) -> str:
    """``src_text`` (the rendering of ``node``) wrapped in parentheses unless primary."""
    return src_text if node.type in _PRIMARY else f"({src_text})"


def has_ancestor(src: Source, node: Node, types: frozenset[str]) -> bool:
    """True if a proper ancestor of ``node`` has a type in ``types`` (memoised per source)."""
    return src.enclosing(node, types) is not None


_JUMPS = ("return_statement", "throw_statement", "break_statement", "continue_statement", "yield_statement")


def java_may_not_complete(src: Source, stmt: Node | None) -> bool:
    """Conservative javac reachability: True if ``stmt`` might not complete normally (JLS 14.22),
    in which case nothing may be appended after it. Iterative: nesting depth cannot overflow."""
    pending = [stmt]
    while pending:  # a conjunction: every pending statement must be unable to complete
        node = pending.pop()
        if node is None:
            return False
        t = node.type
        if t in _JUMPS:
            continue
        if t == "block":
            kids = [c for c in node.named_children if c.type not in ("line_comment", "block_comment")]
            if not kids:
                return False
            pending.append(kids[-1])
        elif t == "if_statement":
            alt = node.child("alternative")
            if alt is None:
                return False
            pending.extend((node.child("consequence"), alt))
        elif t in ("while_statement", "for_statement", "do_statement"):
            cond = node.child("condition")
            if not (cond is None or src.text(cond).strip("() \n\t") == "true"):
                return False
        elif t in ("expression_statement", "local_variable_declaration", "empty_statement"):
            return False
        elif not any(n.type in _JUMPS for n in node.walk()):
            return False
    return True


# ---- Python blocks ---------------------------------------------------------------------


def py_block_on_own_lines(src: Source, header: Node, block: Node | None) -> bool:
    """True if ``block`` starts on a line after ``header``'s first line (not ``if x: y``)."""
    return block is not None and bool(block.named_children) and src.row(block) > src.row(header)


def py_block_lines(src: Source, block: Node, rendered: str | None = None) -> str:
    """The block's text from the start of its first line (indentation included)."""
    start = src.line_start(block.start)
    text = rendered if rendered is not None else src.text(block)
    return src.data[start : block.start].decode("utf-8") + text


def py_indent(src: Source, node: Node) -> str:
    start = src.line_start(node.start)
    return src.data[start : node.start].decode("utf-8")


def py_has_multiline_string(src: Source, node: Node) -> bool:
    return any(n.type == "string" and b"\n" in src.data[n.start : n.end] for n in node.walk())


def reindent(text: str, extra: str) -> str:
    """Prefix every non-empty line of ``text`` with ``extra``."""
    return "".join(extra + line if line.strip() else line for line in text.splitlines(keepends=True))
