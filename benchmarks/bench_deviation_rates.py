"""Deviation rate against paired queries (issue 43, part 7): how many of the rows on which a
student agrees with its teacher have an equivalent variant on which it does not, found
within 10, 30, 100 and 300 paired queries, for each search of
:func:`mlflow_metacompress.attacks.deviation.find_deviations`:

- ``dflare``: Metropolis–Hastings over the rewrites, weighted by each operator's success
  (DFLARE, Tian et al., TOSEM 2023);
- ``random``: random compositions of 1–3 rewrites (the baseline);
- ``mhm`` / ``alert``: MHM (Zhang et al., AAAI 2020) and ALERT (Yang et al., ICSE 2022)
  retargeted to the differential goal (identifier renames only).

Each search runs once per model at the largest budget; the rate at a smaller budget counts
the rows whose first verified deviation came within it. ``dflare`` and ``random`` propose
the same sequence whatever their cap, so this equals a run at that cap; ``mhm`` and
``alert`` plan their phases by the budget, so theirs is the rate of a 300-query run
stopped early. Controls: the int8
``quantize`` copy (shares the teacher's weights) and a teacher retrained with another seed
(``--reference``): a deviation rate means little alone, so each student's rate is set
against the retrained teacher's, paired over rows (a row bootstrap of the difference of the
two rates, each on its own agreeing rows), "established" when the interval's lower end is
above 0. ``dflare`` against ``random`` and ``mhm`` is paired over the same agreeing rows
(a row bootstrap of the ratio of rows found; B = 2,000).

Usage, on the main job's registered models (``mlflow run .``, then ``recipes/teacher.py
--seed 1`` for the reference)::

    MLFLOW_TRACKING_URI=sqlite:///mlflow.db python benchmarks/bench_deviation_rates.py \\
        --teacher models:/metacompress-generated-vulnerability-teacher/1 \\
        --student compressor=models:/metacompress-generated-vulnerability-compressor/1 \\
        --student quantize=models:/metacompress-generated-vulnerability-quantize/1 \\
        --reference models:/metacompress-generated-vulnerability-teacher/2 --rows 120

and on the three-teacher study's premise students (``--study-data ../shared/data``: its
selection rows; the teacher and the students by their registered versions in the study's store).

``--offset``/``--rows`` pick the rows (tune on rows the benchmark does not judge);
``--batch``, ``--depth``, ``--novelty`` and ``--margin-weight`` set the search (the settings a
search reads join its cache key). The low-budget setting was chosen on the study's selection
pairs 200–399 by the rule in ``reproduction/deviation-rates/tuning/RULES.md`` (depth 5), then on
pairs 400–599 by ``tuning-2/RULES.md`` (depth 10) and confirmed on pairs 0–199 and 600–999
(``pool_deviation_records.py`` pools the ranges).

Measured numbers: ``docs/benchmarks.md`` ("Deviation search: rate against paired queries").
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from typing import Any

import numpy as np

BUDGETS = (10, 30, 100, 300)
SEARCHES = ("dflare", "random", "mhm", "alert")


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    from scipy import stats

    if n == 0:
        return math.nan, math.nan
    lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def boot(stat: Any, n: int, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    vals = np.array([stat(rng.integers(0, n, n)) for _ in range(resamples)], float)
    vals = vals[np.isfinite(vals)]
    return (float(np.quantile(vals, 0.025)), float(np.quantile(vals, 0.975))) if len(vals) else (math.nan, math.nan)


def paired_ratio(d: dict[Any, np.ndarray], o: dict[Any, np.ndarray], budget: int) -> tuple[float, float, float] | None:
    """Rows found within ``budget`` by one search (``d``) over another (``o``) on the same rows, with
    its row-bootstrap interval (B = 2,000); None when the baseline found no row (no ratio)."""
    if not o[budget].sum():
        return None
    n = len(d["agree"])
    lo, hi = boot(lambda i: d[budget][i].sum() / o[budget][i].sum() if o[budget][i].sum() else math.nan, n)
    return float(d[budget].sum() / o[budget].sum()), lo, hi


def paired_difference(d: dict[Any, np.ndarray], o: dict[Any, np.ndarray], budget: int) -> tuple[float, float, float]:
    """The share of agreeing rows found within ``budget`` by one search (``d``) less another's
    (``o``), paired over the same rows, with its row-bootstrap interval (B = 2,000): "more rows
    than" is judged by it where the baseline found none and no ratio exists."""
    n = len(d["agree"])

    def stat(i: np.ndarray) -> float:
        agreeing = d["agree"][i].sum()
        return float((d[budget][i].sum() - o[budget][i].sum()) / agreeing) if agreeing else math.nan

    lo, hi = boot(stat, n)
    return stat(np.arange(n)), lo, hi


def summarize(stored: dict[str, Any], budgets: tuple[int, ...]) -> dict[Any, Any]:
    """Rates per budget from one search's stored per-row record (agreed at the start, paired
    queries to the first verified deviation or None)."""
    agree = np.array(stored["agree"], bool)
    first = np.array([10**9 if q is None else q for q in stored["first"]], float)
    out: dict[Any, Any] = {"agree": agree, "first": first, "seconds": stored["seconds"], "queries": stored["queries"]}
    for b in budgets:
        out[b] = agree & (first <= b)
    found = first[agree & (first < 10**9)]
    out["median"] = float(np.median(found)) if len(found) else math.nan
    return out


def cache_key(*parts: Any) -> str:
    import hashlib

    return hashlib.sha1("\x1f".join(map(str, parts)).encode()).hexdigest()[:20]


def load_result(folder: str, key: str) -> dict[str, Any] | None:
    import json
    from pathlib import Path

    path = Path(folder) / f"{key}.json"
    return json.loads(path.read_text()) if folder and path.exists() else None


def save_result(folder: str, key: str, result: dict[str, Any]) -> None:
    import json
    from pathlib import Path

    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        tmp = Path(folder) / f"{key}.json.tmp"
        tmp.write_text(json.dumps(result))
        tmp.replace(Path(folder) / f"{key}.json")


def rate_of(found: np.ndarray, agree: np.ndarray, idx: np.ndarray) -> float:
    a = agree[idx].sum()
    return float(found[idx].sum() / a) if a else math.nan


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--teacher", required=True)
    p.add_argument("--student", action="append", default=[], help="name=URI (repeat)")
    p.add_argument("--reference", default="", help="a teacher retrained with another seed (the control)")
    p.add_argument("--rows", type=int, default=120)
    p.add_argument(
        "--offset", type=int, default=0, help="skip this many rows first (tune on rows the benchmark does not judge)"
    )
    p.add_argument("--batch", type=int, default=4, help="variants per paired query batch (dflare, random)")
    p.add_argument("--depth", type=int, default=10, help="dflare: operators per mutant, 1 to DEPTH (the product's 10)")
    p.add_argument("--novelty", action="store_true", help="dflare: DFLARE's state-novelty rule")
    p.add_argument("--margin-weight", type=float, default=0.5, help="the fitness's margin weight (gap weight 1)")
    p.add_argument(
        "--study-data",
        default="",
        help="the study's data folder (../shared/data): judge the three-teacher study's selection rows (its premise "
        "students) instead of the main job's judged rows",
    )
    p.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    p.add_argument("--searches", default=",".join(SEARCHES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--cache",
        default="",
        help="folder for each (model, search) result: a rerun reuses the ones already there, so a long "
        "benchmark can run in parts (one --student per process) and be tabulated together",
    )
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import torch

    from mlflow_metacompress.adapters.predictors import resolve_model
    from mlflow_metacompress.attacks.deviation.api import find_deviations
    from mlflow_metacompress.attacks.deviation.goal import Fitness
    from mlflow_metacompress.attacks.goal import QueryModel
    from mlflow_metacompress.pipeline.data import judged_rows

    torch.set_num_threads(args.threads)
    budgets = tuple(int(b) for b in args.budgets.split(","))
    searches = tuple(args.searches.split(","))
    models = dict(s.split("=", 1) for s in args.student)
    if args.reference:
        models["retrained teacher"] = args.reference
    if args.study_data:
        from mlflow_metacompress.study.config import StudyConfig
        from mlflow_metacompress.study.data import eval_rows
        from mlflow_metacompress.study.teacher import study_data
        from mlflow_metacompress.study.triad_plan import premise_config

        cfg = premise_config(StudyConfig(data_dir=args.study_data))
        selection = eval_rows(cfg, study_data(cfg))
        rows = selection.drop(columns=["label"], errors="ignore")
        rows = rows.iloc[args.offset : args.offset + args.rows].reset_index(drop=True)
    else:
        students = [v for k, v in models.items() if k != "retrained teacher"]
        if not students:
            p.error("--student is needed to find the main job's judged rows (or give --study-data)")
        rows = judged_rows(students[0]).iloc[args.offset : args.offset + args.rows].reset_index(drop=True)
    code_columns = [c for c in rows.columns if c in ("func", "func1", "func2", "code")] or [rows.columns[0]]
    language = "java" if "func1" in rows.columns else "c"

    def probabilities(uri: str, name: str) -> Any:
        predictor = resolve_model(uri, name, cache_dir=None, progress=False)  # the search caches by text itself
        return lambda frame: predictor.predict(frame, code_columns)[0]

    # one teacher front for every model and search: its cache (by text) serves the variants
    # several searches visit; the counted paired queries do not depend on it
    teacher = QueryModel(probabilities(args.teacher, "teacher"), code_columns)
    # the search's settings beyond the defaults join the cache key (the defaults' keys are unchanged)
    settings = {"offset": args.offset, "batch": args.batch, "depth": args.depth, "novelty": args.novelty}
    settings["margin_weight"] = args.margin_weight
    # the key's defaults: the settings of the first records (DFLARE's single mutation), so they stay valid
    defaults = {"offset": 0, "batch": 4, "depth": 1, "novelty": False, "margin_weight": 0.5}
    uses = {"batch": ("dflare", "random"), "depth": ("dflare",), "novelty": ("dflare",)}
    uses["margin_weight"] = ("dflare", "mhm", "alert")  # random's success does not read the fitness

    def variant_of(search: str) -> list[str]:
        """The settings beyond the defaults that ``search`` reads (they join its cache key)."""
        return [f"{k}={v}" for k, v in settings.items() if v != defaults[k] and search in uses.get(k, SEARCHES)]

    variant = variant_of("dflare")
    fitness = Fitness(margin_weight=args.margin_weight)
    results: dict[tuple[str, str], dict[Any, Any]] = {}
    for name, uri in models.items():
        model = None
        for search in searches:
            key = cache_key(
                args.teacher, uri, search, len(rows), max(budgets), args.seed, args.study_data, *variant_of(search)
            )
            stored = load_result(args.cache, key)
            if stored is None:
                model = model or probabilities(uri, name)
                started = time.perf_counter()
                records = find_deviations(
                    teacher,
                    model,
                    rows,
                    code_columns,
                    language,
                    queries=max(budgets),
                    search=search,
                    seed=args.seed,
                    progress=True,
                    batch=args.batch,
                    depth=args.depth,
                    novelty=args.novelty,
                    fitness=fitness,
                )
                stored = {
                    "agree": [bool(x.agreed_at_start) for x in records],
                    "first": [
                        x.queries_to_first if (x.found and x.queries_to_first is not None) else None for x in records
                    ],
                    "seconds": time.perf_counter() - started,
                    "queries": int(sum(x.queries for x in records)),
                }
                save_result(args.cache, key, {"model": name, "uri": uri, "search": search, **settings, **stored})
            results[(name, search)] = summarize(stored, budgets)
    print(f"rows {len(rows)} from {args.offset}, language {language}, budgets {budgets}, seed {args.seed}, {variant}\n")
    print("| model | search | agreeing | " + " | ".join(f"rate @{b}" for b in budgets) + " | median q | s |")
    print("|---|---|---|" + "---|" * len(budgets) + "---|---|")
    for (name, search), r in results.items():
        n = int(r["agree"].sum())
        cells = []
        for b in budgets:
            k = int(r[b].sum())
            lo, hi = clopper_pearson(k, n)
            cells.append(f"{k / n:.1%} [{lo:.0%}, {hi:.0%}]" if n else "–")
        print(f"| {name} | {search} | {n} | " + " | ".join(cells) + f" | {r['median']:.0f} | {r['seconds']:.0f} |")
    print("\nPaired over agreeing rows (row bootstrap, B = 2000): dflare's rows found / the other search's")
    for name in models:
        for other in ("random", "mhm"):
            if (name, "dflare") not in results or (name, other) not in results:
                continue
            d, o = results[(name, "dflare")], results[(name, other)]
            for b in budgets:
                found = paired_ratio(d, o, b)
                if found is None:
                    diff, lo, hi = paired_difference(d, o, b)
                    print(
                        f"- {name} @{b}: dflare {int(d[b].sum())} rows, {other} none (no ratio); "
                        f"difference {diff:+.1%} [{lo:+.1%}, {hi:+.1%}]"
                    )
                    continue
                ratio, lo, hi = found
                print(f"- {name} @{b}: dflare/{other} {ratio:.2f} [{lo:.2f}, {hi:.2f}]")
    if args.reference:
        print("\nExcess over the retrained teacher (student rate − retrained teacher's, row bootstrap):")
        for name in models:
            if name == "retrained teacher":
                continue
            for search in ("dflare", "random"):
                s, t = results.get((name, search)), results.get(("retrained teacher", search))
                if s is None or t is None:
                    continue
                for b in budgets:
                    n = len(s["agree"])
                    diff = rate_of(s[b], s["agree"], np.arange(n)) - rate_of(t[b], t["agree"], np.arange(n))

                    def stat(i: np.ndarray, s: Any = s, t: Any = t, b: int = b) -> float:
                        return rate_of(s[b], s["agree"], i) - rate_of(t[b], t["agree"], i)

                    lo, hi = boot(stat, n)
                    verdict = "established" if lo > 0 else ("below" if hi < 0 else "not established")
                    print(f"- {name} / {search} @{b}: {diff:+.3f} [{lo:+.3f}, {hi:+.3f}] {verdict}")


if __name__ == "__main__":
    main()
