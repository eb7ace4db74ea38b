"""Side-by-side token diff of a rewritten (transformed or adversarial) program against its
original, changed tokens highlighted (:mod:`difflib` over identifier, number, whitespace
and punctuation tokens, so a renamed variable is one changed token, not a changed line)."""

from __future__ import annotations

import difflib
import re
from html import escape

TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\s+|.", re.S)
MAX_CHARS = 4000  # per side: an example stays readable and the page small


def tokens(code: str) -> list[str]:
    """Identifiers, numbers, whitespace runs and single other characters; ``"".join`` gives ``code`` back."""
    return TOKEN.findall(code)


def _clip(code: str) -> tuple[str, bool]:
    return (code[:MAX_CHARS], True) if len(code) > MAX_CHARS else (code, False)


def side_by_side(original: str, rewritten: str, left: str = "original", right: str = "rewritten") -> str:
    """Two ``<pre>`` panes: ``original`` with removed tokens marked ``<del>``, ``rewritten``
    with inserted tokens marked ``<ins>`` (whitespace-only changes are not highlighted)."""
    original, cut_a = _clip(str(original))
    rewritten, cut_b = _clip(str(rewritten))
    a, b = tokens(original), tokens(rewritten)
    out_a: list[str] = []
    out_b: list[str] = []
    changed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            out_a.append(escape(old))
            out_b.append(escape(new))
            continue
        changed += 1
        out_a.append(f"<del>{escape(old)}</del>" if old.strip() else escape(old))
        out_b.append(f"<ins>{escape(new)}</ins>" if new.strip() else escape(new))
    more = '<span class="clip">… (cut)</span>'
    return (
        f'<div class="diff" data-changes="{changed}"><div><div class="pane-title">{escape(left)}</div><pre '
        f'class="code">{"".join(out_a)}{more if cut_a else ""}</pre></div><div><div '
        f'class="pane-title">{escape(right)}</div><pre class="code">{"".join(out_b)}{more if cut_b else ""}</pre></div>'
        "</div>"
    )


def code_block(code: str) -> str:
    """One program, escaped (and cut at ``MAX_CHARS``)."""
    text, cut = _clip(str(code))
    return f'<pre class="code">{escape(text)}{"<span class=clip>… (cut)</span>" if cut else ""}</pre>'
