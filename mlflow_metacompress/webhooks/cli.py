"""``metacompress webhooks serve|install|uninstall`` (registry-driven MetaCompress gates).

Exit codes: 0 success, 2 a usage, config or server error reported in one line.
"""

from __future__ import annotations

import argparse
import sys

from .limits import HttpLimits

_LIMITS = HttpLimits()


def add_webhooks(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "webhooks",
        help="a webhook service that gates new registry versions and guards the alias",
        description="Receive MLflow registry webhooks: evaluate every new version of a configured "
        "model, promote it when it passes, and undo a hand-set alias on a version "
        "that did not pass.",
    )
    actions = p.add_subparsers(dest="webhooks_command", required=True, metavar="ACTION")
    serve = actions.add_parser("serve", help="run the webhook service (POST /webhook, GET /health)")
    serve.add_argument("--config", required=True, help="gates.yaml")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free port)")
    serve.add_argument(
        "--queue-only",
        action="store_true",
        help="accept and queue deliveries but run no job (a later normal start drains the queue)",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=_LIMITS.request_timeout_s,
        metavar="SECONDS",
        help="a connection must deliver a whole request (headers and body) within this time "
        f"(default {_LIMITS.request_timeout_s:g})",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=_LIMITS.idle_timeout_s,
        metavar="SECONDS",
        help="close a connection that sends nothing for this long while a request is awaited "
        f"(default {_LIMITS.idle_timeout_s:g})",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=_LIMITS.max_connections,
        metavar="N",
        help="open connections at most; past it the one that waited longest for its request "
        f"is closed (default {_LIMITS.max_connections}, lowered to fit the open-file limit)",
    )
    serve.set_defaults(func=_serve)
    install = actions.add_parser("install", help="create or update the webhook on the tracking server")
    install.add_argument("--config", required=True, help="gates.yaml")
    install.add_argument("--url", required=True, help="the service's URL, e.g. http://gates.internal:8765/webhook")
    install.set_defaults(func=_install)
    uninstall = actions.add_parser("uninstall", help="delete the webhook from the tracking server")
    uninstall.add_argument("--config", required=True, help="gates.yaml")
    uninstall.set_defaults(func=_uninstall)


def _guarded(args: argparse.Namespace, body) -> int:
    from mlflow.exceptions import MlflowException

    try:
        return body(args)
    except (ValueError, OSError, KeyError, MlflowException) as exc:
        message = getattr(exc, "message", None) or str(exc)
        print(
            f"metacompress webhooks {args.webhooks_command}: error: {' '.join(str(message).split())}", file=sys.stderr
        )
        return 2


def _serve(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        from .config import load_config
        from .service import serve

        for flag, value in (
            ("--request-timeout", args.request_timeout),
            ("--idle-timeout", args.idle_timeout),
            ("--max-connections", args.max_connections),
        ):
            if not value > 0:
                raise ValueError(f"{flag}: must be positive, got {value:g}")
        limits = HttpLimits(args.request_timeout, args.idle_timeout, args.max_connections)
        serve(load_config(args.config), host=args.host, port=args.port, queue_only=args.queue_only, limits=limits)
        return 0

    return _guarded(args, body)


def _install(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        from .config import load_config
        from .install import install

        hook = install(load_config(args.config), args.url)
        print(f"webhook {hook.name} ({hook.webhook_id}) → {hook.url}: {', '.join(map(str, hook.events))}")
        return 0

    return _guarded(args, body)


def _uninstall(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        from .config import load_config
        from .install import uninstall

        config = load_config(args.config)
        n = uninstall(config)
        print(f"deleted {n} webhook(s) named {config.webhook_name}")
        return 0

    return _guarded(args, body)
