"""MLflow imports every evaluator plugin whenever evaluation runs: importing ours must
not pull in torch, transformers, lightning, tree-sitter or matplotlib."""

import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "lightning", "tree_sitter", "matplotlib", "sklearn")


@pytest.mark.slow
def test_plugin_import_is_light():
    code = (
        "import sys, mlflow_metacompress, mlflow_metacompress.evaluation.evaluator, mlflow_metacompress.transforms, "
        "mlflow_metacompress.metrics, mlflow_metacompress.relations, mlflow_metacompress._optional\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.slow
def test_cli_help_is_light():
    """``metacompress --help`` builds every subcommand's parser (attack recipes are
    discovered for ``--attack``'s choices, distillation methods for ``--method``'s)
    without the heavy libraries or MLflow."""
    code = (
        "import sys, contextlib, io\n"
        "from mlflow_metacompress.cli import build_parser\n"
        "parser = build_parser()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    parser.parse_args(['--help'])\n"
        f"print([m for m in {(*HEAVY, 'mlflow')!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
