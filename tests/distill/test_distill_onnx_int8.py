"""The ``onnx-int8`` method: the teacher exported to ONNX, quantized by ONNX Runtime and
registered as an ``mlflow.onnx`` model, then judged by the evaluator like any student.

Oracles: the teacher's own probabilities (its logged torch pyfunc) on generated rows
nothing was fitted on; the student's from onnxruntime itself on the downloaded ``.onnx``
file, one row per call; the relations recomputed with scipy and sklearn.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pytest

from tests.support.models import MAX_LENGTH
from tests.support.models import held_out_rows as _held_out
from tests.support.models import malloc_teacher as _teacher
from tests.support.models import register_toy_teacher as _register_teacher

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def trained():
    from mlflow_metacompress.data.generators import make_splits

    frames = make_splits("vulnerability", 240, seed=0)
    return (frames, *_teacher(frames))


def _direct_probs(path: Path, tok, texts: list[str]) -> np.ndarray:
    import onnxruntime as ort
    from scipy.special import softmax

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rows = []
    for text in texts:
        enc = tok([text], truncation=True, max_length=MAX_LENGTH, return_tensors="np")
        rows.append(
            session.run(["logits"], {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask")})[0][0]
        )
    return softmax(np.asarray(rows, dtype=np.float64), axis=1)


@pytest.mark.slow
def test_onnx_int8_student_is_registered_as_mlflow_onnx_and_judged_against_its_teacher(tracking, tmp_path, trained):
    from scipy.stats import entropy
    from sklearn.metrics import accuracy_score

    from mlflow_metacompress.distill import distill_student

    frames, teacher, tok = trained
    teacher_uri = _register_teacher(teacher, tok)
    result = distill_student(
        frames,
        teacher_uri,
        "devign",
        method="onnx-int8",
        max_length=MAX_LENGTH,
        registered_name="onnx-int8",
        progress=False,
        cache_dir=tmp_path / "cache",
    )
    assert result.model_uri == "models:/onnx-int8/1"
    folder = Path(mlflow.artifacts.download_artifacts(result.model_uri))
    assert "onnx" in mlflow.models.Model.load(str(folder)).flavors
    onnx_path = folder / "model.onnx"
    client = mlflow.MlflowClient()
    tags = client.get_model_version("onnx-int8", "1").tags
    assert tags["metacompress.method"] == "onnx-int8" and tags["metacompress.teacher"] == teacher_uri
    assert float(tags["metacompress.size_mb"]) == pytest.approx(onnx_path.stat().st_size / 1e6, rel=0.05)
    teacher_mb = sum(p.numel() for p in teacher.parameters()) * 4 / 1e6
    assert float(tags["metacompress.size_mb"]) < 0.6 * teacher_mb  # 8-bit weights: well under the float teacher
    assert {"metacompress.latency_ms", "metacompress.speedup_vs_teacher"} <= set(tags)  # timed as deployed
    run = client.get_run(result.run_id).data
    assert run.params["quant.backend"] == "onnxruntime" and run.metrics["train_agreement"] >= 0.95

    rows = _held_out().head(120)
    texts = rows["func"].tolist()
    y = np.array([int("malloc" in t) for t in texts])
    with mlflow.start_run():
        evaluated = mlflow.models.evaluate(
            model=result.model_uri,
            data=rows.assign(target=y),
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": teacher_uri, "transforms": [], "batch_size": 1, "bootstrap_samples": 0},
        )
    pt = mlflow.pyfunc.load_model(teacher_uri).predict(rows).to_numpy().astype(np.float64)
    ps = _direct_probs(onnx_path, tok, texts)
    assert pt[:, 1].std() > 0.2  # a teacher worth mimicking
    m = evaluated.metrics
    assert m["mr1_violation_rate"] == pytest.approx(np.mean(pt.argmax(1) != ps.argmax(1)))
    assert m["mr1_violation_rate"] <= 0.05  # a faithful copy
    assert m["mr2_mean_kl"] == pytest.approx(np.mean(entropy(pt, ps, axis=1)), abs=1e-5)
    assert m["student_accuracy"] == pytest.approx(accuracy_score(y, ps.argmax(1)))
    config = json.loads(
        open(mlflow.artifacts.download_artifacts(run_id=result.run_id, artifact_path="student_config.json")).read()
    )
    assert config["quantization"]["dtype"] == "int8" and config["format"] == "onnx"


def test_cli_lists_onnx_int8(capsys):
    from mlflow_metacompress.cli import main

    assert main(["distill", "methods"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["onnx-int8"]["options"] == {"lr": 1e-3, "per_channel": True}
