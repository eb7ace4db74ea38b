"""mlflow-metacompress: does the distilled student deeply mimic its teacher?

An MLflow evaluator plugin implementing the metamorphic relations of MetaCompress
(Awal, Rochan, Roy, "A Metamorphic Testing Perspective on Knowledge Distillation for
Language Models of Code: Does the Student Deeply Mimic the Teacher?", arXiv 2511.05476),
plus distillation recipes and registry promotion gates.

Importing this package is deliberately light: MLflow imports every evaluator plugin
whenever evaluation runs, so torch, transformers and tree-sitter are imported lazily.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _distribution_version

try:
    # One source of truth: the version in pyproject.toml, as the installed distribution records it.
    __version__ = _distribution_version("mlflow-metacompress")
except _PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
