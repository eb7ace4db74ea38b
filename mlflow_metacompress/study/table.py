"""The reproduction's table: the paper's headline figures beside ours, per method and seed.

:func:`.stages.collect` finds every finished evaluation of a study through MLflow (by
its stage keys); :func:`summarise` takes, per method and metric, the seeds'
values, their mean, an interval over seeds that respects the metric's range
(:mod:`.verdicts`), each seed's within-run bootstrap interval, and the verdicts of
:mod:`.judge` (item 5's test of the ``fidelity`` method: :mod:`.fidelity_goal`);
:func:`write_reproduction` writes ``<task>.json`` and ``<task>.md``
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

from ..artifact_names import REPRODUCTION_DIR
from .fidelity_goal import fidelity_test
from .markdown import MR_METRICS, render_markdown
from .seeds import finite, t_interval
from .verdicts import rate_interval

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
    "codebert/teacher_mr1_violation_rate",
    "size_mb",
)
# metrics that are rates (fractions in [0, 1]): their intervals never leave [0, 1]
RATES = tuple(m for m in METRICS if m not in ("accuracy_drop", "size_mb"))
# (phenomenon, paper's figure, our metric or verdict, direction): "max" = up to, "gap" = accuracy gap under
PAPER = (
    ("MR1 violations (label flips)", 0.36, "mr1_violations", "max"),
    ("MR2 violations (KL > 0.1)", 0.31, "mr2_violations", "max"),
    ("MR3 violations (confident rows)", 0.62, "mr3_violations", "max"),
    ("accuracy gap to the teacher", 0.03, "accuracy_within_3pt", "gap"),
    ("excess accuracy drop under attack", 2.85, "excess_attack_drop", "max"),
)


def _interval(metric: str, values: list[Any], n: list[Any]) -> tuple[float, float, str]:
    """The interval over seeds of ``metric``: :func:`.verdicts.rate_interval` for a rate, a
    log-scale t-interval for an excess drop in percent (never below −100%), else Student-t."""
    if metric in RATES:
        r = rate_interval(values, n)
        return r["low"], r["high"], r["method"]
    if metric.endswith("excess_drop_pct"):
        logs = [math.log1p(v / 100) for v in finite(values) if v > -100]
        if len(logs) < len(finite(values)):
            return math.nan, math.nan, "none (a seed at -100%)"
        _, lo, hi = t_interval(logs)
        return 100 * math.expm1(lo), 100 * math.expm1(hi), "log-ratio t"
    _, lo, hi = t_interval(values)
    return lo, hi, "t"


def summarise(
    results: dict[tuple[str, int], dict[str, float]],
    methods: Any,
    seeds: Any,
    attacks: Any = (),
    attack_rows: int = 200,
    row_counts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Per method and metric: values per seed, mean, an interval over seeds that respects
    the metric's range, each seed's within-run bootstrap interval; ``fidelity`` against the
    best baseline (item 5); and the verdicts of :mod:`.judge` (``appears``)."""
    from ..statistics import interval_key
    from .judge import attack_counts, judge

    metrics = list(METRICS) + [f"attack_{a}/excess_drop_pct" for a in attacks]
    # the flip counts, where the study stored them, so a re-render judges the same counts
    counted = [f"attack_{a}/{k}" for a in attacks for k in ("student_flips", "teacher_flips", "rows")]
    metrics += [m for m in counted if any(m in r for r in results.values())]
    per_method: dict[str, Any] = {}
    for method in methods:
        rows = {}
        for metric in metrics:
            got = [results.get((method, s), {}) for s in seeds]
            values = [r.get(metric, math.nan) for r in got]
            n = [r.get(f"n/{metric}", math.nan) for r in got]
            low, high, how = _interval(metric, values, n)
            rows[metric] = {
                "values": values,
                **({"n": n} if metric in RATES else {}),  # each seed's denominator, for a re-render
                "mean": t_interval(values)[0],
                "low": low,
                "high": high,
                "interval": how,
                "within_run": [[r.get(interval_key(metric, e), math.nan) for e in ("low", "high")] for r in got],
                "seeds": len(finite(values)),
            }
        per_method[method] = rows
    summary: dict[str, Any] = {"seeds": list(seeds), "methods": per_method, "fidelity": fidelity_test(per_method)}
    if row_counts:
        summary["row_counts"] = row_counts
    counts, source = attack_counts(results, methods, seeds, attacks, attack_rows)
    judge(summary, counts, source)
    return summary


def headline(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's figures beside ours: per phenomenon, the distilled methods (not the
    control) for which it appears by :mod:`.judge`, the largest estimate with its
    total-uncertainty interval, and the control's verdict."""
    from .judge import CONTROLS

    verdicts = summary.get("verdicts", {})
    rows = []
    for name, paper, key, kind in PAPER:
        cands = {m: v[key] for m, v in verdicts.items() if key in v and m not in CONTROLS}
        control = {m: v[key]["appears"] for m, v in verdicts.items() if key in v and m in CONTROLS}
        row: dict[str, Any] = {"phenomenon": name, "paper": paper, "key": key, "control": control}
        if not cands:
            rows.append({**row, "method": None, "ours": None, "appears": None, "methods": []})
            continue
        if kind == "gap":
            method = min(cands, key=lambda m: cands[m]["abs_gap_points"])
            v = cands[method]
            ours, low, high = v["gap_points"] / 100, v["boot90_points"][0] / 100, v["boot90_points"][1] / 100
        else:
            est = "excess" if key == "excess_attack_drop" else "mean"
            method = max(cands, key=lambda m: cands[m][est])
            v = cands[method]
            ours, low, high = v[est], v["boot_low"], v["boot_high"]
        shown = sorted(m for m, c in cands.items() if c["appears"])
        rows.append(
            {**row, "method": method, "ours": ours, "low": low, "high": high, "appears": bool(shown), "methods": shown}
        )
    return rows


def write_reproduction(
    cfg: Any, teacher: Any, results: dict[tuple[str, int], dict[str, float]], output: str | Path = "reproduction"
) -> dict[str, Any]:
    """Summarise the finished evaluations ``results`` (``(method, seed)`` → metrics, from
    :func:`.stages.collect`) and write ``<dataset>.json``/``.md`` into ``output``, and log
    them as the ``reproduction/`` artifact folder of a report run. The JSON keeps the
    per-row counts the two-level bootstrap needs (``summary.row_counts``)."""
    from dataclasses import asdict

    import mlflow
    from mlflow import MlflowClient

    from .resume import STAGE_TAG, STUDY_TAG
    from .rows import paired_bootstrap, per_sample_violations, read_per_sample, row_counts, stack_row_counts

    per_method: dict[str, Any] = {}
    for method in cfg.methods:
        seeds = [s for s in cfg.seeds if (method, s) in results]
        if seeds:  # the row-level bootstrap over the seeds this method finished (the page shows how many)
            frames = [read_per_sample(str(results[(method, s)]["run_id"])) for s in seeds]
            rows = sorted(set.intersection(*(set(f["row"].unique()) for f in frames)))
            per_method[method] = stack_row_counts([row_counts(f, rows) for f in frames])
            for metric, c in per_method[method].items():  # each seed's denominator, for exact intervals
                for s, n in zip(seeds, c["n"], strict=True):
                    results[(method, s)][f"n/{metric}"] = float(sum(n))
    summary = summarise(results, cfg.methods, cfg.seeds, cfg.attacks, attack_rows_of(cfg), per_method)
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
    tmetrics.update(_training_setup(teacher.outputs.get("teacher_run_id")))
    # the same teacher on the same held-out pairs for every student
    codebert = finite([r.get("codebert/teacher_mr1_violation_rate") for r in results.values()])
    if codebert:
        tmetrics["codebert_disagreement"] = codebert[0]
    b = cfg.teacher
    tmetrics["arch"] = (
        f"{b.layers} × {b.hidden} encoder, {b.vocab_size // 1000}k BPE vocabulary, max length {b.max_length}"
    )
    dataset = "bigclonebench" if cfg.task in ("clone", "bigclonebench") else "devign"
    report = {
        "dataset": dataset,
        "config": {**json.loads(json.dumps(asdict(cfg), default=str)), "attack_rows": attack_rows_of(cfg)},
        "teacher": tmetrics,
        "teacher_uri": teacher.outputs.get("model_uri"),
        "summary": summary,
        "headline": headline(summary),
        "finished": sorted(f"{m}-seed{s}" for m, s in results),
    }
    write_pages(report, output)
    with mlflow.start_run(run_name=f"reproduction-{dataset}", tags={STAGE_TAG: "report", STUDY_TAG: cfg.task}):
        mlflow.log_artifacts(str(output), artifact_path=REPRODUCTION_DIR)
    logger.info("reproduction table (%d finished evaluations) written to %s", len(results), output)
    return report


def _training_setup(run_id: str | None) -> dict[str, str]:
    """The threads and precision the teacher was trained with (``train_threads``,
    ``train_precision``), from its training run's params; the study's own ``--threads`` may
    differ (the teacher stage is often run apart, with more threads)."""
    if not run_id:
        return {}
    from mlflow import MlflowClient

    params = MlflowClient().get_run(run_id).data.params
    return {f"train_{k}": params[k] for k in ("threads", "precision") if k in params}


def attack_rows_of(cfg: Any) -> int:
    """The test rows each attack ran on: ``attack_rows`` when the study attacks its own rows,
    else the evaluated rows (capped by ``attack_max_samples``)."""
    if getattr(cfg, "attack_rows", None):
        return int(cfg.attack_rows)
    rows = cfg.eval_rows
    return int(min(rows, cfg.attack_max_samples)) if cfg.attack_max_samples else int(rows)


def write_pages(report: dict[str, Any], output: str | Path) -> None:
    """Write ``<dataset>.json`` and ``<dataset>.md`` into ``output`` (with the hand-written
    ``<dataset>_conclusions.md`` of that folder, when present)."""
    out = Path(output)
    dataset = report["dataset"]
    notes = out / f"{dataset}_conclusions.md"
    if notes.is_file():  # hand-written conclusions, kept beside the generated table
        report["conclusions"] = notes.read_text(encoding="utf-8").strip().splitlines()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{dataset}.json").write_text(
        json.dumps(clean(report), indent=2, default=str, allow_nan=False) + "\n", encoding="utf-8"
    )
    (out / f"{dataset}.md").write_text(render_markdown(clean_nan(report)), encoding="utf-8")


def clean_nan(obj: Any) -> Any:
    """``obj`` as its JSON would read back (None for NaN): the page renders what the JSON holds."""
    return json.loads(json.dumps(clean(obj), default=str))


def clean(obj: Any) -> Any:
    """``obj`` with NaN/inf floats as None and tuples as lists (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj
