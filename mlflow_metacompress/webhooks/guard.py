"""Guard the gated alias: a move onto a version that did not pass the gate is undone.

When ``model_version_alias.created`` reports the guarded alias (``champion``) on a version
whose ``metacompress.verdict`` is not ``passed`` (failed, error, pending, or never
judged), the move skipped the MetaCompress gate (arXiv 2511.05476). Under the promotion
lock of :mod:`mlflow_metacompress.gates.lock` the guard re-reads the holder and, if it is
still that version, gives the alias back to the newest passing version (the one the
service itself would have chosen) or deletes it when none passed, tags the version
``metacompress.alias_reverted=<ms since epoch>`` and logs a warning naming it.

No loop: every alias the service sets points at a version whose verdict is ``passed``
(``promote`` writes the verdict before moving the alias; the guard restores only passing
versions), so the events of its own moves find a passing holder and do nothing. An event
whose alias has moved on since (stale) does nothing either.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..gates.lock import promotion_lock
from ..gates.registry import TAG_VERDICT, has_passed, holder, registry_uri

if TYPE_CHECKING:
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

TAG_ALIAS_REVERTED = "metacompress.alias_reverted"


@dataclass(frozen=True)
class GuardOutcome:
    """What the guard did: ``reverted`` and where the alias went (None: deleted)."""

    reverted: bool
    message: str
    restored_to: str | None = None


def _quoted(name: str) -> str | None:
    if "'" not in name:
        return f"name = '{name}'"
    if '"' not in name:
        return f'name = "{name}"'
    return None  # no filter literal can hold both quote kinds: filter client-side


def newest_passing(client: MlflowClient, name: str, exclude: str) -> Any | None:
    """The highest-numbered version of ``name`` (other than ``exclude``) whose verdict is ``passed``."""
    query, found, token = _quoted(name), [], None
    while True:
        page = client.search_model_versions(query, page_token=token)
        found += [mv for mv in page if mv.name == name and str(mv.version) != exclude and has_passed(mv)]
        token = page.token
        if not token:
            break
    return max(found, key=lambda mv: int(mv.version), default=None)


def guard_alias(client: MlflowClient, name: str, alias: str, version: str) -> GuardOutcome:
    """Undo ``alias`` → ``name``/``version`` unless that version passed the gate."""
    with promotion_lock(registry_uri(client), name):
        current = holder(client, name, alias)
        if current is None or str(current.version) != version:
            now = f"v{current.version}" if current is not None else "no version"
            return GuardOutcome(False, f"alias {alias!r} has moved on to {now}; nothing to guard")
        if has_passed(current):
            return GuardOutcome(False, f"v{version} passed the gate; alias {alias!r} stays")
        verdict = (current.tags or {}).get(TAG_VERDICT) or "none"
        successor = newest_passing(client, name, exclude=version)
        if successor is None:
            client.delete_registered_model_alias(name, alias)
            where = "deleted (no version passed the gate)"
        else:
            client.set_registered_model_alias(name, alias, str(successor.version))
            where = f"restored to v{successor.version}"
        client.set_model_version_tag(name, version, TAG_ALIAS_REVERTED, str(int(time.time() * 1000)))
    message = (
        f"{name} v{version} was given alias {alias!r} without passing the gate "
        f"(metacompress.verdict={verdict}): alias {where}"
    )
    logger.warning("%s", message)
    return GuardOutcome(True, message, None if successor is None else str(successor.version))
