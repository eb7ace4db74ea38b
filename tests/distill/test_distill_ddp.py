"""Two-process DDP distillation on a CPU (gloo), against a one-process run on the same data.

The oracle is the data itself: both students are re-queried on held-out rows whose label
the toy generator fixes (template parity), and against each other. DDP changes the batch
order and the effective batch, so the test asks for similar accuracy, not equal weights.
"""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest
import torch

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.devices import TrainerSettings, resolve
from mlflow_metacompress.distill.modules import soft_label_loss
from mlflow_metacompress.distill.student import train_student
from mlflow_metacompress.distill.training import FitConfig
from mlflow_metacompress.models.tokenizer import train_tokenizer
from tests.conftest import TOY_CODE, toy_frame
from tests.support.models import LENGTH_CODES as CODES
from tests.support.models import length_expected_probs as expected_probs

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane


class RankProbe:
    """An extra loss of zero that records, per rank, the process group it trains in."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, out, batch):
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            name = f"rank{dist.get_rank()}-of-{dist.get_world_size()}-{dist.get_backend()}-pid{os.getpid()}"
        else:
            name = f"single-pid{os.getpid()}"
        open(os.path.join(self.folder, name), "w").close()
        return out.logits.sum() * 0.0


def _student(tok):
    torch.manual_seed(0)
    return ArchSpec(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_length=64,
    ).build()


def _train(tok, devices: int, strategy: str, folder):
    df = toy_frame(64, seed=3)
    # a teacher certain of the label: students learn to agree with it
    soft = np.where(df["target"].to_numpy()[:, None] == np.array([[0, 1]]), 4.0, -4.0).astype(np.float32)
    train = CodeExamples.from_frame(df, ["func"], "target", teacher_logits=soft)
    val = CodeExamples.from_frame(toy_frame(24, seed=4), ["func"], "target")
    folder.mkdir()
    model = _student(tok)
    result = train_student(
        model,
        tok,
        [train],
        val,
        soft_label_loss(1.0),
        RankProbe(str(folder)),
        FitConfig(
            epochs=6,
            batch_size=8,
            progress=False,
            settings=TrainerSettings(accelerator="cpu", devices=devices, strategy=strategy),
        ),
        lr=5e-3,
        checkpoint_dir=folder / "ckpt",
    )
    return model, result


@pytest.mark.slow
def test_two_process_ddp_student_predicts_like_a_one_process_student(tmp_path):
    tok = train_tokenizer(TOY_CODE * 5, vocab_size=300)
    one, one_fit = _train(tok, 1, "auto", tmp_path / "one")
    two, two_fit = _train(tok, 2, "ddp", tmp_path / "two")
    # two ranks in a gloo process group, in processes other than this one; the one-process run in this one
    marks = sorted(p.name for p in (tmp_path / "two").iterdir() if p.name.startswith("rank"))
    ranks = {m.split("-pid")[0] for m in marks}
    assert ranks == {"rank0-of-2-gloo", "rank1-of-2-gloo"}
    assert all(not m.endswith(f"pid{os.getpid()}") for m in marks)
    assert {p.name for p in (tmp_path / "one").iterdir() if p.name.startswith("single")} == {f"single-pid{os.getpid()}"}
    assert not multiprocessing.active_children()  # the spawned ranks are gone
    # the result came back to this process: history, best score, and the best checkpoint's weights
    assert len(two_fit.history) == 6 and two_fit.epochs_run == 6
    assert two_fit.best_score == pytest.approx(max(r["val_acc"] for r in two_fit.history))
    ckpt = torch.load(two_fit.best_checkpoint, map_location="cpu", weights_only=True)["state_dict"]
    for k, v in two.state_dict().items():
        torch.testing.assert_close(v, ckpt[f"model.{k}"])
    # it predicts like the one-process student on held-out rows, to similar accuracy
    test = toy_frame(60, seed=11)
    texts, labels = list(test["func"]), test["target"].to_numpy()
    p1 = one.predict_proba(tok, texts, None, batch_size=32)
    p2 = two.predict_proba(tok, texts, None, batch_size=32)
    acc1, acc2 = float(np.mean(p1.argmax(1) == labels)), float(np.mean(p2.argmax(1) == labels))
    assert acc1 >= 0.9 and acc2 >= 0.9 and abs(acc1 - acc2) <= 0.1
    assert float(np.mean(p1.argmax(1) == p2.argmax(1))) >= 0.9
    assert not np.allclose(p1, p2)  # really two different trainings
    # nothing written outside tmp_path: the checkpoints and summary live in the run's folder
    assert (tmp_path / "two" / "ckpt" / "fit_summary.json").exists()
    assert not os.path.exists("lightning_logs")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"devices": 0}, "devices must be a positive integer or 'auto', got 0"),
        ({"devices": "two"}, "got 'two'"),
        ({"devices": 10_000}, "devices=10000 but only"),
        ({"strategy": "horovod"}, "strategy must be one of"),
        ({"precision": "8-bit"}, "precision must be one of"),
        ({"accelerator": "cpu", "precision": "16-mixed"}, "not supported on a CPU"),
    ],
)
def test_placement_errors_name_the_setting_and_value(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_gpu_asked_without_one_is_refused():
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        resolve("gpu", 1)


def test_ddp_runs_spawned_never_relaunching_the_command_line():
    from lightning.pytorch.strategies import DDPStrategy

    one = resolve("cpu", 1, "ddp")
    assert one.strategy == "ddp" and one.world_size == 1
    for name in ("ddp", "auto", "ddp_spawn"):
        placed = resolve("cpu", 2, name)
        assert isinstance(placed.strategy, DDPStrategy) and placed.strategy._start_method == "spawn"
        assert placed.devices == 2 and placed.accelerator == "cpu"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--devices", "0"], "devices must be a positive integer or 'auto', got '0'"),
        (["--strategy", "horovod"], "strategy must be one of"),
        (["--accelerator", "cpu", "--precision", "16-mixed"], "not supported on a CPU"),
        (["--devices", "100000"], "devices=100000 but only"),
    ],
)
def test_cli_refuses_bad_device_settings_before_any_data_or_run(argv, message, tmp_path, monkeypatch, capsys):
    from mlflow_metacompress.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/t.db")
    assert main(["distill", "teacher", "--generated-rows", "40", *argv]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no store, no run, no artifact


def test_mlproject_and_recipes_pass_device_settings(tmp_path, monkeypatch):
    import runpy
    import sys
    from pathlib import Path

    from mlflow.projects._project_spec import load_project

    repo = Path(__file__).resolve().parents[2]
    project = load_project(str(repo))
    for name in ("main", "teacher", "distill"):
        entry = project.get_entry_point(name)
        params = entry.parameters
        assert params["devices"].default == "1" and params["strategy"].default == "auto"
        assert params["precision"].default == ""
        assert "--devices {devices} --strategy {strategy} --precision {precision}" in entry.command
        command = entry.compute_command(
            {**{k: "x" for k in params}, "devices": "2", "strategy": "ddp", "precision": ""}, str(tmp_path)
        )
        assert "--devices 2 --strategy ddp --precision ''" in command
    # the recipes check the values before any data is made or a run starts
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.syspath_prepend(str(repo / "recipes"))
    monkeypatch.setattr(sys, "argv", ["recipes/teacher.py", "--profile", "tiny", "--strategy", "ddp", "--devices", "0"])
    with pytest.raises(ValueError, match="devices must be a positive integer or 'auto', got '0'"):
        runpy.run_path(str(repo / "recipes" / "teacher.py"), run_name="__main__")
    assert not (tmp_path / "mlruns").exists()


def test_a_nonzero_rank_reads_soft_labels_from_the_cache_and_never_runs_the_teacher(
    registered_teacher,  # the registered "teacher" model (tests/conftest.py)
    monkeypatch,
):
    import mlflow
    import pandas as pd

    from mlflow_metacompress.distill import soft_labels

    df = pd.DataFrame({"func": CODES})
    assert soft_labels.distributed_rank() == 0  # no process group in this process
    computed = soft_labels.teacher_logits("models:/teacher/1", df, ["func"])  # rank zero / the launching process
    np.testing.assert_allclose(np.exp(computed), expected_probs(df), rtol=1e-6)

    def no_teacher(uri):
        raise AssertionError("a rank loaded the teacher")

    monkeypatch.setattr(mlflow.pyfunc, "load_model", no_teacher)
    monkeypatch.setattr(soft_labels, "distributed_rank", lambda: 1)
    np.testing.assert_array_equal(soft_labels.teacher_logits("models:/teacher@champion", df, ["func"]), computed)
    with pytest.raises(RuntimeError, match=r"not in the cache, and rank 1 does not run the teacher"):
        soft_labels.teacher_logits("models:/teacher/1", df.iloc[:4], ["func"])
