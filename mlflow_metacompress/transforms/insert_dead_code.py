"""``insert_dead_code``: insert an unreachable block at the start of a random block.

NatGen's "dead code insertion" (Chakraborty et al., FSE 2022), Rabin et al.'s "Unused
Statement" (IST 2021) and CODA's structure perturbations (Tian et al., ASE 2023).
C uses ``if (0) { ... }``, Java ``if (false) { ... }`` (javac rejects ``while (false)`` as
unreachable but allows ``if (false)``), Python ``if False:``. The dead block declares a
fresh variable, so it never shadows an enclosing local. The block is inserted first in a
block (hence always reachable if the block is), after ``this(...)``/``super(...)`` in Java
constructors and after a Python docstring.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import NameFactory, py_block_on_own_lines, py_indent
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import UNITS, Node, Source
from mlflow_metacompress.transforms.base import register


def _dead_body(rng: random.Random, name: str, language: str) -> list[str]:
    k, m = rng.randint(1, 9), rng.randint(2, 64)
    typ = "" if language == "python" else "int "
    end = "" if language == "python" else ";"
    templates = [
        [f"{typ}{name} = {k}{end}", f"{name} = {name} * {m} + 1{end}"],
        [f"{typ}{name} = {m}{end}", f"{name} = {name} - {k}{end}"],
        [f"{typ}{name} = {k}{end}", f"{name} = ({name} + {m}) % {k + 1}{end}"],
    ]
    return rng.choice(templates)


def _braced_sites(src: Source) -> list[Node]:
    kinds = ("compound_statement",) if src.language == "c" else ("block", "constructor_body")
    out = []
    for block in src.nodes(*kinds):
        parent = block.parent
        if parent is None or src.enclosing(block, UNITS[src.language]) is None:
            continue
        if parent.type in ("switch_statement", "statement_expression", "initializer_list"):
            continue
        out.append(block)
    return out


def _insert_braced(src: Source, edits: Edits, block: Node, lines: list[str]) -> None:
    cond = "0" if src.language == "c" else "false"
    dead = f"if ({cond}) {{ {' '.join(lines)} }}"
    stmts = [c for c in block.named_children if "comment" not in c.type]
    after = block.start + 1
    if stmts and stmts[0].type == "explicit_constructor_invocation":
        after = stmts[0].end
        stmts = stmts[1:]
    if (
        stmts
        and src.row(stmts[0]) > src.row(src.root)
        and src.indent_of(stmts[0])
        and src.data.count(b"\n", after, stmts[0].start)
    ):
        edits.insert(after, "\n" + src.indent_of(stmts[0]) + dead)
    else:
        edits.insert(after, " " + dead + " ")


def _python_sites(src: Source) -> list[Node]:
    out = []
    for block in src.nodes("block"):
        header = block.parent
        if header is None or src.enclosing(block, UNITS["python"]) is None:
            continue
        if header.type == "class_definition" or not py_block_on_own_lines(src, header, block):
            continue
        out.append(block)
    return out


def _insert_python(src: Source, block: Node, edits: Edits, lines: list[str], header: Node) -> None:
    stmts = [c for c in block.named_children if c.type != "comment"]  # a comment may sit at column 0
    if not stmts:
        raise ValueError("no statement")
    indent = py_indent(src, stmts[0])
    unit = indent[len(py_indent(src, header)) :] or "    "
    text = "if False:\n" + "".join(f"{indent}{unit}{line}\n" for line in lines)
    first = stmts[0]
    docstring = (
        header.type == "function_definition"
        and first.type == "expression_statement"
        and len(first.named_children) == 1
        and first.named_children[0].type == "string"
    )
    if docstring and len(stmts) > 1:
        first = stmts[1]
    if docstring and len(stmts) == 1:
        edits.insert(first.end, "\n" + indent + text.rstrip("\n"))
    elif src.indent_of(first) == indent and src.line_start(first.start) + len(indent) == first.start:
        edits.insert(first.start, text + indent)
    else:
        raise ValueError("unexpected layout")


@register("insert_dead_code", ("c", "java", "python"))
def insert_dead_code(src: Source, rng: random.Random) -> str | None:
    """Insert one unreachable block, with a fresh local, at a seed-chosen block start."""
    sites = _python_sites(src) if src.language == "python" else _braced_sites(src)
    if not sites:
        return None
    block = rng.choice(sites)
    name = NameFactory(src, rng)()
    lines = _dead_body(rng, name, src.language)
    edits = Edits(src.data)
    if src.language == "python":
        if block.parent is None:  # a block always sits under its statement's header
            return None
        try:
            _insert_python(src, block, edits, lines, block.parent)
        except ValueError:
            return None
    else:
        _insert_braced(src, edits, block, lines)
    return edits.apply()
