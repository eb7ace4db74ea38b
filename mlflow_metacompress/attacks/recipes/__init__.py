"""Published attacks as short recipes, each named after its paper, registered in
:data:`ATTACKS` as ``name -> build(model, **budget)`` factories."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import alert_yang_2022, coda_tian_2023, mhm_zhang_2020, wir_random_zeng_2022

ATTACKS: dict[str, Callable[..., Any]] = {
    "mhm_zhang_2020": mhm_zhang_2020.build,
    "alert_yang_2022": alert_yang_2022.build,
    "wir_random_zeng_2022": wir_random_zeng_2022.build,
    "coda_tian_2023": coda_tian_2023.build,
}


def list_attacks() -> list[str]:
    """Names of the registered attacks."""
    return sorted(ATTACKS)


__all__ = ["ATTACKS", "list_attacks"]
