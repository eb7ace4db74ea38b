"""Attack results with an explicit status, and the per-attack report.

Shaped after TextAttack's ``SuccessfulAttackResult`` / ``FailedAttackResult`` /
``SkippedAttackResult`` and its summary table (Morris et al., EMNLP 2020 demos).
"""

from __future__ import annotations

import difflib
import enum
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


class AttackStatus(str, enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass
class AttackResult:
    """One sample's attack outcome.

    ``skip_reason`` is ``"wrong_prediction"``, ``"no_identifiers"`` or
    ``"unparsable"`` (tree-sitter reports errors, so nothing can be renamed safely) for
    skipped samples. ``queries`` counts distinct inputs (what the budget limits);
    ``requests`` also counts repeats answered from the cache. ``renaming`` maps original
    identifiers to their new names (only those changed); ``transformations`` lists
    structure rewrites applied (CODA).
    """

    index: Any
    status: AttackStatus
    queries: int
    original_code: str
    adversarial_code: str | None
    label: int
    original_probs: np.ndarray
    adversarial_probs: np.ndarray | None = None
    renaming: dict[str, str] = field(default_factory=dict)
    transformations: list[str] = field(default_factory=list)
    skip_reason: str | None = None
    requests: int = 0

    @property
    def original_prediction(self) -> int:
        return int(np.argmax(self.original_probs))

    @property
    def adversarial_prediction(self) -> int | None:
        return None if self.adversarial_probs is None else int(np.argmax(self.adversarial_probs))

    def diff(self) -> str:
        """Unified diff from the original to the adversarial code ('' when none)."""
        if self.adversarial_code is None:
            return ""
        lines = difflib.unified_diff(
            self.original_code.splitlines(keepends=True),
            self.adversarial_code.splitlines(keepends=True),
            fromfile="original",
            tofile="adversarial",
        )
        return "".join(lines)


@dataclass
class AttackReport:
    """All results of one attack over a data frame."""

    attack: str
    results: list[AttackResult]
    code_columns: list[str]
    frame: pd.DataFrame
    forward_rows: int = 0
    forward_seconds: float = 0.0
    wall_seconds: float = 0.0
    details: dict[str, str] = field(default_factory=dict)

    def count(self, status: AttackStatus) -> int:
        return sum(r.status is status for r in self.results)

    @property
    def clean_accuracy(self) -> float:
        """Accuracy on the original inputs, from the goal function's own predictions."""
        if not self.results:
            return math.nan
        return sum(r.skip_reason != "wrong_prediction" for r in self.results) / len(self.results)

    def metrics(self, clean_accuracy: float | None = None) -> dict[str, float]:
        """``asr`` (successes / attacked), ``mean_queries`` (over attacked samples),
        ``accuracy_under_attack`` (originally correct and not flipped, over all
        samples; samples without identifiers count as surviving) and
        ``accuracy_drop`` = ``clean_accuracy`` − accuracy under attack.

        ``clean_accuracy`` defaults to the one measured here; pass the evaluator's
        value to keep one definition across metrics.
        """
        n = len(self.results)
        ok, bad = self.count(AttackStatus.SUCCEEDED), self.count(AttackStatus.FAILED)
        attacked = [r for r in self.results if r.status is not AttackStatus.SKIPPED]
        clean = self.clean_accuracy if clean_accuracy is None else float(clean_accuracy)
        under = (n * self.clean_accuracy - ok) / n if n else math.nan
        return {
            "asr": ok / (ok + bad) if ok + bad else math.nan,
            "mean_queries": float(np.mean([r.queries for r in attacked])) if attacked else math.nan,
            "accuracy_under_attack": under,
            "accuracy_drop": clean - under,
        }

    def adversarial_frame(self) -> pd.DataFrame:
        """Rows of successful attacks, adversarial code in the first code column,
        original index and other columns kept."""
        done = [r for r in self.results if r.status is AttackStatus.SUCCEEDED]
        out = self.frame.loc[[r.index for r in done]].copy()
        out[self.code_columns[0]] = [r.adversarial_code for r in done]
        return out

    def table(self) -> pd.DataFrame:
        """One row per sample for the parquet artifact."""
        rows = []
        for r in self.results:
            rows.append(
                {
                    "index": r.index if isinstance(r.index, (int, str)) else str(r.index),
                    "status": r.status.value,
                    "skip_reason": r.skip_reason,
                    "queries": int(r.queries),
                    "requests": int(r.requests),
                    "original_code": r.original_code,
                    "adversarial_code": r.adversarial_code,
                    "diff": r.diff(),
                    "renaming": json.dumps(r.renaming, sort_keys=True),
                    "transformations": json.dumps(r.transformations),
                    "label": int(r.label),
                    "original_prediction": r.original_prediction,
                    "adversarial_prediction": r.adversarial_prediction,
                    "original_probs": [float(p) for p in r.original_probs],
                    "adversarial_probs": None
                    if r.adversarial_probs is None
                    else [float(p) for p in r.adversarial_probs],
                }
            )
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """A TextAttack-style summary table."""
        m = self.metrics()
        n = len(self.results)
        rows = [
            ("Attack", self.attack),
            ("Number of successful attacks", str(self.count(AttackStatus.SUCCEEDED))),
            ("Number of failed attacks", str(self.count(AttackStatus.FAILED))),
            ("Number of skipped attacks", str(self.count(AttackStatus.SKIPPED))),
            ("Original accuracy", f"{100 * self.clean_accuracy:.2f}%" if n else "n/a"),
            ("Accuracy under attack", f"{100 * m['accuracy_under_attack']:.2f}%" if n else "n/a"),
            ("Attack success rate", f"{100 * m['asr']:.2f}%" if not math.isnan(m["asr"]) else "n/a"),
            ("Average num. queries", f"{m['mean_queries']:.1f}" if not math.isnan(m["mean_queries"]) else "n/a"),
            ("Model forward passes", str(self.forward_rows)),
        ]
        rows += [(k.capitalize(), v) for k, v in self.details.items()]
        width = max(len(k) for k, _ in rows)
        vwidth = max(len(v) for _, v in rows)
        line = "+" + "-" * (width + 2) + "+" + "-" * (vwidth + 2) + "+"
        body = [f"| {k:<{width}} | {v:>{vwidth}} |" for k, v in rows]
        return "\n".join([line, body[0], line, *body[1:], line])
