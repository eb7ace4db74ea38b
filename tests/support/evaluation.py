"""Helpers of the evaluator tests: counting and hash-based predictors, runs of
``mlflow.models.evaluate`` (logged, static, Hugging Face, scikit-learn) and a shared frame."""

from __future__ import annotations

import zlib

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.predictors import Predictor
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.loop import EvaluationOutcome, run_evaluation
from tests.conftest import TOY_CODE, random_probs, toy_frame

VALIDATION_CALLS = {"n": 0}


def counting_teacher(frame):
    VALIDATION_CALLS["n"] += 1
    return np.tile([0.7, 0.3], (len(frame), 1))


def counting_student(frame):
    VALIDATION_CALLS["n"] += 1
    return np.tile([0.6, 0.4], (len(frame), 1))


def run_and_expect(df, config, match, model=counting_student, targets="target"):
    VALIDATION_CALLS["n"] = 0
    with mlflow.start_run() as run:
        with pytest.raises(Exception, match=match):
            mlflow.models.evaluate(
                model=model,
                data=df,
                targets=targets,
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={"transforms": [], **config},
            )
    data = mlflow.get_run(run.info.run_id).data
    assert data.metrics == {}, "nothing may be logged when validation fails"
    assert not mlflow.MlflowClient().list_artifacts(run.info.run_id, "metacompress")
    return VALIDATION_CALLS["n"]


def hash_probs(codes: list[str], salt: int) -> np.ndarray:
    """Deterministic per-code probabilities (3 classes): any rewrite may change them."""
    rows = [
        random_probs(np.random.default_rng(zlib.crc32(f"{salt}:{c}".encode())), 1, 3, sharpness=2.0)[0] for c in codes
    ]
    return np.stack(rows)


def teacher_fn(frame: pd.DataFrame) -> np.ndarray:
    return hash_probs(frame["func"].tolist(), 0)


def student_fn(frame: pd.DataFrame) -> np.ndarray:
    return 0.7 * hash_probs(frame["func"].tolist(), 0) + 0.3 * hash_probs(frame["func"].tolist(), 1)


def hash_predictors():
    return (
        Predictor("teacher", teacher_fn, cache_dir=None, progress=False),
        Predictor("student", student_fn, cache_dir=None, progress=False),
    )


def labelled(n: int = 30, seed: int = 5) -> pd.DataFrame:
    df = toy_frame(n, seed=seed)
    df["target"] = np.random.default_rng(seed).integers(0, 3, n)
    return df


def evaluate_engine(df: pd.DataFrame, raw: dict, y: np.ndarray | None = None) -> tuple[EvaluationOutcome, object]:
    cfg = parse_config({"teacher": teacher_fn, "progress": False, **raw}, df, model_given=True)
    teacher, student = hash_predictors()
    return run_evaluation(df, y, cfg, teacher, student), cfg


CWES = ["CWE-119", "CWE-20", "CWE-399", "CWE-476"]


def shared_frame(n: int = 160, seed: int = 0, students: int = 2) -> pd.DataFrame:
    """Code, a CWE column, the teacher's probabilities (t0, t1), students' (s0, s1, u0, u1, …) and the label."""
    rng = np.random.default_rng(seed)
    t = random_probs(rng, n, 2, 2.0)
    df = pd.DataFrame(
        {
            "func": [TOY_CODE[i % len(TOY_CODE)] for i in range(n)],
            "cwe": [CWES[i % 3 if i % 7 else 3] for i in range(n)],
            "t0": t[:, 0],
            "t1": t[:, 1],
        }
    )
    for k, prefix in zip(range(students), "suvw", strict=False):  # up to four students
        s = np.clip(t + np.random.default_rng(seed + 10 + k).normal(0, 0.15 + 0.1 * k, t.shape), 0.01, None)
        s /= s.sum(axis=1, keepdims=True)
        df[f"{prefix}0"], df[f"{prefix}1"] = s[:, 0], s[:, 1]
    df["target"] = (rng.random(n) < t[:, 1]).astype(int)
    return df


def static_run(df: pd.DataFrame, prefix: str, name: str, uri: str | None = None, **config) -> str:
    """A static-mode evaluation of the student whose probabilities are ``<prefix>0``, ``<prefix>1``,
    tagged as the gate tags it with the student's URI (``models:/<name>/1`` unless given)."""
    with mlflow.start_run(run_name=name) as run:
        mlflow.set_tag("metacompress.gate_model", uri or f"models:/{name}/1")
        mlflow.models.evaluate(
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher_prob_columns": ["t0", "t1"],
                "student_prob_columns": [f"{prefix}0", f"{prefix}1"],
                **config,
            },
        )
    return run.info.run_id


def evaluate_logged(model, data, config, targets="target"):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=model,
            data=data,
            targets=targets,
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    return run.info.run_id, result


def sklearn_pair(df):
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    def fit(C):
        return make_pipeline(
            ColumnTransformer([("v", HashingVectorizer(n_features=512), "func")]), LogisticRegression(C=C)
        ).fit(df[["func"]], df["target"])

    return fit(10.0), fit(0.05)


HF_LABELS = ["SAFE", "VULN"]


HF_REQS = ["transformers", "torch"]  # explicit: MLflow's inferred requirements add torchvision, absent here


HF_TOL = dict(rel=1e-5, abs=1e-6)  # the pipeline batches with padding; float32 noise only


def evaluate_hf(student, teacher, df: pd.DataFrame, **config):
    with mlflow.start_run():
        return mlflow.models.evaluate(
            model=student,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher,
                "code_columns": ["func"],
                "transforms": [],
                "progress": False,
                **config,
            },
        ).metrics


def assert_same_metrics(got: dict[str, float], expected: dict[str, float]) -> None:
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, **HF_TOL), key
