"""Extensions are one file (issue 11), and the engine is chosen once: a copy of an attack
recipe or of a transformation saved under a new module name, with its name string changed, is
discovered and runs; a local evaluation never imports a Spark module."""

from __future__ import annotations

import json
import os
import shutil
import sys
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.support.architecture import (
    PACKAGE,
    ROOT,
)

_LOCAL_EVALUATION = r"""
import json, sys

import mlflow
import numpy as np
import pandas as pd

codes = [
    "int add(int a, int b) {\n  int count = a + b;\n  return count;\n}\n",
    "int sub(int x, int y) {\n  int total = x - y;\n  for (int i = 0; i < 3; i++) total++;\n  return total;\n}\n",
] * 4
frame = pd.DataFrame({"func": codes, "target": [1, 0] * 4})  # both models right on every row


def model(df):
    p = np.array([0.85 if "count" in c else 0.15 for c in df["func"]])
    return np.stack([1 - p, p], axis=1)


with mlflow.start_run():
    result = mlflow.models.evaluate(
        model=model, data=frame, targets="target", model_type="metacompress", evaluators="metacompress",
        evaluator_config={"teacher": model, "language": "c", "transforms": ["rename_variables"],
                          "attacks": ["wir_random_zeng_2022"], "attack_budget": 5, "progress": False,
                          "bootstrap_samples": 0},
    )
local = sorted(m for m in sys.modules if m.startswith("mlflow_metacompress") and "spark" in m)
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.engines import get_engine

spark_cfg = parse_config({"teacher": "models:/t/1", "engine": "spark", "transforms": []}, frame, model_given=True)
chosen = get_engine(spark_cfg)
print(json.dumps({"metrics": sorted(result.metrics), "local": local, "chosen": chosen.name,
                  "after": sorted(m for m in sys.modules if m.startswith("mlflow_metacompress") and "spark" in m)}))
"""


@pytest.mark.slow
def test_a_local_evaluation_never_imports_a_spark_module(tracking):
    """The engine is chosen once (evaluation/engines.py): an evaluation through the real
    entry point with transformations and an attack on the local engine imports none of the
    package's Spark modules (MLflow itself imports pyspark when it is installed); choosing
    ``spark`` imports the Spark engine. A fresh interpreter, so other tests' imports do not count."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")])}
    env["MLFLOW_TRACKING_URI"] = tracking
    done = subprocess.run(
        [sys.executable, "-c", _LOCAL_EVALUATION], capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "mr1_violation_rate/rename_variables" in seen["metrics"]
    assert "attack_wir_random_zeng_2022/student_asr" in seen["metrics"]  # the attack ran
    assert seen["local"] == []
    assert seen["chosen"] == "spark" and "mlflow_metacompress.evaluation.spark_engine" in seen["after"]


@pytest.fixture
def copy_module(tmp_path):
    """Copy a module of the package to a new module name, replacing a quoted string, in a
    private copy of the whole package (``tmp_path/site``): other xdist workers, and the Spark
    executors they start, keep discovering the real package's recipes and transformations
    while this runs. The test then runs its checks in a subprocess on that copy
    (:func:`_run_in_copy`)."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / ROOT, ignore=shutil.ignore_patterns("__pycache__"))

    def copy(package: str, module: str, old: str, new: str) -> str:
        folder = site.joinpath(*package.split("."))
        text = (folder / f"{module}.py").read_text(encoding="utf-8")
        assert f'"{old}"' in text, f"{module}.py no longer holds the string {old!r}"
        (folder / f"{new}.py").write_text(text.replace(f'"{old}"', f'"{new}"'), encoding="utf-8")
        return new

    copy.site = site  # type: ignore[attr-defined]
    return copy


def _run_in_copy(site: Path, script: str) -> None:
    """Run ``script`` in a fresh interpreter that imports the package from ``site`` first;
    its assertion errors fail the test with the subprocess's output."""
    import subprocess
    import textwrap

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(repo)])}
    # an editable install's finder would import the checkout before PYTHONPATH: drop it
    prelude = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in getattr(f, '__module__', '')]\n"
        f"import {ROOT}\n"
        f"assert {ROOT}.__file__.startswith({str(site)!r}), {ROOT}.__file__\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        env=env,
        cwd=site,  # not the checkout, which "-c" would put first on sys.path
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _name_sensitive(df: pd.DataFrame) -> np.ndarray:
    p = np.array([0.85 if "count" in c else 0.15 for c in df[df.columns[0]]])
    return np.stack([1 - p, p], axis=1)


@pytest.mark.slow
def test_a_copied_attack_recipe_is_listed_and_runs(copy_module, tracking):
    new = copy_module(
        "mlflow_metacompress.attacks.recipes",
        "wir_random_zeng_2022",
        "wir_random_zeng_2022",
        f"wir_copy_{uuid.uuid4().hex[:8]}",
    )
    _run_in_copy(
        copy_module.site,
        f"""
        import mlflow, numpy as np, pandas as pd, pytest
        from mlflow_metacompress.attacks import ATTACKS, list_attacks, run_attack
        from tests.support.attacks import CODES, LABELS

        def name_sensitive(df):
            p = np.array([0.85 if "count" in c else 0.15 for c in df[df.columns[0]]])
            return np.stack([1 - p, p], axis=1)

        new = {new!r}
        assert new in list_attacks() and "wir_random_zeng_2022" in list_attacks()
        assert new in ATTACKS
        frame = pd.DataFrame({{"func": CODES, "target": LABELS}})
        direct = run_attack(new, name_sensitive, frame, ["func"], LABELS, "c", budget=60, progress=False)
        assert direct.attack == new and direct.metrics()["asr"] > 0
        with mlflow.start_run():
            result = mlflow.models.evaluate(
                model=name_sensitive, data=frame, targets="target",
                model_type="metacompress", evaluators="metacompress",
                evaluator_config={{"teacher": name_sensitive, "language": "c", "transforms": [],
                                   "attacks": [new], "attack_budget": 60, "progress": False}},
            )
        assert f"attack_{{new}}/student_asr" in result.metrics
        assert result.metrics[f"attack_{{new}}/student_asr"] == pytest.approx(direct.metrics()["asr"])
        """,
    )


def test_unknown_attack_names_list_the_known_ones():
    from mlflow_metacompress.attacks import ATTACKS, list_attacks
    from mlflow_metacompress.attacks.recipes import get_attack

    with pytest.raises(KeyError, match="unknown attack 'nope'.*mhm_zhang_2020"):
        get_attack("nope")
    with pytest.raises(KeyError, match="mhm_zhang_2020"):
        ATTACKS["nope"]
    assert sorted(ATTACKS) == list_attacks()


def test_a_broken_recipe_module_is_not_swallowed(copy_module):
    new = copy_module(
        "mlflow_metacompress.attacks.recipes", "mhm_zhang_2020", "mhm_zhang_2020", f"broken_{uuid.uuid4().hex[:8]}"
    )
    path = copy_module.site / ROOT / "attacks" / "recipes" / f"{new}.py"
    path.write_text(path.read_text() + "\nfrom ..search import no_such_search_strategy\n")
    _run_in_copy(
        copy_module.site,
        """
        import pytest
        from mlflow_metacompress.attacks import list_attacks
        with pytest.raises(ImportError, match="no_such_search_strategy"):
            list_attacks()
        """,
    )


def test_a_copied_transformation_is_listed_and_applies(copy_module):
    """Owned by the transforms package's discovery: a copy of swap_operands under a new name."""
    new = copy_module(
        "mlflow_metacompress.transforms", "swap_operands", "swap_operands", f"swap_copy_{uuid.uuid4().hex[:8]}"
    )
    _run_in_copy(
        copy_module.site,
        f"""
        from mlflow_metacompress.transforms import apply_transform, list_transforms
        new = {new!r}
        assert new in list_transforms("c")
        code = "int f(int a, int b) {{\\n  if (a < b) return 1;\\n  return 0;\\n}}\\n"
        original = apply_transform(code, "swap_operands", "c")
        assert "b > a" in original
        assert apply_transform(code, new, "c") == original
        """,
    )
