"""The install advice holds off this machine (issue 33): the README's install lines and
conda.yaml resolve PyTorch's CPU build when only the default index is configured.

The README's commands are parsed, not copied: its torch line is run through
``pip install --dry-run --report`` against two local indexes, one standing in for the
default index (serving, as PyPI does for Linux, a ``torch==2.13.0`` that is the CUDA build)
and one for PyTorch's CPU index (``2.13.0+cpu``), with every pip setting of this machine
(its local wheels and mirrors) removed. pip itself is the oracle; a control without the
CPU index resolves the CUDA stand-in, so the check can fail. Where the real CPU index is
reachable, the same line is also resolved against it."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import re
import shlex
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def fresh_commands() -> list[list[str]]:
    """The README's ``fresh`` block as argument lists, one per command (lines split on ``&&``)."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- --8<-- [start:fresh] -->\n")[1].split("<!-- --8<-- [end:fresh] -->")[0]
    body = re.search(r"```bash\n(.*?)```", block, re.S).group(1)
    return [shlex.split(part) for line in body.splitlines() for part in line.split("&&") if part.strip()]


def pip_commands(kind: str) -> list[list[str]]:
    return [cmd[2:] for cmd in fresh_commands() if cmd[:2] == ["pip", "install"] and kind in " ".join(cmd)]


def option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name:
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def conda_pip_section() -> list[str]:
    """The ``pip:`` list of conda.yaml's dependencies."""
    deps = yaml.safe_load((REPO / "conda.yaml").read_text())["dependencies"]
    return next(d["pip"] for d in deps if isinstance(d, dict))


def torch_pin() -> str:
    (torch,) = pip_commands("torch==")
    (req,) = [a for a in torch if a.startswith("torch")]
    return req


def test_readme_names_the_cpu_index_for_torch_and_the_project_keeps_that_torch():
    (torch,) = pip_commands("torch==")
    assert option(torch, "--index-url") == CPU_INDEX, torch
    pin = Requirement(torch_pin())
    assert pin.name == "torch" and str(pin.specifier).startswith("==")
    (project,) = pip_commands(".[all,test]")
    assert not {"-U", "--upgrade", "--force-reinstall", "--index-url"} & set(project), project
    # the project's own torch requirement accepts the pinned CPU build, so pip keeps it
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (models_torch,) = [Requirement(r) for r in extras["models"] if r.startswith("torch")]
    version = str(pin.specifier).removeprefix("==")
    assert models_torch.specifier.contains(f"{version}+cpu") and models_torch.specifier.contains(version)
    # the same pin everywhere: conda.yaml and .ci/run (which takes this machine's local wheel)
    assert f"pip install -q {pin}" in (REPO / ".ci" / "run").read_text()
    conda_pip = conda_pip_section()
    assert str(pin) in conda_pip and f"--extra-index-url {CPU_INDEX}" in conda_pip
    # the supported Pythons, as pyproject declares them, and Debian's venv package are named
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    readme = (REPO / "README.md").read_text()
    assert requires == ">=3.10" and "Python 3.10 or newer" in readme and "python3-venv" in readme
    guide = (REPO / "docs" / "getting-started.md").read_text()
    assert "Python 3.10 or newer" in guide and "python3-venv" in guide and CPU_INDEX in guide


def _wheel(folder: Path, version: str, summary: str) -> Path:
    """A minimal valid ``torch`` wheel (metadata only) of ``version``."""
    name = f"torch-{version}-py3-none-any.whl"
    dist = f"torch-{version}.dist-info"
    files = {
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\nSummary: {summary}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "torch/__init__.py": "",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / name, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return folder / name


def _index(root: Path, version: str, summary: str) -> str:
    """A PEP 503 simple index at ``root`` serving one torch wheel; its file:// URL."""
    wheel = _wheel(root / "files", version, summary)
    page = root / "simple" / "torch"
    page.mkdir(parents=True)
    (page / "index.html").write_text(f'<html><body><a href="{wheel.as_uri()}">{wheel.name}</a></body></html>')
    return (root / "simple").as_uri()


def _clean_env(tmp: Path, default_index: str) -> dict[str, str]:
    """Only a default index: every PIP_* setting of this machine dropped, no config file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=default_index, PIP_NO_CACHE_DIR="1")
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", HOME=str(tmp))
    return env


def _resolve(args: list[str], env: dict[str, str], tmp: Path) -> dict:
    report = tmp / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "-q"]
    proc = subprocess.run([*cmd, "--report", str(report), *args], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (item,) = json.loads(report.read_text())["install"]
    return item["metadata"]


@pytest.fixture
def indexes(tmp_path):
    version = Version(torch_pin().split("==")[1])
    default = _index(tmp_path / "default", str(version), "the CUDA build (stand-in for the default index)")
    cpu = _index(tmp_path / "cpu", f"{version}+cpu", "the CPU build (stand-in for PyTorch's CPU index)")
    return default, cpu


@pytest.mark.slow
def test_readme_torch_line_resolves_the_cpu_build_with_only_the_default_index(indexes, tmp_path):
    default, cpu = indexes
    env = _clean_env(tmp_path, default)
    (torch,) = pip_commands("torch==")
    args = [cpu if a == CPU_INDEX else a for a in torch]
    assert _resolve(args, env, tmp_path)["version"].endswith("+cpu")
    # control: the same pin without the CPU index gets the default index's CUDA build
    assert _resolve([torch_pin()], env, tmp_path)["summary"].startswith("the CUDA build")


@pytest.mark.slow
def test_conda_yaml_pip_section_resolves_the_cpu_build(indexes, tmp_path):
    default, cpu = indexes
    conda_pip = conda_pip_section()
    lines = [line.replace(CPU_INDEX, cpu) for line in conda_pip if not line.startswith("-e ")]
    (tmp_path / "requirements.txt").write_text("\n".join(lines) + "\n")  # conda hands pip such a file
    meta = _resolve(["-r", str(tmp_path / "requirements.txt")], _clean_env(tmp_path, default), tmp_path)
    assert meta["version"].endswith("+cpu")  # the extra index's local version is the higher match


def _reachable(host: str) -> bool:
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        return False
    return True


@pytest.mark.skipif(platform.system() != "Linux" or platform.machine() != "x86_64", reason="Linux x86_64 builds")
def test_readme_torch_line_against_the_real_cpu_index(tmp_path):
    if not _reachable("download.pytorch.org"):
        pytest.skip("download.pytorch.org is not reachable (offline CI); the local-index test stands in")
    (torch,) = pip_commands("torch==")
    meta = _resolve(torch, _clean_env(tmp_path, "https://pypi.org/simple"), tmp_path)
    assert meta["version"].endswith("+cpu")
