"""Intermediate-layer alignment losses (the ``repair`` method's ``layer_align`` option).

* **hidden** — TinyBERT (Jiao et al., "TinyBERT: Distilling BERT for Natural Language
  Understanding", Findings of EMNLP 2020): student layer ``m`` learns teacher layer
  ``g(m) = ⌊m·N/M⌋`` (``M`` student, ``N`` teacher layers; :func:`layer_map`) through
  ``MSE(W·h_S, h_T)`` with one learned linear ``W`` where the widths differ.
* **attention** — MiniLM (Wang et al., "MiniLM: Deep Self-Attention Distillation for
  Task-Agnostic Compression of Pre-Trained Transformers", NeurIPS 2020): ``KL(A_T ‖ A_S)``
  between the last layer's self-attention distributions, per head and averaged over the
  heads; where the head counts differ, between the head-averaged distributions.
* **value** — MiniLM's second term: ``KL(VR_T ‖ VR_S)`` between the last layer's
  value relations ``VR = softmax(V·Vᵀ / √d_head)`` per head (padding keys masked), pooled and
  head-averaged like the attention distributions.

Searched students learn their own tokenizer, so their token sequences differ from the
teacher's. Both losses therefore compare tokens pooled into ``S`` buckets by relative
position among the real tokens (:func:`buckets`: token ``p`` of ``n`` falls in
``⌊p·S/n⌋``): a hidden state is the mean over its bucket, and an attention row the mean
over the query bucket of the attention mass each key bucket receives (a distribution
over key buckets again). With one tokenizer and ``S`` equal to the length, the buckets are
the tokens and the losses are TinyBERT's and MiniLM's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._optional import require

require("torch", "alignment losses", "distill")

import torch  # noqa: E402 - after require()

EPS = 1e-8


def layer_map(student_layers: int, teacher_layers: int) -> list[int]:
    """TinyBERT's uniform map: for student layers ``1..M``, the teacher layers ``⌊m·N/M⌋``
    (at least 1), as indices into a Hugging Face ``hidden_states`` tuple (0 = embeddings)."""
    if student_layers < 1 or teacher_layers < 1:
        raise ValueError(f"layer_map needs at least one layer on each side, got {student_layers} and {teacher_layers}")
    return [max(1, m * teacher_layers // student_layers) for m in range(1, student_layers + 1)]


def buckets(mask: torch.Tensor, count: int) -> torch.Tensor:
    """``B×T×S`` one-hot bucket of every real token (``mask`` B×T, 1 = token; left or right
    padding): token ``p`` of ``n`` real ones goes to bucket ``⌊p·S/n⌋``; padding rows are 0."""
    if count < 1:
        raise ValueError(f"the number of buckets must be positive, got {count}")
    real = mask.float()
    position = real.cumsum(-1) - 1.0
    n = real.sum(-1, keepdim=True).clamp_min(1.0)
    index = torch.div(position.clamp_min(0) * count, n, rounding_mode="floor").long().clamp(max=count - 1)
    return torch.nn.functional.one_hot(index, count).float() * real.unsqueeze(-1)


def pool_states(states: torch.Tensor, bucket: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B×S×H mean state per bucket, B×S mask of non-empty buckets)``."""
    size = bucket.sum(1)  # B×S
    pooled = torch.einsum("bts,bth->bsh", bucket, states.float()) / size.clamp_min(1.0).unsqueeze(-1)
    return pooled, size > 0


def pool_attention(attention: torch.Tensor, bucket: torch.Tensor) -> torch.Tensor:
    """``B×heads×S×S``: for query bucket ``i``, the mean over its queries of the attention
    mass on the keys of bucket ``j`` (rows of non-empty buckets sum to the rows' own mass)."""
    size = bucket.sum(1).clamp_min(1.0)  # B×S
    mass = torch.einsum("bhqk,bkj->bhqj", attention.float(), bucket)
    return torch.einsum("bqi,bhqj->bhij", bucket, mass) / size[:, None, :, None]


def hidden_loss(
    student_states: Sequence[torch.Tensor],
    teacher_states: Sequence[torch.Tensor],
    student_mask: torch.Tensor,
    teacher_mask: torch.Tensor,
    projection: Callable[[torch.Tensor], torch.Tensor],
    count: int,
) -> torch.Tensor:
    """TinyBERT's hidden-state loss over :func:`layer_map`: the mean over student layers of
    ``MSE(W·pool(h_S^m), pool(h_T^{g(m)}))`` over buckets non-empty on both sides.
    The ``*_states`` are ``hidden_states`` tuples (embeddings first)."""
    mapping = layer_map(len(student_states) - 1, len(teacher_states) - 1)
    b_s, b_t = buckets(student_mask, count), buckets(teacher_mask, count)
    terms = []
    for m, g in enumerate(mapping, start=1):
        s, keep_s = pool_states(student_states[m], b_s)
        t, keep_t = pool_states(teacher_states[g], b_t)
        keep = (keep_s & keep_t).unsqueeze(-1).float()
        diff = (projection(s) - t) ** 2 * keep
        terms.append(diff.sum() / (keep.sum() * t.shape[-1]).clamp_min(1.0))
    return torch.stack(terms).mean()


def attention_loss(
    student_attention: torch.Tensor,
    teacher_attention: torch.Tensor,
    student_mask: torch.Tensor,
    teacher_mask: torch.Tensor,
    count: int,
) -> torch.Tensor:
    """MiniLM's ``KL(A_T ‖ A_S)`` of the last layer (``B×heads×T×T`` each), per head and
    averaged, over query buckets non-empty on both sides; head-averaged first when the
    head counts differ."""
    return relation_kl(student_attention, teacher_attention, student_mask, teacher_mask, count)


def value_relations(values: torch.Tensor, heads: int, mask: torch.Tensor) -> torch.Tensor:
    """MiniLM's value relation of one layer: ``B×heads×T×T`` ``softmax(V_h·V_hᵀ / √d_head)``
    over the real keys (``values``: the value projection's ``B×T×H`` output; ``mask`` B×T)."""
    b, t, width = values.shape
    if width % heads:
        raise ValueError(f"a width of {width} does not split into {heads} heads")
    v = values.float().view(b, t, heads, width // heads).transpose(1, 2)
    scores = v @ v.transpose(-1, -2) / (width // heads) ** 0.5
    scores = scores.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
    return torch.softmax(scores, dim=-1)


def value_loss(
    student_values: torch.Tensor,
    teacher_values: torch.Tensor,
    heads: tuple[int, int],
    student_mask: torch.Tensor,
    teacher_mask: torch.Tensor,
    count: int,
) -> torch.Tensor:
    """MiniLM's value-relation loss of the last layer: :func:`relation_kl` of the student's and
    the teacher's :func:`value_relations` (``heads``: student's, teacher's head counts)."""
    r_s = value_relations(student_values, heads[0], student_mask)
    r_t = value_relations(teacher_values, heads[1], teacher_mask)
    return relation_kl(r_s, r_t, student_mask, teacher_mask, count)


def relation_kl(
    student: torch.Tensor, teacher: torch.Tensor, student_mask: torch.Tensor, teacher_mask: torch.Tensor, count: int
) -> torch.Tensor:
    """``KL(T ‖ S)`` between row-stochastic ``B×heads×T×T`` relations, pooled into ``count``
    position buckets, per head and averaged over query buckets non-empty on both sides;
    head-averaged first when the head counts differ."""
    b_s, b_t = buckets(student_mask, count), buckets(teacher_mask, count)
    a_s, a_t = pool_attention(student, b_s), pool_attention(teacher, b_t)
    if a_s.shape[1] != a_t.shape[1]:
        a_s, a_t = a_s.mean(1, keepdim=True), a_t.mean(1, keepdim=True)
    kl = (torch.special.xlogy(a_t, a_t) - a_t * torch.log(a_s.clamp_min(EPS))).sum(-1)  # B×heads×S
    keep = ((b_s.sum(1) > 0) & (b_t.sum(1) > 0)).unsqueeze(1).float().expand_as(kl)
    return (kl * keep).sum() / keep.sum().clamp_min(1.0)


@contextlib.contextmanager
def eager_attention(*models: Any) -> Iterator[None]:
    """The encoders of ``models`` on transformers' eager kernel (the only one that returns
    attention weights) for the block, their own kernel restored after."""
    saved = [(m.encoder, m.encoder.config._attn_implementation) for m in models]
    for encoder, _ in saved:
        encoder.set_attn_implementation("eager")
    try:
        yield
    finally:
        for encoder, kernel in saved:
            encoder.set_attn_implementation(kernel)


@contextlib.contextmanager
def capture_values(encoder: Any, into: list[torch.Tensor]) -> Iterator[None]:
    """Append the last layer's value projection output (``B×T×H``) of each forward of ``encoder``
    (a Hugging Face BERT/RoBERTa encoder) to ``into``; nothing when ``encoder`` is None."""
    if encoder is None:
        yield
        return
    hook = encoder.encoder.layer[-1].attention.self.value.register_forward_hook(lambda _m, _i, out: into.append(out))
    try:
        yield
    finally:
        hook.remove()


def heads_of(encoder: Any) -> int:
    return int(encoder.config.num_attention_heads)
