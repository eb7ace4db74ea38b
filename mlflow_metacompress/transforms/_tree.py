"""Parse once, index once: a light snapshot of a tree-sitter tree shared by all transformations.

A tree-sitter tree is walked a single time per sample and flattened into :class:`Node`
objects (type, byte range, field name, parent, children). Every transformation then works
on that snapshot, so ``transform_many`` parses each sample once, as the MetaCompress
evaluation needs for thousands of functions (issue 3, "Speed").

Edits are byte-range replacements collected in :class:`Edits`, so formatting and comments
outside the rewritten ranges survive byte for byte and tokens are never re-joined with
spaces (the defect of space-joined token rewriting noted for ALERT/MHM in the style guide).
"""

from __future__ import annotations

import functools
from typing import Iterator

LANGUAGES: tuple[str, ...] = ("c", "java", "python")


class TransformError(ValueError):
    """Raised when code does not parse cleanly (tree-sitter ERROR or MISSING nodes)
    or when a requested edit would be invalid (e.g. a colliding new identifier)."""


@functools.lru_cache(maxsize=None)
def _parser(language: str):  # -> tree_sitter.Parser
    import tree_sitter as ts

    if language == "c":
        import tree_sitter_c as grammar
    elif language == "java":
        import tree_sitter_java as grammar
    elif language == "python":
        import tree_sitter_python as grammar
    else:
        raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
    return ts.Parser(ts.Language(grammar.language()))


class Node:
    """One tree-sitter node, flattened. ``field`` is the field name under its parent."""

    __slots__ = ("type", "start", "end", "named", "field", "parent", "row", "children")

    def __init__(self, type: str, start: int, end: int, named: bool, field: str | None,
                 parent: "Node | None", row: int) -> None:
        self.type = type
        self.start = start
        self.end = end
        self.named = named
        self.field = field
        self.parent = parent
        self.row = row
        self.children: list[Node] = []

    def __repr__(self) -> str:
        return f"Node({self.type}, {self.start}:{self.end})"

    def child(self, field_name: str) -> "Node | None":
        for ch in self.children:
            if ch.field == field_name:
                return ch
        return None

    def children_by_field(self, field_name: str) -> list["Node"]:
        return [ch for ch in self.children if ch.field == field_name]

    @property
    def named_children(self) -> list["Node"]:
        return [ch for ch in self.children if ch.named]

    def ancestors(self) -> Iterator["Node"]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def walk(self) -> Iterator["Node"]:
        """Pre-order traversal of this subtree (self included)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def contains(self, other: "Node") -> bool:
        return self.start <= other.start and other.end <= self.end


class Source:
    """Code, its bytes, its parse tree snapshot and an index of nodes by type."""

    def __init__(self, code: str, language: str) -> None:
        if language not in LANGUAGES:
            raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
        self.code = code
        self.language = language
        self.data = code.encode("utf-8")
        tree = _parser(language).parse(self.data)
        self.has_error: bool = tree.root_node.has_error
        self.cache: dict[str, object] = {}
        self.by_type: dict[str, list[Node]] = {}
        self.root = self._flatten(tree)

    def _flatten(self, tree) -> Node:
        cursor = tree.walk()
        ts_node = cursor.node
        root = Node(ts_node.type, ts_node.start_byte, ts_node.end_byte, ts_node.is_named, None, None,
                    ts_node.start_point[0])
        self.by_type.setdefault(root.type, []).append(root)
        current = root
        if not cursor.goto_first_child():
            return root
        by_type = self.by_type
        while True:
            ts_node = cursor.node
            node = Node(ts_node.type, ts_node.start_byte, ts_node.end_byte, ts_node.is_named,
                        cursor.field_name, current, ts_node.start_point.row)
            current.children.append(node)
            bucket = by_type.get(node.type)
            if bucket is None:
                by_type[node.type] = [node]
            else:
                bucket.append(node)
            if cursor.goto_first_child():
                current = node
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return root
                current = current.parent  # type: ignore[assignment]
                if current is None:
                    return root

    def nodes(self, *types: str) -> list[Node]:
        """All nodes of the given types, in document order."""
        if len(types) == 1:
            return list(self.by_type.get(types[0], ()))
        out = [n for t in types for n in self.by_type.get(t, ())]
        out.sort(key=lambda n: (n.start, -n.end))
        return out

    def text(self, node: Node) -> str:
        return self.data[node.start:node.end].decode("utf-8")

    def line_start(self, pos: int) -> int:
        return self.data.rfind(b"\n", 0, pos) + 1

    def indent_of(self, node: Node) -> str:
        """The whitespace that precedes ``node`` on its line ('' if code precedes it)."""
        start = self.line_start(node.start)
        prefix = self.data[start:node.start].decode("utf-8")
        return prefix if prefix.strip() == "" else ""

    def require_clean(self) -> None:
        if self.has_error:
            raise TransformError(f"{self.language} code does not parse cleanly "
                                 "(tree-sitter reports ERROR or MISSING nodes)")


class Edits:
    """Non-overlapping byte-range replacements over ``data``, composable bottom-up.

    Callers process sites innermost first; :meth:`render` returns a range's text with the
    edits already made inside it, and :meth:`replace` then supersedes those inner edits.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.items: list[tuple[int, int, int, str]] = []  # start, end, seq, text
        self._seq = 0

    def __bool__(self) -> bool:
        return bool(self.items)

    def _inside(self, start: int, end: int) -> list[tuple[int, int, int, str]]:
        return [it for it in self.items if start <= it[0] and it[1] <= end]

    def render(self, start: int, end: int) -> str:
        """Text of ``data[start:end]`` with every edit inside the range applied."""
        parts: list[str] = []
        pos = start
        for s, e, _, text in sorted(self._inside(start, end), key=lambda it: (it[0], it[1], it[2])):
            if s < pos:
                raise TransformError("overlapping edits")
            parts.append(self.data[pos:s].decode("utf-8"))
            parts.append(text)
            pos = e
        parts.append(self.data[pos:end].decode("utf-8"))
        return "".join(parts)

    def render_node(self, node: Node) -> str:
        return self.render(node.start, node.end)

    def overlaps(self, start: int, end: int) -> bool:
        """True if a replacement partially overlaps [start, end) (containment is fine)."""
        for s, e, _, _ in self.items:
            if s < end and start < e and not (start <= s and e <= end) and not (s <= start and end <= e):
                return True
        return False

    def replace(self, start: int, end: int, text: str) -> None:
        self.items = [it for it in self.items if not (start <= it[0] and it[1] <= end and start < end)]
        self.items.append((start, end, self._seq, text))
        self._seq += 1

    def replace_node(self, node: Node, text: str) -> None:
        self.replace(node.start, node.end, text)

    def insert(self, pos: int, text: str) -> None:
        self.items.append((pos, pos, self._seq, text))
        self._seq += 1

    def apply(self) -> str:
        return self.render(0, len(self.data))
