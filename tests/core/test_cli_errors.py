"""Issue 23, errors that name the fault: every CLI error is one line with exit code 2, config
keys are checked before any model loads (with a "did you mean", and no FAILED run left
behind), model-resolution errors name the role and the model, and commands that read runs
name the tracking URI, never creating an empty ``mlflow.db`` in the wrong folder."""

from __future__ import annotations

import json
import re

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient

from mlflow_metacompress.cli import main
from tests.conftest import toy_frame


class _Half(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return pd.DataFrame({"0": [0.5] * len(model_input), "1": [0.5] * len(model_input)})


@pytest.fixture
def models(tracking, tmp_path, monkeypatch):
    """A registered teacher and student, a data file, and a spy counting model loads."""
    with mlflow.start_run():
        t = mlflow.pyfunc.log_model(
            name="t", python_model=_Half(), registered_model_name="t-model", pip_requirements=[]
        )
        s = mlflow.pyfunc.log_model(
            name="s", python_model=_Half(), registered_model_name="s-model", pip_requirements=[]
        )
    data = tmp_path / "eval.jsonl"
    toy_frame(8).to_json(data, orient="records", lines=True)
    loads: list[str] = []
    real = mlflow.pyfunc.load_model

    def spy(uri, *args, **kwargs):
        loads.append(str(uri))
        return real(uri, *args, **kwargs)

    monkeypatch.setattr(mlflow.pyfunc, "load_model", spy)
    return tracking, t.model_uri, s.model_uri, data, loads


def _runs(uri: str) -> list:
    client = MlflowClient(uri, uri)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def _one_error_line(err: str, command: str) -> str:
    ours = [line for line in err.splitlines() if not re.match(r"\d{4}/\d\d/\d\d ", line)]  # MLflow's own log lines
    assert len(ours) == 1 and ours[0].startswith(f"metacompress {command}: error: "), err
    return ours[0]


def _evaluate(uri, teacher, student, data, *extra):
    return main(
        [
            "--tracking-uri",
            uri,
            "evaluate",
            "--teacher",
            teacher,
            "--student",
            student,
            "--data",
            str(data),
            "--targets",
            "target",
            *extra,
        ]
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "config, message",
    [
        ({"code_columns": 5}, "evaluator_config['code_columns'] must be a list of names (or one name); got 5 (int)"),
        ({"attacks": 3}, "evaluator_config['attacks'] must be a list of names"),
        (
            {"transfroms": "all"},
            "unknown evaluator_config key(s) ['transfroms'] (did you mean 'transfroms' → 'transforms'?)",
        ),
        ({"progres": False}, "did you mean 'progres' → 'progress'?"),
        ({"batch_size": "8"}, "evaluator_config['batch_size'] must be an integer"),
    ],
)
def test_config_errors_come_before_any_model_load_and_leave_no_run(models, capsys, config, message):
    uri, teacher, student, data, loads = models
    before = len(_runs(uri))
    code = _evaluate(uri, teacher, student, data, "--evaluator-config", json.dumps(config))
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert code == 2 and message in line, line
    assert loads == []  # neither the teacher nor the student was loaded
    assert len(_runs(uri)) == before  # no FAILED (or any) run was started


@pytest.mark.slow
@pytest.mark.parametrize("role", ["teacher", "student"])
def test_a_mistyped_model_uri_names_its_role_and_leaves_no_run(models, capsys, role):
    uri, teacher, student, data, loads = models
    uris = {"teacher": teacher, "student": student, role: "models:/s-modle/1"}
    before = len(_runs(uri))
    code = _evaluate(uri, uris["teacher"], uris["student"], data)
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert code == 2
    assert f"{role} model URI 'models:/s-modle/1' does not resolve" in line and "s-modle" in line, line
    assert loads == [] and len(_runs(uri)) == before


@pytest.mark.slow
def test_a_missing_alias_names_the_model_and_its_aliases(models, capsys):
    uri, teacher, _, data, _ = models
    MlflowClient(uri, uri).set_registered_model_alias("s-model", "candidate", "1")
    assert _evaluate(uri, teacher, "models:/s-model@champion", data) == 2
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert (
        "student model URI 'models:/s-model@champion' does not resolve: registered model 's-model' has no alias "
        "'champion' (its aliases: candidate)"
    ) in line, line
    assert _evaluate(uri, "models:/nothing@champion", "models:/s-model@candidate", data) == 2
    line = _one_error_line(capsys.readouterr().err, "evaluate")
    assert (
        "teacher model URI 'models:/nothing@champion' does not resolve: registered model 'nothing' does not exist"
    ) in line


@pytest.mark.slow
def test_the_evaluator_names_the_teacher_alias_problem_too(models):
    """Through ``mlflow.models.evaluate`` (no CLI pre-check): the evaluator's own resolution
    of the teacher names the model behind a missing alias."""
    from mlflow_metacompress.adapters.checks import MetaCompressInputError

    uri, _, student, _, _ = models
    with (
        mlflow.start_run(),
        pytest.raises(
            MetaCompressInputError,
            match=r"teacher model URI 'models:/t-model@champion' does not resolve: "
            r"registered model 't-model' has no alias 'champion'",
        ),
    ):
        mlflow.models.evaluate(
            model=student,
            data=toy_frame(6),
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": "models:/t-model@champion", "transforms": [], "progress": False},
        )


@pytest.mark.slow
def test_gate_config_typo_fails_before_its_run(models, capsys):
    uri, teacher, _, data, loads = models
    MlflowClient(uri, uri).set_model_version_tag("s-model", "1", "metacompress.teacher", teacher)
    before = len(_runs(uri))
    code = main(
        [
            "--tracking-uri",
            uri,
            "gate",
            "--model-name",
            "s-model",
            "--version",
            "1",
            "--data",
            str(data),
            "--evaluator-config",
            '{"attack_buget": 3}',
        ]
    )
    line = _one_error_line(capsys.readouterr().err, "gate")
    assert code == 2 and "did you mean 'attack_buget' → 'attack_budget'?" in line
    assert loads == [] and len(_runs(uri)) == before


# --------------------------------------------------------------------- commands that read runs
@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A folder without mlflow.db and no tracking URI set: MLflow's default is ./mlflow.db."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
        monkeypatch.delenv(var, raising=False)
    mlflow.set_tracking_uri(None)
    mlflow.set_registry_uri(None)
    assert mlflow.get_tracking_uri() == f"sqlite:///{folder}/mlflow.db"
    yield folder
    mlflow.set_tracking_uri(None)
    mlflow.set_registry_uri(None)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "0123abcd"],
        ["compare", "0123abcd", "4567ef01"],
        ["gate", "--model-name", "m", "--version", "1", "--evaluation-run-id", "0123abcd"],
    ],
)
def test_reading_runs_in_a_folder_without_a_store_names_it_and_creates_nothing(elsewhere, capsys, argv):
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err, argv[0])
    db = elsewhere / "mlflow.db"
    assert f"no MLflow tracking store at {db} (tracking URI sqlite:///{db})" in line
    assert list(elsewhere.iterdir()) == []  # no empty mlflow.db (or anything else) was created


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, what",
    [
        (["report", "0123abcd"], "run '0123abcd'"),
        (["compare", "0123abcd"], "run '0123abcd'"),
        (
            ["gate", "--model-name", "m", "--version", "1", "--evaluation-run-id", "0123abcd"],
            "evaluation run '0123abcd'",
        ),
    ],
)
def test_a_missing_run_is_named_with_the_tracking_uri(tracking, capsys, argv, what):
    client = MlflowClient(tracking, tracking)
    client.create_registered_model("m")
    with mlflow.start_run() as run:
        pass
    client.create_model_version("m", f"runs:/{run.info.run_id}/x", run_id=run.info.run_id)
    assert main(["--tracking-uri", tracking, *argv]) == 2
    line = _one_error_line(capsys.readouterr().err, argv[0])
    assert f"{what} not found in the tracking store {tracking}" in line, line


def test_cli_errors_spanning_lines_are_printed_as_one(monkeypatch, capsys):
    """MLflow's messages may hold newlines; the CLI prints every error as one line."""
    import mlflow_metacompress.report.render as render

    def boom(run_id, out):
        raise ValueError("first line\n  second line")

    monkeypatch.setattr(render, "write_run_report", boom)
    assert main(["report", "x"]) == 2
    assert capsys.readouterr().err == "metacompress report: error: first line second line\n"
