"""Embedded generated datasets: the project's offline default (no downloads).

- :func:`generate_vulnerability`: Juliet-style C functions over ten CWE classes,
  Devign-shaped (``func``, ``target``, ``cwe``, ``idx``).
- :func:`generate_clones`: C function pairs, BigCloneBench-shaped (``func1``, ``func2``,
  ``label``).
- :func:`split_frame` / :func:`make_splits`: deterministic train/valid/test splits.

Everything here is generated and says so; for real results use CodeXGLUE Devign and
BigCloneBench (``mlflow_metacompress.data.codexglue``).
"""

from __future__ import annotations

from .c_random import C_PRELUDE
from .clones import BEHAVIOURS, generate_clones
from .splits import make_splits, split_frame
from .vulnerability import CWE_CLASSES, generate_vulnerability

__all__ = [
    "BEHAVIOURS",
    "CWE_CLASSES",
    "C_PRELUDE",
    "generate_clones",
    "generate_vulnerability",
    "make_splits",
    "split_frame",
]
