"""Registry promotion gates: tag a model version with its verdict, move an alias if it passed.

The gate turns a MetaCompress evaluation (Awal, Rochan, Roy, arXiv 2511.05476) into a
registry decision. ``promote`` always records the verdict as model-version tags, then
(only when every check of the :class:`~.gate_policy.GatePolicy` passes) moves the alias.
Tags are written first and the alias last, so a failure at any point leaves the alias
where it was. A version whose evaluation is older than that of the alias's current
passing holder is refused unless ``force=True``, so a slow pipeline cannot overwrite a
fresher decision.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .policy import CheckResult, GatePolicy, load_policy

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import MlflowClient
    from mlflow.models.evaluation import EvaluationResult

logger = logging.getLogger(__name__)

TAG_VERDICT = "metacompress.verdict"
TAG_FAILED = "metacompress.failed_checks"
TAG_RUN = "metacompress.evaluation_run_id"
TAG_POLICY = "metacompress.policy"
TAG_EVALUATED_AT = "metacompress.evaluation_time"
TAG_VERDICT_TIME = "metacompress.verdict_time"
TAG_TEACHER = "metacompress.teacher"
_MAX_TAG = 5000


class PromotionRefusedError(RuntimeError):
    """The alias holder carries a more recent passing verdict; ``decision`` is attached."""

    def __init__(self, message: str, decision: "GateDecision") -> None:
        super().__init__(message)
        self.decision = decision


@dataclass
class GateDecision:
    """What ``promote`` decided for one model version."""

    model_name: str
    version: str
    policy: str
    passed: bool
    checks: list[CheckResult]
    alias: str | None
    alias_moved: bool
    evaluation_run_id: str | None
    previous_holder: str | None = None
    stage: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def summary(self) -> str:
        head = (f"{self.model_name} v{self.version}: {'PASSED' if self.passed else 'FAILED'} "
                f"policy {self.policy!r}; alias {self.alias!r} "
                f"{'moved' if self.alias_moved else 'not moved'}")
        rows = [f"  [{'ok' if c.passed else 'FAIL'}] {c.message}" for c in self.checks]
        return "\n".join([head, *rows, *(f"  note: {n}" for n in self.notes)])

    def to_dict(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "version": self.version, "policy": self.policy,
                "passed": self.passed, "alias": self.alias, "alias_moved": self.alias_moved,
                "evaluation_run_id": self.evaluation_run_id, "previous_holder": self.previous_holder,
                "stage": self.stage, "checks": [c.to_dict() for c in self.checks], "notes": self.notes}


def _client(client: "MlflowClient | None") -> "MlflowClient":
    from mlflow import MlflowClient

    return client if client is not None else MlflowClient()


def _evaluation_metrics(evaluation: "EvaluationResult | str", client: "MlflowClient") -> tuple[dict[str, float], str | None, int]:
    """(metrics, run id, evaluation time in ms) from a result or a run id."""
    if isinstance(evaluation, str):
        from mlflow.exceptions import MlflowException

        try:
            run = client.get_run(evaluation)
        except MlflowException as exc:
            raise ValueError(f"evaluation run {evaluation!r} not found: {exc.message}") from None
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


def _failed_tag(checks: list[CheckResult]) -> str:
    text = "; ".join(c.message for c in checks if not c.passed) or "none"
    return text if len(text) <= _MAX_TAG else text[: _MAX_TAG - 3] + "..."


def _as_int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def _holder(client: "MlflowClient", name: str, alias: str) -> Any | None:
    from mlflow.exceptions import MlflowException

    try:
        return client.get_model_version_by_alias(name, alias)
    except MlflowException:
        return None


def promote(model_name: str, version: str | int, evaluation: "EvaluationResult | str",
            policy: "str | Path | GatePolicy", alias: str | None = "champion", force: bool = False,
            stage: str | None = None, client: "MlflowClient | None" = None) -> GateDecision:
    """Judge ``evaluation`` with ``policy``, tag ``model_name``/``version``, move ``alias`` if passed.

    ``evaluation`` is an ``EvaluationResult`` or the id of a run holding metacompress
    metrics. Tags written on every call: verdict, failed checks, evaluation run id,
    policy name, evaluation time and verdict time. Raises :class:`PromotionRefusedError`
    (tags written, alias untouched) if the alias's holder passed on a more recent
    evaluation and ``force`` is false. ``stage`` (e.g. ``"Production"``) also performs the
    legacy stage transition before the alias moves.
    """
    client = _client(client)
    policy = load_policy(policy)
    version = str(version)
    client.get_model_version(model_name, version)  # fail early on an unknown version
    metrics, run_id, evaluated_at = _evaluation_metrics(evaluation, client)
    checks = policy.check(metrics)
    passed = all(c.passed for c in checks)
    decision = GateDecision(model_name, version, policy.name, passed, checks, alias, False, run_id)
    logger.info("gate %s v%s policy %s: %s", model_name, version, policy.name,
                "passed" if passed else f"failed {len(decision.failed_checks)} check(s)")

    tags = {TAG_VERDICT: "passed" if passed else "failed", TAG_FAILED: _failed_tag(checks),
            TAG_RUN: run_id or "", TAG_POLICY: policy.name, TAG_EVALUATED_AT: str(evaluated_at),
            TAG_VERDICT_TIME: str(int(time.time() * 1000))}
    for key, value in tags.items():  # tags first ...
        client.set_model_version_tag(model_name, version, key, value)
    if not passed or not alias:
        return decision

    holder = _holder(client, model_name, alias)
    if holder is not None and str(holder.version) != version:
        decision.previous_holder = str(holder.version)
        held = holder.tags or {}
        held_at = _as_int(held.get(TAG_EVALUATED_AT))
        if held.get(TAG_VERDICT) == "passed" and held_at > evaluated_at:
            msg = (f"refusing to move alias {alias!r} of {model_name!r} from v{holder.version} to v{version}: "
                   f"v{holder.version} passed on a more recent evaluation ({held_at} > {evaluated_at} ms); "
                   "pass force=True to override")
            if not force:
                decision.notes.append(msg)
                raise PromotionRefusedError(msg, decision)
            decision.notes.append(f"forced over v{holder.version}'s more recent passing verdict")
            logger.warning("%s (forced)", msg)
    if stage:
        client.transition_model_version_stage(model_name, version, stage)
        decision.stage = stage
    client.set_registered_model_alias(model_name, alias, version)  # ... alias last
    decision.alias_moved = True
    logger.info("alias %r of %s now points at v%s", alias, model_name, version)
    return decision


def load_eval_data(path: str | Path) -> "pd.DataFrame":
    """Read ``.jsonl``/``.json``/``.csv``/``.parquet`` evaluation data into a DataFrame."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"evaluation data {path} does not exist")
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        return pd.read_json(path, lines=True)
    if suffix == ".json":
        return pd.read_json(path)
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix in {".parquet", ".pq"}:
        return pd.read_parquet(path)
    raise ValueError(f"evaluation data {path}: unsupported extension {suffix!r} (use .jsonl, .json, .csv or .parquet)")


def gate_version(model_name: str, version: str | int, data: "pd.DataFrame | str | Path",
                 policy: "str | Path | GatePolicy", targets: str = "target", alias: str | None = "champion",
                 force: bool = False, stage: str | None = None, evaluator_config: Mapping[str, Any] | None = None,
                 client: "MlflowClient | None" = None) -> GateDecision:
    """Evaluate a registered version against the teacher in its ``metacompress.teacher`` tag, then promote.

    The evaluation runs ``mlflow.models.evaluate(model="models:/<name>/<version>",
    model_type="metacompress", evaluators="metacompress")`` in its own run, so the
    verdict's ``metacompress.evaluation_run_id`` points at the logged metrics.
    """
    import mlflow

    client = _client(client)
    policy = load_policy(policy)
    mv = client.get_model_version(model_name, str(version))
    cfg = dict(evaluator_config or {})
    teacher = cfg.pop("teacher", None) or (mv.tags or {}).get(TAG_TEACHER)
    if not teacher:
        raise ValueError(f"{model_name} v{version} has no {TAG_TEACHER!r} tag naming its teacher model URI; "
                         "tag it, or pass evaluator_config={'teacher': <uri>}")
    df = load_eval_data(data) if isinstance(data, (str, Path)) else data
    if targets not in df.columns:
        raise KeyError(f"targets column {targets!r} is not in the evaluation data; it has {list(df.columns)}")
    with mlflow.start_run(run_name=f"gate-{model_name}-v{version}", nested=mlflow.active_run() is not None) as run:
        mlflow.set_tags({"metacompress.gate_model": f"models:/{model_name}/{version}", TAG_POLICY: policy.name,
                         TAG_TEACHER: teacher})
        result = mlflow.models.evaluate(model=f"models:/{model_name}/{version}", data=df, targets=targets,
                                        model_type="metacompress", evaluators="metacompress",
                                        evaluator_config={"teacher": teacher, **cfg})
        run_id = run.info.run_id
    if not getattr(result, "run_id", None):
        from mlflow.models.evaluation import EvaluationResult

        result = EvaluationResult(result.metrics, result.artifacts, run_id=run_id)
    # the run has ended, so promote reads its end time as the evaluation time
    return promote(model_name, version, result, policy, alias=alias, force=force, stage=stage, client=client)


def decision_json(decision: GateDecision) -> str:
    return json.dumps(decision.to_dict(), indent=2, default=str)
