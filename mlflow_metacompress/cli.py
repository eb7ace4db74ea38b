"""The one ``metacompress`` command line.

Each package owns its subcommands in its ``cli.py``: an ``add_<name>(subparsers)``
function, listed in :data:`SUBCOMMANDS`, adds a subparser whose ``func`` default is a
handler ``(args) -> exit code``. Handlers import heavy modules lazily so
``metacompress --help`` stays fast.

Subcommands: ``evaluate``, ``attack``, ``distill``, ``gate``, ``policies``, ``report``, ``compare``,
``webhooks`` (``serve``, ``install``, ``uninstall``).

Exit codes: 0 success (for ``gate``: the version passed), 1 the gate failed or refused,
2 usage or input error (a missing or malformed file, bad JSON, an unknown name, an
optional dependency that is not installed, named with its extra), reported in one line.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence

logger = logging.getLogger(__name__)

Handler = Callable[[argparse.Namespace], int]


# (module, function): each package owns its subcommands; the function adds one subparser
# whose ``func`` default is the handler.
SUBCOMMANDS: list[tuple[str, str]] = [
    ("mlflow_metacompress.evaluation.cli", "add_evaluate"),
    ("mlflow_metacompress.attacks.cli", "add_attack"),
    ("mlflow_metacompress.distill.cli", "add_distill"),
    ("mlflow_metacompress.gates.cli", "add_gate"),
    ("mlflow_metacompress.gates.cli", "add_policies"),
    ("mlflow_metacompress.report.cli", "add_report"),
    ("mlflow_metacompress.report.cli", "add_compare"),
    ("mlflow_metacompress.webhooks.cli", "add_webhooks"),
]


# the commands that load models (their library bars are switched off when output is not a terminal)
MODEL_COMMANDS = frozenset({"evaluate", "attack", "distill", "gate"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="metacompress",
        description=(
            "Behavioural fidelity of distilled models of code (MetaCompress, arXiv 2511.05476): "
            "registry gates and tools."
        ),
    )
    parser.add_argument(
        "--tracking-uri",
        default=None,
        help="MLflow tracking (and registry) URI; default: MLFLOW_TRACKING_URI or MLflow's default",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module, function in SUBCOMMANDS:
        getattr(importlib.import_module(module), function)(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.tracking_uri:
        import mlflow

        mlflow.set_tracking_uri(args.tracking_uri)
        mlflow.set_registry_uri(args.tracking_uri)
    handler: Handler = args.func
    from .heartbeat import on_terminal
    from .quiet import quiet_libraries

    try:
        with quiet_libraries(bars=on_terminal(), models=args.command in MODEL_COMMANDS):  # no bars in a file
            return handler(args)
    except Exception as exc:  # report input problems in one line, not a traceback
        from mlflow.exceptions import MlflowException

        from ._optional import MissingExtraError

        if isinstance(exc, (ValueError, KeyError, OSError, TypeError, MlflowException, MissingExtraError)):
            message = exc.message if isinstance(exc, MlflowException) else exc
            if isinstance(exc, KeyError) and exc.args:
                message = exc.args[0]  # str(KeyError) would quote the message
            print(f"metacompress {args.command}: error: {' '.join(str(message).split())}", file=sys.stderr)
            if args.verbose:
                logger.exception("details")
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
