"""The docs' generated parts, written into the Markdown itself so the pages read in the
repository as they do on the site.

A page marks a generated part with two HTML comments (invisible on GitHub and on the site)::

    <!-- generated: evaluator-config-keys -->
    ...the table...
    <!-- end generated -->

    <!-- generated: include README.md:fresh -->
    ...the README's ``fresh`` section, verbatim...
    <!-- end generated -->

    <!-- generated: include CITATION.cff fence=yaml -->
    ...the whole file in a ```yaml fence...
    <!-- end generated -->

``include PATH:SECTION`` takes the lines between ``<!-- --8<-- [start:SECTION] -->`` and
``<!-- --8<-- [end:SECTION] -->`` of PATH (the markers pymdownx.snippets reads);
``include PATH`` takes the whole file. The start marker's indentation is applied to every
generated line (a part inside a content tab). PATH is relative to the repository root.

``python docs/hooks/generated.py`` rewrites every stale part in place (``--check`` only
lists them, exit 1 when any is stale). As an MkDocs hook, a stale part is a warning
(``mkdocs build --strict`` fails) and the site gets the fresh text; ``tests/core/test_docs.py``
fails on a stale part too.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.generated")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
START = re.compile(r"^(?P<indent>[ ]*)<!-- generated: (?P<what>.+?) -->[ ]*$")
END = re.compile(r"^[ ]*<!-- end generated -->[ ]*$")
REGENERATE = "python docs/hooks/generated.py"


class GeneratedError(ValueError):
    """A malformed marker, or an include whose file or section does not exist."""


def _keys_table() -> str:
    source = Path(__file__).with_name("evaluator_config.py")
    spec = importlib.util.spec_from_file_location("evaluator_config_hook", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.keys_table())


def section(path: str, name: str | None) -> str:
    """The text of ``path`` (relative to the repository root), or of its snippet section ``name``."""
    file = ROOT / path
    if not file.is_file():
        raise GeneratedError(f"include {path!r}: no such file under {ROOT}")
    text = file.read_text(encoding="utf-8")
    if name is None:
        return text.rstrip("\n")
    start, end = f"<!-- --8<-- [start:{name}] -->", f"<!-- --8<-- [end:{name}] -->"
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == start]
    ends = [i for i, line in enumerate(lines) if line.strip() == end]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise GeneratedError(
            f"include {path}:{name}: {path} needs exactly one {start} line and one {end} line after it"
        )
    return "\n".join(lines[starts[0] + 1 : ends[0]])


def render(what: str) -> str:
    """The text a ``<!-- generated: WHAT -->`` part holds (without indentation)."""
    words = what.split()
    if words == ["evaluator-config-keys"]:
        return _keys_table()
    if words and words[0] == "include" and len(words) in (2, 3):
        target, fence = words[1], None
        if len(words) == 3:
            if not words[2].startswith("fence="):
                raise GeneratedError(f"generated: {what!r}: the third word must be fence=LANG")
            fence = words[2].removeprefix("fence=")
        path, _, name = target.partition(":")
        text = section(path, name or None)
        return f"```{fence}\n{text}\n```" if fence is not None else text
    raise GeneratedError(
        f"generated: {what!r}: expected 'evaluator-config-keys' or 'include PATH[:SECTION] [fence=LANG]'"
    )


def refresh(markdown: str, where: str = "page") -> tuple[str, list[str]]:
    """``markdown`` with every generated part re-rendered, and the parts that were stale."""
    lines = markdown.split("\n")
    out: list[str] = []
    stale: list[str] = []
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        out.append(lines[i])
        i += 1
        if m is None:
            continue
        j = i
        while j < len(lines) and not END.match(lines[j]) and not START.match(lines[j]):
            j += 1
        if j == len(lines) or not END.match(lines[j]):
            raise GeneratedError(f"{where}: '<!-- generated: {m['what']} -->' has no '<!-- end generated -->' after it")
        indent = m["indent"]
        fresh = ["", *(indent + line if line else "" for line in render(m["what"]).split("\n")), ""]
        if lines[i:j] != fresh:
            stale.append(m["what"])
        out.extend(fresh)
        out.append(lines[j])
        i = j + 1
    return "\n".join(out), stale


def pages() -> list[Path]:
    """Every docs page and the README that hold a generated part."""
    found = [p for p in sorted(DOCS.rglob("*.md")) if "<!-- generated: " in p.read_text(encoding="utf-8")]
    return found


def main(argv: list[str] | None = None) -> int:
    """Rewrite stale generated parts in place (``--check``: only report them)."""
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    stale_pages = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        fresh, stale = refresh(text, str(page.relative_to(ROOT)))
        if stale:
            stale_pages.append(page)
            print(f"{page.relative_to(ROOT)}: {'stale' if check else 'regenerated'}: {', '.join(stale)}")
            if not check:
                page.write_text(fresh, encoding="utf-8")
    return 1 if check and stale_pages else 0


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs hook signature)
    """MkDocs hook: render the fresh parts; a stale one is a warning (``--strict`` fails)."""
    fresh, stale = refresh(markdown, page.file.src_path)
    if stale:
        where = page.file.src_path
        log.warning("docs/%s has stale generated parts (%s): run `%s`", where, ", ".join(stale), REGENERATE)
    return fresh


if __name__ == "__main__":
    sys.exit(main())
