"""The statistics behind the reproduction's verdicts (the rules are listed in :mod:`.markdown`).

- Rates get intervals that stay inside [0, 1]: a Student-t interval over seeds on the
  logit scale (the usual transformation for proportions, Agresti, *Categorical Data
  Analysis*, 3rd ed., §1.4), or, when a seed's rate is 0 or 1, the exact Clopper–Pearson
  interval (Clopper & Pearson, Biometrika 1934) on the counts pooled over seeds, widened
  with two or more seeds to cover the t-interval of the empirical logits (the spread
  between seeds, which pooling leaves out).
- The excess accuracy drop under attack is a ratio of two small counts (the student's
  and the teacher's flipped rows), so it is judged on the log scale (Katz et al.,
  Biometrics 1978): ``exp`` of an interval of log ratios never goes below −100%.
- Total uncertainty: a two-level bootstrap (Davison & Hinkley, *Bootstrap Methods*, 1997,
  §3.8) resamples seeds and, within them, test rows (the same rows for every seed).
- Multiplicity: Holm's step-down adjustment (Holm, Scand. J. Statistics 1979).
- Equivalence: two one-sided tests, TOST (Schuirmann, J. Pharmacokinet. Biopharm. 1987).
- Bootstrap p-values are ``(1 + #extreme) / (B + 1)`` (Davison & Hinkley §4.2), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .seeds import finite

LEVEL = 0.95


def floor_p(p: float, resamples: int) -> float:
    """A bootstrap p-value no smaller than ``1 / (resamples + 1)`` (the resolution of ``resamples``)."""
    return max(float(p), 1.0 / (resamples + 1))


def boot_p(stats: np.ndarray, null: float, side: str = "greater") -> float:
    """Bootstrap p-value of ``stats`` against ``null``: ``(1 + #{stat* on the null's side}) / (B + 1)``;
    ``side="greater"`` tests H1: parameter > null, ``"two"`` doubles the smaller tail (at most 1)."""
    b = len(stats)
    low = (1 + np.sum(stats <= null)) / (b + 1)
    if side == "greater":
        return float(low)
    high = (1 + np.sum(stats >= null)) / (b + 1)
    return float(min(1.0, 2 * min(low, high)))


def holm(pvalues: Mapping[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values (NaN ones left out and returned as NaN)."""
    named = sorted(((p, k) for k, p in pvalues.items() if not math.isnan(p)), key=lambda x: x[0])
    m, out, running = len(named), {k: math.nan for k in pvalues}, 0.0
    for i, (p, k) in enumerate(named):
        running = max(running, min(1.0, (m - i) * p))
        out[k] = running
    return out


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact binomial interval of ``k`` successes in ``n`` trials."""
    from scipy import stats

    if n <= 0:
        return math.nan, math.nan
    a = (1 - level) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))
    return low, high


def logit_t_interval(values: Sequence[float | None], level: float = LEVEL) -> tuple[float, float]:
    """Student-t interval over seeds of rates in (0, 1), computed on the logit scale and
    mapped back (NaN with fewer than two values or a value of 0 or 1)."""
    from scipy import stats
    from scipy.special import expit, logit

    x = np.asarray(finite(values), dtype=float)
    if len(x) < 2 or np.any((x <= 0) | (x >= 1)):
        return math.nan, math.nan
    z = logit(x)
    half = float(stats.t.ppf((1 + level) / 2, len(z) - 1) * z.std(ddof=1) / math.sqrt(len(z)))
    return float(expit(z.mean() - half)), float(expit(z.mean() + half))


def rate_interval(values: Sequence[float | None], n: Sequence[float | None] | None = None) -> dict[str, Any]:
    """A rate's interval over seeds that never leaves [0, 1]: logit-scale t when every seed's
    rate is inside (0, 1), else Clopper–Pearson on the pooled counts (``n``: each seed's
    denominator), widened with two or more seeds to cover the empirical-logit t-interval,
    else none. ``method`` names the one used."""
    x = finite(values)
    low, high = logit_t_interval(values)
    if not math.isnan(low):
        return {"low": low, "high": high, "method": "logit-t"}
    pairs = [
        (v[0], d[0]) for v, d in ((finite([a]), finite([b])) for a, b in zip(values, n or [], strict=False)) if v and d
    ]
    if x and pairs:
        k, total = round(sum(v * d for v, d in pairs)), round(sum(d for _, d in pairs))
        low, high = clopper_pearson(k, total)
        # pooled counts leave out the spread between seeds (seeds at 12% and 100% pool to a
        # narrow interval): with two or more seeds, also the t-interval of the empirical
        # logits (k + 1/2) / (n + 1) (Cox & Snell, *Analysis of Binary Data*, 1989); the union
        elogit: tuple[float, float] = (math.nan, math.nan)
        if len(pairs) >= 2:
            elogit = logit_t_interval([(v * d + 0.5) / (d + 1) for v, d in pairs])
        if not math.isnan(elogit[0]):
            return {
                "low": min(low, elogit[0]),
                "high": max(high, elogit[1]),
                "method": f"clopper-pearson {k}/{total} ∪ empirical-logit t",
            }
        return {"low": low, "high": high, "method": f"clopper-pearson {k}/{total}"}
    return {"low": math.nan, "high": math.nan, "method": "none"}


def tost(differences: Sequence[float | None], margin: float) -> float:
    """TOST p-value that the mean of ``differences`` lies inside (−margin, +margin): the larger
    of two one-sided one-sample t-tests (NaN with fewer than two values; with no spread,
    0 when the mean is inside and 1 when not)."""
    from scipy import stats

    d = np.asarray(finite(differences), dtype=float)
    if len(d) < 2:
        return math.nan
    if np.all(d == d[0]):
        return 0.0 if abs(d[0]) < margin else 1.0
    lower = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
    upper = stats.ttest_1samp(d, margin, alternative="less").pvalue
    return float(max(lower, upper))


def two_level_rows(k: np.ndarray, n: np.ndarray, resamples: int, seed: int = 0) -> np.ndarray:
    """Two-level bootstrap of a pooled rate from per-row counts ``k``/``n`` (seeds × rows, the
    same rows for every seed): each resample draws seeds and rows with replacement (one row
    draw shared by the seeds, as they judged the same rows) and averages the seeds' pooled
    rates. Returns the ``resamples`` statistics."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    rng = np.random.default_rng(seed)
    s, r = k.shape
    out = np.empty(resamples)
    for b in range(resamples):
        seeds, rows = rng.integers(0, s, size=s), rng.integers(0, r, size=r)
        num, den = k[np.ix_(seeds, rows)].sum(axis=1), n[np.ix_(seeds, rows)].sum(axis=1)
        out[b] = float(np.mean(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)))
    return out


def _within_se(w: Sequence[float | None] | None) -> float:
    """The standard error a within-run 95% interval implies (width / 3.92), 0 without one."""
    ends = finite(list(w or [])[:2])
    return (ends[1] - ends[0]) / 3.92 if len(ends) == 2 else 0.0


def two_level_within(
    values: Sequence[float | None],
    within: Sequence[Sequence[float | None] | None],
    resamples: int,
    seed: int = 0,
    clip: tuple[float, float] = (0.0, 1.0),
) -> np.ndarray:
    """Two-level bootstrap when only each seed's value and its within-run 95% interval are
    stored: seeds with replacement, then a normal draw per seed with the standard error
    its within-run interval implies, clipped to ``clip`` (a rate stays in [0, 1]). The
    draw is shared by the seeds of a resample (they judged the same rows, so their
    row-sampling errors are taken as fully correlated: the wider choice). Seeds without a
    within-run interval contribute their value alone."""
    pairs = [(x[0], _within_se(w)) for x, w in ((finite([v]), w) for v, w in zip(values, within, strict=True)) if x]
    if not pairs:
        return np.full(resamples, np.nan)
    v, se = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(v), size=(resamples, len(v)))
    # one row-level draw per resample, shared by the seeds: they judged the same rows
    draws = np.clip(v[idx] + rng.standard_normal((resamples, 1)) * se[idx], *clip)
    return np.asarray(draws.mean(axis=1))


def pooled_log_ratio(student: np.ndarray, teacher: np.ndarray) -> np.ndarray:
    """Per seed: log((Σ student flips + ½) / (Σ teacher flips + ½)) over the attacks (the last
    axis), the ½ keeping a seed with no flips finite (Haldane's correction)."""
    return np.log((np.sum(student, axis=-1) + 0.5) / (np.sum(teacher, axis=-1) + 0.5))


def excess_drop(student: Any, teacher: Any, rows: Any, resamples: int, seed: int = 0) -> dict[str, Any]:
    """The excess accuracy drop under attack of one method, pooled over the attacks: the
    student's flipped rows ``student`` and the teacher's ``teacher`` (seeds × attacks) out
    of ``rows`` attacked rows per (seed, attack).

    Returns the per-seed pooled log ratios, their mean with a t-interval over seeds, and a
    two-level bootstrap (seeds, then each count redrawn as a binomial of its rows: the
    flips of teacher and student taken as independent, which widens the interval when, as
    on shared hard rows, they are positively correlated; one draw per attack shared by the
    seeds, which attacked the same rows), all as excess fractions
    ``exp(log ratio) − 1`` (≥ −1), with the bootstrap's two-sided p-value of no excess.
    """
    from scipy import stats

    s, t, n = (np.asarray(a, dtype=float) for a in (student, teacher, rows))
    n = np.broadcast_to(n, s.shape)
    per_seed = pooled_log_ratio(s, t)
    mean = float(per_seed.mean())
    t_low = t_high = math.nan
    if len(per_seed) > 1:
        half = float(stats.t.ppf(0.975, len(per_seed) - 1) * per_seed.std(ddof=1) / math.sqrt(len(per_seed)))
        t_low, t_high = mean - half, mean + half
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(per_seed), size=(resamples, len(per_seed)))
    ni = n[idx].astype(int)
    # one uniform per resample and attack, shared by the seeds (the same rows were attacked
    # for every seed): the binomial quantile at it redraws each seed's count
    shape = (resamples, 1, s.shape[-1])
    sb = stats.binom.ppf(rng.random(shape), ni, np.clip(s[idx] / n[idx], 0, 1))
    tb = stats.binom.ppf(rng.random(shape), ni, np.clip(t[idx] / n[idx], 0, 1))
    boot = pooled_log_ratio(sb, tb).mean(axis=1)
    return {
        "per_seed": [math.expm1(x) for x in per_seed],
        "log_ratio": mean,
        "excess": math.expm1(mean),
        "t_low": math.expm1(t_low) if not math.isnan(t_low) else math.nan,
        "t_high": math.expm1(t_high) if not math.isnan(t_high) else math.nan,
        "boot_low": math.expm1(float(np.quantile(boot, 0.025))),
        "boot_high": math.expm1(float(np.quantile(boot, 0.975))),
        "pvalue": boot_p(boot, 0.0, "two"),
        "resamples": resamples,
        "teacher_flips": t.sum(axis=1).tolist(),
        "student_flips": s.sum(axis=1).tolist(),
        "rows": n.sum(axis=1).tolist(),
    }
