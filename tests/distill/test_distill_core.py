"""The Lightning student module: no teacher weights in its state_dict or checkpoints,
best-checkpoint reload, per-epoch history; plus the data plumbing it relies on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.datasets import CodeExamples, split_halves
from mlflow_metacompress.distill.modules import ClassifierModule, soft_label_loss
from mlflow_metacompress.distill.student import train_student
from mlflow_metacompress.distill.training import FitConfig, monitored_metrics
from mlflow_metacompress.models.tokenizer import train_tokenizer
from tests.conftest import TOY_CODE, toy_frame


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(TOY_CODE * 5, vocab_size=300)


def test_checkpoint_and_state_dict_hold_only_the_student(tok, tmp_path):
    torch.manual_seed(0)
    teacher = (
        ArchSpec(
            vocab_size=len(tok),
            hidden_size=48,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=96,
            max_length=64,
        )
        .build()
        .eval()
    )
    student = ArchSpec(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=32,
        max_length=64,
    ).build()
    train, val = toy_frame(24, seed=0), toy_frame(16, seed=1)
    soft = teacher.predict_logits(tok, list(train["func"]))
    loss = soft_label_loss(1.0)
    loss.teacher = teacher  # even a loss that references the teacher must not leak it
    result = train_student(
        student,
        tok,
        [CodeExamples.from_frame(train, ["func"], teacher_logits=soft)],
        CodeExamples.from_frame(val, ["func"], "target"),
        loss,
        fit_config=FitConfig(epochs=2, batch_size=8, progress=False),
        checkpoint_dir=tmp_path,
    )
    ckpt = torch.load(result.best_checkpoint, map_location="cpu", weights_only=True)
    student_keys = {f"model.{k}" for k in student.state_dict()}
    assert set(ckpt["state_dict"]) == student_keys
    assert sum(v.numel() for v in ckpt["state_dict"].values()) == sum(v.numel() for v in student.state_dict().values())
    teacher_shapes = {tuple(v.shape) for v in teacher.state_dict().values()} - {
        tuple(v.shape) for v in student.state_dict().values()
    }
    assert not any(tuple(v.shape) in teacher_shapes for v in ckpt["state_dict"].values())
    assert not any(isinstance(v, torch.Tensor) for v in (ckpt.get("hyper_parameters") or {}).values())
    # the best checkpoint is what the student holds afterwards, and it is the best epoch
    for k, v in student.state_dict().items():
        torch.testing.assert_close(v, ckpt["state_dict"][f"model.{k}"])
    assert len(result.history) == 2
    assert result.best_score == pytest.approx(max(r["val_acc"] for r in result.history))
    assert result.monitor == "val_acc" and monitored_metrics(result) == {"best_val_acc": result.best_score}
    assert all("val_agreement" not in r for r in result.history)  # val has labels only


def test_module_state_dict_keys_are_student_only(tok):
    student = ArchSpec(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=32,
        max_length=32,
    ).build()
    teacher = ArchSpec(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=32,
        max_length=32,
    ).build()
    module = ClassifierModule(student, soft_label_loss(2.0), extra_loss=lambda out, batch: teacher(**{})[0])
    assert all(k.startswith("model.") for k in module.state_dict())
    assert sum(p.numel() for p in module.parameters()) == sum(p.numel() for p in student.parameters())


@pytest.mark.slow
def test_training_reduces_kd_loss_toward_teacher(tok):
    torch.manual_seed(0)
    df = toy_frame(32, seed=3)
    # a teacher that is certain of the label: the student should learn to agree with it
    soft = np.where(df["target"].to_numpy()[:, None] == np.array([[0, 1]]), 4.0, -4.0).astype(np.float32)
    student = ArchSpec(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_length=64,
    ).build()
    ex = CodeExamples.from_frame(df, ["func"], "target", teacher_logits=soft)
    result = train_student(
        student, tok, [ex], ex, fit_config=FitConfig(epochs=8, batch_size=8, progress=False), lr=5e-3
    )
    assert result.best_score >= 0.9
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]


def test_split_halves_is_a_seeded_partition():
    df = pd.DataFrame({"func": [f"f{i}" for i in range(11)], "target": [i % 2 for i in range(11)]})
    a, b = split_halves(df, seed=3)
    a2, _ = split_halves(df, seed=3)
    assert len(a) == 5 and len(b) == 6 and set(a["func"]) | set(b["func"]) == set(df["func"])
    assert not set(a["func"]) & set(b["func"]) and a.equals(a2)
    assert not split_halves(df, seed=4)[0].equals(a)


def test_examples_name_missing_columns_and_misaligned_rows():
    df = pd.DataFrame({"func": ["a", "b"], "target": [0, 1]})
    with pytest.raises(KeyError, match=r"\['label'\]"):
        CodeExamples.from_frame(df, ["func"], "label")
    with pytest.raises(ValueError, match="teacher_logits has 3 rows, texts has 2"):
        CodeExamples.from_frame(df, ["func"], teacher_logits=np.zeros((3, 2)))
    pair = CodeExamples.from_frame(
        pd.DataFrame({"func1": ["a"], "func2": ["b"], "label": [1]}), ["func1", "func2"], "label"
    )
    assert pair[0] == {"index": 0, "text": "a", "text_b": "b", "label": 1}


def _student(tok):
    return ArchSpec(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=32,
        max_length=64,
    ).build()


@pytest.mark.slow
def test_monitor_selects_on_agreement_or_keeps_the_last_epoch(tok):
    train_df, val_df = toy_frame(24, seed=5), toy_frame(16, seed=6)
    rng = np.random.default_rng(0)
    train = CodeExamples.from_frame(train_df, ["func"], teacher_logits=rng.normal(size=(24, 2)).astype(np.float32))
    val_logits = rng.normal(size=(16, 2)).astype(np.float32)
    val = CodeExamples.from_frame(val_df, ["func"], "target", teacher_logits=val_logits)
    cfg = FitConfig(epochs=3, batch_size=8, progress=False)
    torch.manual_seed(0)
    student = _student(tok)
    agree = train_student(
        student, tok, [train], val, fit_config=FitConfig(**{**cfg.__dict__, "monitor": "val_agreement"})
    )
    assert agree.best_score == pytest.approx(max(r["val_agreement"] for r in agree.history))
    # logged under its own name, never as best_val_acc
    assert monitored_metrics(agree) == {"best_val_agreement": agree.best_score}
    # the kept weights reproduce the monitored score when re-measured independently
    pred = student.predict_proba(tok, list(val_df["func"])).argmax(1)
    assert np.mean(pred == val_logits.argmax(1)) == pytest.approx(agree.best_score)
    # rows keeping all relations: the kept epoch is the best one on that metric
    torch.manual_seed(0)
    kept = train_student(
        _student(tok), tok, [train], val, fit_config=FitConfig(**{**cfg.__dict__, "monitor": "val_relations_kept"})
    )
    assert kept.best_score == pytest.approx(max(r["val_relations_kept"] for r in kept.history))
    assert monitored_metrics(kept) == {"best_val_relations_kept": kept.best_score}
    # "last" keeps the final epoch: re-measured agreement equals the last epoch's
    torch.manual_seed(0)
    last_student = _student(tok)
    last = train_student(last_student, tok, [train], val, fit_config=FitConfig(**{**cfg.__dict__, "monitor": "last"}))
    pred = last_student.predict_proba(tok, list(val_df["func"])).argmax(1)
    assert np.mean(pred == val_logits.argmax(1)) == pytest.approx(last.history[-1]["val_agreement"])
    assert last.best_score is None and last.monitor is None and len(last.history) == 3
    assert monitored_metrics(last) == {}


def test_monitor_errors_name_the_problem(tok):
    df = toy_frame(8, seed=1)
    ex = CodeExamples.from_frame(df, ["func"], "target")
    with pytest.raises(ValueError, match="monitor must be .*got 'loss'"):
        train_student(_student(tok), tok, [ex], ex, fit_config=FitConfig(epochs=1, progress=False, monitor="loss"))
    with pytest.raises(ValueError, match="val_agreement.*teacher_logits"):
        train_student(
            _student(tok), tok, [ex], ex, fit_config=FitConfig(epochs=1, progress=False, monitor="val_agreement")
        )


def test_patience_stops_a_fit_whose_score_has_stopped_improving(tok):
    """With a zero learning rate val_acc never improves on epoch 0's, so patience=2 ends the
    fit after epochs 0, 1 and 2 instead of 8; without patience every epoch runs."""
    df = toy_frame(16, seed=2)
    ex = CodeExamples.from_frame(df, ["func"], "target")
    cfg = FitConfig(epochs=8, batch_size=8, progress=False, patience=2)
    from mlflow_metacompress.distill.training import fit

    module = ClassifierModule(_student(tok), lr=0.0)
    stopped = fit(module, tok, ex, ex, cfg, mlflow_logger=False)
    assert len(stopped.history) == 3 and stopped.best_score == pytest.approx(stopped.history[0]["val_acc"])
    full = fit(
        ClassifierModule(_student(tok), lr=0.0),
        tok,
        ex,
        ex,
        FitConfig(**{**cfg.__dict__, "patience": None}),
        mlflow_logger=False,
    )
    assert len(full.history) == 8
    with pytest.raises(ValueError, match="patience must be at least 1"):
        fit(
            ClassifierModule(_student(tok), lr=0.0),
            tok,
            ex,
            ex,
            FitConfig(**{**cfg.__dict__, "patience": 0}),
            mlflow_logger=False,
        )
