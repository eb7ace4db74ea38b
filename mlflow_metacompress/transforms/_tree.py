"""Parse once, index once: a light snapshot of a tree-sitter tree shared by all transformations.

A tree-sitter tree is walked a single time per sample and flattened into :class:`Node`
objects (type, byte range, field name, parent, children). Every transformation then works
on that snapshot, so ``transform_many`` parses each sample once, as the MetaCompress
evaluation needs for thousands of functions (issue 3, "Speed").

Edits are byte-range replacements collected in :class:`~._edits.Edits`, so formatting and comments
outside the rewritten ranges survive byte for byte and tokens are never re-joined with
spaces (the defect of space-joined token rewriting noted for ALERT/MHM in the style guide).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

LANGUAGES: tuple[str, ...] = ("c", "java", "python")

UNITS: dict[str, frozenset[str]] = {
    "c": frozenset({"function_definition"}),
    "java": frozenset({"method_declaration", "constructor_declaration", "compact_constructor_declaration"}),
    "python": frozenset({"function_definition"}),
}
"""Node types of a function-like unit per language: the scope of renaming, dead code and constants."""

_OPENERS = frozenset({"{", "(", "["})


class TransformError(ValueError):
    """Raised when code does not parse cleanly (tree-sitter ERROR or MISSING nodes)
    or when a requested edit would be invalid (e.g. a colliding new identifier)."""


@functools.cache
def _parser(language: str):  # -> tree_sitter.Parser
    from .._optional import require

    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
    purpose = "parsing code for transformations and attacks (the evaluator needs no parser with transforms=[])"
    ts = require("tree_sitter", purpose)
    grammar = require(f"tree_sitter_{language}", purpose)
    return ts.Parser(ts.Language(grammar.language()))


@functools.cache
def _symbols(language: str) -> tuple[dict[int, tuple[str, bool]], list[str | None]]:
    """Per grammar: node kind id -> (type name, is named), and field id -> field name.

    Reading a node's kind id and looking its name up here, rather than asking tree-sitter
    for ``type`` and ``is_named`` (two new objects per node), makes every snapshot share
    one string per node type; the flattening loop is the single hottest path of
    ``transform_many``. Kinds outside the table (``ERROR`` is 65535) are added on first sight.
    """
    lang = _parser(language).language
    kinds = {i: (lang.node_kind_for_id(i), bool(lang.node_kind_is_named(i))) for i in range(lang.node_kind_count)}
    fields: list[str | None] = [None] + [lang.field_name_for_id(i) for i in range(1, lang.field_count + 1)]
    return kinds, fields


class Node:
    """One tree-sitter node, flattened. ``field`` is the field name under its parent."""

    __slots__ = ("type", "start", "end", "named", "field", "parent", "children")

    def __init__(self, type: str, start: int, end: int, named: bool, field: str | None, parent: Node | None) -> None:
        self.type = type
        self.start = start
        self.end = end
        self.named = named
        self.field = field
        self.parent = parent
        self.children: list[Node] = []

    def __repr__(self) -> str:
        return f"Node({self.type}, {self.start}:{self.end})"

    def child(self, field_name: str) -> Node | None:
        for ch in self.children:
            if ch.field == field_name:
                return ch
        return None

    def children_by_field(self, field_name: str) -> list[Node]:
        return [ch for ch in self.children if ch.field == field_name]

    @property
    def named_children(self) -> list[Node]:
        return [ch for ch in self.children if ch.named]

    def ancestors(self) -> Iterator[Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def walk(self) -> Iterator[Node]:
        """Pre-order traversal of this subtree (self included)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def contains(self, other: Node) -> bool:
        return self.start <= other.start and other.end <= self.end


def encode_code(code: object) -> bytes:
    """UTF-8 bytes of ``code``; :class:`TransformError` for a non-string or lone surrogates."""
    if not isinstance(code, str):
        raise TransformError(f"code must be a str, got {type(code).__name__}")
    try:
        return code.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TransformError(
            f"code is not valid UTF-8 text: {exc.reason} at character {exc.start} ({code[exc.start : exc.end]!r})"
        ) from None


class Source:
    """Code, its bytes, its parse tree snapshot and an index of nodes by type.

    ``depth`` is the nesting depth: the most brackets (``{``, ``(``, ``[``) and Python
    indented blocks enclosing any node, computed while flattening.
    """

    def __init__(self, code: str, language: str, tree: Any = None) -> None:
        """Parse ``code``; ``tree`` is its tree when already parsed (see :mod:`._reparse`)."""
        if language not in LANGUAGES:
            raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
        self.data = encode_code(code)
        self.code = code
        self.language = language
        if tree is None:
            tree = _parser(language).parse(self.data)
        self.tree: Any = tree  # kept so outputs can be re-parsed incrementally; dropped by release()
        self.has_error: bool = tree.root_node.has_error
        self.cache: dict[str, Any] = {}  # per-source memo of derived analyses, one kind per key
        self.by_type: dict[str, list[Node]] = {}
        self.depth = 0
        self._enclosing: dict[frozenset[str], dict[int, Node | None]] = {}
        self.root = self._flatten(tree)

    def _flatten(self, tree) -> Node:
        cursor = tree.walk()
        ts_node = cursor.node
        root = Node(ts_node.type, ts_node.start_byte, ts_node.end_byte, ts_node.is_named, None, None)
        self.by_type.setdefault(root.type, []).append(root)
        current = root
        if not cursor.goto_first_child():
            return root
        by_type = self.by_type
        get_bucket = by_type.get
        blocks = "block" if self.language == "python" else None
        level = depth = 0
        nested: list[bool] = [False]  # per node on the current path: does it add a nesting level?
        push, pop = nested.append, nested.pop
        first_child, next_sibling, to_parent = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
        openers = _OPENERS
        new_node = Node
        kinds, fields = _symbols(self.language)
        while True:
            ts_node = cursor.node
            entry = kinds.get(ts_node.kind_id)
            if entry is None:
                entry = kinds[ts_node.kind_id] = (ts_node.type, ts_node.is_named)
            kind = entry[0]
            start, end = ts_node.byte_range
            node = new_node(kind, start, end, entry[1], fields[cursor.field_id or 0], current)
            siblings = current.children
            siblings.append(node)
            if kind in openers and len(siblings) == 1 and not nested[-1]:
                nested[-1] = True
                level += 1
                if level > depth:
                    depth = level
            bucket = get_bucket(kind)
            if bucket is None:
                by_type[kind] = [node]
            else:
                bucket.append(node)
            if first_child():
                current = node
                if kind == blocks:
                    push(True)
                    level += 1
                    if level > depth:
                        depth = level
                else:
                    push(False)
                continue
            while not next_sibling():
                if pop():
                    level -= 1
                if not to_parent():
                    self.depth = depth
                    return root
                parent = current.parent
                if parent is None:
                    self.depth = depth
                    return root
                current = parent

    def enclosing(self, node: Node, types: frozenset[str]) -> Node | None:
        """The nearest proper ancestor of ``node`` whose type is in ``types`` (memoised, so
        that asking for every node costs time linear in the tree, at any depth)."""
        memo = self._enclosing.get(types)
        if memo is None:
            memo = self._enclosing[types] = {}
        path: list[Node] = []
        cur = node.parent
        found: Node | None = None
        while cur is not None:
            key = id(cur)
            if key in memo:
                found = memo[key]
                break
            if cur.type in types:
                found = cur
                break
            path.append(cur)
            cur = cur.parent
        for p in path:
            memo[id(p)] = found
        if cur is not None:
            memo[id(cur)] = found
        return found

    def nodes(self, *types: str) -> list[Node]:
        """All nodes of the given types, in document order."""
        if len(types) == 1:
            return list(self.by_type.get(types[0], ()))
        out = [n for t in types for n in self.by_type.get(t, ())]
        out.sort(key=lambda n: (n.start, -n.end))
        return out

    def text(self, node: Node) -> str:
        return self.data[node.start : node.end].decode("utf-8")

    def row(self, node: Node) -> int:
        """The 0-based line of ``node``'s start, counted as tree-sitter counts rows (``\\n``)."""
        return self.data.count(b"\n", 0, node.start)

    def line_start(self, pos: int) -> int:
        """Start of the line holding ``pos``; a lone ``\\r`` ends a line too, as in Python."""
        return max(self.data.rfind(b"\n", 0, pos), self.data.rfind(b"\r", 0, pos)) + 1

    def indent_of(self, node: Node) -> str:
        """The whitespace that precedes ``node`` on its line ('' if code precedes it)."""
        start = self.line_start(node.start)
        prefix = self.data[start : node.start].decode("utf-8")
        return prefix if prefix.strip() == "" else ""

    def release(self) -> None:
        """Drop the tree snapshot once the sample is done (``transform_many``, ``compose``).

        Nodes point to their parents, so a snapshot is a web of reference cycles that only
        Python's cyclic garbage collector can free; over thousands of samples those full
        collections cost about a third of the run. Cutting the parent links lets reference
        counting free the nodes at once. The source must not be used afterwards.
        """
        for bucket in self.by_type.values():
            for node in bucket:
                node.parent = None
        self.by_type = {}
        self.cache = {}
        self._enclosing = {}
        self.tree = None

    def require_clean(self) -> None:
        if self.has_error:
            raise TransformError(
                f"{self.language} code does not parse cleanly (tree-sitter reports ERROR or MISSING nodes)"
            )
