"""Scope resolution shared by the per-language scope analyses (C, Java, Python).

Holds the :class:`Analysis` result, the scope node types of each language and the
resolution step: a name is a renamable local when every occurrence resolves to a
declaration in an enclosing scope inside a function unit. The conditions implement the
identifier-renaming rules of NatGen (Chakraborty et al., FSE 2022), CODA (Tian et al.,
ASE 2023) and Rabin et al. (IST 2021), with the pitfalls measured on real programs listed
in issue 3.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from mlflow_metacompress.transforms._tree import UNITS, Node, Source

SCOPES = {
    "c": frozenset({"compound_statement", "for_statement", "function_definition"}),
    "java": frozenset(
        {
            "block",
            "for_statement",
            "enhanced_for_statement",
            "catch_clause",
            "switch_block",
            "try_with_resources_statement",
            "lambda_expression",
            "method_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
        }
    ),
    "python": frozenset(
        {
            "function_definition",
            "lambda",
            "list_comprehension",
            "set_comprehension",
            "dictionary_comprehension",
            "generator_expression",
            "class_definition",
        }
    ),
}
FUNCTION = frozenset({"function_definition"})


@dataclass
class Analysis:
    """Result of scope analysis: occurrences, declarations and blocked names."""

    occurrences: dict[str, list[Node]] = field(default_factory=dict)
    valid: dict[str, bool] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)
    params: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    macros: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)


class _Ranges:
    """Byte ranges of some nodes; ``covers(node)`` says whether one of them contains ``node``
    in O(log n) (prefix maxima of the ends over ranges sorted by start)."""

    def __init__(self, nodes: list[Node]) -> None:
        spans = sorted((n.start, n.end) for n in nodes)
        self.starts = [s for s, _ in spans]
        self.max_end: list[int] = []
        best = -1
        for _, e in spans:
            best = max(best, e)
            self.max_end.append(best)

    def covers(self, node: Node) -> bool:
        i = bisect.bisect_right(self.starts, node.start) - 1
        return i >= 0 and self.max_end[i] >= node.end


def record(out: Analysis, name: str, node: Node) -> None:
    if name not in out.occurrences:
        out.occurrences[name] = []
        out.order.append(name)
    out.occurrences[name].append(node)


def resolve(src: Source, out: Analysis, decls: dict[str, dict[int, Node]], scopes: frozenset[str]) -> None:
    """Mark a name valid iff each occurrence sees a declaration in an enclosing scope, inside
    a function unit. Scopes are byte ranges, so each occurrence costs O(log n), not its depth."""
    units = _Ranges(src.nodes(*UNITS[src.language]))
    for name, nodes in out.occurrences.items():
        owners = _Ranges([n for n in decls.get(name, {}).values() if n.type in scopes])
        ok = bool(owners.starts)
        for node in nodes:
            if not ok:
                break
            ok = owners.covers(node) and units.covers(node)
        out.valid[name] = ok
