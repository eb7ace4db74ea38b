"""Artifacts of one evaluation, written under ``metacompress/`` in the run:

- ``summary.json``: every metric, the config as the user set it (``config``), how each key
  was set (``config_sources``: given, default, inferred or detected) and the values that
  were inferred or detected (``detected``), the classes and notes (``language``, rows run);
- ``per_sample.parquet``: one row per (variant, sample) with both models' probabilities,
  predictions, KL and every relation flag (and the code of rewritten variants);
- ``worst_discrepancies.csv``: the failing examples first (CheckList's lesson), by KL;
- ``reliability.png``: teacher and student reliability curves on one plot;
- ``kl_histogram.png``: the per-sample KL(P_T‖P_S) distribution;
- extra tables (``transform_parse_failures.csv``, ``attacks/<a>.parquet``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .config import EvaluatorConfig
    from .engine import Outcome


def _plots(per: pd.DataFrame, classes: list[str], bins: int, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    orig = per[per["variant"] == "original"]
    t = orig[[f"teacher_prob_{c}" for c in classes]].to_numpy()
    s = orig[[f"student_prob_{c}" for c in classes]].to_numpy()
    written = []
    fig, ax = plt.subplots(figsize=(5, 5))
    edges = np.linspace(0, 1, bins + 1)
    for name, p in (("teacher", t), ("student", s)):
        conf = p.max(axis=1)
        b = np.minimum((conf * bins).astype(int), bins - 1)
        if "label" in orig:
            hit = (p.argmax(axis=1) == orig["label"].to_numpy()).astype(float)
            ylabel = "accuracy"
        else:  # label-free: agreement with the teacher (the oracle)
            hit = (p.argmax(axis=1) == t.argmax(axis=1)).astype(float)
            ylabel = "agreement with teacher"
        xs, ys = [], []
        for k in range(bins):
            m = b == k
            if m.any():
                xs.append(conf[m].mean())
                ys.append(hit[m].mean())
        ax.plot(xs, ys, marker="o", label=name)
    ax.plot([0, 1], [0, 1], "k--", linewidth=0.8, label="perfect calibration")
    ax.set(xlabel="confidence", ylabel=ylabel, title="Reliability (original inputs)", xlim=(0, 1), ylim=(0, 1), xticks=edges[:: max(1, bins // 5)])
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "reliability.png", dpi=100)
    plt.close(fig)
    written.append("reliability.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    log_kl = np.log10(np.clip(per["kl"].to_numpy(dtype=float), 1e-12, None))
    lo, hi = float(log_kl.min()), float(log_kl.max())
    edges = np.linspace(lo, hi if hi - lo > 1e-6 else lo + 1.0, 41)  # shared bins; equal values get one bin
    for variant, group in per.groupby("variant", sort=False):
        ax.hist(np.log10(np.clip(group["kl"].to_numpy(dtype=float), 1e-12, None)), bins=edges, alpha=0.5, label=str(variant))
    ax.set(xlabel="log10 KL(P_T ‖ P_S)", ylabel="samples", title="Per-sample KL divergence")
    if per["variant"].nunique() <= 12:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "kl_histogram.png", dpi=100)
    plt.close(fig)
    written.append("kl_histogram.png")
    return written


def write_artifacts(outcome: Outcome, cfg: EvaluatorConfig, out: Path) -> list[str]:
    """Write every artifact into ``out``; return their paths relative to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    summary = {"metrics": outcome.metrics, "config": cfg.as_loggable(), "config_sources": cfg.config_sources(),
               "detected": cfg.detected_values(), "classes": outcome.classes, **outcome.notes}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    outcome.per_sample.to_parquet(out / "per_sample.parquet", index=False)
    worst = outcome.per_sample[outcome.per_sample["any_violation"]].sort_values("kl", ascending=False).head(cfg.max_examples)
    worst.to_csv(out / "worst_discrepancies.csv", index=False)
    written = ["summary.json", "per_sample.parquet", "worst_discrepancies.csv"]
    written += _plots(outcome.per_sample, outcome.classes, cfg.calibration_bins, out)
    for name, table in outcome.extra_tables.items():
        path = out / (f"{name}.parquet" if name.startswith("attacks/") else f"{name}.csv")
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".parquet":
            table.to_parquet(path, index=False)
        else:
            table.to_csv(path, index=False)
        written.append(str(path.relative_to(out)))
    return written
