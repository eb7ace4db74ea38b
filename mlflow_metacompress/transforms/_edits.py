"""Byte-range edits over a parsed sample, composable innermost first.

Rewrites replace byte ranges of the original code, so formatting and comments outside the
rewritten ranges survive byte for byte and tokens are never re-joined with spaces (the
defect of token-joining rewriters noted in the style guide). Edits stay sorted, so the
cost is near-linear in the number of edits even on million-byte functions (issue 12).
"""

from __future__ import annotations

import bisect

from mlflow_metacompress.transforms._reparse import record
from mlflow_metacompress.transforms._tree import Node, TransformError


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
        self._longest = 0  # the longest range ever added bounds how far back an edit can reach

    def __bool__(self) -> bool:
        return bool(self.items)

    def _add(self, start: int, end: int, text: str) -> None:
        item = (start, end, self._seq, text)
        self._seq += 1
        self._longest = max(self._longest, end - start)
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
        while i >= 0 and items[i][0] >= start - self._longest:  # starting before, ending inside
            if start < items[i][1] < end:
                return True
            i -= 1
        return False

    def replace(self, start: int, end: int, text: str) -> None:
        if start < end:
            inside = self._inside(start, end)
            if inside:
                if inside[-1] - inside[0] + 1 == len(inside):
                    del self.items[inside[0] : inside[-1] + 1]
                    del self._starts[inside[0] : inside[-1] + 1]
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
        """The rewritten code; its edits are recorded so that the output can be re-parsed
        incrementally (:mod:`._reparse`)."""
        out = self.render(0, len(self.data))
        record(out, self.data, self.items)
        return out
