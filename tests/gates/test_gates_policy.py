"""GatePolicy: YAML parsing, errors, presets and MLflow-judged threshold semantics."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import yaml

from mlflow_metacompress.gates.policy import PRESETS, GatePolicy, PolicyError, load_policy
from mlflow_metacompress.metrics import greater_is_better


def _write(tmp_path, data, name="p.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_yaml_forms_and_derived_directions(tmp_path):
    path = _write(
        tmp_path,
        {
            "name": "mine",
            "thresholds": {
                "accuracy_drop": "<= 0.02",
                "mr1_violation_rate/metamorphic": {"direction": "<=", "threshold": 0.15},
                "mr3_hcar": 0.9,
                "attack_alert_yang_2022/excess_drop_pct": "<=100",
            },
        },
    )
    policy = load_policy(path)
    got = {t.metric: (t.direction, t.value) for t in policy.thresholds}
    assert got == {
        "accuracy_drop": ("<=", 0.02),
        "mr1_violation_rate/metamorphic": ("<=", 0.15),
        "mr3_hcar": (">=", 0.9),
        "attack_alert_yang_2022/excess_drop_pct": ("<=", 100.0),
    }
    assert policy.name == "mine"


@pytest.mark.parametrize(
    "rule, needle",
    [
        ("< 0.1", "unknown direction '<'"),
        ({"direction": "lt", "threshold": 0.1}, "unknown direction 'lt'"),
        ("<= abc", "threshold must be a number, got 'abc'"),
        ({"direction": "<=", "threshold": "ten"}, "threshold must be a number, got 'ten'"),
        ({"direction": "<=", "threshold": True}, "threshold must be a number"),
        ("<= nan", "threshold must be finite"),
        (">= 0.1", "contradicts the metric catalogue"),
        ({"limit": 0.1}, "needs 'threshold'"),
        ("<= 0.1\nmore", "cannot read '<= 0.1\\nmore'"),  # was an AttributeError (no regex match)
    ],
)
def test_yaml_rule_errors_name_the_metric_and_value(tmp_path, rule, needle):
    path = _write(tmp_path, {"name": "bad", "thresholds": {"accuracy_drop": rule}})
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert needle in str(err.value)
    assert "accuracy_drop" in str(err.value) and str(path) in str(err.value)


def test_unknown_metric_and_structure_errors(tmp_path):
    with pytest.raises(PolicyError, match="unknown metric 'accuracy_dorp'"):
        GatePolicy.from_mapping({"name": "x", "thresholds": {"accuracy_dorp": "<= 0.1"}})
    with pytest.raises(PolicyError, match="'name' must be a non-empty string"):
        GatePolicy.from_mapping({"thresholds": {"accuracy_drop": 0.1}})
    with pytest.raises(PolicyError, match="non-empty mapping"):
        GatePolicy.from_mapping({"name": "x", "thresholds": []})
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(_write(tmp_path, "name: [unclosed\n"))
    with pytest.raises(PolicyError, match="unknown policy 'strictest'"):
        load_policy("strictest")
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(tmp_path / "missing.yaml")


def test_presets_load_are_ordered_by_strictness_and_match_catalogue():
    policies = {name: load_policy(name) for name in PRESETS}
    for name, policy in policies.items():
        assert policy.name == name
        for t in policy.thresholds:
            assert t.greater_is_better == greater_is_better(t.metric)
    # every bound shared by two tiers is at least as tight in the stricter tier
    order = ["safety_critical", "standard", "lenient"]
    for strict, loose in itertools.pairwise(order):
        s = {t.metric: t.value for t in policies[strict].thresholds}
        lo = {t.metric: t.value for t in policies[loose].thresholds}
        assert set(lo) <= set(s)
        for metric in lo:
            assert s[metric] <= lo[metric], (strict, loose, metric)
    assert any(t.metric.startswith("attack_") for t in policies["standard"].thresholds)
    assert any(t.metric.endswith("/metamorphic") for t in policies["standard"].thresholds)


def test_inclusive_bounds_and_nan_judged_by_mlflow():
    policy = GatePolicy.from_mapping({"name": "p", "thresholds": {"accuracy_drop": "<= 0.1", "mr3_hcar": ">= 0.9"}})
    at = policy.check({"accuracy_drop": 0.1, "mr3_hcar": 0.9})
    assert all(c.passed for c in at)
    # one rounding step past the threshold is on it (1e-9 relative tolerance, gates/bounds.py) ...
    step = policy.check({"accuracy_drop": float(np.nextafter(0.1, 1)), "mr3_hcar": float(np.nextafter(0.9, 0))})
    assert [c.passed for c in step] == [True, True]
    # ... a real excess is not, and the message shows enough digits to see it
    above = policy.check({"accuracy_drop": 0.1 + 1e-8, "mr3_hcar": 0.9 - 1e-8})
    assert [c.passed for c in above] == [False, False]
    assert "0.10000001 violates <= 0.1" in above[0].message and "0.89999999 violates >= 0.9" in above[1].message
    nan = policy.check({"accuracy_drop": math.nan, "mr3_hcar": np.float64(0.95)})
    assert [c.passed for c in nan] == [False, True]
    assert "is NaN" in nan[0].message


def test_missing_metric_fails_with_hint_and_glob_expands():
    policy = GatePolicy.from_mapping(
        {"name": "p", "thresholds": {"mr1_violation_rate/metamorphic": "<= 0.1", "attack_*/excess_drop_pct": "<= 100"}}
    )
    res = policy.check({"mr1_violation_rate": 0.0, "mr1_violation_rate/rename_variables": 0.0})
    assert [c.passed for c in res] == [False, False]
    assert "did not produce it" in res[0].message and "mr1_violation_rate/rename_variables" in res[0].message
    assert res[1].metric == "attack_*/excess_drop_pct" and res[1].actual is None
    res = policy.check(
        {
            "mr1_violation_rate/metamorphic": 0.05,
            "attack_mhm_zhang_2020/excess_drop_pct": 50.0,
            "attack_alert_yang_2022/excess_drop_pct": 150.0,
            "attack_mhm_zhang_2020/student_asr": 0.9,
        }
    )
    by_key = {c.metric: c.passed for c in res}
    assert by_key == {
        "mr1_violation_rate/metamorphic": True,
        "attack_alert_yang_2022/excess_drop_pct": False,
        "attack_mhm_zhang_2020/excess_drop_pct": True,
    }


@pytest.mark.parametrize(
    "text, needle",
    [
        ("name: a\nname: b\nthresholds:\n  accuracy_drop: 0.1\n", "found duplicate key 'name'"),
        (
            "name: a\nthresholds:\n  accuracy_drop: 0.1\n  mr4_eca: 0.1\n  accuracy_drop: 0.9\n",
            "found duplicate key 'accuracy_drop'",
        ),
        ("name: a\nthresholds:\n  mr4_eca: {threshold: 0.1, threshold: 0.5}\n", "found duplicate key 'threshold'"),
    ],
)
def test_duplicate_yaml_keys_are_rejected_with_line(tmp_path, text, needle):
    """Plain yaml.safe_load keeps the last duplicate silently, which could loosen a gate."""
    assert yaml.safe_load(text)  # the oracle: PyYAML alone accepts it
    path = _write(tmp_path, text)
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert needle in str(err.value) and str(path) in str(err.value) and "line" in str(err.value)


def test_unreadable_policy_paths_name_the_file(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(PolicyError, match="is a directory"):
        load_policy(tmp_path / "dir.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"name: x\xff\nthresholds: {accuracy_drop: 0.1}\n")
    with pytest.raises(PolicyError, match=r"bad.yaml is not UTF-8 text \(byte 0xff at offset 7\)"):
        load_policy(bad)
    ok = tmp_path / "ok.yaml"
    ok.write_text("name: caf\u00e9\nthresholds: {accuracy_drop: 0.1}\n", encoding="utf-8")
    assert load_policy(ok).name == "caf\u00e9"


def test_a_rule_that_matches_nothing_names_the_glob_and_what_produces_it():
    standard = load_policy("standard")
    clean = {"accuracy_drop": 0.0, "mr1_violation_rate": 0.0, "mr4_eca": 0.0}
    no_attack = {**clean, "mr1_violation_rate/metamorphic": 0.0, "mr3_violation_rate/metamorphic": 0.0}
    (glob,) = [c for c in standard.check(no_attack) if not c.passed]
    assert glob.metric == "attack_*/excess_drop_pct" and glob.actual is None
    assert "no metric matches the glob 'attack_*/excess_drop_pct'" in glob.message
    assert "evaluation runs attacks: add attacks" in glob.message and '"alert_yang_2022"' in glob.message
    # attacks ran, but the teacher lost nothing: the percentage is undefined; quick bounds the points
    ran = {**no_attack, "attack_mhm_zhang_2020/excess_drop": 0.0, "attack_mhm_zhang_2020/student_asr": 0.1}
    (pct,) = [c for c in standard.check(ran) if not c.passed]
    assert "the evaluation ran mhm_zhang_2020, but excess_drop_pct is undefined" in pct.message
    assert "attack_mhm_zhang_2020/excess_drop (in points) was logged: use policy quick" in pct.message
    assert all(c.passed for c in load_policy("quick").check(ran))  # and quick passes on those metrics
    # no transformations: the /metamorphic rules say how to get them
    failed = {c.metric: c.message for c in standard.check({**clean, "attack_a/excess_drop_pct": 0.0}) if not c.passed}
    assert set(failed) == {"mr1_violation_rate/metamorphic", "mr3_violation_rate/metamorphic"}
    assert all("set evaluator_config transforms" in m for m in failed.values())
    # with transformations but a never-confident teacher, MR3 says why it is absent
    no_mr3 = {k: v for k, v in no_attack.items() if not k.startswith("mr3")} | {"attack_a/excess_drop_pct": 0.0}
    (mr3,) = [c for c in standard.check(no_mr3) if not c.passed]
    assert mr3.metric == "mr3_violation_rate/metamorphic" and "no sample has teacher confidence" in mr3.message


def test_the_unreadable_rule_hint_suggests_rules_that_parse():
    """The error for an unreadable rule quotes example rules; each of them must parse."""
    import re

    with pytest.raises(PolicyError) as info:
        GatePolicy.from_mapping({"name": "p", "thresholds": {"any_violation_rate": "<= 0.1\nor less"}})
    examples = re.findall(r"'([^']*)'", str(info.value).split("expected", 1)[1])
    assert examples == ["<= 0.1", "<= 0.1 @upper"]
    for example in examples:
        (rule,) = GatePolicy.from_mapping({"name": "p", "thresholds": {"any_violation_rate": example}}).thresholds
        assert rule.value == 0.1 and rule.direction == "<="
    assert rule.bound == "upper" and rule.checked == "any_violation_rate_ci_high"


@pytest.mark.parametrize("greater", [False, True])
def test_checks_agree_with_mlflow_validate_evaluation_results(greater):
    """The verdicts equal MLflow's own (the oracle) on values below, on, above the threshold,
    NaN and infinities, with no logger level changed while judging."""
    import logging
    import math

    import mlflow
    from mlflow.models import MetricThreshold
    from mlflow.models.evaluation import EvaluationResult
    from mlflow.models.evaluation.validation import ModelValidationFailedException

    metric = "student_accuracy" if greater else "accuracy_drop"
    policy = GatePolicy.from_mapping({"name": "p", "thresholds": {metric: 0.25}})
    calls = []
    original = logging.Logger.setLevel
    logging.Logger.setLevel = lambda self, level: calls.append((self.name, level))  # type: ignore[method-assign]
    try:
        for value in (0.0, 0.2499, 0.25, 0.2501, 1.0, math.nan, math.inf, -math.inf):
            (check,) = policy.check({metric: value})
            try:
                mlflow.validate_evaluation_results(
                    {metric: MetricThreshold(threshold=0.25, greater_is_better=greater)},
                    EvaluationResult({metric: value}, {}),
                )
                expected = True
            except ModelValidationFailedException:
                expected = False
            assert check.passed is expected, (metric, value)
    finally:
        logging.Logger.setLevel = original  # type: ignore[method-assign]
    assert not [c for c in calls if c[0].startswith("mlflow")]
