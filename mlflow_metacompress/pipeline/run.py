"""The ``main`` entry point of the MLproject as package code: data → teacher → one
student per distillation method → MetaCompress evaluation (transformations and at least
one attack; Awal, Rochan, Roy, arXiv 2511.05476) → registry gate → comparison table.

    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline
    result = run_pipeline(PipelineConfig(task="vulnerability", profile="quick"))
    print(result.markdown)

Under ``mlflow run`` the pipeline attaches to the project's run (``MLFLOW_RUN_ID``);
every stage is a nested child run. Tracking and registry default to
``sqlite:///mlflow.db`` in the working directory (:func:`.tracking.setup_tracking`).

Each stage logs a start, heartbeat and end line with the elapsed time and an
estimate of the remaining time (:mod:`.progress`). Progress bars are shown only when
``config.progress`` is set and output is a terminal; otherwise no library draws one
either (:mod:`..quiet`). On Ctrl-C (or the SIGTERM with
which ``mlflow run`` cancels its entry point) or a crash, every run the pipeline
started ends KILLED or FAILED and the temporary folders are removed (:mod:`.interrupts`).
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .config import PipelineConfig, PipelineResult
from .stages import GateOutcome

if TYPE_CHECKING:
    from ..distill.devices import TrainerSettings

logger = logging.getLogger(__name__)


def run_pipeline(config: PipelineConfig) -> PipelineResult:
    """Run every stage; a method that crashes is reported in the table (verdict ``error``)
    and in ``errors`` while the other methods continue, and the run then ends FAILED. A
    student failing its gate is a verdict, not an error: the run ends FINISHED (progress
    and interrupts: see the module docstring)."""
    import mlflow

    from ..heartbeat import on_terminal
    from ..profiles import get_profile
    from ..quiet import quiet_libraries
    from .budget import pipeline_work, transform_count
    from .data import load_task_data
    from .interrupts import CleanExit, failed_runs
    from .progress import StageClock
    from .stages import resolve_methods

    profile = get_profile(config.profile, config.task)
    methods = resolve_methods(config.methods)  # fail before any training
    from ..precision import inference_follows
    from ..threads import using

    trainer, threads = _trainer_settings(config)
    policy = _policy(config, profile)
    data = load_task_data(config.task, config.data_dir, profile, config.seed)
    size_mb = float(config.size_mb) if config.size_mb else profile.size_mb
    bars = config.progress and on_terminal()
    budget = pipeline_work(
        profile, methods, data.sizes(), transform_count(profile, data.language), language=data.language
    )
    clock = StageClock([(w.kind, w.label, w.work) for w in budget])
    _log_threads(config, threads)
    outcomes: list[GateOutcome] = []
    errors: dict[str, str] = {}
    with (
        quiet_libraries(bars),
        CleanExit() as cleanup,
        tempfile.TemporaryDirectory(prefix="metacompress-pipeline-") as cache,
        using(threads),
        inference_follows(trainer.precision),  # --precision 32-true: the job's own inference in fp32 too
        mlflow.start_run(run_name=f"metacompress-{data.dataset}") as run,
    ):
        cleanup.root = run.info.run_id
        _log_setup(config, data, profile, policy, methods, size_mb, trainer, threads, budget)
        with clock.stage("teacher"):
            teacher, reference = _teachers(config, data, profile, bars, trainer)
        for method in methods:
            try:
                outcomes.append(
                    _method(
                        method,
                        config,
                        data,
                        profile,
                        policy,
                        teacher,
                        size_mb,
                        Path(cache),
                        clock,
                        bars,
                        trainer,
                        threads,
                        reference,
                    )
                )
            except Exception as exc:  # keep the other methods going; the table says what broke
                logger.exception("method %s failed", method)
                errors[method] = f"{type(exc).__name__}: {exc}"
                outcomes.append(GateOutcome(method, data.model_name(method), None, "error", error=errors[method]))
                if clock.pending(f"gate {method}"):
                    clock.skip(f"gate {method}", "its distillation failed")
                cleanup.keep |= failed_runs(run.info.run_id, cleanup.since_ms)  # stays FAILED after a Ctrl-C
        table, markdown = _compare(outcomes, teacher, data, profile, policy)
        run_id = run.info.run_id
        clock.finish()
        if errors:  # a crash, unlike a failing verdict, fails the run (as mlflow run does on exit code 1)
            mlflow.set_tag("metacompress.failed_methods", ",".join(errors))
            mlflow.end_run("FAILED")
    return PipelineResult(run_id, teacher.model_uri, outcomes, table, markdown, policy.name, errors)


def _policy(config: PipelineConfig, profile: Any) -> Any:
    """The gate policy: ``config.policy`` (or the profile's), with the excess bound added when
    the job trains a reference teacher (:func:`.reference.with_excess_bound`)."""
    from ..gates.policy import load_policy
    from ..profiles import resolve_policy

    policy = load_policy(resolve_policy(config.policy, profile))
    if config.reference:
        from .reference import with_excess_bound

        policy = with_excess_bound(policy, profile)
    return policy


def _teachers(config: PipelineConfig, data: Any, profile: Any, bars: bool, trainer: Any) -> tuple[Any, str | None]:
    """The teacher's stage, and the reference teacher's URI when ``config.reference`` (else None)."""
    from .stages import teacher_stage

    teacher = teacher_stage(data, profile, config.seed, bars, trainer=trainer)
    if not config.reference:
        return teacher, None
    from .reference import reference_stage

    return teacher, reference_stage(data, profile, config.seed, bars, trainer=trainer).model_uri


def _trainer_settings(config: PipelineConfig) -> tuple[TrainerSettings, int]:
    """The run settings of every stage (``config.settings``, parsed once by the entry point,
    else the defaults) and the torch threads each process uses."""
    from ..distill.devices import TrainerSettings

    trainer = config.settings if config.settings is not None else TrainerSettings.parse()
    return trainer, trainer.thread_count()


def _log_setup(
    config: PipelineConfig,
    data: Any,
    profile: Any,
    policy: Any,
    methods: list[str],
    size_mb: float,
    trainer: Any,
    threads: int,
    budget: Any,
) -> None:
    """The pipeline run's tags, its resolved ``pipeline.*`` params and ``pipeline/config.json``."""
    import mlflow

    mlflow.set_tags(
        {
            "metacompress.pipeline": "main",
            "metacompress.data": data.source,
            "metacompress.task": data.dataset,
            "metacompress.profile": profile.name,
            "metacompress.policy": policy.name,
            **trainer.tags(),
        }
    )
    resolved = {
        "task": data.task,
        "data_source": data.source,
        "profile": profile.name,
        "methods": ",".join(methods),
        "policy": policy.name,
        "size_mb_target": size_mb,
        "seed": config.seed,
        "threads": threads,
        "precision": trainer.resolved_precision(),
        **{f"rows_{k}": v for k, v in data.sizes().items()},
    }
    # "pipeline." keeps these apart from the raw MLproject parameters mlflow run logs
    mlflow.log_params({f"pipeline.{k}": v for k, v in resolved.items()})
    mlflow.log_dict(
        {
            "profile": profile.to_dict(),
            "config": {k: v for k, v in asdict(config).items() if k != "settings"}
            | {
                "devices": trainer.devices,
                "strategy": trainer.strategy,
                "precision": trainer.precision,
                "threads": trainer.threads,
                "methods": methods,
            },
            "policy": policy.describe(),
            "stage_work": [asdict(w) for w in budget],
        },
        "pipeline/config.json",
    )


def _method(
    method: str,
    config: PipelineConfig,
    data: Any,
    profile: Any,
    policy: Any,
    teacher: Any,
    size_mb: float,
    cache: Path,
    clock: Any,
    bars: bool,
    trainer: Any,
    threads: int,
    reference: str | None = None,
) -> GateOutcome:
    """One method's stages: distil its student (:func:`.stages.student_stage`), then gate it
    (beside the ``reference`` teacher's URI when the job trained one)."""
    from .stages import gate_stage, student_stage

    with clock.stage(f"distill {method}"):
        student = student_stage(
            data, profile, teacher.model_uri, method, size_mb, config.seed, cache / "soft_labels", bars, trainer=trainer
        )
    with clock.stage(f"gate {method}"):
        return gate_stage(
            method,
            data.model_name(method),
            str(student.version),
            data,
            profile,
            policy,
            config.alias,
            config.seed,
            cache / "predictions",
            bars,
            threads=threads,
            precision=trainer.evaluator_config().get("precision"),
            reference=reference,
        )


def _compare(
    outcomes: list[GateOutcome], teacher: Any, data: Any, profile: Any, policy: Any
) -> tuple[pd.DataFrame, str]:
    """The comparison table of every outcome beside the teacher, logged as markdown and
    ``comparison/report.html``; returns (table, markdown)."""
    from ..report.compare import log_comparison_html
    from .report import comparison_table, log_comparison

    table = comparison_table(
        outcomes,
        {"model": teacher.model_uri[len("models:/") :], "size_mb": teacher.metrics.get("size_mb")},
        profile.attacks,
    )
    title = f"{data.task} on {data.source} · profile {profile.name} · policy {policy.name}"
    markdown = log_comparison(table, title)
    log_comparison_html([o.evaluation_run_id for o in outcomes], title)  # comparison/report.html
    return table, markdown


def _log_threads(config: PipelineConfig, threads: int) -> None:
    """The log line naming the torch threads of every stage, and whether they were given."""
    from ..threads import describe, parse_threads

    given = config.settings.threads if config.settings is not None else None
    logger.info(
        "torch threads: %s (threads=%s, %s)",
        describe(threads),
        given or "auto",
        "the default" if parse_threads(given) is None else "given",
    )
