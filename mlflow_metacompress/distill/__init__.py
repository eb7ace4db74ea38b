"""Distillation with Lightning: teacher fine-tuning, soft-label KD and search-based
students (Compressor, Shi et al., ASE 2022), tracked and registered in MLflow.

Public entry points (imported lazily; torch and Lightning load on first use):
``train_teacher``, ``distill_student``, ``train_student``, ``METHODS``,
``register_method``, ``kd_loss``, ``ArchSpec``. The command line is
``python -m mlflow_metacompress.distill {teacher,student} ...``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "train_teacher": "teacher",
    "build_teacher": "teacher",
    "distill_student": "methods",
    "train_student": "methods",
    "METHODS": "methods",
    "register_method": "methods",
    "get_method": "methods",
    "DistillContext": "methods",
    "StudentOutcome": "methods",
    "TrainingResult": "results",
    "kd_loss": "losses",
    "ArchSpec": "arch",
    "search_architecture": "compressor",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
