"""``metacompress attack``: attack a logged model on a data file and print a
TextAttack-style summary table (``python -m mlflow_metacompress.attacks`` is an alias).

Example::

    metacompress attack --model models:/student/1 \\
        --data test.jsonl --attack alert_yang_2022 --budget 500 --language c \\
        --code-columns func --label-column target --limit 100
"""

from __future__ import annotations

import argparse

from .catalog import list_attacks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``attack`` options."""
    parser.add_argument("--model", required=True, help="model URI (models:/name/1, runs:/id/model, a local path)")
    parser.add_argument("--data", required=True, help="a .jsonl, .json, .csv or .parquet file")
    parser.add_argument("--attack", required=True, choices=list_attacks())
    parser.add_argument("--budget", type=int, default=500, help="maximum queries per sample (default 500)")
    parser.add_argument("--language", default="auto", choices=["auto", "c", "java", "python"])
    parser.add_argument(
        "--code-columns", default="func", help="comma-separated code column(s); only the first is attacked"
    )
    parser.add_argument("--label-column", default="target")
    parser.add_argument("--limit", type=int, default=None, help="attack only the first N rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mlm", default=None, help="local fill-mask model directory for ALERT's substitutes")
    parser.add_argument("--output", default=None, help="write the per-sample table to this .parquet file")
    parser.add_argument(
        "--inference",
        default="torch",
        choices=["torch", "onnxruntime"],
        help="backend answering the queries: torch (default) or onnxruntime (the classifier exported once, cached); "
        "an mlflow.onnx model always runs on ONNX Runtime",
    )


def add_attack(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "attack",
        help="attack a logged model with a black-box identifier attack and print a summary",
        description=(
            "Attack a logged model on a data file with a black-box identifier attack and print a "
            "TextAttack-style summary table (python -m mlflow_metacompress.attacks is an alias)."
        ),
    )
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the attack described by ``args``; exit code 0."""
    from ..data.tables import read_table
    from .runner import run_attack

    df = read_table(args.data)
    if args.limit is not None:
        df = df.head(args.limit)
    columns = [c.strip() for c in args.code_columns.split(",") if c.strip()]
    if args.label_column not in df.columns:
        raise ValueError(f"label column {args.label_column!r} not in {args.data}; it has {list(df.columns)}")
    report = run_attack(
        args.attack,
        args.model,
        df,
        columns,
        df[args.label_column].to_numpy(),
        args.language,
        budget=args.budget,
        seed=args.seed,
        mlm=args.mlm,
        inference=args.inference,
    )
    print(report.summary())
    if args.output:
        report.table().to_parquet(args.output)
        print(f"per-sample results written to {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m mlflow_metacompress.attacks``: the same as ``metacompress attack``."""
    from ..cli_common import alias_main

    return alias_main(add_attack, "attack", argv)
