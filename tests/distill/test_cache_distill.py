"""Distillation caches go through the one cache module: one identity for every spelling of
a model, validated soft-label and fidelity entries, and nothing in the working directory."""

from __future__ import annotations

import shutil

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress import cache, cache_keys
from tests.support.models import LENGTH_CODES as CODES
from tests.support.models import LengthModel
from tests.support.models import length_expected_probs as expected_probs


@pytest.mark.slow
def test_one_identity_for_every_spelling_of_a_model(registered_teacher):
    info, _, _ = registered_teacher
    run_uri = f"runs:/{info.run_id}/m"
    ids = {
        cache_keys.model_identity(u)
        for u in ("models:/teacher/1", "models:/teacher@champion", "models:/teacher/latest", run_uri, info.model_uri)
    }
    ids.add(cache_keys.model_identity(mlflow.pyfunc.load_model("models:/teacher@champion")))
    assert len(ids) == 1 and ids.pop() == f"model_uuid:{info.model_uuid}"
    with mlflow.start_run():
        other = mlflow.pyfunc.log_model(name="m", python_model=LengthModel(), pip_requirements=[])
    assert cache_keys.model_identity(other.model_uri) != cache_keys.model_identity("models:/teacher/1")
    assert cache_keys.model_identity(lambda df: df) is None  # a plain callable has no identity: never cached


def test_soft_labels_live_in_the_one_cache_and_never_in_the_cwd(registered_teacher, monkeypatch):
    from mlflow_metacompress.distill import soft_labels

    _, home, cwd = registered_teacher
    df = pd.DataFrame({"func": CODES})
    logits = soft_labels.teacher_logits("models:/teacher/latest", df, ["func"])  # cache_dir=None: the one location
    np.testing.assert_allclose(np.exp(logits), expected_probs(df), rtol=1e-6)
    assert list(cwd.iterdir()) == []
    entries = list(home.glob("soft_labels-*.npz"))
    assert len(entries) == 1

    def no_teacher(uri):
        raise AssertionError("teacher loaded despite a valid cache entry")

    monkeypatch.setattr(mlflow.pyfunc, "load_model", no_teacher)
    np.testing.assert_array_equal(soft_labels.teacher_logits("models:/teacher@champion", df, ["func"]), logits)
    with pytest.raises(AssertionError, match="teacher loaded"):  # use_cache=False neither reads nor writes
        soft_labels.teacher_logits("models:/teacher/1", df, ["func"], use_cache=False)
    assert list(cwd.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "nan", "other_rows"])
def test_a_bad_soft_label_entry_is_recomputed(registered_teacher, damage, caplog):
    from mlflow_metacompress.distill import soft_labels

    _, home, _ = registered_teacher
    df = pd.DataFrame({"func": CODES})
    first = soft_labels.teacher_logits("models:/teacher/1", df, ["func"])
    (entry,) = home.glob("soft_labels-*.npz")
    if damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:100])
    elif damage == "nan":
        key = soft_labels.cache_key("models:/teacher/1", df, ["func"])
        bad = first.copy()
        bad[3, 1] = np.nan
        cache.store("soft_labels", key, {"logits": bad}, rows=cache_keys.rows_digest(df, ["func"]), cache_dir=home)
    else:  # an entry computed on other rows, copied over this one
        soft_labels.teacher_logits("models:/teacher/1", df.iloc[::-1], ["func"])
        other = next(p for p in home.glob("soft_labels-*.npz") if p != entry)
        shutil.copy(other, entry)
    again = soft_labels.teacher_logits("models:/teacher/1", df, ["func"])
    np.testing.assert_array_equal(again, first)
    assert "discarding invalid soft_labels cache entry" in caplog.text


def test_soft_labels_are_cached_apart_per_inference_precision(registered_teacher, monkeypatch):
    """fp32 and bf16 teacher logits differ, so a run in one precision never reads the other's."""
    from mlflow_metacompress.distill import soft_labels

    _, home, _ = registered_teacher
    df = pd.DataFrame({"func": CODES})
    keys = {}
    for value in ("fp32", "bf16"):
        monkeypatch.setenv("METACOMPRESS_PRECISION", value)
        keys[value] = soft_labels.cache_key("models:/teacher/1", df, ["func"])
        soft_labels.teacher_logits("models:/teacher/1", df, ["func"])
    assert keys["fp32"] != keys["bf16"]
    assert len(list(home.glob("soft_labels-*.npz"))) == 2  # one entry per precision
    monkeypatch.setenv("METACOMPRESS_PRECISION", "fp32")
    assert soft_labels.cache_key("models:/teacher/1", df, ["func"]) == keys["fp32"]  # stable within one


class _FakeClassifier:
    """Stands in for a CodeClassifier: log-softmax of a length feature, [CLS] = the length."""

    num_labels = 2

    def encode(self, tokenizer, a, b):
        return {"lengths": [len(t) for t in a]}

    def __call__(self, lengths, output_hidden_states):
        import torch

        x = torch.tensor(lengths, dtype=torch.float32)[:, None]
        return torch.cat([x / 50, -x / 50], dim=1), (x[:, None, :].expand(-1, 3, 4),)


def test_fidelity_states_use_the_one_cache_and_recompute_a_bad_entry(registered_teacher, monkeypatch, caplog):
    from mlflow_metacompress.distill import fidelity_cache
    from mlflow_metacompress.distill.datasets import CodeExamples

    _, home, cwd = registered_teacher
    loads = []
    monkeypatch.setattr(
        fidelity_cache, "load_teacher_classifier", lambda uri: loads.append(uri) or (_FakeClassifier(), None)
    )
    examples = CodeExamples(texts=CODES, labels=[0] * len(CODES))
    logits, states = fidelity_cache.teacher_outputs("models:/teacher/1", examples, None)
    assert states[:, 0].tolist() == [float(len(t)) for t in CODES]
    np.testing.assert_allclose(np.exp(logits).sum(axis=1), 1.0, rtol=1e-6)
    (entry,) = home.glob("fidelity-*.npz")
    assert list(cwd.iterdir()) == [] and len(loads) == 1
    fidelity_cache.teacher_outputs("models:/teacher@champion", examples, None)
    assert len(loads) == 1  # cache hit under another spelling of the same teacher
    with np.load(entry) as z:
        data = {k: z[k] for k in z.files}
    data["states"] = np.full_like(data["states"], np.nan)
    with open(entry, "wb") as fh:
        np.savez(fh, **data)
    again, again_states = fidelity_cache.teacher_outputs("models:/teacher/1", examples, None)
    assert len(loads) == 2 and "discarding invalid fidelity cache entry" in caplog.text
    np.testing.assert_array_equal(again_states, states)
