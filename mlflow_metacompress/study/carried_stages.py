"""The study's student, evaluation and attack stages carried between machines as stage
bundles (:mod:`.bundle`): with a folder, a bundle there stands for the stage's run, and
the finished stage is bundled there, so that a commit carries every finished part of a
study of many CPU hours (MetaCompress, Awal, Rochan, Roy, arXiv 2511.05476, at CPU scale)
and the page is written again on a machine whose store is empty."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from .config import StudyConfig
from .resume import StageResult

Folder = str | Path | None


def student(cfg: StudyConfig, data: Any, teacher: StageResult, method: str, seed: int, bundles: Folder) -> StageResult:
    """:func:`.stages.student_stage`, carried with its model (a premise student is 3 MB); the
    teacher's soft labels it computed are added to the teacher's bundle (:mod:`.bundle_cache`)."""
    from .bundle import carried
    from .stages import student_args, student_stage

    args = student_args(cfg, teacher, method, seed)
    run = partial(student_stage, cfg, data, teacher, method, seed)
    result = carried(f"student-{method}-seed{seed}", args, bundles, run)
    if bundles is not None:
        from .bundle import bundle_of
        from .bundle_cache import refresh

        found = bundle_of(bundles, "teacher", teacher.key)
        if found is not None:  # the soft labels this student computed, for the next machine's students
            refresh(found, teacher.outputs["model_uri"])
    return result


def evaluation(
    cfg: StudyConfig, data: Any, teacher: StageResult, model: StageResult, method: str, seed: int, bundles: Folder
) -> StageResult:
    """:func:`.stages.evaluation_stage`, carried with its metrics and per-row results (what
    the pages read), not the evaluator's other artifacts."""
    from ..artifact_names import PER_SAMPLE_PATH
    from .bundle import carried
    from .stages import eval_args, evaluation_stage

    args = eval_args(cfg, model, method, seed)
    run = partial(evaluation_stage, cfg, data, teacher, model, method, seed)
    return carried(f"evaluate-{method}-seed{seed}", args, bundles, run, model=False, artifacts=(PER_SAMPLE_PATH,))


def attack(
    cfg: StudyConfig, data: Any, teacher: StageResult, model: StageResult, method: str, seed: int, bundles: Folder
) -> StageResult:
    """:func:`.attacks.attack_stage`, carried with its metrics (the success rates the page reads)."""
    from .attacks import attack_args, attack_stage
    from .bundle import carried

    args = attack_args(cfg, model, method, seed)
    run = partial(attack_stage, cfg, data, teacher, model, method, seed)
    return carried(f"attack-{method}-seed{seed}", args, bundles, run, model=False)
