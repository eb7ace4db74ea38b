"""Issue 44's plan: repair against Compressor at the premise setting (what runs, its options
and the stage arguments both the runner, :mod:`.repair_study`, and the page,
:mod:`.repair_page`, read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..deviation_defaults import DEFAULT_DEPTH
from .config import CPU_OPTIONS, StudyConfig
from .resume import StageResult

METHODS = ("compressor", "repair")
# the fidelity stage's CPU budget (architecture probes, one variant per step) on 6,000 sampled
# rows' variants, then 3 rounds of DFLARE on 256 training rows at 30 queries, 200 steps each
REPAIR_OPTIONS: dict[str, Any] = {
    **{k: v for k, v in CPU_OPTIONS["fidelity"].items() if k != "transforms"},
    "variant_rows": 6000,
    "rounds": 3,
    "queries": 30,
    "search_rows": 256,
    "round_steps": 200,
}


@dataclass(frozen=True)
class RepairPlan:
    """What issue 44's page measures (the defaults are its design)."""

    base: StudyConfig = field(default_factory=lambda: _premise())
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    options: Mapping[str, Any] = field(default_factory=lambda: dict(REPAIR_OPTIONS))
    queries: int = 100
    deviation_rows: int = 200
    depth: int = DEFAULT_DEPTH  # DFLARE's operators per mutant in the judging search (the evaluator's default)
    reference_seed: int | None = 1  # the retrained teacher judged beside the students, when its stage exists

    def cfg(self, method: str) -> StudyConfig:
        """The study config of ``method``'s students: ``repair`` at equal total steps."""
        if method != "repair":
            return self.base
        rounds = int(self.options["rounds"]) * int(self.options["round_steps"])
        options = {**self.base.method_options, "repair": dict(self.options)}
        return replace(self.base, student_steps=self.base.student_steps - rounds, method_options=options)


def _premise() -> StudyConfig:
    from .triad_plan import premise_config

    return premise_config()


def trained_of(student: StageResult) -> list[str]:
    """The rewrites a ``repair`` student trained on, from its run's tag."""
    from mlflow import MlflowClient

    from ..artifact_names import TRAINED_TRANSFORMS_TAG

    run_id = student.outputs.get("student_run_id")
    tag = MlflowClient().get_run(run_id).data.tags.get(TRAINED_TRANSFORMS_TAG, "") if run_id else ""
    return [t for t in tag.split(",") if t]


def fair_args(plan: RepairPlan, model: StageResult, trained: list[str]) -> dict[str, Any]:
    from .config import data_args

    return {
        **data_args(plan.base),
        "model_key": model.key,
        "eval_rows": plan.base.eval_rows,
        "trained_transforms": sorted(trained),
        "queries": plan.queries,
        "deviation_rows": plan.deviation_rows,
        "depth": plan.depth,
    }
