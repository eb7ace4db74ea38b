"""``evaluator_config["deviation"]`` through ``mlflow.models.evaluate`` (issue 43, parts 5-6):
the metrics against a direct computation from the logged table and from the models
themselves, every logged deviation re-verified by calling both models again, a gate bounding
``deviation_rate``, the report's diffs, the teacher shared across students, and the refusals
(static mode, bad values) that log nothing."""

from __future__ import annotations

import re

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.artifact_names import DEVIATIONS, REPORT, SUMMARY, run_path
from tests.support.attacks import CODES

CALLS = {"teacher": 0, "student": 0}


def ntok(code: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", code))


def teacher(df: pd.DataFrame) -> np.ndarray:
    CALLS["teacher"] += len(df)
    return np.tile([0.2, 0.8], (len(df), 1))


def student(df: pd.DataFrame) -> np.ndarray:
    """Agrees with the teacher (class 1) up to 60 tokens, drifts to class 0 beyond ~95."""
    CALLS["student"] += len(df)
    z = np.array([1.4 - 0.04 * max(ntok(c) - 60, 0) for c in df["func"]])
    p = 1 / (1 + np.exp(-z))
    return np.stack([1 - p, p], axis=1)


LONG = "int big(int a) {\n" + "".join(f"  a = a + {i};\n" for i in range(40)) + "  return a;\n}\n"
DATA = pd.DataFrame({"func": [*CODES, LONG], "target": [1] * (len(CODES) + 1)})
CONFIG = {
    "teacher": teacher,
    "language": "c",
    "transforms": [],
    "progress": False,
    "bootstrap_samples": 200,
    "deviation": {"queries": 12, "search": "dflare", "seed": 1, "depth": 5},  # some rows stay agreeing: a real interval
}


def _evaluate(config: dict, model=student, data: pd.DataFrame = DATA):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=model,
            data=data,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    return result, run.info.run_id


def _artifact(run_id: str, name: str) -> str:
    return mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=run_path(name))


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, _migrated_db):
    """One evaluation for the module's read-only checks (its own copy of the migrated store)."""
    import json
    import shutil

    folder = tmp_path_factory.mktemp("deviation")
    shutil.copy(_migrated_db, folder / "mlflow.db")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setenv("MLFLOW_METACOMPRESS_CACHE", str(folder / "cache"))
        mlflow.set_tracking_uri(f"sqlite:///{folder}/mlflow.db")
        try:
            result, run_id = _evaluate(CONFIG)
            table = pd.read_parquet(_artifact(run_id, DEVIATIONS))
            report = open(_artifact(run_id, REPORT), encoding="utf-8").read()
            summary = json.loads(open(_artifact(run_id, SUMMARY), encoding="utf-8").read())
        finally:
            mlflow.set_tracking_uri(None)
    return result.metrics, table, report, summary


@pytest.mark.slow
def test_metrics_equal_a_direct_computation_from_the_table_and_the_models(evaluated):
    m, table, _, summary = evaluated
    codes = DATA[["func"]]
    agree = teacher(codes).argmax(1) == student(codes).argmax(1)
    assert not agree[-1] and agree[:-1].all()  # the long row starts disagreeing: not searched for a deviation
    assert m["deviation_rows_searched"] == len(DATA)
    assert m["deviation_rows_agreeing"] == agree.sum()
    assert m["deviation_rows_found"] == len(table) > 0
    assert m["deviation_rate"] == pytest.approx(len(table) / agree.sum())
    assert m["deviation_rate_ci_low"] <= m["deviation_rate"] <= m["deviation_rate_ci_high"]
    assert m["deviation_rate_ci_low"] < m["deviation_rate_ci_high"]  # 0 < rate < 1 here: a real interval
    assert m["deviation_queries_median"] == pytest.approx(float(np.median(table["queries_to_first"])))
    unfound = m["deviation_rows_agreeing"] - len(table)  # each spent between 1 and the budget of 12
    per = m["deviation_queries_per_deviation"]
    assert (
        (table["queries"].sum() + unfound) / len(table) <= per <= (table["queries"].sum() + 12 * unfound) / len(table)
    )
    assert (table["queries_to_first"] <= 12).all() and (table["queries_to_first"] >= 1).all()
    assert set(table["row"]) <= set(np.flatnonzero(agree))
    assert summary["deviation"]["found"] == len(table) and summary["deviation"]["search"] == "dflare"


def test_every_logged_deviation_is_real(evaluated):
    _, table, _, _ = evaluated
    for r in table.itertuples():
        variant = pd.DataFrame({"func": [r.variant_code]})
        t, s = teacher(variant)[0], student(variant)[0]
        assert t.argmax() != s.argmax()
        np.testing.assert_allclose(r.teacher_probs, t)
        np.testing.assert_allclose(r.student_probs, s)
        assert r.original_code == DATA["func"][r.row] and r.variant_code != r.original_code
        assert r.diff.startswith("--- original\n+++ variant\n")
        assert r.gap == pytest.approx(0.5 * np.abs(t - s).sum())


def test_report_shows_the_worst_deviations_with_their_diffs(evaluated):
    _, table, report, _ = evaluated
    assert 'id="deviations"' in report
    worst = table.sort_values("gap", ascending=False).iloc[0]
    added = next(line for line in worst["diff"].splitlines() if line.startswith("+") and not line.startswith("+++"))
    from html import escape

    assert escape(added) in report  # the diff, escaped
    assert 'data-metric="deviation_rate"' in report


def test_a_gate_bounds_deviation_rate(evaluated):
    from mlflow_metacompress.gates.policy import GatePolicy

    m, _, _, _ = evaluated
    rate = m["deviation_rate"]
    passing = GatePolicy.from_mapping({"name": "p", "thresholds": {"deviation_rate": f"<= {rate + 0.01}"}})
    failing = GatePolicy.from_mapping({"name": "f", "thresholds": {"deviation_rate": f"<= {rate - 0.01}"}})
    assert [c.passed for c in passing.check(m)] == [True]
    assert [c.passed for c in failing.check(m)] == [False]


def test_static_mode_refuses_deviation(tracking):
    data = pd.DataFrame({"t0": [0.2, 0.6], "t1": [0.8, 0.4], "s0": [0.3, 0.5], "s1": [0.7, 0.5], "target": [1, 0]})
    config = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], "deviation": {}}
    with pytest.raises(Exception, match=r"evaluator_config\['deviation'\].*static mode"):
        _evaluate(config, model=None, data=data)
    assert not mlflow.search_runs(filter_string="metrics.mr1_violation_rate >= 0").shape[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "value, needle",
    [
        ({"queries": 0}, r"deviation.queries.*got 0"),
        ({"search": "annealing"}, r"deviation.search.*'annealing'"),
        ({"rows": -2}, r"deviation.rows.*got -2"),
        ({"depth": 0}, r"deviation.depth.*got 0"),
        ({"querys": 5}, r"unknown key\(s\) \['querys'\]"),
        ("dflare", r"evaluator_config\['deviation'\].*'dflare'"),
    ],
)
def test_bad_values_are_refused_naming_them_before_any_model_runs(tracking, value, needle):
    CALLS.update(teacher=0, student=0)
    with pytest.raises(Exception, match=needle):
        _evaluate({**CONFIG, "deviation": value})
    assert CALLS == {"teacher": 0, "student": 0}
    assert not mlflow.search_runs(filter_string="metrics.mr1_violation_rate >= 0").shape[0]  # nothing logged


class _Teacher(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return pd.DataFrame(teacher(model_input), columns=["0", "1"])


@pytest.mark.slow
def test_the_teachers_variant_predictions_are_shared_across_students(tracking, monkeypatch):
    """Two students judged against one logged teacher in one process: the second search reads
    the teacher's predictions on every variant the first already ran (and on the originals from
    the prediction cache); only the uncached verification of each deviation runs the teacher."""
    from mlflow_metacompress.evaluation import deviation_search

    monkeypatch.setattr(deviation_search, "_TEACHERS", {})
    with mlflow.start_run():
        uri = mlflow.pyfunc.log_model(
            name="teacher", python_model=_Teacher(), input_example=DATA[["func"]].head(2), pip_requirements=[]
        )
    config = {**CONFIG, "teacher": uri.model_uri, "bootstrap_samples": 0}
    CALLS.update(teacher=0)
    first, _ = _evaluate(config)
    ran_first = CALLS["teacher"]
    assert ran_first > len(DATA) + first.metrics["deviation_rows_found"]  # originals, variants, verification
    CALLS.update(teacher=0)
    second, _ = _evaluate(config, model=lambda frame: student(frame))  # another student object, same answers
    assert CALLS["teacher"] == second.metrics["deviation_rows_found"]  # verification only
    assert second.metrics["deviation_rate"] == first.metrics["deviation_rate"]
    assert "deviation_rate_ci_low" not in second.metrics  # bootstrap_samples 0: no interval
