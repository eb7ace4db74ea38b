"""The evaluation a promotion judges (:mod:`.promotion`): its metrics, run id and time,
from an ``EvaluationResult`` or a run id; a run that is not FINISHED or lacks
``metacompress/summary.json`` (a half-written evaluation) is refused before anything is
written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..artifact_names import SUMMARY_PATH

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.models.evaluation import EvaluationResult

logger = logging.getLogger(__name__)


class RefusedRun(Exception):
    """An evaluation run that must not be judged; promote turns it into PromotionRefusedError."""


def check_run_complete(client: MlflowClient, run: Any) -> None:
    run_id, status = run.info.run_id, run.info.status
    if status != "FINISHED":
        raise RefusedRun(
            f"evaluation run {run_id} is {status}, not FINISHED: its metrics may be incomplete; "
            "wait for it to finish or re-run the evaluation"
        )
    folder, _, _ = SUMMARY_PATH.rpartition("/")
    entries = {a.path: a for a in client.list_artifacts(run_id, folder)}
    entry = entries.get(SUMMARY_PATH)
    if entry is None or entry.is_dir or entry.file_size == 0:
        raise RefusedRun(
            f"evaluation run {run_id} has no {SUMMARY_PATH} artifact: the evaluation is "
            "half-written (e.g. its artifact upload failed); re-run the evaluation"
        )


def evaluation_metrics(
    evaluation: EvaluationResult | str, client: MlflowClient
) -> tuple[dict[str, float], str | None, int]:
    """(metrics, run id, evaluation time in ms) from a result or a run id."""
    if isinstance(evaluation, str):
        from ..stores import get_run

        run = get_run(client, evaluation, "evaluation run")  # a missing run names the tracking store
        check_run_complete(client, run)
        when = run.info.end_time or run.info.start_time or int(time.time() * 1000)
        return dict(run.data.metrics), evaluation, int(when)
    metrics = getattr(evaluation, "metrics", None)
    if not isinstance(metrics, Mapping):
        raise TypeError(f"evaluation must be an mlflow EvaluationResult or a run id, got {type(evaluation).__name__}")
    run_id = getattr(evaluation, "run_id", None) or None
    when = int(time.time() * 1000)
    if run_id:
        try:
            info = client.get_run(run_id).info
            when = int(info.end_time or info.start_time or when)
        except Exception:  # the result may name a run in another store; keep "now"
            logger.warning("could not read evaluation run %s; using the current time", run_id)
    return dict(metrics), run_id, when
