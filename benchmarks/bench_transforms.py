"""Benchmark the transformation library: samples/s per language, applicable rate per
transformation, and the tree-sitter parse-failure rate (issue 3, "Speed").

Usage::

    python benchmarks/bench_transforms.py [--n 1000] [--data ../shared/data]

C uses Devign's test split, Java a BigCloneBench sample, Python top-level functions and
classes of pure-Python standard-library modules. Prints one table per language.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import random
import time
from pathlib import Path

from mlflow_metacompress.transforms import TransformStatus, list_transforms, transform_many

PY_MODULES = ("textwrap", "difflib", "shlex", "fractions", "calendar", "ipaddress", "pprint", "configparser",
              "argparse", "tokenize", "csv", "json.encoder", "json.decoder", "string", "heapq", "bisect",
              "statistics", "colorsys", "random", "base64", "glob", "fnmatch", "gettext",
              "dataclasses", "email.utils", "urllib.parse", "html", "locale", "_pydecimal")


def load_jsonl(path: Path, n: int) -> list[str]:
    rows = [json.loads(line)["func"] for line in path.read_text().splitlines() if line.strip()]
    return rows if n >= len(rows) else random.Random(20240607).sample(rows, n)


def python_corpus(n: int) -> list[str]:
    out = []
    for name in PY_MODULES:
        text = Path(importlib.util.find_spec(name).origin).read_text()
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.decorator_list:
                out.append(ast.get_source_segment(text, node))
    return out[:n]


def bench(codes: list[str], language: str) -> None:
    names = list_transforms(language)
    start = time.perf_counter()
    results = transform_many(codes, names, language, seed=0)
    elapsed = time.perf_counter() - start
    failures = sum(r.status is TransformStatus.PARSE_ERROR for r in results[names[0]])
    parsed = len(codes) - failures
    print(f"\n## {language}: {len(codes)} samples, {failures} parse failures "
          f"({100 * failures / max(len(codes), 1):.1f}%), all {len(names)} transformations in {elapsed:.1f} s "
          f"= {len(codes) / elapsed:.0f} samples/s")
    print(f"{'transformation':30s} {'applicable/parsed':>18s} {'applicable/all':>15s}")
    for name in names:
        changed = sum(r.status is TransformStatus.CHANGED for r in results[name])
        print(f"{name:30s} {100 * changed / max(parsed, 1):17.1f}% {100 * changed / max(len(codes), 1):14.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="samples per language (default 1000)")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    devign, bcb = args.data / "devign" / "test.jsonl", args.data / "bigclonebench" / "data.jsonl"
    if devign.exists():
        bench(load_jsonl(devign, args.n), "c")
    else:
        print(f"skipping C: {devign} not found")
    if bcb.exists():
        bench(load_jsonl(bcb, args.n), "java")
    else:
        print(f"skipping Java: {bcb} not found")
    bench(python_corpus(args.n), "python")


if __name__ == "__main__":
    main()
