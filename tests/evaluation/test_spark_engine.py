"""The spark engine (``evaluator_config={"engine": "spark"}``) against the local engine: the
same metrics (to 1e-9) and per-sample rows with transformations on, for single functions and
clone pairs, and with attacks on (metrics, query counts and the attack tables); Spark jobs in
the caller's active session; models really run in Spark's Python
workers; a callable teacher refused; a second student reusing the cached teacher."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from tests.conftest import toy_frame

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

pyspark = pytest.importorskip("pyspark")

TRANSFORMS = ["rename_variables", "for_to_while", "swap_if_else", "rename_function"]


@pytest.fixture(scope="module")
def spark():
    """One local[2] session for the module (Spark startup is the slow part). PySpark's
    SparkContext installs its own SIGINT handler; it is put back afterwards, so later test
    files in the same worker process see Python's default."""
    import signal

    from pyspark.sql import SparkSession

    previous = signal.getsignal(signal.SIGINT)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("metacompress-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()
    signal.signal(signal.SIGINT, previous)


def _log_model(weight: float, columns: list[str], calls: Path, example: pd.DataFrame) -> str:
    """A tiny code classifier (a seeded hash of the code through a sigmoid) that appends
    ``<pid> <rows>`` to ``calls`` on every predict; defined here so cloudpickle ships it by value."""

    class HashClassifier(mlflow.pyfunc.PythonModel):
        def __init__(self, weight, columns, calls):
            self.weight, self.columns, self.calls = weight, columns, str(calls)

        def predict(self, context, model_input, params=None):
            x = np.zeros(len(model_input))
            for k, col in enumerate(self.columns):
                x += (k + 1) * np.array([sum(ord(c) * (i % 7 + 1) for i, c in enumerate(s)) for s in model_input[col]])
            p = 1 / (1 + np.exp(-3 * np.sin(x * self.weight)))
            with open(self.calls, "a") as f:
                f.write(f"{os.getpid()} {len(model_input)}\n")
            return pd.DataFrame({"0": 1 - p, "1": p})

    info = mlflow.pyfunc.log_model(
        name="m",
        python_model=HashClassifier(weight, columns, calls),
        input_example=example[columns].head(2),
        pip_requirements=[],  # requirement inference (a subprocess per model, seconds) is not under test
    )
    calls.write_text("")  # forget the signature inference call
    return info.model_uri


def _calls(path: Path) -> list[tuple[int, int]]:
    return [tuple(map(int, line.split())) for line in path.read_text().splitlines()]


def _evaluate(student: str, data: pd.DataFrame, config: dict) -> tuple[dict[str, float], pd.DataFrame]:
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=student,
            data=data,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    per = pd.read_parquet(
        mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress/per_sample.parquet")
    )
    return result.metrics, per


def _assert_same(local: tuple[dict, pd.DataFrame], spark: tuple[dict, pd.DataFrame]) -> None:
    (m_local, p_local), (m_spark, p_spark) = local, spark
    assert set(m_spark) == set(m_local)
    for key, value in m_local.items():
        assert m_spark[key] == pytest.approx(value, abs=1e-9, nan_ok=True), key
    order = ["variant", "row"]
    a = p_local.sort_values(order).reset_index(drop=True)
    b = p_spark.sample(frac=1, random_state=0).sort_values(order).reset_index(drop=True)  # any order
    pd.testing.assert_frame_equal(a, b, check_exact=False, atol=1e-9, rtol=0)


def _jobs(spark) -> int:
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup()
    return max(ids, default=-1)


def test_single_function_same_numbers_as_local(tracking, spark, tmp_path):
    df = toy_frame(24)
    df.loc[len(df)] = {"func": "int broken( { return ;", "target": 0}
    with mlflow.start_run():
        teacher = _log_model(0.013, ["func"], tmp_path / "t.calls", df)
        student = _log_model(0.011, ["func"], tmp_path / "s.calls", df)
    config = {
        "teacher": teacher,
        "language": "c",
        "transforms": TRANSFORMS,
        "progress": False,
        "use_cache": False,
        "bootstrap_samples": 50,
    }
    local = _evaluate(student, df, config)
    assert {pid for pid, _ in _calls(tmp_path / "t.calls")} == {os.getpid()}
    (tmp_path / "t.calls").write_text("")
    before = _jobs(spark)
    on_spark = _evaluate(student, df, {**config, "engine": "spark"})
    assert _jobs(spark) > before  # the evaluation ran as jobs of the caller's active session
    assert not spark.sparkContext._jsc.sc().isStopped()  # the caller's session is left running
    _assert_same(local, on_spark)
    assert set(local[1]["variant"]) >= {"original", "rename_variables"}
    assert local[0]["transform_parse_failures"] == 1.0
    # the teacher ran in Spark's Python workers (one row on the driver names its classes)
    calls = _calls(tmp_path / "t.calls")
    assert sum(n for pid, n in calls if pid != os.getpid()) == len(on_spark[1])
    assert sum(n for pid, n in calls if pid == os.getpid()) == 1


def test_clone_pairs_same_numbers_as_local(tracking, spark, tmp_path):
    df = pd.DataFrame({"func1": toy_frame(16)["func"], "func2": toy_frame(16, seed=1)["func"], "target": [0, 1] * 8})
    with mlflow.start_run():
        teacher = _log_model(0.017, ["func1", "func2"], tmp_path / "t.calls", df)
        student = _log_model(0.019, ["func1", "func2"], tmp_path / "s.calls", df)
    config = {
        "teacher": teacher,
        "language": "c",
        "transforms": TRANSFORMS,
        "progress": False,
        "use_cache": False,
        "bootstrap_samples": 50,
    }
    parsed_before = "tree_sitter" in sys.modules
    on_spark = _evaluate(student, df, {**config, "engine": "spark"})
    if not parsed_before:  # run alone, the driver never imports tree-sitter: the executors parse
        assert "tree_sitter" not in sys.modules
    local = _evaluate(student, df, config)
    _assert_same(local, on_spark)
    renamed = on_spark[1][on_spark[1]["variant"] == "rename_variables"]
    assert len(renamed) and (renamed["code"].to_numpy() != df["func1"].to_numpy()[renamed["row"].to_numpy()]).all()


def test_callable_teacher_is_refused_naming_supported_kinds(tracking, spark, tmp_path):
    df = toy_frame(6)
    with mlflow.start_run():
        student = _log_model(0.011, ["func"], tmp_path / "s.calls", df)
    config = {"teacher": lambda f: np.tile([0.5, 0.5], (len(f), 1)), "engine": "spark", "progress": False}
    with pytest.raises(Exception, match=r"teacher is a function.*models:/.*runs:/"):
        _evaluate(student, df, config)
    assert _calls(tmp_path / "s.calls") == []  # refused before any model ran


def test_unknown_engine_is_rejected(tracking, tmp_path):
    with pytest.raises(Exception, match=r"engine.*'local' or 'spark'.*'dask'"):
        _evaluate(
            lambda f: np.tile([0.5, 0.5], (len(f), 1)),
            toy_frame(4),
            {"teacher": lambda f: np.tile([0.5, 0.5], (len(f), 1)), "engine": "dask"},
        )


def test_second_student_reuses_cached_teacher_predictions(tracking, spark, tmp_path):
    df = toy_frame(12)
    with mlflow.start_run():
        teacher = _log_model(0.013, ["func"], tmp_path / "t.calls", df)
        first = _log_model(0.011, ["func"], tmp_path / "s1.calls", df)
        second = _log_model(0.007, ["func"], tmp_path / "s2.calls", df)
    config = {
        "teacher": teacher,
        "language": "c",
        "transforms": TRANSFORMS,
        "progress": False,
        "engine": "spark",
        "bootstrap_samples": 50,
    }
    m1, per1 = _evaluate(first, df, config)
    ran = sum(n for _, n in _calls(tmp_path / "t.calls"))
    assert ran == len(per1) + 1
    m2, per2 = _evaluate(second, df, config)
    assert sum(n for _, n in _calls(tmp_path / "t.calls")) == ran  # the teacher did not run again
    assert sum(n for _, n in _calls(tmp_path / "s2.calls")) == len(per2) + 1
    teacher_cols = [c for c in per1 if c.startswith("teacher_prob_")]
    a, b = (p.sort_values(["variant", "row"]).reset_index(drop=True) for p in (per1, per2))
    pd.testing.assert_frame_equal(a[teacher_cols], b[teacher_cols], check_exact=True)


def test_engine_uses_the_active_session_and_leaves_it_running(spark):
    from mlflow_metacompress.evaluation.spark_session import active_session, session

    with session() as used:
        assert used is spark and active_session() is spark
    assert spark.range(3).count() == 3  # not stopped: it belongs to the caller


def test_without_active_session_a_local_session_is_started_and_stopped(monkeypatch):
    from pyspark.sql import SparkSession

    from mlflow_metacompress.evaluation.spark_session import session

    class Fake:
        stopped = False

        def stop(self):
            self.stopped = True

    fake, masters = Fake(), []
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(SparkSession.Builder, "master", lambda self, m: masters.append(m) or self)
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: fake)
    with session() as used:
        assert used is fake and not fake.stopped
    assert masters == ["local[*]"] and fake.stopped


ATTACKS = ["wir_random_zeng_2022", "mhm_zhang_2020"]


def _attack_tables(run_id: str) -> dict[str, pd.DataFrame]:
    return {
        a: pd.read_parquet(
            mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=f"metacompress/attacks/{a}.parquet")
        )
        for a in ATTACKS
    }


def test_attacks_same_numbers_and_tables_as_local(tracking, spark, tmp_path, monkeypatch):
    """Attacks on the driver (default) and split across executors (``attack_engine="spark"``)
    against the local engine: the same metrics, per-sample rows and attack tables, budgets
    and per-sample query counts included."""
    df = toy_frame(8, seed=3)
    with mlflow.start_run():
        teacher = _log_model(0.013, ["func"], tmp_path / "t.calls", df)
        student = _log_model(0.011, ["func"], tmp_path / "s.calls", df)
    config = {
        "teacher": teacher,
        "language": "c",
        "transforms": ["rename_variables"],
        "attacks": ATTACKS,
        "attack_budget": 4,
        "progress": False,
        "use_cache": False,
        "bootstrap_samples": 20,
    }
    from mlflow_metacompress.evaluation import spark_attacks

    executor_reports = {}
    real_reports = spark_attacks.spark_attack_reports
    monkeypatch.setattr(
        spark_attacks,
        "spark_attack_reports",
        lambda *a, **k: executor_reports.update(real_reports(*a, **k)) or executor_reports,
    )
    runs, calls = {}, {}
    for name, extra in (
        ("local", {}),
        ("spark", {"engine": "spark"}),
        ("executors", {"engine": "spark", "attack_engine": "spark"}),
    ):
        (tmp_path / "s.calls").write_text("")
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(
                model=student,
                data=df,
                targets="target",
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={**config, **extra},
            )
        per = pd.read_parquet(
            mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress/per_sample.parquet")
        )
        runs[name] = (result.metrics, per, _attack_tables(run.info.run_id))
        calls[name] = _calls(tmp_path / "s.calls")
    metrics = runs["local"][0]
    for name in ("spark", "executors"):
        _assert_same(runs["local"][:2], runs[name][:2])
        for attack in ATTACKS:
            a, b = (runs[e][2][attack] for e in ("local", name))
            assert len(a) == len(df)
            a = a.sort_values("index").reset_index(drop=True)
            b = b.sample(frac=1, random_state=0).sort_values("index").reset_index(drop=True)  # any order
            pd.testing.assert_frame_equal(a, b, check_exact=False, atol=1e-9, rtol=0)
            assert a["queries"].sum() > len(df) and (a["queries"] <= 4).all()
    for attack in ATTACKS:
        for role in ("teacher", "student"):
            assert 0 < metrics[f"attack_{attack}/{role}_mean_queries"] <= 4
    assert any(metrics[f"attack_{a}/student_asr"] > 0 for a in ATTACKS)
    per = runs["executors"][1]
    adversarial_rows = int(per["variant"].str.startswith("attack_").sum())
    assert adversarial_rows
    # with attack_engine="spark" the driver ran the student on one row (its class names) and
    # the adversarial examples only; every attack query ran in Spark's Python workers
    driver = sum(n for pid, n in calls["executors"] if pid == os.getpid())
    workers = sum(n for pid, n in calls["executors"] if pid != os.getpid())
    assert driver == 1 + adversarial_rows
    assert workers > len(per) - adversarial_rows  # spark_udf's rows plus the attacks' queries
    assert sum(n for pid, n in calls["spark"] if pid == os.getpid()) > driver  # attacks on the driver
    # the recipes' details (which substitutes they drew) come back from the executors too
    assert set(executor_reports) == {(a, r) for a in ATTACKS for r in ("teacher", "student")}
    assert all(report.details.get("substitutes") for report in executor_reports.values())


def test_attack_engine_spark_needs_the_spark_engine(tracking, tmp_path):
    def fn(f):
        return np.tile([0.5, 0.5], (len(f), 1))

    with pytest.raises(Exception, match=r"attack_engine.*'spark' needs engine 'spark'"):
        _evaluate(fn, toy_frame(4), {"teacher": fn, "attacks": ATTACKS, "attack_engine": "spark"})
    with pytest.raises(Exception, match=r"attack_engine.*'driver' or 'spark'.*'executor'"):
        _evaluate(fn, toy_frame(4), {"teacher": fn, "engine": "spark", "attack_engine": "executor"})


def test_deviation_search_on_executors_equals_local(tracking, spark, tmp_path):
    """``evaluator_config["deviation"]`` on the spark engine: rows searched on the executors
    (both models in Spark's Python workers), the same metrics and deviations table as local."""
    df = toy_frame(10, seed=4)
    with mlflow.start_run():
        teacher = _log_model(0.013, ["func"], tmp_path / "t.calls", df)
        student = _log_model(0.011, ["func"], tmp_path / "s.calls", df)
    config = {
        "teacher": teacher,
        "language": "c",
        "transforms": [],
        "progress": False,
        "use_cache": False,
        "bootstrap_samples": 50,
        "deviation": {"queries": 10, "seed": 3},
    }

    def deviations(run_id: str) -> pd.DataFrame:
        path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/deviations.parquet")
        return pd.read_parquet(path).sort_values("row").reset_index(drop=True)

    local = _evaluate(student, df, config)
    local_table = deviations(mlflow.last_active_run().info.run_id)
    (tmp_path / "t.calls").write_text("")
    on_spark = _evaluate(student, df, {**config, "engine": "spark"})
    spark_table = deviations(mlflow.last_active_run().info.run_id)
    _assert_same(local, on_spark)
    assert local[0]["deviation_rows_searched"] == len(df) and len(local_table) == local[0]["deviation_rows_found"]
    assert local[0]["deviation_rows_found"] > 0
    pd.testing.assert_frame_equal(local_table, spark_table, check_exact=False, atol=1e-9, rtol=0)
    workers = sum(n for pid, n in _calls(tmp_path / "t.calls") if pid != os.getpid())
    assert workers >= local[0]["deviation_rows_searched"]  # the search queried the teacher in Spark's workers
