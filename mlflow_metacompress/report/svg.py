"""The report's plots as inline SVG (no image files, no scripts, crisp at any zoom):
reliability diagrams (Guo et al. 2017, the picture behind MR4's calibration alignment),
the per-sample KL(P_T‖P_S) histogram (MR2) and a teacher-against-student confidence
scatter (MR1/MR3), all over the per-sample table the evaluator logs.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np
import pandas as pd

TEACHER, STUDENT, BAD, OK, GRID = "#2b6cb0", "#dd6b20", "#c53030", "#718096", "#e2e8f0"
PALETTE = ("#2b6cb0", "#38a169", "#dd6b20", "#805ad5", "#d53f8c", "#319795")
MAX_POINTS = 2000
W, H, L, R, T, B = 380, 300, 52, 14, 30, 44  # size and margins


class _Axes:
    """A plot area mapping data coordinates to SVG pixels."""

    def __init__(self, xlim: tuple[float, float], ylim: tuple[float, float]) -> None:
        self.xlim, self.ylim = xlim, ylim
        self.parts: list[str] = []
        self.keys: list[tuple[str, str, bool]] = []

    def x(self, v: float) -> float:
        lo, hi = self.xlim
        return L + (v - lo) / (hi - lo) * (W - L - R)

    def y(self, v: float) -> float:
        lo, hi = self.ylim
        return H - B - (v - lo) / (hi - lo) * (H - T - B)

    def frame(
        self,
        title: str,
        xlabel: str,
        ylabel: str,
        xticks: list[float],
        yticks: list[float],
        xfmt: str = "{:g}",
        yfmt: str = "{:g}",
    ) -> None:
        p = self.parts
        for v in yticks:
            p.append(f'<line x1="{L}" x2="{W - R}" y1="{self.y(v):.1f}" y2="{self.y(v):.1f}" stroke="{GRID}"/>')
            p.append(f'<text x="{L - 6}" y="{self.y(v) + 4:.1f}" text-anchor="end">{escape(yfmt.format(v))}</text>')
        for v in xticks:
            p.append(f'<line x1="{self.x(v):.1f}" x2="{self.x(v):.1f}" y1="{T}" y2="{H - B}" stroke="{GRID}"/>')
            p.append(f'<text x="{self.x(v):.1f}" y="{H - B + 16}" text-anchor="middle">{escape(xfmt.format(v))}</text>')
        p.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#a0aec0"/>')
        p.append(f'<text x="{(L + W - R) / 2:.1f}" y="{H - 8}" text-anchor="middle">{escape(xlabel)}</text>')
        p.append(
            f'<text transform="translate(14 {(T + H - B) / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle">{escape(ylabel)}</text>'
        )
        p.append(f'<text x="{L}" y="18" class="svg-title">{escape(title)}</text>')

    def legend(self, items: list[tuple[str, str]], dashed: tuple[str, ...] = ()) -> None:
        """A legend below the plot (HTML, so it never hides data)."""
        self.keys = [(label, color, label in dashed) for label, color in items]

    def svg(self, label: str) -> str:
        body = "".join(self.parts)
        keys = "".join(
            f'<span class="lg"><span class="sw{" dash" if dashed else ""}" style="border-color:{color}"></span>'
            f"{escape(name)}</span>"
            for name, color, dashed in self.keys
        )
        return (
            f'<figure class="fig"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" role="img" '
            f'aria-label="{escape(label)}" class="plot">{body}</svg><figcaption>{keys}</figcaption></figure>'
        )


def _probs(per: pd.DataFrame, role: str, classes: list[str]) -> np.ndarray:
    return per[[f"{role}_prob_{c}" for c in classes]].to_numpy(dtype=float)


def reliability(per: pd.DataFrame, classes: list[str], bins: int = 10) -> str:
    """Confidence against accuracy per confidence bin, teacher and student, on the original
    inputs (agreement with the teacher when there are no labels); the diagonal is perfect calibration."""
    orig = per[per["variant"] == "original"]
    t, s = _probs(orig, "teacher", classes), _probs(orig, "student", classes)
    labelled = "label" in orig and orig["label"].notna().all()
    target = orig["label"].to_numpy(dtype=int) if labelled else t.argmax(axis=1)
    ax = _Axes((0, 1), (0, 1))
    ax.frame(
        "Reliability (original inputs)",
        "confidence",
        "accuracy" if labelled else "agreement with teacher",
        [0, 0.25, 0.5, 0.75, 1],
        [0, 0.25, 0.5, 0.75, 1],
    )
    ax.parts.append(
        f'<line x1="{ax.x(0)}" y1="{ax.y(0)}" x2="{ax.x(1)}" y2="{ax.y(1)}" stroke="#4a5568" stroke-dasharray="4 3"/>'
    )
    for p, color in ((t, TEACHER), (s, STUDENT)):
        conf = p.max(axis=1)
        hit = (p.argmax(axis=1) == target).astype(float)
        b = np.minimum((conf * bins).astype(int), bins - 1)
        pts = []
        for k in range(bins):
            m = b == k
            if m.any():
                pts.append((conf[m].mean(), hit[m].mean(), int(m.sum())))
        path = " ".join(f"{ax.x(c):.1f},{ax.y(a):.1f}" for c, a, _ in pts)
        ax.parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for c, a, n in pts:
            ax.parts.append(
                f'<circle cx="{ax.x(c):.1f}" cy="{ax.y(a):.1f}" r="3.5" fill="{color}"><title>confidence {c:.3f}, '
                f"accuracy {a:.3f}, {n} samples</title></circle>"
            )
    ax.legend(
        [("teacher", TEACHER), ("student", STUDENT), ("perfect calibration", "#4a5568")],
        dashed=("perfect calibration",),
    )
    return ax.svg("reliability diagram")


def _groups(per: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    variant = per["variant"].astype(str)
    out = [("original", per[variant == "original"])]
    transformed = per[(variant != "original") & ~variant.str.startswith("attack_")]
    if len(transformed):
        out.append(("transformed", transformed))
    for name in sorted(v for v in variant.unique() if v.startswith("attack_")):
        out.append((name, per[variant == name]))
    return out


def kl_histogram(per: pd.DataFrame, kl_threshold: float = 0.1, nbins: int = 30) -> str:
    """Share of samples per log10 KL(P_T‖P_S) bin, for the original inputs, the transformed
    variants pooled and each attack; the dashed line is MR2's threshold."""
    groups = _groups(per)
    logs = [np.log10(np.clip(g["kl"].to_numpy(dtype=float), 1e-12, None)) for _, g in groups]
    lo = math.floor(min(float(v.min()) for v in logs if len(v)))
    hi = math.ceil(max(float(v.max()) for v in logs if len(v)))
    hi = max(hi, lo + 1, math.ceil(math.log10(kl_threshold)) + 1)
    edges = np.linspace(lo, hi, nbins + 1)
    shares = [np.histogram(v, bins=edges)[0] / max(len(v), 1) for v in logs]
    top = max(0.05, max(float(s.max()) for s in shares))
    top = math.ceil(top * 10) / 10
    ax = _Axes((lo, hi), (0, top))
    xticks = list(range(lo, hi + 1, max(1, (hi - lo) // 6)))
    ax.frame(
        "Per-sample KL divergence",
        "log10 KL(P_T ‖ P_S)",
        "share of samples",
        [float(v) for v in xticks],
        [float(v) for v in np.linspace(0, top, 5)],
        yfmt="{:.2f}",
    )
    thr = math.log10(kl_threshold)
    if lo <= thr <= hi:
        ax.parts.append(
            f'<line x1="{ax.x(thr):.1f}" x2="{ax.x(thr):.1f}" y1="{T}" y2="{H - B}" stroke="{BAD}" stroke-dasharray="4 '
            '3"/>'
        )
    legend = []
    for i, ((name, group), share) in enumerate(zip(groups, shares, strict=True)):
        color = PALETTE[i % len(PALETTE)]
        pts = [f"{ax.x(edges[0]):.1f},{ax.y(0):.1f}"]
        for k, v in enumerate(share):
            pts += [f"{ax.x(edges[k]):.1f},{ax.y(v):.1f}", f"{ax.x(edges[k + 1]):.1f},{ax.y(v):.1f}"]
        pts.append(f"{ax.x(edges[-1]):.1f},{ax.y(0):.1f}")
        fill = ' fill-opacity="0.15"' if i == 0 else ' fill-opacity="0"'
        ax.parts.append(
            f'<polyline points="{" ".join(pts)}" fill="{color}"{fill} stroke="{color}" stroke-width="1.8"/>'
        )
        legend.append((f"{name} (n={len(group):,})", color))
    legend.append((f"MR2 threshold {kl_threshold:g}", BAD))
    ax.legend(legend, dashed=(legend[-1][0],))
    return ax.svg("KL histogram")


def confidence_scatter(per: pd.DataFrame, classes: list[str], confidence_threshold: float = 0.8, seed: int = 0) -> str:
    """Each original sample: the teacher's confidence (x) against the student's probability
    of the teacher's class (y); red where the predicted classes differ (MR1). The dashed
    lines mark MR3's confidence threshold τ. At most 2,000 points (a fixed random subset)."""
    orig = per[per["variant"] == "original"]
    t, s = _probs(orig, "teacher", classes), _probs(orig, "student", classes)
    top = t.argmax(axis=1)
    x, y = t.max(axis=1), s[np.arange(len(s)), top]
    bad = s.argmax(axis=1) != top
    idx = np.arange(len(x))
    if len(idx) > MAX_POINTS:
        idx = np.sort(np.random.default_rng(seed).choice(idx, MAX_POINTS, replace=False))
    xmin = math.floor(min(float(x.min()), 1 / max(len(classes), 1)) * 10) / 10 if len(x) else 0.0
    ax = _Axes((xmin, 1), (0, 1))
    ax.frame(
        "Teacher vs student confidence",
        "teacher confidence (top class)",
        "student P(teacher's class)",
        [v for v in (0, 0.25, 0.5, 0.75, 1) if v >= xmin],
        [0, 0.25, 0.5, 0.75, 1],
    )
    tau = confidence_threshold
    ax.parts.append(
        f'<line x1="{ax.x(tau):.1f}" x2="{ax.x(tau):.1f}" y1="{T}" y2="{H - B}" stroke="#4a5568" stroke-dasharray="4 '
        '3"/>'
    )
    ax.parts.append(
        f'<line x1="{L}" x2="{W - R}" y1="{ax.y(tau):.1f}" y2="{ax.y(tau):.1f}" stroke="#4a5568" stroke-dasharray="4 '
        '3"/>'
    )
    r = 2.6 if len(idx) <= 300 else 1.8
    for i in idx:
        color = BAD if bad[i] else OK
        ax.parts.append(
            f'<circle cx="{ax.x(x[i]):.1f}" cy="{ax.y(y[i]):.1f}" r="{r}" fill="{color}" fill-opacity="0.55"/>'
        )
    shown = [(f"{len(idx):,} of {len(x):,} samples shown", "#ffffff")] if len(idx) < len(x) else []
    ax.legend(
        [("same class", OK), ("MR1 violation", BAD), (f"τ = {tau:g}", "#4a5568"), *shown], dashed=(f"τ = {tau:g}",)
    )
    return ax.svg("confidence scatter")
