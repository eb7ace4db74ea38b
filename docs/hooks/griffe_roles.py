"""Griffe extension: render the docstrings' Sphinx roles as Markdown code.

The package's docstrings cite code with Sphinx roles (``:func:`transform_many```,
``:class:`~.config.EvaluatorConfig```) and introduce literal blocks with ``::``; mkdocstrings
renders docstrings as Markdown, where both would show verbatim. This turns a role into a
code span (the last dotted component when the target starts with ``~``, as Sphinx shows it)
and a trailing ``::`` into ``:``, leaving the indented block below it a code block.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const|ref|doc|term):`([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(1)
    if "<" in target and target.endswith(">"):  # :ref:`text <target>`
        target = target[: target.index("<")].strip()
    if target.startswith("~"):
        target = target.lstrip("~.").rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def clean(text: str) -> str:
    text = ROLE.sub(_role, text)
    return re.sub(r"(?<=\S)::$", ":", text, flags=re.M)


class SphinxRoles(griffe.Extension):
    """Rewrite each object's docstring once, as griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = clean(obj.docstring.value)
