"""The architecture type of teachers and students (:class:`ArchSpec`), with size and FLOPs.

Size follows Compressor (Shi et al., ASE 2022): parameters × 4 bytes, in MB of 10^6
bytes (``models.size.size_mb``). FLOPs are counted by
``torch.utils.flop_counter.FlopCounterMode`` on one full-length input of ``max_length``
tokens. Both are computed on the ``meta`` device, so no weights are allocated and the
search can evaluate hundreds of candidates per second.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ..models.classifier import CodeClassifier
    from ..models.meta import PairMode


POSITION_TYPES = ("absolute", "rotary")


@contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Torch's global generator seeded with ``seed`` inside the block and put back after
    it; nothing when ``seed`` is None. Torch seeds its default generator at random in every
    process, so a model built outside such a block starts from different weights in every
    run: two quick main jobs with the same seed trained teachers of 0.92 and 0.89 test
    accuracy (validation 0.97 and 0.87; issue 22)."""
    if seed is None:
        yield
        return
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def pair_mode_of(value: str | None) -> PairMode | None:
    """``value`` as a classifier pair mode; ValueError naming it when it is not one (a
    configuration holds it as a plain string)."""
    from ..models.batching import PAIR_MODES

    if value is not None and value not in PAIR_MODES:
        raise ValueError(f"pair_mode must be one of {list(PAIR_MODES)} or None, got {value!r}")
    return cast("PairMode | None", value)  # checked just above


@dataclass(frozen=True)
class ArchSpec:
    """A student or teacher architecture: encoder shape, classification head, tokenizer
    kind and training choices; hashable and JSON-friendly.

    The one architecture type of :mod:`.distill`: Compressor's GA searches the numeric
    genes, AVATAR's space (:mod:`.search.space`) also the tokenizer kind, activation,
    dropout, maximum length and position-embedding type. ``absolute`` positions build a
    RoBERTa encoder; ``rotary`` ones an ESM-style encoder, the Hugging Face encoder with
    rotary embeddings (Su et al., RoFormer, 2021).
    """

    vocab_size: int = 8000
    num_hidden_layers: int = 2
    hidden_size: int = 64
    num_attention_heads: int = 2
    intermediate_size: int = 128
    max_length: int = 256
    num_labels: int = 2
    pair_mode: str | None = None
    hidden_act: str = "gelu"
    tokenizer: str = "bpe"
    dropout: float = 0.1
    position_embedding_type: str = "absolute"

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "num_hidden_layers",
            "hidden_size",
            "num_attention_heads",
            "intermediate_size",
            "max_length",
        ):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"ArchSpec.{name} must be ≥ 1, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads {self.num_attention_heads}"
            )
        if self.position_embedding_type not in POSITION_TYPES:
            raise ValueError(
                f"ArchSpec.position_embedding_type must be one of {POSITION_TYPES}, "
                f"got {self.position_embedding_type!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def build(
        self, labels: list[str] | None = None, dropout: float | None = None, pad_token_id: int = 1
    ) -> CodeClassifier:
        """A randomly initialised :class:`CodeClassifier` with this architecture
        (``dropout`` overrides the spec's)."""
        from ..models.classifier import CodeClassifier
        from ..models.meta import ClassifierMeta

        labels = list(labels or [str(i) for i in range(self.num_labels)])
        if len(labels) != self.num_labels:
            raise ValueError(f"{len(labels)} labels given for an ArchSpec with num_labels={self.num_labels}")
        pair = pair_mode_of(self.pair_mode)
        p = self.dropout if dropout is None else dropout
        if self.position_embedding_type == "absolute":
            return CodeClassifier.from_config(
                vocab_size=self.vocab_size,
                labels=labels,
                pair_mode=pair,
                hidden_size=self.hidden_size,
                num_hidden_layers=self.num_hidden_layers,
                num_attention_heads=self.num_attention_heads,
                intermediate_size=self.intermediate_size,
                max_length=self.max_length,
                hidden_act=self.hidden_act,
                dropout=p,
                pad_token_id=pad_token_id,
            )
        if self.hidden_act != "gelu":
            raise ValueError(f"rotary (ESM) students only support hidden_act='gelu', got {self.hidden_act!r}")
        from .._optional import require

        require("transformers", "building a rotary student", "distill")
        from transformers import EsmConfig, EsmModel

        config = EsmConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            max_position_embeddings=self.max_length + 2,
            position_embedding_type="rotary",
            pad_token_id=pad_token_id,
            mask_token_id=4,
            token_dropout=False,
            emb_layer_norm_before=False,
            hidden_dropout_prob=p,
            attention_probs_dropout_prob=p,
            # not an EsmConfig field (ESM is GELU-only): kept as an extra attribute that spec_of() reads back
            hidden_act="gelu",  # type: ignore[call-arg]
        )
        meta = ClassifierMeta(labels=labels, pair_mode=pair, max_length=self.max_length)
        return CodeClassifier(EsmModel(config, add_pooling_layer=False), meta, p)

    def parameter_count(self) -> int:
        """Parameters of :meth:`build`'s model: measured for RoBERTa, :func:`param_count` for ESM."""
        if self.position_embedding_type == "rotary":
            return int(param_count(self, self.num_labels, self.pair_mode))
        return _measure(self)[0]

    def size_mb(self) -> float:
        """Parameters × 4 bytes / 10^6, as Compressor computes model size."""
        return self.parameter_count() * 4 / 1e6

    def gflops(self) -> float:
        """Forward GFLOPs for one input of ``max_length`` tokens (both inputs for pairs), of
        the RoBERTa equivalent (rotary embeddings add only elementwise products)."""
        return _measure(self)[1] / 1e9


def param_count(c: Any, num_labels: int = 2, pair_mode: str | None = None, rotary: Any = None) -> Any:
    """Exact parameter count of the model :meth:`ArchSpec.build` makes.

    ``c`` has the numeric attributes of :class:`ArchSpec` (ints or z3 terms).
    RoBERTa (absolute positions): embeddings ``(V + P + 1)·h + 2h`` with
    ``P = max_length + 2``; per layer ``4h² + 2hi + 9h + i``; head ``m·h·h + h + hK + K``
    (``m = 2`` for ``concat_cls`` pairs, 4 for ``siamese``). ESM (rotary): embeddings ``V·h``, the same
    layers, a final LayerNorm ``2h`` and ESM's contact head ``L·A + 1``.
    """
    V, L, h, A, i = c.vocab_size, c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size
    from ..models.batching import TWO_INPUTS

    m = TWO_INPUTS.get(pair_mode or "", 1)
    layers = L * (4 * h * h + 2 * h * i + 9 * h + i)
    head = m * h * h + h + h * num_labels + num_labels
    absolute = (V + c.max_length + 3) * h + 2 * h + layers + head
    esm = V * h + layers + 2 * h + L * A + 1 + head
    if rotary is None:
        rotary = c.position_embedding_type == "rotary"
    if isinstance(rotary, bool):
        return esm if rotary else absolute
    import z3

    return z3.If(rotary, esm, absolute)


def _measure(spec: ArchSpec) -> tuple[int, int]:
    """``(parameters, forward FLOPs)``.

    Neither depends on the number of heads; the vocabulary only adds
    ``vocab_size × hidden_size`` embedding parameters (a lookup costs no FLOPs); and
    every encoder layer is identical, so both grow linearly with the layer count. The
    counter therefore runs on one- and two-layer models per remaining shape, and the
    results are extrapolated exactly and shared through the cache.
    """
    ref = 8  # > pad_token_id
    # the RoBERTa equivalent; tokenizer kind and dropout change neither count
    shape = replace(
        spec,
        vocab_size=ref,
        num_attention_heads=1,
        num_hidden_layers=1,
        tokenizer="bpe",
        dropout=0.0,
        position_embedding_type="absolute",
    )
    p1, f1 = _measure_shape(shape)
    p2, f2 = _measure_shape(replace(shape, num_hidden_layers=2))
    extra = spec.num_hidden_layers - 1
    return p1 + extra * (p2 - p1) + (spec.vocab_size - ref) * spec.hidden_size, f1 + extra * (f2 - f1)


@functools.lru_cache(maxsize=4096)
def _measure_shape(spec: ArchSpec) -> tuple[int, int]:
    from .._optional import require

    require("torch", "measuring a model's size and FLOPs", "distill")
    require("transformers", "measuring a model's size and FLOPs", "distill")
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers.utils import logging as hf_logging

    from ..models.batching import TWO_INPUTS
    from ..models.size import parameter_count

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with torch.device("meta"):
            model = spec.build(dropout=0.0).eval()
        params = parameter_count(model)
        ids = torch.ones(1, spec.max_length, dtype=torch.long, device="meta")
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            # no attention mask: a full-length input, and meta tensors cannot be inspected
            inner = model.encoder(input_ids=ids).last_hidden_state[:, 0, :]
            if spec.pair_mode in TWO_INPUTS:  # the second encoding and the head's pair features
                inner = model.pair_features(inner, model.encoder(input_ids=ids).last_hidden_state[:, 0, :])
            model.head(inner)
        return params, int(counter.get_total_flops())
    finally:
        hf_logging.set_verbosity(previous)


def spec_of(model: Any) -> ArchSpec:
    """The :class:`ArchSpec` of a RoBERTa-like :class:`CodeClassifier` (best effort for others)."""
    cfg = model.encoder.config
    return ArchSpec(
        vocab_size=cfg.vocab_size,
        num_hidden_layers=cfg.num_hidden_layers,
        hidden_size=cfg.hidden_size,
        num_attention_heads=cfg.num_attention_heads,
        intermediate_size=cfg.intermediate_size,
        max_length=model.meta.max_length,
        num_labels=model.num_labels,
        pair_mode=model.meta.pair_mode,
        hidden_act=str(getattr(cfg, "hidden_act", "gelu")),
        position_embedding_type="rotary" if getattr(cfg, "position_embedding_type", "") == "rotary" else "absolute",
    )


def measure_model(model: Any) -> dict[str, float]:
    """``params`` and ``size_mb`` of a built classifier, and the ``gflops`` of its
    RoBERTa-equivalent :class:`ArchSpec`.

    FLOPs are counted on the meta device because on real CPU tensors PyTorch's fused
    attention kernel is invisible to ``FlopCounterMode``, which would drop the
    attention FLOPs; on meta tensors the attention matmuls are counted.
    An ONNX classifier (``onnx-int8``) reports its own :meth:`measurements` (weights stored
    in the graph, the file's bytes, the source model's GFLOPs).
    A quantized classifier (``meta.extra["quantization"]``, :mod:`..models.quantization`)
    is measured by the bytes its weights are stored in (int8 values plus scales, or half
    precision) and its weight count; for float32 models both definitions agree.
    """
    if hasattr(model, "measurements"):  # an ONNX classifier (models/onnx_runtime.py): its stored weights and file
        return {"gflops": float("nan"), **model.measurements()}
    from ..models.size import parameter_count, size_mb

    if getattr(getattr(model, "meta", None), "extra", {}).get("quantization"):
        from ..models.quantization import stored_bytes, weight_count

        return {
            "params": float(weight_count(model)),
            "size_mb": stored_bytes(model) / 1e6,
            "gflops": spec_of(model).gflops(),
        }
    return {"params": float(parameter_count(model)), "size_mb": size_mb(model), "gflops": spec_of(model).gflops()}
