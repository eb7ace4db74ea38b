"""Transformed variants through the evaluator: ``/t`` and ``/metamorphic`` metrics,
flip rates, applicable rates, parse failures and the per-sample table."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.relations import evaluate_relations
from mlflow_metacompress.transforms import TransformStatus, list_transforms, transform
from tests.conftest import toy_frame


def evaluate(model, data, config):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=model,
            data=data,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    return run.info.run_id, result


@pytest.mark.slow
def test_transforms_all_logs_variant_metrics(tracking, tiny_classifiers):
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, student = tiny_classifiers
    df = toy_frame(30)
    df.loc[len(df)] = {"func": "int broken( { return ;", "target": 0}
    with mlflow.start_run():
        t = log_code_classifier(teacher, tok, registered_model_name="t")
        s = log_code_classifier(student, tok, registered_model_name="s")
    run_id, result = evaluate(
        s.model_uri, df, {"teacher": t.model_uri, "language": "c", "transforms": "all", "progress": False}
    )
    m = result.metrics
    assert m["transform_parse_failures"] == 1.0
    names = list_transforms("c")
    assert set(names) >= {"rename_variables", "rename_function", "for_to_while", "swap_if_else"}
    codes = df["func"].tolist()
    for name in ["rename_variables", "for_to_while", "swap_if_else"]:
        # independent recomputation: transform each sample, run both models directly
        res = [transform(c, name, "c", seed=0) if i < 30 else None for i, c in enumerate(codes)]
        changed = [i for i, r in enumerate(res) if r is not None and r.status == TransformStatus.CHANGED]
        assert m[f"transform_applicable_rate/{name}"] == pytest.approx(len(changed) / 30)
        new = [res[i].code for i in changed]
        pt, ps = teacher.predict_proba(tok, new), student.predict_proba(tok, new)
        expected = evaluate_relations(pt, ps, df["target"].to_numpy()[changed]).metrics
        for key in ("mr1_violation_rate", "mr2_mean_kl", "mr4_eca", "any_violation_rate", "student_accuracy"):
            assert m[f"{key}/{name}"] == pytest.approx(expected[key], abs=1e-5), (name, key)
        base_t = teacher.predict_proba(tok, [codes[i] for i in changed]).argmax(1)
        assert m[f"teacher_flip_rate/{name}"] == pytest.approx(np.mean(pt.argmax(1) != base_t))
    assert "mr1_violation_rate/metamorphic" in m and "student_flip_rate/metamorphic" in m
    per = pd.read_parquet(
        mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/per_sample.parquet")
    )
    assert {"original", "rename_variables"} <= set(per["variant"])
    renamed = per[per["variant"] == "rename_variables"]
    assert (renamed["code"].to_numpy() != df["func"].to_numpy()[renamed["row"].to_numpy()]).all()
    failures = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path="metacompress/transform_parse_failures.csv"
    )
    assert pd.read_csv(failures)["row"].tolist() == [30]
    logged = mlflow.get_run(run_id).data.metrics
    assert logged["mr1_violation_rate/metamorphic"] == pytest.approx(m["mr1_violation_rate/metamorphic"])


@pytest.mark.slow
def test_language_detection_warns_and_clone_pairs_transform_first_column(tracking, caplog):
    df = pd.DataFrame({"func1": toy_frame(12)["func"], "func2": toy_frame(12, seed=1)["func"], "target": [0, 1] * 6})
    seen = []

    def model(frame):
        seen.append(frame.copy())
        h = frame["func1"].str.len().to_numpy() % 7 / 10 + 0.2
        return np.stack([h, 1 - h], axis=1)

    with caplog.at_level("WARNING"):
        _, result = evaluate(model, df, {"teacher": model, "transforms": ["rename_variables"], "progress": False})
    assert "detected 'c'" in caplog.text
    assert result.metrics["mr1_violation_rate/rename_variables"] == 0.0  # identical models
    variant_frames = [f for f in seen if not f["func1"].isin(df["func1"]).all()]
    assert variant_frames and all(f["func2"].isin(df["func2"]).all() for f in variant_frames)


def test_unknown_transform_is_rejected(tracking):
    with pytest.raises(Exception, match=r"not available for 'c'"):
        evaluate(
            lambda f: np.tile([0.5, 0.5], (len(f), 1)),
            toy_frame(4),
            {"teacher": lambda f: np.tile([0.5, 0.5], (len(f), 1)), "language": "c", "transforms": ["nope"]},
        )
