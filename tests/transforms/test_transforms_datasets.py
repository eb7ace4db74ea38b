"""Every transformation's output parses cleanly whenever its input did, on real code:
Devign C and BigCloneBench Java from ../shared/data (skipped when absent), plus Python
stdlib functions. Issue 3, "Done when"."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import random
from pathlib import Path

import pytest

from mlflow_metacompress.transforms import TransformStatus, list_transforms, transform_many
from mlflow_metacompress.transforms._tree import Source
from mlflow_metacompress.transforms.base import parses_cleanly, run

DATA = Path(os.environ.get("METACOMPRESS_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
SAMPLE = 300


def _sample(path: Path, n: int) -> list[str]:
    rows = [json.loads(line)["func"] for line in path.read_text().splitlines() if line.strip()]
    return random.Random(20240607).sample(rows, min(n, len(rows)))


def _check_outputs_parse(codes: list[str], language: str) -> dict[str, int]:
    changed = {name: 0 for name in list_transforms(language)}
    failures = []
    for i, code in enumerate(codes):
        src = Source(code, language)
        if src.has_error:
            continue
        for name in changed:
            result = run(src, name, seed=i, verify=False)  # no safety net
            if result.changed:
                changed[name] += 1
                if not parses_cleanly(result.code, language):
                    failures.append((name, i))
    assert not failures, f"{len(failures)} outputs do not parse, e.g. {failures[:5]}"
    return changed


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.skipif(not (DATA / "devign" / "test.jsonl").exists(), reason="../shared/data absent")
def test_devign_outputs_parse() -> None:
    changed = _check_outputs_parse(_sample(DATA / "devign" / "test.jsonl", SAMPLE), "c")
    assert all(count > 0 for count in changed.values()), changed


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.skipif(not (DATA / "bigclonebench" / "data.jsonl").exists(), reason="../shared/data absent")
def test_bigclonebench_outputs_parse() -> None:
    changed = _check_outputs_parse(_sample(DATA / "bigclonebench" / "data.jsonl", SAMPLE), "java")
    assert all(count > 0 for count in changed.values()), changed


def python_corpus(
    modules: tuple[str, ...] = (
        "textwrap",
        "difflib",
        "shlex",
        "fractions",
        "calendar",
        "ipaddress",
        "pprint",
        "configparser",
    ),
) -> list[str]:
    """Top-level functions and classes of pure-Python stdlib modules."""
    out = []
    for name in modules:
        text = Path(importlib.util.find_spec(name).origin).read_text()
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.decorator_list:
                out.append(ast.get_source_segment(text, node))
    return out


@pytest.mark.slow
def test_python_stdlib_outputs_parse() -> None:
    changed = _check_outputs_parse(python_corpus(), "python")
    assert all(count > 0 for count in changed.values()), changed


@pytest.mark.shared_data
@pytest.mark.skipif(not (DATA / "devign" / "test.jsonl").exists(), reason="../shared/data absent")
def test_transform_many_on_devign_reports_parse_errors_without_raising() -> None:
    codes = _sample(DATA / "devign" / "test.jsonl", 60)
    results = transform_many(codes, ["swap_if_else", "rename_variables"], "c", seed=3)
    statuses = [r.status for r in results["swap_if_else"]]
    expected_errors = sum(Source(c, "c").has_error for c in codes)
    assert statuses.count(TransformStatus.PARSE_ERROR) == expected_errors > 0
    for r, code in zip(results["rename_variables"], codes, strict=True):
        assert r.code == code or r.status is TransformStatus.CHANGED
