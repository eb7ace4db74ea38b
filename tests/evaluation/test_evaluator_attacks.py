"""Attacks through the evaluator: per-model attack metrics, relations on the student's
adversarial examples, and the adversarial parquet artifact (flips re-checked)."""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest

from tests.conftest import toy_frame
from tests.support.attacks import identifier_student as student
from tests.support.attacks import length_bucket_teacher as teacher

ATTACKS = ["mhm_zhang_2020", "alert_yang_2022"]


@pytest.mark.slow
def test_attacks_through_evaluate(tracking):
    df = toy_frame(60, seed=2)
    # labels = what each model predicts on the original, so both start fully correct
    df["target"] = teacher(df).argmax(1)
    keep = student(df).argmax(1) == df["target"].to_numpy()
    df = df[keep].reset_index(drop=True).head(10)
    assert len(df) >= 4
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=student,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher,
                "language": "c",
                "transforms": [],
                "attacks": ATTACKS,
                "attack_budget": 60,
                "progress": False,
            },
        )
    m = result.metrics
    for attack in ATTACKS:
        for role in ("teacher", "student"):
            for key in ("asr", "mean_queries", "accuracy_under_attack", "accuracy_drop"):
                assert f"attack_{attack}/{role}_{key}" in m, (attack, role, key)
            assert m[f"attack_{attack}/{role}_mean_queries"] <= 60
        assert m[f"attack_{attack}/student_asr"] > 0.5
        drop_s = m[f"attack_{attack}/student_accuracy_drop"]
        assert drop_s == pytest.approx(1.0 - m[f"attack_{attack}/student_accuracy_under_attack"])
        assert m[f"attack_{attack}/excess_drop"] == pytest.approx(drop_s - m[f"attack_{attack}/teacher_accuracy_drop"])
        if m[f"attack_{attack}/teacher_accuracy_drop"] > 0:
            t = m[f"attack_{attack}/teacher_accuracy_drop"]
            assert m[f"attack_{attack}/excess_drop_pct"] == pytest.approx(100 * (drop_s - t) / t)
        # relations on the student's adversarial examples: the student flipped every one
        assert m[f"student_accuracy/attack_{attack}"] == 0.0
        table = pd.read_parquet(
            mlflow.artifacts.download_artifacts(
                run_id=run.info.run_id, artifact_path=f"metacompress/attacks/{attack}.parquet"
            )
        )
        won = table[table["status"] == "succeeded"]
        assert len(won) and "diff" in table
        requery = student(pd.DataFrame({"func": won["adversarial_code"]})).argmax(1)
        assert (requery != df["target"].to_numpy()[won["index"].astype(int).to_numpy()]).all()
    assert "attack_mhm_zhang_2020/student_asr" in mlflow.get_run(run.info.run_id).data.metrics


def test_attacks_need_labels(tracking):
    with mlflow.start_run(), pytest.raises(Exception, match="attacks need labels"):
        mlflow.models.evaluate(
            model=student,
            data=toy_frame(6)[["func"]],
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": teacher, "transforms": [], "attacks": ["mhm_zhang_2020"]},
        )


class _LengthTeacher(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return teacher(model_input)


def _logged_teacher() -> str:
    """The toy teacher logged as a pyfunc (it has an identity, so its reports are memoised)."""
    with mlflow.start_run():
        return mlflow.pyfunc.log_model(name="teacher", python_model=_LengthTeacher(), pip_requirements=[]).model_uri


def _counting_attacks(monkeypatch) -> list[str]:
    """``run_attack`` wrapped to record each attack it runs (the list it returns grows)."""
    from mlflow_metacompress.attacks import runner

    calls: list[str] = []
    real = runner.run_attack

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_attack", counting)
    return calls


@pytest.mark.slow
def test_a_logged_teacher_is_attacked_once_per_process_for_several_students(tracking, monkeypatch):
    """Two students judged against one logged teacher on the same rows: the teacher's
    attack runs once, and the second evaluation logs the same teacher metrics."""
    from mlflow_metacompress.attacks import memo

    monkeypatch.setattr(memo, "_TEACHER_REPORTS", {})
    calls, uri = _counting_attacks(monkeypatch), _logged_teacher()
    df = toy_frame(40, seed=3)
    df["target"] = teacher(df).argmax(1)
    config = {
        "teacher": uri,
        "language": "c",
        "transforms": [],
        "attacks": ["mhm_zhang_2020"],
        "attack_budget": 20,
        "progress": False,
    }
    results = []
    for model in (student, lambda frame: student(frame)[:, ::-1]):
        with mlflow.start_run():
            results.append(
                mlflow.models.evaluate(
                    model=model,
                    data=df.head(8),
                    targets="target",
                    model_type="metacompress",
                    evaluators="metacompress",
                    evaluator_config=config,
                ).metrics
            )
    assert len(calls) == 3  # teacher once, each student once
    for key in ("asr", "accuracy_drop", "mean_queries"):
        assert results[0][f"attack_mhm_zhang_2020/teacher_{key}"] == results[1][f"attack_mhm_zhang_2020/teacher_{key}"]
    with mlflow.start_run():  # another budget: attacked again
        mlflow.models.evaluate(
            model=student,
            data=df.head(8),
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={**config, "attack_budget": 10},
        )
    assert len(calls) == 5


@pytest.mark.slow
def test_the_teachers_attack_is_read_from_the_cache_folder_by_a_new_process(tracking, monkeypatch, tmp_path):
    """Issue 42: a new process (the in-process memo emptied) reads the teacher's report from
    the cache folder instead of attacking again; without the cache, or with an unreadable
    file, it attacks again (and rewrites the file)."""
    from mlflow_metacompress.attacks import memo

    calls, uri = _counting_attacks(monkeypatch), _logged_teacher()
    df = toy_frame(40, seed=5)
    df["target"] = teacher(df).argmax(1)
    config = {
        "teacher": uri,
        "language": "c",
        "transforms": [],
        "attacks": ["mhm_zhang_2020"],
        "attack_budget": 20,
        "progress": False,
        "cache_dir": str(tmp_path / "cache"),
    }

    def evaluate(**extra):
        monkeypatch.setattr(memo, "_TEACHER_REPORTS", {})  # a new process
        with mlflow.start_run():
            return mlflow.models.evaluate(
                model=student,
                data=df.head(8),
                targets="target",
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={**config, **extra},
            ).metrics

    first = evaluate()
    stored = list((tmp_path / "cache").glob("attack-report-*.pkl"))
    assert len(calls) == 2 and len(stored) == 1  # teacher and student; the teacher's report stored
    second = evaluate()
    assert len(calls) == 3  # only the student again
    names = [k for k in first if k.startswith("attack_mhm_zhang_2020/teacher_")]
    assert names and all(first[k] == second[k] for k in names)
    evaluate(use_cache=False)
    assert len(calls) == 5  # no cache: the teacher is attacked again
    stored[0].write_bytes(b"truncated")
    evaluate()
    assert len(calls) == 7  # an unreadable file is ignored ...
    evaluate()
    assert len(calls) == 8  # ... and rewritten whole


@pytest.mark.slow
def test_a_teacher_judged_as_its_own_student_is_attacked_once(tracking, monkeypatch):
    """The three-teacher study attacks each teacher alone to choose the budget (the teacher in
    both roles): the student role reuses the teacher's report; another student does not."""
    from mlflow_metacompress.attacks import memo

    monkeypatch.setattr(memo, "_TEACHER_REPORTS", {})
    calls, uri = _counting_attacks(monkeypatch), _logged_teacher()
    df = toy_frame(40, seed=7)
    df["target"] = teacher(df).argmax(1)
    config = {"teacher": uri, "language": "c", "transforms": [], "attacks": ["mhm_zhang_2020"], "attack_budget": 20,
              "progress": False}  # fmt: skip
    with mlflow.start_run():
        m = mlflow.models.evaluate(
            model=uri, data=df.head(8), targets="target", model_type="metacompress", evaluators="metacompress",
            evaluator_config=config,
        ).metrics  # fmt: skip
    assert len(calls) == 1
    for key in ("asr", "accuracy_drop", "mean_queries"):
        assert m[f"attack_mhm_zhang_2020/student_{key}"] == m[f"attack_mhm_zhang_2020/teacher_{key}"]
    with mlflow.start_run():
        mlflow.models.evaluate(
            model=student, data=df.head(8), targets="target", model_type="metacompress", evaluators="metacompress",
            evaluator_config=config,
        )  # fmt: skip
    assert len(calls) == 2  # the teacher's report from the memo, the other student attacked
