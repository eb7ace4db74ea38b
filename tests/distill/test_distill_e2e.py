"""Tiny end to end: teacher and Compressor student trained on a few dozen rows, logged
and registered with their tags, then judged by the metacompress evaluator."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pytest

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.cli import main
from mlflow_metacompress.distill.teacher import train_teacher
from mlflow_metacompress.models.classifier import CodeClassifier
from mlflow_metacompress.models.size import parameter_count, size_mb
from tests.conftest import toy_frame
from tests.support.models import write_devign

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane


def registered_classifier(uri: str) -> CodeClassifier:
    path = Path(mlflow.artifacts.download_artifacts(uri)) / "artifacts" / "hf"
    return CodeClassifier.load(path)[0]


@pytest.mark.slow
def test_teacher_then_compressor_student_registered_and_evaluated(tracking, tmp_path, capsys):
    data = write_devign(tmp_path / "data")
    arch = ArchSpec(
        vocab_size=300, num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, max_length=64
    )
    teacher = train_teacher(
        data, "devign", arch=arch, epochs=2, batch_size=8, registered_name="toy-teacher", monitor="last", progress=False
    )
    client = mlflow.MlflowClient()
    assert client.get_run(teacher.run_id).data.params["monitor"] == "last"
    assert teacher.model_uri == "models:/toy-teacher/1"
    t_tags = client.get_model_version("toy-teacher", "1").tags
    t_model = registered_classifier(teacher.model_uri)
    assert t_tags["metacompress.method"] == "teacher"
    assert int(t_tags["metacompress.params"]) == parameter_count(t_model)
    assert float(t_tags["metacompress.size_mb"]) == pytest.approx(size_mb(t_model), abs=1e-4)
    assert float(t_tags["metacompress.gflops"]) > 0
    assert len(client.get_metric_history(teacher.run_id, "val_acc")) == 2  # one point per epoch

    cache = tmp_path / "soft"
    rc = main(
        [
            "student",
            "--method",
            "compressor",
            "--data-dir",
            str(data),
            "--teacher",
            "models:/toy-teacher/latest",
            "--size-mb",
            "0.1",
            "--population",
            "8",
            "--generations",
            "4",
            "--epochs",
            "2",
            "--batch-size",
            "8",
            "--max-length",
            "64",
            "--registered-name",
            "toy-student",
            "--cache-dir",
            str(cache),
            "--no-progress",
        ]
    )
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model_uri"] == "models:/toy-student/1"
    s_tags = client.get_model_version("toy-student", "1").tags
    s_model = registered_classifier(result["model_uri"])
    assert s_tags["metacompress.method"] == "compressor"
    assert s_tags["metacompress.teacher"] == "models:/toy-teacher/1"  # pinned, not "latest"
    assert int(s_tags["metacompress.params"]) == parameter_count(s_model)
    assert float(s_tags["metacompress.size_mb"]) == pytest.approx(size_mb(s_model), abs=1e-4)
    assert size_mb(s_model) < size_mb(t_model)

    run = client.get_run(result["run_id"])
    assert run.data.params["method"] == "compressor" and float(run.data.params["size_mb_target"]) == 0.1
    assert len(client.get_metric_history(run.info.run_id, "val_acc")) == 2
    config = json.loads(
        Path(
            mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="student_config.json")
        ).read_text()
    )
    assert config["arch"]["hidden_size"] == s_model.encoder.config.hidden_size
    assert config["arch"]["num_hidden_layers"] == s_model.encoder.config.num_hidden_layers
    assert config["size_mb"] == pytest.approx(size_mb(s_model))
    assert len(list(cache.glob("soft_labels-*.npz"))) == 1  # teacher soft labels cached once

    test = toy_frame(16, 2)
    with mlflow.start_run():
        ev = mlflow.models.evaluate(
            model=result["model_uri"],
            data=test,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": teacher.model_uri, "code_columns": ["func"]},
        )
    assert ev.metrics and all(np.isfinite(v) for v in ev.metrics.values() if isinstance(v, float))
    assert any("kl" in k for k in ev.metrics)


def test_soft_labels_cached_and_teacher_not_reloaded(tracking, tmp_path, tiny_classifiers, monkeypatch):
    from mlflow_metacompress.distill import soft_labels
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, model, _ = tiny_classifiers
    with mlflow.start_run():
        log_code_classifier(model, tok, registered_model_name="cache-teacher")
    df = toy_frame(12, 5)
    first = soft_labels.teacher_logits("models:/cache-teacher/latest", df, ["func"], cache_dir=tmp_path)
    expected = np.log(model.predict_proba(tok, list(df["func"])))
    np.testing.assert_allclose(first, expected, rtol=1e-4, atol=1e-5)

    def no_load(*a, **k):
        raise AssertionError("teacher reloaded despite the cache")

    monkeypatch.setattr(mlflow.pyfunc, "load_model", no_load)
    np.testing.assert_array_equal(
        soft_labels.teacher_logits("models:/cache-teacher/1", df, ["func"], cache_dir=tmp_path), first
    )
    with pytest.raises(AssertionError, match="reloaded"):  # different rows → a different key
        soft_labels.teacher_logits("models:/cache-teacher/1", df.head(5), ["func"], cache_dir=tmp_path)
