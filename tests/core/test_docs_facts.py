"""Figures and instructions in the docs that the code decides (issue 33): the quick profile's
caps and generated-data defaults, the main job's stage count, how extras are installed and how
the suite runs in one process. Each is read from the code here, not typed a second time."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_metacompress.pipeline.progress import pipeline_stages
from mlflow_metacompress.profiles import get_profile

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _flat(path: Path) -> str:
    return " ".join(path.read_text().split())


def _n(value: int) -> str:
    return f"{value:,}"


def test_data_page_states_the_quick_caps_of_the_profile():
    text = _flat(DOCS / "data.md")
    devign, bcb = get_profile("quick", "vulnerability"), get_profile("quick", "clone")
    assert f"train {_n(devign.train_rows)} rows for Devign and {_n(bcb.train_rows)} pairs for BigCloneBench" in text
    assert devign.valid_rows == bcb.valid_rows and f"valid {devign.valid_rows}," in text
    assert f"test {devign.eval_rows} for Devign and {bcb.eval_rows} for BigCloneBench" in text
    assert devign.attacks == ("alert_yang_2022",) == bcb.attacks
    assert f"ALERT attacks {devign.attack_max_samples} of them with a {devign.attack_budget}-query budget" in text
    assert f"a {get_profile('paper', 'clone').attack_budget}-query budget" in text
    # the files `-e reproduce` reads, as study/data.py names them
    source = (REPO / "mlflow_metacompress" / "study" / "data.py").read_text()
    for name in ("train_full.txt", "unlabeled_codebert.txt", "data_full.jsonl", "train_full.jsonl"):
        assert name in source and f"`{name}`" in text, name


def test_distillation_page_states_the_generated_rows_default():
    text = _flat(DOCS / "guide" / "distillation.md")
    vuln, clone = (get_profile("quick", t).generated_rows for t in ("vulnerability", "clone"))
    assert f"{_n(vuln)} for `vulnerability`, {_n(clone)} for `clone`" in text


def test_stage_count_of_the_main_job():
    from mlflow.projects._project_spec import load_project

    methods = load_project(str(REPO)).get_entry_point("main").parameters["methods"].default.split(",")
    n = len(pipeline_stages(methods))
    words = ["zero", "one", "two", "three", "four", "five", "six"]
    assert f"{n} stages for the default {words[len(methods)]} methods" in _flat(DOCS / "guide" / "pipeline.md")
    assert f"stage 2/{n} distill" in (REPO / "MLproject").read_text()


def test_no_page_installs_a_package_from_an_index_it_is_not_on():
    pages = [REPO / "README.md", *DOCS.rglob("*.md"), *(REPO / "mlflow_metacompress").rglob("*.py")]
    offenders = [p for p in pages if re.search(r"pip install \"?mlflow-metacompress\[", p.read_text())]
    assert offenders == [], offenders  # CHANGELOG.md keeps its history


@pytest.mark.slow
def test_one_process_as_documented_in_pyproject():
    """`-n 0` runs the suite in one process; `-p no:xdist` would fail on the addopts' `-n`."""
    text = (REPO / "pyproject.toml").read_text()
    assert "`-n 0` runs in one" in text and "`-p no:xdist` (or" not in text
    cmd = [sys.executable, "-m", "pytest", "-p", "no:xdist", "--co", "-q", "tests/core/test_docs_facts.py"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "-n" in proc.stderr  # as the comment says


def test_first_hour_time_is_the_latest_main_job_measurement():
    """getting-started's "took N minutes" is the newest main-job row of the pipeline page's table
    (rounded down to minutes), not a figure of its own."""
    rows = [
        line for line in (DOCS / "guide" / "pipeline.md").read_text().splitlines() if line.startswith("| `mlflow run")
    ]
    wall = re.search(r"\*\*(\d+) min (\d+) s\*\*", rows[0])
    assert wall, rows[0]
    assert f"took {int(wall[1])} minutes on this project's 2-core machine" in _flat(DOCS / "getting-started.md")
