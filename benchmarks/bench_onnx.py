"""ONNX Runtime against torch for the evaluator's inference, side by side (issue 31, item 3).

One teacher-shaped RoBERTa classifier (the study's teacher: 2 layers × 256, a 16k
vocabulary, 256 tokens; untrained: speed does not depend on the weights' values) and the
same N generated C functions, timed in one process on the same threads, alternating the
contenders, best of ``--repeats``:

- ``torch_forward``: the model's raw forward over pre-tokenised, pre-padded,
  length-bucketed batches (the floor: no tokenisation, no wrapper);
- ``torch_eval``: the evaluator's inference (``Predictor`` over the logged pyfunc,
  ``evaluator_config={"inference": "torch"}``, prediction cache off): tokenisation,
  bucketing, softmax, checks;
- ``onnxruntime_eval``: the same with ``{"inference": "onnxruntime"}`` (exported once,
  the export not timed);
- ``onnx_int8_eval``: the ``quantize_dynamic`` int8 copy logged with ``mlflow.onnx``,
  through the same adapter (what the ``onnx-int8`` method registers).

It also checks the fp32 ONNX outputs against torch's (largest probability difference;
the int8 copy's faithfulness needs trained weights: ``tests/test_distill_onnx_int8.py``)
and writes a JSON next to the table.

    python benchmarks/bench_onnx.py --n 512 --threads 1 --out /tmp/onnx.json

Timings are wall clock on whatever else the machine runs: compare the ratios, and rerun
on an idle machine for absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import tempfile
import time
from pathlib import Path

import mlflow
import numpy as np
import torch

MODEL_BATCH = 32  # rows per forward inside the pyfunc (CodeClassifierPyfunc) and OnnxPredict


def _best(fns: dict, repeats: int) -> dict[str, float]:
    """Best wall time of each callable, the contenders alternating within each round and
    the round's first contender rotating, so that none always runs first."""
    best = {name: float("inf") for name in fns}
    for fn in fns.values():  # warm-up (sessions, allocator, caches)
        fn()
    names = list(fns)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            fns[name]()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=512, help="generated functions evaluated")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--vocab-size", type=int, default=16000)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=64, help="rows per model call (evaluator_config batch_size)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None, help="write the results as JSON here")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from mlflow_metacompress.adapters.predictors import resolve_model
    from mlflow_metacompress.data.generators import generate_vulnerability
    from mlflow_metacompress.models.batching import bucketed, collate
    from mlflow_metacompress.models.classifier import CodeClassifier
    from mlflow_metacompress.models.onnx_export import cached_export, export, quantize_int8
    from mlflow_metacompress.models.onnx_logging import log_onnx_classifier
    from mlflow_metacompress.models.pyfunc import log_code_classifier
    from mlflow_metacompress.models.tokenizer import train_tokenizer
    from mlflow_metacompress.threads import using

    df = generate_vulnerability(max(args.n, 400), seed=0)[["func", "target"]].head(args.n).reset_index(drop=True)
    texts = df["func"].tolist()
    tok = train_tokenizer(generate_vulnerability(2000, seed=1)["func"], vocab_size=args.vocab_size)
    torch.manual_seed(0)
    model = CodeClassifier.from_config(
        max(len(tok), args.vocab_size),  # the teacher's embedding table, whatever the generated code's tokenizer learns
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden // 64),
        intermediate_size=4 * args.hidden,
        max_length=args.max_length,
        pad_token_id=tok.pad_token_id,
    ).eval()
    work = Path(tempfile.mkdtemp(prefix="bench-onnx-"))
    uri = f"sqlite:///{work}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    mlflow.set_experiment("bench-onnx")
    int8_path = quantize_int8(export(model, tok, work / "fp32.onnx"), work / "int8.onnx")
    with mlflow.start_run():
        torch_uri = log_code_classifier(model, tok, name="torch").model_uri
        int8_uri = log_onnx_classifier(int8_path, name="int8").model_uri
    t0 = time.perf_counter()
    cached_export(model, tok, work / "cache")  # the one-time export (reported, not in the contenders' times)
    export_seconds = time.perf_counter() - t0

    kw = dict(cache_dir=None, batch_size=args.batch_size, progress=False)
    predictors = {
        "torch_eval": resolve_model(torch_uri, "torch", "torch", **kw).uncached(),  # no in-memory memo either
        "onnxruntime_eval": resolve_model(torch_uri, "onnxruntime", "onnxruntime", **kw).uncached(),
        "onnx_int8_eval": resolve_model(int8_uri, "int8", "torch", **kw).uncached(),
    }
    # the floor pads as the models do: length-bucketed batches of 32 rows (the pyfunc's and OnnxPredict's size)
    pad, plan = tok.pad_token_id, bucketed(tok, texts, None, None, args.max_length, MODEL_BATCH)
    batches = [collate(t, b, pad) for t, _, bs in plan for b in bs]

    def forward() -> None:
        with torch.inference_mode():
            for batch in batches:
                model(**batch)

    with using(args.threads) as threads:
        fns = {"torch_forward": forward} | {
            name: (lambda p=pred: p.predict(df, ["func"])) for name, pred in predictors.items()
        }
        best = _best(fns, args.repeats)
        probs = {name: pred.predict(df, ["func"])[0] for name, pred in predictors.items()}
    report = {
        "machine": platform.processor() or platform.machine(),
        "threads": threads,
        "rows": args.n,
        "shape": {
            "layers": args.layers,
            "hidden": args.hidden,
            "vocab": max(len(tok), args.vocab_size),
            "max_length": args.max_length,
        },
        "seconds": best,
        "ms_per_row": {k: 1000 * v / args.n for k, v in best.items()},
        "speedup_vs_torch_eval": {k: best["torch_eval"] / v for k, v in best.items()},
        "max_abs_prob_diff_onnx_fp32_vs_torch": float(np.abs(probs["onnxruntime_eval"] - probs["torch_eval"]).max()),
        "export_seconds": export_seconds,
        "int8_bytes": int8_path.stat().st_size,
        "fp32_bytes": (work / "fp32.onnx").stat().st_size,
    }
    print(f"{'contender':<18} {'seconds':>8} {'ms/row':>8} {'vs torch eval':>14}")
    for name in fns:
        print(
            f"{name:<18} {best[name]:>8.3f} {report['ms_per_row'][name]:>8.3f} "
            f"{report['speedup_vs_torch_eval'][name]:>13.2f}×"
        )
    print(
        f"fp32 ONNX vs torch: max |Δp| {report['max_abs_prob_diff_onnx_fp32_vs_torch']:.2e}; int8 file "
        f"{report['int8_bytes'] / 1e6:.2f} MB vs fp32 {report['fp32_bytes'] / 1e6:.2f} MB; one-time export "
        f"{export_seconds:.2f} s; {threads} thread(s)"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
