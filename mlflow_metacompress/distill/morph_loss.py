"""MORPH's distillation loss (Panichella, "Metamorphic-Based Many-Objective
Distillation of LLMs for Code-related Tasks", ICSE 2025):

    L = T² · KL(softmax(t/T) ‖ softmax(s/T)) + w · mean_i (1 − cos(p_i, q_i)),
    p = softmax(t/T), q = softmax(s/T),

the soft-label KD term of :func:`.losses.kd_loss` plus one minus the cosine similarity
of the teacher's and the student's probability vectors (taken at the same temperature).
The paper states T = 3 while its replication code uses T = 10; the default here is the
paper's 3 (pass ``temperature=10`` to match the code).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .losses import kd_loss

DEFAULT_TEMPERATURE = 3.0


def cosine_term(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``mean_i (1 − cos(softmax(t_i/T), softmax(s_i/T)))``."""
    p = F.softmax(teacher_logits.float() / temperature, dim=-1)
    q = F.softmax(student_logits.float() / temperature, dim=-1)
    return (1.0 - F.cosine_similarity(q, p, dim=-1)).mean()


def morph_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float = DEFAULT_TEMPERATURE,
               cosine_weight: float = 1.0) -> torch.Tensor:
    """KD at ``temperature`` + ``cosine_weight`` · (1 − cosine similarity)."""
    return kd_loss(student_logits, teacher_logits, temperature) + cosine_weight * cosine_term(
        student_logits, teacher_logits, temperature)


def morph_soft_label_loss(temperature: float = DEFAULT_TEMPERATURE, cosine_weight: float = 1.0) -> Any:
    """:func:`morph_loss` as a ``loss_fn(outputs, batch)`` for :class:`.modules.ClassifierModule`."""

    def loss(out: Any, batch: dict[str, Any]) -> torch.Tensor:
        if "teacher_logits" not in batch:
            raise KeyError("morph loss needs batch['teacher_logits'] (cached teacher outputs)")
        return morph_loss(out.logits, batch["teacher_logits"], temperature, cosine_weight)

    loss.__name__ = f"morph_T{temperature:g}"
    return loss
