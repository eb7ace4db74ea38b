"""The study's attack stage (issue 32, part 2): ALERT and MHM on ``attack_rows`` test rows.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) reports students losing up to 285%
more accuracy under attack than their teacher. That excess is a ratio of two small counts
of flipped rows: at 200 attacked rows the teacher flips 6–14 per attack and the standard
error of the log ratio is about 0.37; at 1,000 rows about 0.16. So the study attacks its
own ``attack_rows`` label-stratified test rows (default 1,000), apart from the rows judged
for MR1–MR4, on the teacher and on every student, and logs the flip counts the verdict
reads (``attack_<a>/teacher_flips``, ``student_flips``, ``rows``). Resumable like every
stage (:mod:`.resume`).
"""

from __future__ import annotations

from typing import Any

from .config import StudyConfig, data_args
from .resume import StageResult, run_stage


def attack_args(cfg: StudyConfig, student: StageResult, method: str, seed: int) -> dict[str, Any]:
    """What one attack stage depends on: the student's stage, the attacked rows and the attacks."""
    return {
        **data_args(cfg),
        "student_key": student.key,
        "method": method,
        "seed": seed,
        "attack_rows": cfg.attack_rows,
        "attacks": list(cfg.attacks),
        "attack_budget": cfg.attack_budget,
        **({"eval_seed": cfg.eval_seed} if cfg.eval_seed is not None else {}),
    }


def flip_counts(metrics: dict[str, float], attacks: Any, rows: int) -> dict[str, float]:
    """``attack_<a>/teacher_flips``, ``student_flips`` (rows the attack turned from right to
    wrong: the logged accuracy drop times the attacked rows) and ``rows`` per attack."""
    out: dict[str, float] = {}
    for a in attacks:
        drops = [metrics.get(f"attack_{a}/{r}_accuracy_drop") for r in ("teacher", "student")]
        if all(d is not None for d in drops):
            out[f"attack_{a}/teacher_flips"] = float(round(float(drops[0]) * rows))  # type: ignore[arg-type]
            out[f"attack_{a}/student_flips"] = float(round(float(drops[1]) * rows))  # type: ignore[arg-type]
            out[f"attack_{a}/rows"] = float(rows)
    return out


def attack_stage(
    cfg: StudyConfig, data: Any, teacher: StageResult, student: StageResult, method: str, seed: int
) -> StageResult:
    """ALERT and MHM (``cfg.attacks``) on ``cfg.attack_rows`` label-stratified test rows, on
    the teacher and on the student (no transformation): the rows that settle the excess
    drop (about 0.37 standard error of the log ratio at 200 rows, 0.16 at 1,000)."""

    def body() -> dict[str, Any]:
        import mlflow

        from ..data.sampling import cap_rows
        from .evaluate import evaluate_against

        rows = cap_rows(data.test, int(cfg.attack_rows or 0), data.label_column, cfg.data_seed)
        config = {
            "transforms": [],
            "attacks": list(cfg.attacks),
            "attack_budget": cfg.attack_budget,
            "seed": seed if cfg.eval_seed is None else cfg.eval_seed,
            "bootstrap_samples": 0,
        }
        result = evaluate_against(student.outputs["model_uri"], teacher.outputs["model_uri"], rows, data, config)
        mlflow.log_metrics(flip_counts(dict(result.metrics), cfg.attacks, len(rows)))
        return {"model_uri": student.outputs["model_uri"], "attack_rows": len(rows)}

    return run_stage(
        f"attack-{method}-seed{seed}",
        attack_args(cfg, student, method, seed),
        body,
        study=cfg.task,
        tags={"metacompress.reproduce.method": method, "metacompress.reproduce.seed": str(seed)},
    )
