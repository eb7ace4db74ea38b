"""Pool ``bench_deviation_rates.py`` records over disjoint row ranges (issue 43).

A record holds, per row, whether teacher and student agreed at the start and the paired
queries to the first verified deviation. Records of the same model and search on disjoint
rows (e.g. pairs 0–199 and 600–999, none used to choose a setting) concatenate into one
sample; this prints each search's rate at each budget (Clopper–Pearson), the ratio of rows
found by ``--search`` to ``--against`` and the difference of their shares of agreeing rows
(which still judges "more rows than" where the baseline found none), paired over the pooled
rows (row bootstrap, B = 2,000), as ``bench_deviation_rates.py`` does for one range.
``--first N`` cuts every record to its first N rows (a baseline run on fewer rows).

Usage::

    python benchmarks/pool_deviation_records.py --budgets 10,30 \\
        --search records/219d….json,records/abcd….json \\
        --against records/2062….json,records/ef01….json

The i-th file of ``--search`` and of ``--against`` must cover the same rows (same model,
teacher, offset and row count); that is checked. A record does not store its budget: pass
only records run to at least the largest of ``--budgets``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from bench_deviation_rates import clopper_pearson, paired_difference, paired_ratio


def load(paths: list[str], first: int | None = None) -> list[dict[str, Any]]:
    """The records at ``paths``, each cut to its first ``first`` rows when given."""
    records = [json.loads(Path(p).read_text()) for p in paths]
    if first is not None:
        for path, r in zip(paths, records, strict=True):
            if len(r["agree"]) < first:
                raise ValueError(f"{path} holds {len(r['agree'])} rows, fewer than --first {first}")
            r["agree"], r["first"] = r["agree"][:first], r["first"][:first]
    return records


def pooled(records: list[dict[str, Any]], budgets: tuple[int, ...]) -> dict[Any, np.ndarray]:
    """Concatenate the per-row records; ``out[b]`` marks agreeing rows found within ``b``."""
    agree = np.concatenate([np.array(r["agree"], bool) for r in records])
    first = np.concatenate([np.array([10**9 if q is None else q for q in r["first"]], float) for r in records])
    out: dict[Any, np.ndarray] = {"agree": agree, "first": first}
    for b in budgets:
        out[b] = agree & (first <= b)
    return out


def check_pairs(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    if len(a) != len(b):
        raise ValueError(f"--search has {len(a)} records, --against {len(b)}: they must pair up")
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        key = ("uri", "offset")
        same = [x.get(k, 0) for k in key] == [y.get(k, 0) for k in key] and len(x["agree"]) == len(y["agree"])
        if not same or x["agree"] != y["agree"]:
            raise ValueError(f"record {i}: --search and --against do not cover the same rows of the same model")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--search", required=True, help="comma-separated records of the search judged")
    p.add_argument("--against", required=True, help="comma-separated records of the baseline, same rows in order")
    p.add_argument("--budgets", default="10,30")
    p.add_argument("--first", type=int, help="only the first N rows of each record (a baseline run on fewer rows)")
    args = p.parse_args()
    budgets = tuple(int(b) for b in args.budgets.split(","))
    a, b = load(args.search.split(","), args.first), load(args.against.split(","), args.first)
    check_pairs(a, b)
    d, o = pooled(a, budgets), pooled(b, budgets)
    n, agreeing = len(d["agree"]), int(d["agree"].sum())
    print(f"{n} rows pooled from {len(a)} record(s), {agreeing} agreeing; {a[0]['search']} against {b[0]['search']}")
    for budget in budgets:
        cells = []
        for name, r in ((a[0]["search"], d), (b[0]["search"], o)):
            k = int(r[budget].sum())
            lo, hi = clopper_pearson(k, agreeing)
            cells.append(f"{name} {k} ({k / agreeing:.1%} [{lo:.1%}, {hi:.1%}])")
        found = paired_ratio(d, o, budget)
        if found is None:
            cells.append("no ratio (the baseline found none)")
        else:
            cells.append("ratio {:.2f} [{:.2f}, {:.2f}]".format(*found))
        cells.append("difference {:+.1%} [{:+.1%}, {:+.1%}]".format(*paired_difference(d, o, budget)))
        print(f"- @{budget}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
