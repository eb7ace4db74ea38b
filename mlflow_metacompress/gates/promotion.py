"""Registry promotion gates: tag a model version with its verdict, move an alias if it passed.

The gate turns a MetaCompress evaluation (Awal, Rochan, Roy, arXiv 2511.05476) into a
registry decision. ``promote`` records the verdict as model-version tags (verdict last,
see :mod:`.registry`), then, only when every check of the :class:`~.policy.GatePolicy`
passes, moves the alias. Every promotion of one registered model runs under the lock of
:mod:`.lock`, so the read of the alias holder, the freshness comparison and the move are
one step for every process writing the same store, and the alias only ever moves to a
fresher passing evaluation:

- a version whose evaluation is older than that of the alias's passing holder is refused
  (:class:`~.decision.PromotionRefusedError`) unless ``force=True``;
- a holder whose new verdict is ``failed`` loses the alias: it goes back to the other
  version that passed on the freshest evaluation, or is deleted;
- after the move the holder is read back; ``alias_moved`` is true only if this version
  holds the alias at the end, and a lost race is said in ``notes``;
- a ``stage`` transition happens after the alias move and is undone if the alias did not
  end on this version; a failing transition puts the alias back.

``promote(run_id)`` refuses a run that is not FINISHED or lacks ``metacompress/summary.json``
(a half-written evaluation) before writing anything (:mod:`.evaluation_run`). The decision
it returns: :mod:`.decision`.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .checks import CheckResult
from .decision import GateDecision, PromotionRefusedError
from .evaluation_run import RefusedRun, evaluation_metrics
from .lock import DEFAULT_TIMEOUT_S, promotion_lock  # noqa: F401 - DEFAULT_TIMEOUT_S re-exported for callers
from .policy import GatePolicy, load_policy
from .registry import (
    TAG_EVALUATED_AT,
    TAG_FAILED,
    TAG_POLICY,
    TAG_RUN,
    TAG_TEACHER,
    TAG_VERDICT,
    TAG_VERDICT_TIME,
    evaluated_at,
    freshness,
    hand_off,
    has_passed,
    holder,
    mark_pending,
    registry_uri,
    restore_alias,
    write_verdict,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.models.evaluation import EvaluationResult

logger = logging.getLogger(__name__)

__all__ = [
    "TAG_EVALUATED_AT",
    "TAG_FAILED",
    "TAG_POLICY",
    "TAG_RUN",
    "TAG_TEACHER",
    "TAG_VERDICT",
    "TAG_VERDICT_TIME",
    "promote",
]

_MAX_TAG = 5000
_VERSION = re.compile(r"[1-9][0-9]*")
_RECHECKS = 3


def _client(client: MlflowClient | None) -> MlflowClient:
    from mlflow import MlflowClient

    return client if client is not None else MlflowClient()


def version_text(version: str | int) -> str:
    """``version`` as the registry's canonical text; ValueError for ``"1 "``, ``"x"``, ``0``, ``True``."""
    if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
        return str(version)
    if isinstance(version, str) and _VERSION.fullmatch(version):
        return version
    raise ValueError(f"model version must be a positive integer such as 1 or '3', got {version!r}")


def _failed_tag(checks: list[CheckResult]) -> str:
    text = "; ".join(c.message for c in checks if not c.passed) or "none"
    return text if len(text) <= _MAX_TAG else text[: _MAX_TAG - 3] + "..."


def promote(
    model_name: str,
    version: str | int,
    evaluation: EvaluationResult | str,
    policy: str | Path | GatePolicy,
    alias: str | None = "champion",
    force: bool = False,
    stage: str | None = None,
    client: MlflowClient | None = None,
    lock_timeout: float | None = None,
) -> GateDecision:
    """Judge ``evaluation`` with ``policy``, tag ``model_name``/``version``, move ``alias`` if passed.

    ``evaluation`` is an ``EvaluationResult`` or the id of a FINISHED run holding
    metacompress metrics and ``metacompress/summary.json``. Tags written on every judged
    call: verdict (last), failed checks, evaluation run id, policy name, evaluation time
    and verdict time. Raises :class:`~.decision.PromotionRefusedError` (nothing written) for an
    unfinished or half-written run, and (tags written, alias untouched) if the alias's
    holder passed on a more recent evaluation and ``force`` is false. A failing verdict
    of the alias's holder hands the alias back (``decision.alias_handed_to``). ``stage``
    (e.g. ``"Production"``) also performs the legacy stage transition after the alias
    moves. Raises :class:`~.lock.PromotionLockError` if another promotion of the model
    holds the lock for ``lock_timeout`` seconds (default: the lock module's
    ``DEFAULT_TIMEOUT_S``, 120 s).
    """
    client = _client(client)
    policy = load_policy(policy)
    version = version_text(version)
    client.get_model_version(model_name, version)  # fail early on an unknown version
    try:
        metrics, run_id, when = evaluation_metrics(evaluation, client)
    except RefusedRun as exc:
        decision = GateDecision(
            model_name,
            version,
            policy.name,
            False,
            [],
            alias,
            False,
            evaluation if isinstance(evaluation, str) else None,
            notes=[str(exc)],
        )
        raise PromotionRefusedError(str(exc), decision) from None
    checks = policy.check(metrics)
    passed = all(c.passed for c in checks)
    decision = GateDecision(model_name, version, policy.name, passed, checks, alias, False, run_id)
    logger.info(
        "gate %s v%s policy %s: %s",
        model_name,
        version,
        policy.name,
        "passed" if passed else f"failed {len(decision.failed_checks)} check(s)",
    )
    evidence = {
        TAG_FAILED: _failed_tag(checks),
        TAG_RUN: run_id or "",
        TAG_POLICY: policy.name,
        TAG_EVALUATED_AT: str(when),
        TAG_VERDICT_TIME: str(int(time.time() * 1000)),
    }
    with promotion_lock(registry_uri(client), model_name, lock_timeout):
        mark_pending(client, model_name, version)
        if alias and not passed:  # fail closed: the alias leaves before the evidence changes
            current = holder(client, model_name, alias)
            if current is not None and str(current.version) == version:
                decision.alias_handed_to = hand_off(client, model_name, alias, version)
                decision.notes.append(
                    f"v{version} held alias {alias!r} and failed: alias "
                    + (
                        f"handed back to v{decision.alias_handed_to}"
                        if decision.alias_handed_to
                        else "deleted (no other version passed)"
                    )
                )
        write_verdict(client, model_name, version, "passed" if passed else "failed", evidence)
        if alias and passed:
            _move_alias(client, decision, when, force, stage)
    return decision


def _move_alias(client: MlflowClient, decision: GateDecision, when: int, force: bool, stage: str | None) -> None:
    """Under the lock: refuse a staler evaluation, move the alias, transition, read back."""
    name, version, alias = decision.model_name, decision.version, str(decision.alias)
    current = holder(client, name, alias)
    previous = str(current.version) if current is not None else None
    if current is not None and previous != version:
        decision.previous_holder = previous
        held_at = evaluated_at(current)
        if has_passed(current) and held_at > when:
            msg = (
                f"refusing to move alias {alias!r} of {name!r} from v{previous} to v{version}: "
                f"v{previous} passed on a more recent evaluation ({held_at} > {when} ms); "
                "pass force=True to override"
            )
            if not force:
                decision.notes.append(msg)
                raise PromotionRefusedError(msg, decision)
            decision.notes.append(f"forced over v{previous}'s more recent passing verdict")
            logger.warning("%s (forced)", msg)
    old_stage = client.get_model_version(name, version).current_stage
    client.set_registered_model_alias(name, alias, version)
    if stage:
        try:
            client.transition_model_version_stage(name, version, stage)
        except Exception:
            restore_alias(client, name, alias, previous)
            raise
        decision.stage = stage
    for attempt in range(_RECHECKS + 1):  # read back: a writer outside the lock may have moved it
        now = holder(client, name, alias)
        if now is not None and str(now.version) == version:
            decision.alias_moved = True
            logger.info("alias %r of %s now points at v%s", alias, name, version)
            return
        if now is not None and has_passed(now) and freshness(now) >= (when, int(version)):
            decision.notes.append(
                f"alias {alias!r} was taken by v{now.version}, which passed on a fresher "
                f"evaluation ({evaluated_at(now)} >= {when} ms); v{version} does not hold it"
            )
            break
        if attempt == _RECHECKS:
            decision.notes.append(
                f"alias {alias!r} kept being moved by a concurrent writer; v{version} does not hold it"
            )
            break
        logger.warning(
            "alias %r of %s moved to %s by a concurrent writer; moving it back to v%s",
            alias,
            name,
            f"v{now.version}" if now is not None else "<none>",
            version,
        )
        client.set_registered_model_alias(name, alias, version)
    logger.warning("%s v%s: %s", name, version, decision.notes[-1])
    if decision.stage:
        client.transition_model_version_stage(name, version, old_stage)
        decision.notes.append(f"stage transition to {decision.stage!r} undone (back to {old_stage!r})")
        decision.stage = None
