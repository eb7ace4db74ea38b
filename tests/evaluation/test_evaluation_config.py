"""``parse_config`` on its own: the config is resolved once (columns inferred, language
detected before any model runs), frozen, and it remembers which values the user gave."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.checks import MetaCompressInputError
from mlflow_metacompress.evaluation.config import EvaluatorConfig, config_keys, parse_config
from tests.conftest import toy_frame

PYTHON_CODE = [
    "def add(a, b):\n    total = a + b\n    return total\n",
    "def first(xs):\n    for x in xs:\n        if x is not None:\n            return x\n    return None\n",
    "def clean(self, text):\n    import re\n    return re.sub(r'\\s+', ' ', text).strip()\n",
]


def teacher(frame):
    return np.tile([0.7, 0.3], (len(frame), 1))


def test_config_is_frozen_and_lists_become_tuples():
    cfg = parse_config(
        {
            "teacher": teacher,
            "code_columns": ["func"],
            "attacks": [],
            "transforms": ["rename_variables"],
            "language": "c",
        },
        toy_frame(4),
        model_given=True,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.language = "java"  # type: ignore[misc]  # frozen: the test expects the refusal
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.code_columns = ("x",)  # type: ignore[misc]  # frozen: the test expects the refusal
    assert cfg.code_columns == ("func",) and cfg.transforms == ("rename_variables",) and cfg.attacks == ()
    derived = dataclasses.replace(cfg, kl_threshold=0.5)  # derived values: a new config, the old one unchanged
    assert derived.kl_threshold == 0.5 and cfg.kl_threshold == 0.1 and derived.config_sources() == cfg.config_sources()
    loggable = cfg.as_loggable()
    assert loggable["code_columns"] == ["func"] and loggable["transforms"] == ["rename_variables"]
    assert loggable["teacher"] == "<function>"
    json.dumps(loggable)  # JSON-safe


def test_detected_language_is_recorded_and_not_shown_as_given(caplog):
    df = toy_frame(60, seed=3)
    with caplog.at_level(logging.WARNING):
        cfg = parse_config({"teacher": teacher, "transforms": "all"}, df, model_given=True)
    # independent oracle: the transformation library's per-sample detector, majority over 50 samples
    from mlflow_metacompress.transforms import detect_language

    expected = Counter(detect_language(c) for c in df["func"][:50]).most_common(1)[0][0]
    assert cfg.language == expected == "c"
    assert "detected 'c'" in caplog.text
    sources = cfg.config_sources()
    assert sources["language"] == "detected"
    assert sources["code_columns"] == "inferred" and sources["transform_columns"] == "inferred"
    assert sources["teacher"] == "given" and sources["transforms"] == "given" and sources["kl_threshold"] == "default"
    assert set(sources) == set(config_keys())
    assert cfg.detected_values() == {"language": "c", "code_columns": ["func"], "transform_columns": ["func"]}
    loggable = cfg.as_loggable()
    assert loggable["language"] is None and loggable["code_columns"] is None and loggable["transform_columns"] is None
    assert "sources" not in loggable


def test_python_code_is_detected_as_python():
    df = pd.DataFrame({"code": PYTHON_CODE * 4})
    cfg = parse_config({"teacher": teacher, "transforms": "all"}, df, model_given=True)
    assert cfg.language == "python" and cfg.code_columns == ("code",)
    assert "rename_variables" in cfg.transform_names()


def test_given_language_is_kept_and_not_detected(caplog):
    df = pd.DataFrame({"code": PYTHON_CODE})
    with caplog.at_level(logging.WARNING):
        cfg = parse_config({"teacher": teacher, "language": "java", "transforms": []}, df, model_given=True)
    assert cfg.language == "java" and cfg.config_sources()["language"] == "given"
    assert "language" not in cfg.detected_values() and cfg.as_loggable()["language"] == "java"
    assert "detected" not in caplog.text


def test_language_is_not_detected_when_nothing_needs_it(caplog):
    with caplog.at_level(logging.WARNING):
        cfg = parse_config({"teacher": teacher, "transforms": []}, toy_frame(5), model_given=True)
    assert cfg.language is None and cfg.config_sources()["language"] == "default" and "detected" not in caplog.text
    assert cfg.transform_names() == []


def test_attacks_need_a_language_too():
    cfg = parse_config(
        {"teacher": teacher, "transforms": [], "attacks": "mhm_zhang_2020"}, toy_frame(5), model_given=True
    )
    assert cfg.attacks == ("mhm_zhang_2020",) and cfg.language == "c" and cfg.config_sources()["language"] == "detected"


def test_clone_pairs_infer_both_columns_and_transform_the_first():
    df = pd.DataFrame({"func1": toy_frame(4)["func"], "func2": toy_frame(4, seed=1)["func"]})
    cfg = parse_config({"teacher": teacher, "transforms": []}, df, model_given=True)
    assert cfg.code_columns == ("func1", "func2") and cfg.transform_columns == ("func1",)


@pytest.mark.parametrize(
    "raw, match",
    [
        (
            {"kl_treshold": 0.2, "attack_buget": 3},
            r"unknown evaluator_config key\(s\) \['attack_buget', 'kl_treshold'\]",
        ),
        ({"sources": ()}, r"unknown evaluator_config key\(s\) \['sources'\]"),  # internal field, not a key
        ({"language": "rust"}, r"language must be one of \('c', 'java', 'python'\); got 'rust'"),
        (
            {"language": "c", "transforms": ["nope", "rename_variables"]},
            r"transforms \['nope'\] are not available for 'c'",
        ),
        (
            {"transforms": [], "attacks": ["nope_2099"]},
            r"unknown attacks \['nope_2099'\]; available: \[.*'mhm_zhang_2020'",
        ),
        (
            {"transforms": [], "transform_columns": ["target"]},
            r"transform_columns \['target'\] are not code columns \['func'\]",
        ),
        ({"batch_size": 0}, r"evaluator_config\['batch_size'\] must be an integer ≥ 1; got 0"),
        ({"code_columns": "missing"}, "code column 'missing' is missing from the data"),
    ],
)
def test_bad_keys_and_values_are_named(raw, match):
    with pytest.raises(MetaCompressInputError, match=match):
        parse_config({"teacher": teacher, **raw}, toy_frame(5), model_given=True)


def test_attacks_without_labels_fail_at_parse_time():
    with pytest.raises(MetaCompressInputError, match="attacks need labels"):
        parse_config(
            {"teacher": teacher, "transforms": [], "attacks": ["mhm_zhang_2020"]},
            toy_frame(5),
            model_given=True,
            labels_given=False,
        )


def test_static_mode():
    df = pd.DataFrame({"t0": [0.5], "t1": [0.5], "s0": [0.4], "s1": [0.6]})
    cfg = parse_config(
        {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]}, df, model_given=False
    )
    assert cfg.static and cfg.code_columns is None and cfg.language is None and cfg.transform_names() == []
    assert cfg.detected_values() == {} and cfg.config_sources()["teacher_prob_columns"] == "given"
    assert cfg.as_loggable()["teacher_prob_columns"] == ["t0", "t1"]
    with pytest.raises(MetaCompressInputError, match="static mode only judges"):
        parse_config(
            {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], "transforms": ["x"]},
            df,
            model_given=False,
        )
    with pytest.raises(MetaCompressInputError, match="probability column 's9' is missing"):
        parse_config(
            {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s9"]}, df, model_given=False
        )


def test_every_field_but_sources_is_a_key():
    names = {f.name for f in dataclasses.fields(EvaluatorConfig)}
    assert set(config_keys()) == names - {"sources"}
    assert {"teacher", "language", "transforms", "attacks", "attack_budget", "code_columns"} <= set(config_keys())


# ------------------------------------------------------------------ issue 23: every type error names its key
WRONG_VALUES = [5, 2.5, True, {"a": 1}, ["x", 3], [], "", object()]


@pytest.mark.parametrize("key", [k for k in config_keys() if k != "teacher"])
@pytest.mark.parametrize(
    "value", WRONG_VALUES, ids=["int", "float", "bool", "dict", "mixed_list", "empty_list", "empty_str", "object"]
)
def test_every_wrong_type_is_either_accepted_or_named_by_its_key(key, value):
    """A wrong value of any key is either accepted (e.g. ``[]`` for a list) or a
    MetaCompressInputError naming that key; never a bare TypeError or AttributeError."""
    from mlflow_metacompress.evaluation.config import check_config

    raw = {"teacher": teacher, "language": "c", key: value}
    for check in (lambda: check_config(raw), lambda: parse_config(raw, toy_frame(5), model_given=True)):
        try:
            check()
        except MetaCompressInputError as exc:
            assert key in str(exc), (key, value, str(exc))
            assert "\n" not in str(exc)


def test_a_list_key_given_an_integer_names_the_key():
    from mlflow_metacompress.evaluation.config import check_config

    for key in ("code_columns", "teacher_prob_columns", "transform_columns", "attacks", "slice_columns"):
        pattern = rf"evaluator_config\['{key}'\] must be a list of names .*got 5 \(int\)"
        with pytest.raises(MetaCompressInputError, match=pattern):
            check_config({key: 5})
        with pytest.raises(MetaCompressInputError, match=rf"evaluator_config\['{key}'\]"):
            parse_config({"teacher": teacher, key: 5}, toy_frame(5), model_given=True)


def test_unknown_keys_suggest_the_near_miss_without_data_or_models():
    from mlflow_metacompress.evaluation.config import check_config

    with pytest.raises(MetaCompressInputError) as err:
        check_config({"transfroms": "all", "kl_treshold": 0.1, "zzz": 1})
    text = str(err.value)
    assert "did you mean 'kl_treshold' → 'kl_threshold', 'transfroms' → 'transforms'?" in text
    assert "'zzz' →" not in text and "['kl_treshold', 'transfroms', 'zzz']" in text
    with pytest.raises(MetaCompressInputError, match="did you mean 'attack_buget' → 'attack_budget'"):
        parse_config({"teacher": teacher, "attack_buget": 3}, toy_frame(5), model_given=True)
    with pytest.raises(MetaCompressInputError, match="evaluator_config must be a dict of keys; got list"):
        check_config([("transforms", "all")])
    check_config({"transforms": "all", "col_mapping": {}, "code_columns": "func"})  # valid: nothing raised
