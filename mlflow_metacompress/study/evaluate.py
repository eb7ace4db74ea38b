"""The study's one call of the evaluator: a model judged against a teacher on some of the
study's rows (MetaCompress, Awal, Rochan, Roy, arXiv 2511.05476: the teacher is the oracle),
used by the evaluation, attack and repair stages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def evaluate_against(model_uri: str, teacher_uri: str, rows: Any, data: Any, config: Mapping[str, Any]) -> Any:
    """``mlflow.models.evaluate`` of ``model_uri`` against ``teacher_uri`` on ``rows`` (the
    study's code columns and labels, no progress bars) with the rest of ``config``."""
    import mlflow

    return mlflow.models.evaluate(
        model=model_uri,
        data=rows,
        targets=data.label_column,
        model_type="metacompress",
        evaluators="metacompress",
        evaluator_config={
            "teacher": teacher_uri,
            "code_columns": list(data.code_columns),
            "progress": False,
            **dict(config),
        },
    )
