"""The paper's premise, run as a ladder (issue 32, part 3).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) judges 3 MB students whose accuracy is
within 3 points of their CodeBERT teacher's. :func:`premise_ladder` distils Compressor and
``fidelity`` students on every CodeBERT-labelled pair (``distill_rows=None``), first at
3 MB with more and more steps, then at larger sizes, and stops at the first rung where a
method's accuracy is within 3 points by the study's rule (TOST over seeds and the two-level
90% interval inside ±3 points, :mod:`.judge`). Each rung is an ordinary study
(:func:`.stages.run_study`, resumable stage by stage, the teacher shared) written to its
own folder, with MR1–MR3 judged on the same students; attacks are left to part 2.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PREMISE_METHODS = ("compressor", "fidelity")
# judged rows: at 200 the row sampling alone spans about ±4 points of a 90% interval, so
# a gap under 3 points could not be shown; 1,000 rows narrow it to about ±1.6
PREMISE_EVAL_ROWS = 1000


def premise_ladder(
    cfg: Any,
    steps: Sequence[int],
    sizes: Sequence[float] = (3.0,),
    *,
    methods: Sequence[str] = PREMISE_METHODS,
    output: str | Path = "reproduction/premise",
    runner: Callable[..., dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run rungs (size, steps) in order, sizes outermost, until some method's
    ``appears.accuracy_within_3pt`` is true; returns every rung's gaps and the one reached
    (``reached`` False when none did)."""
    if not steps or not sizes:
        raise ValueError(f"premise_ladder: steps and sizes must not be empty, got steps={steps!r}, sizes={sizes!r}")
    if runner is None:
        from .stages import run_study

        runner = run_study
    rungs: list[dict[str, Any]] = []
    for size in sizes:
        for n in steps:
            rung = replace(
                cfg,
                methods=tuple(methods),
                size_mb=float(size),
                student_steps=int(n),
                distill_rows=None,
                attacks=(),
                attack_rows=None,
                eval_rows=max(int(cfg.eval_rows), PREMISE_EVAL_ROWS),
            )
            folder = Path(output) / rung_folder(rung)
            report = runner(rung, output=folder)["report"]
            verdicts = report["summary"].get("verdicts", {})
            gaps = {m: verdicts.get(m, {}).get("accuracy_within_3pt") for m in methods}
            reached = sorted(m for m, g in gaps.items() if g and g.get("appears"))
            rungs.append({"size_mb": float(size), "steps": int(n), "folder": str(folder), "gaps": gaps})
            logger.info("premise rung %g MB, %d steps: within 3 points for %s", size, n, reached or "none")
            if reached:
                return {"reached": True, "size_mb": float(size), "steps": int(n), "methods": reached, "rungs": rungs}
    return {"reached": False, "rungs": rungs}


def rung_folder(cfg: Any) -> str:
    """A rung's folder name: ``3mb-3000steps``, with ``-lr0.001-clip1`` when the study sets
    the students' learning rate or gradient clip, so that rungs never overwrite each other."""
    name = f"{float(cfg.size_mb):g}mb-{int(cfg.student_steps)}steps"
    if cfg.student_lr is not None:
        name += f"-lr{float(cfg.student_lr):g}"
    if cfg.student_grad_clip is not None:
        name += f"-clip{float(cfg.student_grad_clip):g}"
    return name
