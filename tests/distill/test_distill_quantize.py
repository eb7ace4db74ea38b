"""The ``quantize`` method: a post-training int8 (or half-precision) copy of the teacher,
registered, tagged and reloaded like every student.

Oracles: the teacher's own probabilities (its logged pyfunc) on generated rows nothing
was fitted on; the bytes of the quantized weights counted from the layers' shapes
(int8 values, per-row scales and zero points in the dtypes torch stores them, float
LayerNorms and biases), independent of the state-dict walk the size tag comes from.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pytest
import torch
from torch import nn

from mlflow_metacompress.data.generators import make_splits
from mlflow_metacompress.models.classifier import CodeClassifier
from mlflow_metacompress.models.size import parameter_count
from tests.support.models import LAYERS, MAX_LENGTH
from tests.support.models import held_out_rows as _held_out
from tests.support.models import malloc_teacher as _teacher
from tests.support.models import register_toy_teacher as _register_teacher

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane


@pytest.fixture(scope="module")
def trained():
    """``(frames, teacher, tokenizer)``: generated splits and the teacher trained on them, once."""
    frames = make_splits("vulnerability", 240, seed=0)
    return (frames, *_teacher(frames))


def _as_pair(teacher: CodeClassifier, pair_mode: str) -> CodeClassifier:
    """A pair classifier around ``teacher``'s trained encoder whose head reads the first
    function's ``[CLS]`` (``concat_cls``) or the pair's (``single_sequence``) as the
    teacher's head does: as confident, with no training."""
    import copy

    from mlflow_metacompress.models.meta import ClassifierMeta

    meta = ClassifierMeta(labels=list(teacher.meta.labels), pair_mode=pair_mode, max_length=teacher.meta.max_length)
    pair = CodeClassifier(copy.deepcopy(teacher.encoder), meta).eval()
    state = teacher.head.state_dict()
    if pair_mode == "concat_cls":
        state["dense.weight"] = torch.cat([state["dense.weight"], torch.zeros_like(state["dense.weight"])], dim=1)
    pair.head.load_state_dict(state)
    return pair


def _artifact_dir(uri: str) -> Path:
    return Path(mlflow.artifacts.download_artifacts(uri)) / "artifacts" / "hf"


def _expected_int8_bytes(teacher: nn.Module) -> int:
    """Bytes of the int8 copy from the teacher's layer shapes: per Linear, int8 weights,
    a float64 scale and int64 zero point per output row, a float32 bias and the scalar
    output scale (float32) and zero point (int64) dynamic modules keep; per Embedding,
    uint8 rows with a float32 scale and offset each; LayerNorms in float32."""
    total = 0
    for module in teacher.modules():
        if isinstance(module, nn.Linear):
            out, inp = module.weight.shape
            total += out * inp + out * (8 + 8) + (out * 4 if module.bias is not None else 0) + 4 + 8
        elif isinstance(module, nn.Embedding):
            n, d = module.weight.shape
            total += n * d + n * (4 + 4)
        elif isinstance(module, nn.LayerNorm):
            total += sum(p.numel() * 4 for p in module.parameters())
    assert (
        total
        and sum(
            p.numel()
            for m in teacher.modules()
            if not isinstance(m, (nn.Linear, nn.Embedding, nn.LayerNorm))
            for p in m.parameters(recurse=False)
        )
        == 0
    )  # every weight is in those three kinds
    return total


@pytest.mark.slow
def test_int8_copy_is_faithful_small_tagged_and_reloads(tracking, tmp_path, trained):
    from torch.ao.nn.quantized import Embedding as QEmbedding
    from torch.ao.nn.quantized.dynamic import Linear as QLinear

    from mlflow_metacompress.distill import distill_student
    from mlflow_metacompress.models.quantization import QuantSpec, quantize_classifier, stored_bytes

    frames, teacher, tok = trained
    teacher_uri = _register_teacher(teacher, tok)
    result = distill_student(
        frames,
        teacher_uri,
        "devign",
        method="quantize",
        max_length=MAX_LENGTH,
        registered_name="q-int8",
        progress=False,
        cache_dir=tmp_path / "cache",
    )
    assert result.model_uri == "models:/q-int8/1"

    rows = _held_out()
    oracle = mlflow.pyfunc.load_model(teacher_uri).predict(rows).to_numpy()
    assert oracle[:, 1].std() > 0.2 and 0.1 < (oracle.argmax(1) == 1).mean() < 0.9  # a teacher worth mimicking
    student = mlflow.pyfunc.load_model(result.model_uri).predict(rows).to_numpy()
    gap = np.abs(student - oracle)[:, 1]  # int8 rounding moves a probability a little, and rarely much
    assert gap.mean() < 0.01 and np.quantile(gap, 0.95) < 0.05 and gap.max() < 0.15
    assert (student.argmax(1) == oracle.argmax(1)).mean() >= 0.98

    # the reloaded model is the one quantized in memory (same deterministic quantization)
    in_memory = quantize_classifier(teacher, QuantSpec()).predict_proba(tok, list(rows["func"]))
    np.testing.assert_allclose(student, in_memory, atol=1e-6)

    # every Linear and Embedding is quantized; what is stored is int8 state, not float weights
    folder = _artifact_dir(result.model_uri)
    loaded, _ = CodeClassifier.load(folder)
    linears = [m for m in loaded.modules() if isinstance(m, (nn.Linear, QLinear))]
    assert len(linears) == 4 * LAYERS + 2 * LAYERS + 2 and all(isinstance(m, QLinear) for m in linears)
    embeddings = [m for m in loaded.modules() if isinstance(m, (nn.Embedding, QEmbedding))]
    assert len(embeddings) == 3 and all(isinstance(m, QEmbedding) for m in embeddings)
    assert json.loads((folder / "metacompress.json").read_text())["extra"]["quantization"]["dtype"] == "int8"
    assert not list(folder.rglob("*.safetensors")) and not (folder / "head.pt").exists()

    # size: the bytes of the quantized weights, from the layer shapes; under 0.35 × the teacher
    expected = _expected_int8_bytes(teacher)
    assert stored_bytes(teacher) == parameter_count(teacher) * 4  # float32: both definitions agree
    client = mlflow.MlflowClient()
    tags = client.get_model_version("q-int8", "1").tags
    assert float(tags["metacompress.size_mb"]) == pytest.approx(expected / 1e6, abs=1e-4)
    assert float(tags["metacompress.size_mb"]) <= 0.35 * parameter_count(teacher) * 4 / 1e6
    assert expected <= (folder / "quantized.pt").stat().st_size <= expected * 1.1 + 64_000  # the artifact is that small
    assert tags["metacompress.method"] == "quantize" and tags["metacompress.teacher"] == teacher_uri
    assert int(tags["metacompress.params"]) == parameter_count(teacher)
    assert {"metacompress.latency_ms", "metacompress.speedup_vs_teacher", "metacompress.gflops"} <= set(tags)
    run = client.get_run(result.run_id).data
    assert run.metrics["size_mb"] == pytest.approx(expected / 1e6)
    assert run.params["opt.dtype"] == "int8" and not any(k.startswith("best_") for k in run.metrics)
    assert run.metrics["train_agreement"] >= 0.98


def test_quantizing_embeddings_is_what_brings_the_copy_under_a_third(trained):
    from mlflow_metacompress.models.quantization import QuantSpec, quantize_classifier, stored_bytes

    teacher = trained[1]
    full = stored_bytes(teacher)
    with_embeddings = stored_bytes(quantize_classifier(teacher, QuantSpec()))
    linear_only = quantize_classifier(teacher, QuantSpec(embeddings=False))
    assert with_embeddings == _expected_int8_bytes(teacher)
    assert with_embeddings <= 0.35 * full < 0.5 * full < stored_bytes(linear_only)
    assert any(type(m) is nn.Embedding for m in linear_only.modules())


@pytest.mark.parametrize("pair_mode", ["concat_cls", "single_sequence"])
def test_pair_classifiers_quantize_and_round_trip(tmp_path, trained, pair_mode):
    from mlflow_metacompress.models.quantization import QuantSpec, quantize_classifier

    _, single, tok = trained
    teacher = _as_pair(single, pair_mode)
    rows = list(_held_out()["func"])
    a, b = rows[:120], rows[120:240]
    oracle = teacher.predict_proba(tok, a, b)
    assert oracle[:, 1].std() > 0.2  # a teacher worth mimicking
    copy = quantize_classifier(teacher, QuantSpec())
    probs = copy.predict_proba(tok, a, b)
    assert np.abs(probs - oracle).mean() < 0.02 and (probs.argmax(1) == oracle.argmax(1)).mean() >= 0.98
    reloaded, tok2 = CodeClassifier.load(copy.save(tmp_path / "q", tok))
    np.testing.assert_allclose(reloaded.predict_proba(tok2, a, b), probs, atol=1e-6)


@pytest.mark.slow
def test_half_precision_copies(tracking, tmp_path, trained):
    """float16 through the whole runner (registered, sized at 2 bytes a weight); bfloat16
    quantized in memory and saved and reloaded as the pyfunc does."""
    from mlflow_metacompress.distill import distill_student
    from mlflow_metacompress.models.quantization import QuantSpec, quantize_classifier

    frames, teacher, tok = trained
    teacher_uri = _register_teacher(teacher, tok)
    rows = _held_out()
    oracle = mlflow.pyfunc.load_model(teacher_uri).predict(rows).to_numpy()
    result = distill_student(
        frames,
        teacher_uri,
        "devign",
        method="quantize",
        max_length=MAX_LENGTH,
        registered_name="q-half",
        progress=False,
        cache_dir=tmp_path / "cache",
        dtype="float16",
    )
    probs = mlflow.pyfunc.load_model(result.model_uri).predict(rows).to_numpy()
    assert np.abs(probs - oracle).max() < 0.01 and (probs.argmax(1) == oracle.argmax(1)).mean() >= 0.98
    loaded, _ = CodeClassifier.load(_artifact_dir(result.model_uri))
    assert {p.dtype for p in loaded.parameters()} == {torch.float16}
    tags = mlflow.MlflowClient().get_model_version("q-half", "1").tags
    assert float(tags["metacompress.size_mb"]) == pytest.approx(parameter_count(teacher) * 2 / 1e6, abs=1e-4)

    bf16 = quantize_classifier(teacher, QuantSpec(dtype="bfloat16"))
    reloaded, tok2 = CodeClassifier.load(bf16.save(tmp_path / "bf16", tok))
    assert {p.dtype for p in reloaded.parameters()} == {torch.bfloat16}
    probs = reloaded.predict_proba(tok2, list(rows["func"]))
    np.testing.assert_allclose(probs, bf16.predict_proba(tok, list(rows["func"])), atol=1e-6)
    assert np.abs(probs - oracle).max() < 0.05 and (probs.argmax(1) == oracle.argmax(1)).mean() >= 0.98


def test_unknown_dtype_is_named_before_anything_runs(tracking, capsys):
    from mlflow_metacompress.cli import main
    from mlflow_metacompress.distill import distill_student, get_method

    with pytest.raises(ValueError, match=r"option dtype='int4' of method 'quantize'.*'int8', 'float16', 'bfloat16'"):
        get_method("quantize").parse({"dtype": "int4"})
    with pytest.raises(ValueError, match="option dtype='int4'"):
        distill_student(None, "models:/absent/1", method="quantize", dtype="int4")  # before any data or URI is read
    assert (
        main(["distill", "student", "--method", "quantize", "--teacher", "models:/absent/1", "--option", "dtype=int4"])
        == 2
    )
    assert "option dtype='int4' of method 'quantize'" in capsys.readouterr().err


def test_cli_lists_quantize_with_its_options(capsys):
    from mlflow_metacompress.cli import main

    assert main(["distill", "methods"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["quantize"]["options"] == {"lr": 1e-3, "dtype": "int8", "embeddings": True, "per_channel": True}
    with pytest.raises(SystemExit):
        main(["distill", "student", "--help"])
    assert "quantize" in capsys.readouterr().out
