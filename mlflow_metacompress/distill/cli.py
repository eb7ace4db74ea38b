"""``metacompress distill {teacher,student,methods} ...`` (``python -m mlflow_metacompress.distill`` is an alias).

``teacher`` fine-tunes and registers a teacher; ``student --method compressor`` distils
and registers a student from a teacher model URI. Both print the result as JSON.
``methods`` lists the distillation methods (one module each in ``distill/methods/``)
with their options and defaults. ``--option KEY=VALUE`` values are Python literals when
they parse (numbers, booleans, lists, dicts), else strings; unknown keys are refused.

Data: without ``--data-dir`` both train on the embedded generated data
(:func:`mlflow_metacompress.data.generators.make_splits`, as the pipeline does:
Juliet-style C functions or C clone pairs, generated, not real, no download);
``--data-dir`` reads a CodeXGLUE folder; ``--hub`` reads CodeXGLUE from the Hugging Face
hub (needs the ``datasets`` extra). Training needs the ``distill`` extra.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict
from typing import Any

logger = logging.getLogger(__name__)


def _common(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--data-dir",
        default=None,
        help="CodeXGLUE folder (task folder or its parent); default: the embedded generated data",
    )
    source.add_argument(
        "--hub",
        action="store_true",
        help='read CodeXGLUE from the Hugging Face hub (the datasets extra: pip install -e ".[datasets]")',
    )
    p.add_argument(
        "--generated-rows",
        type=int,
        default=None,
        help="samples generated when neither --data-dir nor --hub is given "
        "(80/10/10 split; default: the quick profile's)",
    )
    p.add_argument(
        "--task",
        default="devign",
        choices=["devign", "bigclonebench"],
        help="devign (vulnerability) or bigclonebench (clone pairs); default: devign",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-steps", type=int, default=-1, help="stop after this many optimiser steps (-1: no limit)")
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--limit", type=int, default=None, help="use at most this many rows per split")
    p.add_argument("--registered-name", default=None)
    p.add_argument("--experiment", default=None, help="MLflow experiment name")
    p.add_argument("--no-progress", action="store_true")
    hw = p.add_argument_group("devices (Lightning's Trainer settings; see distill/devices.py)")
    hw.add_argument("--accelerator", default="auto", help="auto (a GPU when one is visible), cpu or gpu")
    hw.add_argument(
        "--devices",
        default="1",
        help="processes/GPUs that train (default 1; auto = every visible GPU); >1 runs DDP in spawned ranks",
    )
    hw.add_argument("--strategy", default="auto", help="auto, ddp (run spawned), ddp_spawn or ddp_fork")
    hw.add_argument(
        "--precision",
        default=None,
        help="auto (default, or $METACOMPRESS_PRECISION): bf16-mixed where the CPU has AVX512-BF16/AMX or the "
        "GPU supports bf16, else 32-true; 32-true (or fp32) forces full precision; 16-mixed on an older GPU",
    )
    hw.add_argument(
        "--threads",
        default="auto",
        help="torch threads per process for training, inference and the speed tags; "
        "auto = $METACOMPRESS_THREADS, else the free cores",
    )


def add_distill(subparsers: argparse._SubParsersAction) -> None:
    methods = _method_names()
    description = f"{__doc__}\nDistillation methods: {', '.join(methods)}\n" if methods else __doc__
    parser = subparsers.add_parser(
        "distill",
        help="fine-tune a teacher or distil a student, and register it",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=run)
    sub = parser.add_subparsers(dest="distill_command", required=True, metavar="{teacher,student,methods}")
    t = sub.add_parser("teacher", help="fine-tune and register a teacher")
    _common(t)
    t.add_argument("--init", default="scratch", help="'scratch' (offline), 'minilm', or a model dir / hub id")
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument(
        "--monitor",
        default="val_acc",
        choices=["val_acc", "last"],
        help="keep the best validation-accuracy epoch or the last (confident) one",
    )
    t.add_argument("--pair-mode", default="concat_cls", choices=["concat_cls", "single_sequence", "siamese"])
    t.add_argument("--layers", type=int, default=4)
    t.add_argument("--hidden", type=int, default=256)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--intermediate", type=int, default=1024)
    t.add_argument("--vocab-size", type=int, default=8000)
    s = sub.add_parser("student", help="distil and register a student")
    _common(s)
    s.add_argument(
        "--method",
        default="compressor",
        metavar="{" + ",".join(methods) + "}" if methods else "METHOD",
        help="the distillation method (default: compressor); `metacompress distill methods` lists their options",
    )
    s.add_argument("--teacher", required=True, help="teacher model URI, e.g. models:/metacompress-teacher/1")
    s.add_argument("--size-mb", type=float, default=3.0)
    # shortcuts for options; None = the method's default (its Options dataclass)
    s.add_argument("--population", type=int, default=None, help="search population (option population)")
    s.add_argument("--generations", type=int, default=None, help="search generations (option generations)")
    s.add_argument("--temperature", type=float, default=None, help="KD temperature (default: the method's own)")
    s.add_argument("--lr", type=float, default=None, help="student learning rate (option lr)")
    s.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="method option, repeatable (e.g. probes=6 for avatar/morph/fidelity; pair_mode for clones)",
    )
    s.add_argument("--cache-dir", default=None, help="where teacher soft labels are cached")
    sub.add_parser("methods", help="list the distillation methods and their options (JSON)")


def _method_names() -> list[str]:
    """The discovered methods for ``--method``'s help (method modules import no torch);
    empty when discovery fails, so a broken method module never breaks the parser
    (running the command then names the module)."""
    from .discovery import list_methods

    try:
        return list_methods()
    except Exception:  # reported by get_method when the command runs
        return []


def main(argv: list[str] | None = None) -> int:
    """``python -m mlflow_metacompress.distill``: the same as ``metacompress distill``."""
    from ..cli_common import alias_main

    return alias_main(add_distill, "distill", argv)


def run(args: argparse.Namespace) -> int:
    """Train what ``args`` describe and print the result as JSON."""
    from .cli_jobs import load_data, student_job, teacher_job, trainer_settings

    if args.distill_command == "methods":
        json.dump(describe_methods(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    logging.getLogger().setLevel(logging.INFO)
    extra: dict[str, Any] = {}
    if args.distill_command == "student":
        from .discovery import get_method

        shortcuts = {
            "population": args.population,
            "generations": args.generations,
            "temperature": args.temperature,
            "lr": args.lr,
        }
        extra = {k: v for k, v in shortcuts.items() if v is not None}
        extra.update(parse_option(item) for item in args.option)
        get_method(args.method).parse(extra)  # unknown methods and options fail before any data is read or made
    from .._optional import require

    require("torch", "distillation", "distill")
    require("lightning", "distillation", "distill")
    trainer = trainer_settings(args)
    trainer.check()  # a bad --devices/--strategy/--precision fails before any data is read or made
    data = load_data(args)
    import mlflow

    if args.experiment:
        mlflow.set_experiment(args.experiment)
    if args.distill_command == "teacher":
        from .teacher import run_teacher_job

        result = run_teacher_job(teacher_job(args, data, trainer))
    else:
        from .runner import run_student_job

        result = run_student_job(student_job(args, data, trainer, extra))
    json.dump(asdict(result), sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return 0


def describe_methods() -> dict[str, dict[str, object]]:
    """Every discovered method: its module, summary and options with their defaults."""
    from dataclasses import fields

    from .discovery import discover

    return {
        name: {"module": m.module, "summary": m.summary, "options": {f.name: f.default for f in fields(m.options)}}
        for name, m in sorted(discover().items())
    }


def parse_option(item: str) -> tuple[str, object]:
    """``KEY=VALUE`` as ``(key, value)``; exits with a message naming a malformed item."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise SystemExit(f"--option expects KEY=VALUE, got {item!r}")
    return key, _literal(value)


def _literal(value: str) -> object:
    """``--option`` values: Python literals when they parse (numbers, booleans, lists), else strings."""
    import ast

    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value
