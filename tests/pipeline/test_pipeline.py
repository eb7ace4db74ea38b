"""Unit tests of the pipeline pieces: tracking defaults, methods, data budgets, profiles,
policies and the comparison table (the end-to-end run is in test_mlproject.py)."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.data.sampling import cap_rows
from mlflow_metacompress.distill.datasets import load_splits
from mlflow_metacompress.gates.policy import load_policy
from mlflow_metacompress.metrics import greater_is_better
from mlflow_metacompress.pipeline import default_tracking_uri, is_file_store, setup_tracking
from mlflow_metacompress.pipeline.data import load_task_data, normalise_task
from mlflow_metacompress.pipeline.evaluation_setup import evaluator_config
from mlflow_metacompress.pipeline.report import comparison_table, to_markdown
from mlflow_metacompress.pipeline.stages import (
    GateOutcome,
    parse_methods,
    resolve_methods,
)
from mlflow_metacompress.profiles import PROFILES, QUICK_POLICY, get_profile, resolve_policy
from tests.support.distill import add_method_module


@pytest.mark.parametrize("given", ["", "./mlruns", "mlruns", "file:///tmp/mlruns", "/abs/mlruns"])
def test_file_stores_and_unset_default_to_sqlite_in_cwd(tmp_path, given):
    env = {"MLFLOW_TRACKING_URI": given} if given else {}
    assert default_tracking_uri(env, tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"


@pytest.mark.parametrize("given", ["sqlite:///x/y.db", "http://tracking:5000", "databricks", "postgresql://u@h/db"])
def test_real_stores_are_kept(tmp_path, given):
    assert not is_file_store(given) or given == "databricks"
    expected = given if given != "databricks" else f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    assert default_tracking_uri({"MLFLOW_TRACKING_URI": given}, tmp_path) == expected


def test_setup_tracking_replaces_a_file_store_and_drops_its_run_id(tmp_path, monkeypatch):
    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "./mlruns")
    monkeypatch.setenv("MLFLOW_RUN_ID", "0123456789abcdef")
    monkeypatch.setenv("MLFLOW_REGISTRY_URI", "sqlite:///elsewhere.db")  # e.g. left by an earlier set_registry_uri
    try:
        uri = setup_tracking()
        assert uri == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
        assert mlflow.get_tracking_uri() == uri and mlflow.get_registry_uri() == uri
        assert os.environ["MLFLOW_TRACKING_URI"] == uri
        assert "MLFLOW_RUN_ID" not in os.environ
    finally:
        mlflow.set_tracking_uri(None)
        mlflow.set_registry_uri(None)


# ------------------------------------------------------------------ methods
def test_parse_methods():
    from mlflow_metacompress.distill import list_methods

    assert parse_methods(None) == parse_methods("all") == parse_methods(" ") == list_methods()
    assert {"compressor", "avatar", "morph", "fidelity"} <= set(parse_methods("all"))
    assert parse_methods("compressor,avatar,morph,fidelity") == ["compressor", "avatar", "morph", "fidelity"]
    assert parse_methods(" compressor , morph,compressor,") == ["compressor", "morph"]
    assert parse_methods(["avatar"]) == ["avatar"]
    with pytest.raises(ValueError, match="names no distillation method"):
        parse_methods(" , ")


def test_resolve_methods_names_the_unknown_and_the_registered():
    with pytest.raises(ValueError) as err:
        resolve_methods("compressor,no_such_method,../evil")
    text = str(err.value)
    assert "no_such_method" in text and "../evil" in text and "known methods: [" in text and "'compressor'" in text
    assert resolve_methods("compressor") == ["compressor"]


METHOD_SOURCE = """
from dataclasses import dataclass

from ..options import MethodOptions

NAME = "{name}"


@dataclass(frozen=True)
class Options(MethodOptions):
    pass


def run(ctx, options):
{body}
"""


def test_resolve_methods_accepts_any_discovered_method(tmp_path, monkeypatch):
    add_method_module(
        tmp_path,
        monkeypatch,
        "pipeline_test_method",
        METHOD_SOURCE.format(name="pipeline_test_method", body="    return None"),
    )
    assert resolve_methods("pipeline_test_method,compressor") == ["pipeline_test_method", "compressor"]
    assert "pipeline_test_method" in resolve_methods("all")
    quick = get_profile("quick")  # a method no profile names runs with its own defaults
    assert quick.options_for("pipeline_test_method") == {}
    assert quick.epochs_for("pipeline_test_method") == quick.student_epochs != quick.method_epochs["fidelity"]
    assert quick.options_for("fidelity")["transforms"] == ["rename_variables"]
    assert quick.epochs_for("fidelity") == quick.method_epochs["fidelity"]


def test_profile_method_options_parse_into_each_method():
    from mlflow_metacompress.distill import get_method

    for profile in PROFILES.values():
        for method, options in profile.method_options.items():
            get_method(method).parse(options)  # unknown keys or values of the wrong type would raise


# ------------------------------------------------------------------ data
def test_task_names():
    assert normalise_task("Vulnerability") == normalise_task("devign") == "vulnerability"
    assert normalise_task("bigclonebench") == "clone"
    with pytest.raises(ValueError, match="'vulnerability' or 'clone'"):
        normalise_task("summarisation")


def test_cap_is_stratified_seeded_and_bounded():
    df = pd.DataFrame({"x": range(1000), "y": [1] * 300 + [0] * 700})
    out = cap_rows(df, 100, "y", seed=3)
    assert len(out) == 100 and out["y"].sum() == 30  # 30% positives kept
    assert out["x"].is_monotonic_increasing and out["x"].is_unique  # original order, no duplicates
    pd.testing.assert_frame_equal(out, cap_rows(df, 100, "y", seed=3))
    assert not out.equals(cap_rows(df, 100, "y", seed=4))
    assert cap_rows(df, None, "y", 0).equals(df) and cap_rows(df, 5000, "y", 0).equals(df)
    with pytest.raises(KeyError, match="label column 'label'"):
        cap_rows(df, 10, "label")


def test_distillation_limit_and_pipeline_budget_sample_the_same_rows():
    frames = {
        s: pd.DataFrame(
            {"func": [f"int f{i}(){{}}" for i in range(200)], "target": [i % 3 == 0 for i in range(200)]}
        ).astype({"target": int})
        for s in ("train", "valid", "test")
    }
    limited = load_splits(frames, "devign", limit=40, seed=5)
    for split, df in frames.items():
        pd.testing.assert_frame_equal(limited[split], cap_rows(df, 40, "target", seed=5))
    assert limited["train"]["target"].mean() == pytest.approx(frames["train"]["target"].mean(), abs=0.02)


def test_generated_data_is_deterministic_and_capped():
    tiny = get_profile("tiny")
    a = load_task_data("vulnerability", None, tiny, seed=1)
    b = load_task_data("vulnerability", "", tiny, seed=1)
    assert a.source == "generated" and a.dataset == "generated-vulnerability"
    assert a.code_columns == ("func",) and a.label_column == "target" and a.codexglue_task == "devign"
    assert a.model_name("teacher") == "metacompress-generated-vulnerability-teacher"
    assert len(a.frames["train"]) == tiny.train_rows
    for split in ("train", "valid", "test"):
        pd.testing.assert_frame_equal(a.frames[split], b.frames[split])
    assert not set(a.frames["train"]["func"]) & set(a.frames["test"]["func"])  # no test leakage

    c = load_task_data("clone", None, tiny, seed=1)
    assert c.code_columns == ("func1", "func2") and c.label_column == "label"
    assert c.model_name("compressor") == "metacompress-generated-clone-compressor"
    assert set(c.frames["test"]["label"]) == {0, 1}


def test_real_devign_is_read_and_capped_per_split(shared_data):
    quick = get_profile("quick")
    data = load_task_data("vulnerability", shared_data / "devign", quick, seed=0)
    assert data.dataset == "devign" and data.source == str(shared_data / "devign")
    on_disk = {s: sum(1 for _ in open(shared_data / "devign" / f"{s}.jsonl")) for s in ("train", "valid", "test")}
    assert {k: len(v) for k, v in data.frames.items()} == {  # each split capped by the profile, or whole
        "train": min(quick.train_rows, on_disk["train"]),
        "valid": min(quick.valid_rows, on_disk["valid"]),
        "test": min(quick.eval_rows, on_disk["test"]),
    }
    full = pd.read_json(shared_data / "devign" / "test.jsonl", lines=True)
    assert set(data.frames["test"]["func"]) <= set(full["func"])
    assert abs(data.frames["test"]["target"].mean() - full["target"].mean()) < 0.02  # stratified
    parent = load_task_data("devign", shared_data, quick, seed=0)  # the parent folder works too
    pd.testing.assert_frame_equal(parent.frames["valid"], data.frames["valid"])


def test_bad_data_dir_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_task_data("vulnerability", tmp_path / "nowhere", get_profile("tiny"))
    (tmp_path / "train.jsonl").write_text('{"func": "int f(){}", "target": 2}\n')
    with pytest.raises(ValueError, match=r"train\.jsonl:1: target must be 0 or 1"):
        load_task_data("vulnerability", tmp_path, get_profile("tiny"))


# ------------------------------------------------------------------ profiles and policies
def test_profiles():
    assert get_profile("quick").name == "quick" and get_profile("paper").size_mb == 3.0
    with pytest.raises(ValueError) as err:
        get_profile("huge")
    assert "'paper'" in str(err.value) and "'quick'" in str(err.value) and "tiny" not in str(err.value)
    assert get_profile("quick").with_overrides(attack_budget=5).attack_budget == 5
    with pytest.raises(ValueError, match="unknown profile field"):
        get_profile("quick").with_overrides(epochs=5)
    for profile in PROFILES.values():
        assert profile.attacks, f"{profile.name} must evaluate with at least one attack"
        load_policy(profile.policy)
    quick, paper = get_profile("quick"), get_profile("paper")
    assert quick.generated_rows < paper.generated_rows and quick.size_mb < paper.size_mb
    assert quick.attack_budget < paper.attack_budget


def test_a_profile_applies_its_task_s_overrides_and_nothing_else():
    from dataclasses import replace

    quick, vuln = get_profile("quick"), get_profile("quick", "vulnerability")
    assert (vuln.generated_rows, vuln.train_rows, vuln.teacher_epochs, vuln.student_epochs) == (48000, 38400, 4, 1)
    assert vuln.eval_rows == 200 and quick.eval_rows == 100
    assert vuln.size_mb == quick.size_mb and vuln.policy == quick.policy and vuln.name == quick.name
    assert get_profile("quick", "clone") is quick and get_profile("quick", None) is quick
    with pytest.raises(ValueError, match="unknown profile field"):
        replace(quick, task_overrides={"clone": {"teacher_epoch": 3}}).for_task("clone")


def test_resolve_policy():
    quick, paper = get_profile("quick"), get_profile("paper")
    assert resolve_policy("auto", quick) is QUICK_POLICY and resolve_policy("", quick) is QUICK_POLICY
    assert resolve_policy(None, paper) == "standard" and resolve_policy("quick", paper) is QUICK_POLICY
    assert resolve_policy("safety_critical", quick) == "safety_critical"
    assert load_policy(resolve_policy("auto", quick)).name == "quick"


def test_quick_policy_bounds_only_always_logged_lower_is_better_metrics():
    policy = load_policy(QUICK_POLICY)
    keys = [t.metric for t in policy.thresholds]
    assert not any("excess_drop_pct" in k or k.startswith("mr3_") for k in keys)  # the conditionally logged ones
    assert all(not greater_is_better(k.replace("*", "alert_yang_2022")) for k in keys)
    metrics = {
        "accuracy_drop": 0.0,
        "mr1_violation_rate": 0.2,
        "mr1_violation_rate/metamorphic": 0.25,
        "attack_alert_yang_2022/excess_drop": 0.15,
        # a faithful copy of a weak teacher loses what its teacher loses: judged by the excess only
        "attack_alert_yang_2022/student_accuracy_drop": 0.375,
    }
    assert all(c.passed for c in policy.check(metrics))  # thresholds are inclusive
    worse = {**metrics, "attack_alert_yang_2022/excess_drop": 0.16}
    assert [c.metric for c in policy.check(worse) if not c.passed] == ["attack_alert_yang_2022/excess_drop"]


def test_evaluator_config_needs_an_attack():
    data = load_task_data("vulnerability", None, get_profile("tiny"))
    cfg = evaluator_config(data, get_profile("tiny"), seed=2, cache_dir="/c")
    assert cfg["attacks"] == ["wir_random_zeng_2022"] and cfg["code_columns"] == ["func"] and cfg["seed"] == 2
    assert cfg["cache_dir"] == "/c" and cfg["transforms"] == ["rename_variables", "swap_operands"]
    with pytest.raises(ValueError, match="at least one"):
        evaluator_config(data, get_profile("tiny").with_overrides(attacks=()))


# ------------------------------------------------------------------ comparison table
def _outcomes() -> list[GateOutcome]:
    a = "alert_yang_2022"
    passed = GateOutcome(
        "compressor",
        "m-compressor",
        "1",
        "passed",
        True,
        [],
        {
            "teacher_accuracy": 0.9,
            "student_accuracy": 0.88,
            "accuracy_drop": 0.02,
            "any_violation_rate": 0.1,
            "any_violation_rate/metamorphic": 0.15,
            f"attack_{a}/student_asr": 0.3,
            f"attack_{a}/teacher_asr": 0.2,
            f"attack_{a}/excess_drop_pct": 50.0,
        },
        "run1",
        {"metacompress.size_mb": "0.3012"},
    )
    failed = GateOutcome(
        "morph",
        "m-morph",
        "2",
        "failed",
        False,
        ["accuracy_drop = 0.2 violates <= 0.05", "mr1 | pipe"],
        {
            "teacher_accuracy": 0.9,
            "student_accuracy": 0.7,
            "accuracy_drop": 0.2,
            "any_violation_rate": 0.4,
            f"attack_{a}/student_asr": 0.6,
        },
        "run2",
        {"metacompress.size_mb": "0.25"},
    )
    error = GateOutcome("avatar", "m-avatar", None, "error", error="RuntimeError: boom")
    return [passed, failed, error]


def test_comparison_table_picks_each_metric_and_marks_absent_ones():
    table = comparison_table(_outcomes(), {"model": "m-teacher/1", "size_mb": 2.5})
    assert list(table["method"]) == ["teacher", "compressor", "morph", "avatar"]
    assert list(table.columns) == [
        "method",
        "model",
        "verdict",
        "champion",
        "size_mb",
        "accuracy",
        "accuracy_drop",
        "any_violation_rate",
        "any_violation_rate/metamorphic",
        "asr/alert_yang_2022",
        "excess_drop_pct/alert_yang_2022",
        "failed_checks",
    ]
    t, c, m, e = (row for _, row in table.iterrows())
    assert (t["verdict"], t["accuracy"], t["size_mb"], t["asr/alert_yang_2022"]) == ("reference", 0.9, 2.5, 0.2)
    assert (c["verdict"], c["champion"], c["model"], c["failed_checks"]) == ("passed", "yes", "m-compressor/1", "none")
    assert (c["size_mb"], c["accuracy"], c["accuracy_drop"], c["excess_drop_pct/alert_yang_2022"]) == (
        0.3012,
        0.88,
        0.02,
        50.0,
    )
    assert m["champion"] == "no" and m["asr/alert_yang_2022"] == 0.6
    assert math.isnan(m["any_violation_rate/metamorphic"]) and math.isnan(m["excess_drop_pct/alert_yang_2022"])
    assert m["failed_checks"] == "accuracy_drop = 0.2 violates <= 0.05; mr1 | pipe"
    assert e["verdict"] == "error" and e["failed_checks"] == "RuntimeError: boom" and math.isnan(e["accuracy"])


def test_markdown_round_trips_cells():
    table = comparison_table(_outcomes(), {"model": "m-teacher/1", "size_mb": 2.5})
    lines = to_markdown(table).strip().splitlines()
    assert len(lines) == 2 + len(table)
    assert lines[1] == "|" + "|".join(["---"] * len(table.columns)) + "|"
    del lines[1]
    split = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines]
    assert split[0] == list(table.columns)
    assert all(len(row) == len(table.columns) for row in split)  # the escaped pipe did not add a column
    assert split[1][-1] == ""  # the teacher is not judged
    morph = split[3]
    assert morph[0] == "morph" and morph[5] == "0.7" and morph[8] == "–"
    assert morph[-1] == "accuracy_drop = 0.2 violates <= 0.05; mr1 \\| pipe"
    assert float(split[2][4]) == pytest.approx(0.3012) and np.isclose(float(split[1][5]), 0.9)


# ------------------------------------------------------------------ a failing method
@pytest.mark.slow
def test_a_crashing_method_is_reported_the_others_run_and_the_run_ends_failed(tracking, tmp_path, monkeypatch):
    import mlflow

    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline

    body = (
        "    assert ctx.size_mb == 0.5 and ctx.unlabeled.teacher_logits is not None  # reached with soft labels\n"
        "    raise RuntimeError('search space empty')"
    )
    add_method_module(tmp_path, monkeypatch, "pipeline_boom", METHOD_SOURCE.format(name="pipeline_boom", body=body))
    result = run_pipeline(PipelineConfig(profile="tiny", methods="pipeline_boom", size_mb=0.5, progress=False))
    assert result.errors == {"pipeline_boom": "RuntimeError: search space empty"}
    row = result.table.set_index("method").loc["pipeline_boom"]
    assert row["verdict"] == "error" and row["failed_checks"] == "RuntimeError: search space empty"
    client = mlflow.MlflowClient()
    run = client.get_run(result.run_id)  # a crash, unlike a failing verdict, fails the run
    assert run.info.status == "FAILED" and run.data.tags["metacompress.failed_methods"] == "pipeline_boom"
    assert run.data.tags["metacompress.task"] == "generated-vulnerability"
    assert "comparison/comparison.csv" in [a.path for a in client.list_artifacts(result.run_id, "comparison")]
    assert {r.info.run_name: r.info.status for r in client.search_runs([run.info.experiment_id])} == {
        "metacompress-generated-vulnerability": "FAILED",
        "teacher-generated-vulnerability": "FINISHED",
        "pipeline_boom-generated-vulnerability": "FAILED",
    }
    assert [m.name for m in client.search_registered_models()] == ["metacompress-generated-vulnerability-teacher"]
    assert result.teacher_uri == "models:/metacompress-generated-vulnerability-teacher/1"
    assert "| pipeline_boom | metacompress-generated-vulnerability-pipeline_boom | error |" in result.markdown


@pytest.mark.parametrize("task", ["vulnerability", "clone"])
def test_evaluator_config_sets_the_language_the_detector_finds(task, caplog):
    """The pipeline names the language itself (issue 23): the evaluator's detector, run on
    the same data, is the oracle, and parsing the pipeline's config warns about nothing."""
    import logging

    from mlflow_metacompress.evaluation.config import detect_language, parse_config

    data = load_task_data(task, None, get_profile("tiny"))
    cfg = evaluator_config(data, get_profile("tiny"))
    test = data.frames["test"]
    with caplog.at_level(logging.WARNING, logger="mlflow_metacompress.evaluation.config"):
        assert cfg["language"] == detect_language(test[data.code_columns[0]].tolist()) == "c"
        caplog.clear()
        parsed = parse_config({"teacher": "models:/t/1", **cfg}, test, model_given=True)
    assert parsed.language == "c" and parsed.config_sources()["language"] == "given"
    assert "evaluator_config has no 'language'" not in caplog.text


@pytest.mark.slow
def test_real_bigclonebench_is_java_as_the_detector_says(shared_data):
    from mlflow_metacompress.evaluation.config import detect_language

    data = load_task_data("clone", shared_data / "bigclonebench", get_profile("tiny"))
    assert data.language == "java" == detect_language(data.frames["test"]["func1"].tolist())
