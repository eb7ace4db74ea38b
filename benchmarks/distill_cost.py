"""``bench_distill.py --cost-fit``: the constants of :class:`~mlflow_metacompress.distill.cost.FlopCost`
fitted to measured latencies, and how well the (deterministic) cost ranks real latency.

Times every shape of :data:`mlflow_metacompress.distill.latency.CALIBRATION` (best of
``repeats`` forward passes, per sample), fits ``ms ≈ a·gemm + b·other + c·layers/batch``
by non-negative least squares (weighted by 1/ms, as :func:`~mlflow_metacompress.distill.latency.calibrate`),
and reports ``b/a`` (the element-wise weight) and ``c/a`` (the per-layer overhead), with
the Spearman rank correlation of measured latency against ``FlopCost`` and against plain
GEMM FLOPs. Run on a shared machine, the timings are noisy; the constants in
``distill/cost.py`` are rounded.
"""

from __future__ import annotations

from typing import Any


def cost_fit(seq_len: int = 256, batch_size: int = 16, repeats: int = 3, threads: Any = None) -> dict[str, Any]:
    import numpy as np
    from scipy.optimize import nnls
    from scipy.stats import spearmanr

    from mlflow_metacompress.distill.arch import ArchSpec
    from mlflow_metacompress.distill.cost import FlopCost, terms
    from mlflow_metacompress.distill.latency import CALIBRATION, time_shape
    from mlflow_metacompress.threads import using

    rows, ms, costs, gemms = [], [], [], []
    with using(threads) as n:
        for layers, h, heads, f, frac in CALIBRATION:
            s = max(2, round(seq_len * frac))
            spec = ArchSpec(
                vocab_size=1000,
                num_hidden_layers=layers,
                hidden_size=h,
                num_attention_heads=heads,
                intermediate_size=f,
                max_length=s,
            )
            t = time_shape(spec, s, batch_size, repeats=repeats)
            gemm, other, count = terms(spec)
            rows.append([gemm, other, count / batch_size])
            ms.append(t)
            costs.append(FlopCost(batch_size).cost(spec))
            gemms.append(gemm)
    X, y = np.asarray(rows), np.asarray(ms)
    w = 1.0 / y
    coef, _ = nnls(X * w[:, None], y * w)
    a, b, c = (float(v) for v in coef)
    return {
        "seq_len": seq_len,
        "batch_size": batch_size,
        "threads": n,
        "measured_ms": [round(v, 4) for v in ms],
        "elementwise_weight": b / a if a else None,
        "layer_overhead_flops": c / a if a else None,
        "gemm_gflops_per_s": 1e-6 / a if a else None,
        "spearman_flopcost": float(spearmanr(costs, ms).statistic),
        "spearman_gemm_flops": float(spearmanr(gemms, ms).statistic),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(cost_fit(), indent=2))
