"""The resample counts of mlflow_metacompress/statistics.py drawn chunk by chunk against one
unchunked draw of the same stream, and the bootstrap product's one BLAS thread."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from mlflow_metacompress import resampling as st


@pytest.mark.parametrize("n,samples,chunk_cells", [(7, 23, 20), (13, 5, 1), (50, 40, 1_000)])
def test_chunked_counts_equal_one_draw_of_the_stream(monkeypatch, n, samples, chunk_cells):
    """Chunks that do not divide the replicates still continue one ``default_rng(seed)`` stream."""
    monkeypatch.setattr(st, "CHUNK_CELLS", chunk_cells)
    draws = np.random.default_rng(3).integers(0, n, size=(samples, n))
    expected = np.stack([np.bincount(row, minlength=n) for row in draws]).astype(np.float32)
    counts = st.resample_counts(n, samples, seed=3)
    assert counts.dtype == np.float32 and np.array_equal(counts, expected)
    assert (counts.sum(axis=1) == n).all()
    st._CACHE.clear()
    chunks = list(st.weight_chunks(n, samples, seed=3))  # cached path: the same matrix
    assert len(chunks) == 1 and np.array_equal(chunks[0][1], expected)
    assert np.array_equal(next(st.weight_chunks(n, samples, seed=3))[1], expected)  # reused


def test_product_runs_on_one_blas_thread_and_restores_the_count():
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    if not blas:
        pytest.skip("no BLAS library that threadpoolctl can see")
    before = [lib["num_threads"] for lib in blas]
    with st.one_blas_thread():
        assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
    assert [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"] == before
