"""MLflow registry events → the jobs the gate service queues for them.

- ``model_version.created`` of a configured model: evaluate the version (MetaCompress,
  arXiv 2511.05476) and promote it;
- ``model_version_tag.set`` with key ``metacompress.teacher``: the same evaluation, for a
  version registered before its teacher tag (revives a job left ``waiting``);
- ``model_version_alias.created`` of the guarded alias: check that the version passed
  the gate, else undo the move (:mod:`.guard`).

Every other event, and events of models the config does not name, create no job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..gates.registry import TAG_TEACHER
from .config import WebhookConfig
from .queue import EVALUATE, GUARD, JobSpec

CREATED: Final = "model_version.created"
TAG_SET: Final = "model_version_tag.set"
ALIAS_CREATED: Final = "model_version_alias.created"
EventName = Literal["model_version.created", "model_version_tag.set", "model_version_alias.created"]
EVENTS: tuple[EventName, ...] = (CREATED, TAG_SET, ALIAS_CREATED)
_VERSION = re.compile(r"[1-9][0-9]*")


class MalformedEventError(ValueError):
    """The delivery body is not an MLflow webhook payload; the message names the field."""


@dataclass(frozen=True)
class Event:
    """The parts of a delivery body the service uses."""

    name: str  # "<entity>.<action>", e.g. "model_version.created"
    data: Mapping[str, Any]


def parse_event(body: Any) -> Event:
    """Check a decoded delivery body (``{"entity", "action", "timestamp", "data"}``)."""
    if not isinstance(body, Mapping):
        raise MalformedEventError(f"body must be a JSON object, got {type(body).__name__}")
    for key in ("entity", "action"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise MalformedEventError(f"body.{key} must be a non-empty string, got {body.get(key)!r}")
    data = body.get("data")
    if not isinstance(data, Mapping):
        raise MalformedEventError(f"body.data must be a JSON object, got {type(data).__name__}")
    event = Event(f"{body['entity']}.{body['action']}", data)
    if event.name in EVENTS:
        _field(event, "name")
        version = _field(event, "version")
        if not _VERSION.fullmatch(version):
            raise MalformedEventError(f"body.data.version must be a positive integer string, got {version!r}")
        if event.name == TAG_SET:
            _field(event, "key")
        if event.name == ALIAS_CREATED:
            _field(event, "alias")
    return event


def _field(event: Event, key: str) -> str:
    value = event.data.get(key)
    if not isinstance(value, str) or not value:
        raise MalformedEventError(f"body.data.{key} of a {event.name} event must be a non-empty string, got {value!r}")
    return value


def jobs_for(config: WebhookConfig, event: Event) -> list[JobSpec]:
    """The jobs ``event`` asks for under ``config`` (empty: nothing to do)."""
    if event.name not in EVENTS:
        return []
    name, version = str(event.data["name"]), str(event.data["version"])
    if config.rule_for(name) is None:
        return []
    if event.name == CREATED:
        return [JobSpec(EVALUATE, name, version)]
    if event.name == TAG_SET:
        return [JobSpec(EVALUATE, name, version, revive=True)] if event.data["key"] == TAG_TEACHER else []
    alias = str(event.data["alias"])
    return [JobSpec(GUARD, name, version, alias=alias)] if alias == config.alias else []
