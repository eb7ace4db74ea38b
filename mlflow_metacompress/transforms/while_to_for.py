"""``while_to_for``: rewrite while loops as for loops.

The inverse of NatGen's loop transformation (Chakraborty et al., FSE 2022) and Rabin et
al.'s "Loop Exchange" (IST 2021), also used by CODA (Tian et al., ASE 2023).
C/Java: ``while (c) B`` becomes ``for (; c; ) B`` (no update, so ``continue`` is safe).
Python: ``while c: B`` (without ``else``) becomes ``for _ in iter(int, 1):`` with
``if not (c): break`` as the first statement of the body.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import NameFactory, py_block_lines, py_block_on_own_lines, py_indent
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.base import register
from mlflow_metacompress.transforms.identifiers import get_analysis


def _braced(src: Source, edits: Edits, node: Node) -> bool:
    cond, body = node.child("condition"), node.child("body")
    if cond is None or body is None or cond.type != "parenthesized_expression" or len(cond.named_children) != 1:
        return False
    edits.replace_node(node, f"for (; {edits.render_node(cond.named_children[0])}; ) {edits.render_node(body)}")
    return True


def _python(src: Source, edits: Edits, node: Node, fresh: NameFactory) -> bool:
    cond, body = node.child("condition"), node.child("body")
    if (
        cond is None
        or body is None
        or node.child("alternative") is not None
        or not py_block_on_own_lines(src, node, body)
    ):
        return False
    indent, body_indent = py_indent(src, node), py_indent(src, body)
    unit = body_indent[len(indent) :] or "    "
    head = (
        f"for {fresh()} in iter(int, 1):\n{body_indent}if not ({edits.render_node(cond)}):\n{body_indent}{unit}break\n"
    )
    edits.replace_node(node, head + py_block_lines(src, body, edits.render_node(body)).rstrip())
    return True


@register("while_to_for", ("c", "java", "python"))
def while_to_for(src: Source, rng: random.Random) -> str | None:
    """Rewrite every eligible while loop as a for loop (innermost first)."""
    edits = Edits(src.data)
    changed = False
    fresh = NameFactory(src, rng)
    if src.language == "python" and {"iter", "int"} & (get_analysis(src).declared | get_analysis(src).params):
        return None
    for node in sorted(src.nodes("while_statement"), key=lambda n: n.end - n.start):
        changed |= _python(src, edits, node, fresh) if src.language == "python" else _braced(src, edits, node)
    return edits.apply() if changed else None
