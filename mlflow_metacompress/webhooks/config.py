"""``gates.yaml``: which registered models the webhook service judges, against what, and how.

The service turns MLflow registry events into MetaCompress gate decisions (Awal, Rochan,
Roy, arXiv 2511.05476). Its configuration is one YAML file::

    tracking_uri: http://127.0.0.1:5000        # optional; else MLFLOW_TRACKING_URI
    secret_env: METACOMPRESS_WEBHOOK_SECRET     # the variable holding the HMAC secret
    alias: champion                            # the guarded alias
    models:
      vuln-student:                            # a registered model name; globs allowed
        teacher: models:/vuln-teacher/1         # optional; else the version's metacompress.teacher tag
        data: /data/devign/test.jsonl           # .jsonl, .json, .csv or .parquet (relative: to this file)
        targets: target
        policy: standard                        # a preset, a policy YAML path, or an inline mapping
        evaluator_config: {code_columns: [func], language: c, transforms: all, attacks: []}

Optional keys: ``queue`` (the sqlite job queue, default ``<config stem>.webhooks.sqlite``
beside the file), ``webhook_name`` (the name ``install`` registers, default
``metacompress-gates``) and ``experiment`` (where evaluation runs go). Every problem is a
:class:`WebhookConfigError` naming the file and the key; the secret itself is never read
from the file, only from the environment variable named by ``secret_env``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..gates.policy import GatePolicy, PolicyError, load_policy
from ..gates.yaml_files import read_yaml_file

DEFAULT_SECRET_ENV = "METACOMPRESS_WEBHOOK_SECRET"
DEFAULT_ALIAS = "champion"
DEFAULT_WEBHOOK_NAME = "metacompress-gates"
DATA_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
_TOP_KEYS = {"tracking_uri", "secret_env", "alias", "models", "queue", "webhook_name", "experiment"}
_MODEL_KEYS = {"teacher", "data", "targets", "policy", "evaluator_config"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ALIAS = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class WebhookConfigError(ValueError):
    """``gates.yaml`` (or the secret it names) is missing or malformed; the message names the key."""


@dataclass(frozen=True)
class ModelRule:
    """How versions of the registered models matching ``pattern`` are judged."""

    pattern: str
    data: Path
    targets: str
    policy: GatePolicy
    evaluator_config: Mapping[str, Any] = field(default_factory=dict)
    teacher: str | None = None

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.pattern)


@dataclass(frozen=True)
class WebhookConfig:
    """A validated ``gates.yaml``."""

    path: Path
    secret_env: str
    alias: str
    models: tuple[ModelRule, ...]
    queue_path: Path
    webhook_name: str = DEFAULT_WEBHOOK_NAME
    tracking_uri: str | None = None
    experiment: str | None = None

    def rule_for(self, name: str) -> ModelRule | None:
        """The rule naming ``name`` exactly, else the first glob (file order) matching it, else None."""
        exact = [r for r in self.models if r.pattern == name]
        if exact:
            return exact[0]
        return next((r for r in self.models if r.matches(name)), None)

    def secret(self) -> str:
        """The HMAC secret from ``$<secret_env>``; :class:`WebhookConfigError` when unset or empty."""
        value = os.environ.get(self.secret_env, "")
        if not value:
            raise WebhookConfigError(
                f"{self.path}: secret_env: the environment variable {self.secret_env} "
                "is unset or empty; export the webhook secret there"
            )
        return value


def _text(raw: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str | None:
    value = raw.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise WebhookConfigError(f"{where}{key}: must be a non-empty string, got {value!r}")
    return value.strip()


def _evaluator_config(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise WebhookConfigError(f"{where}evaluator_config: must be a mapping, got {type(value).__name__}")
    from ..evaluation.config_model import EvaluatorConfig

    known = {f.name for f in EvaluatorConfig.__dataclass_fields__.values() if not f.metadata.get("internal")}
    for key in value:
        if key == "teacher":
            raise WebhookConfigError(f"{where}evaluator_config.teacher: give the teacher as {where}teacher")
        if key not in known:
            raise WebhookConfigError(
                f"{where}evaluator_config.{key}: unknown evaluator_config key; "
                f"known keys: {sorted(known - {'teacher'})}"
            )
    return dict(value)


def _model_rule(pattern: Any, raw: Any, base: Path, source: Path) -> ModelRule:
    where = f"{source}: models.{pattern}."
    if not isinstance(pattern, str) or not pattern.strip():
        raise WebhookConfigError(
            f"{source}: models: every key must be a registered model name or glob, got {pattern!r}"
        )
    if not isinstance(raw, Mapping):
        raise WebhookConfigError(f"{source}: models.{pattern}: must be a mapping with data, targets, policy, ...")
    unknown = sorted(set(map(str, raw)) - _MODEL_KEYS)
    if unknown:
        raise WebhookConfigError(f"{where}{unknown[0]}: unknown key; allowed: {sorted(_MODEL_KEYS)}")
    data_text = _text(raw, "data", where)
    if data_text is None:
        raise WebhookConfigError(f"{where}data: required (the evaluation data, {'/'.join(DATA_SUFFIXES)})")
    data = Path(data_text).expanduser()
    data = data if data.is_absolute() else base / data
    if data.suffix.lower() not in DATA_SUFFIXES:
        raise WebhookConfigError(f"{where}data: {data} must end with one of {list(DATA_SUFFIXES)}")
    if not data.is_file():
        raise WebhookConfigError(f"{where}data: {data} does not exist or is not a file")
    policy_raw = raw.get("policy", "standard")
    if (
        isinstance(policy_raw, str)
        and Path(policy_raw).suffix in {".yaml", ".yml"}
        and not Path(policy_raw).is_absolute()
    ):
        policy_raw = str(base / policy_raw)
    try:
        policy = load_policy(policy_raw)
    except (PolicyError, TypeError) as exc:
        raise WebhookConfigError(f"{where}policy: {exc}") from None
    return ModelRule(
        pattern=pattern,
        data=data,
        targets=_text(raw, "targets", where, "target") or "target",
        policy=policy,
        evaluator_config=_evaluator_config(raw.get("evaluator_config"), where),
        teacher=_text(raw, "teacher", where),
    )


def parse_webhook_config(data: Any, source: Path) -> WebhookConfig:
    """Validate an already-loaded ``gates.yaml`` mapping; relative paths are taken from ``source``'s folder."""
    base = source.parent
    if not isinstance(data, Mapping):
        raise WebhookConfigError(f"{source}: must be a YAML mapping with a 'models' key")
    if "secret" in data:
        raise WebhookConfigError(
            f"{source}: secret: the webhook secret is never read from this file; export it "
            f"in the environment variable named by secret_env (default {DEFAULT_SECRET_ENV})"
        )
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise WebhookConfigError(f"{source}: {unknown[0]}: unknown key; allowed: {sorted(_TOP_KEYS)}")
    where = f"{source}: "
    secret_env = _text(data, "secret_env", where, DEFAULT_SECRET_ENV) or DEFAULT_SECRET_ENV
    if not _ENV_NAME.fullmatch(secret_env):
        raise WebhookConfigError(
            f"{where}secret_env: {secret_env!r} is not an environment variable name "
            "(put the secret in the environment, never in this file)"
        )
    alias = _text(data, "alias", where, DEFAULT_ALIAS) or DEFAULT_ALIAS
    if not _ALIAS.fullmatch(alias) or alias.lower() == "latest" or re.fullmatch(r"v\d+", alias):
        raise WebhookConfigError(f"{where}alias: {alias!r} is not a valid registry alias")
    models = data.get("models")
    if not isinstance(models, Mapping) or not models:
        raise WebhookConfigError(f"{where}models: required, a non-empty mapping of registered model name → rule")
    rules = tuple(_model_rule(pattern, raw, base, source) for pattern, raw in models.items())
    queue_text = _text(data, "queue", where)
    queue = Path(queue_text).expanduser() if queue_text else source.with_name(f"{source.stem}.webhooks.sqlite")
    return WebhookConfig(
        path=source,
        secret_env=secret_env,
        alias=alias,
        models=rules,
        queue_path=queue if queue.is_absolute() else base / queue,
        webhook_name=_text(data, "webhook_name", where, DEFAULT_WEBHOOK_NAME) or DEFAULT_WEBHOOK_NAME,
        tracking_uri=_text(data, "tracking_uri", where),
        experiment=_text(data, "experiment", where),
    )


def load_config(path: str | Path) -> WebhookConfig:
    """Read and validate ``gates.yaml``; :class:`WebhookConfigError` names the file and key."""
    source = Path(path).expanduser().resolve()
    data = read_yaml_file(source, "config", WebhookConfigError)
    return parse_webhook_config(data, source)
