"""Post-training quantization: the teacher itself, with int8 (or half-precision) weights.

No student is searched or trained. The teacher is loaded from ``ctx.teacher_uri`` (the
pinned ``models:/`` URI; the context holds no teacher object) and quantized
(:mod:`mlflow_metacompress.models.quantization`):

- ``dtype="int8"`` (default): dynamic quantization, the integer-arithmetic inference of
  Jacob et al. ("Quantization and Training of Neural Networks for Efficient
  Integer-Arithmetic-Only Inference", CVPR 2018) as applied to BERT by Zafrir et al.
  ("Q8BERT: Quantized 8Bit BERT", 2019): ``torch.ao.quantization.quantize_dynamic`` on
  every Linear layer (int8 weights, one scale per output row; activations quantized on
  the fly), and, with ``embeddings=True``, 8-bit embedding rows with a float scale and
  offset each, since the vocabulary table dominates small code models;
- ``dtype="float16"`` / ``"bfloat16"``: every floating-point weight in half precision.

The copy's size is the bytes of its stored weights (int8 values, scales, the float
LayerNorms and biases), not Compressor's parameters × 4, and the logged model holds
exactly those weights. Quantization is what most teams ship, yet none of the paper
repositories (Compressor, AVATAR, MORPH) judges a quantized model: MetaCompress (Awal,
Rochan, Roy, arXiv 2511.05476) asks whether a compressed model *behaves* like its
teacher, and a faithful quantized copy should keep nearly every prediction (MR1 near 0)
where distilled students of similar accuracy do not. ``ctx.size_mb`` (the size target)
does not apply: the copy has its natural size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from ..context import DistillContext, StudentOutcome
from ..options import MethodOptions
from ..outcomes import post_training_outcome

NAME = "quantize"
TRAINS = False  # post-training: no student steps (the pipeline budgets its time accordingly)


@dataclass(frozen=True)
class Options(MethodOptions):
    """``dtype`` (``int8``, ``float16``, ``bfloat16``); for int8, whether embedding
    tables are quantized too (``embeddings``) and whether Linear weights get a scale per
    output row (``per_channel``) rather than one per matrix. ``lr`` is unused (nothing
    is trained)."""

    dtype: Literal["int8", "float16", "bfloat16"] = "int8"
    embeddings: bool = True
    per_channel: bool = True


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """Load the teacher from ``ctx.teacher_uri`` and return its quantized copy."""
    from ...models.quantization import QuantSpec, describe, quantize_classifier
    from ..arch import measure_model
    from ..fidelity_cache import load_float_teacher

    teacher, tokenizer = load_float_teacher(
        ctx.teacher_uri, "quantize", "the quantize method quantizes its weights", "quantize a float teacher"
    )
    spec = QuantSpec(dtype=options.dtype, embeddings=options.embeddings, per_channel=options.per_channel)
    model = quantize_classifier(teacher, spec)
    before, after = measure_model(teacher), measure_model(model)
    return post_training_outcome(
        ctx,
        NAME,
        teacher,
        (model, tokenizer),
        before=before,
        after=after,
        quantization=asdict(spec),
        gflops=after["gflops"],
        params={"quant.dtype": options.dtype},
        action=f"quantized to {options.dtype}",
        modules=describe(model),
    )
