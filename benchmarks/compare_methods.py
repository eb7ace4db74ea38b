"""Compressor vs AVATAR vs MORPH vs fidelity on the shared Devign subset (issue 6).

One teacher, four students at the same size target (3 MB), each registered and judged
by the ``metacompress`` evaluator on the test rows and on every transformation of the
library (``transforms="all"``). Prints one table: size, GFLOPs, accuracy,
accuracy_drop, MR1–MR3 violation rates and MR4 ECA on original and ``/metamorphic``
inputs, ``any_violation_rate/metamorphic`` and the student/teacher inference speed
ratio (teacher seconds / student seconds on the same rows).

The teacher (a scratch 2 × 192 encoder) trains on the labelled half of the shared 2,000
Devign train rows and keeps its last epoch, so it is confident, as fine-tuned code
models are; the students are distilled on the other 1,000 rows. Budgets are parameters;
the defaults (rows, lengths, epochs, search sizes) are sized for about 40 minutes on
2 CPU cores. Run it niced on a shared machine:

    nice .venv/bin/python benchmarks/compare_methods.py --out /tmp/compare_methods.json

``--seeds N`` repeats the teacher and every student with training seeds ``seed … seed+N−1``
(the data sample stays the one of ``--seed``; ``--teacher`` fixes one teacher for all seeds)
and reports, per method and metric, the mean over seeds with a 95% Student-t interval
(``mean ± t_{0.975, N−1}·sd/√N``), the evaluator's within-run 95% bootstrap intervals of each
seed (``<metric>_ci_low``/``_ci_high``), and paired t-tests (same seed, same teacher) of
fidelity against every other method. A difference is called significant when the paired
test's p < 0.05; with 3 seeds only large, consistent differences reach that.
``--aggregate a.json b.json …`` builds the same report from the ``--out`` files of separate
single-seed runs (e.g. run in parallel with ``--seed 0``, ``--seed 1``, …) without training.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
from seed_stats import seed_summary, seed_table  # beside this script (benchmarks/)

METHODS = ("compressor", "avatar", "morph", "fidelity")
COLUMNS = [
    "size_mb",
    "gflops",
    "student_accuracy",
    "accuracy_drop",
    *[
        f"{m}{s}"
        for m in ("mr1_violation_rate", "mr2_violation_rate", "mr3_violation_rate", "mr4_eca")
        for s in ("", "/metamorphic")
    ],
    "any_violation_rate",
    "any_violation_rate/metamorphic",
    "speed_ratio",
]
logger = logging.getLogger("compare_methods")


def load_frames(data_dir: Path, train: int, valid: int, test: int, seed: int) -> dict[str, pd.DataFrame]:
    folder = data_dir / "devign"
    frames = {}
    for split, n in (("train", train), ("valid", valid), ("test", test)):
        path = folder / f"{split}.jsonl"
        if not path.exists():
            raise SystemExit(f"missing {path}: pass --data-dir (the folder holding devign/)")
        df = pd.read_json(path, lines=True)
        if n and len(df) > n:  # stratified by label, seeded
            df = df.groupby("target", group_keys=False).sample(frac=n / len(df), random_state=seed)
        frames[split] = df.reset_index(drop=True)
    return frames


def option_values(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as options (values as in ``python -m mlflow_metacompress.distill --option``)."""
    from mlflow_metacompress.distill.cli import parse_option

    return dict(parse_option(item) for item in items)


def speed_ratio(teacher_uri: str, student_uri: str, df: pd.DataFrame, repeats: int = 2) -> float:
    """Teacher seconds / student seconds predicting ``df`` (best of ``repeats``)."""
    import mlflow

    def best(uri: str) -> float:
        model = mlflow.pyfunc.load_model(uri)
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            model.predict(df)
            times.append(time.perf_counter() - t)
        return min(times)

    return best(teacher_uri) / best(student_uri)


def evaluate(uri: str, teacher_uri: str, test: pd.DataFrame, cache: Path) -> dict[str, float]:
    import mlflow

    with mlflow.start_run(run_name=f"evaluate {uri}", nested=mlflow.active_run() is not None):
        result = mlflow.models.evaluate(
            model=uri,
            data=test[["func", "target"]],
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher_uri,
                "code_columns": ["func"],
                "language": "c",
                "transforms": "all",
                "cache_dir": str(cache),
                "progress": False,
            },
        )
    return {k: float(v) for k, v in result.metrics.items() if isinstance(v, (int, float))}


def latest_student(method: str) -> tuple[str, dict[str, Any]]:
    """URI and ``student_config.json`` of the latest ``compare-<method>`` version."""
    import mlflow

    client = mlflow.MlflowClient()
    versions = client.search_model_versions(f"name='compare-{method}'")
    if not versions:
        raise SystemExit(f"--reuse {method}: no registered compare-{method} in this workdir")
    v = max(versions, key=lambda x: int(x.version))
    path = mlflow.artifacts.download_artifacts(run_id=v.run_id, artifact_path="student_config.json")
    return f"models:/compare-{method}/{v.version}", json.loads(Path(path).read_text())


def table(rows: dict[str, dict[str, float]]) -> str:
    head = "| method | " + " | ".join(COLUMNS) + " |"
    sep = "|---" * (len(COLUMNS) + 1) + "|"
    lines = [head, sep]
    for method, row in rows.items():
        cells = [f"{row.get(c, math.nan):.4f}" if c != "size_mb" else f"{row.get(c, math.nan):.3f}" for c in COLUMNS]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(rows: dict[str, dict[str, float]]) -> str:
    if "fidelity" not in rows or len(rows) < 2:
        return "fidelity not compared"
    key = "any_violation_rate/metamorphic"
    others = {m: r for m, r in rows.items() if m != "fidelity"}
    best_acc = max(r["student_accuracy"] for r in others.values())
    fid = rows["fidelity"]
    best_other = min(others, key=lambda m: others[m].get(key, math.inf))
    lowest = fid[key] <= others[best_other][key]  # ties count for fidelity
    ok_acc = fid["student_accuracy"] >= best_acc - 0.01
    return (
        f"fidelity {key} {fid[key]:.4f} vs lowest other {best_other} {others[best_other][key]:.4f} "
        f"({'lowest' if lowest else 'NOT lowest'}); fidelity accuracy {fid['student_accuracy']:.4f} vs best "
        f"other {best_acc:.4f} ({'within' if ok_acc else 'NOT within'} 1 point); "
        f"goal {'MET' if lowest and ok_acc else 'NOT met'}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/metacompress-compare"))
    p.add_argument("--out", type=Path, default=None, help="write rows + verdict as JSON here")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--teacher", default=None, help="reuse a registered teacher URI (tracking DB in --workdir)")
    p.add_argument("--train-rows", type=int, default=2000, help="train rows (half teacher, half distillation)")
    p.add_argument("--valid-rows", type=int, default=200)
    p.add_argument("--test-rows", type=int, default=300)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--size-mb", type=float, default=3.0)
    p.add_argument("--teacher-epochs", type=int, default=8)
    p.add_argument("--teacher-lr", type=float, default=5e-4)
    p.add_argument(
        "--teacher-monitor",
        default="last",
        choices=["last", "val_acc"],
        help="keep the teacher's last (confident) epoch or its best validation accuracy (on 1,000 Devign "
        "rows that is an early, near-uniform epoch: no confident samples, MR3 undefined)",
    )
    p.add_argument("--teacher-layers", type=int, default=2)
    p.add_argument("--teacher-hidden", type=int, default=192)
    p.add_argument("--epochs", type=int, default=10, help="student epochs")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--population", type=int, default=16)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--probes", type=int, default=8, help="briefly distilled configurations per surrogate")
    p.add_argument("--probe-steps", type=int, default=30)
    p.add_argument(
        "--fidelity-arch",
        choices=["teacher_shaped", "avatar", "search"],
        default="teacher_shaped",
        help="fidelity's own scaled-down standard shape, AVATAR's chosen architecture (an equal-"
        "architecture comparison of the losses) or AVATAR's search run inside fidelity",
    )
    p.add_argument(
        "--fidelity-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra fidelity option, repeatable (e.g. temperature=3, confidence=2, select=agreement)",
    )
    p.add_argument(
        "--reuse",
        default="",
        help="comma-separated methods whose latest registered student in "
        "--workdir is reused instead of retrained (with --teacher)",
    )
    p.add_argument("--seed", type=int, default=0, help="data sample seed and first training seed")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="repeat training with seeds --seed … --seed+N-1 and report "
        "means with 95%% t-intervals over seeds, within-run bootstrap intervals and paired tests",
    )
    p.add_argument(
        "--aggregate",
        nargs="+",
        type=Path,
        default=None,
        metavar="JSON",
        help="report over the --out files of separate single-seed runs instead of training",
    )
    args = p.parse_args(argv)
    if args.aggregate:
        return aggregate(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for noisy in ("lightning", "lightning.pytorch", "mlflow", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.seeds < 1:
        p.error("--seeds must be >= 1")
    if args.seeds > 1 and args.reuse:
        p.error("--reuse reuses one registered student for every seed; it cannot be combined with --seeds > 1")
    import mlflow

    args.workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(args.workdir)
    mlflow.set_tracking_uri(f"sqlite:///{args.workdir / 'mlflow.db'}")
    mlflow.set_experiment("compare-methods")
    frames = load_frames(args.data_dir, args.train_rows, args.valid_rows, args.test_rows, args.seed)
    started = time.perf_counter()
    seeds = [args.seed + i for i in range(args.seeds)]
    runs = {}
    for seed in seeds:
        logger.info("seed %d (%d of %d)", seed, seeds.index(seed) + 1, len(seeds))
        runs[seed] = run_seed(args, frames, seed)
        if args.out and len(seeds) > 1:  # each seed's own --out file, for --aggregate if the run is cut short
            rows, timings, teacher_uri = runs[seed]
            seed_out = args.out.with_name(f"{args.out.stem}.seed{seed}{args.out.suffix}")
            seed_out.write_text(
                json.dumps(
                    {
                        "rows": rows,
                        "timings": timings,
                        "teacher": teacher_uri,
                        "total_s": sum(timings.values()),
                        "args": {**{k: str(v) for k, v in vars(args).items()}, "seed": str(seed)},
                    },
                    indent=2,
                )
            )
    total = time.perf_counter() - started
    if len(seeds) == 1:
        rows, timings, teacher_uri = runs[seeds[0]]
        return report_one(args, rows, timings, teacher_uri, total)
    return report_seeds(args, runs, total)


def run_seed(
    args: argparse.Namespace, frames: dict[str, pd.DataFrame], seed: int
) -> tuple[dict[str, dict[str, float]], dict[str, float], str]:
    """Teacher (unless ``--teacher``), every student and their evaluations at one training seed."""
    import mlflow

    from mlflow_metacompress.distill.arch import ArchSpec
    from mlflow_metacompress.distill.runner import distill_student
    from mlflow_metacompress.distill.teacher import train_teacher

    timings: dict[str, float] = {}
    common = dict(epochs=args.epochs, batch_size=args.batch_size, seed=seed, progress=False)
    if args.teacher:
        teacher_uri = args.teacher
    else:
        arch = ArchSpec(
            vocab_size=8000,
            num_hidden_layers=args.teacher_layers,
            hidden_size=args.teacher_hidden,
            num_attention_heads=4,
            intermediate_size=4 * args.teacher_hidden,
            max_length=args.max_length,
        )
        t = time.perf_counter()
        teacher = train_teacher(
            frames,
            "devign",
            arch=arch,
            epochs=args.teacher_epochs,
            batch_size=args.batch_size,
            lr=args.teacher_lr,
            seed=seed,
            monitor=args.teacher_monitor,
            registered_name="compare-teacher",
            progress=False,
        )
        teacher_uri, timings["teacher"] = teacher.model_uri, time.perf_counter() - t
        logger.info("teacher %s %s", teacher_uri, teacher.metrics)
    search = dict(
        population=args.population,
        generations=args.generations,
        probes=args.probes,
        probe_steps=args.probe_steps,
        probe_rows=128,
        probe_valid=100,
    )
    uris: dict[str, str] = {}
    avatar_choice: dict[str, Any] | None = None
    reuse = {m.strip() for m in args.reuse.split(",") if m.strip()}
    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        if method in reuse:
            uris[method], config = latest_student(method)
            avatar_choice = config["student"] if method == "avatar" else avatar_choice
            continue
        opts: dict[str, Any] = {"population": args.population, "generations": args.generations}
        if method in ("avatar", "morph"):
            opts = search
        if method == "fidelity":
            opts = dict(search, arch="avatar" if args.fidelity_arch == "search" else "teacher_shaped")
            if args.fidelity_arch == "avatar":
                if not avatar_choice:
                    raise SystemExit("--fidelity-arch avatar needs avatar before fidelity in --methods (or --reuse)")
                opts["student_config"] = avatar_choice
            opts.update(option_values(args.fidelity_option))
        t = time.perf_counter()
        res = distill_student(
            frames,
            teacher_uri,
            "devign",
            method=method,
            size_mb=args.size_mb,
            max_length=args.max_length,
            registered_name=f"compare-{method}",
            cache_dir=args.workdir / "soft_labels",
            **common,
            **opts,
        )
        timings[method] = time.perf_counter() - t
        uris[method] = res.model_uri
        if method == "avatar":
            avatar_choice = res.config["student"]
        logger.info("%s %s in %.0fs: %s", method, res.model_uri, timings[method], res.metrics)
    rows: dict[str, dict[str, float]] = {}
    client = mlflow.MlflowClient()
    for method, uri in uris.items():
        t = time.perf_counter()
        metrics = evaluate(uri, teacher_uri, frames["test"], args.workdir / "eval_cache")
        name, version = uri[len("models:/") :].rsplit("/", 1)
        tags = client.get_model_version(name, version).tags
        metrics["size_mb"] = float(tags["metacompress.size_mb"])
        metrics["gflops"] = float(tags["metacompress.gflops"])
        metrics["speed_ratio"] = speed_ratio(teacher_uri, uri, frames["test"][["func"]].head(200))
        rows[method] = metrics
        timings[f"evaluate_{method}"] = time.perf_counter() - t
    return rows, timings, teacher_uri


def report_one(
    args: argparse.Namespace,
    rows: dict[str, dict[str, float]],
    timings: dict[str, float],
    teacher_uri: str,
    total: float,
) -> int:
    text = table(rows)
    summary = verdict(rows)
    first = next(iter(rows.values()), {})
    teacher_line = (
        f"teacher {teacher_uri}: test accuracy {first.get('teacher_accuracy', math.nan):.4f}, "
        f"confident (p >= 0.8) on {first.get('mr3_support', 0.0):.1%} of test rows"
    )
    print(teacher_line)
    print(text)
    print(summary)
    print(f"total {total / 60:.1f} min; timings (s): " + ", ".join(f"{k}={v:.0f}" for k, v in timings.items()))
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "verdict": summary,
                    "teacher_line": teacher_line,
                    "timings": timings,
                    "total_s": total,
                    "teacher": teacher_uri,
                    "args": {k: str(v) for k, v in vars(args).items()},
                },
                indent=2,
            )
        )
    return 0


def aggregate(args: argparse.Namespace) -> int:
    """The multi-seed report from single-seed ``--out`` files (their ``rows`` and ``teacher``)."""
    runs: dict[int, tuple[dict[str, dict[str, float]], dict[str, float], str]] = {}
    for path in args.aggregate:
        data = json.loads(path.read_text())
        if "rows" not in data:
            raise SystemExit(f"{path}: not the --out file of a single-seed run (no 'rows')")
        seed = int(data.get("args", {}).get("seed", len(runs)))
        if seed in runs:
            raise SystemExit(f"{path}: seed {seed} appears twice")
        runs[seed] = (data["rows"], data.get("timings", {}), data.get("teacher", ""))
    if len(runs) < 2:
        raise SystemExit("--aggregate needs the results of at least 2 seeds")
    return report_seeds(args, runs, sum(float(json.loads(p.read_text()).get("total_s", 0.0)) for p in args.aggregate))


def report_seeds(
    args: argparse.Namespace, runs: dict[int, tuple[dict[str, dict[str, float]], dict[str, float], str]], total: float
) -> int:
    summary = seed_summary(runs)
    print(f"{len(runs)} seeds {list(runs)}: mean [95% t-interval over seeds]")
    print(seed_table(summary))
    for seed, (rows, _, teacher_uri) in runs.items():
        print(f"seed {seed}: teacher {teacher_uri}; {verdict(rows)}")
    print(f"total {total / 60:.1f} min")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "summary": summary,
                    "per_seed": {s: r[0] for s, r in runs.items()},
                    "timings": {s: r[1] for s, r in runs.items()},
                    "teachers": {s: r[2] for s, r in runs.items()},
                    "total_s": total,
                    "args": {k: str(v) for k, v in vars(args).items()},
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
