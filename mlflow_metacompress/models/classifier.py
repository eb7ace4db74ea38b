"""``CodeClassifier``: the one model format for the project's teachers and students.

A Hugging Face encoder (RoBERTa-style by default, as CodeBERT and GraphCodeBERT are)
plus a RoBERTa classification head. Clone pairs follow Compressor (Shi et al., ASE 2022)
and the CodeXGLUE BigCloneBench baseline: both functions are encoded separately and
their ``[CLS]`` vectors are concatenated before the head (``pair_mode="concat_cls"``).
``pair_mode="single_sequence"`` encodes ``<s> A </s></s> B </s>`` instead.
``pair_mode="siamese"`` encodes both functions separately too, mean-pools each over its
tokens and gives the head ``[u, v, |u − v|, u ⊙ v]``, the siamese features of
Sentence-BERT (Reimers and Gurevych, EMNLP 2019) that clone detectors such as CDLH (Wei
and Li, IJCAI 2017) compare: a small encoder trained from scratch learns "same
behaviour" from them where a concatenation alone leaves it at chance (issue 22).

Head: :mod:`.head`; saved layout: :mod:`.meta`; encoder loading: :mod:`.encoder`; model size: :mod:`.size`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optional import require
from .batching import TWO_INPUTS

require("torch", "model mode (code classifiers)")
require("transformers", "model mode (code classifiers)")

# imported after the require() checks, so that a missing extra fails with its install command
import torch  # noqa: E402 - after require()
from torch import nn  # noqa: E402 - after require()

from .encoder import load_encoder, pad_id, prefer_sdpa  # noqa: E402 - after require()
from .head import ClassificationHead  # noqa: E402 - after require()
from .meta import META_FILE, ClassifierMeta, PairMode  # noqa: E402 - after require()

if TYPE_CHECKING:
    from transformers import PreTrainedModel

logger = logging.getLogger(__name__)


class CodeClassifier(nn.Module):
    """Encoder + head; returns logits, and hidden states when asked (for distillation)."""

    def __init__(self, encoder: PreTrainedModel, meta: ClassifierMeta, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.meta = meta
        hidden = encoder.config.hidden_size
        in_dim = TWO_INPUTS.get(meta.pair_mode or "", 1) * hidden
        self.head = ClassificationHead(in_dim, hidden, len(meta.labels), dropout)

    @property
    def num_labels(self) -> int:
        return len(self.meta.labels)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickled (a Spark worker, a spawned rank): the encoder's attention kernel is
        registered in this process too (:mod:`.attention`)."""
        super().__setstate__(state)
        from .attention import register

        register()

    def to(self, *args: Any, **kwargs: Any) -> CodeClassifier:
        """``nn.Module.to``, except that an int8-quantized copy (:mod:`.quantization`) stays
        on the CPU, where its dynamic kernels run."""
        if (self.meta.extra.get("quantization") or {}).get("dtype") == "int8":
            device = torch._C._nn._parse_to(*args, **kwargs)[0]
            if device is not None and torch.device(device).type != "cpu":
                logger.info("int8 dynamic quantization runs on the CPU: the model stays there (asked: %s)", device)
                return self
        return super().to(*args, **kwargs)

    def _cls(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, hidden: bool) -> tuple[torch.Tensor, Any]:
        """The pooled vector (``[CLS]``; the mean over real tokens for ``siamese``) and the hidden states."""
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=hidden)
        states = out.hidden_states if hidden else None
        if self.meta.pair_mode == "siamese":
            mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
            return (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0), states
        return out.last_hidden_state[:, 0, :], states

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        input_ids_b: torch.Tensor | None = None,
        attention_mask_b: torch.Tensor | None = None,
        output_hidden_states: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Return ``(logits, hidden_states)``; ``hidden_states`` is None unless asked.

        For two-input pairs (``concat_cls``, ``siamese``) the hidden states are those of the
        first function.
        """
        cls, states = self._cls(input_ids, attention_mask, output_hidden_states)
        mode = self.meta.pair_mode
        if mode in TWO_INPUTS:
            if input_ids_b is None or attention_mask_b is None:
                raise ValueError(f"a {mode} pair classifier needs input_ids_b and attention_mask_b")
            cls = self.pair_features(cls, self._cls(input_ids_b, attention_mask_b, False)[0])
        return self.head(cls), states

    def pair_features(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The head's input for two pooled functions: ``[u, v]`` (``concat_cls``) or
        ``[u, v, |u - v|, u * v]`` (``siamese``)."""
        parts = [u, v] if self.meta.pair_mode == "concat_cls" else [u, v, (u - v).abs(), u * v]
        return torch.cat(parts, dim=-1)

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
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads,
            intermediate_size=intermediate_size,
            max_position_embeddings=max_length + 2,
            hidden_act=hidden_act,
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            # a RobertaConfig field up to transformers 4.x; later versions keep it as an extra attribute
            position_embedding_type=position_embedding_type,  # type: ignore[call-arg]
            pad_token_id=pad_token_id,
            type_vocab_size=1,
        )
        prefer_sdpa(config, RobertaModel)
        meta = ClassifierMeta(labels=list(labels or ["0", "1"]), pair_mode=pair_mode, max_length=max_length)
        return cls(RobertaModel(config, add_pooling_layer=False), meta, dropout)

    @classmethod
    def from_pretrained_encoder(
        cls,
        name_or_path: str,
        labels: list[str] | None = None,
        pair_mode: PairMode | None = None,
        max_length: int = 256,
    ) -> CodeClassifier:
        """Wrap a pre-trained encoder (a hub id such as ``microsoft/codebert-base`` when
        online, or any local directory) with a fresh head."""
        from transformers import AutoModel

        encoder = load_encoder(AutoModel, name_or_path)
        limit = getattr(encoder.config, "max_position_embeddings", max_length + 2) - 2
        meta = ClassifierMeta(labels=list(labels or ["0", "1"]), pair_mode=pair_mode, max_length=min(max_length, limit))
        return cls(encoder, meta)

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | Path, tokenizer: Any) -> Path:
        """Write encoder, tokenizer, head and metadata to ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.meta.extra.get("quantization"):  # quantized weights as stored (models/quantization.py)
            from .quantization import save_weights

            save_weights(self, directory)
        else:
            self.encoder.save_pretrained(directory / "encoder")
            torch.save(self.head.state_dict(), directory / "head.pt")
        tokenizer.save_pretrained(directory / "tokenizer")
        (directory / META_FILE).write_text(json.dumps(asdict(self.meta), indent=2))
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> tuple[CodeClassifier, Any]:
        """Load ``(model, tokenizer)`` saved by :meth:`save`, in eval mode."""
        from transformers import AutoModel, AutoTokenizer

        directory = Path(directory)
        meta = ClassifierMeta(**json.loads((directory / META_FILE).read_text()))
        if meta.extra.get("quantization"):
            from .quantization import load_weights

            model: CodeClassifier = load_weights(directory, meta, cls)
        else:
            model = cls(load_encoder(AutoModel, directory / "encoder"), meta)
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
        if self.meta.pair_mode in TWO_INPUTS:
            if texts_b is None:
                raise ValueError(f"a {self.meta.pair_mode} pair classifier needs two code columns")
            enc_b = tokenizer(texts_b, **kw)
            batch.update(input_ids_b=enc_b["input_ids"], attention_mask_b=enc_b["attention_mask"])
        return batch

    @torch.inference_mode()
    def predict_logits(
        self,
        tokenizer: Any,
        texts: list[str],
        texts_b: list[str] | None = None,
        batch_size: int = 32,
        progress: bool = False,
        *,
        precision: str | None = None,
        max_tokens: int | None = None,
        chunk_rows: int | None = None,
    ) -> np.ndarray:
        """Logits (N×K, float32) in length-bucketed batches (:mod:`.batching`).

        Rows are tokenised once, sorted by real token count (both functions for pairs)
        and each batch is padded only to its own longest row: ``batch_size`` rows per
        batch, or, given ``max_tokens``, as many rows as fit in that many padded tokens.
        ``precision`` is ``"auto"`` (None: ``$METACOMPRESS_PRECISION``, else ``auto``; bf16
        autocast where the device runs bf16 natively, else fp32; :mod:`mlflow_metacompress.precision`),
        ``"fp32"``, ``"bf16"`` or ``"fp16"`` (autocast); logits come back as float32. A
        quantized copy (:mod:`.quantization`) computes in its own dtypes: ``auto`` (and None)
        run it without autocast. On CUDA, batches are built in pinned memory and copied
        asynchronously, logits stay on the device until the end, and tokenisation runs
        in chunks of ``chunk_rows`` rows (default: an eighth of the rows, at least 256;
        0 turns it off) in a background thread, overlapping the forward passes. On
        other devices ``chunk_rows`` defaults to 0 (one global bucketing).
        """
        from tqdm.auto import tqdm

        from ..precision import AUTO, requested
        from .batching import autocast_dtype, bucketed, collate

        self.eval()
        device = next(self.parameters()).device
        quantized = bool(self.meta.extra.get("quantization"))  # its own dtypes (.quantization): no autocast
        dtype = None if quantized and requested(precision) == AUTO else autocast_dtype(precision, device.type)
        cuda = device.type == "cuda"
        if chunk_rows is None:
            chunk_rows = max(256, -(-len(texts) // 8)) if cuda else 0
        pad = pad_id(tokenizer, self.encoder)
        left = getattr(tokenizer, "padding_side", "right") == "left"
        outs, index = [], []
        chunks = bucketed(
            tokenizer, texts, texts_b, self.meta.pair_mode, self.meta.max_length, batch_size, max_tokens, chunk_rows
        )
        with tqdm(total=len(texts), desc="inference", disable=not progress, leave=False) as bar:
            for tok, rows, batches in chunks:
                for b in batches:
                    batch = {k: v.to(device, non_blocking=cuda) for k, v in collate(tok, b, pad, left, cuda).items()}
                    with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                        logits, _ = self(**batch)
                    outs.append(logits.float())
                    index.append(rows[b])
                    bar.update(len(b))
        out = np.zeros((len(texts), self.num_labels), dtype=np.float32)
        if outs:
            out[np.concatenate(index)] = torch.cat(outs).cpu().numpy()
        return out

    def predict_proba(
        self, tokenizer: Any, texts: list[str], texts_b: list[str] | None = None, **kw: Any
    ) -> np.ndarray:
        """Class probabilities (N×K, float32): softmax of :meth:`predict_logits` over classes,
        formed in float32 whatever the precision of the forward pass, so KL divergences
        (MR2) and confidences (MR4) of a bf16 model stay comparable with fp32 ones."""
        logits = self.predict_logits(tokenizer, texts, texts_b, **kw).astype(np.float32)
        logits = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)
