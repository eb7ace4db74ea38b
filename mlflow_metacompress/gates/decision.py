"""What a promotion decided (:class:`GateDecision`; :func:`~.promotion.promote`), as text
and JSON, and the error that carries a refused decision (:class:`PromotionRefusedError`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .checks import CheckResult


class PromotionRefusedError(RuntimeError):
    """The promotion was refused (``decision`` attached): the alias holder carries a more
    recent passing verdict, or the evaluation run is unfinished or half-written."""

    def __init__(self, message: str, decision: GateDecision) -> None:
        super().__init__(message)
        self.decision = decision


@dataclass
class GateDecision:
    """What ``promote`` decided for one model version."""

    model_name: str
    version: str
    policy: str
    passed: bool
    checks: list[CheckResult]
    alias: str | None
    alias_moved: bool
    evaluation_run_id: str | None
    previous_holder: str | None = None
    stage: str | None = None
    notes: list[str] = field(default_factory=list)
    alias_handed_to: str | None = None  # set when this (failing) version lost the alias

    @property
    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def summary(self) -> str:
        head = (
            f"{self.model_name} v{self.version}: {'PASSED' if self.passed else 'FAILED'} "
            f"policy {self.policy!r}; alias {self.alias!r} "
            f"{'moved' if self.alias_moved else 'not moved'}"
        )
        rows = [f"  [{'ok' if c.passed else 'FAIL'}] {c.message}" for c in self.checks]
        return "\n".join([head, *rows, *(f"  note: {n}" for n in self.notes)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "version": self.version,
            "policy": self.policy,
            "passed": self.passed,
            "alias": self.alias,
            "alias_moved": self.alias_moved,
            "evaluation_run_id": self.evaluation_run_id,
            "previous_holder": self.previous_holder,
            "alias_handed_to": self.alias_handed_to,
            "stage": self.stage,
            "checks": [c.to_dict() for c in self.checks],
            "notes": self.notes,
        }


def decision_json(decision: GateDecision) -> str:
    return json.dumps(decision.to_dict(), indent=2, default=str)
