"""The deviation search read against a retrained teacher (issue 43 with issue 42's
``reference``): ``reference/deviation_rate`` and ``excess/deviation_rate`` against a direct
search of each model, a paired interval, the control (a reference equal to the student gives
an excess of exactly 0), and a gate bounding the excess."""

from __future__ import annotations

import re

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.attacks.deviation.api import find_deviations
from tests.support.attacks import CODES


def ntok(code: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", code))


def teacher(df: pd.DataFrame) -> np.ndarray:
    return np.tile([0.2, 0.8], (len(df), 1))


def _drifting(start: int, slope: float):
    def model(df: pd.DataFrame) -> np.ndarray:
        z = np.array([1.4 - slope * max(ntok(c) - start, 0) for c in df["func"]])
        p = 1 / (1 + np.exp(-z))
        return np.stack([1 - p, p], axis=1)

    return model


student = _drifting(60, 0.04)  # leaves the teacher on long variants
reference = _drifting(120, 0.01)  # a steadier retrained teacher: leaves it far less easily
LONG = "int big(int a) {\n" + "".join(f"  a = a + {i};\n" for i in range(40)) + "  return a;\n}\n"
DATA = pd.DataFrame({"func": [*CODES, LONG], "target": [1] * (len(CODES) + 1)})
SEARCH = {"queries": 12, "search": "dflare", "seed": 1}
CONFIG = {"teacher": teacher, "language": "c", "transforms": [], "progress": False, "bootstrap_samples": 300}


def _evaluate(reference_model, **extra):
    with mlflow.start_run():
        return mlflow.models.evaluate(
            model=student,
            data=DATA,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={**CONFIG, "deviation": SEARCH, "reference": reference_model, **extra},
        ).metrics


def _direct_rate(other) -> float:
    records = find_deviations(teacher, other, DATA, ["func"], "c", queries=12, search="dflare", seed=1)
    agree = [r for r in records if r.agreed_at_start]
    return sum(r.found for r in agree) / len(agree)


@pytest.mark.slow
def test_reference_and_excess_deviation_rates_equal_a_direct_search(tracking):
    m = _evaluate(reference)
    s_rate, r_rate = _direct_rate(student), _direct_rate(reference)
    assert m["deviation_rate"] == pytest.approx(s_rate)
    assert m["reference/deviation_rate"] == pytest.approx(r_rate)
    assert m["excess/deviation_rate"] == pytest.approx(s_rate - r_rate)
    assert s_rate > r_rate  # the fixture's point: the student leaves its teacher more easily
    assert m["excess/deviation_rate_ci_low"] <= m["excess/deviation_rate"] <= m["excess/deviation_rate_ci_high"]
    assert m["reference/deviation_rows_searched"] == m["deviation_rows_searched"] == len(DATA)


@pytest.mark.slow
def test_a_reference_equal_to_the_student_has_no_excess(tracking):
    m = _evaluate(student)
    assert m["reference/deviation_rate"] == pytest.approx(m["deviation_rate"])
    assert m["excess/deviation_rate"] == 0.0
    assert m["excess/deviation_rate_ci_low"] == m["excess/deviation_rate_ci_high"] == 0.0


@pytest.mark.slow
def test_a_gate_bounds_the_excess_deviation_rate(tracking):
    from mlflow_metacompress.gates.policy import GatePolicy

    m = _evaluate(reference)
    strict = GatePolicy.from_mapping({"name": "strict", "thresholds": {"excess/deviation_rate": "<= 0.0 @upper"}})
    loose = GatePolicy.from_mapping({"name": "loose", "thresholds": {"excess/deviation_rate": "<= 1.0 @upper"}})
    (tight,) = strict.check(m)
    (wide,) = loose.check(m)
    assert not tight.passed and wide.passed
    assert tight.actual == pytest.approx(m["excess/deviation_rate_ci_high"])  # @upper reads the interval's end
