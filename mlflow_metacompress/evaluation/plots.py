"""The evaluator's plots, drawn from the per-sample table (matplotlib, Agg backend, imported lazily):

- ``reliability.png``: teacher and student reliability curves on the original inputs
  (Guo et al., ICML 2017), the picture behind MR4's calibration alignment;
- ``kl_histogram.png``: the per-sample KL(P_T‖P_S) of MR2 (MetaCompress, arXiv 2511.05476)
  as one ECDF per variant group (original, metamorphic = every transformation pooled, each
  attack) next to one box per variant, with the MR2 threshold ``kl_threshold`` drawn;
- ``confusion_teacher_vs_student.png``: rows the teacher's predicted class, columns the
  student's, counts in the cells, on the original inputs (:func:`confusion_counts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

KL_FLOOR = 1e-12
"""KL values below this (an exact 0 included) are drawn at the smallest positive KL shown."""
MAX_ANNOTATED_CLASSES = 20
"""Above this many classes the confusion matrix is drawn without a number in each cell."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _horizontal() -> dict[str, Any]:
    """Horizontal boxes: ``orientation`` since matplotlib 3.10 (``vert`` is deprecated in 3.11)."""
    import matplotlib

    major, minor = (int(x) for x in matplotlib.__version__.split(".")[:2])
    return {"orientation": "horizontal"} if (major, minor) >= (3, 10) else {"vert": False}


def variant_group(variant: str) -> str:
    """The KL plot's group of a per-sample ``variant``: ``original``, ``attack_<a>`` or
    ``metamorphic`` (every transformation; the per-sample table holds no pooled rows)."""
    if variant == "original" or variant.startswith("attack_"):
        return variant
    return "metamorphic"


def confusion_counts(per: pd.DataFrame, classes: list[str]) -> np.ndarray:
    """K×K counts on the original inputs: ``counts[i, j]`` = samples the teacher predicts as
    ``classes[i]`` and the student as ``classes[j]`` (the diagonal is MR1's agreement)."""
    orig = per[per["variant"] == "original"]
    k = len(classes)
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (orig["teacher_pred"].to_numpy(dtype=np.int64), orig["student_pred"].to_numpy(dtype=np.int64)), 1)
    return counts


def confusion_figure(counts: np.ndarray, classes: list[str]) -> Any:
    """``counts`` (rows teacher, columns student) with class names and per-cell counts."""
    plt = _pyplot()
    k = len(classes)
    side = min(12.0, 3.0 + 0.55 * k)
    fig, ax = plt.subplots(figsize=(side + 1.0, side))
    image = ax.imshow(counts, cmap="Blues", vmin=0)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="samples")
    ax.set_xticks(range(k), labels=classes, rotation=45 if k > 4 else 0, ha="right" if k > 4 else "center")
    ax.set_yticks(range(k), labels=classes)
    ax.set(xlabel="student prediction", ylabel="teacher prediction")
    total = int(counts.sum())
    agree = int(np.trace(counts))
    ax.set_title(
        f"Teacher vs student predictions (original inputs)\nagreement {agree}/{total}"
        + (f" = {agree / total:.4f}" if total else "")
    )
    if k <= MAX_ANNOTATED_CLASSES:
        top = counts.max() if counts.size else 0
        for i in range(k):
            for j in range(k):
                ax.text(
                    j,
                    i,
                    str(int(counts[i, j])),
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white" if top and counts[i, j] > top / 2 else "black",
                )
    fig.tight_layout()
    return fig


def reliability_figure(per: pd.DataFrame, classes: list[str], bins: int) -> Any:
    """Teacher and student reliability curves (accuracy per confidence bin; agreement with the
    teacher when there are no labels) on the original inputs."""
    plt = _pyplot()
    orig = per[per["variant"] == "original"]
    t = orig[[f"teacher_prob_{c}" for c in classes]].to_numpy()
    s = orig[[f"student_prob_{c}" for c in classes]].to_numpy()
    fig, ax = plt.subplots(figsize=(5, 5))
    edges = np.linspace(0, 1, bins + 1)
    ylabel = "accuracy" if "label" in orig else "agreement with teacher"
    for name, p in (("teacher", t), ("student", s)):
        conf = p.max(axis=1)
        b = np.minimum((conf * bins).astype(int), bins - 1)
        truth = (
            orig["label"].to_numpy() if "label" in orig else t.argmax(axis=1)
        )  # label-free: the teacher is the oracle
        hit = (p.argmax(axis=1) == truth).astype(float)
        xs, ys = [], []
        for k in range(bins):
            m = b == k
            if m.any():
                xs.append(conf[m].mean())
                ys.append(hit[m].mean())
        ax.plot(xs, ys, marker="o", label=name)
    ax.plot([0, 1], [0, 1], "k--", linewidth=0.8, label="perfect calibration")
    ax.set(
        xlabel="confidence",
        ylabel=ylabel,
        title="Reliability (original inputs)",
        xlim=(0, 1),
        ylim=(0, 1),
        xticks=edges[:: max(1, bins // 5)],
    )
    ax.legend()
    fig.tight_layout()
    return fig


def kl_figure(per: pd.DataFrame, kl_threshold: float) -> Any:
    """Left: the ECDF of per-sample KL for each variant group (legend: samples and share above
    the threshold, i.e. that group's MR2 violation rate). Right: one box per variant (every
    transformation on its own row). Log KL axis; the MR2 threshold is a labelled red line."""
    plt = _pyplot()
    kl = np.clip(per["kl"].to_numpy(dtype=float), 0.0, None)
    positive = kl[kl > KL_FLOOR]
    floor = float(positive.min()) if len(positive) else KL_FLOOR
    shown = np.maximum(kl, floor)
    groups = per["variant"].astype(str).map(variant_group).to_numpy()
    order = list(dict.fromkeys(groups))  # original first, then metamorphic, then attacks (per-sample order)
    colours = {g: plt.get_cmap("tab10")(i % 10) for i, g in enumerate(order)}
    variants = list(dict.fromkeys(per["variant"].astype(str)))
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12, max(4.5, 1.2 + 0.32 * len(variants))), gridspec_kw={"width_ratios": [1.1, 1]}
    )
    for g in order:
        values = np.sort(shown[groups == g])
        above = float((kl[groups == g] > kl_threshold).mean())
        left.step(
            values,
            np.arange(1, len(values) + 1) / len(values),
            where="post",
            color=colours[g],
            linewidth=1.8,
            label=f"{g} (n={len(values)}, {above:.0%} > threshold)",
        )
    left.set(
        xscale="log",
        xlabel="KL(P_T ‖ P_S), natural log",
        ylabel="fraction of samples with KL ≤ x",
        title="Per-sample KL by variant group (ECDF)",
        ylim=(0, 1.02),
    )
    boxes = [shown[per["variant"].astype(str).to_numpy() == v] for v in variants]
    parts = right.boxplot(boxes, patch_artist=True, widths=0.6, flierprops={"markersize": 2}, **_horizontal())
    for patch, v in zip(parts["boxes"], variants, strict=True):
        patch.set_facecolor(colours[variant_group(v)])
        patch.set_alpha(0.6)
    right.set_yticks(range(1, len(variants) + 1), labels=variants, fontsize=8)
    right.invert_yaxis()
    right.set(
        xscale="log",
        xlabel="KL(P_T ‖ P_S), natural log",
        title="Per variant (box: quartiles, whiskers: 1.5 IQR)"
        + (f"\nred dashed line: MR2 kl_threshold = {kl_threshold:g}" if kl_threshold > 0 else ""),
    )
    for ax in (left, right):
        if kl_threshold > 0:
            ax.axvline(
                kl_threshold, color="red", linestyle="--", linewidth=1.2, label=f"MR2 kl_threshold = {kl_threshold:g}"
            )
        ax.grid(True, which="major", alpha=0.3)
    left.legend(fontsize=8, loc="lower right")
    if kl_threshold <= 0:
        fig.text(0.5, 0.01, "kl_threshold = 0: every sample with positive KL violates MR2", ha="center", fontsize=8)
    if len(positive) < len(kl):
        fig.text(0.01, 0.01, f"KL ≤ {KL_FLOOR:g} drawn at {floor:.3g}", fontsize=7)
    fig.tight_layout()
    return fig


def _save(fig: Any, path: Path) -> None:
    fig.savefig(path, dpi=100)
    _pyplot().close(fig)


def write_plots(per: pd.DataFrame, classes: list[str], bins: int, kl_threshold: float, out: Path) -> list[str]:
    """Every plot into ``out``; returns their file names."""
    from ..artifact_names import CONFUSION_PLOT, KL_PLOT, PLOTS, RELIABILITY_PLOT

    _save(reliability_figure(per, classes, bins), out / RELIABILITY_PLOT)
    _save(kl_figure(per, kl_threshold), out / KL_PLOT)
    _save(confusion_figure(confusion_counts(per, classes), classes), out / CONFUSION_PLOT)
    return list(PLOTS)
