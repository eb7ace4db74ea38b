"""The training jobs (issue 34): ``TeacherJob``/``StudentJob`` carry one ``FitConfig``, built
the same way by the command line and the keyword entries, with ``ArchSpec``'s names."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.devices import TrainerSettings
from mlflow_metacompress.distill.jobs import DEFAULT_TEACHER, FitConfig, StudentJob, TeacherJob


def _parse(argv: list[str]) -> argparse.Namespace:
    from mlflow_metacompress.distill.cli import add_distill

    parser = argparse.ArgumentParser()
    add_distill(parser.add_subparsers(dest="command"))
    return parser.parse_args(["distill", *argv])


def test_fit_config_carries_the_trainer_settings_both_ways():
    trainer = TrainerSettings(accelerator="cpu", devices=2, strategy="ddp", precision="32-true", threads=3)
    fit = FitConfig.on(trainer, epochs=5, batch_size=4, seed=7)
    assert (fit.epochs, fit.batch_size, fit.seed, fit.max_steps) == (5, 4, 7, -1)
    assert fit.trainer() == trainer
    assert FitConfig.on(None).trainer() == TrainerSettings()


def test_teacher_keywords_split_into_job_and_fit_config_and_unknown_ones_are_named():
    trainer = TrainerSettings(accelerator="cpu", threads=1)
    job = TeacherJob.build(None, "bigclonebench", epochs=2, lr=1e-3, monitor="last", patience=3, trainer=trainer)
    assert job.task == "bigclonebench" and job.lr == 1e-3 and job.arch == DEFAULT_TEACHER
    assert job.fit == FitConfig(
        epochs=2, monitor="last", patience=3, settings=TrainerSettings(accelerator="cpu", threads=1)
    )
    with pytest.raises(TypeError, match="hidden_layers"):
        TeacherJob.build(None, hidden_layers=3)
    with pytest.raises(ValueError, match="train_on must be 'half' or 'all', got 'most'"):
        TeacherJob.build(None, train_on="most")


def test_student_keywords_beyond_the_job_and_budget_are_method_options():
    job = StudentJob.build(None, "models:/t/1", method="avatar", size_mb=2.0, seed=4, probes=6, lr=1e-3)
    assert job.options == {"probes": 6, "lr": 1e-3}
    assert job.fit.seed == 4 and job.size_mb == 2.0 and job.method == "avatar"
    assert job.with_fit(progress=False).fit == dataclasses.replace(job.fit, progress=False)


def test_cli_builds_the_same_teacher_job_as_the_keyword_entry():
    from mlflow_metacompress.distill.cli_jobs import teacher_job, trainer_settings

    args = _parse(
        ["teacher", "--layers", "2", "--hidden", "64", "--heads", "2", "--intermediate", "128", "--vocab-size", "500"]
        + ["--max-length", "64", "--epochs", "1", "--seed", "3", "--monitor", "last", "--no-progress"]
    )
    job = teacher_job(args, None, trainer_settings(args))
    arch = ArchSpec(
        vocab_size=500, num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, max_length=64
    )
    expected = TeacherJob.build(
        None,
        args.task,
        arch=arch,
        epochs=1,
        batch_size=args.batch_size,
        max_steps=args.max_steps,
        seed=3,
        progress=False,
        monitor="last",
        registered_name="metacompress-teacher",
        dataset="generated-vulnerability",
        trainer=trainer_settings(args),
    )
    assert dataclasses.asdict(job) == dataclasses.asdict(expected)


def test_cli_student_job_takes_the_options_and_the_same_budget():
    from mlflow_metacompress.distill.cli_jobs import student_job, trainer_settings

    args = _parse(["student", "--teacher", "models:/t/1", "--method", "morph", "--epochs", "2", "--seed", "5"])
    job = student_job(args, None, trainer_settings(args), {"probes": 2})
    assert job.options == {"probes": 2} and job.teacher_uri == "models:/t/1"
    assert job.registered_name == "metacompress-morph"
    assert (job.fit.epochs, job.fit.seed, job.fit.progress) == (2, 5, True)
