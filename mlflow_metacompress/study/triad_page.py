"""The three-teacher study's page (issue 42): the finished stages read back from the store
(:func:`collect_triad`), the verdicts of :mod:`.triad_verdicts` under the rules of
:mod:`.replica`, and ``reproduction/three-teachers/bigclonebench.{json,md}``. Parts not
finished yet read "not run yet"; a rerun with ``--only report`` rewrites the page.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .resume import StageResult

if TYPE_CHECKING:
    from .triad_plan import TriadPlan

logger = logging.getLogger(__name__)

RULES_MODULE = "mlflow_metacompress/study/replica.py"


def _eval_run(cfg: Any, student: StageResult, method: str, seed: int) -> str | None:
    from .resume import lookup
    from .stages import eval_args

    found = lookup(f"evaluate-{method}-seed{seed}", eval_args(cfg, student, method, seed))
    return None if found is None else found.run_id


def collect_triad(plan: TriadPlan, teachers: Mapping[int, StageResult]) -> dict[str, Any]:
    """The page's JSON record from the finished stages (see :mod:`.triad_verdicts`)."""
    from mlflow import MlflowClient

    from .attacks import attack_args
    from .resume import lookup
    from .rows import read_per_sample
    from .stages import student_args
    from .triad_plan import REPLICA, as_replica, as_student, attack_cfg, chosen_budget, teacher_success
    from .triad_rows import encode, row_data

    client = MlflowClient()
    record: dict[str, Any] = {"teachers": {}, "rows": {}, "attacks": {}, "confirmation": {}}
    students: dict[tuple[int, str, int], StageResult] = {}
    for i, t in teachers.items():
        record["teachers"][str(i)] = dict(client.get_run(t.run_id).data.metrics)
        cfg, rows = plan.teacher_cfg(i), record["rows"].setdefault(str(i), {})
        for j, tj in teachers.items():
            if j != i and tj is not None and (run := _eval_run(cfg, as_replica(tj, t), REPLICA, j)) is not None:
                rows[f"{REPLICA}:{j}"] = row_data(read_per_sample(run), cfg.eval_rows).to_json()
        for method, seeds in plan.seeds.items():
            for seed in seeds:
                st = lookup(f"student-{method}-seed{seed}", student_args(cfg, t, method, seed))
                if st is None:
                    continue
                students[(i, method, seed)] = st
                if (run := _eval_run(cfg, st, method, seed)) is not None:
                    rows[f"{method}:{seed}"] = row_data(read_per_sample(run), cfg.eval_rows).to_json()
        for seed in plan.confirm_seeds:
            st = lookup(f"student-{plan.confirm_method}-seed{seed}", student_args(cfg, t, plan.confirm_method, seed))
            for split in ("confirmation", "natural"):
                if st is None:
                    break
                judged = replace(cfg, eval_split=split, transforms=[])
                if (run := _eval_run(judged, st, plan.confirm_method, seed)) is not None:
                    original = row_data(read_per_sample(run)).original
                    record["confirmation"].setdefault(split, {}).setdefault(str(i), {})[str(seed)] = {
                        "correct": encode(original["correct"]),
                        "teacher_correct": encode(original["teacher_correct"]),
                    }
    for attack in plan.attacks:
        successes: dict[int, dict[int, float]] = {}
        budget = None
        for b in plan.budgets:
            for i, t in teachers.items():
                stage = lookup(
                    f"attack-teacher-seed{i}",
                    attack_args(attack_cfg(plan, i, attack, b), as_student(t), "teacher", i),
                )
                if stage is not None:
                    successes.setdefault(b, {})[i] = teacher_success(stage, attack)
            if len(successes.get(b, {})) == len(teachers) and (budget := chosen_budget(successes, (b,))) is not None:
                break
        entry: dict[str, Any] = {
            "budget": budget,
            "teacher_success": {str(b): {str(i): v for i, v in s.items()} for b, s in successes.items()},
            "teacher": {str(i): v for i, v in successes.get(budget, {}).items()} if budget else {},
            "students": {},
        }
        for (i, method, seed), st in students.items():
            if budget is None:
                break
            stage = lookup(
                f"attack-{method}-seed{seed}", attack_args(attack_cfg(plan, i, attack, budget), st, method, seed)
            )
            if stage is not None:
                asr = client.get_run(stage.run_id).data.metrics.get(f"attack_{attack}/student_asr", math.nan)
                entry["students"].setdefault(method, {}).setdefault(str(i), []).append(float(asr))
        record["attacks"][attack] = entry
    return record


def write_triad_page(plan: TriadPlan, teachers: Mapping[int, StageResult], output: str | Path) -> dict[str, Any]:
    """Collect, judge and write ``<output>/bigclonebench.{json,md}``; returns the record."""
    from .triad_markdown import render_triad
    from .triad_verdicts import verdicts

    record = collect_triad(plan, teachers)
    record["config"] = json.loads(json.dumps(asdict(plan.base), default=str))
    record["plan"] = {
        "teacher_seeds": list(plan.teacher_seeds),
        "seeds": {m: list(s) for m, s in plan.seeds.items()},
        "confirm": {"method": plan.confirm_method, "seeds": list(plan.confirm_seeds)},
        "attacks": list(plan.attacks),
        "budgets": list(plan.budgets),
        "attack_rows": plan.attack_rows,
    }
    record["rules"] = RULES_MODULE
    record["verdicts"] = verdicts(record)
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bigclonebench.json").write_text(json.dumps(_clean(record), indent=1, sort_keys=True) + "\n")
    (folder / "bigclonebench.md").write_text(render_triad(record))
    logger.info("three-teacher page written to %s", folder)
    return record


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities as null, keys as strings."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value
