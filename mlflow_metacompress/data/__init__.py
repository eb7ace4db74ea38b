"""Code datasets: CodeXGLUE loaders (Devign, BigCloneBench) returning DataFrames the
MetaCompress evaluator accepts directly. Only pandas is imported here."""

from __future__ import annotations

from .codexglue import (
    TASKS,
    DataFormatError,
    TaskSpec,
    get_task,
    load_bigclonebench,
    load_devign,
    load_task,
    read_functions,
    read_pairs,
)

__all__ = [
    "TASKS",
    "DataFormatError",
    "TaskSpec",
    "get_task",
    "load_bigclonebench",
    "load_devign",
    "load_task",
    "read_functions",
    "read_pairs",
]
