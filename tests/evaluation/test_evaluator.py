"""The plugin through the real entry point with ``mlflow.models.evaluate`` on sqlite:
registered tiny Hugging Face models, a sklearn pair, static mode, and bad input."""

from __future__ import annotations

import json
from importlib.metadata import entry_points

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.relations import evaluate_relations
from tests.conftest import random_probs, toy_frame
from tests.support.evaluation import evaluate_logged as evaluate
from tests.support.evaluation import sklearn_pair as _sklearn_pair

ARTIFACTS = {"summary.json", "per_sample.parquet", "reliability.png", "kl_histogram.png", "worst_discrepancies.csv"}


def logged_artifacts(run_id):
    return {a.path.split("/", 1)[1] for a in mlflow.MlflowClient().list_artifacts(run_id, "metacompress")}


def test_entry_point_is_registered():
    eps = {ep.name: ep.value for ep in entry_points(group="mlflow.model_evaluator")}
    assert eps["metacompress"] == "mlflow_metacompress.evaluation.evaluator:MetaCompressEvaluator"


def test_can_evaluate():
    from mlflow_metacompress.evaluation.evaluator import MetaCompressEvaluator

    ev = MetaCompressEvaluator()
    assert ev.can_evaluate(model_type="metacompress", evaluator_config={})
    assert ev.can_evaluate(model_type="classifier", evaluator_config={"teacher": "models:/t/1"})
    assert not ev.can_evaluate(model_type="classifier", evaluator_config={})
    assert not ev.can_evaluate(model_type="regressor", evaluator_config={"teacher": "x"})


@pytest.mark.slow
def test_static_mode_matches_relations_and_logs_everything(tracking):
    rng = np.random.default_rng(3)
    pt, ps = random_probs(rng, 120, 2, 3.0), random_probs(rng, 120, 2, 3.0)
    y = rng.integers(0, 2, 120)
    df = pd.DataFrame({"t0": pt[:, 0], "t1": pt[:, 1], "s0": ps[:, 0], "s1": ps[:, 1], "target": y})
    run_id, result = evaluate(None, df, {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]})
    expected = evaluate_relations(pt, ps, y).metrics
    statistics = {k for k in result.metrics if k.endswith(("_ci_low", "_ci_high"))} | {"accuracy_drop_pvalue"}
    assert result.metrics.keys() == expected.keys() | statistics  # intervals: tests/core/test_statistics.py
    for k, v in expected.items():
        assert result.metrics[k] == pytest.approx(v)
    logged = mlflow.get_run(run_id).data.metrics
    assert logged["mr2_mean_kl"] == pytest.approx(expected["mr2_mean_kl"])
    assert ARTIFACTS <= logged_artifacts(run_id)
    assert set(result.artifacts) >= {"summary", "per_sample", "reliability", "kl_histogram"}
    per = pd.read_parquet(
        mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/per_sample.parquet")
    )
    assert len(per) == 120 and per["any_violation"].mean() == pytest.approx(expected["any_violation_rate"])
    summary = json.loads(
        open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/summary.json")).read()
    )
    assert summary["config"]["teacher_prob_columns"] == ["t0", "t1"]


@pytest.mark.slow
def test_sklearn_pair_and_teacher_cache(tracking):
    df = toy_frame(80)
    teacher, student = _sklearn_pair(df)
    with mlflow.start_run():
        mlflow.sklearn.log_model(
            teacher,
            name="t",
            pyfunc_predict_fn="predict_proba",
            pip_requirements=["scikit-learn"],
            registered_model_name="teacher",
            input_example=df[["func"]].head(2),
        )
        s = mlflow.sklearn.log_model(
            student,
            name="s",
            pyfunc_predict_fn="predict_proba",
            pip_requirements=["scikit-learn"],
            input_example=df[["func"]].head(2),
        )
        s2 = mlflow.sklearn.log_model(
            _sklearn_pair(df.sample(frac=1, random_state=1))[1],
            name="s2",
            pyfunc_predict_fn="predict_proba",
            pip_requirements=["scikit-learn"],
            input_example=df[["func"]].head(2),
        )
    cfg = {"teacher": "models:/teacher/1", "transforms": []}
    run_id, result = evaluate(s.model_uri, df, cfg)
    pt, ps = teacher.predict_proba(df[["func"]]), student.predict_proba(df[["func"]])
    expected = evaluate_relations(pt, ps, df["target"].to_numpy()).metrics
    for k, v in expected.items():
        assert result.metrics[k] == pytest.approx(v, abs=1e-9), k
    first = json.loads(
        open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/summary.json")).read()
    )
    assert first["teacher_rows_run"] == 80
    # a second student against the same teacher: the teacher is read from the cache
    run_id2, _ = evaluate(s2.model_uri, df, cfg)
    second = json.loads(
        open(mlflow.artifacts.download_artifacts(run_id=run_id2, artifact_path="metacompress/summary.json")).read()
    )
    assert second["teacher_rows_run"] == 0 and second["student_rows_run"] == 80


@pytest.mark.slow
def test_registered_hf_models_with_prefix(tracking, tiny_classifiers):
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, student = tiny_classifiers
    df = toy_frame(40)
    with mlflow.start_run():
        log_code_classifier(teacher, tok, registered_model_name="vuln-teacher")
        log_code_classifier(student, tok, registered_model_name="vuln-student")
    client = mlflow.MlflowClient()
    client.set_registered_model_alias("vuln-teacher", "champion", "1")
    client.set_registered_model_alias("vuln-student", "candidate", "1")
    run_id, result = evaluate(
        "models:/vuln-student@candidate",
        df,
        {
            "teacher": "models:/vuln-teacher@champion",
            "code_columns": ["func"],
            "transforms": [],
            "metric_prefix": "mc_",
        },
    )
    codes = df["func"].tolist()
    expected = evaluate_relations(
        teacher.predict_proba(tok, codes), student.predict_proba(tok, codes), df["target"].to_numpy()
    ).metrics
    for k, v in expected.items():
        assert result.metrics[f"mc_{k}"] == pytest.approx(v, abs=1e-5), k
    assert "mc_mr1_violation_rate" in mlflow.get_run(run_id).data.metrics
    assert ARTIFACTS <= logged_artifacts(run_id)


@pytest.mark.slow
def test_callable_teacher_and_clone_pairs(tracking):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "func1": ["int a() { return 1; }"] * 30,
            "func2": [f"int b() {{ return {i}; }}" for i in range(30)],
            "label": rng.integers(0, 2, 30),
        }
    )
    table = {f"int b() {{ return {i}; }}": random_probs(rng, 1, 2)[0] for i in range(30)}

    def teacher(frame):
        return pd.DataFrame(np.stack([table[c] for c in frame["func2"]]), columns=["0", "1"])

    def student(frame):  # same classes, columns in the other order
        return pd.DataFrame(np.stack([table[c][::-1] for c in frame["func2"]]), columns=["1", "0"])

    _, result = evaluate(student, df, {"teacher": teacher, "transforms": []}, targets="label")
    assert result.metrics["mr1_violation_rate"] == 0.0 and result.metrics["mr2_mean_kl"] == pytest.approx(
        0.0, abs=1e-12
    )


@pytest.mark.slow
def test_unwritable_cache_folder_warns_visibly_and_the_evaluation_still_runs(tracking, tmp_path):
    from mlflow_metacompress.evaluation.evaluator import CacheUnwritableWarning

    df = toy_frame(40)
    teacher, student = _sklearn_pair(df)
    kw = dict(pyfunc_predict_fn="predict_proba", pip_requirements=["scikit-learn"], input_example=df[["func"]].head(2))
    with mlflow.start_run():
        t = mlflow.sklearn.log_model(teacher, name="t", **kw)
        s = mlflow.sklearn.log_model(student, name="s", **kw)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # a folder below a file cannot be created, whoever runs the test
    folder = blocker / "cache"
    cfg = {"teacher": t.model_uri, "transforms": [], "cache_dir": str(folder), "progress": False}
    for _ in range(2):  # nothing is cached: the second evaluation runs both models again
        with pytest.warns(CacheUnwritableWarning, match=f"{folder} cannot be written.*runs without caching"):
            run_id, result = evaluate(s.model_uri, df, cfg)
        summary = json.loads(
            open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/summary.json")).read()
        )
        assert summary["teacher_rows_run"] == 40 and summary["student_rows_run"] == 40
    pt, ps = teacher.predict_proba(df[["func"]]), student.predict_proba(df[["func"]])
    expected = evaluate_relations(pt, ps, df["target"].to_numpy())
    assert result.metrics["mr1_violation_rate"] == pytest.approx(expected.metrics["mr1_violation_rate"])
    # a writable folder: no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheUnwritableWarning)
        evaluate(s.model_uri, df, {**cfg, "cache_dir": str(tmp_path / "cache")})
