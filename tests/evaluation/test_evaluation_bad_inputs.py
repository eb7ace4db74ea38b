"""Issue 12's bad inputs: each gets a MetaCompressInputError naming the key, column, row or
value, before any model runs, and nothing of the plugin's is logged."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import toy_frame
from tests.support.evaluation import counting_teacher as teacher
from tests.support.evaluation import run_and_expect


def _static(n: int = 6) -> pd.DataFrame:
    return pd.DataFrame({"t0": [0.7] * n, "t1": [0.3] * n, "s0": [0.6] * n, "s1": [0.4] * n, "target": [0] * n})


STATIC = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]}

MODEL_CASES = [
    ({"confidence_threshold": True}, r"'confidence_threshold'\] must be a number .*got True \(bool\)"),
    ({"confidence_threshold": "0.8"}, r"'confidence_threshold'\] must be a number"),
    ({"kl_threshold": None}, r"'kl_threshold'\] must be a number"),
    ({"max_examples": -3}, r"'max_examples'\] must be an integer ≥ 0; got -3"),
    ({"calibration_bins": 10**7}, r"'calibration_bins'\] must be an integer ≥ 1 and ≤ 1000; got 10000000"),
    ({"metric_prefix": 5}, r"'metric_prefix'\] must be a string; got 5"),
    ({"attack_max_samples": -35}, r"'attack_max_samples'\] must be an integer ≥ 1 or unset; got -35"),
    ({"attack_max_samples": 0}, r"'attack_max_samples'\] must be an integer ≥ 1 or unset; got 0"),
    ({"batch_size": 2.5}, r"'batch_size'\] must be an integer ≥ 1; got 2.5"),
    ({"progress": "yes"}, r"'progress'\] must be true or false"),
    ({"code_columns": ["func", "func"]}, r"'code_columns'\] names 'func' twice"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "config,match", MODEL_CASES, ids=[next(iter(c)) + str(i) for i, (c, _) in enumerate(MODEL_CASES)]
)
def test_bad_config_values_are_named_before_any_model_runs(tracking, config, match):
    assert run_and_expect(toy_frame(8), {"teacher": teacher, "code_columns": ["func"], **config}, match) == 0


@pytest.mark.parametrize(
    "value,match",
    [
        ("", r"code column 'func' must hold non-empty code; row 3"),
        ("   \n", r"code column 'func' must hold non-empty code; row 3"),
        (1.5, r"code column 'func' must hold strings; row 3 holds float"),
    ],
)
def test_bad_code_cells_name_the_row_before_any_model_runs(tracking, value, match):
    df = toy_frame(8)
    df["func"] = df["func"].astype(object)
    df.loc[3, "func"] = value
    assert run_and_expect(df, {"teacher": teacher, "code_columns": ["func"]}, match) == 0


def test_lone_surrogates_in_code_are_named():
    """Through mlflow.models.evaluate, MLflow's own dataset digest already refuses such text
    before any plugin runs; the plugin's own check names the row for every other caller."""
    from mlflow_metacompress.adapters.checks import MetaCompressInputError
    from mlflow_metacompress.evaluation.config import parse_config

    df = toy_frame(8).astype({"func": object})
    df.loc[3, "func"] = "int f(){}\udc80"
    with pytest.raises(MetaCompressInputError, match=r"code column 'func' must hold valid UTF-8 text .*row 3"):
        parse_config({"teacher": teacher, "code_columns": ["func"], "transforms": []}, df, model_given=True)


def test_static_mode_duplicate_probability_columns(tracking):
    run_and_expect(
        _static(),
        {"teacher_prob_columns": ["t0", "t0"], "student_prob_columns": ["s0", "s1"]},
        r"'teacher_prob_columns'\] names 't0' twice",
        model=None,
    )


def test_static_mode_text_probability_is_named(tracking):
    df = _static().astype(object)
    df.loc[2, "s1"] = "abc"
    run_and_expect(df, STATIC, r"probability column 's1' must hold numbers; row 2 holds str 'abc'", model=None)


def test_static_mode_code_column_checks(tracking):
    run_and_expect(_static(), {**STATIC, "code_columns": ["nope"]}, r"code column 'nope' is missing", model=None)
    df = _static().assign(func=["int f(){}"] * 6).astype(object)
    df.loc[4, "func"] = 7.0
    run_and_expect(df, {**STATIC, "code_columns": ["func"]}, r"code column 'func' must hold strings; row 4", model=None)


@pytest.mark.slow
def test_valid_static_mode_still_runs(tracking):
    import mlflow

    with mlflow.start_run():
        result = mlflow.models.evaluate(
            model=None,
            data=_static(),
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=STATIC,
        )
    assert result.metrics["mr1_violation_rate"] == 0.0
