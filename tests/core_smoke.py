"""Static mode on a ``core`` install: ``python tests/core_smoke.py [--core] [--model-uri URI --registry-uri URI]``.

Run by ``.ci/run`` in a fresh virtualenv holding only the built wheel, installed without
extras, from a folder outside the checkout (``--core``: torch, transformers, Lightning,
tokenizers and tree-sitter must not be installed), and by
``tests/core/test_core_install.py`` under an import hook that hides them. It evaluates
precomputed probabilities through ``mlflow.models.evaluate`` on a fresh sqlite store and
checks the logged metrics against NumPy/scikit-learn; then checks that model mode without
the optional packages fails with an error naming the extra that installs them: ``code``
for a callable model on code (transformations need tree-sitter), ``models`` for a
registered metacompress classifier (``--model-uri``: loading it needs torch).
Prints one JSON line; exits non-zero on any failure. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path

OPTIONAL = ("torch", "transformers", "lightning", "tokenizers", "tree_sitter")


def importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def static_mode(work: Path) -> dict[str, float]:
    """Evaluate random teacher/student probabilities; return the logged metrics."""
    import mlflow
    import numpy as np
    import pandas as pd
    from sklearn.metrics import accuracy_score

    rng = np.random.default_rng(7)
    n = 200
    pt = rng.dirichlet([1.0, 1.0], n)
    ps = np.clip(pt + rng.normal(0, 0.15, (n, 1)) * np.array([1, -1]), 0.01, 0.99)
    ps = ps / ps.sum(axis=1, keepdims=True)
    y = rng.integers(0, 2, n)
    df = pd.DataFrame({"t0": pt[:, 0], "t1": pt[:, 1], "s0": ps[:, 0], "s1": ps[:, 1], "target": y})
    mlflow.set_tracking_uri(f"sqlite:///{work / 'mlflow.db'}")
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=None,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher_prob_columns": ["t0", "t1"],
                "student_prob_columns": ["s0", "s1"],
                "transforms": [],
                "cache_dir": str(work / "cache"),
            },
        )
    logged = mlflow.MlflowClient().get_run(run.info.run_id).data.metrics
    expected_drop = accuracy_score(y, pt.argmax(1)) - accuracy_score(y, ps.argmax(1))
    expected_mr1 = float(np.mean(pt.argmax(1) != ps.argmax(1)))
    assert abs(logged["accuracy_drop"] - expected_drop) < 1e-9, (logged["accuracy_drop"], expected_drop)
    assert abs(logged["mr1_violation_rate"] - expected_mr1) < 1e-9, (logged["mr1_violation_rate"], expected_mr1)
    assert abs(result.metrics["mr2_mean_kl"] - logged["mr2_mean_kl"]) < 1e-9
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "metacompress")}
    assert "metacompress/summary.json" in artifacts, artifacts
    return logged


def model_mode_error(work: Path, model_uri: str | None) -> str:
    """The error of model mode without the optional packages: a registered model
    (``model_uri``), or a plain callable whose code needs tree-sitter to be transformed."""
    import mlflow
    import numpy as np
    import pandas as pd

    df = pd.DataFrame({"func": ["int f(int a) {\n  return a + 1;\n}"] * 8, "target": [0, 1] * 4})

    def probabilities(frame: pd.DataFrame) -> np.ndarray:
        return np.tile([0.6, 0.4], (len(frame), 1))

    config = {"teacher": model_uri or probabilities, "cache_dir": str(work / "cache")}
    if model_uri:
        config["transforms"] = []  # no parser needed: loading the model is what fails
    try:
        with mlflow.start_run():
            mlflow.models.evaluate(
                model=probabilities,
                data=df,
                targets="target",
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config=config,
            )
    except Exception as exc:  # the error a user sees, whatever MLflow wraps it in
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError("model mode succeeded without the optional packages")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--core", action="store_true", help="fail if an optional package is installed")
    parser.add_argument(
        "--model-uri",
        default=None,
        help="also check that this registered metacompress classifier names the models extra",
    )
    parser.add_argument("--registry-uri", default=None, help="the registry holding --model-uri")
    args = parser.parse_args(argv)
    present = [m for m in OPTIONAL if importable(m)]
    if args.core and present:
        print(f"core install has optional packages installed: {present}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="metacompress-core-") as tmp:
        metrics = static_mode(Path(tmp))
        errors = {"code": model_mode_error(Path(tmp), None)}
        if args.model_uri:
            import mlflow

            if args.registry_uri:
                mlflow.set_registry_uri(args.registry_uri)
            errors["models"] = model_mode_error(Path(tmp), args.model_uri)
    heavy = [m for m in OPTIONAL if m in sys.modules]
    print(
        json.dumps(
            {
                "metrics": {k: metrics[k] for k in ("accuracy_drop", "mr1_violation_rate", "mr2_mean_kl")},
                "model_mode_errors": errors,
                "heavy_modules_loaded": heavy,
            }
        )
    )
    for extra, error in errors.items():
        if f'pip install -e ".[{extra}]" in the source checkout' not in error:
            print(f"model mode failed without naming the {extra!r} extra: {error}", file=sys.stderr)
            return 1
    if heavy:
        print(f"static mode imported {heavy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
