"""Incremental re-parsing (transforms._reparse) gives exactly the tree a fresh parse gives.

The oracle is tree-sitter itself, parsing each output from scratch: the incremental tree must
print the same S-expression (node types, fields, nesting), and the safety check must still
catch a broken output."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mlflow_metacompress.transforms import _reparse, list_transforms
from mlflow_metacompress.transforms._edits import Edits
from mlflow_metacompress.transforms._tree import Source, _parser
from mlflow_metacompress.transforms.base import TransformReason, run

PROGRAMS = Path(__file__).parents[1] / "programs"
DEVIGN = Path(__file__).resolve().parents[3] / "shared" / "data" / "devign" / "test.jsonl"


def _functions(language: str) -> list[str]:
    """Unit-sized samples: each C/Java program split on blank lines, the Python program whole."""
    out = []
    for path in sorted((PROGRAMS / language).iterdir()):
        text = path.read_text()
        out += [text] if language == "python" else [b for b in text.split("\n\n") if b.strip()]
    return out


def _check_outputs(codes: list[str], language: str) -> int:
    """Apply every transformation; for each output built by Edits, compare the incremental
    tree with a fresh parse. Returns how many outputs were compared."""
    parser, compared = _parser(language), 0
    for code in codes:
        src = Source(code, language)
        if src.has_error:
            continue
        for name in list_transforms(language):
            for seed in range(2):
                spec_out = _edited_output(src, name, seed)
                if spec_out is None:
                    continue
                fresh = parser.parse(spec_out.encode())
                incremental = _reparse.reparse(src, spec_out)
                assert str(incremental.root_node) == str(fresh.root_node), (name, seed, code[:80])
                assert incremental.root_node.has_error == fresh.root_node.has_error
                compared += 1
    return compared


def _edited_output(src: Source, name: str, seed: int) -> str | None:
    """The transformation's raw output when it came from Edits.apply for ``src``, else None."""
    from mlflow_metacompress.transforms.base import get

    out = get(name, src.language).fn(src, random.Random(f"{name}:{seed}"))
    return out if out is not None and _reparse._edits_for(out, src) is not None else None


@pytest.fixture
def every_output_incremental(monkeypatch):
    """Compare outputs with any number of edits (in use, many edits parse from scratch)."""
    monkeypatch.setattr(_reparse, "MAX_EDITS", 10**9)


@pytest.mark.parametrize("language", ["c", "java", "python"])
def test_incremental_tree_equals_a_fresh_parse_on_every_output(language, every_output_incremental):
    assert _check_outputs(_functions(language), language) >= 10


@pytest.mark.slow
@pytest.mark.skipif(not DEVIGN.exists(), reason="../shared/data is absent")
def test_incremental_tree_equals_a_fresh_parse_on_devign(every_output_incremental):
    rows = [json.loads(line)["func"] for line in DEVIGN.read_text().splitlines()[:150]]
    assert _check_outputs(rows, "c") >= 500


def test_a_broken_edit_is_still_caught():
    src = Source("int f(int a) { return a + 1; }", "c")
    edits = Edits(src.data)
    plus = src.data.index(b"+")
    edits.replace(plus, plus + 1, "+ +")  # "a + + 1" parses (unary plus); "a + ) 1" must not
    assert _reparse.parses_cleanly_from(src, edits.apply())
    edits = Edits(src.data)
    edits.replace(plus, plus + 1, "+ )")
    out = edits.apply()
    assert _reparse._edits_for(out, src) is not None  # the incremental path is the one tested
    assert not _reparse.parses_cleanly_from(src, out)


def test_many_edits_parse_from_scratch(monkeypatch):
    src = Source("int f(int a) { return a + a + a; }", "c")
    edits = Edits(src.data)
    for i, b in enumerate(src.data):
        if b == ord("a") and src.data[i - 1 : i] in (b" ", b"("):
            edits.replace(i, i + 1, "b")
    out = edits.apply()
    assert _reparse._edits_for(out, src) is not None
    monkeypatch.setattr(_reparse, "MAX_EDITS", 2)
    assert _reparse._edits_for(out, src) is None and _reparse.parses_cleanly_from(src, out)


def test_edits_apply_only_to_their_own_string_and_bytes():
    src = Source("int f(int a) { return a; }", "c")
    other = Source("int g(int b) { return b; }", "c")
    edits = Edits(src.data)
    edits.insert(src.data.index(b"return"), "a = a;\n  ")
    out = edits.apply()
    assert _reparse._edits_for(out, src) is not None
    assert _reparse._edits_for(out, other) is None  # other bytes: a fresh parse
    assert _reparse._edits_for(out + " ", src) is None  # a post-processed output: a fresh parse
    assert _reparse.parses_cleanly_from(other, out)  # and the fresh parse still answers


def test_run_reports_invalid_output_found_by_the_incremental_check(monkeypatch):
    """A transformation whose Edits produce broken code is refused through the incremental path."""
    from mlflow_metacompress.transforms import base

    def broken(src, rng):
        edits = Edits(src.data)
        edits.insert(src.data.index(b"{") + 1, " if (")
        return edits.apply()

    monkeypatch.setitem(base.REGISTRY, "broken_for_test", base.Transformation("broken_for_test", ("c",), broken))
    calls = []
    real = _reparse._edited_copy
    monkeypatch.setattr(_reparse, "_edited_copy", lambda *a: calls.append(1) or real(*a))
    result = run(Source("int f(int a) { return a; }", "c"), "broken_for_test")
    assert result.reason is TransformReason.INVALID_OUTPUT and calls == [1]
