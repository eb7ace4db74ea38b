"""End-to-end distillation benchmark on the shared Devign subset (issue 5).

Trains the offline teacher, distils a 3 MB Compressor student (Shi et al., ASE 2022),
then measures both registered models side by side in one process: test accuracy,
size, and inference time on the test split (best of ``--repeats`` alternating runs).
Compressor reports a 4.31x speedup for its 3 MB CodeBERT student.

    nice .venv/bin/python benchmarks/bench_distill.py --data-dir ../shared/data --out /tmp/bench.json
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

PAPER_SPEEDUP = 4.31


def _time_predict(model, df, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        model.predict(df)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--workdir", default=None, help="where mlflow.db and artifacts go (default: a temp dir)")
    p.add_argument("--teacher-epochs", type=int, default=3)
    p.add_argument("--student-epochs", type=int, default=3)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--size-mb", type=float, default=3.0)
    p.add_argument("--population", type=int, default=20)
    p.add_argument("--generations", type=int, default=15)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    import os

    import mlflow
    import torch

    from mlflow_metacompress.data import load_task
    from mlflow_metacompress.distill import ArchSpec, distill_student, train_teacher

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-distill-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    mlflow.set_tracking_uri(f"sqlite:///{workdir / 'mlflow.db'}")
    mlflow.set_experiment("bench-distill")
    arch = ArchSpec(vocab_size=8000, num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                    intermediate_size=1024, max_length=args.max_length)
    t0, c0 = time.perf_counter(), time.process_time()
    teacher = train_teacher(args.data_dir, "devign", arch=arch, epochs=args.teacher_epochs, limit=args.limit,
                            registered_name="bench-teacher", progress=False)
    t1, c1 = time.perf_counter(), time.process_time()
    student = distill_student(args.data_dir, teacher.model_uri, "devign", size_mb=args.size_mb,
                              max_length=args.max_length, epochs=args.student_epochs, limit=args.limit,
                              population=args.population, generations=args.generations,
                              registered_name="bench-student", progress=False)
    t2, c2 = time.perf_counter(), time.process_time()
    test = load_task("devign", "test", args.data_dir)[["func"]]
    if args.limit:
        test = test.head(args.limit)
    tm = mlflow.pyfunc.load_model(teacher.model_uri)
    sm = mlflow.pyfunc.load_model(student.model_uri)
    tm.predict(test.head(8)), sm.predict(test.head(8))  # warm-up
    t_times, s_times = [], []
    for _ in range(args.repeats):  # alternate so both see the same machine load
        t_times.append(_time_predict(tm, test, 1))
        s_times.append(_time_predict(sm, test, 1))
    report = {
        "torch_threads": torch.get_num_threads(),
        "teacher_seconds": round(t1 - t0, 1), "student_seconds": round(t2 - t1, 1), "total_seconds": round(t2 - t0, 1),
        # CPU seconds over all threads: comparable across runs when the machine is shared
        "teacher_cpu_seconds": round(c1 - c0, 1), "student_cpu_seconds": round(c2 - c1, 1),
        "load_average": os.getloadavg(),
        "teacher": {"uri": teacher.model_uri, **{k: teacher.metrics[k] for k in ("test_acc", "best_val_acc", "size_mb", "params", "gflops") if k in teacher.metrics}},
        "student": {"uri": student.model_uri, **{k: student.metrics[k] for k in ("test_acc", "best_val_acc", "train_agreement", "size_mb", "params", "gflops")},
                    "arch": student.config["arch"]},
        "test_rows": len(test), "teacher_infer_s": min(t_times), "student_infer_s": min(s_times),
        "speedup": min(t_times) / min(s_times), "paper_speedup": PAPER_SPEEDUP,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
