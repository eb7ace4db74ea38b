"""The three-teacher study's verdicts, computed from its page's JSON alone (:mod:`.triad_rows`)
by the rules fixed before its runs (:mod:`.replica`, rules 1–6; MetaCompress, Awal, Rochan,
Roy, arXiv 2511.05476, read against retrained teachers).

``record["rows"][teacher][model]`` holds a :class:`~.triad_rows.RowData` per teacher for
each replica (``replica:<j>``, teacher ``j`` judged against it) and each premise student
(``<method>:<seed>``); ``record["attacks"]`` the success rates; ``record["confirmation"]``
the confirmation rows' correctness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .replica import (
    PAPER_EXCESS,
    attack_excess,
    excess_over_reference,
    holm_verdicts,
    spread,
    t_one_sided,
    tost_total,
)
from .triad_rows import GROUPS, RELATIONS, RowData, decode

KINDS = ("original", "transformed")
PREMISE_MARGIN = 0.03  # rule 3: within 3 points
BOOTSTRAP = 2000


def _models(
    rows: Mapping[str, Mapping[str, RowData]],
) -> tuple[dict[str, dict[str, list[RowData]]], dict[str, list[RowData]]]:
    """``(students[method][teacher] = seeds' rows, replicas[teacher] = the other teachers' rows)``."""
    students: dict[str, dict[str, list[RowData]]] = {}
    replicas: dict[str, list[RowData]] = {}
    for teacher, models in rows.items():
        for label, data in sorted(models.items()):
            kind, _, _ = label.partition(":")
            if kind == "replica":
                replicas.setdefault(teacher, []).append(data)
            else:
                students.setdefault(kind, {}).setdefault(teacher, []).append(data)
    return students, replicas


def _groups(method: str, seen: bool = False) -> tuple[str, ...]:
    """Rule 6: ``fidelity`` is judged on the rewrites it never trained on (``seen``: apart)."""
    if seen:
        return ("seen",)
    return ("unseen",) if method == "fidelity" else GROUPS


def _kn(data: RowData, relation: str, kind: str, groups: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    if kind == "original":
        flags = data.original[relation]
        return np.nan_to_num(flags), np.isfinite(flags).astype(float)
    return data.counts(relation, groups)


def two_level(
    students: Mapping[str, list[RowData]], replicas: Mapping[str, list[RowData]], relation: str, kind: str,
    groups: tuple[str, ...], samples: int = BOOTSTRAP, seed: int = 0,
) -> dict[str, float]:  # fmt: skip
    """The two-level bootstrap shown beside rule 1's t-test: teachers resampled, then rows
    (the same rows for every teacher); the mean over teachers of (student rate averaged over
    seeds − reference rate averaged over replicas); 95% percentile interval."""
    teachers = [t for t in students if t in replicas]
    if not teachers:
        return {"low": math.nan, "high": math.nan}
    side = {
        t: (
            [_kn(d, relation, kind, groups) for d in students[t]],
            [_kn(d, relation, kind, groups) for d in replicas[t]],
        )
        for t in teachers
    }
    n_rows = len(next(iter(side.values()))[0][0][0])
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(teachers), size=(samples, len(teachers)))
    weights = rng.multinomial(n_rows, np.full(n_rows, 1.0 / n_rows), size=samples).T.astype(float)  # rows × samples

    def rate(k: np.ndarray, n: np.ndarray) -> np.ndarray:
        return (k @ weights) / np.maximum(n @ weights, 1e-12)

    per_teacher = np.stack(
        [np.mean([rate(k, n) for k, n in side[t][0]], axis=0) - np.mean([rate(k, n) for k, n in side[t][1]], axis=0)
         for t in teachers]
    )  # fmt: skip
    out = per_teacher[picked, np.arange(samples)[:, None]].mean(axis=1)
    return {"low": float(np.quantile(out, 0.025)), "high": float(np.quantile(out, 0.975)), "resamples": samples}


def rule_relations(rows: Mapping[str, Mapping[str, RowData]], seen: bool = False) -> dict[str, Any]:
    """Rules 1 and 2 per relation and input kind, Holm over the methods (``seen``: ``fidelity``
    on its training rewrites, reported apart)."""
    students, replicas = _models(rows)
    methods = ["fidelity"] if seen else sorted(students)
    out: dict[str, Any] = {"excess": {}, "increment": {}}
    for relation in RELATIONS:
        for kind in ([] if seen else ["original"]) + ["transformed"]:
            results = {}
            for m in methods:
                g = _groups(m, seen)
                per_teacher = students.get(m, {})
                ref = {
                    t: float(np.mean([d.rate(relation, kind, g) for d in replicas[t]]))
                    for t in per_teacher
                    if t in replicas
                }
                stu = {t: [d.rate(relation, kind, g) for d in v] for t, v in per_teacher.items()}
                res: dict[str, Any] = dict(excess_over_reference(stu, ref))
                res["student_rate"] = float(np.mean([np.mean(v) for v in stu.values()])) if stu else math.nan
                res["reference_rate"] = float(np.mean(list(ref.values()))) if ref else math.nan
                res["bootstrap"] = two_level(per_teacher, replicas, relation, kind, g)
                results[m] = res
            out["excess"][f"{relation}/{kind}"] = holm_verdicts(
                results, "appears over the reference", "not established"
            )
        increments = {}
        for m in methods:
            g = _groups(m, seen)
            per_teacher = students.get(m, {})
            d = {
                t: float(np.mean([x.increment(relation, g) for x in v]))
                - float(np.mean([x.increment(relation, g) for x in replicas[t]]))
                for t, v in per_teacher.items()
                if t in replicas
            }
            increments[m] = {**t_one_sided(list(d.values())), **{f"teacher:{t}": v for t, v in d.items()}}
        out["increment"][relation] = holm_verdicts(increments, "appears in the increment", "not established")
    return out


def premise(rows: Mapping[str, Mapping[str, RowData]]) -> dict[str, Any]:
    """Rule 3 per method: TOST at ±3 points on the total error over teacher × seed units."""
    students, _ = _models(rows)
    out = {}
    for m, per_teacher in sorted(students.items()):
        gaps = np.array([d.accuracy_gap() for v in per_teacher.values() for d in v])
        res: dict[str, Any] = dict(tost_total(gaps, PREMISE_MARGIN)) if len(gaps) else {"p": math.nan}
        res["units"] = len(gaps)
        res["verdict"] = "established" if res["p"] < 0.05 else "not established"
        out[m] = res
    return out


def confirmation(record: Mapping[str, Any]) -> dict[str, Any]:
    """Rule 5: the premise TOST again, per confirmation split, on fresh seeds."""
    out = {}
    for split, per_teacher in sorted(record.get("confirmation", {}).items()):
        gaps = [
            decode(v["teacher_correct"]) - decode(v["correct"])
            for seeds in per_teacher.values()
            for v in seeds.values()
        ]
        if not gaps:
            continue
        res: dict[str, Any] = dict(tost_total(np.array(gaps), PREMISE_MARGIN))
        res.update(units=len(gaps), rows=len(gaps[0]), verdict="confirmed" if res["p"] < 0.05 else "not confirmed")
        out[split] = res
    return out


def attacks(record: Mapping[str, Any]) -> dict[str, Any]:
    """Rule 4 per attack at its chosen budget: the log ratio of success among correct rows,
    over teachers, Holm over methods; the paper's figure for the same method beside it."""
    out = {}
    for attack, a in sorted(record.get("attacks", {}).items()):
        if a.get("budget") is None or not a.get("students"):
            out[attack] = {"budget": a.get("budget"), "verdicts": {}}
            continue
        teacher = {t: float(v) for t, v in a["teacher"].items()}
        results = {m: attack_excess(per, teacher) for m, per in sorted(a["students"].items())}
        verdicts = holm_verdicts(results, "reproduced", "not reproduced here")
        for m in verdicts:
            verdicts[m]["paper"] = PAPER_EXCESS.get(m)
        out[attack] = {"budget": a["budget"], "verdicts": verdicts}
    return out


def seed_spread(rows: Mapping[str, Mapping[str, RowData]], method: str = "compressor") -> dict[str, float]:
    """The spread between ``method``'s student seeds beside the spread between teachers (MR1, transformed)."""
    students, _ = _models(rows)
    per = {t: [d.rate("mr1", "transformed") for d in v] for t, v in students.get(method, {}).items()}
    return spread(per)


def verdicts(record: Mapping[str, Any]) -> dict[str, Any]:
    """Every rule's result from the page's JSON."""
    rows = {t: {m: RowData.from_json(d) for m, d in models.items()} for t, models in record.get("rows", {}).items()}
    return {
        "relations": rule_relations(rows),
        "fidelity_seen": rule_relations(rows, seen=True)
        if any(m.startswith("fidelity:") for v in rows.values() for m in v)
        else {},
        "premise": premise(rows),
        "attacks": attacks(record),
        "confirmation": confirmation(record),
        "spread": seed_spread(rows),
    }
