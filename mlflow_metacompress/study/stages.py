"""The MetaCompress study reproduced on real data at CPU scale (entry point ``reproduce``).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) distils 3 MB students from a
fine-tuned CodeBERT on BigCloneBench with Compressor (Shi et al., ASE 2022), AVATAR
(Shi et al., ICSE-SEIP 2024) and MORPH, and reports that students which match their
teacher's accuracy (gap under 3%) still disagree with it: MR1 violations up to 36%,
MR2 up to 31%, MR3 up to 62%, and up to 285% more accuracy lost under attack.

:func:`run_study` repeats that protocol on one CPU-trained teacher: a scratch encoder of
at least 20 MB trained on every labelled training pair; students of each method at
``size_mb`` for each seed, distilled on the CodeBERT-labelled half
(:mod:`.data`); every metamorphic transformation on ``eval_rows`` test pairs with
bootstrap intervals; ALERT and MHM on ``attack_rows`` test pairs of their own, teacher and
student (:mod:`.attacks`; with ``attack_rows=None`` on the judged rows, inside the
evaluation, as the 2026-12-02 run did); the students' MR1 and accuracy
against the real CodeBERT's hard labels on held-out pairs. Every stage is resumable
(:mod:`.resume`); :mod:`.table` aggregates the seeds and writes ``reproduction/``. The
teacher's stage is in :mod:`.teacher`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .config import StudyConfig, data_args
from .data import eval_rows
from .resume import StageResult, run_stage
from .teacher import study_data, teacher_args, teacher_stage

logger = logging.getLogger(__name__)


def student_args(cfg: StudyConfig, teacher: StageResult, method: str, seed: int) -> dict[str, Any]:
    """What one student depends on: the teacher's stage, the data, its method and seed, budgets."""
    return {
        **data_args(cfg),
        "teacher_key": teacher.key,
        "method": method,
        "seed": seed,
        "size_mb": cfg.size_mb,
        "max_length": cfg.student_max_length,
        "batch_size": cfg.student_batch_size,
        "steps": cfg.student_steps,
        "options": cfg.options(method),
        # only when set, so that the stored students of unclipped studies keep their keys
        **({"grad_clip": cfg.student_grad_clip} if cfg.student_grad_clip is not None else {}),
    }


def student_stage(cfg: StudyConfig, data: Any, teacher: StageResult, method: str, seed: int) -> StageResult:
    """Distil (or find) one student of ``method`` for ``seed`` from the study's teacher on
    the distillation set (our teacher's soft labels, never CodeBERT's)."""

    def body() -> dict[str, Any]:
        import math

        from ..distill.jobs import FitConfig, StudentJob
        from ..distill.runner import run_student_job

        epochs = max(1, math.ceil(cfg.student_steps * cfg.student_batch_size / max(1, len(data.distill))))
        fit = FitConfig(
            epochs=epochs,
            batch_size=cfg.student_batch_size,
            max_steps=cfg.student_steps,
            seed=seed,
            progress=False,
            grad_clip=cfg.student_grad_clip,
        )
        result = run_student_job(
            StudentJob(
                data.frames(data.distill),
                teacher.outputs["model_uri"],
                data.codexglue_task,
                method=method,
                size_mb=cfg.size_mb,
                max_length=cfg.student_max_length,
                fit=fit,
                registered_name=f"metacompress-reproduce-{data.codexglue_task}-{method}",
                dataset=data.codexglue_task,
                unlabeled=data.distill,
                options=cfg.options(method),
            )
        )
        return {
            "model_uri": result.model_uri,
            "student_run_id": result.run_id,
            "size_mb": result.metrics.get("size_mb", float("nan")),
        }

    return run_stage(
        f"student-{method}-seed{seed}",
        student_args(cfg, teacher, method, seed),
        body,
        study=cfg.task,
        tags={"metacompress.reproduce.method": method, "metacompress.reproduce.seed": str(seed)},
    )


def eval_args(cfg: StudyConfig, student: StageResult, method: str, seed: int) -> dict[str, Any]:
    """What one evaluation depends on: the student's stage and every evaluation budget."""
    return {
        **data_args(cfg),
        "student_key": student.key,
        "method": method,
        "seed": seed,
        "eval_rows": cfg.eval_rows,
        "transforms": cfg.transforms,
        "attacks": [] if cfg.attack_rows else list(cfg.attacks),
        "attack_budget": cfg.attack_budget,
        "attack_max_samples": cfg.attack_max_samples,
        "bootstrap": cfg.bootstrap,
        # only when set, so that stored evaluations keep their keys
        **({"eval_split": cfg.eval_split} if cfg.eval_split != "selection" else {}),
        **({"eval_seed": cfg.eval_seed} if cfg.eval_seed is not None else {}),
    }


def evaluation_stage(
    cfg: StudyConfig, data: Any, teacher: StageResult, student: StageResult, method: str, seed: int
) -> StageResult:
    """The MetaCompress evaluation of one student (every transformation, each attack,
    bootstrap intervals) and its teacher-as-oracle comparison with CodeBERT's labels."""

    def body() -> dict[str, Any]:
        import mlflow

        from .evaluate import evaluate_against
        from .oracle import codebert_agreement

        rows = eval_rows(cfg, data)
        config = {
            "transforms": cfg.transforms,
            "attacks": [] if cfg.attack_rows else list(cfg.attacks),
            "attack_budget": cfg.attack_budget,
            "attack_max_samples": cfg.attack_max_samples,
            "seed": seed if cfg.eval_seed is None else cfg.eval_seed,
            "bootstrap_samples": cfg.bootstrap,
        }
        mlflow.set_tags(
            {"metacompress.model": student.outputs["model_uri"], "metacompress.teacher": teacher.outputs["model_uri"]}
        )
        evaluate_against(student.outputs["model_uri"], teacher.outputs["model_uri"], rows, data, config)
        if data.oracle is not None:
            mlflow.log_metrics(
                codebert_agreement(
                    student.outputs["model_uri"],
                    teacher.outputs["model_uri"],
                    data.oracle,
                    data.code_columns,
                    data.label_column,
                    cfg.bootstrap,
                    seed,
                )
            )
        return {"model_uri": student.outputs["model_uri"]}

    return run_stage(
        f"evaluate-{method}-seed{seed}",
        eval_args(cfg, student, method, seed),
        body,
        study=cfg.task,
        tags={"metacompress.reproduce.method": method, "metacompress.reproduce.seed": str(seed)},
    )


def run_study(
    cfg: StudyConfig, *, only: str = "all", output: str | Path = "reproduction", bundles: str | Path | None = None
) -> dict[str, Any]:
    """Run (or resume) every stage of the study, seed by seed (seed 0 of every method is
    complete before seed 1 starts), then write the ``reproduction/`` table.

    ``only``: ``teacher`` stops after the teacher; ``students`` skips the evaluations;
    ``report`` runs nothing and aggregates the finished stages. A stage that raises is
    logged and skipped (its run ends ``FAILED``, so a rerun retries it); the others go on.
    ``bundles``: the repository folder of finished teacher stages (:mod:`.bundle`).
    """
    if only not in ("all", "teacher", "students", "report"):
        raise ValueError(f"run_study: only must be all, teacher, students or report, got {only!r}")
    unknown = [m for m in cfg.methods if m not in _known_methods()] if only in ("all", "students") else []
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; known: {_known_methods()}")
    from ..threads import using

    with using(cfg.threads):  # every stage on the study's threads, restored afterwards
        return _run_stages(cfg, only, output, bundles)


def _run_stages(cfg: StudyConfig, only: str, output: str | Path, bundles: str | Path | None = None) -> dict[str, Any]:
    """:func:`run_study`'s stages, after its checks."""
    from .resume import lookup

    if only == "report":
        if bundles is not None:
            from .bundle import adopt

            adopt("teacher", teacher_args(cfg), bundles)
        teacher = lookup("teacher", teacher_args(cfg))
        if teacher is None:
            raise RuntimeError("no finished teacher stage for these arguments: run the study first")
    else:
        data = study_data(cfg)
        teacher = teacher_stage(cfg, data, bundles)
    done: dict[str, Any] = {"teacher": teacher, "failed": []}
    if only in ("students", "all"):
        for seed in cfg.seeds:
            for method in cfg.methods:
                try:
                    student = student_stage(cfg, data, teacher, method, seed)
                    done[student.name] = student
                    if only == "all":
                        ev = evaluation_stage(cfg, data, teacher, student, method, seed)
                        done[ev.name] = ev
                        if cfg.attack_rows and cfg.attacks:
                            from .attacks import attack_stage

                            at = attack_stage(cfg, data, teacher, student, method, seed)
                            done[at.name] = at
                except Exception as exc:  # noqa: BLE001 - one failed stage must not end a study of hours
                    logger.exception("%s seed %d failed: %s; the study goes on (a rerun retries it)", method, seed, exc)
                    done["failed"].append(f"{method}-seed{seed}: {type(exc).__name__}: {exc}")
    if only in ("all", "report"):
        from .table import write_reproduction

        done["report"] = write_reproduction(cfg, teacher, collect(cfg, teacher), output)
    return done


def collect(cfg: StudyConfig, teacher: StageResult) -> dict[tuple[str, int], dict[str, float]]:
    """``(method, seed)`` → the finished evaluation's metrics (plus the student's
    ``size_mb``); stages not finished are absent."""
    from mlflow import MlflowClient

    from .attacks import attack_args, flip_counts
    from .resume import lookup
    from .table import attack_rows_of

    client = MlflowClient()
    out: dict[tuple[str, int], dict[str, float]] = {}
    for seed in cfg.seeds:
        for method in cfg.methods:
            student = lookup(f"student-{method}-seed{seed}", student_args(cfg, teacher, method, seed))
            if student is None:
                continue
            ev = lookup(f"evaluate-{method}-seed{seed}", eval_args(cfg, student, method, seed))
            if ev is None:
                continue
            metrics = dict(client.get_run(ev.run_id).data.metrics)
            if cfg.attack_rows and cfg.attacks:  # the attacks ran in a stage of their own
                at = lookup(f"attack-{method}-seed{seed}", attack_args(cfg, student, method, seed))
                if at is not None:
                    metrics.update(
                        {k: v for k, v in client.get_run(at.run_id).data.metrics.items() if k.startswith("attack_")}
                    )
            else:
                metrics.update(flip_counts(metrics, cfg.attacks, attack_rows_of(cfg)))
            size = student.outputs.get("size_mb")
            if size not in (None, "", "nan"):
                metrics["size_mb"] = float(size)
            # a str among the floats: the run id that the per-sample paired bootstrap reads back
            metrics["run_id"] = ev.run_id  # type: ignore[assignment]
            out[(method, seed)] = metrics
    return out


def _known_methods() -> list[str]:
    from ..distill.discovery import list_methods

    return list_methods()
