"""Command line of the ``reproduce`` entry point (``python recipes/reproduce.py``).

Every option has the study's default; ``--only teacher`` trains (or finds) the teacher
and stops, ``--seeds 0 --methods compressor`` runs one part of the study. A rerun with
the same arguments skips every finished stage (:mod:`.resume`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from typing import Any

from .config import ATTACKS, METHODS, StudyConfig, TeacherBudget

logger = logging.getLogger(__name__)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in str(text).split(",") if t.strip())


def _parts(text: str) -> tuple[str, ...]:
    """``--skip``'s parts of the three-teacher study (:data:`.triad_plan.SKIPPABLE`)."""
    from .triad_plan import SKIPPABLE

    parts = _csv(text)
    unknown = [p for p in parts if p not in SKIPPABLE]
    if unknown:
        raise argparse.ArgumentTypeError(f"--skip takes {', '.join(SKIPPABLE)}; got {', '.join(unknown)}")
    return parts


def _int(text: str) -> int:
    """An integer, also written as MLflow passes float parameters (``200.0``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(value)


def _threads(text: str) -> int | None:
    from ..threads import parse_threads

    try:
        return parse_threads(text, "--threads")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(float(t)) for t in _csv(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds expects comma-separated integers, got {text!r}") from None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    d, t = StudyConfig(), TeacherBudget()
    p = argparse.ArgumentParser(
        prog="reproduce", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--task", default=d.task, choices=["clone", "vulnerability", "bigclonebench", "devign"])
    p.add_argument("--data-dir", default=d.data_dir, help="CodeXGLUE folder (task folder or its parent)")
    p.add_argument("--seeds", type=_seeds, default=d.seeds, help="student seeds, e.g. 0,1,2")
    p.add_argument(
        "--methods",
        type=_csv,
        default=None,
        help=f"comma-separated (default {','.join(METHODS)}; with --premise-steps, compressor,fidelity)",
    )
    p.add_argument("--eval-rows", type=_int, default=d.eval_rows, help="test rows every student is judged on")
    p.add_argument("--attacks", type=_csv, default=d.attacks, help=f"attack recipes (default {','.join(ATTACKS)})")
    p.add_argument("--transforms", default="all", help="'all' or comma-separated transformation names")
    p.add_argument(
        "--threads",
        type=_threads,
        default=None,
        help="torch intra-op threads: auto (default: $METACOMPRESS_THREADS, $OMP_NUM_THREADS, "
        "else the free cores; mlflow_metacompress/threads.py) or a positive integer",
    )
    p.add_argument("--size-mb", type=float, default=d.size_mb)
    p.add_argument("--teacher-steps", type=int, default=t.max_steps)
    p.add_argument(
        "--teacher-seed", type=int, default=d.teacher_seed, help="the teacher's training seed (issue 42: 0, 1, 2)"
    )
    p.add_argument("--teacher-max-length", type=int, default=t.max_length, help="teacher tokens per function")
    p.add_argument("--student-steps", type=_int, default=d.student_steps)
    p.add_argument(
        "--student-lr", type=_positive, default=None, help="every method's learning rate (default: each method's own)"
    )
    p.add_argument(
        "--student-grad-clip",
        type=_positive,
        default=None,
        help="clip the students' gradient norm to this (default: none)",
    )
    p.add_argument("--attack-budget", type=_int, default=d.attack_budget, help="model queries per attacked row")
    p.add_argument("--attack-max-samples", type=int, default=0, help="attacked rows (0: every eval row)")
    p.add_argument(
        "--attack-rows",
        type=_int,
        default=d.attack_rows,
        help="test rows attacked in a stage of their own, teacher and every student (0: attack the judged rows)",
    )
    p.add_argument(
        "--distill-rows",
        default=str(d.distill_rows),
        help="distillation pairs (label-stratified sample of the CodeBERT-labelled half), or 'all'",
    )
    p.add_argument(
        "--premise-steps",
        default="",
        help="the premise ladder (issue 32 part 3): student steps to try in turn, e.g. 3000,6000,12000; "
        "distils --methods (default compressor,fidelity) on every CodeBERT-labelled pair until one is "
        "within 3 points of the teacher",
    )
    p.add_argument("--premise-sizes", default="3", help="sizes (MB) for the premise ladder, tried in turn")
    p.add_argument(
        "--rerender", default="", help="re-render this stored <dataset>.json under the current rules, no runs"
    )
    p.add_argument("--bootstrap", type=int, default=d.bootstrap, help="bootstrap resamples for within-run intervals")
    p.add_argument(
        "--only",
        default="all",
        choices=["all", "teacher", "students", "report", "teachers", "replicas", "attacks", "confirmation"],
        help="stop after this part (report: only aggregate finished stages); with --three-teachers: teachers, "
        "replicas, students, attacks, confirmation, all or report",
    )
    _study_options(p)
    p.add_argument("--output", default="reproduction", help="folder the table is written to (and logged)")
    p.add_argument("--experiment", default="metacompress-reproduce")
    p.add_argument(
        "--artifact-root", default="", help="artifact location of the experiment when it is created (default: MLflow's)"
    )
    return p


def _study_options(p: argparse.ArgumentParser) -> None:
    """The options of issue 42's and issue 44's studies and of the stage bundles."""
    p.add_argument(
        "--three-teachers",
        action="store_true",
        help="issue 42's study: three teachers (--teacher-seeds), each the others' reference, premise students, "
        "attacks and confirmation (mlflow_metacompress/study/triad.py); the page goes to --output "
        "(default reproduction/three-teachers)",
    )
    p.add_argument(
        "--repair-study",
        action="store_true",
        help="issue 44's page: repair against Compressor over 5 paired seeds at the premise setting, on rewrites "
        "repair never trained on (mlflow_metacompress/study/repair_study.py; --only students, all or report; the page "
        "goes to --output, default reproduction/repair)",
    )
    p.add_argument("--teacher-seeds", type=_seeds, default=(0, 1, 2), help="with --three-teachers: the teachers")
    p.add_argument(
        "--skip",
        type=_parts,
        default=(),
        help="with --three-teachers: parts to leave out of those up to --only (replicas, students, attacks, "
        "confirmation), e.g. --only attacks --skip students attacks the teachers and the students already trained",
    )
    p.add_argument(
        "--stages",
        default="",
        help="repository folder of finished teacher stages: adopted into an empty store, and a teacher trained here "
        "is written there to be committed (e.g. reproduction/three-teachers/stages)",
    )


def config_from(args: argparse.Namespace) -> StudyConfig:
    """The :class:`StudyConfig` that ``args`` describe."""
    from ..threads import resolve as resolve_threads

    transforms: Any = "all" if args.transforms.strip() == "all" else list(_csv(args.transforms))
    d = StudyConfig()
    return replace(
        d,
        task=args.task,
        data_dir=args.data_dir,
        seeds=tuple(args.seeds),
        methods=d.methods if args.methods is None else tuple(args.methods),
        eval_rows=args.eval_rows,
        attacks=tuple(args.attacks),
        transforms=transforms,
        threads=resolve_threads(args.threads, source="--threads"),
        teacher=replace(d.teacher, max_steps=args.teacher_steps, max_length=args.teacher_max_length),
        teacher_seed=args.teacher_seed,
        size_mb=args.size_mb,
        student_steps=args.student_steps,
        student_lr=args.student_lr,
        student_grad_clip=args.student_grad_clip,
        attack_budget=args.attack_budget,
        attack_max_samples=args.attack_max_samples or None,
        bootstrap=args.bootstrap,
        attack_rows=args.attack_rows or None,
        distill_rows=None
        if str(args.distill_rows).strip().lower() in ("all", "none", "0")
        else _int(args.distill_rows),
    )


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.rerender:
        from .rerender import rerender

        rerender(args.rerender, args.output if args.output != "reproduction" else None)
        return 0
    cfg = config_from(args)
    steps = [_int(x) for x in _csv(args.premise_steps)]
    import mlflow

    from .stages import run_study

    if args.artifact_root and mlflow.get_experiment_by_name(args.experiment) is None:
        mlflow.create_experiment(args.experiment, artifact_location=args.artifact_root)
    mlflow.set_experiment(args.experiment)
    if args.three_teachers:
        from .triad import run_triad
        from .triad_plan import TriadPlan, premise_config

        plan = TriadPlan(base=premise_config(replace(cfg, teacher_seed=0)), teacher_seeds=tuple(args.teacher_seeds))
        only = "teachers" if args.only == "teacher" else args.only
        out = args.output if args.output != "reproduction" else "reproduction/three-teachers"
        done = run_triad(plan, only=only, output=out, bundles=args.stages or None, skip=tuple(args.skip))
        logger.info("three-teacher study: %d failed stage(s) %s", len(done["failed"]), done["failed"])
        return 0
    if args.repair_study:
        from .repair_plan import RepairPlan
        from .repair_study import run_repair_study
        from .triad_plan import premise_config

        out = args.output if args.output != "reproduction" else "reproduction/repair"
        seeds = tuple(args.seeds) if tuple(args.seeds) != StudyConfig().seeds else (0, 1, 2, 3, 4)  # issue 44: 5
        repair_plan = RepairPlan(base=premise_config(replace(cfg, teacher_seed=0)), seeds=seeds)
        done = run_repair_study(repair_plan, only=args.only, output=out, bundles=args.stages or None)
        logger.info("repair study: %d failed stage(s) %s", len(done["failed"]), done["failed"])
        return 0
    if steps:
        from .premise import PREMISE_METHODS, premise_ladder

        methods = PREMISE_METHODS if args.methods is None else cfg.methods
        out = args.output if args.output != "reproduction" else "reproduction/premise"
        sizes = [float(x) for x in _csv(args.premise_sizes)]
        from functools import partial

        runner = {"runner": partial(run_study, bundles=args.stages)} if args.stages else {}
        result = premise_ladder(cfg, steps, sizes, methods=methods, output=out, **runner)
        logger.info("premise ladder: %s", {k: v for k, v in result.items() if k != "rungs"})
        return 0
    run_study(cfg, only=args.only, output=args.output, bundles=args.stages or None)
    return 0
