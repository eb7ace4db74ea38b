"""Row-level data of the reproduction study (MetaCompress, Awal, Rochan, Roy, arXiv
2511.05476): what the two-level bootstrap of :mod:`.verdicts` needs, read back from each
evaluation's ``metacompress/per_sample.parquet`` and stored in the study's JSON (so the
verdicts can be recomputed when the MLflow store is gone), and the paired bootstrap of
``fidelity`` against a baseline over test rows.
"""

from __future__ import annotations

from typing import Any

from ..artifact_names import PER_SAMPLE_PATH
from .markdown import MR_METRICS
from .verdicts import boot_p

# per-sample column of the violation, and of the rows it is counted over (None: every row)
ROW_METRICS: dict[str, tuple[str, str | None]] = {
    MR_METRICS[0]: ("mr1_violation", None),
    MR_METRICS[1]: ("mr2_violation", None),
    MR_METRICS[2]: ("mr3_violation", "mr3_in_h"),
    "any_violation_rate/metamorphic": ("any_violation", None),
}


def read_per_sample(run_id: str) -> Any:
    """The evaluation's ``per_sample.parquet`` as a DataFrame."""
    import mlflow
    import pandas as pd

    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=PER_SAMPLE_PATH)
    return pd.read_parquet(path)


def _metamorphic(df: Any) -> Any:
    """The metamorphic variants only (not the originals, not the attacks' adversarial examples)."""
    return df[(df["variant"] != "original") & ~df["variant"].astype(str).str.startswith("attack_")]


def per_sample_violations(run_id: str, column: str = "any_violation") -> Any:
    """``column`` on the metamorphic variants, a Series indexed by (variant, row)."""
    df = _metamorphic(read_per_sample(run_id))
    return df.set_index(["variant", "row"])[column].astype(float)


def row_counts(df: Any, rows: Any) -> dict[str, dict[str, list[float]]]:
    """Per metric of :data:`ROW_METRICS`: violations ``k`` and judged inputs ``n`` per test
    row (in the order of ``rows``), and for ``accuracy_drop`` the teacher's minus the
    student's correctness on the original input (``n`` = 1)."""
    meta = _metamorphic(df)
    out: dict[str, dict[str, list[float]]] = {}
    for metric, (column, among) in ROW_METRICS.items():
        if column not in meta:
            continue
        kept = meta if among is None else meta[meta[among].astype(bool)]
        k = kept.groupby("row")[column].sum().reindex(rows, fill_value=0)
        n = kept.groupby("row")[column].count().reindex(rows, fill_value=0)
        out[metric] = {"k": [float(x) for x in k], "n": [float(x) for x in n]}
    orig = df[df["variant"] == "original"].set_index("row").reindex(rows)
    if {"label", "teacher_pred", "student_pred"} <= set(orig.columns):
        gap = (orig["teacher_pred"] == orig["label"]).astype(float) - (orig["student_pred"] == orig["label"]).astype(
            float
        )
        out["accuracy_drop"] = {"k": [float(x) for x in gap], "n": [1.0] * len(gap)}
    return out


def stack_row_counts(per_seed: list[dict[str, dict[str, list[float]]]]) -> dict[str, dict[str, list[list[float]]]]:
    """Seeds' :func:`row_counts` stacked into seeds × rows lists per metric (the metrics every seed has)."""
    metrics = set.intersection(*(set(s) for s in per_seed)) if per_seed else set()
    return {m: {"k": [s[m]["k"] for s in per_seed], "n": [s[m]["n"] for s in per_seed]} for m in sorted(metrics)}


def paired_bootstrap(a: Any, b: Any, samples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Paired bootstrap of the pooled violation rate ``a`` − ``b`` over test rows (each row's
    variants resampled together, on the (variant, row) pairs both evaluations hold): the
    difference, its 95% percentile interval and a two-sided bootstrap p-value floored at
    1/(B+1) (B = ``samples``, recorded as ``resamples``)."""
    import numpy as np

    joined = a.rename("a").to_frame().join(b.rename("b"), how="inner")
    if joined.empty:
        return {"n_rows": 0}
    per_row = joined.groupby(level="row").agg(["sum", "count"])
    sa, sb, n = per_row[("a", "sum")].to_numpy(), per_row[("b", "sum")].to_numpy(), per_row[("a", "count")].to_numpy()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(n), size=(samples, len(n)))
    diffs = (sa[idx].sum(axis=1) - sb[idx].sum(axis=1)) / n[idx].sum(axis=1)
    observed = float((sa.sum() - sb.sum()) / n.sum())
    return {
        "n_rows": int(len(n)),
        "n_pairs": int(n.sum()),
        "a": float(sa.sum() / n.sum()),
        "b": float(sb.sum() / n.sum()),
        "mean_difference": observed,
        "low": float(np.quantile(diffs, 0.025)),
        "high": float(np.quantile(diffs, 0.975)),
        "pvalue": boot_p(diffs, 0.0, "two"),
        "resamples": samples,
    }
