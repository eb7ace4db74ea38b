"""The spark engine against the local engine on the same inputs (issue 15): one evaluation
each, with transformations on and the prediction cache off, side by side; checks that the
metrics agree to 1e-9 and prints both wall times and their ratio.

Data: the first ``--n`` Devign test functions from ../shared/data when present, else the
tests' toy C functions. Models: ``--model tiny`` (two tiny randomly initialised
``CodeClassifier`` pyfuncs, torch in every Spark Python worker) or ``--model hash`` (a
numpy-only classifier, so the timing is the engines' own overhead). ``--attacks`` adds
attacks (budget ``--attack-budget``) and a third run with ``attack_engine="spark"`` (the
attacked samples split across the executors), compared with the local engine likewise.

    nice .venv/bin/python benchmarks/bench_spark.py --n 200 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def _data(data_dir: Path, n: int) -> pd.DataFrame:
    path = data_dir / "devign" / "test.jsonl"
    if path.exists():
        df = pd.read_json(path, lines=True, nrows=n)
        return pd.DataFrame({"func": df["func"], "target": df["target"].astype(int)})
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import toy_frame

    return toy_frame(n)


def _hash_model(weight: float) -> str:
    import mlflow

    class HashClassifier(mlflow.pyfunc.PythonModel):
        def __init__(self, weight):
            self.weight = weight

        def predict(self, context, model_input, params=None):
            x = np.array([sum(ord(c) * (i % 7 + 1) for i, c in enumerate(s)) for s in model_input["func"]])
            p = 1 / (1 + np.exp(-3 * np.sin(x * self.weight)))
            return pd.DataFrame({"0": 1 - p, "1": p})

    example = pd.DataFrame({"func": ["int f() { return 0; }"]})
    return mlflow.pyfunc.log_model(name="m", python_model=HashClassifier(weight), input_example=example).model_uri


def _tiny_models(codes: list[str]) -> tuple[str, str]:
    import torch

    from mlflow_metacompress.models.classifier import CodeClassifier
    from mlflow_metacompress.models.pyfunc import log_code_classifier
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    tok = train_tokenizer(codes[:200], vocab_size=400)
    uris = []
    for seed, hidden in ((0, 64), (1, 32)):
        torch.manual_seed(seed)
        model = CodeClassifier.from_config(
            len(tok), hidden_size=hidden, intermediate_size=2 * hidden, max_length=128, pad_token_id=tok.pad_token_id
        ).eval()
        uris.append(log_code_classifier(model, tok).model_uri)
    return uris[0], uris[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--model", choices=["tiny", "hash"], default="hash")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--transforms", default="all", help="'all' or comma-separated names")
    parser.add_argument("--attacks", default="", help="comma-separated attack names (default: none)")
    parser.add_argument("--attack-budget", type=int, default=50)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{tmp}/bench.db")
    import mlflow
    from pyspark.sql import SparkSession

    df = _data(args.data, args.n)
    with mlflow.start_run():
        teacher, student = (
            _tiny_models(df["func"].tolist()) if args.model == "tiny" else (_hash_model(0.013), _hash_model(0.011))
        )
    config = {
        "teacher": teacher,
        "language": "c",
        "transforms": "all" if args.transforms == "all" else args.transforms.split(","),
        "progress": False,
        "use_cache": False,
        "bootstrap_samples": 100,
    }
    attacks = [a for a in args.attacks.split(",") if a]
    if attacks:
        config.update(attacks=attacks, attack_budget=args.attack_budget)

    def run(extra: dict) -> tuple[float, dict]:
        start = time.perf_counter()
        with mlflow.start_run():
            result = mlflow.models.evaluate(
                model=student,
                data=df,
                targets="target",
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={**config, **extra},
            )
        return time.perf_counter() - start, result.metrics

    spark = SparkSession.builder.master(args.master).config("spark.ui.enabled", "false").getOrCreate()
    spark.range(1).count()  # session startup is not part of the comparison
    try:
        t_local, m_local = run({})
        t_spark, m_spark = run({"engine": "spark"})
        t_exec, m_exec = run({"engine": "spark", "attack_engine": "spark"}) if attacks else (None, None)
    finally:
        spark.stop()
    worst = max(abs(m_local[k] - m_spark[k]) for k in m_local)
    worst_key = max(m_local, key=lambda k: abs(m_local[k] - m_spark[k]))
    extra = {}
    if m_exec is not None:
        extra = {
            "attacks": attacks,
            "attack_budget": args.attack_budget,
            "attack_engine_spark_s": round(t_exec, 2),
            "attack_engine_spark_same_keys": set(m_local) == set(m_exec),
            "attack_engine_spark_max_abs_metric_diff": max(abs(m_local[k] - m_exec[k]) for k in m_local),
            "attack_metrics_max_abs_diff": max(
                abs(m_local[k] - m[k]) for m in (m_spark, m_exec) for k in m_local if k.startswith("attack_")
            ),
        }
    rows = int(sum(1 for k in m_local if k.startswith("transform_applicable_rate/")))
    print(
        json.dumps(
            {
                "n": len(df),
                "model": args.model,
                "master": args.master,
                "transforms": rows,
                "local_s": round(t_local, 2),
                "spark_s": round(t_spark, 2),
                "spark_over_local": round(t_spark / t_local, 2),
                "same_metric_keys": set(m_local) == set(m_spark),
                "max_abs_metric_diff": worst,
                "worst_metric": worst_key,
                **extra,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
