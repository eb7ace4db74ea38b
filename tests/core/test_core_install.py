"""The ``core`` install: static mode needs neither torch, transformers, Lightning,
tokenizers nor tree-sitter, and everything that does names the extra to install.

A subprocess hides those packages with a ``sys.meta_path`` finder (as if they were not
installed) and runs ``tests/core_smoke.py``: a static-mode evaluation through
``mlflow.models.evaluate`` whose logged metrics are checked against scikit-learn, then
model mode, which must fail naming the extra. ``.ci/run`` runs the same script in a real
virtualenv holding only the built wheel (no extras), from outside the checkout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from mlflow_metacompress._optional import PROVIDERS, MissingExtraError, require

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

REPO = Path(__file__).resolve().parents[2]
HIDDEN = (
    "torch",
    "transformers",
    "lightning",
    "tokenizers",
    "tree_sitter",
    "tree_sitter_c",
    "tree_sitter_java",
    "tree_sitter_python",
    "pymoo",
    "numba",
    "z3",
    "datasets",
)

HOOK = f"""
import importlib.abc, runpy, sys
HIDDEN = set({HIDDEN!r})
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Hide())
"""


def run_hidden(code: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *sys.path]))
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run(
        [sys.executable, "-c", HOOK + code, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )


def smoke(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = run_hidden(
        f"sys.argv = [{str(REPO / 'tests' / 'core_smoke.py')!r}, *sys.argv[1:]]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')",
        tmp_path,
        *args,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc, (json.loads(lines[-1]) if lines else {})


def test_static_mode_runs_without_the_optional_packages(tracking, tiny_classifiers, tmp_path):
    """Static mode logs its metrics without any optional package imported; model mode
    fails naming the extra: ``code`` for a callable on code (transformations need
    tree-sitter), ``models`` for a registered metacompress classifier (loading needs torch)."""
    import mlflow

    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, _ = tiny_classifiers
    with mlflow.start_run():
        log_code_classifier(teacher, tok, registered_model_name="core-teacher", code_columns=["func"])
    proc, out = smoke(tmp_path, "--model-uri", "models:/core-teacher/1", "--registry-uri", tracking)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(out["metrics"]) == {"accuracy_drop", "mr1_violation_rate", "mr2_mean_kl"}
    assert out["heavy_modules_loaded"] == []
    errors = out["model_mode_errors"]
    assert 'needs tree-sitter: pip install -e ".[code]" in the source checkout' in errors["code"]
    assert "models:/core-teacher/1" in errors["models"]
    assert 'needs torch: pip install -e ".[models]" in the source checkout' in errors["models"]


def test_require_names_the_extra_and_reraises_other_errors(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    with pytest.raises(
        MissingExtraError,
        match=r'^hub data needs datasets: pip install -e "\.\[datasets\]" in the source checkout, '
        r'or pip install "<the mlflow_metacompress wheel>\[datasets\]"$',
    ):
        require("datasets", "hub data")
    monkeypatch.setitem(sys.modules, "z3", None)
    err = pytest.raises(MissingExtraError, require, "z3", "the search").value
    assert isinstance(err, ImportError) and err.extra == "distill" and "needs z3-solver:" in str(err)
    assert require("json", "x").__name__ == "json"
    # a module that exists but fails importing something else is a bug, not a missing extra
    (tmp_path / "metacompress_broken_pkg.py").write_text("import no_such_dependency_of_it\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as info:
        require("metacompress_broken_pkg", "x")
    assert not isinstance(info.value, MissingExtraError)


def test_every_extra_named_in_errors_exists_and_the_core_is_light():
    """The extras that errors name are the ones pyproject.toml declares, each package is
    in its extra, and the base dependencies hold none of the optional packages."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    base = {re.split(r"[<>=!~\[; ]", dep)[0] for dep in project["dependencies"]}
    assert base == {"mlflow", "numpy", "pandas", "pyarrow", "scikit-learn", "scipy", "matplotlib", "tqdm", "pyyaml"}
    for module, (package, extra) in PROVIDERS.items():
        assert any(re.split(r"[<>=!~\[; ]", dep)[0] == package for dep in extras[extra]), (module, package, extra)
    assert extras["distill"][0] == "mlflow-metacompress[models]"
    assert extras["all"] == ["mlflow-metacompress[code,models,distill,onnx]"]
