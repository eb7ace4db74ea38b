"""The three-teacher study's rules (issue 42; mlflow_metacompress/study/replica.py), each
checked against an independent oracle (scipy, statsmodels, a direct loop) and tried on a
negative control."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import DescrStatsW

from mlflow_metacompress.study import replica as r


def test_t_one_sided_is_scipys_one_sample_t_test():
    x = [0.04, 0.07, 0.02]
    out = r.t_one_sided(x)
    ref = stats.ttest_1samp(x, 0.0, alternative="greater")
    assert out["p"] == pytest.approx(ref.pvalue, rel=1e-12)
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert (out["low"], out["high"]) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert math.isnan(r.t_one_sided([0.1])["p"])  # one teacher cannot decide


def test_excess_over_reference_pairs_each_teacher_with_its_own_reference():
    student = {"t0": [0.20, 0.22], "t1": [0.18], "t2": [0.25]}
    reference = {"t0": 0.10, "t1": 0.12, "t2": 0.11}
    out = r.excess_over_reference(student, reference)
    d = [0.21 - 0.10, 0.18 - 0.12, 0.25 - 0.11]
    assert [out[f"teacher:{t}"] for t in ("t0", "t1", "t2")] == pytest.approx(d)
    assert out["p"] == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
    # negative control: a student no worse than the reference does not appear
    null = r.excess_over_reference({"t0": [0.10], "t1": [0.13], "t2": [0.10]}, reference)
    assert null["p"] > 0.3


def test_metamorphic_increment_is_the_per_row_paired_difference():
    rng = np.random.default_rng(0)
    original = rng.random(50) < 0.1
    transformed = rng.random((50, 4)) < 0.3
    covered = rng.random((50, 4)) < 0.7
    covered[0] = False  # a row without variants is left out
    expected = []
    for i in range(50):
        if covered[i].any():
            expected.append(transformed[i][covered[i]].mean() - original[i])
    assert r.metamorphic_increment(original, transformed, covered) == pytest.approx(np.mean(expected))
    # the same flags on originals and variants: no increment
    same = np.repeat(original[:, None], 4, axis=1)
    assert r.metamorphic_increment(original, same, np.ones((50, 4), bool)) == 0.0


def test_tost_total_without_row_noise_is_statsmodels_one_sample_tost():
    unit_gaps = np.array([1.7, 1.8, -0.4, 0.5])
    gaps = np.repeat(unit_gaps[:, None], 200, axis=1)  # every row the same: no row part
    out = r.tost_total(gaps, 3.0)
    p, _, _ = DescrStatsW(unit_gaps).ttost_mean(-3.0, 3.0)
    assert out["p"] == pytest.approx(p, rel=1e-10)
    assert out["se_rows"] == pytest.approx(0.0, abs=1e-12)


def test_tost_total_counts_the_row_error_and_refuses_a_shifted_control():
    rng = np.random.default_rng(1)
    unit = np.array([1.7, 1.8, -0.4, 0.5])
    # per-row gaps in points: each row ±100 (one row correct for one model only) around the unit mean
    rows = rng.choice([-100.0, 0.0, 100.0], size=(1, 1000), p=[0.05, 0.9, 0.05])
    noisy = unit[:, None] + rows
    seed_only = r.tost_total(np.repeat(unit[:, None], 1000, axis=1), 3.0)
    total = r.tost_total(noisy, 3.0)
    assert total["se_rows"] > 0 and total["p"] > seed_only["p"]  # the row part widens it
    assert total["high"] - total["low"] > seed_only["high"] - seed_only["low"]
    assert r.tost_total(noisy + 5.0, 3.0)["p"] > 0.5  # a 5-point gap is not "within 3"


def test_success_rate_counts_among_correct_rows_and_rejects_impossible_flips():
    correct = np.array([1, 1, 1, 1, 0, 0], bool)
    flipped = np.array([1, 0, 0, 0, 0, 0], bool)
    assert r.success_rate(correct, flipped) == 0.25
    with pytest.raises(ValueError, match="correctly before"):
        r.success_rate(correct, np.array([0, 0, 0, 0, 1, 0], bool))


def test_attack_excess_is_a_t_test_of_log_ratios_over_teachers():
    student = {"t0": [0.30, 0.34], "t1": [0.28], "t2": [0.40]}
    teacher = {"t0": 0.18, "t1": 0.16, "t2": 0.20}
    logs = [np.mean([math.log(0.30 / 0.18), math.log(0.34 / 0.18)]), math.log(0.28 / 0.16), math.log(0.40 / 0.20)]
    out = r.attack_excess(student, teacher)
    assert out["p"] == pytest.approx(stats.ttest_1samp(logs, 0.0, alternative="greater").pvalue)
    assert out["excess"] == pytest.approx(math.exp(np.mean(logs)) - 1)
    same = r.attack_excess({"t0": [0.18], "t1": [0.17], "t2": [0.19]}, teacher)  # negative control
    assert same["p"] > 0.2


@pytest.mark.slow
def test_holm_verdicts_match_statsmodels_and_say_not_established_on_nan():
    res = {"compressor": {"p": 0.01}, "morph": {"p": 0.04}, "fidelity": {"p": 0.03}, "avatar": {"p": math.nan}}
    out = r.holm_verdicts(res, "appears", "does not appear")
    ps = [0.01, 0.04, 0.03]
    expected = multipletests(ps, method="holm")[1]
    assert [out[m]["p_holm"] for m in ("compressor", "morph", "fidelity")] == pytest.approx(list(expected))
    assert out["compressor"]["verdict"] == "appears" and out["morph"]["verdict"] == "does not appear"
    assert out["avatar"]["verdict"] == "not established"


def test_spread_sets_student_seeds_beside_teachers():
    out = r.spread({"t0": [0.1, 0.2], "t1": [0.3, 0.3], "t2": [0.5]})
    assert out["between_seeds_sd"] == pytest.approx(np.mean([np.std([0.1, 0.2], ddof=1), 0.0]))
    assert out["between_teachers_sd"] == pytest.approx(np.std([0.15, 0.3, 0.5], ddof=1))
