"""The ``metacompress`` command: the five subcommands and their help, ``evaluate``
(metrics re-derived from the models' own outputs), ``gate`` and ``policies``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress import gates
from mlflow_metacompress.cli import main

GOOD = {"accuracy_drop": 0.0, "mr1_violation_rate/metamorphic": 0.1, "attack_mhm_zhang_2020/excess_drop_pct": 10.0}


class _Identity(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input


@pytest.fixture
def registered(fresh_store, tmp_path, monkeypatch):
    """``vuln-student`` with two versions of a logged model in a fresh store, and a maker of
    evaluation runs: (uri, client, eval_run)."""
    monkeypatch.chdir(tmp_path)
    uri, client = fresh_store.uri, fresh_store.client
    with mlflow.start_run() as run:
        info = mlflow.pyfunc.log_model(name="m", python_model=_Identity(), pip_requirements=[])
    client.create_registered_model("vuln-student")
    for _ in range(2):
        client.create_model_version("vuln-student", info.model_uri, run_id=run.info.run_id)

    def eval_run(metrics, end_time):
        exp = client.get_experiment_by_name("Default").experiment_id
        r = client.create_run(exp, start_time=end_time - 5)
        for k, v in metrics.items():
            client.log_metric(r.info.run_id, k, v)
        client.log_text(r.info.run_id, json.dumps({"metrics": metrics}), "metacompress/summary.json")
        client.set_terminated(r.info.run_id, end_time=end_time)
        return r.info.run_id

    return uri, client, eval_run


def _alias(client):
    return str(client.get_model_version_by_alias("vuln-student", "champion").version)


@pytest.mark.slow
def test_gate_pass_fail_refuse_force_exit_codes(registered, capsys):
    uri, client, eval_run = registered
    fresh, stale = eval_run(GOOD, 1_700_000_900_000), eval_run(GOOD, 1_700_000_000_000)
    base = ["--tracking-uri", uri, "gate", "--model-name", "vuln-student", "--policy", "lenient"]
    assert main([*base, "--version", "1", "--evaluation-run-id", fresh, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["alias_moved"] and _alias(client) == "1"

    assert main([*base, "--version", "2", "--evaluation-run-id", stale]) == 1
    assert "refused" in capsys.readouterr().out and _alias(client) == "1"
    assert main([*base, "--version", "2", "--evaluation-run-id", stale, "--force"]) == 0
    assert _alias(client) == "2"

    bad = eval_run(dict(GOOD, accuracy_drop=0.3), 1_700_001_000_000)
    assert main([*base, "--version", "1", "--evaluation-run-id", bad]) == 1
    text = capsys.readouterr().out
    assert "FAILED" in text and "accuracy_drop = 0.3 violates <= 0.05" in text
    assert _alias(client) == "2"
    assert client.get_model_version("vuln-student", "1").tags[gates.TAG_VERDICT] == "failed"


@pytest.mark.slow
def test_gate_input_errors_exit_2_with_one_line(registered, capsys, tmp_path):
    uri, client, eval_run = registered
    base = ["--tracking-uri", uri, "gate", "--model-name", "vuln-student", "--version", "1"]
    assert main([*base, "--evaluation-run-id", "nope"]) == 2
    assert "evaluation run 'nope' not found" in capsys.readouterr().err
    assert main([*base, "--evaluation-run-id", eval_run(GOOD, 1), "--policy", str(tmp_path / "x.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([*base, "--data", str(tmp_path / "missing.jsonl")]) == 2
    assert "no 'metacompress.teacher' tag" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # exactly one of --data / --evaluation-run-id
        main([*base])
    assert exit_.value.code == 2


@pytest.mark.slow
def test_console_script_is_installed_and_lists_presets():
    script = Path(sys.executable).with_name("metacompress")
    if not script.exists():
        pytest.skip("console script not installed in this environment")
    out = subprocess.run([str(script), "policies"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for name in ("safety_critical", "standard", "lenient"):
        assert f"policy {name}" in out.stdout
    assert "accuracy_drop <= 0.02" in out.stdout


SUBCOMMANDS = ("evaluate", "attack", "distill", "gate", "policies", "report", "compare", "webhooks")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mlflow_metacompress.cli", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_help_lists_every_subcommand_and_each_help_exits_0():
    top = _cli("--help")
    assert top.returncode == 0, top.stderr
    listed = re.findall(r"^    (\w+)\s", top.stdout, flags=re.M)
    assert listed == list(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        out = _cli(name, "--help")
        assert out.returncode == 0, (name, out.stderr)
        assert out.stdout.startswith(f"usage: metacompress {name}")
        description = out.stdout.split("\n\n")[1]  # after the usage block, when there is one
        if not description.startswith(("options:", "positional arguments:")):
            assert description.rstrip().endswith((".", ")")), (name, description)  # never cut off mid-sentence
    attack_help = _cli("attack", "--help").stdout
    for recipe in ("mhm_zhang_2020", "alert_yang_2022", "wir_random_zeng_2022", "coda_tian_2023"):
        assert recipe in attack_help  # --attack choices come from recipe discovery


@pytest.mark.slow
def test_unknown_subcommand_exits_2():
    out = _cli("evaluat")
    assert out.returncode == 2 and "invalid choice: 'evaluat'" in out.stderr


class _Bucket(mlflow.pyfunc.PythonModel):
    """p(class 1) from the code's length bucket; ``width`` differs between teacher and student."""

    def __init__(self, width: int) -> None:
        self.width = width

    def predict(self, context, model_input, params=None):
        return pd.DataFrame(_bucket(model_input["func"], self.width), columns=["0", "1"])


def _bucket(codes, width: int) -> np.ndarray:
    p1 = np.array([0.1 + (0.8 if width == 40 else 0.7) * ((len(c) // width) % 2) for c in codes])
    return np.stack([1 - p1, p1], axis=1)


@pytest.fixture
def pair(tracking, tmp_path):
    """A teacher and a student logged in the store, and a labelled .jsonl file."""
    from tests.conftest import toy_frame

    uri = tracking
    uris = {}
    for role, width in (("teacher", 40), ("student", 30)):
        with mlflow.start_run():
            uris[role] = mlflow.pyfunc.log_model(name=role, python_model=_Bucket(width), pip_requirements=[]).model_uri
    df = toy_frame(24, seed=5)
    data = tmp_path / "eval.jsonl"
    df.to_json(data, orient="records", lines=True)
    return uri, uris, df, data


def _printed(text: str) -> dict[str, float]:
    return {k: float(v) for k, v in re.findall(r"^(\S+)\s+(-?[\d.]+|nan)$", text, flags=re.M)}


@pytest.mark.slow
def test_evaluate_prints_the_headline_metrics_of_a_new_run(pair, capsys):
    uri, uris, df, data = pair
    argv = [
        "--tracking-uri",
        uri,
        "evaluate",
        "--student",
        uris["student"],
        "--teacher",
        uris["teacher"],
        "--data",
        str(data),
        "--targets",
        "target",
        "--experiment",
        "cli-eval",
        "--run-name",
        "first",
        "--evaluator-config",
        json.dumps({"transforms": [], "language": "c", "progress": False}),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    printed = _printed(out)
    run_id = re.search(r"^run_id: (\w+)$", out, flags=re.M).group(1)

    teacher, student = _bucket(df["func"], 40).argmax(1), _bucket(df["func"], 30).argmax(1)
    y = df["target"].to_numpy()
    assert printed["teacher_accuracy"] == pytest.approx((teacher == y).mean(), abs=1e-4)
    assert printed["student_accuracy"] == pytest.approx((student == y).mean(), abs=1e-4)
    assert printed["accuracy_drop"] == pytest.approx((teacher == y).mean() - (student == y).mean(), abs=1e-4)
    assert printed["mr1_violation_rate"] == pytest.approx((teacher != student).mean(), abs=1e-4)
    for key in ("mr2_violation_rate", "mr3_violation_rate", "mr4_violation_rate", "any_violation_rate"):
        assert key in printed
    run = mlflow.get_run(run_id)
    assert run.info.run_name == "first"
    assert mlflow.get_experiment(run.info.experiment_id).name == "cli-eval"
    for key, value in printed.items():
        assert run.data.metrics[key] == pytest.approx(value, abs=1e-4)


@pytest.mark.slow
def test_evaluate_json_output_and_metamorphic_metrics(pair, capsys):
    uri, uris, df, data = pair
    assert (
        main(
            [
                "--tracking-uri",
                uri,
                "evaluate",
                "--student",
                uris["student"],
                "--teacher",
                uris["teacher"],
                "--data",
                str(data),
                "--targets",
                "target",
                "--evaluator-config",
                json.dumps({"transforms": ["swap_operands"], "language": "c", "progress": False}),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "mr1_violation_rate/metamorphic" in _printed(out)
    assert (
        main(
            [
                "--tracking-uri",
                uri,
                "evaluate",
                "--student",
                uris["student"],
                "--teacher",
                uris["teacher"],
                "--data",
                str(data),
                "--json",
                "--evaluator-config",
                '{"transforms": [], "language": "c"}',
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert mlflow.get_run(doc["run_id"]).data.metrics["mr1_violation_rate"] == doc["metrics"]["mr1_violation_rate"]
    assert "teacher_accuracy" not in doc["metrics"]  # no --targets: no accuracy


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--evaluator-config", "{transforms"], "--evaluator-config is not valid JSON"),
        (["--evaluator-config", "[1, 2]"], "must be a JSON object, got list"),
        (["--evaluator-config", '{"teacher": "x"}'], "must not set 'teacher'"),
        (["--targets", "label"], "--targets column 'label' not in"),
        (["--evaluator-config", '{"code_columns": ["code"], "language": "c"}'], "code"),
    ],
)
def test_evaluate_input_errors_exit_2_with_one_line(pair, capsys, extra, message):
    uri, uris, _, data = pair
    code = main(
        [
            "--tracking-uri",
            uri,
            "evaluate",
            "--student",
            uris["student"],
            "--teacher",
            uris["teacher"],
            "--data",
            str(data),
            *extra,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    ours = [line for line in err.splitlines() if not re.match(r"\d{4}/\d\d/\d\d ", line)]  # MLflow's own log lines
    assert len(ours) == 1 and ours[0].startswith("metacompress evaluate: error: ") and message in ours[0], err


@pytest.mark.slow
def test_evaluate_data_file_errors_name_the_file(pair, capsys, tmp_path):
    uri, uris, _, _ = pair
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"func": "int f;", "target": 0}\n{"func": oops}\n')
    cases = {
        str(tmp_path / "missing.jsonl"): "does not exist",
        str(tmp_path): "is a directory",
        str(tmp_path / "x.txt"): "unsupported data format '.txt'",
        str(bad): f"{bad}:2: invalid JSON",
    }
    (tmp_path / "x.txt").write_text("a")
    for path, message in cases.items():
        assert (
            main(
                [
                    "--tracking-uri",
                    uri,
                    "evaluate",
                    "--student",
                    uris["student"],
                    "--teacher",
                    uris["teacher"],
                    "--data",
                    path,
                ]
            )
            == 2
        )
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


# --------------------------------------------------------------------- quick policy
QUICK_OK = {
    "accuracy_drop": 0.0,
    "mr1_violation_rate": 0.1,
    "mr1_violation_rate/metamorphic": 0.1,
    "attack_mhm_zhang_2020/excess_drop": 0.1,
}


@pytest.mark.slow
def test_quick_is_a_policy_in_every_cli(registered, capsys):
    """``quick`` (the pipeline's default policy) works in ``policies``, ``gate --policy``
    and the pipeline/MLproject resolution, like the presets."""
    from mlflow_metacompress.gates.policy import load_policy
    from mlflow_metacompress.profiles import get_profile, resolve_policy

    uri, client, eval_run = registered
    assert main(["policies", "quick"]) == 0
    assert "accuracy_drop <= 0.05" in capsys.readouterr().out
    base = ["--tracking-uri", uri, "gate", "--model-name", "vuln-student", "--policy", "quick"]
    assert main([*base, "--version", "1", "--evaluation-run-id", eval_run(QUICK_OK, 1_700_000_900_000)]) == 0
    assert "passed" in capsys.readouterr().out.lower() and _alias(client) == "1"
    bad = eval_run(dict(QUICK_OK, **{"attack_mhm_zhang_2020/excess_drop": 0.3}), 1_700_001_000_000)
    assert main([*base, "--version", "2", "--evaluation-run-id", bad]) == 1
    assert "attack_mhm_zhang_2020/excess_drop = 0.3 violates <= 0.15" in capsys.readouterr().out
    assert _alias(client) == "1"
    quick = load_policy("quick")
    for profile in ("quick", "paper"):  # -P policy=quick with any profile; auto with the quick profile
        assert load_policy(resolve_policy("quick", get_profile(profile))) == quick
    assert load_policy(resolve_policy("auto", get_profile("quick"))) == quick


# --------------------------------------------------------------------- distill
@pytest.mark.slow
def test_distill_help_lists_the_methods():
    from mlflow_metacompress.distill.discovery import list_methods

    out = _cli("distill", "student", "--help")
    assert out.returncode == 0, out.stderr
    assert "--method {" + ",".join(list_methods()) + "}" in " ".join(out.stdout.split())
    assert "Distillation methods: " + ", ".join(list_methods()) in _cli("distill", "--help").stdout
    teacher_help = " ".join(_cli("distill", "teacher", "--help").stdout.split())
    assert "default: the embedded generated data" in teacher_help and "--hub" in teacher_help


def test_distill_hub_without_datasets_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    assert main(["distill", "teacher", "--hub", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'needs datasets: pip install -e ".[datasets]" in the source checkout' in err, err
    with pytest.raises(SystemExit) as exit_:  # one data source at most
        main(["distill", "teacher", "--hub", "--data-dir", "x"])
    assert exit_.value.code == 2
    assert main(["distill", "teacher", "--generated-rows", "10"]) == 2
    assert "--generated-rows must be at least 30" in capsys.readouterr().err


@pytest.mark.slow
def test_distill_teacher_trains_on_the_embedded_data_without_data_dir(tracking, capsys):
    """No ``--data-dir``: the pipeline's generator makes the splits; the registered teacher,
    re-queried on the generated test split, reproduces the logged test accuracy."""
    from mlflow_metacompress.data.generators import make_splits
    from mlflow_metacompress.distill.datasets import split_halves

    rows, seed = 60, 3
    code = main(
        [
            "--tracking-uri",
            tracking,
            "distill",
            "teacher",
            "--generated-rows",
            str(rows),
            "--seed",
            str(seed),
            "--layers",
            "1",
            "--hidden",
            "16",
            "--heads",
            "1",
            "--intermediate",
            "32",
            "--vocab-size",
            "300",
            "--epochs",
            "1",
            "--max-steps",
            "2",
            "--batch-size",
            "8",
            "--max-length",
            "64",
            "--no-progress",
            "--registered-name",
            "generated-teacher",
        ]
    )
    assert code == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["model_uri"] == "models:/generated-teacher/1"
    splits = make_splits("vulnerability", rows, seed)
    labelled, _ = split_halves(splits["train"], seed)
    run = mlflow.get_run(result["run_id"])
    assert run.data.params["train_rows"] == str(len(labelled))
    probs = mlflow.pyfunc.load_model(result["model_uri"]).predict(splits["test"][["func"]])
    accuracy = float((np.asarray(probs).argmax(axis=1) == splits["test"]["target"].to_numpy()).mean())
    assert run.data.metrics["test_acc"] == pytest.approx(accuracy)
