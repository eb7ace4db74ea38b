"""Distillation with Lightning: teacher fine-tuning, soft-label KD and search-based
students (Compressor, Shi et al., ASE 2022; AVATAR; MORPH; fidelity), tracked and
registered in MLflow.

Layout: the training core (:mod:`.arch`, :mod:`.datasets`, :mod:`.losses`,
:mod:`.modules`, :mod:`.training`, :mod:`.augment`, :mod:`.soft_labels`, ...), the
shared search machinery (:mod:`.search`) and one module per method (:mod:`.methods`),
found by :func:`list_methods`.

Public entry points (imported lazily; torch and Lightning load on first use):
``train_teacher``, ``distill_student`` (keyword entries building a ``TeacherJob``/``StudentJob``,
:mod:`.jobs`, for ``run_teacher_job``/``run_student_job``), ``train_student``, ``list_methods``,
``get_method``, ``kd_loss``, ``ArchSpec``. The command line is
``metacompress distill {teacher,student,methods} ...``.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "train_teacher": "teacher",
    "build_teacher": "teacher",
    "distill_student": "runner",
    "train_student": "student",
    "run_teacher_job": "teacher",
    "run_student_job": "runner",
    "TeacherJob": "jobs",
    "StudentJob": "jobs",
    "FitConfig": "jobs",
    "list_methods": "discovery",
    "get_method": "discovery",
    "Method": "discovery",
    "MethodOptions": "options",
    "parse_options": "options",
    "DistillContext": "context",
    "StudentOutcome": "context",
    "TrainingResult": "results",
    "kd_loss": "losses",
    "ArchSpec": "arch",
    "search_architecture": "search.compressor_search",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
