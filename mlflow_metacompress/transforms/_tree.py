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

import bisect
import functools
from typing import Iterator

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


def encode_code(code: object) -> bytes:
    """UTF-8 bytes of ``code``; :class:`TransformError` for a non-string or lone surrogates."""
    if not isinstance(code, str):
        raise TransformError(f"code must be a str, got {type(code).__name__}")
    try:
        return code.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TransformError(f"code is not valid UTF-8 text: {exc.reason} at character {exc.start} "
                             f"({code[exc.start:exc.end]!r})") from None


class Source:
    """Code, its bytes, its parse tree snapshot and an index of nodes by type.

    ``depth`` is the nesting depth: the most brackets (``{``, ``(``, ``[``) and Python
    indented blocks enclosing any node, computed while flattening.
    """

    def __init__(self, code: str, language: str) -> None:
        if language not in LANGUAGES:
            raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
        self.data = encode_code(code)
        self.code = code
        self.language = language
        tree = _parser(language).parse(self.data)
        self.has_error: bool = tree.root_node.has_error
        self.cache: dict[str, object] = {}
        self.by_type: dict[str, list[Node]] = {}
        self.depth = 0
        self._enclosing: dict[frozenset[str], dict[int, Node | None]] = {}
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
        blocks = "block" if self.language == "python" else None
        level = depth = 0
        nested: list[bool] = [False]  # per node on the current path: does it add a nesting level?
        while True:
            ts_node = cursor.node
            node = Node(ts_node.type, ts_node.start_byte, ts_node.end_byte, ts_node.is_named,
                        cursor.field_name, current, ts_node.start_point.row)
            siblings = current.children
            siblings.append(node)
            if len(siblings) == 1 and node.type in _OPENERS and not nested[-1]:
                nested[-1] = True
                level += 1
                depth = max(depth, level)
            bucket = by_type.get(node.type)
            if bucket is None:
                by_type[node.type] = [node]
            else:
                bucket.append(node)
            if cursor.goto_first_child():
                current = node
                counts = node.type == blocks
                nested.append(counts)
                if counts:
                    level += 1
                    depth = max(depth, level)
                continue
            while not cursor.goto_next_sibling():
                if nested.pop():
                    level -= 1
                if not cursor.goto_parent():
                    self.depth = depth
                    return root
                current = current.parent  # type: ignore[assignment]
                if current is None:
                    self.depth = depth
                    return root

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
        return self.data[node.start:node.end].decode("utf-8")

    def line_start(self, pos: int) -> int:
        """Start of the line holding ``pos``; a lone ``\\r`` ends a line too, as in Python."""
        return max(self.data.rfind(b"\n", 0, pos), self.data.rfind(b"\r", 0, pos)) + 1

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
    Edits are kept sorted by position, so each operation costs a binary search plus the
    edits it touches (renaming a million-byte function stays linear).
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.items: list[tuple[int, int, int, str]] = []  # start, end, seq, text; sorted
        self._starts: list[int] = []
        self._seq = 0

    def __bool__(self) -> bool:
        return bool(self.items)

    def _add(self, start: int, end: int, text: str) -> None:
        item = (start, end, self._seq, text)
        self._seq += 1
        i = bisect.bisect_right(self.items, (start, end, item[2]))
        self.items.insert(i, item)
        self._starts.insert(i, start)

    def _inside(self, start: int, end: int) -> list[int]:
        """Indices of the edits that lie within [start, end], in order."""
        out = []
        i = bisect.bisect_left(self._starts, start)
        items = self.items
        while i < len(items) and items[i][0] <= end:
            if items[i][1] <= end:
                out.append(i)
            i += 1
        return out

    def render(self, start: int, end: int) -> str:
        """Text of ``data[start:end]`` with every edit inside the range applied."""
        parts: list[str] = []
        pos = start
        for i in self._inside(start, end):
            s, e, _, text = self.items[i]
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
        items = self.items
        lo = bisect.bisect_left(self._starts, start)
        i = lo
        while i < len(items) and items[i][0] < end:  # starting inside, ending beyond
            if items[i][1] > end and items[i][0] > start:
                return True
            i += 1
        i = lo - 1
        while i >= 0:  # starting before, ending inside
            s, e = items[i][0], items[i][1]
            if start < e < end:
                return True
            if e <= start and s < e:
                break  # sorted, non-overlapping: nothing earlier reaches further
            i -= 1
        return False

    def replace(self, start: int, end: int, text: str) -> None:
        if start < end:
            inside = self._inside(start, end)
            if inside:
                if inside[-1] - inside[0] + 1 == len(inside):
                    del self.items[inside[0]:inside[-1] + 1]
                    del self._starts[inside[0]:inside[-1] + 1]
                else:
                    drop = set(inside)
                    self.items = [it for k, it in enumerate(self.items) if k not in drop]
                    self._starts = [it[0] for it in self.items]
        self._add(start, end, text)

    def replace_node(self, node: Node, text: str) -> None:
        self.replace(node.start, node.end, text)

    def insert(self, pos: int, text: str) -> None:
        self._add(pos, pos, text)

    def apply(self) -> str:
        return self.render(0, len(self.data))
