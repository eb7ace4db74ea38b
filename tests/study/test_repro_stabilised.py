"""The premise ladder's stabilised students: one learning rate for every method and the
gradient-norm clip (``--student-lr``, ``--student-grad-clip``), plumbed from the command
line to Lightning, without changing the keys of students already stored."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from mlflow_metacompress.distill.devices import TrainerSettings
from tests.support.models import code_examples as _examples


def _norms_of_a_fit(tok, grad_clip: float | None) -> list[float]:
    """The gradients' global L2 norm as the optimiser stepped with them, each step of a tiny fit."""
    import torch

    from mlflow_metacompress.distill.modules import ClassifierModule, soft_label_loss
    from mlflow_metacompress.distill.training import FitConfig, fit
    from mlflow_metacompress.models.classifier import CodeClassifier

    norms: list[float] = []

    def after_step(opt, args, kwargs) -> None:  # after the step: the grads it used are still there
        grads = [p.grad for group in opt.param_groups for p in group["params"] if p.grad is not None]
        norms.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))))

    class Recording(ClassifierModule):
        def on_train_start(self) -> None:
            self.trainer.optimizers[0].register_step_post_hook(after_step)

    torch.manual_seed(0)
    model = CodeClassifier.from_config(
        len(tok), hidden_size=32, intermediate_size=64, max_length=64, pad_token_id=tok.pad_token_id
    )
    config = FitConfig(
        epochs=2, batch_size=8, progress=False, settings=TrainerSettings(threads=1), seed=0, grad_clip=grad_clip
    )
    fit(Recording(model, soft_label_loss(1.0), lr=1e-2), tok, _examples(32), None, config, mlflow_logger=False)
    return norms


@pytest.mark.slow
def test_grad_clip_bounds_every_steps_gradient_norm_and_none_leaves_them(tiny_classifiers):
    tok = tiny_classifiers[0]
    free = _norms_of_a_fit(tok, None)
    clip = min(free) / 4  # below every unclipped step's norm, so each step must be clipped
    clipped = _norms_of_a_fit(tok, clip)
    assert len(clipped) == len(free) == 8
    assert max(clipped) <= clip * (1 + 1e-4)
    assert min(clipped) >= clip * 0.99  # clipped to the bound, not zeroed
    assert min(free) > clip


def test_student_lr_and_clip_reach_the_student_job_and_its_stage_key():
    from mlflow_metacompress.study.cli import config_from, parser
    from mlflow_metacompress.study.config import CPU_OPTIONS, StudyConfig
    from mlflow_metacompress.study.premise import rung_folder
    from mlflow_metacompress.study.stages import student_args

    teacher = SimpleNamespace(key="t")
    plain = StudyConfig()
    args = student_args(plain, teacher, "compressor", 1)
    # an unstabilised study hashes what it hashed before: no new key, each method's own lr
    assert "grad_clip" not in args and args["options"] == CPU_OPTIONS["compressor"]
    assert set(args) == {
        "task", "data", "data_seed", "distill_rows", "oracle_rows", "teacher_key",
        "method", "seed", "size_mb", "max_length", "batch_size", "steps", "options",
    }  # fmt: skip
    cfg = config_from(parser().parse_args(["--student-lr", "1e-3", "--student-grad-clip", "1.0"]))
    assert (cfg.student_lr, cfg.student_grad_clip) == (1e-3, 1.0)
    stab = student_args(cfg, teacher, "fidelity", 1)
    assert stab["grad_clip"] == 1.0 and stab["options"]["lr"] == 1e-3
    assert {k: v for k, v in stab["options"].items() if k != "lr"} == {
        k: v for k, v in CPU_OPTIONS["fidelity"].items() if k != "lr"
    }
    assert CPU_OPTIONS["fidelity"]["lr"] == 2e-3  # the shared defaults are not mutated
    assert rung_folder(replace(plain, student_steps=3000)) == "3mb-3000steps"
    assert rung_folder(replace(cfg, student_steps=3000, size_mb=6.0)) == "6mb-3000steps-lr0.001-clip1"
    for bad in (["--student-lr", "0"], ["--student-grad-clip", "-1"], ["--student-lr", "fast"]):
        with pytest.raises(SystemExit):
            parser().parse_args(bad)


def test_student_stage_trains_with_the_clip_and_the_lr(monkeypatch):
    """The stage hands the clip to the fit and the lr to the method's options."""
    from mlflow_metacompress.distill import runner
    from mlflow_metacompress.study import stages as reproduce
    from mlflow_metacompress.study.config import StudyConfig

    seen = {}

    def run_student_job(job):
        seen.update(clip=job.fit.grad_clip, lr=job.options["lr"], steps=job.fit.max_steps)
        return SimpleNamespace(model_uri="models:/s/1", run_id="r", metrics={"size_mb": 3.0})

    monkeypatch.setattr(runner, "run_student_job", run_student_job)
    monkeypatch.setattr(reproduce, "run_stage", lambda name, args, body, **kw: body())
    data = SimpleNamespace(distill=list(range(64)), frames=lambda rows: rows, codexglue_task="clone")
    teacher = SimpleNamespace(key="t", outputs={"model_uri": "models:/t/1"})
    cfg = replace(StudyConfig(), student_lr=5e-4, student_grad_clip=0.5, student_steps=10)
    assert reproduce.student_stage(cfg, data, teacher, "compressor", 0)["model_uri"] == "models:/s/1"
    assert seen == {"clip": 0.5, "lr": 5e-4, "steps": 10}


def test_teacher_seed_reaches_the_fit_and_keys_only_non_zero_seeds(monkeypatch):
    """Issue 42's three teachers: ``--teacher-seed`` reaches the teacher's fit; seed 0 hashes
    exactly what stored studies hashed (their teacher stays found), other seeds get keys of their own."""
    from mlflow_metacompress.distill import teacher as teacher_mod
    from mlflow_metacompress.study import teacher as reproduce
    from mlflow_metacompress.study.cli import config_from, parser
    from mlflow_metacompress.study.config import StudyConfig
    from mlflow_metacompress.study.resume import stage_key

    plain = StudyConfig()
    assert set(reproduce.teacher_args(plain)) == {"task", "data", "budget", "data_seed", "oracle_rows"}
    keys = {s: stage_key("teacher", reproduce.teacher_args(replace(plain, teacher_seed=s))) for s in (0, 1, 2)}
    assert len(set(keys.values())) == 3
    cfg = config_from(parser().parse_args(["--teacher-seed", "2"]))
    assert cfg.teacher_seed == 2 and reproduce.teacher_args(cfg)["teacher_seed"] == 2

    seen = {}

    def run_teacher_job(job):
        seen["seed"] = job.fit.seed
        raise RuntimeError("stop after the job is built")

    monkeypatch.setattr(teacher_mod, "run_teacher_job", run_teacher_job)
    monkeypatch.setattr(reproduce, "run_stage", lambda name, args, body, **kw: body())
    data = SimpleNamespace(
        frames=lambda rows: rows, teacher_train=[], codexglue_task="clone", test=None, code_columns=(), label_column=""
    )
    with pytest.raises(RuntimeError, match="stop after"):
        reproduce.teacher_stage(cfg, data)
    assert seen == {"seed": 2}
