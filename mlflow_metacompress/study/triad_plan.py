"""The three-teacher study's plan (issue 42): the premise setting, what runs, and the
helpers both its runner (:mod:`.triad`) and its page (:mod:`.triad_page`) read. The rules the
page applies are :mod:`.replica` (MetaCompress, Awal, Rochan, Roy, arXiv 2511.05476, read
against retrained teachers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .config import ATTACKS, StudyConfig
from .replica import BUDGETS, TEACHER_SUCCESS_FLOOR
from .resume import StageResult

PARTS = ("teachers", "replicas", "students", "attacks", "confirmation", "all", "report")
SKIPPABLE = ("replicas", "students", "attacks", "confirmation")  # parts ``run_triad(skip=...)`` may leave out
REPLICA = "replica"  # the method name of a teacher judged against another teacher
REPLICA_SEP = "@"  # joins a replica's key and its judge's (:func:`as_replica`)


def premise_config(base: StudyConfig | None = None) -> StudyConfig:
    """The premise setting (3 MB, 6,000 steps on every CodeBERT-labelled pair, lr 1e-3,
    gradient norm clipped at 1; 1,000 judged rows), with one evaluator seed for every model."""
    return replace(
        base or StudyConfig(),
        size_mb=3.0,
        student_steps=6000,
        student_lr=1e-3,
        student_grad_clip=1.0,
        distill_rows=None,
        eval_rows=1000,
        attacks=(),
        attack_rows=None,
        eval_seed=0,
    )


@dataclass(frozen=True)
class TriadPlan:
    """What the three-teacher study runs (the defaults are issue 42's design)."""

    base: StudyConfig = field(default_factory=premise_config)
    teacher_seeds: tuple[int, ...] = (0, 1, 2)
    seeds: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: {"compressor": (0, 1), "morph": (0,), "fidelity": (0,)}
    )
    confirm_method: str = "compressor"
    confirm_seeds: tuple[int, ...] = (10, 11)
    attacks: tuple[str, ...] = ATTACKS
    budgets: tuple[int, ...] = BUDGETS
    attack_rows: int = 1000

    def teacher_cfg(self, seed: int) -> StudyConfig:
        return replace(self.base, teacher_seed=seed)

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self.seeds)


def as_replica(model: StageResult, judge: StageResult) -> StageResult:
    """Teacher ``model`` standing where a student of teacher ``judge`` does. Its key names
    both (``<model key>@<judge key>``): an evaluation's key holds its student's key and not
    the teacher's, so T1 judged against T0 and against T2 must differ in it."""
    key = f"{model.key}{REPLICA_SEP}{judge.key}"
    return StageResult(model.name, key, model.run_id, dict(model.outputs), True)


def as_student(teacher: StageResult) -> StageResult:
    """A teacher's stage standing where a student's does (its key and model)."""
    return StageResult(teacher.name, teacher.key, teacher.run_id, dict(teacher.outputs), True)


def attack_cfg(plan: TriadPlan, teacher_seed: int, attack: str, budget: int) -> StudyConfig:
    """One attack at one budget on the selection rows (``attack_rows``, the same sample)."""
    return replace(
        plan.teacher_cfg(teacher_seed), attacks=(attack,), attack_rows=plan.attack_rows, attack_budget=budget
    )


def teacher_success(stage: StageResult, attack: str) -> float:
    """The teacher's attack success among its correctly classified rows, read from the stage."""
    from mlflow import MlflowClient

    return float(MlflowClient().get_run(stage.run_id).data.metrics.get(f"attack_{attack}/teacher_asr", float("nan")))


def chosen_budget(successes: Mapping[int, Mapping[int, float]], budgets: tuple[int, ...]) -> int | None:
    """Rule 4's budget: the smallest at which every teacher's success is at least the floor
    (``successes[budget][teacher]``); None when no budget reaches it."""
    for budget in budgets:
        rates = successes.get(budget, {})
        if rates and all(r >= TEACHER_SUCCESS_FLOOR for r in rates.values()):
            return budget
    return None
