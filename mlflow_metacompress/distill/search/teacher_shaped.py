"""The student shape of the ``fidelity`` method: a scaled-down standard transformer.

AVATAR's search (:mod:`.avatar_search`) picks whatever its surrogate ranks best; with few
probes on CPU budgets it often lands on shapes such as hidden 16 with 8 heads (head
dimension 2) and 11 layers, which cannot carry the teacher's representations that the
``fidelity`` loss aligns. ``teacher_shaped`` instead keeps the proportions that
distilled encoders such as DistilBERT (Sanh et al., 2019) and TinyBERT (Jiao et al.,
EMNLP Findings 2020) keep from their teachers:

- head dimension ``head_dim`` (32): ``hidden_size`` is a multiple of it, heads =
  hidden / head_dim;
- feed-forward width ``ffn_ratio × hidden`` (4, BERT's ratio);
- at most ``max_layers`` (4) layers and a vocabulary of at least ``min_vocab`` (4000)
  in multiples of 1000 (AVATAR's constraint);
- the size within ``[lower × target, target]`` (Compressor's size: parameters × 4 bytes).

Among those configurations it takes the one with the most encoder-layer parameters
(capacity where the teacher's computation happens, not in the embedding table), then
the wider one, then the larger vocabulary.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TypedDict

from ..arch import ArchSpec, param_count
from .space import size_mb


class _Shape(TypedDict):
    """The ArchSpec fields a teacher shape fixes (the vocabulary is sized from what is left)."""

    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    intermediate_size: int
    max_length: int


def teacher_shaped(
    target_mb: float,
    *,
    num_labels: int = 2,
    pair_mode: str | None = None,
    max_length: int = 256,
    head_dim: int = 32,
    ffn_ratio: int = 4,
    max_layers: int = 4,
    min_vocab: int = 4000,
    max_vocab: int = 46000,
    lower: float = 0.8,
    max_hidden: int = 768,
) -> ArchSpec:
    """The ``teacher_shaped`` configuration for ``target_mb`` (see the module docstring).

    Raises ``ValueError`` naming the target when no configuration fits.
    """
    best: tuple[tuple[int, int, int], ArchSpec] | None = None
    for hidden in range(head_dim, max_hidden + 1, head_dim):
        if hidden % 16:
            continue  # AVATAR's constraint: hidden size a multiple of 16
        for layers in range(1, max_layers + 1):
            shape = _Shape(
                num_hidden_layers=layers,
                hidden_size=hidden,
                num_attention_heads=hidden // head_dim,
                intermediate_size=ffn_ratio * hidden,
                max_length=max_length,
            )
            # everything but the V·h embedding rows (a namespace: ArchSpec refuses V = 0)
            base = SimpleNamespace(vocab_size=0, position_embedding_type="absolute", **shape)
            fixed = param_count(base, num_labels, pair_mode)
            vocab = min(max_vocab, int((target_mb * 1e6 / 4 - fixed) // hidden) // 1000 * 1000)
            if vocab < min_vocab:
                continue
            config = ArchSpec(vocab_size=vocab, num_labels=num_labels, pair_mode=pair_mode, **shape)
            if not lower * target_mb <= size_mb(config, num_labels, pair_mode) <= target_mb:
                continue
            layer_params = fixed - param_count(
                SimpleNamespace(**{**vars(base), "num_hidden_layers": 0}), num_labels, pair_mode
            )
            key = (layer_params, hidden, vocab)
            if best is None or key > best[0]:
                best = (key, config)
    if best is None:
        raise ValueError(
            f"no teacher-shaped student (head dim {head_dim}, FFN {ffn_ratio}×, ≤ {max_layers} layers, "
            f"vocabulary ≥ {min_vocab}) fits {target_mb} MB; lower min_vocab or raise the target"
        )
    return best[1]
