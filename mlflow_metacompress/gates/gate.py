"""``gate_version``: evaluate a registered model version against its tagged teacher with the
metacompress evaluator (MetaCompress, Awal, Rochan, Roy, arXiv 2511.05476), then
:func:`~.promotion.promote` it on that evaluation.

A failing verdict is an outcome, not an error: the gate run ends FINISHED and carries the
verdict as the tag ``metacompress.verdict`` (``passed``/``failed``) and the metric
``gate_passed`` (1/0) (:func:`log_verdict`); only a crash ends it FAILED."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .policy import GatePolicy, load_policy
from .registry import TAG_POLICY, TAG_TEACHER, TAG_VERDICT

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import MlflowClient

    from .decision import GateDecision


GATE_PASSED = "gate_passed"


def log_verdict(run_id: str, decision: GateDecision, client: MlflowClient | None = None) -> None:
    """Record ``decision`` on the run ``run_id`` (finished or not; its status is left
    alone): tag ``metacompress.verdict`` = ``passed``/``failed`` and metric
    ``gate_passed`` = 1/0. A decision without checks (an evaluation refused as
    unfinished or half-written) records nothing."""
    if not decision.checks:
        return
    from .promotion import _client

    client = _client(client)
    client.set_tag(run_id, TAG_VERDICT, "passed" if decision.passed else "failed")
    client.log_metric(run_id, GATE_PASSED, 1.0 if decision.passed else 0.0)


def load_eval_data(path: str | Path) -> pd.DataFrame:
    """Evaluation data from ``.jsonl``/``.json``/``.csv``/``.parquet`` (the one reader,
    :func:`mlflow_metacompress.data.tables.read_table`; errors name the file and line)."""
    from ..data.tables import read_table

    return read_table(path)


def gate_version(
    model_name: str,
    version: str | int,
    data: pd.DataFrame | str | Path,
    policy: str | Path | GatePolicy,
    targets: str = "target",
    alias: str | None = "champion",
    force: bool = False,
    stage: str | None = None,
    evaluator_config: Mapping[str, Any] | None = None,
    client: MlflowClient | None = None,
) -> GateDecision:
    """Evaluate a registered version against the teacher in its ``metacompress.teacher`` tag, then promote.

    The evaluation runs ``mlflow.models.evaluate(model="models:/<name>/<version>",
    model_type="metacompress", evaluators="metacompress")`` in its own run, so the
    verdict's ``metacompress.evaluation_run_id`` points at the logged metrics; that run
    then gets the verdict (:func:`log_verdict`), also when the promotion is refused.
    """
    import mlflow

    from ..adapters.model_refs import check_model_uri
    from ..evaluation.config import check_config
    from .decision import PromotionRefusedError
    from .promotion import _client, promote, version_text

    check_config(evaluator_config)  # a config typo fails before any model loads or any run starts
    client = _client(client)
    policy = load_policy(policy)
    version = version_text(version)
    mv = client.get_model_version(model_name, version)
    cfg = dict(evaluator_config or {})
    teacher = cfg.pop("teacher", None) or (mv.tags or {}).get(TAG_TEACHER)
    if not teacher:
        raise ValueError(
            f"{model_name} v{version} has no {TAG_TEACHER!r} tag naming its teacher model URI; "
            "tag it, or pass evaluator_config={'teacher': <uri>}"
        )
    df = load_eval_data(data) if isinstance(data, (str, Path)) else data
    if targets not in df.columns:
        raise KeyError(f"targets column {targets!r} is not in the evaluation data; it has {list(df.columns)}")
    check_model_uri(teacher, "teacher")
    with mlflow.start_run(run_name=f"gate-{model_name}-v{version}", nested=mlflow.active_run() is not None) as run:
        mlflow.set_tags(
            {
                "metacompress.gate_model": f"models:/{model_name}/{version}",
                TAG_POLICY: policy.name,
                TAG_TEACHER: teacher,
            }
        )
        result = mlflow.models.evaluate(
            model=f"models:/{model_name}/{version}",
            data=df,
            targets=targets,
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": teacher, **cfg},
        )
        run_id = run.info.run_id
    if not getattr(result, "run_id", None):
        from mlflow.models.evaluation import EvaluationResult

        result = EvaluationResult(result.metrics, result.artifacts, run_id=run_id)
    # the run has ended, so promote reads its end time as the evaluation time
    try:
        decision = promote(model_name, version, result, policy, alias=alias, force=force, stage=stage, client=client)
    except PromotionRefusedError as exc:
        log_verdict(run_id, exc.decision, client)
        raise
    log_verdict(run_id, decision, client)
    return decision
