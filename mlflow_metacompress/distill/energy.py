"""Inference energy per 1,000 samples, as AVATAR (Shi et al., ICSE-SEIS 2024) reports
it for teachers and students, measured with ``codecarbon`` when it is installed
(optional extra ``energy``); without it nothing is measured and nothing is logged."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models.classifier import CodeClassifier

logger = logging.getLogger(__name__)


def available() -> bool:
    return importlib.util.find_spec("codecarbon") is not None


def energy_per_1000(predict: Callable[[], object], n_samples: int) -> float | None:
    """kWh that ``predict()`` (which runs ``n_samples`` inferences) consumes, scaled to
    1,000 samples; ``None`` when codecarbon is absent or fails."""
    if not available() or n_samples <= 0:
        return None
    try:
        from codecarbon import OfflineEmissionsTracker

        tracker = OfflineEmissionsTracker(
            country_iso_code="USA", log_level="error", save_to_file=False, measure_power_secs=1
        )
        tracker.start()
        try:
            predict()
        finally:
            tracker.stop()
        kwh = float(tracker.final_emissions_data.energy_consumed)
    except Exception as exc:  # codecarbon depends on the platform; never fail a training run over it
        logger.warning("codecarbon could not measure energy: %s", exc)
        return None
    return kwh * 1000.0 / n_samples


def log_inference_energy(
    student: CodeClassifier,
    tokenizer: Any,
    texts: list[str],
    texts_b: list[str] | None,
    teacher_uri: str,
    code_columns: tuple[str, ...],
) -> dict[str, float]:
    """Measure teacher and student inference energy on ``texts`` and log it as
    ``energy_kwh_per_1000_{teacher,student}`` to the active MLflow run."""
    if not available():
        logger.info("codecarbon is not installed (extra 'energy'); skipping energy measurement")
        return {}
    import mlflow
    import pandas as pd

    out: dict[str, float] = {}
    s = energy_per_1000(lambda: student.predict_proba(tokenizer, texts, texts_b), len(texts))
    if s is not None:
        out["energy_kwh_per_1000_student"] = s
    if teacher_uri:
        teacher = mlflow.pyfunc.load_model(teacher_uri)
        frame = pd.DataFrame({code_columns[0]: texts, **({code_columns[1]: texts_b} if texts_b else {})})
        t = energy_per_1000(lambda: teacher.predict(frame), len(texts))
        if t is not None:
            out["energy_kwh_per_1000_teacher"] = t
    if out and mlflow.active_run() is not None:
        mlflow.log_metrics(out)
    return out
