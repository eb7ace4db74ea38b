"""Re-render a reproduction page from its stored JSON alone (no MLflow store, no training).

The study of MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) stores every seed's value
and within-run interval in ``reproduction/<dataset>.json``. :func:`rerender` rebuilds the
``(method, seed)`` results from it and applies the current verdict rules
(:mod:`.judge`). What an older JSON did not store is said, not invented: the
rates' denominators are recovered as the smallest common denominator of the stored
fractions (:func:`.judge.denominators`), the attacks' flip counts from the stored
ratios (:func:`.judge.teacher_flips`), and a teacher disagreement with CodeBERT
that was not stored is "not recorded".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..statistics import interval_key
from .judge import denominators
from .seeds import finite
from .table import RATES, attack_rows_of, headline, summarise, write_pages

logger = logging.getLogger(__name__)

# the paired bootstrap's resamples before the JSON recorded them (study.table's default then)
OLD_PAIRED_RESAMPLES = 2000


class _Config:
    """The few config fields :func:`.table.attack_rows_of` reads, from the JSON."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.eval_rows = int(config["eval_rows"])
        self.attack_rows = config.get("attack_rows")
        self.attack_max_samples = config.get("attack_max_samples")


def results_from_report(report: dict[str, Any]) -> dict[tuple[str, int], dict[str, float]]:
    """``(method, seed)`` → metrics, as :func:`.stages.collect` would have returned them,
    from a stored report (with ``n/<metric>`` as stored, or recovered for rates of an older JSON
    that have a common denominator)."""
    s = report["summary"]
    out: dict[tuple[str, int], dict[str, float]] = {}
    for method, rows in s["methods"].items():
        for metric, r in rows.items():
            if not isinstance(r, dict) or "values" not in r:
                continue
            n = None
            if metric in RATES and "n" not in r:  # older JSON: the same rows for every method, one denominator
                n = denominators([v for m in s["methods"].values() for v in m.get(metric, {}).get("values", [])])
            for i, seed in enumerate(s["seeds"]):
                v = r["values"][i]
                if v is None:
                    continue
                got = out.setdefault((method, seed), {})
                got[metric] = float(v)
                lo, hi = (r.get("within_run") or [[None, None]] * len(s["seeds"]))[i]
                if lo is not None and hi is not None:
                    got[interval_key(metric, "low")], got[interval_key(metric, "high")] = float(lo), float(hi)
                stored_n = finite([(r.get("n") or [None] * len(s["seeds"]))[i]])  # as stored (NaN: none)
                if stored_n:
                    got[f"n/{metric}"] = stored_n[0]
                elif n is not None:
                    got[f"n/{metric}"] = float(n)
    return out


def rerender(path: str | Path, output: str | Path | None = None) -> dict[str, Any]:
    """Apply the current verdict rules to the stored ``path`` and rewrite its JSON and page
    (into ``output``, default: the JSON's folder)."""
    path = Path(path)
    old = json.loads(path.read_text(encoding="utf-8"))
    cfg = old["config"]
    results = results_from_report(old)
    rows = attack_rows_of(_Config(cfg))
    s = old["summary"]
    summary = summarise(results, cfg["methods"], s["seeds"], cfg["attacks"], rows, s.get("row_counts"))
    f, before = summary["fidelity"], s.get("fidelity", {})
    if f.get("available") and before.get("per_seed_bootstrap"):
        f["per_seed_bootstrap"] = {}
        for seed, bs in before["per_seed_bootstrap"].items():
            b = int(bs.get("resamples", OLD_PAIRED_RESAMPLES))
            # two-sided: the smallest p-value B resamples give is 2/(B+1)
            f["per_seed_bootstrap"][seed] = {**bs, "pvalue": max(float(bs["pvalue"]), 2 / (b + 1)), "resamples": b}
    teacher = {k: v for k, v in old["teacher"].items() if k != "codebert_disagreement" or v is not None}
    report = {
        **{k: v for k, v in old.items() if k not in ("summary", "headline", "conclusions")},
        "config": {**cfg, "attack_rows": rows},
        "teacher": teacher,
        "summary": summary,
        "headline": headline(summary),
    }
    write_pages(report, output or path.parent)
    logger.info("re-rendered %s under the current verdict rules", path)
    return report
