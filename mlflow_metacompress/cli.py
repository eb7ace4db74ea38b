"""The one ``metacompress`` command line.

Each package owns its subcommands in its ``cli.py``: an ``add_<name>(subparsers)``
function adds a subparser whose ``func`` default is a handler ``(args) -> exit code``.
This module registers them (:func:`subcommands`); the packages never import it: what
commands share (the root options, the runner, one-line errors) is in
:mod:`mlflow_metacompress.cli_common`. Handlers import heavy modules lazily so
``metacompress --help`` stays fast.

Subcommands: ``evaluate``, ``attack``, ``distill``, ``gate``, ``policies``, ``report``, ``compare``,
``webhooks`` (``serve``, ``install``, ``uninstall``).

Exit codes: 0 success (for ``gate``: the version passed), 1 the gate failed or refused,
2 usage or input error (a missing or malformed file, bad JSON, an unknown name, an
optional dependency that is not installed, named with its extra), reported in one line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .cli_common import MODEL_COMMANDS, Handler, Register, root_parser, run_command

__all__ = ["MODEL_COMMANDS", "Handler", "build_parser", "main", "subcommands"]


def subcommands() -> list[Register]:
    """Every package's ``add_<name>``, in the order ``metacompress --help`` lists them."""
    from .attacks.cli import add_attack
    from .distill.cli import add_distill
    from .evaluation.cli import add_evaluate
    from .gates.cli import add_gate, add_policies
    from .report.cli import add_compare, add_report
    from .webhooks.cli import add_webhooks

    return [add_evaluate, add_attack, add_distill, add_gate, add_policies, add_report, add_compare, add_webhooks]


def build_parser() -> argparse.ArgumentParser:
    return root_parser(subcommands())


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
