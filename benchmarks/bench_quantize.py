"""Post-training quantization against its teacher (issue 22, item 2): size, behaviour, speed.

Trains a scratch teacher (default 4 layers × 256, CodeBERT's shape at a smaller scale) on
a CodeXGLUE task, or takes ``--teacher URI``, makes its ``quantize`` copies (one per
``--dtypes`` entry, through :func:`mlflow_metacompress.distill.distill_student`, so they
are registered and tagged like every student), then, in one process:

- **size**: the ``metacompress.size_mb`` tags (bytes of the stored weights) and the
  bytes of each logged model's weight files;
- **behaviour**: MetaCompress's four relations (:func:`mlflow_metacompress.relations.evaluate_relations`)
  of each copy against the teacher on ``--rows`` test rows: MR1 (prediction
  disagreement), MR2, MR3, MR4, plus the largest and mean absolute probability change;
- **speed**: per-sample latency of every model on the same 32 test rows, alternating,
  best of ``--repeats``, at ``--threads`` intra-op threads.

    nice -n 5 python benchmarks/bench_quantize.py --task bigclonebench --limit 400 --max-steps 150 --out /tmp/q.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path


def _weight_bytes(uri: str) -> int:
    """Bytes of the weight files of a logged CodeClassifier (safetensors, head, quantized state)."""
    import mlflow

    folder = Path(mlflow.artifacts.download_artifacts(uri)) / "artifacts" / "hf"
    return sum(p.stat().st_size for p in folder.rglob("*") if p.suffix in (".safetensors", ".pt", ".bin"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--task", default="bigclonebench", choices=["devign", "bigclonebench"])
    p.add_argument("--workdir", default=None, help="where mlflow.db and artifacts go (default: a temp dir)")
    p.add_argument(
        "--teacher", default=None, help="a registered teacher URI in --workdir's store (else one is trained)"
    )
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--teacher-epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=150, help="teacher optimiser steps (-1: the epochs)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--limit", type=int, default=400, help="rows per split (stratified)")
    p.add_argument("--dtypes", default="int8", help="comma-separated: int8, float16, bfloat16")
    p.add_argument("--rows", type=int, default=200, help="test rows the relations are measured on")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    import mlflow
    import numpy as np
    import torch

    from mlflow_metacompress.data.codexglue import get_task
    from mlflow_metacompress.distill import ArchSpec, distill_student, train_teacher
    from mlflow_metacompress.distill.datasets import load_splits
    from mlflow_metacompress.distill.latency import device_name
    from mlflow_metacompress.distill.speed import BATCH, batch_of, side_by_side
    from mlflow_metacompress.relations import evaluate_relations

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-quantize-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    mlflow.set_tracking_uri(f"sqlite:///{workdir / 'mlflow.db'}")
    mlflow.set_registry_uri(f"sqlite:///{workdir / 'mlflow.db'}")
    mlflow.set_experiment("bench-quantize")
    torch.set_num_threads(args.threads)
    spec = get_task(args.task)
    rows: dict[str, dict] = {}
    t0 = time.perf_counter()
    if args.teacher:
        teacher_uri = args.teacher
        rows["teacher"] = {"uri": teacher_uri}
    else:
        arch = ArchSpec(
            vocab_size=args.vocab_size,
            num_hidden_layers=args.layers,
            hidden_size=args.hidden,
            num_attention_heads=max(1, args.hidden // 64),
            intermediate_size=4 * args.hidden,
            max_length=args.max_length,
        )
        teacher = train_teacher(
            args.data_dir,
            args.task,
            arch=arch,
            epochs=args.teacher_epochs,
            max_steps=args.max_steps,
            batch_size=args.batch_size,
            limit=args.limit,
            monitor="last",
            registered_name="bench-teacher",
            progress=False,
        )
        teacher_uri = teacher.model_uri
        rows["teacher"] = {
            "uri": teacher_uri,
            "seconds": round(time.perf_counter() - t0, 1),
            **{k: teacher.metrics.get(k) for k in ("test_acc", "size_mb", "params")},
        }
    for dtype in args.dtypes.split(","):
        t = time.perf_counter()
        result = distill_student(
            args.data_dir,
            teacher_uri,
            args.task,
            method="quantize",
            dtype=dtype,
            max_length=args.max_length,
            limit=args.limit,
            registered_name=f"bench-quantize-{dtype}",
            cache_dir=workdir / "cache",
            progress=False,
        )
        rows[dtype] = {
            "uri": result.model_uri,
            "seconds": round(time.perf_counter() - t, 1),
            **{k: result.metrics.get(k) for k in ("test_acc", "size_mb", "params", "speedup_vs_teacher")},
        }
    test = load_splits(args.data_dir, args.task, args.limit)["test"].head(args.rows).reset_index(drop=True)
    cols = list(spec.code_columns)
    models = {name: mlflow.pyfunc.load_model(r["uri"]) for name, r in rows.items()}
    probs = {name: m.predict(test[cols]).to_numpy() for name, m in models.items()}
    y = test[spec.label_column].to_numpy()
    P_T = probs["teacher"]
    teacher_size = rows["teacher"].get("size_mb") or float(
        mlflow.MlflowClient().get_model_version(*teacher_uri.split("/")[1:]).tags["metacompress.size_mb"]
    )
    for name, r in rows.items():
        r["weight_file_bytes"] = _weight_bytes(r["uri"])
        if name == "teacher":
            r["teacher_confidence_ge_0.8"] = float(np.mean(P_T.max(axis=1) >= 0.8))
            continue
        rel = evaluate_relations(P_T, probs[name], y).metrics
        r.update(
            {
                k: rel[k]
                for k in (
                    "mr1_violation_rate",
                    "mr2_violation_rate",
                    "mr3_violation_rate",
                    "mr4_violation_rate",
                    "any_violation_rate",
                    "student_accuracy",
                    "teacher_accuracy",
                )
                if k in rel
            }
        )
        diff = np.abs(probs[name] - P_T)
        r.update(
            max_abs_prob_diff=float(diff.max()),
            mean_abs_prob_diff=float(diff.mean()),
            size_ratio=r["size_mb"] / teacher_size,
            file_ratio=r["weight_file_bytes"] / rows["teacher"]["weight_file_bytes"],
        )
    batch = batch_of(test, cols, BATCH)
    best = side_by_side({name: (lambda m=m: m.predict(batch)) for name, m in models.items()}, args.repeats)
    for name, r in rows.items():
        r["latency_ms"] = 1000 * best[name] / BATCH
        r["speedup"] = best["teacher"] / best[name]
    report = {
        "device": device_name("cpu"),
        "task": args.task,
        "threads": args.threads,
        "relation_rows": len(test),
        "timing": f"{BATCH} test rows, alternating, best of {args.repeats}, {args.threads} thread(s)",
        "load_average": os.getloadavg(),
        "models": rows,
    }
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
