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

from ..context import DistillContext, StudentOutcome
from ..options import MethodOptions
from ..outcomes import post_training_outcome

NAME = "onnx-int8"
TRAINS = False  # post-training: no student steps (the pipeline budgets its time accordingly)


@dataclass(frozen=True)
class Options(MethodOptions):
    """``per_channel``: one scale per output channel of each weight (default) rather than
    one per matrix. ``lr`` is unused (nothing is trained)."""

    per_channel: bool = True


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """Export the teacher at ``ctx.teacher_uri`` to ONNX, quantize it to int8 and return it."""
    from ...models.onnx_export import cached_export
    from ...models.onnx_runtime import OnnxClassifier
    from ..arch import measure_model
    from ..fidelity_cache import load_float_teacher

    teacher, tokenizer = load_float_teacher(
        ctx.teacher_uri, "onnx-int8", "the onnx-int8 method exports its weights", "export a float teacher"
    )
    path = cached_export(teacher, tokenizer, ctx.cache_dir, int8=True, per_channel=options.per_channel)
    model = OnnxClassifier(path)
    before = measure_model(teacher)
    model.extra["gflops"] = before["gflops"]  # the graph computes the teacher's operations, in int8
    return post_training_outcome(
        ctx,
        NAME,
        teacher,
        (model, model.tokenizer),
        before=before,
        after=model.measurements(),
        quantization=model.quantization,
        gflops=before["gflops"],
        params={"quant.dtype": "int8", "quant.backend": "onnxruntime"},
        action="exported to ONNX int8",
        format="onnx",
    )
