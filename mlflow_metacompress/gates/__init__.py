"""Registry promotion gates: policies (:mod:`.policy`, presets in ``presets/``) and the
promotion that tags a model version with its verdict and moves an alias only when it
passed (:mod:`.promotion`), serialised per registered model by the lock of :mod:`.lock`
and reading and writing the registry through :mod:`.registry`. Based on the MetaCompress relations (Awal, Rochan, Roy,
arXiv 2511.05476)."""

from __future__ import annotations

from .checks import CheckResult
from .decision import GateDecision, PromotionRefusedError, decision_json
from .gate import gate_version, load_eval_data
from .lock import PromotionLockError
from .policy import PRESETS, GatePolicy, PolicyError, load_policy
from .promotion import (
    TAG_EVALUATED_AT,
    TAG_FAILED,
    TAG_POLICY,
    TAG_RUN,
    TAG_TEACHER,
    TAG_VERDICT,
    TAG_VERDICT_TIME,
    promote,
)

__all__ = [
    "PRESETS",
    "CheckResult",
    "GatePolicy",
    "PolicyError",
    "load_policy",
    "TAG_EVALUATED_AT",
    "TAG_FAILED",
    "TAG_POLICY",
    "TAG_RUN",
    "TAG_TEACHER",
    "TAG_VERDICT",
    "TAG_VERDICT_TIME",
    "GateDecision",
    "PromotionLockError",
    "PromotionRefusedError",
    "decision_json",
    "gate_version",
    "load_eval_data",
    "promote",
]
