"""Issue 44's measurement: the ``repair`` method against Compressor at the study's premise
setting on BigCloneBench, over paired seeds, on rewrites the repaired student never trained
on (page: :mod:`.repair_page`).

DFLARE (Tian et al., TOSEM 2023) retrained a compressed image model on the deviating
inputs its search found and removed up to 48% of the deviations. ``repair``
(:mod:`mlflow_metacompress.distill.methods.repair`) does that for models of code: the
fidelity distillation on half of the rewrites, then rounds of deviation search on training
rows and training on what it found. Here each seed gives a pair of students of one teacher
at equal size and equal total steps (``repair``'s distillation steps plus its rounds' steps
equal Compressor's 6,000), and every student, with the retrained teacher as a reference
model, is judged by one evaluation on the 1,000 selection rows of the test file:

- every rewrite, with the rewrites ``repair`` trained on held apart
  (``trained_transforms``): ``any_violation_rate/metamorphic`` pools the unseen ones only;
- the deviation search on the first ``deviation_rows`` rows at ``queries`` paired queries,
  composing only unseen rewrites: ``deviation_rate`` and
  ``deviation_queries_per_deviation``;
- accuracy, per row, for the TOST at ±1 point on the total error.

Every part is a resumable stage (:mod:`.resume`); the teacher comes from the stage bundles.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from .repair_plan import METHODS, RepairPlan, fair_args, trained_of
from .resume import StageResult, run_stage

logger = logging.getLogger(__name__)


def fair_evaluation(
    plan: RepairPlan,
    data: Any,
    teacher: StageResult,
    model: StageResult,
    trained: list[str],
    label: str,
    bundles: str | Path | None = None,
) -> StageResult:
    """One model judged on the selection rows with ``trained`` held apart (see the module
    docstring), carried as a stage bundle in ``bundles`` (its metrics and per-row results)."""
    from ..artifact_names import PER_SAMPLE_PATH
    from .bundle import carried

    def body() -> dict[str, Any]:
        from .data import eval_rows
        from .evaluate import evaluate_against

        config = {
            "transforms": "all",
            "trained_transforms": list(trained),
            "deviation": {"queries": plan.queries, "rows": plan.deviation_rows, "seed": 0, "depth": plan.depth},
            "seed": 0,
            "bootstrap_samples": 0,
        }
        evaluate_against(
            model.outputs["model_uri"], teacher.outputs["model_uri"], eval_rows(plan.base, data), data, config
        )
        return {"model_uri": model.outputs["model_uri"]}

    name, args = f"repair-judge-{label}", fair_args(plan, model, trained)
    run = partial(run_stage, name, args, body, study=plan.base.task)
    return carried(name, args, bundles, run, model=False, artifacts=(PER_SAMPLE_PATH,))


def run_repair_study(
    plan: RepairPlan,
    *,
    only: str = "all",
    output: str | Path = "reproduction/repair",
    bundles: str | Path | None = None,
    data: Any | None = None,
) -> dict[str, Any]:
    """Train (or find) each seed's Compressor and ``repair`` students, judge them and the
    reference, and (``all``/``report``) write the page; ``students`` stops before judging."""
    if only not in ("students", "all", "report"):
        raise ValueError(f"run_repair_study: only must be students, all or report, got {only!r}")
    from ..threads import using
    from .carried_stages import student
    from .teacher import study_data, teacher_stage
    from .triad_plan import as_student

    data = data if data is not None else study_data(plan.base)
    done: dict[str, Any] = {"failed": [], "students": {}, "judged": {}}
    with using(plan.base.threads):
        teacher = teacher_stage(plan.base, data, bundles)
        reference = _reference(plan, bundles)
        for seed in plan.seeds if only != "report" else ():
            pair = {}
            for method in METHODS:
                try:
                    pair[method] = student(plan.cfg(method), data, teacher, method, seed, bundles)
                except Exception as exc:  # noqa: BLE001 - one failed stage must not end hours of work
                    logger.exception("%s seed %d failed: %s", method, seed, exc)
                    done["failed"].append(f"{method}-seed{seed}: {type(exc).__name__}: {exc}")
            done["students"][seed] = pair
            if only == "students" or "repair" not in pair:
                continue
            trained = trained_of(pair["repair"])
            for method, model in pair.items():
                done["judged"][(method, seed)] = fair_evaluation(
                    plan, data, teacher, model, trained, f"{method}-{seed}", bundles
                )
            if reference is not None:
                fair_evaluation(plan, data, teacher, as_student(reference), trained, "reference", bundles)
        if only in ("all", "report"):
            from .repair_page import write_repair_page

            done["page"] = write_repair_page(plan, teacher, reference, output)
    return done


def _reference(plan: RepairPlan, bundles: str | Path | None) -> StageResult | None:
    """The retrained teacher's finished stage (adopted from the bundles), or None: never trained here."""
    if plan.reference_seed is None:
        return None
    from .resume import lookup
    from .teacher import teacher_args

    args = teacher_args(replace(plan.base, teacher_seed=plan.reference_seed))
    if bundles is not None:
        from .bundle import adopt

        adopt("teacher", args, bundles)
    return lookup("teacher", args)
