"""Cost of the bootstrap intervals, measured side by side in one run (a ratio, not absolute times).

A static-mode evaluation (precomputed probabilities, labels) of N rows (default 10,000)
through ``mlflow.models.evaluate`` with ``bootstrap_samples=0`` and with the default
1,000 replicates, interleaved, ``--repeats`` times each (after one warm-up of each).
The resample counts depend only on (rows, replicates, seed) and the last matrix is kept in
memory, so an evaluation is *cold* (it draws them) or *warm* (a second student on the same
rows reuses them). Prints the median wall time of each, their ratio to no intervals
(target ≤ 1.10: intervals may add at most 10%), and the time of
:func:`mlflow_metacompress.statistics.evaluation_statistics` alone.
Usage: ``python benchmarks/bench_intervals.py [--n 10000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time

import mlflow
import numpy as np
import pandas as pd

from mlflow_metacompress.resampling import _CACHE


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def probs(sharpness: float) -> np.ndarray:
        logits = rng.normal(size=(n, 2)) * sharpness
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    pt, ps = probs(4.0), probs(4.0)
    return pd.DataFrame(
        {"t0": pt[:, 0], "t1": pt[:, 1], "s0": ps[:, 0], "s1": ps[:, 1], "target": rng.integers(0, 2, n)}
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--bootstrap-samples", type=int, default=1000)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    df = frame(args.n)
    base = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], "progress": False}
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        mlflow.set_tracking_uri(f"sqlite:///{tmp}/bench.db")

        def once(samples: int, cold: bool = False) -> tuple[float, float]:
            if cold:
                _CACHE.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            with mlflow.start_run():
                mlflow.models.evaluate(
                    model=None,
                    data=df,
                    targets="target",
                    model_type="metacompress",
                    evaluators="metacompress",
                    evaluator_config={**base, "bootstrap_samples": samples},
                )
            return time.perf_counter() - t0, time.process_time() - c0

        once(0), once(args.bootstrap_samples)  # warm-up: imports, sqlite migrations
        off, cold, warm = [], [], []
        for _ in range(args.repeats):
            off.append(once(0))
            cold.append(once(args.bootstrap_samples, cold=True))
            warm.append(once(args.bootstrap_samples))

    from mlflow_metacompress.relations import evaluate_relations
    from mlflow_metacompress.statistics import evaluation_statistics

    pt, ps = df[["t0", "t1"]].to_numpy(), df[["s0", "s1"]].to_numpy()
    rel = evaluate_relations(pt, ps, df["target"].to_numpy())
    table = pd.DataFrame({"variant": "original", "row": np.arange(args.n), "label": df["target"], **rel.per_sample})
    alone = []
    for _ in range(args.repeats):
        _CACHE.clear()
        t0 = time.perf_counter()
        evaluation_statistics(table, args.n, rel.metrics, samples=args.bootstrap_samples)
        alone.append(time.perf_counter() - t0)
    print(
        f"static-mode evaluation of {args.n} rows, median of {args.repeats} interleaved runs "
        "(wall time; process CPU time, less sensitive to other load on the machine)"
    )
    for i, clock in enumerate(("wall", "cpu")):
        m_off = statistics.median(t[i] for t in off)
        print(f"  [{clock}] bootstrap_samples=0: {m_off:.3f} s  (all: {', '.join(f'{t[i]:.3f}' for t in off)})")
        for label, times in (("cold: resamples drawn", cold), ("warm: resamples reused", warm)):
            m = statistics.median(t[i] for t in times)
            print(
                f"  [{clock}] bootstrap_samples={args.bootstrap_samples} ({label}): {m:.3f} s, ratio {m / m_off:.3f} "
                f"(all: {', '.join(f'{t[i]:.3f}' for t in times)})"
            )
    print("  target: ratio <= 1.10")
    print(f"  intervals + McNemar alone (cold): {statistics.median(alone):.3f} s median")


if __name__ == "__main__":
    main()
