"""The measured latency model (distill/latency.py): the fit recovers a known cost law from
its timings, the cache is keyed and reused, and the timing helpers leave torch as found."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlflow_metacompress.distill import latency, latency_fit
from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.threads import resolve as resolve_threads

# a cost law in the model's own terms: constant, per layer, projections, FFN, softmax
LAW = np.array([0.05, 0.01, 2.0, 1.0, 0.0, 0.5, 0.0])


def law_timer(calls: list | None = None):
    def timer(spec: ArchSpec, seq: int, batch: int) -> float:
        assert spec.max_length == seq
        if calls is not None:
            calls.append((spec, seq, batch))
        return float(LAW @ latency_fit.features(spec))

    return timer


def test_features_are_the_documented_cost_terms():
    spec = ArchSpec(
        vocab_size=1000,
        num_hidden_layers=3,
        hidden_size=64,
        num_attention_heads=4,
        intermediate_size=256,
        max_length=128,
    )
    L, s, h, a, f = 3, 128, 64, 4, 256
    expected = [
        1,
        L,
        L * s * h * h / 1e7,
        L * s * h * f / 1e7,
        L * s * s * h / 1e7,
        L * a * s * s / 1e6,
        L * s * (h + f) / 1e5,
    ]
    assert latency_fit.features(spec) == pytest.approx(expected)
    assert len(expected) == len(latency_fit.TERMS)


def test_calibration_recovers_a_known_law_and_predicts_unseen_shapes():
    model = latency.calibrate(64, 8, timer=law_timer())
    assert model.coef == pytest.approx(LAW, abs=1e-6) and model.residual < 1e-6
    assert (model.seq_len, model.batch_size, model.threads) == (64, 8, resolve_threads())  # the inference threads
    unseen = ArchSpec(
        vocab_size=5000,
        num_hidden_layers=5,
        hidden_size=96,
        num_attention_heads=3,
        intermediate_size=384,
        max_length=64,
    )
    assert model.predict_ms(unseen) == pytest.approx(float(LAW @ latency_fit.features(unseen)))
    assert model.predict_many([unseen, unseen]).tolist() == pytest.approx([model.predict_ms(unseen)] * 2)
    assert latency_fit.LatencyModel.from_dict(json.loads(json.dumps(model.to_dict()))) == model


def test_latency_model_is_cached_per_setting_and_recalibrated_when_corrupt(tmp_path):
    calls: list = []
    first = latency.latency_model(64, 8, device="cpu", cache_dir=tmp_path, timer=law_timer(calls))
    assert len(calls) == len(latency.CALIBRATION)
    files = list(tmp_path.glob("latency-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["seq_len"] == 64

    def refuse(*a):
        raise AssertionError("a cached model must not be timed again")

    assert latency.latency_model(64, 8, device="cpu", cache_dir=tmp_path, timer=refuse) == first
    latency.latency_model(32, 8, device="cpu", cache_dir=tmp_path, timer=law_timer())  # another length: another key
    assert len(list(tmp_path.glob("latency-*.json"))) == 2
    files[0].write_text('{"format": 1, "coef": [-1]}')
    calls.clear()
    again = latency.latency_model(64, 8, device="cpu", cache_dir=tmp_path, timer=law_timer(calls))
    assert len(calls) == len(latency.CALIBRATION) and again.coef == pytest.approx(first.coef)


def test_real_timing_is_positive_and_threads_are_restored(monkeypatch):
    import torch

    monkeypatch.setenv("METACOMPRESS_THREADS", "3")
    before = torch.get_num_threads()
    with latency.timing_threads() as n:
        assert torch.get_num_threads() == n == 3  # the inference threads: here $METACOMPRESS_THREADS
        ms = latency.time_shape(
            ArchSpec(
                vocab_size=100,
                num_hidden_layers=1,
                hidden_size=16,
                num_attention_heads=1,
                intermediate_size=32,
                max_length=8,
            ),
            8,
            2,
            repeats=1,
        )
    assert torch.get_num_threads() == before
    assert np.isfinite(ms) and ms > 0
    assert latency.device_name("cpu").startswith("cpu:")


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="seq_len"):
        latency.calibrate(1, 8, timer=law_timer())
    with pytest.raises(ValueError, match="another format"):
        latency_fit.LatencyModel.from_dict({"format": 99})
