"""McNemar's exact test on paired correctness (McNemar, Psychometrika 1947), for the
evaluator's ``accuracy_drop_pvalue`` (:mod:`.statistics`).

With ``b`` = rows the teacher gets right and the student wrong and ``c`` the reverse,
``accuracy_drop_pvalue`` is the two-sided exact binomial test of ``b`` successes in
``b + c`` trials at ``p = 1/2``, i.e. ``min(1, 2·P(X ≤ min(b, c)))`` (1 when ``b + c = 0``).
"""

from __future__ import annotations

import numpy as np


def binom_two_sided_half(k: int, trials: int) -> float:
    """Two-sided exact binomial p-value of ``k`` successes in ``trials`` at ``p = 1/2``:
    ``min(1, 2·Σ_{j ≤ min(k, trials−k)} C(trials, j) / 2^trials)`` (the distribution is
    symmetric, so this is the sum over outcomes no more likely than ``k``, as in
    ``scipy.stats.binomtest``). Log-space sum: exact to ~1e-12 relative, no overflow."""
    if trials < 0 or not 0 <= k <= trials:
        raise ValueError(f"need 0 <= k <= trials, got k={k}, trials={trials}")
    if trials == 0 or 2 * k == trials:
        return 1.0
    m = min(k, trials - k)
    j = np.arange(m, dtype=np.float64)
    log_c = np.concatenate([[0.0], np.cumsum(np.log((trials - j) / (j + 1)))])  # log C(trials, 0..m)
    top = log_c.max()
    log_tail = top + np.log(np.exp(log_c - top).sum()) - trials * np.log(2.0)
    return float(min(1.0, 2.0 * np.exp(log_tail)))


def mcnemar_exact(teacher_correct: np.ndarray, student_correct: np.ndarray) -> tuple[float, int, int]:
    """McNemar's exact test on paired correctness: ``(p-value, b, c)`` with ``b`` = teacher
    right and student wrong, ``c`` = teacher wrong and student right."""
    t = np.asarray(teacher_correct, dtype=bool)
    s = np.asarray(student_correct, dtype=bool)
    b, c = int((t & ~s).sum()), int((~t & s).sum())
    return binom_two_sided_half(b, b + c), b, c
