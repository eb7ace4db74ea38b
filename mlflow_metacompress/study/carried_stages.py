"""The study's student, evaluation and attack stages carried between machines as stage
bundles (:mod:`.bundle`): with a folder, a bundle there stands for the stage's run, and
the finished stage is bundled there, so that a commit carries every finished part of a
study of many CPU hours (MetaCompress, Awal, Rochan, Roy, arXiv 2511.05476, at CPU scale)
and the page is written again on a machine whose store is empty."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from .config import StudyConfig
from .resume import StageResult

Folder = str | Path | None
# a stage as carried: its name, arguments, how to run it, whether it has a model, which artifacts
Spec = tuple[str, dict[str, Any], Callable[[], StageResult], bool, tuple[str, ...]]


def student_spec(cfg: StudyConfig, data: Any, teacher: StageResult, method: str, seed: int) -> Spec:
    """:func:`.stages.student_stage`, carried with its model (a premise student is 3 MB)."""
    from .stages import student_args, student_stage

    run = partial(student_stage, cfg, data, teacher, method, seed)
    return f"student-{method}-seed{seed}", student_args(cfg, teacher, method, seed), run, True, ()


def evaluation_spec(
    cfg: StudyConfig, data: Any, teacher: StageResult, model: StageResult, method: str, seed: int
) -> Spec:
    """:func:`.stages.evaluation_stage`, carried with its metrics and per-row results (what
    the pages read), not the evaluator's other artifacts."""
    from ..artifact_names import PER_SAMPLE_PATH
    from .stages import eval_args, evaluation_stage

    run = partial(evaluation_stage, cfg, data, teacher, model, method, seed)
    return f"evaluate-{method}-seed{seed}", eval_args(cfg, model, method, seed), run, False, (PER_SAMPLE_PATH,)


def attack_spec(cfg: StudyConfig, data: Any, teacher: StageResult, model: StageResult, method: str, seed: int) -> Spec:
    """:func:`.attacks.attack_stage`, carried with its metrics (the success rates the page reads)."""
    from .attacks import attack_args, attack_stage

    run = partial(attack_stage, cfg, data, teacher, model, method, seed)
    return f"attack-{method}-seed{seed}", attack_args(cfg, model, method, seed), run, False, ()


def carry(spec: Spec, bundles: Folder) -> StageResult:
    """Run the stage of ``spec`` between adopting its bundle and bundling it (:func:`.bundle.carried`)."""
    from .bundle import carried

    name, args, run, model, artifacts = spec
    return carried(name, args, bundles, run, model=model, artifacts=artifacts)


def bundle_finished(spec: Spec, bundles: str | Path) -> StageResult | None:
    """Bundle the stage of ``spec`` if it is finished in the store (nothing runs); the stage or None."""
    from .bundle import export
    from .resume import lookup

    name, args, _, model, artifacts = spec
    found = lookup(name, args)
    if found is not None:
        export(found, args, bundles, model=model, artifacts=artifacts)
    return found


def carry_soft_labels(teacher: StageResult, bundles: Folder) -> None:
    """Add the teacher's soft labels computed here to its bundle (:mod:`.bundle_cache`), if it has one."""
    if bundles is None:
        return
    from .bundle import bundle_of
    from .bundle_cache import refresh

    found = bundle_of(bundles, "teacher", teacher.key)
    if found is not None:
        refresh(found, teacher.outputs["model_uri"])


def student(cfg: StudyConfig, data: Any, teacher: StageResult, method: str, seed: int, bundles: Folder) -> StageResult:
    """The student stage, carried; the teacher's soft labels it computed join the teacher's bundle."""
    result = carry(student_spec(cfg, data, teacher, method, seed), bundles)
    carry_soft_labels(teacher, bundles)
    return result


def evaluation(
    cfg: StudyConfig, data: Any, teacher: StageResult, model: StageResult, method: str, seed: int, bundles: Folder
) -> StageResult:
    """The evaluation stage of ``model``, carried."""
    return carry(evaluation_spec(cfg, data, teacher, model, method, seed), bundles)


def attack(
    cfg: StudyConfig, data: Any, teacher: StageResult, model: StageResult, method: str, seed: int, bundles: Folder
) -> StageResult:
    """The attack stage of ``model``, carried."""
    return carry(attack_spec(cfg, data, teacher, model, method, seed), bundles)
