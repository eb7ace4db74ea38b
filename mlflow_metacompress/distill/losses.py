"""Distillation losses as small functions with explicit temperatures.

Soft-label knowledge distillation (Hinton, Vinyals, Dean, "Distilling the Knowledge in
a Neural Network", 2015), as used by Compressor (Shi et al., ASE 2022) with T = 1:

    L_KD = T² · KL( softmax(t / T) ‖ softmax(s / T) )
         = T² · Σ_k p_k (log p_k − log q_k),  p = softmax(t/T), q = softmax(s/T),

averaged over the batch. The T² factor keeps gradient magnitudes comparable across
temperatures. Softmax is always taken over the class dimension (the last one).

**MORPH** (Panichella, "Metamorphic-Based Many-Objective Distillation of LLMs for
Code-related Tasks", ICSE 2025) adds one minus the cosine similarity of the teacher's
and the student's probability vectors (same temperature) to KD:
``L = T²·KL(p‖q) + w·mean_i(1 − cos(p_i, q_i))``. The paper states T = 3 while its
replication code uses T = 10; the ``morph`` method's default is the paper's 3.

**fidelity** (our method, aimed at MetaCompress's four relations; Awal, Rochan, Roy,
arXiv 2511.05476, which finds that students agree with their teachers far less often
on transformed code and asks for distribution- and representation-aligned,
robustness-aware distillation). Each term targets a relation:

- ``kd`` (MR1, MR2): ``T²·KL(p‖q)`` on the originals and, with weight ``variant_kd``,
  on their metamorphic variants;
- ``align`` (MR2): ``1 − cos(W·h_S, h_T)`` between the student's last-layer ``[CLS]``
  state projected by a learned linear map ``W`` and the teacher's cached one (FitNets,
  Romero et al., ICLR 2015; ``mse`` is the alternative);
- ``confidence`` (MR3, MR4): ``(q_c − p_c)²`` at the teacher's class ``c`` for rows the
  teacher predicts with confidence ``p_c ≥ τ`` (MetaCompress's 0.8), mean over those rows
  (0 when there are none);
- ``consistency`` (robustness): the symmetric KL ``½(KL(q_o‖q_v) + KL(q_v‖q_o))``
  between the student's distributions (T = 1) on a sample and each of its variants.

``total = kd + variant_kd·kd_var + align_w·(align_o + align_v)/2 + conf_w·confidence
+ consistency_w·consistency``; the variant terms vanish when a batch has no variants.
"""

from __future__ import annotations

import math
from typing import Protocol

from .._optional import require
from ..relations import KL_EPS, RelationConfig

require("torch", "distillation losses", "distill")

# imported after the require() checks, so that a missing extra fails with its install command
import torch  # noqa: E402 - after require()
import torch.nn.functional as F  # noqa: E402 - after require()


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


_DEFAULT_RELATIONS = RelationConfig()  # frozen: one shared default is safe


def relation_agreement(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, config: RelationConfig = _DEFAULT_RELATIONS
) -> torch.Tensor:
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
    return (
        (q.argmax(-1) == cls) & (kl <= config.kl_threshold) & keeps_mr3 & ((conf - q_c).abs() <= config.eca_threshold)
    )


# ------------------------------------------------------------------------- MORPH


def cosine_term(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``mean_i (1 − cos(softmax(t_i/T), softmax(s_i/T)))``."""
    p = F.softmax(teacher_logits.float() / temperature, dim=-1)
    q = F.softmax(student_logits.float() / temperature, dim=-1)
    return (1.0 - F.cosine_similarity(q, p, dim=-1)).mean()


def morph_loss(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float, cosine_weight: float = 1.0
) -> torch.Tensor:
    """KD at ``temperature`` + ``cosine_weight`` · (1 − cosine similarity)."""
    return kd_loss(student_logits, teacher_logits, temperature) + cosine_weight * cosine_term(
        student_logits, teacher_logits, temperature
    )


# ---------------------------------------------------------------------- fidelity
class FidelityWeights(Protocol):
    """Weights and thresholds of the fidelity terms (the ``fidelity`` method's options),
    read-only: the options are a frozen dataclass."""

    @property
    def temperature(self) -> float: ...
    @property
    def variant_kd(self) -> float: ...
    @property
    def align(self) -> float: ...
    @property
    def align_kind(self) -> str: ...
    @property
    def confidence(self) -> float: ...
    @property
    def confidence_threshold(self) -> float: ...
    @property
    def consistency(self) -> float: ...


FIDELITY_WEIGHTS = tuple(name for name, member in vars(FidelityWeights).items() if isinstance(member, property))


def align_loss(projected: torch.Tensor, target: torch.Tensor, kind: str = "cosine") -> torch.Tensor:
    """Mean ``1 − cos`` (``cosine``) or mean squared error (``mse``) per row."""
    if projected.shape != target.shape:
        raise ValueError(
            f"projected student states {tuple(projected.shape)} and teacher states {tuple(target.shape)} differ"
        )
    if kind == "cosine":
        return (1.0 - F.cosine_similarity(projected.float(), target.float(), dim=-1)).mean()
    if kind == "mse":
        return F.mse_loss(projected.float(), target.float())
    raise ValueError(f"unknown align_kind {kind!r}; expected 'cosine' or 'mse'")


def confidence_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, threshold: float = 0.8) -> torch.Tensor:
    """``mean_{i∈H} (q_i,c − p_i,c)²`` with ``c = argmax p_i`` and ``H = {i: p_i,c ≥ τ}``."""
    p = F.softmax(teacher_logits.float(), dim=-1)
    q = F.softmax(student_logits.float(), dim=-1)
    conf, cls = p.max(dim=-1)
    high = conf >= threshold
    if not bool(high.any()):
        return student_logits.sum() * 0.0
    q_c = q.gather(1, cls.unsqueeze(1)).squeeze(1)
    return ((q_c - conf)[high] ** 2).mean()


def consistency_loss(original_logits: torch.Tensor, variant_logits: torch.Tensor, parent: torch.Tensor) -> torch.Tensor:
    """Symmetric KL between the student's distribution on each variant and on its
    original (``parent[j]`` is the batch row of variant ``j``'s original)."""
    log_o = F.log_softmax(original_logits.float(), dim=-1)[parent]
    log_v = F.log_softmax(variant_logits.float(), dim=-1)
    kl_ov = (log_o.exp() * (log_o - log_v)).sum(-1)
    kl_vo = (log_v.exp() * (log_v - log_o)).sum(-1)
    return (0.5 * (kl_ov + kl_vo)).mean()


def fidelity_loss(
    s_orig: torch.Tensor,
    t_orig: torch.Tensor,
    h_orig: torch.Tensor,
    z_orig: torch.Tensor,
    s_var: torch.Tensor | None = None,
    t_var: torch.Tensor | None = None,
    h_var: torch.Tensor | None = None,
    z_var: torch.Tensor | None = None,
    parent: torch.Tensor | None = None,
    w: FidelityWeights | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The total loss and its terms. ``s``/``t`` are student/teacher logits, ``h`` the
    projected student states and ``z`` the teacher states; ``*_var`` describe the
    variants in the batch (or are None). ``w`` is required."""
    if w is None:
        raise TypeError("fidelity_loss needs the weights w (the fidelity method's options)")
    parts = {"kd": kd_loss(s_orig, t_orig, w.temperature), "align": align_loss(h_orig, z_orig, w.align_kind)}
    s_all, t_all = s_orig, t_orig
    has_var = s_var is not None and len(s_var) > 0
    if s_var is not None and has_var:
        assert t_var is not None and h_var is not None and z_var is not None and parent is not None
        parts["kd_var"] = kd_loss(s_var, t_var, w.temperature)
        parts["align"] = 0.5 * (parts["align"] + align_loss(h_var, z_var, w.align_kind))
        parts["consistency"] = consistency_loss(s_orig, s_var, parent)
        s_all, t_all = torch.cat([s_orig, s_var]), torch.cat([t_orig, t_var])
    parts["confidence"] = confidence_loss(s_all, t_all, w.confidence_threshold)
    total = parts["kd"] + w.align * parts["align"] + w.confidence * parts["confidence"]
    if has_var:
        total = total + w.variant_kd * parts["kd_var"] + w.consistency * parts["consistency"]
    return total, {k: float(v.detach()) for k, v in parts.items()}
