"""Evaluator overhead, measured side by side in one run (ratios, not absolute times).

Prints, for one evaluation of N samples (default 2,000):
- evaluator wall time / the two models' raw batched forward time over the same inputs
  (the physical floor; target ≤ 1.25);
- a second student's evaluation with the teacher cached / the first run (target ≤ 0.6);
- the raw batched forward / a naive one-sample-at-a-time loop;
- student / teacher raw forward time.

Data: ``../shared/data/devign/test.jsonl`` (+ valid) when present, else the embedded
generated vulnerability data. Usage: ``python benchmarks/bench_evaluator.py [--n 2000]``.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import mlflow
import pandas as pd
import torch

from mlflow_metacompress.models.classifier import CodeClassifier
from mlflow_metacompress.models.pyfunc import log_code_classifier
from mlflow_metacompress.models.tokenizer import train_tokenizer

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "devign"


def load(n: int) -> pd.DataFrame:
    if (SHARED / "test.jsonl").exists():
        from mlflow_metacompress.data.codexglue import load_devign

        df = pd.concat([load_devign(SHARED, "test"), load_devign(SHARED, "valid"), load_devign(SHARED, "train")])
        return df[["func", "target"]].head(n).reset_index(drop=True)
    from mlflow_metacompress.data.generators import generate_vulnerability

    return generate_vulnerability(n, seed=0)[["func", "target"]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.manual_seed(0)
    df = load(args.n)
    tok = train_tokenizer(df["func"].head(500), vocab_size=2000)
    teacher = CodeClassifier.from_config(
        len(tok),
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
        max_length=args.max_length,
        pad_token_id=tok.pad_token_id,
    )
    students = [
        CodeClassifier.from_config(
            len(tok),
            hidden_size=96,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=192,
            max_length=args.max_length,
            pad_token_id=tok.pad_token_id,
        )
        for _ in range(2)
    ]
    codes = df["func"].tolist()
    with tempfile.TemporaryDirectory() as tmp:
        mlflow.set_tracking_uri(f"sqlite:///{tmp}/bench.db")
        import os

        os.chdir(tmp)
        with mlflow.start_run():
            t_uri = log_code_classifier(teacher, tok, registered_model_name="bench-teacher").model_uri
            s_uris = [log_code_classifier(s, tok, registered_model_name="bench-student").model_uri for s in students]

        def timed(fn):
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0

        bs = args.batch_size
        raw_t = timed(lambda: teacher.predict_proba(tok, codes, batch_size=bs))
        raw_s = timed(lambda: students[0].predict_proba(tok, codes, batch_size=bs))
        naive_n = min(200, len(codes))
        naive = (
            timed(lambda: [teacher.predict_proba(tok, [c], batch_size=1) for c in codes[:naive_n]])
            * len(codes)
            / naive_n
        )
        cfg = {"teacher": t_uri, "transforms": [], "batch_size": bs, "cache_dir": f"{tmp}/cache", "progress": False}

        def evaluate(uri):
            with mlflow.start_run():
                mlflow.models.evaluate(
                    model=uri,
                    data=df,
                    targets="target",
                    model_type="metacompress",
                    evaluators="metacompress",
                    evaluator_config=cfg,
                )

        first = timed(lambda: evaluate(s_uris[0]))
        second = timed(lambda: evaluate(s_uris[1]))
    rows = [
        ("samples", f"{len(df)}"),
        ("raw batched forward, teacher + student (s)", f"{raw_t + raw_s:.2f}"),
        ("evaluator wall / raw forward (target ≤ 1.25)", f"{first / (raw_t + raw_s):.2f}"),
        ("2nd student, teacher cached / 1st run (target ≤ 0.6)", f"{second / first:.2f}"),
        ("raw batched / naive per-sample loop (teacher)", f"{raw_t / naive:.3f}"),
        ("student / teacher raw forward time", f"{raw_s / raw_t:.3f}"),
    ]
    width = max(len(r[0]) for r in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
