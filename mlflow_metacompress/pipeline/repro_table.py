"""The reproduction's table: the paper's headline figures beside ours, per method and seed.

:func:`.reproduce.collect` finds every finished evaluation of a study through MLflow (by
its stage keys); :func:`summarise` takes, per method and metric, the seeds'
values, their mean and Student-t interval (:mod:`.seeds`) and each seed's within-run
bootstrap interval; :func:`write_reproduction` writes ``<task>.json`` and ``<task>.md``
into the output folder and logs them as the ``reproduction/`` artifact folder of a run
tagged ``metacompress.reproduce.stage=report``.

Headline figures of MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) on BigCloneBench
with a CodeBERT teacher and 3 MB students: MR1 up to 36%, MR2 up to 31%, MR3 up to 62%
of samples violated at an accuracy gap under 3%, and up to 285% more accuracy lost
under attack than the teacher.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from .repro_markdown import MR_METRICS, render_markdown
from .seeds import finite, paired_test, t_interval

logger = logging.getLogger(__name__)

METRICS = (
    "student_accuracy",
    "teacher_accuracy",
    "accuracy_drop",
    "mr1_violation_rate",
    *MR_METRICS,
    "any_violation_rate/metamorphic",
    "codebert/mr1_violation_rate",
    "codebert/student_accuracy",
    "size_mb",
)
BASELINES = ("compressor", "avatar", "morph")
# students the paper does not judge, reported beside the others but left out of its phenomena:
# a quantized copy is not distilled, and its seeds judge one and the same model
CONTROLS = ("quantize", "onnx-int8")
# "equal size" for item 5: a baseline within 10% of fidelity's size (MORPH's search may settle smaller)
SIZE_TOLERANCE = 0.10
# (phenomenon, paper's figure, our metric, direction): "max" = up to, "gap" = accuracy gap under
PAPER = (
    ("MR1 violations (label flips)", 0.36, "mr1_violation_rate/metamorphic", "max"),
    ("MR2 violations (KL > 0.1)", 0.31, "mr2_violation_rate/metamorphic", "max"),
    ("MR3 violations (confident rows)", 0.62, "mr3_violation_rate/metamorphic", "max"),
    ("accuracy gap to the teacher", 0.03, "accuracy_drop", "gap"),
    ("excess accuracy drop under attack", 2.85, "attack_excess_drop_pct", "max"),
)


def max_excess(metrics: dict[str, float], attacks: Any) -> float:
    """The larger excess drop (as a fraction, 2.85 = 285%) over the attacks, NaN when undefined."""
    values = finite([metrics.get(f"attack_{a}/excess_drop_pct") for a in attacks])
    return max(values) / 100.0 if values else math.nan


def summarise(
    results: dict[tuple[str, int], dict[str, float]], methods: Any, seeds: Any, attacks: Any = ()
) -> dict[str, Any]:
    """Per method and metric: values per seed, mean, t-interval over seeds and each seed's
    within-run bootstrap interval; plus ``fidelity`` against the best baseline (item 5)."""
    from ..statistics import interval_key

    metrics = list(METRICS) + [f"attack_{a}/excess_drop_pct" for a in attacks] + ["attack_excess_drop_pct"]
    per_method: dict[str, Any] = {}
    for method in methods:
        rows = {}
        for metric in metrics:
            values = [results.get((method, s), {}).get(metric, math.nan) for s in seeds]
            mean, low, high = t_interval(values)
            within = [
                [results.get((method, s), {}).get(interval_key(metric, e), math.nan) for e in ("low", "high")]
                for s in seeds
            ]
            rows[metric] = {
                "values": values,
                "mean": mean,
                "t_low": low,
                "t_high": high,
                "within_run": within,
                "seeds": len(finite(values)),
            }
        per_method[method] = rows
    return {"seeds": list(seeds), "methods": per_method, "fidelity": fidelity_test(per_method)}


def fidelity_test(per_method: dict[str, Any], metric: str = "any_violation_rate/metamorphic") -> dict[str, Any]:
    """``fidelity`` against the baseline (Compressor, AVATAR, MORPH) with the lowest mean
    ``metric``: a paired t-test across seeds, and the goal (half the violations, accuracy
    within one point)."""
    base = [m for m in BASELINES if m in per_method and not math.isnan(per_method[m][metric]["mean"])]
    if "fidelity" not in per_method or not base or math.isnan(per_method["fidelity"][metric]["mean"]):
        return {"available": False}
    size = {m: per_method[m]["size_mb"]["mean"] for m in [*base, "fidelity"]}
    equal = [m for m in base if abs(size[m] - size["fidelity"]) <= SIZE_TOLERANCE * size["fidelity"]]
    # with no baseline at fidelity's size, every baseline stays (said on the page)
    other_size = {m: size[m] for m in base if m not in equal} if equal else {}
    base = equal or base

    def paired_mean(m: str) -> float:  # over the seeds fidelity finished too, so the choice compares like with like
        pairs = [
            y
            for x, y in zip(per_method["fidelity"][metric]["values"], per_method[m][metric]["values"], strict=True)
            if finite([x]) and finite([y])
        ]
        return t_interval(pairs)[0] if pairs else math.inf

    best = min(base, key=paired_mean)
    f, b = per_method["fidelity"], per_method[best]
    test = paired_test(f[metric]["values"], b[metric]["values"])
    acc = paired_test(f["student_accuracy"]["values"], b["student_accuracy"]["values"])
    # the means over the seeds both methods finished (a paired comparison)
    both = [
        i
        for i, (x, y) in enumerate(zip(f[metric]["values"], b[metric]["values"], strict=True))
        if finite([x]) and finite([y])
    ]
    f_mean = t_interval([f[metric]["values"][i] for i in both])[0]
    b_mean = t_interval([b[metric]["values"][i] for i in both])[0]
    ratio = f_mean / b_mean if b_mean > 0 else math.nan
    return {
        "available": True,
        "metric": metric,
        "best_baseline": best,
        "fidelity_mean": f_mean,
        "baseline_mean": b_mean,
        "paired_seeds": len(both),
        "ratio": ratio,
        "violations": test,
        "accuracy": acc,
        "halved": bool(ratio <= 0.5),
        "accuracy_within_1pt": bool(abs(acc["mean_difference"]) <= 0.01),
        "size_mb": {"fidelity": f["size_mb"]["mean"], best: b["size_mb"]["mean"]},
        "equal_size": bool(equal),
        "other_size": other_size,
    }


def per_sample_violations(run_id: str, column: str = "any_violation") -> Any:
    """The evaluation's ``per_sample.parquet`` restricted to the metamorphic variants (not the
    originals, not the attacks' adversarial examples, which differ per student): a Series
    of ``column`` indexed by (variant, row)."""
    import mlflow
    import pandas as pd

    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/per_sample.parquet")
    df = pd.read_parquet(path, columns=["variant", "row", column])
    df = df[(df["variant"] != "original") & ~df["variant"].astype(str).str.startswith("attack_")]
    return df.set_index(["variant", "row"])[column].astype(float)


def paired_bootstrap(a: Any, b: Any, samples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Paired bootstrap of the pooled violation rate ``a`` − ``b`` over test rows (each row's
    variants resampled together, on the (variant, row) pairs both evaluations hold): the
    difference, its 95% percentile interval and a two-sided bootstrap p-value."""
    import numpy as np

    joined = a.rename("a").to_frame().join(b.rename("b"), how="inner")
    if joined.empty:
        return {"n_rows": 0}
    per_row = joined.groupby(level="row").agg(["sum", "count"])
    sa, sb, n = per_row[("a", "sum")].to_numpy(), per_row[("b", "sum")].to_numpy(), per_row[("a", "count")].to_numpy()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(n), size=(samples, len(n)))
    diffs = (sa[idx].sum(axis=1) - sb[idx].sum(axis=1)) / n[idx].sum(axis=1)
    observed = float((sa.sum() - sb.sum()) / n.sum())
    p = float(min(1.0, 2 * min(np.mean(diffs <= 0), np.mean(diffs >= 0))))
    return {
        "n_rows": int(len(n)),
        "n_pairs": int(n.sum()),
        "a": float(sa.sum() / n.sum()),
        "b": float(sb.sum() / n.sum()),
        "mean_difference": observed,
        "low": float(np.quantile(diffs, 0.025)),
        "high": float(np.quantile(diffs, 0.975)),
        "pvalue": p,
    }


def headline(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's figures beside ours: the distilled method (not a :data:`CONTROLS` one) with
    the largest seed mean (or, for the accuracy gap, the largest gap) with its t-interval and
    the verdict rule's outcome."""
    rows = []
    for name, paper, metric, kind in PAPER:
        cands = [
            (m, r[metric])
            for m, r in summary["methods"].items()
            if m not in CONTROLS and not math.isnan(r[metric]["mean"])
        ]
        if not cands:
            rows.append({"phenomenon": name, "paper": paper, "metric": metric, "ours": None, "appears": None})
            continue
        method, r = max(cands, key=lambda c: c[1]["mean"])
        appears: bool | None
        evidence: str | None = None
        if kind == "gap":  # the paper's premise: students within 3 points of the teacher
            appears = all(c[1]["mean"] < paper for c in cands)
        else:
            # a violation/excess that some method shows beyond the seed noise: mean at least 5%
            # and the lower end of its t-interval above zero (with one seed: its mean). The
            # worst mean alone can sit on a wide interval while a steadier method settles it.
            # A method with one seed counts only when no method has more (a one-seed study).
            most = max(c["seeds"] for _, c in cands)
            lows = [(m, _low(c)) for m, c in cands if c["mean"] >= 0.05 and (c["seeds"] > 1 or most == 1)]
            shown = [(m, low) for m, low in lows if low > 0.0]
            appears = bool(shown)
            evidence = max(shown, key=lambda c: c[1])[0] if shown else None
        rows.append(
            {
                "phenomenon": name,
                "paper": paper,
                "metric": metric,
                "method": method,
                "ours": r["mean"],
                "t_low": r["t_low"],
                "t_high": r["t_high"],
                "seeds": r["seeds"],
                "appears": appears,
                "evidence": evidence,
            }
        )
    return rows


def _low(r: dict[str, Any]) -> float:
    """The lower end of a method's t-interval over seeds, or its mean with one seed."""
    return float(r["mean"] if math.isnan(r["t_low"]) else r["t_low"])


def write_reproduction(
    cfg: Any, teacher: Any, results: dict[tuple[str, int], dict[str, float]], output: str | Path = "reproduction"
) -> dict[str, Any]:
    """Summarise the finished evaluations ``results`` (``(method, seed)`` → metrics, from
    :func:`.reproduce.collect`) and write ``<dataset>.json``/``.md`` into ``output``, and log
    them as the ``reproduction/`` artifact folder of a report run."""
    from dataclasses import asdict

    import mlflow
    from mlflow import MlflowClient

    from .resume import STAGE_TAG, STUDY_TAG

    summary = summarise(results, cfg.methods, cfg.seeds, cfg.attacks)
    f = summary["fidelity"]
    if f.get("available"):
        f["per_seed_bootstrap"] = {}
        for seed in cfg.seeds:
            a, b = results.get(("fidelity", seed)), results.get((f["best_baseline"], seed))
            if a and b:
                f["per_seed_bootstrap"][str(seed)] = paired_bootstrap(
                    per_sample_violations(str(a["run_id"])), per_sample_violations(str(b["run_id"])), seed=seed
                )
    tmetrics: dict[str, float | str] = dict(MlflowClient().get_run(teacher.run_id).data.metrics)
    b = cfg.teacher
    tmetrics["arch"] = (
        f"{b.layers} × {b.hidden} encoder, {b.vocab_size // 1000}k BPE vocabulary, max length {b.max_length}"
    )
    dataset = "bigclonebench" if cfg.task in ("clone", "bigclonebench") else "devign"
    report = {
        "dataset": dataset,
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "teacher": tmetrics,
        "teacher_uri": teacher.outputs.get("model_uri"),
        "summary": summary,
        "headline": headline(summary),
        "finished": sorted(f"{m}-seed{s}" for m, s in results),
    }
    notes = Path(output) / f"{dataset}_conclusions.md"
    if notes.is_file():  # hand-written conclusions, kept beside the generated table
        report["conclusions"] = notes.read_text(encoding="utf-8").strip().splitlines()
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{dataset}.json").write_text(
        json.dumps(clean(report), indent=2, default=str, allow_nan=False) + "\n", encoding="utf-8"
    )
    (out / f"{dataset}.md").write_text(render_markdown(report), encoding="utf-8")
    with mlflow.start_run(run_name=f"reproduction-{dataset}", tags={STAGE_TAG: "report", STUDY_TAG: cfg.task}):
        mlflow.log_artifacts(str(out), artifact_path="reproduction")
    logger.info("reproduction table (%d finished evaluations) written to %s", len(results), out)
    return report


def clean(obj: Any) -> Any:
    """``obj`` with NaN/inf floats as None and tuples as lists (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj
