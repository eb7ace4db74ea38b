"""ONNX int8: the teacher exported to ONNX and quantized by ONNX Runtime, logged with ``mlflow.onnx``.

The deployment format beside :mod:`.quantize`'s torch copy: no student is searched or
trained. The teacher is loaded from ``ctx.teacher_uri``, exported to ONNX once
(:mod:`mlflow_metacompress.models.onnx_export`, cached by content) and quantized with
``onnxruntime.quantization.quantize_dynamic``: int8 weights (one scale per output
channel with ``per_channel``), activations quantized on the fly, the integer inference of
Jacob et al. (CVPR 2018) as Q8BERT (Zafrir et al., 2019) applies it to BERT. The
embedding tables (``Gather``) are stored in 8 bits too, with one scale per table.

The student is an :class:`~mlflow_metacompress.models.onnx_runtime.OnnxClassifier` and
is registered as an ``mlflow.onnx`` model (:func:`~mlflow_metacompress.models.onnx_logging.log_onnx_classifier`)
whose file carries its tokenizer, labels and max length, so the evaluator, the gates and
the speed tags judge exactly what a team would deploy. MetaCompress (Awal, Rochan, Roy,
arXiv 2511.05476) asks whether such a compressed model *behaves* like its teacher.
Its size is the ``.onnx`` file's bytes; ``ctx.size_mb`` (the size target) does not apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..context import DistillContext, StudentOutcome
from ..options import MethodOptions

NAME = "onnx-int8"
TRAINS = False  # post-training: no student steps (the pipeline budgets its time accordingly)


@dataclass(frozen=True)
class Options(MethodOptions):
    """``per_channel``: one scale per output channel of each weight (default) rather than
    one per matrix. ``lr`` is unused (nothing is trained)."""

    per_channel: bool = True


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """Export the teacher at ``ctx.teacher_uri`` to ONNX, quantize it to int8 and return it."""
    import logging

    from ...models.onnx_export import cached_export
    from ...models.onnx_runtime import OnnxClassifier
    from ..arch import measure_model, spec_of
    from ..fidelity_cache import load_float_teacher

    teacher, tokenizer = load_float_teacher(
        ctx.teacher_uri, "onnx-int8", "the onnx-int8 method exports its weights", "export a float teacher"
    )
    path = cached_export(teacher, tokenizer, ctx.cache_dir, int8=True, per_channel=options.per_channel)
    model = OnnxClassifier(path)
    before = measure_model(teacher)
    model.extra["gflops"] = before["gflops"]  # the graph computes the teacher's operations, in int8
    after = model.measurements()
    logging.getLogger(__name__).info(
        "exported %s to ONNX int8: %.3f MB → %.3f MB (%.2f×)",
        ctx.teacher_uri,
        before["size_mb"],
        after["size_mb"],
        after["size_mb"] / before["size_mb"],
    )
    arch = spec_of(teacher).to_dict()
    config: dict[str, Any] = {
        "method": NAME,
        "quantization": model.quantization,
        "format": "onnx",
        "teacher": ctx.teacher_uri,
        "arch": arch,
        "teacher_size_mb": before["size_mb"],
        "size_mb": after["size_mb"],
        "size_ratio": after["size_mb"] / before["size_mb"],
        "gflops": before["gflops"],
        "trained": False,
    }
    params = {f"arch.{k}": v for k, v in arch.items()} | {"quant.dtype": "int8", "quant.backend": "onnxruntime"}
    return StudentOutcome(model, model.tokenizer, config, None, params)
