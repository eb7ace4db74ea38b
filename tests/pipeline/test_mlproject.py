"""The MLproject end to end: ``mlflow run . --env-manager local`` with the hidden ``tiny``
budget in a temporary directory, then the registry, the artifacts and the other entry
points checked against what the run logged."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import fresh_mlflow_stores
from tests.support.programs import copy_project as _copy_project
from tests.support.programs import project_env as _env

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

REPO = Path(__file__).resolve().parents[2]
TEACHER = "metacompress-generated-vulnerability-teacher"
STUDENT = "metacompress-generated-vulnerability-compressor"
ENTRY_POINTS = {
    "main": {"task", "data_dir", "size_mb", "policy", "seed", "profile", "methods", "threads"},
    "teacher": {"task", "data_dir", "seed", "profile", "threads"},
    "distill": {"teacher", "task", "data_dir", "methods", "size_mb", "seed", "profile", "threads"},
    "evaluate": {"model_uri", "teacher", "task", "data_dir", "seed", "profile", "threads"},
    "gate": {"model_name", "version", "policy", "task", "data_dir", "seed", "profile", "threads"},
}


def test_mlproject_declares_the_entry_points_and_parameters():
    from mlflow.projects._project_spec import load_project

    project = load_project(str(REPO))
    for name, params in ENTRY_POINTS.items():
        entry = project.get_entry_point(name)
        assert params <= set(entry.parameters), f"{name} lacks {params - set(entry.parameters)}"
        assert f"recipes/{name}.py" in entry.command
        assert entry.parameters["threads"].default == "auto" and "--threads {threads}" in entry.command
    main = project.get_entry_point("main").parameters
    assert main["methods"].default == "compressor,avatar,morph,fidelity,quantize"
    assert project.get_entry_point("distill").parameters["methods"].default == main["methods"].default
    assert main["profile"].default == "quick" and main["data_dir"].default == ""
    conda = (REPO / "conda.yaml").read_text()
    assert "python=3.11" in conda and "torch==2.13.0" in conda


@pytest.fixture(scope="module")
def project_run(tmp_path_factory):
    """One tiny ``mlflow run`` of the main entry point; no MLFLOW_* variables are set, so
    the run must create ``mlflow.db`` in its working directory by itself."""
    tmp = _copy_project(tmp_path_factory.mktemp("mlproject"))
    cmd = [
        sys.executable,
        "-m",
        "mlflow",
        "run",
        ".",
        "--env-manager",
        "local",
        "-P",
        "profile=tiny",
        "-P",
        "methods=compressor",
        "-P",
        "progress=true",
        "--experiment-name",
        "pipeline-test",
    ]
    env = _env(tmp) | {"METACOMPRESS_HEARTBEAT_S": "1"}  # output to pipes, as to a file: no terminal
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp / "mlflow.db").exists()
    return tmp, proc


@pytest.fixture
def client(project_run):
    import mlflow

    uri = f"sqlite:///{project_run[0]}/mlflow.db"
    yield mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)


def _main_run(client):
    exp = client.get_experiment_by_name("pipeline-test")
    runs = client.search_runs([exp.experiment_id], "tags.`metacompress.pipeline` = 'main'")
    assert len(runs) == 1
    return runs[0], exp


def test_run_registers_teacher_and_students_with_tags_and_champion_only_if_passed(client):
    teacher = client.get_model_version(TEACHER, "1")
    student = client.get_model_version(STUDENT, "1")
    assert teacher.tags["metacompress.method"] == "teacher" and student.tags["metacompress.method"] == "compressor"
    assert student.tags["metacompress.teacher"] == f"models:/{TEACHER}/1"
    for mv in (teacher, student):
        assert mv.tags["metacompress.data"] == "generated" and mv.tags["metacompress.profile"] == "tiny"
        assert mv.tags["metacompress.task"] == "generated-vulnerability"  # the registered names' dataset
        assert float(mv.tags["metacompress.size_mb"]) > 0 and int(mv.tags["metacompress.params"]) > 0
    assert float(student.tags["metacompress.size_mb"]) < float(teacher.tags["metacompress.size_mb"])
    assert student.tags["metacompress.verdict"] in {"passed", "failed"}
    assert student.tags["metacompress.policy"] == "quick"
    has_alias = "champion" in (client.get_registered_model(STUDENT).aliases or {})
    assert has_alias == (student.tags["metacompress.verdict"] == "passed")
    assert not client.get_registered_model(TEACHER).aliases  # the teacher is never gated


def test_stages_are_child_runs_and_the_table_matches_the_evaluation(client, project_run):
    from mlflow_metacompress.gates.policy import load_policy
    from mlflow_metacompress.profiles import QUICK_POLICY

    main, exp = _main_run(client)
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{main.info.run_id}'")
    assert {r.info.run_name for r in children} == {
        "teacher-generated-vulnerability",
        "compressor-generated-vulnerability",
        f"gate-{STUDENT}-v1",
    }
    assert {r.info.status for r in children} == {"FINISHED"} and main.info.status == "FINISHED"
    assert main.data.params["pipeline.policy"] == "quick" and main.data.params["profile"] == "tiny"
    student = client.get_model_version(STUDENT, "1")
    evaluation = client.get_run(student.tags["metacompress.evaluation_run_id"])
    assert evaluation.data.tags["mlflow.parentRunId"] == main.info.run_id
    metrics = evaluation.data.metrics
    # the gate run holds the verdict as a tag and a metric, and ends FINISHED whatever the verdict
    assert evaluation.info.status == "FINISHED"
    assert evaluation.data.tags["metacompress.verdict"] == student.tags["metacompress.verdict"]
    assert metrics["gate_passed"] == (1.0 if student.tags["metacompress.verdict"] == "passed" else 0.0)
    # the quick policy only names metrics a transformations + attack evaluation always logs
    assert not [c.message for c in load_policy(QUICK_POLICY).check(metrics) if c.actual is None]

    folder = Path(client.download_artifacts(main.info.run_id, "comparison", str(project_run[0] / "dl")))
    table = pd.read_csv(folder / "comparison.csv")
    assert list(table["method"]) == ["teacher", "compressor"]
    row = table.iloc[1]
    assert row["verdict"] == student.tags["metacompress.verdict"]
    assert row["model"] == f"{STUDENT}/1"
    assert row["accuracy"] == _shown(metrics["student_accuracy"])
    assert row["accuracy_drop"] == _shown(metrics["accuracy_drop"])
    assert row["any_violation_rate"] == _shown(metrics["any_violation_rate"])
    assert row["asr/wir_random_zeng_2022"] == _shown(metrics["attack_wir_random_zeng_2022/student_asr"])
    assert table.iloc[0]["accuracy"] == _shown(metrics["teacher_accuracy"])
    assert row["size_mb"] == _shown(float(student.tags["metacompress.size_mb"]))
    html = (folder / "report.html").read_text()  # the same comparison as an HTML report
    assert "compressor" in html and "default-src 'none'" in html
    markdown = (folder / "comparison.md").read_text()
    assert f"| compressor | {STUDENT}/1 | {row['verdict']} |" in markdown
    assert markdown.split("\n", 2)[2] in project_run[1].stdout  # the same table was printed


def test_stage_lines_and_heartbeats_reach_redirected_output_without_bars(project_run):
    err, out = project_run[1].stderr, project_run[1].stdout
    stage = re.compile(
        r"stage (\d)/3 (teacher|distill compressor|gate compressor): (started|running|done)"
        r"[^\n]* · elapsed \d:\d\d:\d\d · remaining [^\n]+"
    )
    seen = [(m[1], m[2], m[3]) for m in stage.finditer(err)]
    for i, label in enumerate(["teacher", "distill compressor", "gate compressor"], start=1):
        events = [e for n, lbl, e in seen if lbl == label and n == str(i)]
        assert events[0] == "started" and events[-1] == "done", (label, events)
    assert any(e == "running" for *_, e in seen)  # heartbeats at METACOMPRESS_HEARTBEAT_S=1
    assert "pipeline done: 3 stage(s) in " in err
    assert re.search(r"remaining ~\d:\d\d:\d\d", err)  # an estimate once the teacher has finished
    # progress=true, but neither stream is a terminal: no Lightning bar, no start-up notices
    assert "Epoch 0/0" not in out + err and "GPU available" not in err


# What the main job must not print into a file (issue 23): MLflow's pickle warning, the
# pipeline's language warning about its own config, Lightning's tips and deprecation lines,
# the libraries' progress bars, MLflow's input-example and integer-column hints.
NOISE = (
    "may execute arbitrary code",
    "CloudPickle",
    "evaluator_config has no 'language'",
    "💡",
    "litlogger",
    "litmodels",
    "is deprecated",
    "DeprecationWarning",
    "FutureWarning",
    "Loading weights",
    "Writing model shards",
    "Downloading artifacts",
    "Uploading artifacts",
    "An input example was not provided",
    "Inferred schema contains integer",
    "it/s]",
)


def test_redirected_output_holds_no_library_noise_and_no_lock_files(project_run):
    tmp, proc = project_run
    output = proc.stdout + proc.stderr
    found = {
        noise: next(line for line in output.splitlines() if noise in line)[:160] for noise in NOISE if noise in output
    }
    assert not found, found
    assert not list(tmp.glob("*.lock")) and not list(tmp.glob("mlflow.db.*"))  # nothing beside the store


def _shown(value: float):
    """A number as comparison.csv shows it: 4 significant digits (the metric store keeps all)."""
    return pytest.approx(float(f"{value:.4g}"), rel=1e-12, nan_ok=True)


def _recipe(name: str, argv: list[str], tmp: Path, monkeypatch) -> int:
    monkeypatch.chdir(tmp)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp}/mlflow.db")
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.setenv("MLFLOW_REGISTRY_URI", "sqlite:///stale.db")  # must not win over the tracking store
    monkeypatch.setattr(sys, "argv", [f"recipes/{name}.py", *argv])
    monkeypatch.syspath_prepend(str(tmp / "recipes"))
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(tmp / "recipes" / f"{name}.py"), run_name="__main__")
    return int(done.value.code or 0)


def test_distill_evaluate_and_gate_entry_points(client, project_run, monkeypatch, capsys):
    import mlflow

    from mlflow_metacompress.gates.policy import load_policy

    tmp = project_run[0]
    common = ["--profile", "tiny", "--progress", "false"]
    try:
        assert (
            _recipe(
                "distill", ["--teacher", f"models:/{TEACHER}/1", "--methods", "compressor", *common], tmp, monkeypatch
            )
            == 0
        )
        v2 = client.get_model_version(STUDENT, "2")
        assert v2.tags["metacompress.teacher"] == f"models:/{TEACHER}/1"
        assert _recipe("evaluate", ["--model-uri", f"models:/{STUDENT}/2", *common], tmp, monkeypatch) == 0
        assert '"student_accuracy"' in capsys.readouterr().out
        # judging v1's logged evaluation by the standard preset: its result must match the policy's own check
        v1 = client.get_model_version(STUDENT, "1")
        run_id = v1.tags["metacompress.evaluation_run_id"]
        expected = load_policy("standard").check(client.get_run(run_id).data.metrics)
        rc = _recipe(
            "gate",
            ["--model-name", STUDENT, "--version", "1", "--policy", "standard", "--evaluation-run-id", run_id, *common],
            tmp,
            monkeypatch,
        )
        out = capsys.readouterr().out
        assert rc == 0  # a failing verdict is an outcome, not an error
        passed = all(c.passed for c in expected)
        assert client.get_model_version(STUDENT, "1").tags["metacompress.policy"] == "standard"
        gate_runs = client.search_runs(
            [e.experiment_id for e in client.search_experiments()],
            f"tags.mlflow.runName = 'gate-{STUDENT}-v1'",
            order_by=["start_time DESC"],
        )
        gate_run = gate_runs[0]  # the entry point's own run, newer than the pipeline's gate run
        assert gate_run.info.run_id != run_id and gate_run.info.status == "FINISHED"
        assert gate_run.data.tags["metacompress.verdict"] == ("passed" if passed else "failed")
        assert gate_run.data.metrics["gate_passed"] == float(passed)
        for check in expected:
            assert check.message in out
    finally:
        mlflow.set_tracking_uri(None)
        mlflow.set_registry_uri(None)


def test_judged_rows_are_the_rows_the_run_evaluated_the_student_on(project_run, client, monkeypatch):
    """``judged_rows`` rebuilds the split from the run's logged budgets; oracle: the digest of the
    dataset that ``mlflow.models.evaluate`` logged as the evaluation run's input."""
    import mlflow

    from mlflow_metacompress.pipeline import judged_rows

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{project_run[0]}/mlflow.db")
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)  # an earlier test's registry must not win
    mlflow.set_tracking_uri(None)
    mlflow.set_registry_uri(None)
    try:
        rows = judged_rows(f"models:/{STUDENT}/1")
        assert len(rows) == int(_main_run(client)[0].data.params["pipeline.rows_test"])
        evaluation = client.get_run(client.get_model_version(STUDENT, "1").tags["metacompress.evaluation_run_id"])
        logged = {d.dataset.digest for d in evaluation.inputs.dataset_inputs}
        assert mlflow.data.from_pandas(rows, targets="target").digest in logged
        assert mlflow.data.from_pandas(rows.iloc[1:], targets="target").digest not in logged
        with pytest.raises(ValueError, match="has no 'metacompress.evaluation_run_id' tag"):
            judged_rows(f"models:/{TEACHER}/1")  # the teacher is never judged
    finally:
        mlflow.set_tracking_uri(None)


def test_unknown_method_fails_before_training(tmp_path, monkeypatch, capsys):
    tmp = _copy_project(tmp_path / "p")
    with pytest.raises(ValueError, match=r"unknown distillation method\(s\) \['nope'\]"):
        _recipe("main", ["--methods", "compressor,nope", "--profile", "tiny"], tmp, monkeypatch)
    assert not (tmp / "mlruns").exists()  # nothing was trained or logged


@pytest.mark.parametrize("name", ["main", "teacher", "evaluate"])
def test_bad_threads_fail_before_anything_runs_naming_the_parameter(name, tmp_path, monkeypatch):
    tmp = _copy_project(tmp_path / "p")
    args = ["--threads", "lots", "--profile", "tiny"] + (["--model-uri", "models:/x/1"] if name == "evaluate" else [])
    with pytest.raises(ValueError, match=r"--threads \(MLproject parameter threads\) must be a positive integer"):
        _recipe(name, args, tmp, monkeypatch)
    assert not (tmp / "mlruns").exists() and not (tmp / "mlflow.db").exists()


def test_readme_api_example_runs_verbatim_on_the_models_the_run_registered(project_run, client, monkeypatch, capsys):
    """The README's API block, executed as written in the folder where ``mlflow run .`` ran:
    it judges the student on the rows the run judged it on, so it prints the run's MR1."""
    import re

    import mlflow

    readme = (REPO / "README.md").read_text()
    api = readme[readme.index("## API") :]
    code = re.search(r"```python\n(.*?)```", api, re.S).group(1)
    assert "models:/metacompress-generated-vulnerability-compressor/1" in code
    monkeypatch.chdir(project_run[0])
    fresh_mlflow_stores()  # a relative sqlite:///mlflow.db is this folder's, not an earlier test's
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    mlflow.set_registry_uri(None)  # an earlier test's registry must not win over the README's tracking URI
    namespace: dict = {}
    try:
        exec(compile(code, "README.md#api", "exec"), namespace)
        metrics = namespace["result"].metrics
        out = capsys.readouterr()
        assert "%|" not in out.err and "it/s]" not in out.err, out.err[-2000:]  # not a terminal: no tqdm bars
        assert "MR1 " in out.out
        assert 0.0 <= metrics["any_violation_rate/metamorphic"] <= 1.0
        # oracle: MR1 re-computed from the two registered models' own predictions
        test = namespace["test"]
        teacher = mlflow.pyfunc.load_model("models:/metacompress-generated-vulnerability-teacher/1")
        student = mlflow.pyfunc.load_model("models:/metacompress-generated-vulnerability-compressor/1")
        t = np.asarray(teacher.predict(test[["func"]]), dtype=float).argmax(axis=1)
        s = np.asarray(student.predict(test[["func"]]), dtype=float).argmax(axis=1)
        assert metrics["mr1_violation_rate"] == pytest.approx(float(np.mean(t != s)))
        # the MR1 the main job logged for the same student: same rows, same split
        logged = client.get_run(client.get_model_version(STUDENT, "1").tags["metacompress.evaluation_run_id"])
        assert len(test) == int(_main_run(client)[0].data.params["pipeline.rows_test"])
        assert metrics["mr1_violation_rate"] == pytest.approx(logged.data.metrics["mr1_violation_rate"], abs=1e-12)
    finally:
        if mlflow.active_run():
            mlflow.end_run()
        mlflow.set_tracking_uri(None)
