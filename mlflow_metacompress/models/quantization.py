"""Post-training quantization of a :class:`~.classifier.CodeClassifier`, and a saved form
that is as small as the quantized model.

- ``int8``: dynamic quantization (Jacob et al., "Quantization and Training of Neural
  Networks for Efficient Integer-Arithmetic-Only Inference", CVPR 2018; applied to BERT
  by Zafrir et al., "Q8BERT: Quantized 8Bit BERT", 2019) with
  ``torch.ao.quantization.quantize_dynamic``: every ``nn.Linear`` weight is stored in
  int8 (one scale per output row by default) and its activations are quantized on the
  fly at each call, so matrix products run as int8 GEMMs on the CPU. Embedding tables
  (``embeddings=True``) are stored as 8-bit rows with one float scale and offset per
  row (``float_qparams_weight_only_qconfig``): in small code models the vocabulary
  table holds most of the weights, so without it the copy stays near ¾ of the teacher.
  LayerNorms and biases stay in float32.
- ``float16`` / ``bfloat16``: every floating-point weight cast to half precision.

The quantization is recorded in ``metacompress.json`` (``extra["quantization"]``) and
:meth:`CodeClassifier.save` then writes ``quantized.pt``, the quantized state dict
(int8 weights and their scales, or half-precision tensors), instead of float32 weights;
:meth:`CodeClassifier.load` rebuilds the float skeleton from the encoder's config,
applies the same quantization and loads that state, so the reloaded model computes the
same probabilities as the one that was saved.

Size: :func:`stored_bytes` counts the bytes of the state dict as stored (int8 values,
scales and zero points in the dtypes torch keeps them, float tensors at their element
size). For a float32 model it equals Compressor's parameters × 4 bytes.

``torch.ao.quantization`` is marked deprecated (in favour of ``torchao``) but is what
PyTorch ships; its deprecation warnings are silenced here, where it is used on purpose.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Classifier(Protocol):
    """What this module reads of a :class:`~.classifier.CodeClassifier` (its
    :class:`~.meta.ClassifierMeta`, encoder and head, and its constructor), typed
    here: the classifier imports this module to save and load quantized weights, so this
    module does not import the classifier (no import loop)."""

    meta: Any
    encoder: Any
    head: Any

    def __init__(self, encoder: Any, meta: Any) -> None: ...


C = TypeVar("C", bound=Classifier)

DTYPES = ("int8", "float16", "bfloat16")
META_KEY = "quantization"
WEIGHTS_FILE = "quantized.pt"
CONFIG_DIR = "encoder"


@dataclass(frozen=True)
class QuantSpec:
    """How a classifier is quantized: ``dtype`` (``int8``, ``float16``, ``bfloat16``);
    for int8, whether embedding tables are quantized too (``embeddings``) and whether
    Linear weights get one scale per output row (``per_channel``) or one per matrix."""

    dtype: str = "int8"
    embeddings: bool = True
    per_channel: bool = True

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"quantization dtype {self.dtype!r} is not one of {list(DTYPES)}")

    @classmethod
    def from_meta(cls, meta: Any) -> QuantSpec | None:
        """The spec recorded in ``meta.extra`` (a :class:`~.meta.ClassifierMeta`), or None for a float model."""
        raw = (meta.extra or {}).get(META_KEY)
        return cls(**raw) if raw else None


@contextlib.contextmanager
def _quiet_deprecations() -> Iterator[None]:
    """Silence torch's deprecation notices for ``torch.ao.quantization`` and quantized
    tensors (still shipped and working in torch 2.x) while we use them on purpose."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.ao\.quantization is deprecated.*")
        warnings.filterwarnings("ignore", message=r".*quantized tensor creation functions.*deprecated.*")
        warnings.filterwarnings("ignore", message=r".*quantize_per_tensor.*deprecated.*")
        warnings.filterwarnings("ignore", message=r".*TypedStorage is deprecated.*")  # loading quantized tensors
        yield


def quantize_modules(model: nn.Module, spec: QuantSpec) -> nn.Module:
    """Quantize ``model``'s modules in place as ``spec`` says and return it."""
    if spec.dtype != "int8":
        return model.to(getattr(torch, spec.dtype))
    with _quiet_deprecations():
        try:
            from torch.ao import quantization as tq

            quantize_dynamic = tq.quantize_dynamic
        except (ImportError, AttributeError):
            raise RuntimeError(
                f"quantization dtype 'int8' needs torch.ao.quantization.quantize_dynamic, which torch "
                f"{torch.__version__} does not have; use dtype float16 or bfloat16"
            ) from None
        qconfig: dict[Any, Any] = {
            nn.Linear: tq.per_channel_dynamic_qconfig if spec.per_channel else tq.default_dynamic_qconfig
        }
        if spec.embeddings:
            qconfig[nn.Embedding] = tq.float_qparams_weight_only_qconfig
        quantize_dynamic(model.to("cpu").eval(), qconfig, dtype=torch.qint8, inplace=True)
    return model


def quantize_classifier(model: C, spec: QuantSpec) -> C:
    """A quantized copy of ``model`` (which is left as it is), in eval mode. An int8 copy
    stays on the CPU when moved (:meth:`~.classifier.CodeClassifier.to`)."""
    meta = replace(model.meta, labels=list(model.meta.labels), extra={**model.meta.extra, META_KEY: asdict(spec)})
    import copy

    out = type(model)(copy.deepcopy(model.encoder).cpu(), meta)
    out.head.load_state_dict(model.head.state_dict())
    quantize_modules(cast(nn.Module, out).float().eval(), spec)
    return out


# ---------------------------------------------------------------------- sizes
def _tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a tensor occupies as stored: values, plus scales/zero points when quantized."""
    if not t.is_quantized:
        return t.numel() * t.element_size()
    values = t.numel() * t.element_size()  # 1 byte per int8/uint8 value
    if t.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return values + 8 + 8  # one double scale, one int64 zero point
    scales, zeros = t.q_per_channel_scales(), t.q_per_channel_zero_points()
    return values + scales.numel() * scales.element_size() + zeros.numel() * zeros.element_size()


def state_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor of ``model``'s state dict by name, with dynamic quantized Linear
    weights and biases unpacked (``…_packed_params.weight`` / ``.bias``)."""
    out: dict[str, torch.Tensor] = {}
    with _quiet_deprecations():
        state = model.state_dict()
    for name, value in state.items():
        if isinstance(value, torch.Tensor):
            out[name] = value
        elif isinstance(value, tuple):  # (weight, bias) of a packed dynamic Linear
            # the packed tuple is (weight, bias); only those two parts are named
            for part, tensor in zip(("weight", "bias"), value, strict=False):
                if isinstance(tensor, torch.Tensor):
                    out[f"{name}.{part}"] = tensor
    return out


def stored_bytes(model: nn.Module) -> int:
    """Bytes of ``model``'s weights as stored (each storage once): for a float32 model
    ``parameters × 4``, for a quantized one its int8 values plus scales and zero points
    and whatever stays in float."""
    seen: set[tuple[int, int, int]] = set()
    total = 0
    for tensor in state_tensors(model).values():
        if not tensor.is_quantized:  # tied float tensors share a storage: count it once
            key = (tensor.untyped_storage().data_ptr(), int(tensor.storage_offset()), tensor.numel())
            if key in seen:
                continue
            seen.add(key)
        total += _tensor_bytes(tensor)
    return total


def weight_count(model: nn.Module) -> int:
    """Number of weights (quantized ones counted as values), excluding the scalar output
    scale and zero point that dynamic Linear modules keep for the format's sake."""
    return sum(
        t.numel()
        for name, t in state_tensors(model).items()
        if not name.endswith((".scale", ".zero_point")) or t.dim() > 0
    )


# ---------------------------------------------------------------------- persistence
def save_weights(model: Classifier, directory: Path) -> None:
    """Write the encoder's config and the quantized state dict (``quantized.pt``)."""
    model.encoder.config.save_pretrained(directory / CONFIG_DIR)
    with _quiet_deprecations():
        torch.save(cast(nn.Module, model).state_dict(), directory / WEIGHTS_FILE)


def load_weights(directory: Path, meta: Any, cls: type[C]) -> C:
    """The classifier :func:`save_weights` wrote: the float skeleton built from the
    config, quantized as ``meta`` records, then given the saved quantized state."""
    from transformers import AutoConfig, AutoModel

    from .attention import register

    spec = QuantSpec.from_meta(meta)
    if spec is None:
        raise ValueError(f"{directory / 'metacompress.json'} records no {META_KEY!r}: not a quantized classifier")
    config = AutoConfig.from_pretrained(directory / CONFIG_DIR)
    encoder = None
    kernel = register()  # the attention kernel of every encoder (.attention): a bf16 copy runs it too
    for kwargs in (
        {"add_pooling_layer": False, "attn_implementation": kernel},
        {"attn_implementation": kernel},
        {"add_pooling_layer": False},
        {},
    ):
        try:
            encoder = AutoModel.from_config(config, **kwargs)
            break
        except (TypeError, ValueError, ImportError) as exc:
            logger.debug("building the encoder with %s failed (%s); trying without", kwargs, exc)
    if encoder is None:
        encoder = AutoModel.from_config(config)
    model = cls(encoder.float(), meta)
    module = cast(nn.Module, model)
    quantize_modules(module.eval(), spec)
    with _quiet_deprecations():
        state = torch.load(directory / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        module.load_state_dict(state, strict=True)
    module.eval()
    return model


def describe(model: nn.Module) -> dict[str, int]:
    """How many modules of each weight-holding type ``model`` has (Linear, Embedding,
    LayerNorm and their quantized forms): what was quantized, for the run's record."""
    counts: dict[str, int] = {}
    for module in model.modules():
        kind = type(module)
        quantized = kind.__module__.startswith("torch.ao.nn") and not kind.__name__.endswith("PackedParams")
        if quantized or isinstance(module, (nn.Linear, nn.Embedding, nn.LayerNorm)):
            name = module._get_name()  # DynamicQuantizedLinear, QuantizedEmbedding, Linear, ...
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))
