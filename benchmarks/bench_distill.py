"""End-to-end distillation benchmark on the shared Devign subset (issues 5 and 16).

Trains the offline teacher, distils 3 MB students with each ``--methods`` method and each
search ``--objectives`` objective (``latency``, the default, and the published ``paper``
one), then measures every registered model side by side in one process: test accuracy,
size, and per-sample latency on the same 32 test functions, the models alternating,
best of ``--repeats`` (:func:`mlflow_metacompress.distill.speed.side_by_side`, on the
inference threads of :mod:`mlflow_metacompress.threads`, as the speed tags are). Compressor (Shi et al., ASE 2022)
reports a 4.31× speedup for its 3 MB CodeBERT student, AVATAR (Shi et al., ICSE-SEIS
2024) up to 76×.

    nice -n 5 python benchmarks/bench_distill.py --data-dir ../shared/data --out /tmp/bench.json

Two short modes measure issue 31's changes instead (minutes, not the end-to-end run):

- ``--steps``: step-time ratios before/after of the teacher-logit cache, tokenising once,
  length-grouped batches and the second thread (``benchmarks/distill_steps.py``);
- ``--cost-fit``: the constants of the searches' FLOP cost fitted to measured latencies,
  and how well that cost ranks them (``benchmarks/distill_cost.py``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path

PAPER_SPEEDUP = {"compressor": 4.31, "avatar": 76.0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--workdir", default=None, help="where mlflow.db and artifacts go (default: a temp dir)")
    p.add_argument("--methods", default="compressor,avatar")
    p.add_argument("--objectives", default="latency,paper")
    p.add_argument("--teacher-epochs", type=int, default=3)
    p.add_argument("--student-epochs", type=int, default=3)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--size-mb", type=float, default=3.0)
    p.add_argument("--population", type=int, default=20)
    p.add_argument("--generations", type=int, default=15)
    p.add_argument("--limit", type=int, default=None, help="rows per split (stratified); default: all")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None)
    p.add_argument("--steps", action="store_true", help="step-time ratios of issue 31's changes, then exit")
    p.add_argument("--cost-fit", action="store_true", help="fit the FLOP cost's constants to latencies, then exit")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.steps or args.cost_fit:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from distill_cost import cost_fit
        from distill_steps import print_table, step_ratios

        short = {}
        if args.steps:
            short["steps"] = step_ratios(args.data_dir, max_length=args.max_length)
        if args.cost_fit:
            short["cost_fit"] = [cost_fit(seq, 16, threads=t) for seq in (64, 256) for t in (1, 2)]
        print(json.dumps(short, indent=2))
        if args.steps:
            print_table(short["steps"])
        if args.out:
            Path(args.out).write_text(json.dumps(short, indent=2))
        return

    import mlflow

    from mlflow_metacompress.data import load_task
    from mlflow_metacompress.distill import ArchSpec, distill_student, train_teacher
    from mlflow_metacompress.distill.latency import device_name, timing_threads
    from mlflow_metacompress.distill.speed import BATCH, batch_of, side_by_side

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-distill-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    mlflow.set_tracking_uri(f"sqlite:///{workdir / 'mlflow.db'}")
    mlflow.set_experiment("bench-distill")
    arch = ArchSpec(
        vocab_size=8000,
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        intermediate_size=1024,
        max_length=args.max_length,
    )
    t0 = time.perf_counter()
    teacher = train_teacher(
        args.data_dir,
        "devign",
        arch=arch,
        epochs=args.teacher_epochs,
        limit=args.limit,
        registered_name="bench-teacher",
        progress=False,
    )
    rows = {
        "teacher": {
            "method": "teacher",
            "objective": "-",
            "uri": teacher.model_uri,
            "seconds": round(time.perf_counter() - t0, 1),
            **{k: teacher.metrics.get(k) for k in ("test_acc", "size_mb", "gflops")},
        }
    }
    for method in args.methods.split(","):
        for objective in args.objectives.split(","):
            t = time.perf_counter()
            student = distill_student(
                args.data_dir,
                teacher.model_uri,
                "devign",
                method=method,
                size_mb=args.size_mb,
                max_length=args.max_length,
                epochs=args.student_epochs,
                limit=args.limit,
                population=args.population,
                generations=args.generations,
                objective=objective,
                registered_name=f"bench-{method}-{objective}",
                progress=False,
            )
            cfg = student.config
            rows[f"{method}/{objective}"] = {
                "method": method,
                "objective": objective,
                "uri": student.model_uri,
                "seconds": round(time.perf_counter() - t, 1),
                **{k: student.metrics.get(k) for k in ("test_acc", "size_mb", "gflops", "speedup_vs_teacher")},
                "arch": cfg.get("arch") or cfg.get("student"),
                "search_fallback": cfg.get("search_fallback"),
            }
    # every model side by side on the same 32 test functions, alternating, best of --repeats
    test = load_task("devign", "test", args.data_dir)
    batch = batch_of(test, ["func"], BATCH)
    models = {name: mlflow.pyfunc.load_model(r["uri"]) for name, r in rows.items()}
    with timing_threads() as threads:
        best = side_by_side({name: (lambda m=m: m.predict(batch)) for name, m in models.items()}, args.repeats)
    for name, r in rows.items():
        r["latency_ms"] = 1000 * best[name] / BATCH
        r["speedup"] = best["teacher"] / best[name]
    report = {
        "device": device_name("cpu"),
        "timing": f"{BATCH} test functions, best of {args.repeats}, {threads} thread(s)",
        "load_average": os.getloadavg(),
        "paper_speedup": PAPER_SPEEDUP,
        "models": rows,
    }
    text = json.dumps(report, indent=2)
    print(text)
    print(f"\n{'model':<22} {'test acc':>8} {'MB':>7} {'GFLOPs':>7} {'ms/sample':>10} {'speedup':>8}  fallback")

    def num(v, f):
        return format(v, f) if isinstance(v, (int, float)) else "-"

    for name, r in rows.items():
        print(
            f"{name:<22} {num(r['test_acc'], '>8.4f')} {num(r['size_mb'], '>7.2f')} {num(r['gflops'], '>7.3f')} "
            f"{r['latency_ms']:>10.3f} {r['speedup']:>7.2f}×  {r.get('search_fallback', '')}"
        )
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
