"""The main job's opt-in reference teacher (issue 42): the gate's excess bound, the
parameter's path from the MLproject to :class:`PipelineConfig`, and (slow) a tiny run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_metacompress.gates.policy import load_policy
from mlflow_metacompress.pipeline.reference import EXCESS_BOUND, REFERENCE_SEED_OFFSET, excess_rule, with_excess_bound
from mlflow_metacompress.profiles import get_profile, resolve_policy

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

REPO = Path(__file__).resolve().parents[2]


def test_the_gate_adds_the_excess_bound_to_the_profile_policy():
    profile = get_profile("quick", "vulnerability")
    base = load_policy(resolve_policy(None, profile))
    policy = with_excess_bound(base, profile)
    assert policy.name == f"{base.name}+reference"
    assert policy.thresholds[: len(base.thresholds)] == base.thresholds
    (rule,) = policy.thresholds[len(base.thresholds) :]
    assert (rule.metric, rule.direction, rule.value, rule.bound) == (
        "excess/mr1_violation_rate/metamorphic",
        "<=",
        EXCESS_BOUND,
        "upper",
    )
    assert rule.checked == "excess/mr1_violation_rate_ci_high/metamorphic"
    key = rule.checked
    assert [c.passed for c in policy.check({key: EXCESS_BOUND + 0.01}) if c.metric == key] == [False]
    assert [c.passed for c in policy.check({key: EXCESS_BOUND}) if c.metric == key] == [True]
    assert excess_rule(type("P", (), {"transforms": []})())[0] == "excess/mr1_violation_rate"


def test_mlproject_and_recipe_pass_reference_to_the_pipeline(monkeypatch):
    from mlflow.projects._project_spec import load_project

    main = load_project(str(REPO)).get_entry_point("main")
    assert main.parameters["reference"].default == "false" and "--reference {reference}" in main.command
    import sys

    monkeypatch.syspath_prepend(str(REPO / "recipes"))
    sys.modules.pop("main", None)
    import main as recipe  # recipes/main.py

    seen = {}

    class Result:
        run_id, markdown, errors = "r", "", {}

    monkeypatch.setattr("mlflow_metacompress.pipeline.run_pipeline", lambda c: seen.setdefault("c", c) and Result)
    monkeypatch.setattr(recipe, "setup", lambda: "sqlite:///x.db")
    assert recipe.main(["--reference", "true"]) == 0
    assert seen["c"].reference is True
    seen.clear()
    recipe.main([])
    assert seen["c"].reference is False


@pytest.mark.slow
def test_tiny_pipeline_with_a_reference_gates_the_excess(tracking):
    import mlflow

    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline

    result = run_pipeline(
        PipelineConfig(profile="tiny", methods="quantize", size_mb=0.5, progress=False, reference=True, seed=0)
    )
    assert not result.errors and result.policy.endswith("+reference")
    client = mlflow.MlflowClient()
    ref = client.get_registered_model("metacompress-generated-vulnerability-reference")
    assert ref.latest_versions
    (outcome,) = result.outcomes
    assert "reference/mr1_violation_rate" in outcome.metrics and "excess/mr1_violation_rate" in outcome.metrics
    assert REFERENCE_SEED_OFFSET == 1000
