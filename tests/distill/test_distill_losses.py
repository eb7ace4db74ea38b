"""kd_loss against hand-computed golden values and a SciPy oracle; guards against the
classic bugs (softmax over the wrong dim, missing T², cross-entropy over probabilities)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import rel_entr, softmax

from mlflow_metacompress.distill.losses import hard_label_loss, kd_loss, relation_agreement
from mlflow_metacompress.relations import evaluate_relations


def test_golden_values_t1_and_t2():
    # teacher p = softmax([ln 3, 0]) = (3/4, 1/4), student q = (1/2, 1/2)
    s, t = torch.tensor([[0.0, 0.0]]), torch.tensor([[math.log(3.0), 0.0]])
    golden_t1 = 0.75 * math.log(1.5) + 0.25 * math.log(0.5)  # 0.130812...
    assert kd_loss(s, t, 1.0).item() == pytest.approx(golden_t1, rel=1e-6)
    assert golden_t1 == pytest.approx(0.1308120, abs=1e-6)
    # at T = 2, p = (√3, 1)/(√3 + 1); the loss is multiplied by T² = 4
    p = math.sqrt(3) / (math.sqrt(3) + 1)
    golden_t2 = 4 * (p * math.log(2 * p) + (1 - p) * math.log(2 * (1 - p)))
    assert kd_loss(s, t, 2.0).item() == pytest.approx(golden_t2, rel=1e-6)
    assert golden_t2 == pytest.approx(0.1453631, abs=1e-6)


@pytest.mark.parametrize("temperature", [0.5, 1.0, 3.0])
def test_matches_scipy_oracle_batchmean_over_classes(temperature):
    rng = np.random.default_rng(0)
    s, t = rng.normal(size=(5, 3)) * 2, rng.normal(size=(5, 3)) * 2  # N ≠ K catches a wrong softmax dim
    p, q = softmax(t / temperature, axis=1), softmax(s / temperature, axis=1)
    expected = rel_entr(p, q).sum(axis=1).mean() * temperature**2
    got = kd_loss(torch.tensor(s), torch.tensor(t), temperature).item()
    assert got == pytest.approx(expected, rel=1e-5)


def test_zero_iff_same_distribution_and_shift_invariant():
    t = torch.tensor([[2.0, -1.0, 0.5], [0.0, 0.0, 3.0]])
    assert kd_loss(t, t, 2.0).item() == pytest.approx(0.0, abs=1e-7)
    # adding a per-row constant (log-probs vs logits) changes nothing
    assert kd_loss(t + 7.0, t.log_softmax(-1), 1.5).item() == pytest.approx(0.0, abs=1e-6)
    assert kd_loss(t.flip(-1), t, 1.0).item() > 0.1


def test_gradient_points_student_toward_teacher():
    s = torch.zeros(1, 2, requires_grad=True)
    kd_loss(s, torch.tensor([[2.0, 0.0]]), 1.0).backward()
    # d/ds KL(p || softmax(s)) = q - p: negative on the teacher's favourite class
    p0 = 1 / (1 + math.exp(-2.0))
    assert s.grad[0, 0].item() == pytest.approx(0.5 - p0, rel=1e-5)
    assert s.grad[0, 1].item() == pytest.approx(p0 - 0.5, rel=1e-5)


def test_bad_inputs():
    with pytest.raises(ValueError, match="temperature must be positive"):
        kd_loss(torch.zeros(1, 2), torch.zeros(1, 2), 0.0)
    with pytest.raises(ValueError, match=r"\(2, 2\).*\(2, 3\)"):
        kd_loss(torch.zeros(2, 2), torch.zeros(2, 3))


def test_hard_label_loss_is_cross_entropy_on_logits():
    logits, y = torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0])
    expected = -(math.log(softmax([2.0, 0.0])[0]) + math.log(softmax([0.0, 1.0])[0])) / 2
    assert hard_label_loss(logits, y).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_relation_agreement_matches_the_evaluator_relations(seed):
    rng = np.random.default_rng(seed)
    n, k = 400, int(rng.choice([2, 3]))
    t = rng.normal(scale=rng.uniform(0.5, 4), size=(n, k))
    s = np.where(rng.random((n, 1)) < 0.5, t + rng.normal(scale=0.3, size=(n, k)), rng.normal(scale=3, size=(n, k)))
    kept = relation_agreement(torch.tensor(s), torch.tensor(t)).numpy()
    per = evaluate_relations(softmax(t, axis=1), softmax(s, axis=1)).per_sample
    gap = np.abs(per["mr4_teacher_conf"] - per["mr4_student_conf_at_teacher"]) > 0.05
    violated = per["mr1_violation"] | per["mr2_violation"] | per["mr3_violation"] | gap
    np.testing.assert_array_equal(kept, ~violated)
    assert 0 < kept.sum() < n  # both outcomes occur
    # every row kept here has no violation in the evaluator's per-sample any_violation
    assert not per["any_violation"][kept].any()
