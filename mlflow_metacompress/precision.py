"""Numeric precision of training and inference: ``auto`` picks bfloat16 where it pays.

bfloat16 keeps float32's 8-bit exponent with a 7-bit mantissa (Kalamkar et al., "A Study
of BFLOAT16 for Deep Learning Training", arXiv 1905.12322, 2019), so mixed-precision
training needs no loss scaling: matrix products run in bf16 under ``torch.autocast``
while weights, optimiser state and reductions stay in float32 (Micikevicius et al.,
"Mixed Precision Training", ICLR 2018). It is only *faster* where the hardware multiplies
bf16 natively: on x86 CPUs with AVX512-BF16 (``avx512_bf16``) or AMX (``amx_bf16``), where
oneDNN's bf16 GEMMs run at about twice the float32 rate, and on GPUs that report
``torch.cuda.is_bf16_supported()``. Elsewhere bf16 is emulated and slower, so ``auto``
stays in float32 there.

Spellings: ``auto``; ``fp32`` (also ``32-true``, ``32``, ``float32``); ``bf16`` (also
``bf16-mixed``, ``bfloat16``); ``fp16`` (also ``16-mixed``, ``float16``; GPUs only for
training). Lightning strings such as ``64-true`` or ``bf16-true`` pass through training
unchanged. ``$METACOMPRESS_PRECISION`` sets the value an unset precision means (default
``auto``) for training and inference alike, e.g. ``fp32`` to reproduce full-precision runs.
Inside :func:`scoped` (the evaluator's ``evaluator_config["precision"]``, the main job's
``--precision`` for its own inference) an unset precision means the scoped value instead:
a context variable, so a webhook worker thread beside it is not affected and the process
environment is never changed.

Probabilities are always formed in float32: logits are cast before the softmax, so the
relations' KL divergences (MR2) and confidences (MR4) keep their meaning in bf16 runs.
This module imports torch only inside the functions that need it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

PRECISION_ENV = "METACOMPRESS_PRECISION"
AUTO = "auto"
INFERENCE = ("fp32", "bf16", "fp16")
# CPU flags (Linux /proc/cpuinfo) of native bf16 dot products: AVX512-BF16 and AMX-BF16
BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
ALIASES = {
    "auto": AUTO,
    "fp32": "fp32",
    "32": "fp32",
    "32-true": "fp32",
    "float32": "fp32",
    "bf16": "bf16",
    "bf16-mixed": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "16-mixed": "fp16",
    "float16": "fp16",
}
# what an unset precision means inside :func:`scoped` (None: $METACOMPRESS_PRECISION, else auto)
_SCOPED: contextvars.ContextVar[str | None] = contextvars.ContextVar("metacompress_precision", default=None)
# the Lightning ``Trainer(precision=...)`` of each inference spelling
LIGHTNING = {"fp32": "32-true", "bf16": "bf16-mixed", "fp16": "16-mixed"}
# Lightning values with no inference spelling, accepted for training as they are
LIGHTNING_ONLY = ("64-true", "bf16-true", "16-true")


@functools.lru_cache(maxsize=4)
def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags of the first processor in ``path`` (empty where there is no
    such file, e.g. on macOS or Windows)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def cpu_has_fast_bf16(flags: Iterable[str] | None = None) -> bool:
    """Whether this CPU multiplies bf16 natively (AVX512-BF16 or AMX): from ``flags``, else
    from :func:`cpu_flags`, else (no flags to read) from oneDNN's own check in torch."""
    known = frozenset(flags) if flags is not None else cpu_flags()
    if known:
        return bool(known & BF16_CPU_FLAGS)
    try:
        import torch

        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception as exc:  # an old torch or a build without oneDNN: no fast bf16
        logger.debug("no oneDNN bf16 check in this torch: %s", exc)
        return False


def gpu_has_bf16() -> bool:
    """Whether a visible CUDA GPU supports bfloat16."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def requested(value: str | None = None) -> str:
    """``value`` in its canonical spelling (``auto``, ``fp32``, ``bf16``, ``fp16``, or a
    Lightning-only string); None or empty means the :func:`scoped` value, else
    ``$METACOMPRESS_PRECISION``, else ``auto``. An unknown value raises ``ValueError`` naming
    it (and the variable when it came from there)."""
    source = "precision"
    if value is None or str(value).strip() == "":
        value, source = _SCOPED.get() or os.environ.get(PRECISION_ENV) or AUTO, f"${PRECISION_ENV}"
    text = str(value).strip().lower()
    if text in ALIASES:
        return ALIASES[text]
    if text in LIGHTNING_ONLY:
        return text
    known = sorted(set(ALIASES) | set(LIGHTNING_ONLY))
    raise ValueError(f"{source} must be one of {known}, got {value!r}")


def auto(device: str = "cpu", flags: Iterable[str] | None = None) -> str:
    """What ``auto`` means on ``device`` (``cpu`` or ``cuda``/``gpu``): ``bf16`` where the
    hardware runs it natively (``flags``: CPU flags to judge instead of this machine's), else ``fp32``."""
    if device in ("cuda", "gpu"):
        return "bf16" if gpu_has_bf16() else "fp32"
    return "bf16" if cpu_has_fast_bf16(flags) else "fp32"


def for_inference(value: str | None = None, device: str = "cpu") -> str:
    """The inference precision (``fp32``, ``bf16`` or ``fp16``) of ``value`` on ``device``."""
    chosen = requested(value)
    if chosen == AUTO:
        return auto(device)
    if chosen not in INFERENCE:
        raise ValueError(f"precision for inference must be one of {['auto', *INFERENCE]}, got {value!r}")
    return chosen


def for_training(value: str | None = None, device: str = "cpu") -> str:
    """Lightning's ``Trainer(precision=...)`` for ``value`` on ``device`` (``cpu`` or ``gpu``):
    ``auto`` → ``bf16-mixed`` where bf16 is native, else ``32-true``."""
    chosen = requested(value)
    if chosen == AUTO:
        chosen = auto(device)
    return LIGHTNING.get(chosen, chosen)


def short(lightning: str | None) -> str:
    """The inference spelling of a Lightning precision (``bf16-mixed`` → ``bf16``), for tags."""
    if lightning is None:
        return "fp32"
    return ALIASES.get(str(lightning), str(lightning))


@contextlib.contextmanager
def scoped(value: str | None, source: str = "precision") -> Iterator[str | None]:
    """Within the block, an unset precision means ``value`` (validated here, a bad one
    raising ``ValueError`` that names ``source``); None or empty leaves things as they are.
    Yields the canonical spelling (or None). A context variable: other threads and the
    process environment are untouched."""
    if value is None or str(value).strip() == "":
        yield None
        return
    try:
        chosen = requested(str(value))
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    token = _SCOPED.set(chosen)
    try:
        yield chosen
    finally:
        _SCOPED.reset(token)


def inference_spelling(training: str | None) -> str | None:
    """The inference precision an explicit training precision implies (``32-true`` →
    ``fp32``, ``bf16-true`` → ``bf16``), or None for None, empty or ``auto``."""
    if training is None or str(training).strip() == "" or requested(training) == AUTO:
        return None
    chosen = requested(training)
    return {"64-true": "fp32", "bf16-true": "bf16", "16-true": "fp16"}.get(chosen, chosen)


@contextlib.contextmanager
def inference_follows(training: str | None) -> Iterator[None]:
    """While a command trains at an explicit ``training`` precision (``--precision 32-true``),
    its own inference (soft labels, test accuracy, speed tags) runs at the same one
    (:func:`scoped`); the gates' evaluations get it through ``evaluator_config["precision"]``.
    None, empty or ``auto`` leave everything as it is."""
    with scoped(inference_spelling(training)):
        yield
