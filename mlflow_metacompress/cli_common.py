"""What every ``metacompress`` command shares, below the packages that own subcommands and
the top-level :mod:`mlflow_metacompress.cli` that registers them: the root parser's
options, the runner (logging, tracking URI, quiet libraries, one-line errors and exit
codes) and small argument helpers.

A package's ``cli.py`` defines ``add_<name>(subparsers)`` and never imports the top-level
CLI; its ``python -m`` alias runs its own subcommand through :func:`alias_main`.

Exit codes: 0 success (for ``gate``: the version passed), 1 the gate failed or refused,
2 usage or input error (a missing or malformed file, bad JSON, an unknown name, an
optional dependency that is not installed, named with its extra), reported in one line.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger("mlflow_metacompress.cli")

Handler = Callable[[argparse.Namespace], int]
Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

# the commands that load models (their library bars are switched off when output is not a terminal)
MODEL_COMMANDS = frozenset({"evaluate", "attack", "distill", "gate"})

__all__ = ["MODEL_COMMANDS", "Handler", "Register", "alias_main", "json_object", "root_parser", "run_command"]


def root_parser(registrars: Sequence[Register] = ()) -> argparse.ArgumentParser:
    """The ``metacompress`` parser with its global options and the subcommands that
    ``registrars`` add (each ``add_<name>(subparsers)``; the subparser's ``func`` default
    is the handler ``(args) -> exit code``)."""
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
    for register in registrars:
        register(sub)
    return parser


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` with ``parser`` and run the chosen handler; input problems become one
    line on stderr and exit code 2 (the traceback with ``-v``)."""
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


def alias_main(register: Register, command: str, argv: Sequence[str] | None = None) -> int:
    """``python -m mlflow_metacompress.<package>``: the same as ``metacompress <command>``,
    with the package's own subcommand only (``argv`` default: ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(root_parser([register]), [command, *args])


def json_object(text: str, option: str = "--evaluator-config") -> dict[str, Any]:
    """``text`` parsed as a JSON object; ``ValueError`` naming ``option`` for invalid JSON or a
    non-object (shared by ``metacompress evaluate`` and ``metacompress gate``)."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{option} is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ValueError(f"{option} must be a JSON object, got {type(config).__name__}")
    return config
