"""Bootstrap resamples: multinomial counts of original samples per replicate, drawn in
cache-sized chunks from one seeded stream, the last matrix kept for the next evaluation on
the same test set, and the one-BLAS-thread limit the product ``W @ S`` runs under.

Used by :mod:`.statistics` (percentile-bootstrap intervals, Efron & Tibshirani 1993, ch. 13;
the cluster bootstrap over original samples of Field & Welsh, JASA 2007) for the MetaCompress
relations (Awal, Rochan, Roy, arXiv 2511.05476).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

CHUNK_CELLS = 200_000  # replicates × samples drawn at once (1.6 MB of int64 draws: stays in cache)
CACHE_CELLS = 16_000_000  # largest kept resample matrix (64 MB of float32 counts)

_CACHE: dict[tuple[int, int, int], np.ndarray] = {}
_CACHE_LOCK = threading.Lock()


def _draws(n: int, samples: int, seed: int, out: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Resample counts in chunks of rows (one ``numpy.random.default_rng(seed)`` stream),
    written into ``out`` (``samples × n`` float32) when given, else into a fresh chunk.

    A chunk of :data:`CHUNK_CELLS` draws stays in cache while it is offset, counted and
    cast (measured: 200,000 cells beat 500,000 and 2,000,000 by 10-40%)."""
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_CELLS // max(n, 1))
    offsets = (np.arange(chunk, dtype=np.int64) * n)[:, None]
    for start in range(0, samples, chunk):
        b = min(chunk, samples - start)
        draws = rng.integers(0, n, size=(b, n))
        draws += offsets[:b]
        counts = np.bincount(draws.ravel(), minlength=b * n).reshape(b, n)
        target = np.empty((b, n), dtype=np.float32) if out is None else out[start : start + b]
        np.copyto(target, counts, casting="unsafe")  # cast while copying: no int64 → float32 temporary
        yield start, target


def resample_counts(n: int, samples: int, seed: int) -> np.ndarray:
    """``samples × n`` multinomial counts: row ``r`` counts how often replicate ``r`` drew
    each original sample when drawing ``n`` with replacement."""
    out = np.empty((samples, n), dtype=np.float32)
    for _ in _draws(n, samples, seed, out):
        pass
    return out


def weight_chunks(n: int, samples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """The counts of :func:`resample_counts`. They depend only on ``(n, samples, seed)``, so
    the last matrix up to :data:`CACHE_CELLS` cells is kept: evaluations of several students
    on one test set reuse the same resamples (common random numbers) and skip drawing them."""
    if n * samples > CACHE_CELLS:
        yield from _draws(n, samples, seed)
        return
    key = (n, samples, seed)
    with _CACHE_LOCK:
        W = _CACHE.get(key)
    if W is None:
        W = resample_counts(n, samples, seed)
        W.setflags(write=False)
        with _CACHE_LOCK:
            _CACHE.clear()
            _CACHE[key] = W
    yield 0, W


@functools.lru_cache(maxsize=1)
def _blas_controller() -> Any:
    """threadpoolctl's view of the loaded BLAS (scikit-learn's dependency; ~3 ms, once), or None."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - scikit-learn requires threadpoolctl
        return None
    return ThreadpoolController()


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """Run the bootstrap's product on one BLAS thread. It is ~10 ms of work bound by reading the
    counts from memory: a second thread barely shortens it, doubles its CPU time, and OpenBLAS's
    idle workers then spin-wait while the rest of the evaluation runs (measured in
    ``benchmarks/bench_intervals.py`` on 2 shared cores, OPENBLAS_NUM_THREADS=1 against the
    default: warm CPU ratio 1.11 → 1.05). It also fixes the float32 summation order, which the
    thread count changes: the KL and MR4 sums differ in their last digits between thread counts."""
    controller = _blas_controller()
    return controller.limit(limits=1, user_api="blas") if controller is not None else contextlib.nullcontext()
