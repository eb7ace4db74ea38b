"""Bad input fails before any model runs, names what is wrong, and logs nothing."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.checks import MetaCompressInputError, check_probabilities
from mlflow_metacompress.adapters.predictors import to_probabilities
from tests.conftest import toy_frame
from tests.support.evaluation import counting_teacher as teacher
from tests.support.evaluation import run_and_expect


def test_missing_code_column(tracking):
    calls = run_and_expect(
        toy_frame(10), {"teacher": teacher, "code_columns": ["code"]}, "code column 'code' is missing"
    )
    assert calls == 0


def test_non_string_code_names_the_row(tracking):
    df = toy_frame(10)
    df["func"] = df["func"].astype(object)
    df.loc[4, "func"] = 42
    assert run_and_expect(df, {"teacher": teacher}, r"code column 'func' must hold strings; row 4 holds int") == 0


def test_label_outside_classes(tracking):
    df = toy_frame(10)
    df.loc[3, "target"] = 7
    run_and_expect(df, {"teacher": teacher}, r"label 7 .* outside the models' classes 0..1")


def test_nan_probabilities_in_static_mode(tracking):
    df = pd.DataFrame({"t0": [0.5, np.nan], "t1": [0.5, 0.5], "s0": [0.5, 0.5], "s1": [0.5, 0.5], "target": [0, 1]})
    run_and_expect(
        df,
        {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]},
        "teacher .* NaN in row 1",
        model=None,
    )


def test_class_count_mismatch(tracking):
    df = pd.DataFrame({"t0": [0.5], "t1": [0.5], "s0": [0.3], "s1": [0.3], "s2": [0.4], "target": [0]})
    run_and_expect(
        df,
        {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1", "s2"]},
        "disagree on the number of classes",
        model=None,
    )


def test_class_count_mismatch_between_models(tracking):
    run_and_expect(
        toy_frame(6), {"teacher": lambda f: np.full((len(f), 3), 1 / 3)}, "disagree on the number of classes"
    )


def test_named_class_sets_differ(tracking):
    def t(f):
        return pd.DataFrame({"safe": [0.5] * len(f), "vuln": [0.5] * len(f)})

    def s(f):
        return pd.DataFrame({"safe": [0.5] * len(f), "bug": [0.5] * len(f)})

    run_and_expect(
        toy_frame(6), {"teacher": t}, r"only in teacher \['vuln'\], only in student \['bug'\]", model=s, targets=None
    )


def test_empty_dataset(tracking):
    # MLflow 3.17 with pandas 3 fails in its own digest on arrow-string empty frames, so object dtype
    df = pd.DataFrame({"func": pd.Series([], dtype=object), "target": pd.Series([], dtype=int)})
    run_and_expect(df, {"teacher": teacher}, "empty")


def test_unresolvable_teacher_uri(tracking):
    assert (
        run_and_expect(
            toy_frame(5),
            {"teacher": "models:/no-such-model/3"},
            "teacher model URI 'models:/no-such-model/3' does not resolve",
        )
        == 0
    )


def test_unknown_config_key(tracking):
    run_and_expect(
        toy_frame(5), {"teacher": teacher, "kl_treshold": 0.2}, r"unknown evaluator_config key\(s\) \['kl_treshold'\]"
    )


def test_missing_teacher(tracking):
    run_and_expect(toy_frame(5), {}, "must name a 'teacher'")


@pytest.mark.parametrize(
    "rows, match",
    [
        ([[0.5, np.inf]], "infinite"),
        ([[1.2, -0.2]], "negative"),
        ([[0.5, 0.4]], r"row 0 sum to 0.9"),
    ],
)
def test_probability_checks(rows, match):
    with pytest.raises(MetaCompressInputError, match=match):
        check_probabilities(np.array(rows), "student")


def test_near_one_rows_are_renormalised():
    p = check_probabilities(np.array([[0.5004, 0.5]]), "teacher")
    assert p.sum() == pytest.approx(1.0, abs=1e-15)


def test_adapter_formats():
    # a transformers text-classification pipeline with top_k=None, sorted by score
    out = [
        [{"label": "LABEL_1", "score": 0.8}, {"label": "LABEL_0", "score": 0.2}],
        [{"label": "LABEL_0", "score": 0.6}, {"label": "LABEL_1", "score": 0.4}],
    ]
    p, classes = to_probabilities(out, 2)
    assert classes == ["LABEL_0", "LABEL_1"] and p.tolist() == [[0.2, 0.8], [0.6, 0.4]]
    p, classes = to_probabilities(pd.DataFrame({"0": [0.1], "1": [0.9]}), 1)
    assert classes == ["0", "1"]
    p, classes = to_probabilities(np.array([[0.3, 0.7]]), 1)
    assert classes is None
    with pytest.raises(MetaCompressInputError, match="predict_proba"):
        to_probabilities(np.array([0, 1]), 2)


def test_label_outside_declared_classes_fails_before_models_run(tracking, tiny_classifiers):
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher_model, _ = tiny_classifiers
    with mlflow.start_run():
        uri = log_code_classifier(teacher_model, tok, registered_model_name="t").model_uri
    df = toy_frame(8)
    df.loc[2, "target"] = 5
    assert run_and_expect(df, {"teacher": uri}, r"label 5 .* not one of the models' classes \['0', '1'\]") == 0
