"""One carrier for run settings (issue 45): the MLproject's ``threads`` and ``precision``
are parsed once (``TrainerSettings.parse`` in ``recipes/_args.py``) and reach, unchanged,
the teacher's and every student's fit and the gate's evaluation (``evaluator_config``),
never through the process environment."""

from __future__ import annotations

import os
import runpy
import shlex
import sys
from types import SimpleNamespace

import pytest

from mlflow_metacompress import precision as precision_module
from mlflow_metacompress.distill.devices import TrainerSettings
from tests.conftest import REPO


class _StopAtGate(Exception):
    pass


def _main_argv(params: dict[str, str], tmp_path) -> list[str]:
    """The argv ``mlflow run . -P ...`` gives ``recipes/main.py`` (MLflow formats the entry point)."""
    from mlflow.projects._project_spec import load_project

    command = load_project(str(REPO)).get_entry_point("main").compute_command(params, str(tmp_path))
    words = shlex.split(command)
    assert words[:2] == ["python", "recipes/main.py"]
    return words[2:]


@pytest.mark.slow
@pytest.mark.parametrize(("threads", "given", "inference"), [("1", 1, "fp32"), ("auto", None, None)])
def test_threads_and_precision_follow_from_the_mlproject_parameter_to_the_fits_and_the_gate(
    tracking, tmp_path, monkeypatch, threads, given, inference
):
    from mlflow_metacompress.distill import runner, teacher
    from mlflow_metacompress.gates import gate
    from mlflow_metacompress.pipeline import stages

    precision = "32-true" if given else ""
    params = {"threads": threads, "precision": precision, "methods": "compressor", "profile": "tiny"}
    argv = _main_argv(params, tmp_path)
    assert f"--threads {threads}" in " ".join(argv)
    seen: dict[str, list] = {"fit": [], "gate": [], "env": []}
    parses = []
    real_parse = TrainerSettings.parse.__func__

    def counting_parse(cls, **kw):
        parses.append(kw)
        return real_parse(cls, **kw)

    def fit_of(kind):
        def run(job):
            seen["fit"].append((kind, job.fit.settings))
            seen["env"].append(os.environ.get(precision_module.PRECISION_ENV))
            return SimpleNamespace(model_uri=f"models:/{kind}/1", version="1", metrics={}, run_id="r")

        return run

    def gate_version(name, version, frame, policy, **kw):
        seen["gate"].append(dict(kw["evaluator_config"]))
        raise _StopAtGate("captured")

    monkeypatch.setattr(TrainerSettings, "parse", classmethod(counting_parse))
    monkeypatch.setattr(teacher, "run_teacher_job", fit_of("teacher"))
    monkeypatch.setattr(runner, "run_student_job", fit_of("compressor"))
    monkeypatch.setattr(stages, "tag_version", lambda *a, **k: None)
    monkeypatch.setattr(gate, "gate_version", gate_version)
    monkeypatch.delenv(precision_module.PRECISION_ENV, raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setattr(sys, "argv", ["recipes/main.py", *argv])
    monkeypatch.syspath_prepend(str(REPO / "recipes"))
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(REPO / "recipes" / "main.py"), run_name="__main__")
    assert done.value.code == 1  # the gate was stopped on purpose: the method is reported failed
    assert len(parses) == 1  # parsed once, at the entry point
    kinds = [k for k, _ in seen["fit"]]
    assert kinds == ["teacher", "compressor"]
    settings = {id(s) for _, s in seen["fit"]}
    assert len(settings) == 1  # the very same carrier reaches both fits
    carrier = seen["fit"][0][1]
    assert carrier.threads == given and carrier.precision == (precision or None)
    assert seen["env"] == [None, None]  # never through the environment
    (cfg,) = seen["gate"]
    assert cfg.get("precision") == inference
    if given:
        assert cfg["threads"] == given
    assert precision_module.PRECISION_ENV not in os.environ


def test_a_bad_setting_fails_once_naming_the_mlproject_parameter():
    with pytest.raises(ValueError, match=r"threads \(MLproject parameter threads\)"):
        TrainerSettings.parse(threads="many", source="MLproject parameter")
    with pytest.raises(ValueError, match=r"precision \(MLproject parameter precision\).*'fp8'"):
        TrainerSettings.parse(precision="fp8", source="MLproject parameter")


def test_the_gates_evaluation_keys_come_from_the_carrier():
    assert TrainerSettings.parse(threads="2", precision="32-true").evaluator_config() == {
        "threads": 2,
        "precision": "fp32",
    }
    assert TrainerSettings.parse().evaluator_config() == {}
    assert TrainerSettings.parse(precision="auto").evaluator_config() == {}
