"""Benchmark the transformation library: samples/s per language, applicable rate per
transformation, and the tree-sitter parse-failure rate (issue 3, "Speed").

Usage::

    python benchmarks/bench_transforms.py [--n 1000] [--data ../shared/data]
    python benchmarks/bench_transforms.py --stress   # large and deep inputs (issue 12)
    python benchmarks/bench_transforms.py --compare HEAD~3 [--n 1000] [--rounds 3]

``--compare REF`` exports the package at git ``REF`` (``git archive``) into a temporary
folder and times ``transform_many`` with all C transformations over the same Devign
functions, alternating old and new in fresh subprocesses (``--rounds`` each, best time
kept), then prints both throughputs, their ratio and how many outputs differ. Times are
CPU seconds of the worker process (``time.process_time``), so other load on a shared
machine disturbs the ratio less than wall-clock time would. By default each worker first
imports mlflow, torch and transformers, as the evaluation process that calls
``transform_many`` has (about 500,000 Python objects, which the cyclic garbage collector
scans); ``--heap bare`` times a bare interpreter instead.

``--stress`` times one sample at a time with the per-sample limits raised: rename_variables
on a ~1 MB C function, and every transformation on ``if (a) {`` nested 4,000 deep (C, Java)
and on mixed if/for/while nesting; it also shows that the default limits skip them.

C uses Devign's test split, Java a BigCloneBench sample, Python top-level functions and
classes of pure-Python standard-library modules. Prints one table per language.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import pickle
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from mlflow_metacompress.transforms import (
    TransformLimits,
    TransformStatus,
    list_transforms,
    transform,
    transform_many,
)

PY_MODULES = (
    "textwrap",
    "difflib",
    "shlex",
    "fractions",
    "calendar",
    "ipaddress",
    "pprint",
    "configparser",
    "argparse",
    "tokenize",
    "csv",
    "json.encoder",
    "json.decoder",
    "string",
    "heapq",
    "bisect",
    "statistics",
    "colorsys",
    "random",
    "base64",
    "glob",
    "fnmatch",
    "gettext",
    "dataclasses",
    "email.utils",
    "urllib.parse",
    "html",
    "locale",
    "_pydecimal",
)


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
    print(
        f"\n## {language}: {len(codes)} samples, {failures} parse failures "
        f"({100 * failures / max(len(codes), 1):.1f}%), all {len(names)} transformations in {elapsed:.1f} s "
        f"= {len(codes) / elapsed:.0f} samples/s"
    )
    print(f"{'transformation':30s} {'applicable/parsed':>18s} {'applicable/all':>15s}")
    for name in names:
        changed = sum(r.status is TransformStatus.CHANGED for r in results[name])
        print(f"{name:30s} {100 * changed / max(parsed, 1):17.1f}% {100 * changed / max(len(codes), 1):14.1f}%")


def big_c(target_bytes: int = 1_000_000) -> str:
    """One C function of about ``target_bytes`` bytes with ~12,000 locals."""
    lines, size, i = ["int big(int n) {"], 20, 0
    while size < target_bytes:
        line = f"    int v{i} = n + {i % 97}; if (v{i} > {i % 13}) {{ n += v{i} * 2; }} else {{ n -= v{i}; }}"
        lines.append(line)
        size, i = size + len(line) + 1, i + 1
    return "\n".join(lines + ["    for (int k = 0; k < n; k++) { n--; }", "    return n;", "}"]) + "\n"


def deep_if(depth: int, language: str) -> str:
    body = "if (a) {\n" * depth + "a = a + 1;\n" + "}\n" * depth
    return (
        f"int f(int a) {{\n{body}return a;\n}}\n"
        if language == "c"
        else f"class T {{ int f(int a) {{\n{body}return a;\n}} }}\n"
    )


def deep_mixed(depth: int) -> str:
    """C nesting that every structural transformation applies to: if/else, for, while."""
    opens, closes = [], []
    for k in range(depth):
        if k % 3 == 0:
            opens.append(f"if (a < {k}) {{")
            closes.append(f"}} else {{ a += {k}; }}")
        elif k % 3 == 1:
            opens.append("for (i = 0; i < a; i++) {")
            closes.append("}")
        else:
            opens.append(f"while (a > {k}) {{ a--;")
            closes.append("}")
    return (
        "int f(int a) {\nint i;\n"
        + "\n".join(opens)
        + "\na = a * 2 + (a - 1);\n"
        + "\n".join(reversed(closes))
        + "\nreturn a;\n}\n"
    )


def stress() -> None:
    raised = TransformLimits(max_bytes=10**8, max_depth=10**6)

    def timed(code: str, name: str, language: str, limits: TransformLimits | None = raised) -> str:
        start = time.perf_counter()
        res = transform(code, name, language, limits=limits)
        reason = res.reason.value if res.reason is not None else "changed"
        return f"{time.perf_counter() - start:6.2f} s  {reason}"

    code = big_c()
    print(f"\n## stress (limits raised to {raised})")
    print(f"rename_variables, C function of {len(code):,} bytes: {timed(code, 'rename_variables', 'c')}")
    print(f"  with the default limits: {timed(code, 'rename_variables', 'c', None)}")
    for language in ("c", "java"):
        code = deep_if(4000, language)
        print(
            f"\n`if (a) {{` x 4,000 ({language}, {len(code):,} bytes); default limits: "
            f"{timed(code, 'swap_if_else', language, None)}"
        )
        for name in list_transforms(language):
            print(f"  {name:30s} {timed(code, name, language)}")
    code = deep_mixed(4000)
    print(f"\nmixed if/else, for, while x 4,000 (c, {len(code):,} bytes)")
    for name in list_transforms("c"):
        print(f"  {name:30s} {timed(code, name, 'c')}")


_WORKER = """
import pickle, sys, time
import mlflow_metacompress
assert mlflow_metacompress.__file__.startswith(sys.argv[4]), mlflow_metacompress.__file__
if sys.argv[3] == "evaluation":  # the modules an evaluation process holds when it transforms
    import mlflow, pandas, torch, transformers, transformers.models.roberta.modeling_roberta  # noqa: F401
from mlflow_metacompress.transforms import list_transforms, transform_many
codes = pickle.load(open(sys.argv[1], "rb"))
names = list_transforms("c")
transform_many(codes[:5], names, "c", seed=0)  # imports and parser creation are not timed
start = time.process_time()
res = transform_many(codes, names, "c", seed=0)
elapsed = time.process_time() - start
out = {n: [(r.code, r.status.value, getattr(r.reason, "value", None)) for r in rs] for n, rs in res.items()}
pickle.dump((elapsed, out), open(sys.argv[2], "wb"))
"""


def _export(ref: str, dest: Path) -> Path:
    """The ``mlflow_metacompress`` package as of git ``ref``, unpacked under ``dest``."""
    repo = Path(__file__).resolve().parents[1]
    tar = dest / "pkg.tar"
    subprocess.run(["git", "-C", str(repo), "archive", "-o", str(tar), ref, "mlflow_metacompress"], check=True)
    with tarfile.open(tar) as fh:
        fh.extractall(dest / "old")
    return dest / "old"


def _timed_run(root: Path, codes_file: Path, out_file: Path, heap: str) -> tuple[float, dict]:
    env = dict(os.environ, PYTHONPATH=str(root))
    # -P and cwd: neither the current folder nor the script's folder may shadow ``root``'s package
    subprocess.run(
        [sys.executable, "-P", "-c", _WORKER, str(codes_file), str(out_file), heap, str(root)],
        env=env,
        check=True,
        cwd=codes_file.parent,
    )
    with open(out_file, "rb") as fh:
        return pickle.load(fh)


def compare(ref: str, codes: list[str], rounds: int, heap: str = "evaluation") -> None:
    """Time ``transform_many`` (all C transformations) at ``ref`` and in this checkout, alternately."""
    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        old_root = _export(ref, Path(tmp))
        codes_file = Path(tmp) / "codes.pkl"
        codes_file.write_bytes(pickle.dumps(codes))
        best = {"old": float("inf"), "new": float("inf")}
        outs: dict[str, dict] = {}
        for k in range(rounds):
            for label, root in (("old", old_root), ("new", here)):
                elapsed, outs[label] = _timed_run(root, codes_file, Path(tmp) / f"{label}.pkl", heap)
                best[label] = min(best[label], elapsed)
                print(f"round {k + 1} {label}: {elapsed:.2f} CPU s = {len(codes) / elapsed:.0f} samples/s", flush=True)
    old, new = outs["old"], outs["new"]
    print(
        f"\n## transform_many, all {len(new)} C transformations, {len(codes)} Devign functions, "
        f"best of {rounds}, {heap} heap"
    )
    print(f"{ref:>12s}: {best['old']:.2f} s = {len(codes) / best['old']:.0f} samples/s")
    print(f"{'this tree':>12s}: {best['new']:.2f} s = {len(codes) / best['new']:.0f} samples/s")
    print(f"ratio new/old throughput: {best['old'] / best['new']:.2f}x")
    total = differ = 0
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name, []), new.get(name, [])
        d = (
            sum(x != y for x, y in zip(a, b, strict=False)) + abs
        )  # the length difference is counted apart(len(a) - len(b))
        total += max(len(a), len(b))
        differ += d
        print(f"  {name:30s} {d:5d} outputs differ")
    print(f"outputs differing: {differ} of {total} ({100 * differ / max(total, 1):.2f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="samples per language (default 1000)")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--stress", action="store_true", help="time large and deeply nested samples instead")
    parser.add_argument("--compare", metavar="REF", help="time against the package at git REF, side by side")
    parser.add_argument("--rounds", type=int, default=3, help="--compare: timed runs of each version")
    parser.add_argument(
        "--heap",
        choices=("evaluation", "bare"),
        default="evaluation",
        help="--compare: import mlflow, torch and transformers first, as in an evaluation "
        "(default), or time in a bare interpreter",
    )
    args = parser.parse_args()
    if args.compare:
        compare(args.compare, load_jsonl(args.data / "devign" / "test.jsonl", args.n), args.rounds, args.heap)
        return
    if args.stress:
        stress()
        return
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
