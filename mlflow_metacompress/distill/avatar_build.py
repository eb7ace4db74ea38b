"""Turn an AVATAR :class:`~.z3_space.StudentConfig` into a tokenizer and a student.

Absolute position embeddings give a RoBERTa encoder (as Compressor's students);
rotary ones give an ESM-style encoder, the Hugging Face encoder with rotary
embeddings (Su et al., RoFormer, 2021). Both are wrapped in the project's
:class:`~mlflow_metacompress.models.classifier.CodeClassifier`, so saving, logging and
the evaluator treat them alike. GFLOPs are those of the RoBERTa equivalent
(:meth:`.arch.ArchSpec.gflops`); rotary embeddings add only elementwise products.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from .arch import ArchSpec
from .z3_space import StudentConfig

logger = logging.getLogger(__name__)


def arch_spec(c: StudentConfig, num_labels: int = 2, pair_mode: str | None = None) -> ArchSpec:
    """The RoBERTa :class:`ArchSpec` with ``c``'s shape (for GFLOPs)."""
    return ArchSpec(vocab_size=c.vocab_size, num_hidden_layers=c.num_hidden_layers, hidden_size=c.hidden_size,
                    num_attention_heads=c.num_attention_heads, intermediate_size=c.intermediate_size,
                    max_length=c.max_length, num_labels=num_labels, pair_mode=pair_mode, hidden_act=c.hidden_act)


def gflops(c: StudentConfig, num_labels: int = 2, pair_mode: str | None = None) -> float:
    return arch_spec(c, num_labels, pair_mode).gflops()


def build_student(c: StudentConfig, labels: list[str], pair_mode: str | None = None, pad_token_id: int = 1) -> Any:
    """A randomly initialised :class:`CodeClassifier` for ``c``."""
    from ..models.classifier import ClassifierMeta, CodeClassifier

    if c.position_embedding_type == "absolute":
        return CodeClassifier.from_config(
            vocab_size=c.vocab_size, labels=labels, pair_mode=pair_mode, hidden_size=c.hidden_size,  # type: ignore[arg-type]
            num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
            intermediate_size=c.intermediate_size, max_length=c.max_length, hidden_act=c.hidden_act,
            dropout=c.dropout, pad_token_id=pad_token_id,
        )
    if c.position_embedding_type != "rotary":
        raise ValueError(f"unknown position_embedding_type {c.position_embedding_type!r}; expected 'absolute' or 'rotary'")
    if c.hidden_act != "gelu":
        raise ValueError(f"rotary (ESM) students only support hidden_act='gelu', got {c.hidden_act!r}")
    from transformers import EsmConfig, EsmModel

    config = EsmConfig(
        vocab_size=c.vocab_size, hidden_size=c.hidden_size, num_hidden_layers=c.num_hidden_layers,
        num_attention_heads=c.num_attention_heads, intermediate_size=c.intermediate_size,
        max_position_embeddings=c.max_length + 2, position_embedding_type="rotary", pad_token_id=pad_token_id,
        mask_token_id=4, token_dropout=False, emb_layer_norm_before=False, hidden_dropout_prob=c.dropout,
        attention_probs_dropout_prob=c.dropout, hidden_act="gelu",
    )
    meta = ClassifierMeta(labels=list(labels), pair_mode=pair_mode, max_length=c.max_length)  # type: ignore[arg-type]
    return CodeClassifier(EsmModel(config, add_pooling_layer=False), meta, c.dropout)


def train_kind_tokenizer(texts: list[str], c: StudentConfig) -> Any:
    """A tokenizer of ``c.tokenizer`` kind with at most ``c.vocab_size`` entries."""
    from ..models.tokenizer import train_tokenizer

    return train_tokenizer(texts, vocab_size=c.vocab_size, kind=c.tokenizer, model_max_length=c.max_length)  # type: ignore[arg-type]


def materialise(texts: list[str], c: StudentConfig, labels: list[str], pair_mode: str | None = None,
                tokenizers: dict[tuple[str, int], Any] | None = None) -> tuple[Any, Any, StudentConfig]:
    """``(model, tokenizer, config)``: trains the tokenizer (memoised in ``tokenizers``)
    and builds the student with the vocabulary the tokenizer actually reached."""
    key = (c.tokenizer, c.vocab_size)
    cache = tokenizers if tokenizers is not None else {}
    if key not in cache:
        cache[key] = train_kind_tokenizer(texts, c)
    tokenizer = cache[key]
    real = replace(c, vocab_size=len(tokenizer))
    return build_student(real, labels, pair_mode, pad_token_id=tokenizer.pad_token_id), tokenizer, real
