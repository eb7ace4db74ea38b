"""What the gate reads from and writes to the model registry: verdict tags, the alias holder,
and handing the alias back when its holder fails.

MLflow 3.17 has no batch call for model-version tags (``MlflowClient`` sets them one at a
time), so the gate orders the calls instead: the verdict is set to ``pending`` first
(:func:`mark_pending`), then the evidence (run id, failed checks, policy, times), then
the final verdict last (:func:`write_verdict`). A fault part-way leaves ``pending``, never ``passed`` beside stale
evidence.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

TAG_VERDICT = "metacompress.verdict"
TAG_FAILED = "metacompress.failed_checks"
TAG_RUN = "metacompress.evaluation_run_id"
TAG_POLICY = "metacompress.policy"
TAG_EVALUATED_AT = "metacompress.evaluation_time"
TAG_VERDICT_TIME = "metacompress.verdict_time"
TAG_TEACHER = "metacompress.teacher"
PENDING = "pending"


def registry_uri(client: MlflowClient) -> str:
    """The registry URI ``client`` writes to (used to place the promotion lock)."""
    uri = getattr(client, "_registry_uri", None)
    if not uri:
        import mlflow

        uri = mlflow.get_registry_uri()
    return str(uri)


def mark_pending(client: MlflowClient, name: str, version: str) -> None:
    """Withdraw the version's previous verdict before any of its evidence changes."""
    client.set_model_version_tag(name, version, TAG_VERDICT, PENDING)


def write_verdict(client: MlflowClient, name: str, version: str, verdict: str, evidence: Mapping[str, str]) -> None:
    """Every ``evidence`` tag, then the verdict, last (after :func:`mark_pending`)."""
    for key, value in evidence.items():
        client.set_model_version_tag(name, version, key, value)
    client.set_model_version_tag(name, version, TAG_VERDICT, verdict)


def evaluated_at(mv: Any) -> int:
    """The evaluation time (ms) in a version's tags; 0 when absent or malformed."""
    try:
        return int((mv.tags or {}).get(TAG_EVALUATED_AT) or 0)
    except ValueError:
        return 0


def has_passed(mv: Any) -> bool:
    return (mv.tags or {}).get(TAG_VERDICT) == "passed"


def freshness(mv: Any) -> tuple[int, int]:
    """Order of passing versions: evaluation time, then version number on ties."""
    return evaluated_at(mv), int(mv.version)


def holder(client: MlflowClient, name: str, alias: str) -> Any | None:
    """The model version ``alias`` points at, or None."""
    from mlflow.exceptions import MlflowException

    try:
        return client.get_model_version_by_alias(name, alias)
    except MlflowException:
        return None


def _versions(client: MlflowClient, name: str) -> list[Any]:
    if "'" not in name:
        query = f"name = '{name}'"
    elif '"' not in name:
        query = f'name = "{name}"'
    else:  # both quote kinds: no filter literal can hold the name, so filter here
        query = None
    found, token = [], None
    while True:
        page = client.search_model_versions(query, page_token=token)
        found += [mv for mv in page if mv.name == name]
        token = page.token
        if not token:
            return found


def best_passing(client: MlflowClient, name: str, exclude: str) -> Any | None:
    """The version (other than ``exclude``) whose latest verdict passed on the freshest evaluation."""
    passing = [mv for mv in _versions(client, name) if str(mv.version) != exclude and has_passed(mv)]
    return max(passing, key=freshness, default=None)


def hand_off(client: MlflowClient, name: str, alias: str, failing: str) -> str | None:
    """Take ``alias`` from ``failing``: give it to :func:`best_passing`, or delete it.

    Returns the version that holds ``alias`` afterwards (None when deleted).
    """
    successor = best_passing(client, name, exclude=failing)
    if successor is None:
        client.delete_registered_model_alias(name, alias)
        logger.warning(
            "%s v%s failed its re-evaluation: alias %r deleted (no other version passed)", name, failing, alias
        )
        return None
    client.set_registered_model_alias(name, alias, str(successor.version))
    logger.warning(
        "%s v%s failed its re-evaluation: alias %r handed back to v%s (evaluated at %d ms)",
        name,
        failing,
        alias,
        successor.version,
        evaluated_at(successor),
    )
    return str(successor.version)


def restore_alias(client: MlflowClient, name: str, alias: str, previous: str | None) -> None:
    """Point ``alias`` back at ``previous`` (delete it when there was none); log, never raise."""
    try:
        if previous is None:
            client.delete_registered_model_alias(name, alias)
        else:
            client.set_registered_model_alias(name, alias, previous)
    except Exception:  # the caller re-raises the original failure
        logger.exception("could not restore alias %r of %s to %s", alias, name, previous or "<none>")
