"""MORPH: the loss against hand-computed values, the metamorphic augmentation (its
AGE-MOEA front is tested in test_distill_search.py), and a tiny end-to-end run in which the teacher labels the variants
once and never runs inside training."""

from __future__ import annotations

import mlflow
import numpy as np
import pytest
import torch

from mlflow_metacompress.distill.augment import chain, concat, metamorphic
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.losses import morph_loss
from mlflow_metacompress.distill.methods.morph import Options as MorphOptions
from tests.support.distill import QUICK_FIT, SEARCH_ARGS
from tests.support.models import C_CODE, tiny_teacher

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane


def numpy_morph(s: np.ndarray, t: np.ndarray, T: float) -> float:
    def softmax(x):
        e = np.exp(x / T - (x / T).max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    p, q = softmax(t), softmax(s)
    kl = (p * (np.log(p) - np.log(q))).sum(axis=1).mean() * T * T
    cos = (p * q).sum(axis=1) / (np.linalg.norm(p, axis=1) * np.linalg.norm(q, axis=1))
    return float(kl + (1 - cos).mean())


def test_morph_loss_hand_computed_two_class_value():
    # s = [0, 0] → q = [½, ½]; t = [ln 3, 0], T = 1 → p = [¾, ¼]
    # KL = ¾ ln(3/2) + ¼ ln(1/2); cos = (¾·½ + ¼·½) / (√(9/16 + 1/16)·√½) = ½ / (√10/4 · 1/√2)
    s, t = torch.zeros(1, 2), torch.tensor([[np.log(3.0), 0.0]])
    kl = 0.75 * np.log(1.5) + 0.25 * np.log(0.5)
    cos = 0.5 / (np.sqrt(10) / 4 / np.sqrt(2))
    assert morph_loss(s, t, temperature=1.0).item() == pytest.approx(kl + 1 - cos, rel=1e-6)


@pytest.mark.parametrize("T", [1.0, 3.0, 10.0])
def test_morph_loss_matches_numpy(T):
    rng = np.random.default_rng(int(T))
    s, t = rng.normal(size=(7, 3)) * 2, rng.normal(size=(7, 3)) * 2
    got = morph_loss(torch.tensor(s, dtype=torch.float32), torch.tensor(t, dtype=torch.float32), T).item()
    assert got == pytest.approx(numpy_morph(s, t, T), rel=1e-5)
    assert morph_loss(torch.tensor(t), torch.tensor(t), T).item() == pytest.approx(0.0, abs=1e-6)
    assert MorphOptions().temperature == 3.0  # the paper's value (its code uses 10)


def test_metamorphic_variants_rename_function_and_parameters():
    codes = [C_CODE, "this is not C {{{"]
    out, changed = chain(codes, ["rename_function", "rename_variables"], "c", seed=0)
    assert changed.tolist() == [True, False] and out[1] == codes[1]
    assert "add_one" not in out[0] and "value" not in out[0] and "result" not in out[0]
    assert out[0].count("+ 1") == 1 and "return" in out[0]
    ex = CodeExamples(codes, labels=np.array([1, 0]))
    kept, rows = metamorphic(ex, "c", keep_unchanged=False)
    assert rows.tolist() == [0] and kept.texts == [out[0]] and kept.labels.tolist() == [1]
    both = concat([ex, metamorphic(ex, "c")[0]])  # MORPH's checkpoint set: clean rows then their variants
    assert len(both) == 4 and both.labels.tolist() == [1, 0, 1, 0]


@pytest.mark.slow
def test_morph_end_to_end_labels_variants_once_outside_training(tracking, tmp_path, monkeypatch, capsys):
    import json

    from mlflow_metacompress.distill import modules
    from mlflow_metacompress.distill.cli import main

    data, teacher = tiny_teacher(tmp_path)
    state = {"training": False, "loads": 0}
    real_load, real_step = mlflow.pyfunc.load_model, modules.ClassifierModule.training_step

    def load(*a, **k):
        assert not state["training"], "the teacher was loaded inside the training loop"
        state["loads"] += 1
        return real_load(*a, **k)

    def step(self, *a, **k):
        state["training"] = True
        try:
            return real_step(self, *a, **k)
        finally:
            state["training"] = False

    monkeypatch.setattr(mlflow.pyfunc, "load_model", load)
    monkeypatch.setattr(modules.ClassifierModule, "training_step", step)
    cache = tmp_path / "soft"
    rc = main(
        [
            "student",
            "--method",
            "morph",
            "--data-dir",
            str(data),
            "--teacher",
            teacher,
            "--size-mb",
            "0.2",
            *QUICK_FIT,
            "--cache-dir",
            str(cache),
            "--no-progress",
            *SEARCH_ARGS,
        ]
    )
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    config = result["config"]
    assert config["temperature"] == 3.0 and config["augmented_rows"] > 0
    assert len(list(cache.glob("soft_labels-*.npz"))) == 2  # unlabeled originals + their variants, each labelled once
    # the teacher once per labelled set, then teacher and registered student once each for the speed tags
    assert state["loads"] == 4
    probes = config["search"]["probes"]
    assert len(probes) == 2 and all(0 <= p["flip_rate"] <= 1 for p in probes)
    tags = mlflow.MlflowClient().get_model_version("metacompress-morph", "1").tags
    assert tags["metacompress.method"] == "morph" and tags["metacompress.teacher"] == teacher
    assert float(tags["metacompress.size_mb"]) <= 0.2
