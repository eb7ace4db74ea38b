"""``CodeClassifier``: the one model format for the project's teachers and students.

A Hugging Face encoder (RoBERTa-style by default, as CodeBERT and GraphCodeBERT are)
plus a RoBERTa classification head. Clone pairs follow Compressor (Shi et al., ASE 2022)
and the CodeXGLUE BigCloneBench baseline: both functions are encoded separately and
their ``[CLS]`` vectors are concatenated before the head (``pair_mode="concat_cls"``).
``pair_mode="single_sequence"`` encodes ``<s> A </s></s> B </s>`` instead.

Saved layout (``save``): ``encoder/`` (``save_pretrained``), ``tokenizer/``,
``head.pt`` and ``metacompress.json`` with the labels, pair mode and max length.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .._optional import require

require("torch", "model mode (code classifiers)")
require("transformers", "model mode (code classifiers)")

import torch  # noqa: E402
from torch import nn  # noqa: E402

logger = logging.getLogger(__name__)

PairMode = Literal["concat_cls", "single_sequence"]
META_FILE = "metacompress.json"


@dataclass
class ClassifierMeta:
    """What a saved classifier needs besides its weights."""

    labels: list[str] = field(default_factory=lambda: ["0", "1"])
    pair_mode: PairMode | None = None
    max_length: int = 256
    extra: dict[str, Any] = field(default_factory=dict)


class ClassificationHead(nn.Module):
    """RoBERTa's head: dropout → dense → tanh → dropout → projection."""

    def __init__(self, in_dim: int, hidden: int, num_labels: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.dense = nn.Linear(in_dim, hidden)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(hidden, num_labels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.dense(self.dropout(x)))
        return self.out_proj(self.dropout(x))


class CodeClassifier(nn.Module):
    """Encoder + head; returns logits, and hidden states when asked (for distillation)."""

    def __init__(self, encoder: nn.Module, meta: ClassifierMeta, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.meta = meta
        hidden = encoder.config.hidden_size
        in_dim = 2 * hidden if meta.pair_mode == "concat_cls" else hidden
        self.head = ClassificationHead(in_dim, hidden, len(meta.labels), dropout)

    @property
    def num_labels(self) -> int:
        return len(self.meta.labels)

    def _cls(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, hidden: bool) -> tuple[torch.Tensor, Any]:
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=hidden)
        return out.last_hidden_state[:, 0, :], (out.hidden_states if hidden else None)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        input_ids_b: torch.Tensor | None = None,
        attention_mask_b: torch.Tensor | None = None,
        output_hidden_states: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Return ``(logits, hidden_states)``; ``hidden_states`` is None unless asked.

        For ``concat_cls`` pairs the hidden states are those of the first function.
        """
        cls, states = self._cls(input_ids, attention_mask, output_hidden_states)
        if self.meta.pair_mode == "concat_cls":
            if input_ids_b is None or attention_mask_b is None:
                raise ValueError("a concat_cls pair classifier needs input_ids_b and attention_mask_b")
            cls_b, _ = self._cls(input_ids_b, attention_mask_b, False)
            cls = torch.cat([cls, cls_b], dim=-1)
        return self.head(cls), states

    # ------------------------------------------------------------------ building
    @classmethod
    def from_config(
        cls,
        vocab_size: int,
        labels: list[str] | None = None,
        pair_mode: PairMode | None = None,
        hidden_size: int = 64,
        num_hidden_layers: int = 2,
        num_attention_heads: int = 2,
        intermediate_size: int = 128,
        max_length: int = 256,
        hidden_act: str = "gelu",
        dropout: float = 0.1,
        position_embedding_type: str = "absolute",
        pad_token_id: int = 1,
    ) -> CodeClassifier:
        """A randomly initialised RoBERTa-style classifier built from a config (offline)."""
        from transformers import RobertaConfig, RobertaModel

        config = RobertaConfig(
            vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
            max_position_embeddings=max_length + 2, hidden_act=hidden_act,
            hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
            position_embedding_type=position_embedding_type, pad_token_id=pad_token_id, type_vocab_size=1,
        )
        meta = ClassifierMeta(labels=list(labels or ["0", "1"]), pair_mode=pair_mode, max_length=max_length)
        return cls(RobertaModel(config, add_pooling_layer=False), meta, dropout)

    @classmethod
    def from_pretrained_encoder(
        cls, name_or_path: str, labels: list[str] | None = None, pair_mode: PairMode | None = None,
        max_length: int = 256,
    ) -> CodeClassifier:
        """Wrap a pre-trained encoder (a hub id such as ``microsoft/codebert-base`` when
        online, or any local directory) with a fresh head."""
        from transformers import AutoModel

        encoder = _load_encoder(AutoModel, name_or_path)
        limit = getattr(encoder.config, "max_position_embeddings", max_length + 2) - 2
        meta = ClassifierMeta(labels=list(labels or ["0", "1"]), pair_mode=pair_mode, max_length=min(max_length, limit))
        return cls(encoder, meta)

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | Path, tokenizer: Any) -> Path:
        """Write encoder, tokenizer, head and metadata to ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(directory / "encoder")
        tokenizer.save_pretrained(directory / "tokenizer")
        torch.save(self.head.state_dict(), directory / "head.pt")
        (directory / META_FILE).write_text(json.dumps(asdict(self.meta), indent=2))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> tuple[CodeClassifier, Any]:
        """Load ``(model, tokenizer)`` saved by :meth:`save`, in eval mode."""
        from transformers import AutoModel, AutoTokenizer

        directory = Path(directory)
        meta = ClassifierMeta(**json.loads((directory / META_FILE).read_text()))
        encoder = _load_encoder(AutoModel, directory / "encoder")
        model = cls(encoder, meta)
        model.head.load_state_dict(torch.load(directory / "head.pt", map_location="cpu", weights_only=True))
        tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer")
        return model.eval(), tokenizer

    # ------------------------------------------------------------------ inference
    def encode(self, tokenizer: Any, texts: list[str], texts_b: list[str] | None = None) -> dict[str, torch.Tensor]:
        """Tokenise a batch into the keyword arguments of :meth:`forward`."""
        kw = dict(truncation=True, max_length=self.meta.max_length, padding=True, return_tensors="pt")
        if self.meta.pair_mode == "single_sequence":
            if texts_b is None:
                raise ValueError("a single_sequence pair classifier needs two code columns")
            enc = tokenizer(texts, texts_b, **kw)
            return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        enc = tokenizer(texts, **kw)
        batch = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        if self.meta.pair_mode == "concat_cls":
            if texts_b is None:
                raise ValueError("a concat_cls pair classifier needs two code columns")
            enc_b = tokenizer(texts_b, **kw)
            batch.update(input_ids_b=enc_b["input_ids"], attention_mask_b=enc_b["attention_mask"])
        return batch

    @torch.no_grad()
    def predict_logits(
        self, tokenizer: Any, texts: list[str], texts_b: list[str] | None = None, batch_size: int = 32,
        progress: bool = False,
    ) -> np.ndarray:
        """Logits (N×K) in batches, sorted by length to limit padding."""
        from tqdm.auto import tqdm

        self.eval()
        device = next(self.parameters()).device
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.num_labels), dtype=np.float32)
        starts = range(0, len(texts), batch_size)
        for start in tqdm(starts, desc="inference", disable=not progress, leave=False):
            idx = order[start : start + batch_size]
            a = [texts[i] for i in idx]
            b = [texts_b[i] for i in idx] if texts_b is not None else None
            batch = {k: v.to(device) for k, v in self.encode(tokenizer, a, b).items()}
            logits, _ = self(**batch)
            out[idx] = logits.float().cpu().numpy()
        return out

    def predict_proba(self, tokenizer: Any, texts: list[str], texts_b: list[str] | None = None, **kw: Any) -> np.ndarray:
        """Class probabilities (N×K): softmax of :meth:`predict_logits` over classes."""
        logits = self.predict_logits(tokenizer, texts, texts_b, **kw)
        logits = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)


def _load_encoder(auto: Any, path: Any) -> nn.Module:
    """Load an encoder without the (unused) pooler where the architecture allows it."""
    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        try:
            return auto.from_pretrained(path, add_pooling_layer=False)
        except TypeError:
            return auto.from_pretrained(path)
    finally:
        hf_logging.set_verbosity(previous)


def parameter_count(model: nn.Module) -> int:
    """Number of parameters (each counted once)."""
    return sum(p.numel() for p in model.parameters())


def size_mb(model: nn.Module) -> float:
    """Model size as Compressor defines it: parameters × 4 bytes, in MB of 10^6 bytes."""
    return parameter_count(model) * 4 / 1e6
