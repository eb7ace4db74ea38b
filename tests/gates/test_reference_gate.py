"""Gating on the reference families (issue 42): their names in the catalogue and the interval
keys, a policy bounding ``excess/…`` at its upper interval end, and a real gate that passes
a faithful student, fails a weak one and moves no alias on failure."""

from __future__ import annotations

import mlflow
import pytest

from mlflow_metacompress import gates
from mlflow_metacompress.data.generators import generate_vulnerability, split_frame
from mlflow_metacompress.gates import gate_version
from mlflow_metacompress.gates.policy import GatePolicy, PolicyError
from mlflow_metacompress.metrics import base_name, catalogue, greater_is_better
from mlflow_metacompress.statistics import interval_key, point_key

EXCESS_POLICY = {"name": "reference-tier", "thresholds": {"excess/mr1_violation_rate/metamorphic": "<= 0.02 @upper"}}


def test_family_names_directions_and_interval_keys():
    specs = catalogue()
    assert not specs["excess/mr1_violation_rate"].greater_is_better
    assert specs["excess/mr1_label_loyalty"].greater_is_better
    assert "reference/increment/mr4_eca" in specs and "excess/increment/any_violation_rate_ci_high" in specs
    assert "reference/mr1_violation_rate_ci_high" not in specs  # the reference's own rate has no interval
    key = "excess/increment/mr2_mean_kl/metamorphic"
    assert base_name(key) == "excess/increment/mr2_mean_kl"
    assert base_name("pre." + key, "pre.") == "excess/increment/mr2_mean_kl"
    assert interval_key(key, "high") == "excess/increment/mr2_mean_kl_ci_high/metamorphic"
    assert point_key(interval_key(key, "low")) == key
    assert interval_key("excess/mr1_violation_rate", "low") == "excess/mr1_violation_rate_ci_low"
    assert interval_key("mr1_violation_rate/metamorphic", "low") == "mr1_violation_rate_ci_low/metamorphic"
    assert base_name("attack_alert_yang_2022/excess_drop") == "excess_drop"  # not the excess/ family
    assert not greater_is_better("increment/any_violation_rate/rename_variables")


def test_policy_bounds_an_excess_at_its_upper_end():
    policy = GatePolicy.from_mapping(EXCESS_POLICY)
    key = "excess/mr1_violation_rate_ci_high/metamorphic"
    good = {"excess/mr1_violation_rate/metamorphic": 0.0, key: 0.015}
    bad = {"excess/mr1_violation_rate/metamorphic": 0.0, key: 0.03}  # point fine, upper end too high
    assert all(c.passed for c in policy.check(good))
    (failed,) = policy.check(bad)
    assert not failed.passed and failed.actual == 0.03
    (missing,) = policy.check({"mr1_violation_rate": 0.1})
    assert not missing.passed and "evaluator_config reference" in missing.message
    with pytest.raises(PolicyError, match="contradicts the metric catalogue"):
        GatePolicy.from_mapping({"name": "x", "thresholds": {"excess/mr1_violation_rate": ">= 0.1"}})
    with pytest.raises(PolicyError, match="has no bootstrap interval"):
        GatePolicy.from_mapping({"name": "x", "thresholds": {"reference/mr1_violation_rate": "<= 0.1 @upper"}})


def _fit(df, C):
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        ColumnTransformer([("v", HashingVectorizer(n_features=1024), "func")]), LogisticRegression(C=C, max_iter=500)
    ).fit(df[["func"]], df["target"])


@pytest.mark.slow
def test_gate_on_excess_passes_a_faithful_student_and_fails_a_weak_one(tracking):
    parts = split_frame(generate_vulnerability(200, seed=5), (0.7, 0.0, 0.3), seed=5, stratify="target")
    train, test = parts["train"], parts["test"][["func", "target"]]
    kw = dict(
        pyfunc_predict_fn="predict_proba", input_example=train[["func"]].head(2), pip_requirements=["scikit-learn"]
    )
    with mlflow.start_run():
        mlflow.sklearn.log_model(_fit(train, 10.0), name="t", registered_model_name="vuln-teacher", **kw)
        # the reference: the teacher's recipe on another draw of the training rows
        mlflow.sklearn.log_model(_fit(train.sample(frac=0.8, random_state=1), 10.0), name="r", **kw)
        ref_uri = f"runs:/{mlflow.active_run().info.run_id}/r"
        for k, C in enumerate((10.0, 0.001)):  # v1 = the teacher refitted, v2 a much weaker student
            mlflow.sklearn.log_model(_fit(train, C), name=f"s{k}", registered_model_name="vuln-student", **kw)
    client = mlflow.MlflowClient()
    for v in ("1", "2"):
        client.set_model_version_tag("vuln-student", v, gates.TAG_TEACHER, "models:/vuln-teacher/1")
    cfg = {
        "code_columns": ["func"],
        "transforms": ["rename_variables"],
        "language": "c",
        "progress": False,
        "reference": ref_uri,
        "bootstrap_samples": 200,
    }
    same = gate_version("vuln-student", 1, test, EXCESS_POLICY, evaluator_config=cfg)
    assert same.passed, same.summary()
    metrics = client.get_run(same.evaluation_run_id).data.metrics
    assert metrics["reference/mr1_violation_rate/metamorphic"] > 0  # the reference does disagree a little
    assert metrics["excess/mr1_violation_rate_ci_high/metamorphic"] <= 0.02
    weak = gate_version("vuln-student", 2, test, EXCESS_POLICY, evaluator_config=cfg)
    assert not weak.passed
    (failed,) = weak.failed_checks
    assert failed.metric == "excess/mr1_violation_rate_ci_high/metamorphic" and failed.actual > 0.02
    assert str(client.get_model_version_by_alias("vuln-student", "champion").version) == "1"
    assert client.get_model_version("vuln-student", "2").tags[gates.TAG_VERDICT] == "failed"
