"""``metacompress report RUN_ID`` and ``metacompress compare RUN_ID...``: the HTML report of
an evaluation rebuilt from its logged artifacts (no model is loaded), and several students
of one teacher side by side. Parsers import nothing heavy."""

from __future__ import annotations

import argparse


def add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild an evaluation's report.html from its run (no model needed)",
        description="Write the self-contained HTML report of a metacompress evaluation run from its logged "
        "artifacts (metacompress/summary.json, per_sample.parquet, attacks/*.parquet).",
    )
    p.add_argument("run_id", metavar="RUN_ID", help="the evaluation run")
    p.add_argument("--out", default="report.html", help="output file (default: report.html)")
    p.set_defaults(func=run_report)


def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="several students of one teacher side by side, with intervals (HTML)",
        description="Compare metacompress evaluation runs of students evaluated against the same teacher on "
        "the same data; runs with different teachers or data digests are refused (exit code 2).",
    )
    p.add_argument("run_ids", metavar="RUN_ID", nargs="+", help="evaluation runs")
    p.add_argument("--out", default="compare.html", help="output file (default: compare.html)")
    p.set_defaults(func=run_compare)


def run_report(args: argparse.Namespace) -> int:
    from .render import write_run_report

    print(write_run_report(args.run_id, args.out))
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from .compare import write_comparison_html

    print(write_comparison_html(args.run_ids, args.out))
    return 0
