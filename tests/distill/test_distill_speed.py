"""Speed on every student: side-by-side timing (distill/speed.py), its tags and energy
note, the evaluator's ``student_speedup`` and a gate on it, and AVATAR's fallback on a
small budget registering a tagged student."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters import timing
from mlflow_metacompress.distill import speed
from tests.conftest import TOY_CODE, toy_frame


class FakeClock:
    """A clock that only the fake models advance."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeModel:
    def __init__(self, clock: FakeClock, seconds: list[float], log: list[str], name: str) -> None:
        self.clock, self.seconds, self.log, self.name = clock, list(seconds), log, name

    def predict(self, df: pd.DataFrame) -> pd.DataFrame:
        assert len(df) == speed.BATCH and list(df.columns) == ["func"]
        self.log.append(self.name)
        self.clock.now += self.seconds.pop(0) if len(self.seconds) > 1 else self.seconds[0]
        return pd.DataFrame({"0": [0.5] * len(df), "1": [0.5] * len(df)})


def test_side_by_side_alternates_and_keeps_the_best_run():
    clock, log = FakeClock(), []
    t = FakeModel(clock, [9.0, 0.8, 0.6, 0.9], log, "teacher")  # the first call is the warm-up
    s = FakeModel(clock, [9.0, 0.3, 0.2, 0.25], log, "student")
    frame = pd.DataFrame({"func": ["a", "b"]})
    best = speed.side_by_side(
        {
            "teacher": lambda: t.predict(speed.batch_of(frame, ["func"])),
            "student": lambda: s.predict(speed.batch_of(frame, ["func"])),
        },
        3,
        clock,
    )
    assert log == ["teacher", "student"] * 4
    assert best == pytest.approx({"teacher": 0.6, "student": 0.2})
    assert speed.batch_of(frame, ["func"], 5)["func"].tolist() == ["a", "b", "a", "b", "a"]
    with pytest.raises(ValueError, match="repeats"):
        speed.side_by_side({}, 0)


@pytest.mark.slow
def test_tag_student_tags_the_version_with_latency_speedup_device(tracking, tiny_classifiers, monkeypatch):
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, student, _ = tiny_classifiers
    with mlflow.start_run():
        log_code_classifier(student, tok, registered_model_name="speedy", code_columns=["func"])
    clock, log = FakeClock(), []
    teacher, fake_student = FakeModel(clock, [0.064], log, "teacher"), FakeModel(clock, [0.016], log, "student")
    monkeypatch.setattr("mlflow_metacompress.distill.energy.available", lambda: False)
    metrics = speed.tag_student(fake_student, teacher, toy_frame(8), ["func"], "speedy", "1", clock=clock)
    tags = mlflow.MlflowClient().get_model_version("speedy", "1").tags
    assert float(tags["metacompress.latency_ms"]) == pytest.approx(0.5)  # 16 ms / 32 samples
    assert float(tags["metacompress.teacher_latency_ms"]) == pytest.approx(2.0)
    assert float(tags["metacompress.speedup_vs_teacher"]) == pytest.approx(4.0)
    assert tags["metacompress.device"].startswith("cpu:") and "metacompress.energy_j_per_1k" not in tags
    assert metrics == pytest.approx({"latency_ms": 0.5, "teacher_latency_ms": 2.0, "speedup_vs_teacher": 4.0})
    # a measurement that cannot run warns and tags nothing, never failing the training run
    assert speed.tag_student("models:/nope/1", teacher, toy_frame(8), ["func"], "speedy", "1") == {}


def test_energy_is_tagged_with_codecarbon_and_says_estimated_without_counters(monkeypatch):
    from mlflow_metacompress.distill import energy

    kwh = iter([2e-6, 8e-6])  # student, then teacher

    class Tracker:
        def __init__(self, **kw):
            self.final_emissions_data = types.SimpleNamespace(energy_consumed=next(kwh))

        def start(self):
            pass

        def stop(self):
            pass

    fake = types.ModuleType("codecarbon")
    fake.__spec__ = importlib.machinery.ModuleSpec("codecarbon", None)
    fake.OfflineEmissionsTracker = Tracker
    monkeypatch.setitem(sys.modules, "codecarbon", fake)
    monkeypatch.setattr(speed, "has_power_counters", lambda: False)
    assert energy.available()
    clock, log = FakeClock(), []
    report = speed.measure(
        FakeModel(clock, [0.01], log, "s"), FakeModel(clock, [0.02], log, "t"), toy_frame(4), ["func"], clock=clock
    )
    rows = 3 * speed.BATCH  # three rounds of a batch per model
    assert report.energy == pytest.approx(
        {"student": 2e-6 * 3.6e6 * 1000 / rows, "teacher": 8e-6 * 3.6e6 * 1000 / rows}
    )
    tags = report.tags()
    assert tags["metacompress.energy_note"].startswith("estimated")
    assert float(tags["metacompress.teacher_energy_j_per_1k"]) == pytest.approx(report.energy["teacher"], rel=1e-3)
    monkeypatch.setattr(energy, "available", lambda: False)
    assert (
        speed.measure(
            FakeModel(clock, [0.01], log, "s"), FakeModel(clock, [0.02], log, "t"), toy_frame(4), ["func"], clock=clock
        )
        .tags()
        .keys()
        .isdisjoint({"metacompress.energy_j_per_1k", "metacompress.energy_note"})
    )


def _log_pair(big_hidden: int = 256, big_layers: int = 4) -> tuple[str, str]:
    """A large and a tiny classifier logged as pyfuncs: (teacher URI, student URI)."""
    import torch

    from mlflow_metacompress.models.classifier import CodeClassifier
    from mlflow_metacompress.models.pyfunc import log_code_classifier
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    tok = train_tokenizer(TOY_CODE * 5, vocab_size=400)
    uris = []
    for hidden, layers in ((big_hidden, big_layers), (16, 1)):
        torch.manual_seed(0)
        model = CodeClassifier.from_config(
            len(tok),
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=max(1, hidden // 64),
            intermediate_size=4 * hidden,
            max_length=128,
            pad_token_id=tok.pad_token_id,
        ).eval()
        with mlflow.start_run():
            uris.append(log_code_classifier(model, tok, code_columns=["func"]).model_uri)
    return uris[0], uris[1]


def _evaluate(teacher: str, student: str, **cfg) -> dict[str, float]:
    data = toy_frame(32)
    with mlflow.start_run():
        result = mlflow.models.evaluate(
            student,
            data,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": teacher, "transforms": [], "progress": False, **cfg},
        )
    return result.metrics


@pytest.mark.slow
def test_evaluator_measures_student_speedup_and_a_policy_gates_on_it(tracking, monkeypatch):
    from mlflow_metacompress.gates.policy import GatePolicy

    teacher, student = _log_pair()
    real = _evaluate(teacher, student, measure_speed=True)  # really measured: 4×256 against 1×16
    assert real["student_speedup"] > 1
    assert real["student_speedup"] == pytest.approx(real["teacher_latency_ms"] / real["student_latency_ms"])
    assert "student_speedup" not in _evaluate(teacher, student)  # off by default

    policy = GatePolicy.from_mapping({"name": "fast", "thresholds": {"student_speedup": ">= 2"}})
    for teacher_s, passes in ((0.10, True), (0.03, False)):  # deterministic timings for the gate
        monkeypatch.setattr(  # the evaluator times through the adapter layer (adapters/timing.py)
            timing, "side_by_side", lambda runs, *a, t=teacher_s, **k: {"teacher": t, "student": 0.02}
        )
        metrics = _evaluate(teacher, student, measure_speed=True)
        assert metrics["student_speedup"] == pytest.approx(teacher_s / 0.02)
        assert [r.passed for r in policy.check(metrics)] == [passes]


def test_measure_speed_is_refused_in_static_mode_and_skipped_for_callables(tracking, caplog):
    from mlflow_metacompress.adapters.checks import MetaCompressInputError
    from mlflow_metacompress.adapters.predictors import resolve_model
    from mlflow_metacompress.evaluation.config import parse_config
    from mlflow_metacompress.evaluation.speed import speed_metrics

    df = pd.DataFrame({"func": TOY_CODE, "t0": 0.5, "t1": 0.5, "s0": 0.5, "s1": 0.5})
    with pytest.raises(MetaCompressInputError, match="measure_speed"):
        parse_config(
            {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], "measure_speed": True},
            df,
            model_given=False,
        )
    with pytest.raises(MetaCompressInputError, match="measure_speed"):
        parse_config({"teacher": "x", "measure_speed": "yes"}, df, model_given=True)

    def fn(frame):
        return np.full((len(frame), 2), 0.5)

    cfg = parse_config({"teacher": fn, "measure_speed": True, "transforms": []}, df, model_given=True)
    assert speed_metrics(df, cfg, resolve_model(fn, "teacher"), resolve_model(fn, "student")) == {}
    assert "not a local pyfunc" in caplog.text


@pytest.mark.slow
def test_avatar_small_budget_falls_back_registers_and_tags(tracking, tmp_path):
    """Issue 16: a search that ends with nothing feasible used to raise 'nsga2 found no
    configuration within the size band'; now the teacher-shaped student is distilled. The
    warm start makes small budgets find a front, so a latency slack no configuration meets
    (1e-6 × the reference's latency) empties the search explicitly."""
    from mlflow_metacompress.distill import distill_student
    from mlflow_metacompress.distill.arch import ArchSpec, param_count
    from mlflow_metacompress.distill.search.objective import reference
    from tests.support.models import tiny_teacher

    data, teacher = tiny_teacher(tmp_path)
    result = distill_student(
        data,
        teacher,
        "devign",
        method="avatar",
        size_mb=3.0,
        max_length=64,
        epochs=1,
        batch_size=8,
        max_steps=2,
        registered_name="small-budget",
        progress=False,
        population=4,
        generations=2,
        probes=2,
        probe_steps=1,
        probe_rows=16,
        probe_valid=8,
        size_lower=0.9,
        latency_slack=1e-6,
        cache_dir=tmp_path / "cache",
    )
    assert result.version == "1" and result.config["search_fallback"] is True
    record = result.config["search"]
    assert record["fallback"] == "teacher_shaped" and record["objective"] == "latency"
    assert record["pareto"] == [] and record["seeded"] >= 1 and record["cost_budget"] > 0
    # the default cost is the deterministic FLOP count; the latency is measured and reported, not searched on
    assert record["cost"] == "flops" and record["cost_unit"] == "MFLOP" and record["latency_budget_ms"] is None
    student = ArchSpec(**result.config["student"])
    expected = reference(3.0, max_length=64, max_vocab=1000)
    assert student.hidden_size == expected.hidden_size and student.num_hidden_layers == expected.num_hidden_layers
    tags = mlflow.MlflowClient().get_model_version("small-budget", "1").tags
    assert tags["metacompress.search_fallback"] == "true"
    assert int(tags["metacompress.params"]) == param_count(student)
    assert float(tags["metacompress.latency_ms"]) > 0 and float(tags["metacompress.speedup_vs_teacher"]) > 0
    assert f"{result.metrics['speedup_vs_teacher']:.3f}" == tags["metacompress.speedup_vs_teacher"]
