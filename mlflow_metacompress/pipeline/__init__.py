"""The whole path of ``mlflow run .``: data (:mod:`.data`) → teacher → one student per
distillation method → MetaCompress evaluation → registry gate (:mod:`.stages`) →
comparison table (:mod:`.report`), with budgets from :mod:`mlflow_metacompress.profiles`; assembled by
:func:`.run.run_pipeline`.

    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "PipelineConfig": "config",
    "PipelineResult": "config",
    "run_pipeline": "run",
    "setup_tracking": "tracking",
    "default_tracking_uri": "tracking",
    "is_file_store": "tracking",
    "judged_rows": "data",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
