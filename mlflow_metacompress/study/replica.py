"""The three-teacher study's rules (issue 42), fixed before its runs, and the statistics that
apply them. The page that renders this study names this module; ``docs/benchmarks.md``
("The three-teacher study: rules") repeats the rules in prose.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476, JSS 2026) reads every MR violation as a
failure of the student. Two equally good teachers disagree too, so a rate is only evidence
when it exceeds what a *retrained teacher* does. The design:

- **Teachers.** Three teachers ``T0, T1, T2`` of one recipe (``--teacher-seed 0, 1, 2``).
  Each is the **reference** of the other two: for teacher ``Ti`` the reference rate is the
  mean over ``j ≠ i`` of ``Tj`` judged against ``Ti`` on the same rows, exactly as a student is.
- **Students at the premise** (3 MB, 6,000 steps on every CodeBERT-labelled pair, lr 1e-3,
  gradient norm clipped at 1): Compressor, MORPH and ``fidelity`` per teacher (seed 0), and
  a second Compressor seed (1) per teacher, so that the spread between student seeds can
  be set beside the spread between teachers (:func:`spread`).
- **The unit of inference is the teacher.** Per teacher, a method's statistic is averaged
  over its student seeds; the test is a Student-t over the 3 teachers (df = 2). A two-level
  bootstrap (teachers, then rows, the same rows for every teacher) is shown beside it and
  never overrides it.

Rules (α = 0.05; Holm over the methods Compressor, MORPH, ``fidelity`` within each
relation and input kind):

1. **A relation appears over the reference** for a method when the per-teacher excess
   ``d_i = rate(S_i vs Ti) − rate(reference vs Ti)`` (paired over rows) has a one-sided
   t-test p-value of ``mean d > 0`` below α after Holm (:func:`excess_over_reference`).
   Judged for MR1–MR3 on the original inputs and on the pooled transformed inputs.
2. **A relation appears in the metamorphic increment** (separately) when the increment
   ``inc = rate on transformed − rate on the same rows' originals`` (per row: the mean
   over the row's transformed variants minus the original's flag) exceeds the
   reference's increment by the same test (:func:`metamorphic_increment`).
3. **The premise** (a student within 3 points of its teacher) is established for a method
   only by a TOST at ±3 points on the **total error**: the seed part (the t-variance of
   the per-unit gaps over teacher × seed units) plus the row part (the variance of the
   per-row gap averaged over units, / rows), with df = units − 1 (:func:`tost_total`).
   Otherwise "not established".
4. **The attack question** is asked of premise students only. The measure is the attack
   success rate among the rows the model classifies correctly before the attack
   (``flipped / correct``), so it does not depend on clean accuracy. The attack budget is
   the smallest of 30, 100, 300 queries at which the teacher's success is ≥ 15% on the
   selection rows, chosen before any student is attacked. The excess is the log ratio of
   the student's to the teacher's success rate, per teacher (averaged over seeds), tested
   one-sided (> 0) over teachers with Holm (:func:`attack_excess`). The verdict reads
   **reproduced** (established) or **not reproduced here**, beside the paper's figure for
   the same method where one is transcribed (``PAPER_EXCESS``), never its maximum.
5. **Confirmation.** The premise setting was chosen on test pairs 0–999. It is judged
   again with fresh student seeds (10, 11) on test pairs 1000–1999 and on a natural-ratio
   resample of the test file (about 14% clones, BigCloneBench's ratio), which chose
   nothing. The page shows selection and confirmation apart; a setting is confirmed when
   rule 3 holds on the confirmation rows.
6. **``fidelity``'s headline** uses only the transformations it did not train on
   (:data:`FIDELITY_SEEN` excluded); the seen ones are reported apart.
7. **Reporting.** Intervals are 95% (90% for TOST); p-values of bootstraps floored at
   1/(B + 1) with B named; "not established" where a rule cannot decide.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .verdicts import holm

__all__ = [
    "ALPHA",
    "FIDELITY_SEEN",
    "PAPER_EXCESS",
    "attack_excess",
    "excess_over_reference",
    "holm_verdicts",
    "metamorphic_increment",
    "spread",
    "success_rate",
    "t_one_sided",
    "tost_total",
]

ALPHA = 0.05
BUDGETS = (30, 100, 300)
TEACHER_SUCCESS_FLOOR = 0.15
FIDELITY_SEEN = ("rename_variables", "insert_dead_code")
# the paper's excess drop per method on clone detection, where transcribed from its tables;
# None renders "not transcribed" (the abstract's 285% is a maximum, never used as a figure)
PAPER_EXCESS: dict[str, float | None] = {"compressor": None, "avatar": None, "morph": None, "fidelity": None}


def t_one_sided(values: Sequence[float]) -> dict[str, float]:
    """One-sample t-test of ``mean > 0`` over units (teachers): mean, 95% two-sided t
    interval, one-sided p. Fewer than 2 units or zero spread with mean 0: p = NaN."""
    from scipy import stats

    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = len(x)
    if n < 2:
        return {"mean": float(x.mean()) if n else math.nan, "low": math.nan, "high": math.nan, "p": math.nan, "n": n}
    mean, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(n))
    if se == 0.0:
        p = 0.0 if mean > 0 else 1.0
        return {"mean": mean, "low": mean, "high": mean, "p": p, "n": n}
    t = stats.t.ppf(0.975, n - 1)
    return {
        "mean": mean,
        "low": mean - t * se,
        "high": mean + t * se,
        "p": float(stats.t.sf(mean / se, n - 1)),
        "n": n,
    }


def _unit_means(per_teacher: Mapping[str, Sequence[float]]) -> list[float]:
    return [float(np.mean(v)) for v in per_teacher.values() if len(v)]


def excess_over_reference(student: Mapping[str, Sequence[float]], reference: Mapping[str, float]) -> dict[str, float]:
    """Rule 1: ``student[teacher]`` holds the rate of each student seed against that teacher,
    ``reference[teacher]`` the mean rate of the other teachers against it (same rows).
    Returns :func:`t_one_sided` of the per-teacher excess, plus the per-teacher values."""
    d = {t: float(np.mean(v)) - float(reference[t]) for t, v in student.items() if len(v) and t in reference}
    return {**t_one_sided(list(d.values())), **{f"teacher:{t}": v for t, v in d.items()}}


def metamorphic_increment(original: np.ndarray, transformed: np.ndarray, covered: np.ndarray) -> float:
    """Rule 2: per row, the mean flag over its transformed variants minus its original flag,
    averaged over the rows that have a transformed variant. ``original`` (rows,) flags;
    ``transformed`` (rows, variants) flags; ``covered`` (rows, variants) which variants exist."""
    original = np.asarray(original, dtype=float)
    transformed = np.asarray(transformed, dtype=float)
    covered = np.asarray(covered, dtype=bool)
    counts = covered.sum(axis=1)
    rows = counts > 0
    if not rows.any():
        return math.nan
    mean_t = np.where(covered, transformed, 0.0).sum(axis=1)[rows] / counts[rows]
    return float(np.mean(mean_t - original[rows]))


def tost_total(gaps: np.ndarray, margin: float) -> dict[str, float]:
    """Rule 3: TOST that the mean gap lies inside ±``margin`` on the total error.

    ``gaps`` is (units, rows): per teacher × seed unit, the per-row gap (teacher correct −
    student correct, in the margin's unit), every unit on the same rows. The seed part of
    the variance is the spread of the unit means / units; the row part is the variance of
    the per-row gap averaged over units / rows. df = units − 1. Returns the mean, the TOST
    p-value, and the 90% interval."""
    from scipy import stats

    g = np.asarray(gaps, dtype=float)
    units, rows = g.shape
    if units < 2 or rows < 2:
        return {"mean": float(g.mean()) if g.size else math.nan, "p": math.nan, "low": math.nan, "high": math.nan}
    unit_means = g.mean(axis=1)
    mean = float(unit_means.mean())
    se_seed2 = float(unit_means.var(ddof=1)) / units
    se_row2 = float(g.mean(axis=0).var(ddof=1)) / rows
    se = math.sqrt(se_seed2 + se_row2)
    df = units - 1
    if se == 0.0:
        return {"mean": mean, "p": 0.0 if abs(mean) < margin else 1.0, "low": mean, "high": mean}
    p = max(float(stats.t.sf((mean + margin) / se, df)), float(stats.t.cdf((mean - margin) / se, df)))
    t = stats.t.ppf(0.95, df)
    return {
        "mean": mean,
        "p": p,
        "low": mean - t * se,
        "high": mean + t * se,
        "se_seed": math.sqrt(se_seed2),
        "se_rows": math.sqrt(se_row2),
    }


def success_rate(correct_before: np.ndarray, flipped: np.ndarray) -> float:
    """Rule 4's measure: of the rows classified correctly before the attack, the share the
    attack flipped (``flipped`` counts only rows that were correct and became wrong)."""
    correct_before = np.asarray(correct_before, dtype=bool)
    flipped = np.asarray(flipped, dtype=bool)
    if (flipped & ~correct_before).any():
        raise ValueError("a flipped row must have been classified correctly before the attack")
    n = int(correct_before.sum())
    return float(flipped.sum() / n) if n else math.nan


def attack_excess(student: Mapping[str, Sequence[float]], teacher: Mapping[str, float]) -> dict[str, float]:
    """Rule 4: per teacher, the mean over student seeds of log(student success / teacher
    success), tested one-sided over teachers; ``ratio`` = exp(mean) − 1 (the excess, so a
    student as easy to attack as its teacher scores 0)."""
    logs = {}
    for t, rates in student.items():
        if t in teacher and teacher[t] > 0 and len(rates) and all(r > 0 for r in rates):
            logs[t] = float(np.mean([math.log(r / teacher[t]) for r in rates]))
    out = t_one_sided(list(logs.values()))
    excess = {k: (math.exp(out[k]) - 1 if math.isfinite(out[k]) else math.nan) for k in ("mean", "low", "high")}
    return {**out, "excess": excess["mean"], "excess_low": excess["low"], "excess_high": excess["high"]}


def holm_verdicts(results: Mapping[str, Mapping[str, float]], yes: str, no: str) -> dict[str, dict[str, Any]]:
    """Holm over the methods of ``results[method]["p"]``: each method's adjusted p and its
    verdict (``yes`` below α, else ``no``; "not established" where p is NaN)."""
    adjusted = holm({m: float(r["p"]) for m, r in results.items()})
    out: dict[str, dict[str, Any]] = {}
    for m, p in adjusted.items():
        verdict = "not established" if math.isnan(p) else (yes if p < ALPHA else no)
        out[m] = {**results[m], "p_holm": p, "verdict": verdict}
    return out


def spread(per_teacher_seeds: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The spread between student seeds (the mean within-teacher SD) beside the spread
    between teachers (the SD of the per-teacher means): descriptive, no test."""
    within = [float(np.std(v, ddof=1)) for v in per_teacher_seeds.values() if len(v) > 1]
    means = _unit_means(per_teacher_seeds)
    return {
        "between_seeds_sd": float(np.mean(within)) if within else math.nan,
        "between_teachers_sd": float(np.std(means, ddof=1)) if len(means) > 1 else math.nan,
    }
