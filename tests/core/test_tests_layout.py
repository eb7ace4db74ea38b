"""The test suite's own layout (issue 45): every test file in a folder named after the package
it tests, no test module importing another (shared helpers live in ``tests/support/``,
fixtures in ``tests/conftest.py``), and a fast lane (``-m "not slow"``) that leaves out the
modules that train, run a pipeline or ``mlflow run``, or start a server."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
FOLDERS = {
    "adapters", "attacks", "core", "data", "distill", "evaluation", "gates", "models",
    "pipeline", "relations", "report", "study", "transforms", "webhooks",
}  # fmt: skip
HEAVY = [
    "evaluation/test_spark_engine.py",
    "pipeline/test_mlproject.py",
    "pipeline/test_pipeline_interrupts.py",
    "report/test_report_layout.py",
    "webhooks/test_webhooks_serve.py",
    "webhooks/test_webhooks.py",
    "distill/test_distill_teacher.py",
    "distill/test_distill_ddp.py",
    "distill/test_distill_e2e.py",
]


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_file_sits_in_a_package_folder_with_a_unique_name():
    misplaced = [str(p.relative_to(REPO)) for p in _test_files() if p.parent.parent != TESTS]
    assert not misplaced, f"test files outside tests/<package>/: {misplaced}"
    unknown = sorted({p.parent.name for p in _test_files()} - FOLDERS)
    assert not unknown, f"test folders that mirror no package of mlflow_metacompress: {unknown}"
    names = [p.name for p in _test_files()]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"the same test file name in two folders (pytest imports them by name): {twice}"


def _imported_test_modules(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found += [(node.lineno, n) for n in names if n.split(".")[-1].startswith("test_")]
    return found


@pytest.mark.slow
def test_no_test_module_imports_another():
    offences = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path in [*_test_files(), TESTS / "conftest.py", *sorted((TESTS / "support").glob("*.py"))]
        for line, name in _imported_test_modules(path)
    ]
    assert not offences, "move what is shared to tests/support/ or tests/conftest.py:\n" + "\n".join(offences)


def test_the_import_check_sees_every_spelling(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text("import tests.gates.test_gates\nfrom tests.core import test_cli\nfrom test_docs import REPO\n")
    assert [line for line, _ in _imported_test_modules(probe)] == [1, 2, 3]


@pytest.mark.slow
def test_the_fast_lane_leaves_out_the_heavy_modules():
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "--co", "-q", "-m", "not slow"]
        + [f"tests/{m}" for m in HEAVY],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    ).stdout
    kept = [line for line in out.splitlines() if "::" in line]
    assert not kept, f"heavy tests left in the fast lane: {kept}"
    assert "deselected" in out, out[-2000:]


def test_the_longest_files_that_go_first_exist():
    """tests/conftest.py schedules its LONGEST_FILES first; a renamed or removed file would
    silently fall back to collection order, so each name must be a test file."""
    from tests.conftest import LONGEST_FILES

    missing = [name for name in LONGEST_FILES if not (REPO / name).is_file()]
    assert not missing, f"LONGEST_FILES names files that do not exist: {missing}"
    assert len(set(LONGEST_FILES)) == len(LONGEST_FILES)
