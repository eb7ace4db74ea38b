"""ONNX Runtime inference (issue 31, item 3): the exported classifier answers like torch,
the evaluator's ``inference="onnxruntime"`` gives torch's relations, and a student logged
with ``mlflow.onnx`` (fp32 or int8) is judged against a torch teacher, checked against an
independent recomputation (onnxruntime directly, scipy, sklearn)."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pandas as pd
import pytest
from conftest import TOY_CODE, toy_frame

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

OTHER = [c.replace("int", "long").replace("i", "j") for c in TOY_CODE]


def _classifier(tok, pair_mode=None, seed=0, hidden=32):
    import torch

    from mlflow_metacompress.models.classifier import CodeClassifier

    torch.manual_seed(seed)
    return CodeClassifier.from_config(
        len(tok),
        pair_mode=pair_mode,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        max_length=64,
        pad_token_id=tok.pad_token_id,
    ).eval()


def _evaluate(model, df, config):
    with mlflow.start_run():
        return mlflow.models.evaluate(
            model=model,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )


@pytest.mark.slow
@pytest.mark.parametrize("pair_mode", [None, "concat_cls", "siamese", "single_sequence"])
def test_export_answers_like_torch_and_carries_its_tokenizer(tiny_classifiers, tmp_path, pair_mode):
    from mlflow_metacompress.models.onnx_export import export
    from mlflow_metacompress.models.onnx_runtime import OnnxClassifier

    tok = tiny_classifiers[0]
    model = _classifier(tok, pair_mode)
    model.train()  # export must not depend on, nor change, the module's mode
    path = export(model, tok, tmp_path / "m.onnx")
    assert model.training
    model.eval()
    onnx_model = OnnxClassifier(path)
    texts = TOY_CODE * 3
    texts_b = OTHER * 3 if pair_mode else None
    assert onnx_model.tokenizer(texts)["input_ids"] == tok(texts)["input_ids"]  # the tokenizer travels in the file
    assert (onnx_model.labels, onnx_model.pair_mode, onnx_model.max_length) == (["0", "1"], pair_mode, 64)
    expected = model.predict_logits(tok, texts, texts_b, batch_size=4)
    got = onnx_model.predict_logits(None, texts, texts_b, batch_size=4)
    assert np.abs(got - expected).max() < 1e-4
    assert np.abs(got - expected).max() > 0 or pair_mode is None  # really computed by another runtime
    assert np.allclose(onnx_model.predict_proba(None, texts, texts_b).sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.slow
def test_export_is_cached_by_content(tiny_classifiers, tmp_path):
    import torch

    from mlflow_metacompress.models.onnx_export import cached_export

    tok = tiny_classifiers[0]
    model = _classifier(tok)
    first = cached_export(model, tok, tmp_path)
    stamp = first.stat().st_mtime_ns
    assert cached_export(model, tok, tmp_path) == first and first.stat().st_mtime_ns == stamp
    assert first.parent == tmp_path / "onnx"
    with torch.no_grad():
        model.head.out_proj.bias.add_(0.5)  # other weights, another file
    assert cached_export(model, tok, tmp_path) != first


def test_export_refuses_a_torch_quantized_copy(tiny_classifiers, tmp_path):
    from mlflow_metacompress.models.onnx_export import export
    from mlflow_metacompress.models.quantization import QuantSpec, quantize_classifier

    tok = tiny_classifiers[0]
    with pytest.raises(ValueError, match="torch-quantized.*onnx-int8"):
        export(quantize_classifier(_classifier(tok), QuantSpec()), tok, tmp_path / "q.onnx")


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"inference": "onnx"}, r"evaluator_config\['inference'\] must be 'torch' or 'onnxruntime'; got 'onnx'"),
        ({"inference": "onnxruntime", "engine": "spark"}, r"'onnxruntime' .* needs engine 'local'; got engine 'spark'"),
    ],
)
def test_inference_key_is_validated(config, match):
    from mlflow_metacompress.adapters.checks import MetaCompressInputError
    from mlflow_metacompress.evaluation.config import check_config

    with pytest.raises(MetaCompressInputError, match=match):
        check_config(config)


@pytest.mark.slow
def test_evaluator_onnxruntime_gives_torch_relations(tracking, tiny_classifiers):
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, student = tiny_classifiers
    with mlflow.start_run():
        log_code_classifier(teacher, tok, name="t", registered_model_name="teacher")
        s = log_code_classifier(student, tok, name="s")
    df = toy_frame(40)
    base = {"teacher": "models:/teacher/1", "transforms": [], "use_cache": False, "bootstrap_samples": 0}
    torch_result = _evaluate(s.model_uri, df, base)
    ort_result = _evaluate(s.model_uri, df, base | {"inference": "onnxruntime", "use_cache": True})
    assert ort_result.metrics["mr1_violation_rate"] == torch_result.metrics["mr1_violation_rate"]
    assert abs(ort_result.metrics["mr2_mean_kl"] - torch_result.metrics["mr2_mean_kl"]) < 1e-4
    assert ort_result.metrics.keys() == torch_result.metrics.keys()
    for key, value in torch_result.metrics.items():  # rates, accuracies, ECE: all within float noise
        assert ort_result.metrics[key] == pytest.approx(value, abs=1e-5), key
    # the ONNX predictions are cached apart from torch's: a torch run after it recomputes
    again = _evaluate(s.model_uri, df, base | {"use_cache": True})
    assert again.metrics["mr1_violation_rate"] == torch_result.metrics["mr1_violation_rate"]
    summary = json.loads(open(mlflow.artifacts.download_artifacts(again.artifacts["summary"].uri)).read())
    assert summary["student_rows_run"] == 40


def _direct_probs(path, tok, texts):
    """Probabilities from onnxruntime itself, one row per call (no padding, no bucketing)."""
    import onnxruntime as ort
    from scipy.special import softmax

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rows = []
    for text in texts:
        enc = tok([text], truncation=True, max_length=64, return_tensors="np")
        feed = {name: enc[name].astype(np.int64) for name in ("input_ids", "attention_mask")}
        rows.append(session.run(["logits"], feed)[0][0])
    return softmax(np.asarray(rows, dtype=np.float64), axis=1)


@pytest.mark.slow
def test_mlflow_onnx_int8_student_is_judged_against_a_torch_teacher(tracking, tiny_classifiers, tmp_path):
    from scipy.stats import entropy
    from sklearn.metrics import accuracy_score

    from mlflow_metacompress.models.onnx_export import export, quantize_int8
    from mlflow_metacompress.models.onnx_logging import log_onnx_classifier
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, student = tiny_classifiers
    path = quantize_int8(export(student, tok, tmp_path / "fp32.onnx"), tmp_path / "int8.onnx")
    with mlflow.start_run():
        log_code_classifier(teacher, tok, name="t", registered_model_name="teacher")
        log_onnx_classifier(path, name="s", registered_model_name="student-int8", tags={"k": "v"})
    loaded = mlflow.pyfunc.load_model("models:/student-int8/1")
    assert "onnx" in loaded.metadata.flavors  # a plain mlflow.onnx model, as deployed
    assert loaded.metadata.metadata["metacompress"]["quantization"]["dtype"] == "int8"
    df = toy_frame(48, seed=5)
    result = _evaluate(
        "models:/student-int8/1",
        df,
        {"teacher": "models:/teacher/1", "transforms": [], "batch_size": 1, "bootstrap_samples": 0},
    )
    texts, y = df["func"].tolist(), df["target"].to_numpy()
    pt = teacher.predict_proba(tok, texts, batch_size=1).astype(np.float64)
    ps = _direct_probs(path, tok, texts)
    assert result.metrics["mr1_violation_rate"] == pytest.approx(np.mean(pt.argmax(1) != ps.argmax(1)))
    assert result.metrics["mr2_mean_kl"] == pytest.approx(np.mean(entropy(pt, ps, axis=1)), abs=1e-5)
    assert result.metrics["student_accuracy"] == pytest.approx(accuracy_score(y, ps.argmax(1)))
    assert result.metrics["teacher_accuracy"] == pytest.approx(accuracy_score(y, pt.argmax(1)))


@pytest.mark.slow
def test_mlflow_onnx_model_without_metadata_is_refused_by_name(tracking, tiny_classifiers, tmp_path):
    import onnx

    from mlflow_metacompress.adapters.checks import MetaCompressInputError
    from mlflow_metacompress.models.onnx_export import export
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, student = tiny_classifiers
    proto = onnx.load(str(export(student, tok, tmp_path / "m.onnx")))
    del proto.metadata_props[:]
    with mlflow.start_run():
        log_code_classifier(teacher, tok, name="t", registered_model_name="teacher")
        bare = mlflow.onnx.log_model(proto, name="bare")
    with pytest.raises(MetaCompressInputError, match="student is an mlflow.onnx model .* no metacompress metadata"):
        _evaluate(bare.model_uri, toy_frame(8), {"teacher": "models:/teacher/1", "transforms": []})


@pytest.mark.slow
def test_attacks_query_through_onnxruntime(tracking, tiny_classifiers, tmp_path, capsys):
    from mlflow_metacompress.attacks.runner import run_attack
    from mlflow_metacompress.cli import main
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    pytest.importorskip("tree_sitter_c")
    tok, teacher, _ = tiny_classifiers
    with mlflow.start_run():
        info = log_code_classifier(teacher, tok, name="t")
    df = toy_frame(6, seed=2)
    data = tmp_path / "rows.jsonl"
    df.to_json(data, orient="records", lines=True)
    torch_report = run_attack("wir_random_zeng_2022", info.model_uri, df, ["func"], df["target"], "c", budget=20)
    args = ["attack", "--model", info.model_uri, "--data", str(data), "--attack", "wir_random_zeng_2022"]
    args += ["--budget", "20", "--language", "c", "--inference", "onnxruntime", "--output", str(tmp_path / "o.parquet")]
    assert main(args) == 0
    capsys.readouterr()
    a, b = torch_report.table(), pd.read_parquet(tmp_path / "o.parquet")
    assert a["status"].tolist() == b["status"].tolist() and a["queries"].tolist() == b["queries"].tolist()
    with pytest.raises(SystemExit):
        main(args[:-4] + ["--inference", "tensorrt"])
    assert "invalid choice: 'tensorrt'" in capsys.readouterr().err


@pytest.mark.slow
def test_evaluator_attacks_and_speed_run_on_onnxruntime(tracking, tiny_classifiers):
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    pytest.importorskip("tree_sitter_c")
    tok, teacher, student = tiny_classifiers
    with mlflow.start_run():
        log_code_classifier(teacher, tok, name="t", registered_model_name="teacher")
        s = log_code_classifier(student, tok, name="s")
    df = toy_frame(12, seed=3)
    base = {
        "teacher": "models:/teacher/1",
        "transforms": [],
        "attacks": ["wir_random_zeng_2022"],
        "attack_budget": 20,
        "language": "c",
        "bootstrap_samples": 0,
        "use_cache": False,
    }
    torch_result = _evaluate(s.model_uri, df, base)
    ort_result = _evaluate(s.model_uri, df, base | {"inference": "onnxruntime", "measure_speed": True})
    attack_keys = [k for k in torch_result.metrics if k.startswith("attack_")]
    assert attack_keys
    for key in attack_keys:
        assert ort_result.metrics[key] == pytest.approx(torch_result.metrics[key], abs=1e-5), key
    assert ort_result.metrics["student_speedup"] > 0  # both models timed through ONNX Runtime


@pytest.mark.slow
def test_sessions_follow_the_thread_setting(tiny_classifiers, tmp_path):
    from mlflow_metacompress.models.onnx_export import export
    from mlflow_metacompress.models.onnx_runtime import OnnxClassifier
    from mlflow_metacompress.threads import using

    tok = tiny_classifiers[0]
    model = OnnxClassifier(export(_classifier(tok), tok, tmp_path / "m.onnx"))
    for count in (1, 2):
        with using(count):
            options = model.session().get_session_options()
            assert (options.intra_op_num_threads, options.inter_op_num_threads) == (count, 1)
    assert model.session(1) is model.session(1)  # one session per thread count
    # without the file (an mlflow.onnx model whose store is out of reach), MLflow's own session answers
    import onnxruntime as ort

    bare = OnnxClassifier(None, session=ort.InferenceSession(str(model.path), providers=["CPUExecutionProvider"]))
    expected = model.predict_logits(None, TOY_CODE, threads=1)
    np.testing.assert_allclose(bare.predict_logits(None, TOY_CODE), expected, atol=1e-5)
