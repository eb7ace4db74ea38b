"""Per-row data of the three-teacher study (:mod:`.triad`), compact enough for its JSON, so
that the page's verdicts (:mod:`.triad_page`) are recomputed from the page alone when the
MLflow store is gone.

One model judged against one teacher (a premise student, or another teacher as a replica)
is a :class:`RowData`: per judged row, on the **original** input, the MR1–MR3 flags (MR3
only where the teacher is confident, ``mr3_in_h``) and whether teacher and model are
correct; on the **transformed** inputs, per group of rewrites (``unseen``: every rewrite but
``fidelity``'s training ones, :data:`~.replica.FIDELITY_SEEN`; ``seen``: those), the count of
violating variants ``k`` and of judged variants ``n`` per relation. Each list is stored as a
string, one base-36 character per row (``-`` for none), in the order of the judged rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .replica import FIDELITY_SEEN

RELATIONS = ("mr1", "mr2", "mr3")
GROUPS = ("unseen", "seen")
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def encode(values: Any) -> str:
    """Non-negative integers below 36 (NaN → ``-``) as one character each."""
    out = []
    for v in np.asarray(values, dtype=float):
        if np.isnan(v):
            out.append("-")
        else:
            if v < 0 or v >= len(_DIGITS) or v != int(v):
                raise ValueError(f"per-row counts must be integers in [0, 36), got {v}")
            out.append(_DIGITS[int(v)])
    return "".join(out)


def decode(text: str) -> np.ndarray:
    """:func:`encode`'s inverse, as floats (``-`` → NaN)."""
    return np.array([np.nan if c == "-" else float(_DIGITS.index(c)) for c in text], dtype=float)


@dataclass
class RowData:
    """One model against one teacher, per judged row (see the module docstring)."""

    original: dict[str, np.ndarray]  # mr1, mr2, mr3 (NaN outside H), correct, teacher_correct
    transformed: dict[str, dict[str, np.ndarray]]  # group -> "<relation>_k" / "<relation>_n"

    def to_json(self) -> dict[str, Any]:
        return {
            "original": {k: encode(v) for k, v in self.original.items()},
            "transformed": {g: {k: encode(v) for k, v in d.items()} for g, d in self.transformed.items()},
        }

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> RowData:
        return cls(
            {k: decode(v) for k, v in record["original"].items()},
            {g: {k: decode(v) for k, v in d.items()} for g, d in record["transformed"].items()},
        )

    def rate(self, relation: str, kind: str, groups: tuple[str, ...] = GROUPS) -> float:
        """The pooled rate: on ``original`` the mean flag (MR3 within H); on ``transformed``
        Σk / Σn over ``groups``."""
        if kind == "original":
            flags = self.original[relation]
            return float(np.nanmean(flags)) if np.isfinite(flags).any() else float("nan")
        k, n = self.counts(relation, groups)
        return float(k.sum() / n.sum()) if n.sum() else float("nan")

    def counts(self, relation: str, groups: tuple[str, ...] = GROUPS) -> tuple[np.ndarray, np.ndarray]:
        """Per row, violating and judged variants over ``groups``."""
        k = sum(self.transformed[g][f"{relation}_k"] for g in groups)
        n = sum(self.transformed[g][f"{relation}_n"] for g in groups)
        return np.asarray(k, dtype=float), np.asarray(n, dtype=float)

    def increment(self, relation: str, groups: tuple[str, ...] = GROUPS) -> float:
        """Rule 2's metamorphic increment: over rows with judged variants and a judged
        original, the mean of (violating share of the row's variants − the original's flag)."""
        k, n = self.counts(relation, groups)
        original = self.original[relation]
        rows = (n > 0) & np.isfinite(original)
        if not rows.any():
            return float("nan")
        return float(np.mean(k[rows] / n[rows] - original[rows]))

    def accuracy_gap(self) -> np.ndarray:
        """Per row: the teacher correct minus the model correct (rule 3's gap, in points / 100)."""
        return self.original["teacher_correct"] - self.original["correct"]


def row_data(per_sample: Any, rows: int | None = None) -> RowData:
    """:class:`RowData` from an evaluation's ``per_sample.parquet`` (attack rows ignored)."""
    import pandas as pd

    df = per_sample
    n_rows = int(rows if rows is not None else df.loc[df["variant"] == "original", "row"].max() + 1)
    index = pd.RangeIndex(n_rows)
    orig = df[df["variant"] == "original"].set_index("row").reindex(index)
    in_h = orig["mr3_in_h"].astype(float).to_numpy()
    original = {
        "mr1": orig["mr1_violation"].astype(float).to_numpy(),
        "mr2": orig["mr2_violation"].astype(float).to_numpy(),
        "mr3": np.where(in_h > 0, orig["mr3_violation"].astype(float).to_numpy(), np.nan),
        "correct": (orig["student_pred"] == orig["label"]).astype(float).to_numpy(),
        "teacher_correct": (orig["teacher_pred"] == orig["label"]).astype(float).to_numpy(),
    }
    rewritten = df[(df["variant"] != "original") & ~df["variant"].astype(str).str.startswith("attack_")]
    transformed: dict[str, dict[str, np.ndarray]] = {}
    for group in GROUPS:
        seen = rewritten["variant"].isin(FIDELITY_SEEN)
        part = rewritten[seen if group == "seen" else ~seen]
        counts: dict[str, np.ndarray] = {}
        for relation in RELATIONS:
            flag = part[f"{relation}_violation"].astype(float)
            judged = part["mr3_in_h"].astype(float) if relation == "mr3" else pd.Series(1.0, index=part.index)
            by_row = pd.DataFrame({"row": part["row"], "k": flag * judged, "n": judged}).groupby("row").sum()
            by_row = by_row.reindex(index, fill_value=0.0)
            counts[f"{relation}_k"] = by_row["k"].to_numpy()
            counts[f"{relation}_n"] = by_row["n"].to_numpy()
        transformed[group] = counts
    return RowData(original, transformed)
