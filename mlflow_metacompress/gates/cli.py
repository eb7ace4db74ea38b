"""``metacompress gate`` and ``metacompress policies``.

Exit codes: 0 the version passed, 1 the gate failed or refused the promotion (a staler
evaluation, an unfinished or half-written evaluation run, another promotion holding the
lock too long), 2 usage or input error (a policy path that is a directory, missing,
unreadable, not UTF-8, not valid YAML or with a duplicated key; a malformed version such
as ``"1 "``; an unknown model, version or run; bad ``--evaluator-config``). Errors are one
line on stderr, never a traceback (``-v`` logs the details).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

logger = logging.getLogger(__name__)


def _one_line(command: str, exc: BaseException) -> str:
    message = getattr(exc, "message", None) or (exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc))
    message = message or type(exc).__name__
    return f"metacompress {command}: error: {' '.join(str(message).split())}"


def _input_errors() -> tuple[type[BaseException], ...]:
    from mlflow.exceptions import MlflowException

    return (ValueError, KeyError, TypeError, OSError, MlflowException)


def _guarded(command: str, args: argparse.Namespace, body: Callable[[argparse.Namespace], int]) -> int:
    """Run ``body``; an input error becomes exit 2 with one line on stderr."""
    from .lock import PromotionLockError

    try:
        return body(args)
    except PromotionLockError as exc:  # not an input error, and not a pass: refused
        print(_one_line(command, exc), file=sys.stderr)
        return 1
    except _input_errors() as exc:
        print(_one_line(command, exc), file=sys.stderr)
        logger.info("details", exc_info=True)  # shown with -v
        return 2


def add_gate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate",
        help="judge a registered model version with a gate policy and move its alias if it passes",
        description="Evaluate (or read an evaluation run) and promote a model version. "
        "Give --data to evaluate against the teacher in the version's "
        "'metacompress.teacher' tag, or --evaluation-run-id to reuse an evaluation.",
    )
    p.add_argument("--model-name", required=True, help="registered model name")
    p.add_argument("--version", required=True, help="model version to judge")
    p.add_argument(
        "--policy",
        default="standard",
        help="preset (safety_critical, standard, lenient, quick) or path to a policy YAML (default: standard)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="evaluation data (.jsonl, .json, .csv, .parquet)")
    src.add_argument("--evaluation-run-id", help="id of a run holding metacompress metrics")
    p.add_argument("--targets", default="target", help="label column of --data (default: target)")
    p.add_argument(
        "--evaluator-config", default="{}", help='extra evaluator_config as JSON, e.g. \'{"transforms": "all"}\''
    )
    p.add_argument("--alias", default="champion", help="alias to move when the version passes (default: champion)")
    p.add_argument("--force", action="store_true", help="move the alias even over a more recent passing verdict")
    p.add_argument("--stage", default=None, help="also perform the legacy stage transition (e.g. Production)")
    p.add_argument("--json", action="store_true", help="print the decision as JSON")
    p.set_defaults(func=run_gate)


def run_gate(args: argparse.Namespace) -> int:
    return _guarded("gate", args, _gate)


def _gate(args: argparse.Namespace) -> int:
    from ..cli_common import json_object
    from ..stores import existing_store
    from .decision import PromotionRefusedError, decision_json
    from .gate import gate_version
    from .policy import load_policy
    from .promotion import promote, version_text

    config = json_object(args.evaluator_config)  # may set "teacher": it overrides the version's tag
    version_text(args.version)  # "1 " or "x": exit 2 before anything runs
    existing_store()  # the wrong folder: name the tracking URI instead of creating an empty mlflow.db
    common = dict(policy=load_policy(args.policy), alias=args.alias or None, force=args.force, stage=args.stage)
    try:
        if args.data:
            decision = gate_version(
                args.model_name, args.version, args.data, targets=args.targets, evaluator_config=config, **common
            )
        else:
            decision = promote(args.model_name, args.version, args.evaluation_run_id, **common)
    except PromotionRefusedError as exc:
        print(decision_json(exc.decision) if args.json else f"{exc.decision.summary()}\nrefused: {exc}")
        return 1
    print(decision_json(decision) if args.json else decision.summary())
    return 0 if decision.passed else 1


def add_policies(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("policies", help="show the preset gate policies (or the given policy files)")
    p.add_argument("names", nargs="*", help="presets or YAML paths (default: every preset)")
    p.set_defaults(func=run_policies)


def run_policies(args: argparse.Namespace) -> int:
    return _guarded("policies", args, _policies)


def _policies(args: argparse.Namespace) -> int:
    from .policy import PRESETS, load_policy

    for name in args.names or PRESETS:
        print(load_policy(name).describe())
    return 0
