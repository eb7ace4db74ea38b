"""The whole path of ``mlflow run .``: data (:mod:`.data`) → teacher → one student per
distillation method → MetaCompress evaluation → registry gate (:mod:`.stages`) →
comparison table (:mod:`.report`), with budgets from :mod:`.profiles`; assembled by
:func:`.run.run_pipeline`.

    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "PipelineConfig": "run",
    "PipelineResult": "run",
    "run_pipeline": "run",
    "setup_tracking": "run",
    "default_tracking_uri": "run",
    "is_file_store": "run",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
