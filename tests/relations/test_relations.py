"""Relations against independent oracles (scipy, sklearn, direct loops) on random inputs,
plus hand-worked examples and edge cases."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy.special import rel_entr
from sklearn.metrics import accuracy_score, f1_score

from mlflow_metacompress import relations as R
from tests.conftest import random_probs

SEEDS = range(20)


def ece_loop(P, y, B):
    """Guo et al. 2017 ECE written as a plain loop over bins."""
    total = 0.0
    n = len(P)
    for b in range(B):
        members = [i for i in range(n) if min(int(np.floor(P[i].max() * B)), B - 1) == b]
        if not members:
            continue
        acc = np.mean([P[i].argmax() == y[i] for i in members])
        conf = np.mean([P[i].max() for i in members])
        total += len(members) / n * abs(acc - conf)
    return total


def eca_loop(PT, PS, B, thr):
    n = len(PT)
    eca = viol = 0.0
    for b in range(B):
        members = [i for i in range(n) if min(int(np.floor(PT[i].max() * B)), B - 1) == b]
        if not members:
            continue
        yT = [PT[i].argmax() for i in members]
        gap = abs(
            np.mean([PT[i, t] for i, t in zip(members, yT, strict=True)])
            - np.mean([PS[i, t] for i, t in zip(members, yT, strict=True)])
        )
        eca += len(members) / n * gap
        viol += len(members) / n * (gap > thr)
    return eca, viol


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [2, 5])
def test_relations_match_oracles(seed, k):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    PT, PS = random_probs(rng, n, k, 3.0), random_probs(rng, n, k, 2.0)
    y = rng.integers(0, k, n)
    res = R.evaluate_relations(PT, PS, y)
    m = res.metrics
    # MR1 against a direct comparison
    assert m["mr1_violation_rate"] == pytest.approx(np.mean(PT.argmax(1) != PS.argmax(1)))
    # MR2 against scipy's rel_entr
    kl = rel_entr(PT, np.maximum(PS, 1e-12)).sum(axis=1)
    np.testing.assert_allclose(res.per_sample["kl"], kl, rtol=1e-9, atol=1e-12)
    assert m["mr2_mean_kl"] == pytest.approx(kl.mean())
    assert m["mr2_violation_rate"] == pytest.approx(np.mean(kl > 0.1))
    # MR3 against a loop
    H = [i for i in range(n) if PT[i].max() >= 0.8]
    if H:
        v = [PS[i].argmax() != PT[i].argmax() or PS[i, PT[i].argmax()] < 0.8 for i in H]
        assert m["mr3_violation_rate"] == pytest.approx(np.mean(v))
        assert m["mr3_support"] == pytest.approx(len(H) / n)
        assert m["mr3_hcar"] == pytest.approx(1 - np.mean(v))
    else:
        assert "mr3_violation_rate" not in m
    # MR4 against a loop
    eca, viol = eca_loop(PT, PS, 10, 0.05)
    assert m["mr4_eca"] == pytest.approx(eca)
    assert m["mr4_violation_rate"] == pytest.approx(viol)
    # labelled metrics against sklearn and the ECE loop
    assert m["teacher_accuracy"] == pytest.approx(accuracy_score(y, PT.argmax(1)))
    assert m["accuracy_drop"] == pytest.approx(accuracy_score(y, PT.argmax(1)) - accuracy_score(y, PS.argmax(1)))
    assert m["teacher_ece"] == pytest.approx(ece_loop(PT, y, 10))
    assert m["student_ece"] == pytest.approx(ece_loop(PS, y, 10))
    assert m["mr4_ece_gap"] == pytest.approx(abs(ece_loop(PS, y, 10) - ece_loop(PT, y, 10)))
    if k == 2:
        assert m["student_f1"] == pytest.approx(f1_score(y, PS.argmax(1), pos_label=1, zero_division=0))
    else:
        assert "student_f1" not in m
    # per-sample MR4: in a violating bin and the sample's own gap above the threshold (loop)
    flags = []
    for i in range(n):
        b = min(int(np.floor(PT[i].max() * 10)), 9)
        members = [j for j in range(n) if min(int(np.floor(PT[j].max() * 10)), 9) == b]
        gap_b = abs(np.mean([PT[j].max() for j in members]) - np.mean([PS[j, PT[j].argmax()] for j in members]))
        flags.append(gap_b > 0.05 and abs(PT[i].max() - PS[i, PT[i].argmax()]) > 0.05)
    assert res.per_sample["mr4_violation"].tolist() == flags
    # any-violation is the union of the four flags
    ps = res.per_sample
    union = ps["mr1_violation"] | ps["mr2_violation"] | ps["mr3_violation"] | ps["mr4_violation"]
    assert m["any_violation_rate"] == pytest.approx(union.mean())
    assert all(np.isfinite(v) for v in m.values())


def test_hand_worked_example():
    PT = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.95, 0.05]])
    PS = np.array([[0.85, 0.15], [0.3, 0.7], [0.22, 0.78], [0.95, 0.05]])
    res = R.evaluate_relations(PT, PS, np.array([0, 0, 1, 1]))
    m = res.metrics
    assert m["mr1_violation_rate"] == 0.25  # only row 1 flips
    # row 0: 0.9 ln(0.9/0.85) + 0.1 ln(0.1/0.15)
    kl0 = 0.9 * np.log(0.9 / 0.85) + 0.1 * np.log(0.1 / 0.15)
    assert res.per_sample["kl"][0] == pytest.approx(kl0)
    # H = rows 0, 2, 3 (teacher conf ≥ 0.8); row 2: student gives class 1 only 0.75 < 0.8
    assert m["mr3_support"] == 0.75
    assert m["mr3_violation_rate"] == pytest.approx(1 / 3)
    # bins: a_T = 0.9 (bin 9), 0.6 (bin 6), 0.8 (bin 8), 0.95 (bin 9)
    # bin 9: |mean(0.9, 0.95) − mean(0.85, 0.95)| = 0.025; bin 6: |0.6 − 0.3| = 0.3; bin 8: 0.02
    assert m["mr4_eca"] == pytest.approx(0.5 * 0.025 + 0.25 * 0.3 + 0.25 * 0.02)
    assert m["mr4_violation_rate"] == pytest.approx(0.25)  # only bin 6 exceeds 0.05
    assert m["teacher_accuracy"] == 0.75 and m["student_accuracy"] == 0.5  # preds T [0,0,1,0], S [0,1,1,0]


def test_confident_teacher_top_bin_violation_marks_only_the_samples_that_cause_it():
    # a confident teacher (all in the top bin); the student matches it exactly on 70 rows
    # and flips 30: the bin's mean gap is far above 0.05, but the 70 matched rows violate nothing
    PT = np.tile([0.97, 0.03], (100, 1))
    PS = PT.copy()
    PS[70:] = [0.1, 0.9]
    res = R.evaluate_relations(PT, PS)
    m, ps = res.metrics, res.per_sample
    assert m["mr4_violation_rate"] == 1.0 and ps["mr4_bin_violation"].all()  # the bin-level verdict
    assert ps["mr4_violation"].tolist() == [False] * 70 + [True] * 30
    assert m["any_violation_rate"] == pytest.approx(0.3) == m["mr1_violation_rate"]


def test_ties_go_to_lowest_index_and_zero_probabilities():
    PT = np.array([[0.5, 0.5], [1.0, 0.0]])
    PS = np.array([[0.5, 0.5], [0.0, 1.0]])
    res = R.evaluate_relations(PT, PS)
    assert res.per_sample["teacher_pred"].tolist() == [0, 0]
    # 0·log 0 = 0 and p_S clipped at 1e-12: KL = 1·ln(1/1e-12)
    assert res.per_sample["kl"][1] == pytest.approx(np.log(1e12))
    assert res.per_sample["kl"][0] == 0.0


def test_empty_high_confidence_set_omits_mr3(caplog):
    PT = np.full((10, 3), 1 / 3)
    with caplog.at_level(logging.WARNING):
        res = R.evaluate_relations(PT, PT)
    assert not any(k.startswith("mr3") for k in res.metrics)
    assert "MR3" in caplog.text
    assert res.metrics["mr1_violation_rate"] == 0.0 and res.metrics["mr2_mean_kl"] == pytest.approx(0.0)


def test_one_class_dominating_identical_models_have_no_violation():
    PT = np.tile([0.99, 0.005, 0.005], (50, 1))
    res = R.evaluate_relations(PT, PT.copy(), np.zeros(50, dtype=int))
    assert res.metrics["any_violation_rate"] == 0.0
    assert res.metrics["mr3_support"] == 1.0 and res.metrics["mr4_eca"] == pytest.approx(0.0)


def test_top_bin_includes_confidence_one():
    assert R.bin_index(np.array([1.0, 0.999, 0.1, 0.0]), 10).tolist() == [9, 9, 1, 0]


def test_shape_mismatch_is_rejected():
    with pytest.raises(ValueError, match="shape"):
        R.evaluate_relations(np.ones((3, 2)) / 2, np.ones((3, 3)) / 3)
