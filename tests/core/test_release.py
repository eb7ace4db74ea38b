"""Release metadata: one version (pyproject.toml) seen through the package metadata, and the
files that repeat it (CHANGELOG.md, CITATION.cff) and the README front door kept in step."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import tomllib
import yaml

import mlflow_metacompress

REPO = Path(__file__).resolve().parents[2]


def pyproject_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_version_is_the_installed_distributions():
    assert mlflow_metacompress.__version__ == importlib.metadata.version("mlflow-metacompress")


def test_installed_metadata_is_pyprojects_version():
    assert importlib.metadata.version("mlflow-metacompress") == pyproject_version(), (
        "the installed metadata is stale: reinstall the package (pip install -e .)"
    )


def test_version_falls_back_when_the_package_is_not_installed(tmp_path):
    """From a source tree that was never installed, the import still works and says so."""
    code = (
        "import importlib.metadata as m\n"
        "def missing(name):\n"
        "    raise m.PackageNotFoundError(name)\n"
        "m.version = missing\n"
        "import mlflow_metacompress\n"
        "print(mlflow_metacompress.__version__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "0+unknown"


def test_changelog_starts_with_the_current_version():
    headings = re.findall(r"^## \[([^\]]+)\]", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert headings and headings[0] == pyproject_version()


def test_citation_names_this_version_and_the_paper():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert str(cff["version"]) == pyproject_version()
    paper = cff["preferred-citation"]
    assert "Does the Student Deeply Mimic the Teacher?" in paper["title"]
    assert [a["family-names"] for a in paper["authors"]] == ["Awal", "Rochan", "Roy"]
    assert [a["given-names"] for a in paper["authors"]] == ["Md. Abdul", "Mrigank", "Chanchal K."]
    assert any("2511.05476" in i["value"] for i in paper["identifiers"])
    assert paper in cff["references"]


def test_readme_is_a_front_door_with_the_two_commands():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert (
        "python3 -m venv .venv && . .venv/bin/activate\n"
        "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu\n"
        'pip install -e ".[all,test]"\nmlflow run . --env-manager local\n'
    ) in readme
    assert "```bash\npython -m pytest -q\n```" in readme
