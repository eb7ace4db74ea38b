"""Attack cost benchmark (issue 4): one attack on 100 samples against a tiny model.

Prints the queries the attack issued (what budgets count), the requests including
free repeats, the unique forward passes the model actually ran, and the wall time per
query against the model's raw batched forward time per sample. The model is a tiny
randomly initialised ``CodeClassifier`` whose head is rescaled so inputs sit near the
decision boundary; the labels are its own predictions, so every sample is attacked.
Data: the first Devign test functions from ../shared/data when present, else
synthetic C functions.

    nice .venv/bin/python benchmarks/bench_attacks.py --attack alert_yang_2022 --budget 100
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path


def _synthetic(n: int) -> list[str]:
    names = ["count", "total", "idx", "buf", "len", "acc", "tmp", "key", "value", "ptr", "size", "pos"]
    out = []
    for i in range(n):
        a, b, c = names[i % 12], names[(i * 5 + 1) % 12], names[(i * 7 + 3) % 12]
        if a == b:
            b = "other"
        out.append(
            f"int f{i}(int *{a}, int {b}) {{\n  int {c}_{i} = 0;\n"
            f"  for (int k = 0; k < {b}; k++) {{\n    {c}_{i} += {a}[k] * {i % 7 + 1};\n  }}\n"
            f"  return {c}_{i};\n}}\n"
        )
    return out


def _load(data_dir: Path, n: int) -> list[str]:
    path = data_dir / "devign" / "test.jsonl"
    if not path.exists():
        return _synthetic(n)
    codes = []
    with path.open() as fh:
        for line in fh:
            codes.append(json.loads(line)["func"])
            if len(codes) == n:
                break
    return codes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--attack", default="alert_yang_2022")
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--budget", type=int, default=100)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import numpy as np
    import pandas as pd
    import torch

    from mlflow_metacompress.attacks import AttackStatus, run_attack
    from mlflow_metacompress.models.classifier import CodeClassifier
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    torch.manual_seed(0)
    codes = _load(Path(args.data_dir), args.samples)
    tok = train_tokenizer(codes, vocab_size=2000)
    model = CodeClassifier.from_config(vocab_size=len(tok), max_length=args.max_length).eval()
    margin = np.diff(model.predict_logits(tok, codes), axis=1)[:, 0]
    scale = 4.0 / float(margin.max() - margin.min())
    with torch.no_grad():
        model.head.out_proj.weight.mul_(scale)
        model.head.out_proj.bias.mul_(scale)
        model.head.out_proj.bias[1] -= float(np.median(margin)) * scale

    def predict(df: pd.DataFrame) -> np.ndarray:
        return model.predict_proba(tok, list(df["func"]), batch_size=32)

    df = pd.DataFrame({"func": codes})
    raw = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        labels = predict(df).argmax(axis=1)
        raw = min(raw, time.perf_counter() - t0)
    raw_per_sample = raw / len(df)

    report = run_attack(args.attack, predict, df, ["func"], labels, "c", budget=args.budget, progress=False)
    queries = sum(r.queries for r in report.results)
    m = report.metrics()
    rows = {
        "attack": args.attack,
        "samples": len(df),
        "budget": args.budget,
        "succeeded / failed / skipped": " / ".join(str(report.count(s)) for s in AttackStatus),
        "asr": f"{m['asr']:.3f}",
        "queries issued (budget-counted, distinct per sample)": queries,
        "requests incl. repeats answered by the cache": sum(r.requests for r in report.results),
        "unique forward passes (rows run through the model)": report.forward_rows,
        "forward passes saved by the cache": sum(r.requests for r in report.results) - report.forward_rows,
        "attack wall time (s)": f"{report.wall_seconds:.2f}",
        "wall time per query (ms)": f"{1000 * report.wall_seconds / max(queries, 1):.3f}",
        "model time per forward row inside the attack (ms)": (
            f"{1000 * report.forward_seconds / max(report.forward_rows, 1):.3f}"
        ),
        "raw batched forward per sample (ms)": f"{1000 * raw_per_sample:.3f}",
        "wall per query / raw forward per sample": f"{report.wall_seconds / max(queries, 1) / raw_per_sample:.2f}x",
        "attack overhead outside the model (%)": f"{100 * (1 - report.forward_seconds / report.wall_seconds):.1f}",
    }
    width = max(len(k) for k in rows)
    for k, v in rows.items():
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
