"""``swap_operands``: mirror relational comparisons, ``a < b`` becomes ``b > a``.

NatGen's "operand swap" (Chakraborty et al., FSE 2022), also among the semantic-preserving
edits of Rabin et al. (IST 2021) and CODA (Tian et al., ASE 2023). Only operands without
side effects are swapped (no calls, assignments, increments), so evaluation order cannot
matter; non-primary operands are parenthesised. Python chained comparisons and
``in``/``is`` are left alone; the ``<``/``>`` of Java generics are not comparisons in the tree.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import is_pure, paren
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.base import register

_MIRROR = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


def _parts(src: Source, node: Node) -> tuple[Node, str, Node] | None:
    if src.language == "python":
        if node.type != "comparison_operator":
            return None
        operands = node.named_children
        ops = [c for c in node.children if not c.named]
        if len(operands) != 2 or len(ops) != 1:
            return None
        return operands[0], src.text(ops[0]), operands[1]
    left, right, op = node.child("left"), node.child("right"), node.child("operator")
    if left is None or right is None or op is None:
        return None
    return left, src.text(op), right


@register("swap_operands", ("c", "java", "python"))
def swap_operands(src: Source, rng: random.Random) -> str | None:
    """Mirror every side-effect-free relational comparison (innermost first)."""
    edits = Edits(src.data)
    kind = "comparison_operator" if src.language == "python" else "binary_expression"
    changed = False
    for node in sorted(src.nodes(kind), key=lambda n: n.end - n.start):
        parts = _parts(src, node)
        if parts is None or parts[1] not in _MIRROR:
            continue
        left, op, right = parts
        if not (is_pure(left, src.language) and is_pure(right, src.language)):
            continue
        new_left = paren(edits.render_node(right), right)
        new_right = paren(edits.render_node(left), left)
        before = src.data[left.end : right.start].decode("utf-8")
        spacing_l = before[: len(before) - len(before.lstrip())]
        spacing_r = before[len(before.rstrip()) :]
        edits.replace_node(node, f"{new_left}{spacing_l}{_MIRROR[op]}{spacing_r}{new_right}")
        changed = True
    return edits.apply() if changed else None
