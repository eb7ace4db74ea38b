"""The three-teacher study's stages (issue 42; its rules, fixed before the runs, are
:mod:`.replica`; its page is :mod:`.triad_page`).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) reads every teacher–student
disagreement as the student's failure. Here each rate is read against what a teacher
retrained with another seed does on the same rows. :func:`run_triad` runs, resumably (every
part is a stage of :mod:`.resume`, found finished on a rerun):

1. **teachers** ``T0, T1, T2`` (``--teacher-seed``), carried between machines as stage
   bundles (:mod:`.bundle`) when a folder is given;
2. **replicas**: each ``Tj`` judged against each ``Ti`` (``j ≠ i``) exactly as a student is,
   on the selection rows: the reference rates;
3. **premise students** per teacher: Compressor (seeds 0 and 1), MORPH and ``fidelity``
   (seed 0), each evaluated on the same rows and the same variants (one evaluator seed);
4. **attacks**: each teacher alone at 30, 100, 300 queries until every teacher's success
   among correctly classified rows reaches 15% (per attack), then every premise student at
   that budget (the teacher's reports are reused from the memo);
5. **confirmation**: Compressor with fresh seeds 10 and 11 per teacher, judged on the test
   rows the selection left out and on a natural-ratio resample of them.

A stage that fails is logged and skipped (a rerun retries it); the others go on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from . import carried_stages as carry
from .carried_stages import Folder
from .config import StudyConfig
from .resume import StageResult
from .triad_plan import (
    PARTS,
    REPLICA,
    SKIPPABLE,
    TriadPlan,
    as_replica,
    as_student,
    attack_cfg,
    chosen_budget,
    teacher_success,
)

logger = logging.getLogger(__name__)


def _guard(done: dict[str, Any], label: str, step: Any) -> Any:
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - one failed stage must not end a study of hours
        logger.exception("%s failed: %s; the study goes on (a rerun retries it)", label, exc)
        done["failed"].append(f"{label}: {type(exc).__name__}: {exc}")
        return None


def run_triad(
    plan: TriadPlan,
    *,
    only: str = "all",
    output: str | Path = "reproduction/three-teachers",
    bundles: str | Path | None = None,
    data: Any | None = None,
    skip: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run (or resume) the parts of the study up to ``only`` (``teachers``, ``replicas``,
    ``students``, ``attacks``, ``confirmation``; ``all`` runs every part and writes the page;
    ``report`` runs nothing and writes the page from the finished stages).

    ``skip`` leaves out some of those parts (not ``teachers``): ``skip=("students",)`` with
    ``only="attacks"`` attacks the teachers and the students already trained while other
    processes train the rest; a skipped part's finished stages still count on the page."""
    if only not in PARTS:
        raise ValueError(f"run_triad: only must be one of {PARTS}, got {only!r}")
    unknown = sorted(set(skip) - set(SKIPPABLE))
    if unknown:
        raise ValueError(f"run_triad: skip takes parts of {SKIPPABLE}, got {unknown}")
    from ..threads import using
    from .teacher import study_data, teacher_stage

    data = data if data is not None else study_data(plan.base)
    done: dict[str, Any] = {"failed": []}
    with using(plan.base.threads):
        teachers = {}
        for seed in plan.teacher_seeds:
            if only == "report":
                from .bundle import adopt
                from .resume import lookup
                from .teacher import teacher_args

                if bundles is not None:
                    adopt("teacher", teacher_args(plan.teacher_cfg(seed)), bundles)
                found = lookup("teacher", teacher_args(plan.teacher_cfg(seed)))
                if found is not None:
                    teachers[seed] = found
                continue
            result = _guard(done, f"teacher {seed}", lambda s=seed: teacher_stage(plan.teacher_cfg(s), data, bundles))
            if result is not None:
                teachers[seed] = result
        done["teachers"] = teachers
        order = PARTS.index(only) if only not in ("all", "report") else len(PARTS)
        if only != "report":
            for part, step in (
                ("replicas", _replicas),
                ("students", _students),
                ("attacks", _attacks),
                ("confirmation", _confirmation),
            ):
                if order >= PARTS.index(part) and part not in skip:
                    step(plan, data, teachers, done, bundles)
        if only == "report" and bundles is not None:
            done["bundled"] = _bundle_finished(plan, teachers, bundles)
        if only in ("all", "report"):
            from .triad_page import write_triad_page

            done["page"] = write_triad_page(plan, teachers, output)
    return done


Teachers = Mapping[int, StageResult]


def _replicas(plan: TriadPlan, data: Any, teachers: Teachers, done: dict[str, Any], bundles: Folder) -> None:
    for i, ti in teachers.items():
        for j, tj in teachers.items():
            if i != j:
                replica = as_replica(tj, ti)
                judge = partial(carry.evaluation, plan.teacher_cfg(i), data, ti, replica, REPLICA, j, bundles)
                _guard(done, f"replica T{j} vs T{i}", judge)


def _students(plan: TriadPlan, data: Any, teachers: Teachers, done: dict[str, Any], bundles: Folder) -> None:
    for i, teacher in teachers.items():
        cfg = plan.teacher_cfg(i)
        for method, seeds in plan.seeds.items():
            for seed in seeds:
                _guard(done, f"T{i} {method} seed {seed}", partial(_student, cfg, data, teacher, method, seed, bundles))


def _student(cfg: StudyConfig, data: Any, teacher: StageResult, method: str, seed: int, bundles: Folder) -> None:
    student = carry.student(cfg, data, teacher, method, seed, bundles)
    carry.evaluation(cfg, data, teacher, student, method, seed, bundles)


def _attacks(plan: TriadPlan, data: Any, teachers: Teachers, done: dict[str, Any], bundles: Folder) -> None:
    from .resume import lookup
    from .stages import student_args

    done["budgets"] = {}
    for attack in plan.attacks:
        successes: dict[int, dict[int, float]] = {}
        budget = None
        for b in plan.budgets:
            for i, t in teachers.items():
                cfg = attack_cfg(plan, i, attack, b)
                alone = partial(carry.attack, cfg, data, t, as_student(t), "teacher", i, bundles)
                stage = _guard(done, f"T{i} alone, {attack} at {b}", alone)
                if stage is not None:
                    successes.setdefault(b, {})[i] = teacher_success(stage, attack)
            budget = chosen_budget(successes, (b,))
            if budget is not None:
                break
        done["budgets"][attack] = {"chosen": budget, "teacher_success": successes}
        if budget is None:
            logger.warning("%s: no budget of %s reaches %.0f%% teacher success", attack, plan.budgets, 100 * 0.15)
            continue
        for i, teacher in teachers.items():
            cfg = attack_cfg(plan, i, attack, budget)
            for method, seeds in plan.seeds.items():
                for seed in seeds:
                    student = lookup(
                        f"student-{method}-seed{seed}", student_args(plan.teacher_cfg(i), teacher, method, seed)
                    )
                    if student is not None:
                        _guard(
                            done, f"T{i} {method} seed {seed}, {attack} at {budget}",
                            partial(carry.attack, cfg, data, teacher, student, method, seed, bundles),
                        )  # fmt: skip


def _confirmation(plan: TriadPlan, data: Any, teachers: Teachers, done: dict[str, Any], bundles: Folder) -> None:
    for i, teacher in teachers.items():
        cfg = plan.teacher_cfg(i)
        for seed in plan.confirm_seeds:
            step = partial(_confirm, cfg, data, teacher, plan.confirm_method, seed, bundles)
            _guard(done, f"T{i} confirmation seed {seed}", step)


def _confirm(cfg: StudyConfig, data: Any, teacher: StageResult, method: str, seed: int, bundles: Folder) -> None:
    student = carry.student(cfg, data, teacher, method, seed, bundles)
    for split in ("confirmation", "natural"):  # rule 5 judges accuracy: no rewrites needed
        carry.evaluation(replace(cfg, eval_split=split, transforms=[]), data, teacher, student, method, seed, bundles)


def _bundle_finished(plan: TriadPlan, teachers: Teachers, bundles: str | Path) -> int:
    """``report`` with a bundle folder: bundle every finished stage of the study (nothing
    runs), so that a commit carries what a process with an older runner left in the store.
    Returns how many finished stages were found."""
    found = 0

    def bundle(spec: carry.Spec) -> StageResult | None:
        nonlocal found
        result = carry.bundle_finished(spec, bundles)
        found += result is not None
        return result

    for i, ti in teachers.items():
        cfg = plan.teacher_cfg(i)
        for j, tj in teachers.items():
            if i != j:
                bundle(carry.evaluation_spec(cfg, None, ti, as_replica(tj, ti), REPLICA, j))
        units = [(m, s) for m, seeds in plan.seeds.items() for s in seeds]
        units += [(plan.confirm_method, s) for s in plan.confirm_seeds]
        for method, seed in [("teacher", i)] + units:
            model = as_student(ti) if method == "teacher" else bundle(carry.student_spec(cfg, None, ti, method, seed))
            if model is None:
                continue
            for judged in (cfg, *(replace(cfg, eval_split=x, transforms=[]) for x in ("confirmation", "natural"))):
                if method != "teacher":
                    bundle(carry.evaluation_spec(judged, None, ti, model, method, seed))
            for attack in plan.attacks:
                for budget in plan.budgets:
                    bundle(carry.attack_spec(attack_cfg(plan, i, attack, budget), None, ti, model, method, seed))
        carry.carry_soft_labels(ti, bundles)
    return found
