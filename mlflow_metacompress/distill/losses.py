"""Distillation losses as small functions with explicit temperatures.

Soft-label knowledge distillation (Hinton, Vinyals, Dean, "Distilling the Knowledge in
a Neural Network", 2015), as used by Compressor (Shi et al., ASE 2022) with T = 1:

    L_KD = T² · KL( softmax(t / T) ‖ softmax(s / T) )
         = T² · Σ_k p_k (log p_k − log q_k),  p = softmax(t/T), q = softmax(s/T),

averaged over the batch. The T² factor keeps gradient magnitudes comparable across
temperatures. Softmax is always taken over the class dimension (the last one).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..relations import KL_EPS, RelationConfig


def kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """KL(softmax(teacher/T) ‖ softmax(student/T)) · T², mean over the batch (N×K inputs)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(
            f"student logits {tuple(student_logits.shape)} and teacher logits "
            f"{tuple(teacher_logits.shape)} differ in shape"
        )
    log_q = F.log_softmax(student_logits.float() / temperature, dim=-1)
    log_p = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    kl = F.kl_div(log_q, log_p, reduction="batchmean", log_target=True)
    return kl * temperature**2


def hard_label_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy against integer labels (on logits, never on probabilities)."""
    return F.cross_entropy(logits.float(), labels.long())


def relation_agreement(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                       config: RelationConfig = RelationConfig()) -> torch.Tensor:
    """Per row, whether the student keeps all of MetaCompress's relations with the teacher
    (Awal, Rochan, Roy, arXiv 2511.05476; thresholds from ``config``, the evaluator's):
    same argmax (MR1), ``KL(p_T ‖ p_S) ≤ kl_threshold`` (MR2), confidence ≥ τ at the
    teacher's class where the teacher is ≥ τ sure (MR3), and ``|p_T,c − p_S,c| ≤
    eca_threshold`` at the teacher's class (MR4's per-sample gap, without its bin). A
    validation metric for checkpoint selection, not a loss (it has no gradient)."""
    log_p = F.log_softmax(teacher_logits.float(), dim=-1)
    log_q = F.log_softmax(student_logits.float(), dim=-1)
    p, q = log_p.exp(), log_q.exp()
    conf, cls = p.max(dim=-1)
    q_c = q.gather(-1, cls.unsqueeze(-1)).squeeze(-1)
    kl = (p * (log_p - log_q.clamp_min(math.log(KL_EPS)))).sum(-1)  # p_S floored as the relations do
    tau = config.confidence_threshold
    keeps_mr3 = (conf < tau) | (q_c >= tau)
    return (q.argmax(-1) == cls) & (kl <= config.kl_threshold) & keeps_mr3 & ((conf - q_c).abs() <= config.eca_threshold)
