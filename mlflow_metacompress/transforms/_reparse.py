"""Re-parse a transformation's output incrementally, from the edits that produced it.

Every changed output is re-parsed before an evaluation sees it (the safety check of
:func:`~.base.run`), and ``compose`` parses each intermediate step to build on it. A fresh
parse of every output was the largest single cost of ``transform_many`` (about 38% with
all ten transformations on Devign). Most rewrites touch a few byte ranges, so the output
is parsed here as tree-sitter's incremental parsing intends: the sample's tree is copied,
told about each edit (:meth:`tree_sitter.Tree.edit`), and handed to the parser as the old
tree, which then re-uses every subtree the edits did not touch. The result is the tree a
fresh parse gives (checked node for node, fields included, on every Devign output of the
ten C transformations), at about 60% of the cost.

:meth:`~._edits.Edits.apply` records the edits behind the string it returns
(:func:`record`); :func:`reparse` uses them only when handed that very string object for
the very bytes they apply to, and otherwise parses from scratch, so a transformation that
post-processes its output, or builds it without :class:`~._edits.Edits`, is still checked.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Sequence
from typing import Any

from mlflow_metacompress.transforms._tree import Source, _parser, encode_code

_last = threading.local()
_NEWLINE = re.compile(b"\n")
MAX_EDITS = 40
"""Above this many edits a fresh parse is cheaper: telling the tree about each edit costs more
than the re-use saves (measured on Devign outputs: 54 µs against 136 µs for 1–2 edits, 116
against 152 for 9–32, 204 against 172 for 33–64, 499 against 363 beyond)."""

Edit = tuple[int, int, int, str]  # start, end, sequence number, replacement text (as in Edits.items)


def record(out: str, data: bytes, items: Sequence[Edit]) -> None:
    """Remember that ``out`` is ``data`` with ``items`` applied (this thread's last apply)."""
    _last.value = (out, data, tuple(items))


def _edits_for(out: str, src: Source) -> tuple[Edit, ...] | None:
    value = getattr(_last, "value", None)
    if value is None or value[0] is not out or value[1] is not src.data or src.tree is None:
        return None
    return value[2] if len(value[2]) <= MAX_EDITS else None


def _point(newlines: list[int], pos: int) -> tuple[int, int]:
    """tree-sitter's (row, byte column) of byte ``pos``; rows count ``\\n`` only."""
    row = bisect.bisect_left(newlines, pos)
    return row, pos - (newlines[row - 1] + 1 if row else 0)


def _edited_copy(src: Source, edits: Sequence[Edit]) -> Any:
    """A copy of ``src``'s tree told about ``edits``, applied last to first so that each
    edit's positions are still those of the original bytes."""
    newlines = src.cache.get("newlines")
    if newlines is None:
        newlines = src.cache["newlines"] = [m.start() for m in _NEWLINE.finditer(src.data)]
    tree = src.tree.copy()
    for start, end, _, text in reversed(edits):
        new = text.encode("utf-8")
        start_point = _point(newlines, start)
        lines = new.count(b"\n")
        if lines:
            new_end_point = (start_point[0] + lines, len(new) - new.rfind(b"\n") - 1)
        else:
            new_end_point = (start_point[0], start_point[1] + len(new))
        tree.edit(
            start_byte=start,
            old_end_byte=end,
            new_end_byte=start + len(new),
            start_point=start_point,
            old_end_point=_point(newlines, end),
            new_end_point=new_end_point,
        )
    return tree


def reparse(src: Source, out: str) -> Any:
    """The tree-sitter tree of ``out``, a rewrite of ``src``: incremental when ``out`` is the
    string :meth:`~._edits.Edits.apply` last returned for ``src``'s bytes, else a fresh parse."""
    edits = _edits_for(out, src)
    data = encode_code(out)
    parser = _parser(src.language)
    if edits is None:
        return parser.parse(data)
    return parser.parse(data, _edited_copy(src, edits))


def parses_cleanly_from(src: Source, out: str) -> bool:
    """True if ``out`` (a rewrite of ``src``) parses without ERROR or MISSING nodes."""
    return not reparse(src, out).root_node.has_error


def source_from(src: Source, out: str) -> Source:
    """The :class:`Source` of ``out``, a rewrite of ``src``, parsed incrementally when possible."""
    return Source(out, src.language, tree=reparse(src, out))
