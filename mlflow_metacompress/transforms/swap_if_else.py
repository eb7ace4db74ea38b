"""``swap_if_else``: ``if (c) A else B`` becomes ``if (!(c)) B else A``.

NatGen's "block swap" (Chakraborty et al., FSE 2022), Rabin et al.'s "Boolean Exchange"
family (IST 2021) and CODA's structure transformations (Tian et al., ASE 2023). In C and
Java both branches are braced, so a dangling ``else`` cannot re-attach; in Python an
``elif`` chain is nested under the new ``else`` (re-indented, skipped when it contains a
multi-line string). Nested ifs are rewritten innermost first.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import (
    py_block_lines,
    py_block_on_own_lines,
    py_has_multiline_string,
    py_indent,
    reindent,
)
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.base import register

_BLOCKS = {"compound_statement", "block"}


def _braced(edits: Edits, node: Node) -> str:
    text = edits.render_node(node)
    return text if node.type in _BLOCKS else "{ " + text + " }"


def _swap_braced(src: Source, edits: Edits, node: Node) -> bool:
    cond, cons, alt = node.child("condition"), node.child("consequence"), node.child("alternative")
    if cond is None or cons is None or alt is None:
        return False
    if alt.type == "else_clause":  # C wraps the else branch
        inner = [c for c in alt.named_children if c.type != "comment"]
        if len(inner) != 1:
            return False
        alt = inner[0]
    if cond.type != "parenthesized_expression" or len(cond.named_children) != 1:
        return False
    inner_cond = edits.render_node(cond.named_children[0])
    edits.replace_node(node, f"if (!({inner_cond})) {_braced(edits, alt)} else {_braced(edits, cons)}")
    return True


def _swap_python(src: Source, edits: Edits, node: Node) -> bool:
    cond, cons = node.child("condition"), node.child("consequence")
    alts = node.children_by_field("alternative")
    if cond is None or cons is None or not alts or not py_block_on_own_lines(src, node, cons):
        return False
    indent = py_indent(src, node)
    first = alts[0]
    body_a = py_block_lines(src, cons, edits.render_node(cons))
    if first.type == "else_clause" and len(alts) == 1:
        else_block = first.child("body")
        if else_block is None or not py_block_on_own_lines(src, first, else_block):
            return False
        body_b = py_block_lines(src, else_block, edits.render_node(else_block))
    else:
        if py_has_multiline_string(src, node) or not all(
            py_block_on_own_lines(src, a, a.child("consequence") or a.child("body")) for a in alts
        ):
            return False
        unit = py_indent(src, cons)[len(indent) :] or "    "
        chain = "if" + edits.render(first.start + len("elif"), alts[-1].end)
        body_b = reindent(indent + chain, unit)
    cond_text = edits.render_node(cond)
    edits.replace(node.start, node.end, f"if not ({cond_text}):\n{body_b.rstrip()}\n{indent}else:\n{body_a.rstrip()}")
    return True


@register("swap_if_else", ("c", "java", "python"))
def swap_if_else(src: Source, rng: random.Random) -> str | None:
    """Swap the branches of every if/else (innermost first) and negate the condition."""
    edits = Edits(src.data)
    swap = _swap_python if src.language == "python" else _swap_braced
    changed = False
    for node in sorted(src.nodes("if_statement"), key=lambda n: n.end - n.start):
        changed |= swap(src, edits, node)
    return edits.apply() if changed else None
