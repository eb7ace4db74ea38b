"""``metacompress webhooks install|uninstall``: register the gate service with the tracking server.

``install`` creates the webhook named by the config (``webhook_name``, default
``metacompress-gates``) with ``MlflowClient.create_webhook``, subscribed to
``model_version.created``, ``model_version_tag.set`` and ``model_version_alias.created``
and signed with the secret from ``$<secret_env>``; a webhook of that name that already
exists is updated in place (URL, events, secret, status ACTIVE), so installing twice
leaves one webhook. ``uninstall`` deletes every webhook of that name.

The tracking server must be allowed to reach the service: for a loopback or private
address it needs ``MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS=true``, and for an ``http://`` URL
``MLFLOW_WEBHOOK_ALLOWED_SCHEMES=http,https`` in its environment.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .config import WebhookConfig
from .events import EVENTS

if TYPE_CHECKING:
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

DESCRIPTION = "metacompress gates: judge new student versions and guard the gated alias"


def _client(config: WebhookConfig, client: MlflowClient | None) -> MlflowClient:
    if client is not None:
        return client
    import mlflow
    from mlflow import MlflowClient

    uri = config.tracking_uri or mlflow.get_tracking_uri()
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def find_webhooks(client: MlflowClient, name: str) -> list[Any]:
    """Every webhook on the server whose name is ``name``."""
    found, token = [], None
    while True:
        page = client.list_webhooks(page_token=token)
        found += [w for w in page if w.name == name]
        token = page.token
        if not token:
            return found


def install(config: WebhookConfig, url: str, client: MlflowClient | None = None) -> Any:
    """Create or update (by name) the service's webhook; returns the ``Webhook``."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--url must be an http(s) URL of the service's /webhook endpoint, got {url!r}")
    secret = config.secret()  # before any server call
    client = _client(config, client)
    existing = find_webhooks(client, config.webhook_name)
    for extra in existing[1:]:  # one webhook per name: a duplicate would deliver every event twice
        client.delete_webhook(extra.webhook_id)
    if existing:
        hook = client.update_webhook(
            existing[0].webhook_id,
            url=url,
            events=list(EVENTS),
            secret=secret,
            status="ACTIVE",
            description=DESCRIPTION,
        )
        logger.info("updated webhook %s (%s) → %s", config.webhook_name, hook.webhook_id, url)
        return hook
    hook = client.create_webhook(config.webhook_name, url, list(EVENTS), description=DESCRIPTION, secret=secret)
    logger.info("created webhook %s (%s) → %s", config.webhook_name, hook.webhook_id, url)
    return hook


def uninstall(config: WebhookConfig, client: MlflowClient | None = None) -> int:
    """Delete every webhook named ``config.webhook_name``; returns how many were deleted."""
    client = _client(config, client)
    hooks = find_webhooks(client, config.webhook_name)
    for hook in hooks:
        client.delete_webhook(hook.webhook_id)
    return len(hooks)
