"""gate_version and ``metacompress gate --data`` end to end through the real metacompress
evaluator, with a registered sklearn teacher/student pair trained on the generated data."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import mlflow
import pytest
import yaml

from mlflow_metacompress import gates
from mlflow_metacompress.cli import main
from mlflow_metacompress.data.generators import generate_vulnerability, split_frame
from mlflow_metacompress.gates import gate_version
from mlflow_metacompress.webhooks.config import load_config

REPO = Path(__file__).resolve().parents[2]


def _fit(df, C):
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        ColumnTransformer([("v", HashingVectorizer(n_features=1024), "func")]), LogisticRegression(C=C, max_iter=500)
    ).fit(df[["func"]], df["target"])


@pytest.fixture
def registered(tracking, tmp_path):
    parts = split_frame(generate_vulnerability(200, seed=5), (0.7, 0.0, 0.3), seed=5, stratify="target")
    train, test = parts["train"], parts["test"][["func", "target"]]
    kw = dict(
        pyfunc_predict_fn="predict_proba", input_example=train[["func"]].head(2), pip_requirements=["scikit-learn"]
    )  # skips MLflow's slow requirement inference
    with mlflow.start_run():
        mlflow.sklearn.log_model(_fit(train, 10.0), name="t", registered_model_name="vuln-teacher", **kw)
        for k, C in enumerate((10.0, 0.001)):  # v1 = the teacher refitted, v2 a much weaker student
            mlflow.sklearn.log_model(_fit(train, C), name=f"s{k}", registered_model_name="vuln-student", **kw)
    client = mlflow.MlflowClient()
    for v in ("1", "2"):
        client.set_model_version_tag("vuln-student", v, gates.TAG_TEACHER, "models:/vuln-teacher/1")
    path = tmp_path / "test.jsonl"
    test.to_json(path, orient="records", lines=True)
    return client, test, path


POLICY = {
    "name": "test-tier",
    "thresholds": {
        "mr1_violation_rate": "<= 0.05",
        "accuracy_drop": "<= 0.05",
        "mr1_violation_rate/metamorphic": "<= 0.2",
    },
}


@pytest.mark.slow
def test_gate_version_with_real_evaluator(registered):
    client, test, _ = registered
    cfg = {"code_columns": ["func"], "transforms": ["rename_variables"], "language": "c", "progress": False}
    same = gate_version("vuln-student", 1, test, POLICY, evaluator_config=cfg)
    assert same.passed, same.summary()
    metrics = client.get_run(same.evaluation_run_id).data.metrics
    assert metrics["mr1_violation_rate"] == 0.0 and "mr1_violation_rate/metamorphic" in metrics
    weak = gate_version("vuln-student", 2, test, POLICY, evaluator_config=cfg)
    assert not weak.passed and "mr1_violation_rate" in {c.metric for c in weak.failed_checks}
    assert str(client.get_model_version_by_alias("vuln-student", "champion").version) == "1"
    tags = client.get_model_version("vuln-student", "2").tags
    assert tags[gates.TAG_VERDICT] == "failed" and tags[gates.TAG_RUN] == weak.evaluation_run_id


@pytest.mark.slow
def test_cli_gate_with_data_fails_on_metric_the_evaluation_lacks(registered, tracking, capsys):
    _, _, path = registered
    code = main(
        [
            "--tracking-uri",
            tracking,
            "gate",
            "--model-name",
            "vuln-student",
            "--version",
            "1",
            "--policy",
            "lenient",
            "--data",
            str(path),
            "--evaluator-config",
            '{"transforms": [], "code_columns": ["func"], "progress": false}',
        ]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "no metric matches the glob 'attack_*/excess_drop_pct': it is required by policy 'lenient'" in out
    assert "attack metrics are logged only when the evaluation runs attacks: add attacks" in out
    assert "champion" not in {
        a for v in ("1", "2") for a in mlflow.MlflowClient().get_model_version("vuln-student", v).aliases
    }


@pytest.mark.slow
def test_docs_gate_examples_pass_with_the_standard_policy(registered, tracking, capsys, tmp_path):
    """The command-line example of docs/guide/cli.md and the gates.yaml of docs/guide/webhooks.md,
    as written (the data path aside), judge v1 (the teacher refitted) with policy standard,
    which bounds attack_*/excess_drop_pct: both evaluations run an attack, so both pass."""
    client, _, path = registered
    cli_md = (REPO / "docs" / "guide" / "cli.md").read_text()
    lines = cli_md.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("metacompress gate "))
    command = lines[i].removesuffix("\\") + (lines[i + 1].split("#")[0] if lines[i].endswith("\\") else "")
    args = [str(path) if a == "test.jsonl" else a for a in shlex.split(command)[1:]]
    assert args[args.index("--policy") + 1] == "standard" and "--evaluator-config" in args
    code = main(["--tracking-uri", tracking, *args])
    assert code == 0, capsys.readouterr().out
    assert str(client.get_model_version_by_alias("vuln-student", "champion").version) == "1"

    webhooks_md = (REPO / "docs" / "guide" / "webhooks.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", webhooks_md, re.S) if "evaluator_config" in b)
    data = yaml.safe_load(block)
    data["tracking_uri"] = tracking
    data["models"]["vuln-student"]["data"] = str(path)
    (tmp_path / "gates.yaml").write_text(yaml.safe_dump(data))
    rule = load_config(tmp_path / "gates.yaml").rule_for("vuln-student")
    assert rule.policy.name == "standard" and rule.evaluator_config["attacks"]
    cfg = {**rule.evaluator_config, "teacher": rule.teacher, "progress": False}
    decision = gate_version("vuln-student", 1, rule.data, rule.policy, targets=rule.targets, evaluator_config=cfg)
    assert decision.passed, decision.summary()
    metrics = client.get_run(decision.evaluation_run_id).data.metrics
    assert "attack_alert_yang_2022/excess_drop_pct" in metrics
