"""Black-box adversarial attacks on code classifiers, decomposed as in TextAttack.

goal function (:mod:`.goal`) · constraints (:mod:`.constraints`) · transformation
(identifier renaming and structure rewrites from ``mlflow_metacompress.transforms``;
substitutes in :mod:`.substitutes`) · search (:mod:`.search`) · results
(:mod:`.results`) · recipes named after their papers (:mod:`.recipes`):
``mhm_zhang_2020``, ``alert_yang_2022``, ``wir_random_zeng_2022``, ``coda_tian_2023``.

Entry points: :func:`~.runner.run_attack` and ``python -m mlflow_metacompress.attacks``.
"""

from __future__ import annotations

from .catalog import ATTACKS, list_attacks
from .results import AttackReport, AttackResult, AttackStatus
from .runner import run_attack

__all__ = ["ATTACKS", "AttackReport", "AttackResult", "AttackStatus", "list_attacks", "run_attack"]
