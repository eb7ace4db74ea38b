"""The stages of the end-to-end pipeline, each usable alone (the MLproject's ``teacher``,
``distill``, ``evaluate`` and ``gate`` entry points call them one at a time).

teacher (fine-tuned classifier) → students (one per distillation method: Compressor,
Shi et al., ASE 2022, and every other module of :mod:`..distill.methods`) →
MetaCompress evaluation against the teacher with semantics-preserving transformations
and at least one identifier attack (Awal, Rochan, Roy, arXiv 2511.05476) → registry
gate (:mod:`.gates`). Every trained model is registered with ``metacompress.*`` tags.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..profiles import Profile
from .data import TaskData
from .evaluation_setup import evaluation_run_name, evaluator_config, teacher_of

logger = logging.getLogger(__name__)

ALL = "all"  # every method :func:`..distill.discovery.list_methods` finds


@dataclass
class GateOutcome:
    """One student's evaluation and verdict (``passed``, ``failed``, ``refused`` or ``error``)."""

    method: str
    model_name: str
    version: str | None
    verdict: str
    alias_moved: bool = False
    failed_checks: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    evaluation_run_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    error: str | None = None


def parse_methods(methods: str | Sequence[str] | None) -> list[str]:
    """``"compressor, avatar"`` or a list → names, in order, without duplicates;
    ``None``, ``""`` or ``"all"`` → every discovered method (sorted)."""
    if methods is None or (isinstance(methods, str) and methods.strip() in ("", ALL)):
        from ..distill.discovery import list_methods

        return list_methods()
    items = methods.split(",") if isinstance(methods, str) else list(methods)
    names: list[str] = []
    for item in items:
        name = str(item).strip()
        if name and name not in names:
            names.append(name)
    if not names:
        raise ValueError(f"methods {methods!r} names no distillation method")
    return names


def resolve_methods(methods: str | Sequence[str] | None) -> list[str]:
    """:func:`parse_methods`, checked against the discovered methods
    (:func:`..distill.discovery.list_methods`); raises ``ValueError`` naming the unknown
    methods and the known ones."""
    from ..distill.discovery import list_methods

    names = parse_methods(methods)
    known = list_methods()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown distillation method(s) {unknown}; known methods: {known}")
    return names


def tag_version(name: str, version: str | None, tags: dict[str, Any]) -> None:
    """Add ``metacompress.<key>`` tags to a registered version."""
    if version is None:
        return
    from mlflow import MlflowClient

    client = MlflowClient()
    for key, value in tags.items():
        client.set_model_version_tag(name, version, f"metacompress.{key}", str(value))


def version_tags(data: TaskData, profile: Profile) -> dict[str, str]:
    """The pipeline's tags on every version it registers: ``data`` (where it came from),
    ``profile`` and ``task``, the dataset name of the registered model names
    (``generated-vulnerability``, ``devign``, …; :attr:`.data.TaskData.dataset`)."""
    return {"data": data.source, "profile": profile.name, "task": data.dataset}


def teacher_stage(
    data: TaskData, profile: Profile, seed: int = 0, progress: bool = True, trainer: Any = None, role: str = "teacher"
) -> Any:
    """Train and register the teacher (``metacompress-<dataset>-<role>``: ``reference`` for the
    retrained teacher of :mod:`.reference`); returns the :class:`~.distill.results.TrainingResult`.
    ``trainer``: Lightning's devices/strategy/precision (:class:`~.distill.devices.TrainerSettings`)."""
    from ..distill.arch import ArchSpec
    from ..distill.jobs import FitConfig, TeacherJob
    from ..distill.teacher import run_teacher_job

    fields: dict[str, Any] = {**profile.teacher_arch, "max_length": profile.max_length}  # ArchSpec checks them
    fit = FitConfig.on(
        trainer,
        epochs=profile.teacher_epochs,
        batch_size=profile.batch_size,
        max_steps=profile.max_steps,
        seed=seed,
        progress=progress,
        patience=profile.teacher_patience,
    )
    job = TeacherJob(
        data.frames,
        data.codexglue_task,
        arch=ArchSpec(**fields),
        pair_mode=profile.pair_mode,
        lr=profile.teacher_lr,
        fit=fit,
        registered_name=data.model_name(role),
        dataset=data.dataset,
    )
    result = run_teacher_job(job)
    tag_version(data.model_name(role), result.version, version_tags(data, profile))
    return result


def student_stage(
    data: TaskData,
    profile: Profile,
    teacher_uri: str,
    method: str,
    size_mb: float | None = None,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    trainer: Any = None,
) -> Any:
    """Distil and register one student with ``method`` (``metacompress-<dataset>-<method>``)
    in a run named ``<method>-<dataset>``."""
    from ..distill.jobs import FitConfig, StudentJob
    from ..distill.runner import run_student_job

    fit = FitConfig.on(
        trainer,
        epochs=profile.epochs_for(method),
        batch_size=profile.batch_size,
        max_steps=profile.max_steps,
        seed=seed,
        progress=progress,
    )
    job = StudentJob(
        data.frames,
        teacher_uri,
        data.codexglue_task,
        method=method,
        size_mb=float(size_mb) if size_mb else profile.size_mb,
        pair_mode=profile.pair_mode,
        max_length=profile.max_length,
        fit=fit,
        registered_name=data.model_name(method),
        cache_dir=cache_dir,
        dataset=data.dataset,
        options=dict(profile.options_for(method)),
    )
    result = run_student_job(job)
    tag_version(data.model_name(method), result.version, version_tags(data, profile))
    return result


def evaluate_stage(
    model_uri: str,
    data: TaskData,
    profile: Profile,
    teacher: str | None = None,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    threads: int | str | None = None,
) -> Any:
    """Run the metacompress evaluator on the test split in its own (nested) run."""
    import mlflow

    teacher = teacher or teacher_of(model_uri)
    cfg = evaluator_config(data, profile, seed, cache_dir, progress, threads)
    with mlflow.start_run(run_name=evaluation_run_name(model_uri), nested=mlflow.active_run() is not None):
        mlflow.set_tags({"metacompress.model": model_uri, "metacompress.teacher": teacher})
        return mlflow.models.evaluate(
            model=model_uri,
            data=data.frames["test"],
            targets=data.label_column,
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": teacher, **cfg},
        )


def gate_stage(
    method: str,
    model_name: str,
    version: str,
    data: TaskData,
    profile: Profile,
    policy: Any,
    alias: str = "champion",
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    threads: int | str | None = None,
    precision: str | None = None,
    reference: str | None = None,
) -> GateOutcome:
    """Evaluate a registered student against its tagged teacher and promote it if it passes.

    A refusal (the alias holder passed on a fresher evaluation) is reported as verdict
    ``refused``; the version's tags still say whether it passed. ``reference``: a retrained
    teacher's URI, judged beside the student (:mod:`.reference`).
    """
    from mlflow import MlflowClient

    from ..gates.decision import PromotionRefusedError
    from ..gates.gate import gate_version

    cfg = evaluator_config(data, profile, seed, cache_dir, progress, threads, precision)
    if reference:
        cfg["reference"] = reference
    try:
        decision = gate_version(
            model_name,
            version,
            data.frames["test"],
            policy,
            targets=data.label_column,
            alias=alias,
            evaluator_config=cfg,
        )
        verdict = "passed" if decision.passed else "failed"
    except PromotionRefusedError as exc:
        decision, verdict = exc.decision, "refused"
    client = MlflowClient()
    metrics = dict(client.get_run(decision.evaluation_run_id).data.metrics) if decision.evaluation_run_id else {}
    tags = dict(client.get_model_version(model_name, version).tags or {})
    logger.info("%s", decision.summary())
    return GateOutcome(
        method,
        model_name,
        version,
        verdict,
        decision.alias_moved,
        [c.message for c in decision.failed_checks],
        metrics,
        decision.evaluation_run_id,
        tags,
    )
