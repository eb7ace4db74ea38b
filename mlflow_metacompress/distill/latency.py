"""A small, cached model of a student's inference latency on the machine at hand.

FLOPs are a poor proxy for latency on a CPU: Compressor's fitness (Shi et al., ASE 2022)
drives its search to hidden 16 with an FFN of 2,304 and AVATAR's (Shi et al., ICSE-SEIS
2024) to head dimension 2, shapes that are memory- and softmax-bound and slower than the
teacher they replace. Hardware-aware searches (HAT, Wang et al., ACL 2020; nn-Meter,
Zhang et al., MobiSys 2021) therefore *measure* latency on the target device and fit a
predictor. This module does that at the task's sequence length and batch size:

1. :func:`calibrate` builds a dozen RoBERTa encoder shapes (weights are irrelevant to
   speed), times each forward pass under ``torch.inference_mode`` (best of ``repeats``
   after a warm-up) and divides by the batch size;
2. per-sample milliseconds are fitted by non-negative least squares on the cost terms
   of one encoder layer (:func:`~.latency_fit.features`): ``L·s·h²`` (projections),
   ``L·s·h·f`` (FFN), ``L·s²·h`` (attention products), ``L·A·s²`` (softmax per head, the
   term that makes small head dimensions slow), ``L·s·(h + f)`` (element-wise and
   LayerNorm traffic), ``L`` and a constant;
3. :func:`latency_model` caches the fit as JSON in the project cache
   (:func:`mlflow_metacompress.cache.location`), keyed by device, torch version, thread
   count, sequence length and batch size, so each machine calibrates once.

Every timing runs on the threads inference uses (:func:`timing_threads`,
:mod:`mlflow_metacompress.threads`: the enclosing run's count, ``$METACOMPRESS_THREADS``,
else the free cores), so the latency searched for is the one the student will
have. Timings used to run on one thread, which stabilised them on shared machines but
measured another program: the same pair of models read 11.8× apart on one thread and
6.3× at the default threads (issue 22). The thread count is part of the cache key.

Rotary (ESM-style) students are predicted as their RoBERTa equivalent: rotary
embeddings add element-wise products only.

Since issue 31 the searches bound the deterministic :class:`.cost.FlopCost` by default
(fitted timings moved between runs, and with them the searched architecture); this
model is the ``cost="measured"`` alternative, and the students' measured latency is
reported (:mod:`.speed`), not searched on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..adapters.timing import side_by_side, timing_threads
from .arch import ArchSpec
from .latency_fit import FORMAT, LatencyModel, features

logger = logging.getLogger(__name__)

# (layers, hidden, heads, ffn, fraction of the sequence length): students' range, including
# memory-bound shapes (head dimension 2, FFN 64× hidden) so that their cost is learnt
CALIBRATION: tuple[tuple[int, int, int, int, float], ...] = (
    (1, 64, 4, 256, 1.0),
    (2, 128, 4, 512, 1.0),
    (4, 64, 2, 256, 1.0),
    (1, 256, 8, 1024, 1.0),
    (2, 32, 2, 128, 1.0),
    (3, 96, 6, 384, 1.0),
    (2, 16, 8, 1024, 1.0),
    (6, 32, 2, 64, 1.0),
    (1, 16, 1, 2048, 1.0),
    (2, 192, 3, 768, 1.0),
    (4, 128, 8, 128, 1.0),
    (2, 128, 4, 512, 0.5),
    (1, 64, 16, 256, 0.5),
)
TIMING_THREADS: int | None = None  # None: the inference threads (mlflow_metacompress.threads.resolve)
Timer = Callable[[ArchSpec, int, int], float]  # (shape, sequence length, batch) -> ms per sample


def device_name(device: str = "cpu") -> str:
    """A stable name of ``device``: the GPU's name, or the CPU model and core count."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"cpu:{model} ×{os.cpu_count()}"


def time_shape(spec: ArchSpec, seq_len: int, batch_size: int, *, device: str = "cpu", repeats: int = 3) -> float:
    """Best-of-``repeats`` forward time of ``spec``'s encoder on random ids, in ms per sample."""
    import torch

    model = spec.build(dropout=0.0).encoder.eval().to(device)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, spec.vocab_size, (batch_size, seq_len), generator=g).to(device)
    mask = torch.ones_like(ids)
    cuda = device.startswith("cuda")

    def forward() -> None:
        if cuda:  # time the kernels, not their launch
            torch.cuda.synchronize()
        model(input_ids=ids, attention_mask=mask)
        if cuda:
            torch.cuda.synchronize()

    with torch.inference_mode():  # one warm-up run (allocators, kernels), then the best of ``repeats``
        best = side_by_side({"shape": forward}, repeats)["shape"]
    return best * 1000.0 / batch_size


def calibrate(
    seq_len: int,
    batch_size: int,
    *,
    device: str = "cpu",
    repeats: int = 3,
    timer: Timer | None = None,
    shapes: Sequence[tuple[int, int, int, int, float]] = CALIBRATION,
    progress: bool = False,
) -> LatencyModel:
    """Time ``shapes`` at ``seq_len`` × ``batch_size`` (``timer`` replaces the clock, for
    tests) and fit the non-negative coefficients of :func:`~.latency_fit.features`."""
    import torch
    from scipy.optimize import nnls
    from tqdm.auto import tqdm

    if seq_len < 2 or batch_size < 1:
        raise ValueError(f"latency calibration needs seq_len ≥ 2 and batch_size ≥ 1, got {seq_len}, {batch_size}")
    clock: Timer = timer or (lambda spec, s, b: time_shape(spec, s, b, device=device, repeats=repeats))
    rows, ms, samples = [], [], []
    with timing_threads(device) as threads:
        for L, h, A, f, frac in tqdm(shapes, desc="latency calibration", disable=not progress, leave=False):
            s = max(2, round(seq_len * frac))
            spec = ArchSpec(
                vocab_size=1000,
                num_hidden_layers=L,
                hidden_size=h,
                num_attention_heads=A,
                intermediate_size=f,
                max_length=s,
            )
            t = float(clock(spec, s, batch_size))
            rows.append(features(spec))
            ms.append(t)
            samples.append(
                (
                    {
                        "num_hidden_layers": L,
                        "hidden_size": h,
                        "num_attention_heads": A,
                        "intermediate_size": f,
                        "seq_len": s,
                    },
                    t,
                )
            )
    X, y = np.asarray(rows), np.asarray(ms)
    # relative error matters (students span two orders of magnitude): weight rows by 1/y
    w = 1.0 / np.maximum(y, 1e-9)
    coef, _ = nnls(X * w[:, None], y * w)
    residual = float(np.sqrt(np.mean(((X @ coef - y) * w) ** 2)))
    model = LatencyModel(
        tuple(float(c) for c in coef),
        device_name(device),
        torch.__version__,
        threads,
        seq_len,
        batch_size,
        tuple(samples),
        residual,
    )
    logger.info(
        "latency model on %s (seq %d, batch %d): relative RMS error %.1f%%",
        model.device,
        seq_len,
        batch_size,
        100 * residual,
    )
    return model


def cache_key(seq_len: int, batch_size: int, device: str = "cpu") -> str:
    """The cache key: device name, torch version, threads, sequence length, batch size."""
    import torch

    from ..threads import resolve

    threads = resolve(TIMING_THREADS)
    text = "|".join(
        map(str, (FORMAT, device_name(device), torch.__version__, threads, seq_len, batch_size, CALIBRATION))
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def latency_model(
    seq_len: int,
    batch_size: int,
    *,
    device: str | None = None,
    cache_dir: Any = None,
    repeats: int = 3,
    refresh: bool = False,
    timer: Timer | None = None,
    progress: bool = False,
) -> LatencyModel:
    """The cached :class:`~.latency_fit.LatencyModel` of this machine for ``seq_len`` × ``batch_size``
    (calibrated on first use; ``refresh`` recalibrates). ``device`` defaults to ``cuda``
    when available, as the student will run there."""
    import torch

    from ..cache import location

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    path = location(cache_dir) / f"latency-{cache_key(seq_len, batch_size, device)}.json"
    if path.is_file() and not refresh:
        try:
            model = LatencyModel.from_dict(json.loads(path.read_text()))
            if (model.seq_len, model.batch_size, model.device) == (seq_len, batch_size, device_name(device)):
                return model
            logger.warning("latency cache %s belongs to another setting; recalibrating", path)
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("discarding invalid latency cache %s: %s", path, exc)
    model = calibrate(seq_len, batch_size, device=device, repeats=repeats, timer=timer, progress=progress)
    _write(path, model)
    return model


def _write(path: Path, model: LatencyModel) -> None:
    """Atomic write (temporary file + ``os.replace``); a read-only cache only logs."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as fh:
            json.dump(model.to_dict(), fh)
        os.replace(tmp, path)
    except OSError as exc:
        logger.warning("could not cache the latency model at %s: %s", path, exc)
