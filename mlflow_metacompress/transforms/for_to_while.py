"""``for_to_while``: rewrite counted loops as while loops.

NatGen's "loop transformation" (Chakraborty et al., FSE 2022), Rabin et al.'s "Loop
Exchange" (IST 2021) and CODA's structure transformations (Tian et al., ASE 2023).

C/Java: ``for (init; c; u) B`` becomes ``{ init; while (c) { B u; } }``: the outer braces
keep the init's scope, and ``B`` stays its own block so it cannot shadow the update. Loops
whose body has a ``continue`` targeting them (including one inside a ``switch``, or any
labelled ``continue``) are skipped, and in Java so are bodies that cannot complete normally
(javac would reject the appended update as unreachable).

Python: ``for x in range(...)`` becomes an index loop over a single evaluation of the range;
the index is advanced before the body so ``continue`` is safe, ``x`` keeps its final value
and the ``else`` clause is kept.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import (
    NameFactory,
    java_may_not_complete,
    py_block_lines,
    py_block_on_own_lines,
    py_indent,
)
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import Node, Source
from mlflow_metacompress.transforms.base import register
from mlflow_metacompress.transforms.identifiers import get_analysis

_LOOPS = frozenset({"for_statement", "while_statement", "do_statement", "enhanced_for_statement", "for_range_loop"})


def _continue_targets(src: Source, loop: Node, body: Node) -> bool:
    """True if some ``continue`` in ``body`` targets ``loop`` (or is labelled)."""
    if "continued_loops" not in src.cache:  # one pass over the continues, not one walk per loop
        targeted: set[int] = set()
        labelled: list[Node] = []
        for node in src.nodes("continue_statement"):
            if src.language == "java" and node.named_children:
                labelled.append(node)
                continue
            target = src.enclosing(node, _LOOPS)
            if target is not None:
                targeted.add(id(target))
        src.cache["continued_loops"] = (targeted, labelled)
    targeted, labelled = src.cache["continued_loops"]
    return id(loop) in targeted or any(body.contains(n) for n in labelled)


def _braced_rewrite(src: Source, edits: Edits, node: Node) -> bool:
    body = node.child("body")
    if body is None or _continue_targets(src, node, body):
        return False
    init_field = "initializer" if src.language == "c" else "init"
    inits = node.children_by_field(init_field)
    updates = node.children_by_field("update")
    cond = node.child("condition")
    if src.language == "java" and updates and java_may_not_complete(src, body):
        return False
    init_text = "".join(
        edits.render_node(i) + ("" if i.type in ("declaration", "local_variable_declaration") else "; ") for i in inits
    )
    cond_text = edits.render_node(cond) if cond is not None else ("1" if src.language == "c" else "true")
    upd_text = "".join(" " + edits.render_node(u) + ";" for u in updates)
    body_text = edits.render_node(body)
    loop = f"while ({cond_text}) {{ {body_text}{upd_text} }}"
    edits.replace_node(node, f"{{ {init_text} {loop} }}" if inits else loop)
    return True


def _python_rewrite(src: Source, edits: Edits, node: Node, fresh: NameFactory) -> bool:
    left, right, body = node.child("left"), node.child("right"), node.child("body")
    if left is None or right is None or left.type != "identifier" or right.type != "call":
        return False
    if any(not c.named and src.text(c) == "async" for c in node.children):
        return False
    fn, args = right.child("function"), right.child("arguments")
    if fn is None or src.text(fn) != "range" or args is None:
        return False
    if not 1 <= len(args.named_children) <= 3 or any(
        a.type in ("keyword_argument", "list_splat", "dictionary_splat") for a in args.named_children
    ):
        return False
    if body is None or not py_block_on_own_lines(src, node, body):
        return False
    indent = py_indent(src, node)
    body_indent = py_indent(src, body)
    rng_name, idx = fresh(), fresh("index")
    var = src.text(left)
    lines = [
        f"{rng_name} = {edits.render_node(right)}",
        f"{indent}{idx} = 0",
        f"{indent}while {idx} < len({rng_name}):",
        f"{body_indent}{var} = {rng_name}[{idx}]",
        f"{body_indent}{idx} += 1",
        py_block_lines(src, body, edits.render_node(body)).rstrip(),
    ]
    alt = node.child("alternative")
    if alt is not None:
        lines.append(indent + edits.render_node(alt).rstrip())
    edits.replace_node(node, "\n".join(lines))
    return True


@register("for_to_while", ("c", "java", "python"))
def for_to_while(src: Source, rng: random.Random) -> str | None:
    """Rewrite every eligible for loop as a while loop (innermost first)."""
    edits = Edits(src.data)
    changed = False
    if src.language == "python":
        shadowed = get_analysis(src).declared | set(get_analysis(src).params)
        if {"range", "len"} & shadowed:
            return None
        fresh = NameFactory(src, rng)
    for node in sorted(src.nodes("for_statement"), key=lambda n: n.end - n.start):
        if src.language == "python":
            changed |= _python_rewrite(src, edits, node, fresh)
        else:
            changed |= _braced_rewrite(src, edits, node)
    return edits.apply() if changed else None
