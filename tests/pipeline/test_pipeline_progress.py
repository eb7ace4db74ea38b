"""Stage lines, heartbeats and Lightning's epoch lines: what the pipeline says when its
output is a file (the end-to-end check on ``mlflow run .`` is in test_mlproject.py)."""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest

from mlflow_metacompress.heartbeat import (
    HEARTBEAT_ENV,
    Heartbeat,
    current_note,
    format_seconds,
    heartbeat_interval,
    note,
)
from mlflow_metacompress.pipeline.progress import StageClock, pipeline_stages

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

PROGRESS = "mlflow_metacompress.pipeline.progress"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == PROGRESS]


def _wait_for(predicate, deadline_s: float = 20.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_pipeline_stages_are_the_teacher_then_distill_and_gate_per_method():
    assert pipeline_stages(["compressor", "morph"]) == [
        ("teacher", "teacher"),
        ("distill", "distill compressor"),
        ("gate", "gate compressor"),
        ("distill", "distill morph"),
        ("gate", "gate morph"),
    ]


def test_stage_lines_give_index_elapsed_and_a_remaining_time_from_finished_stages(caplog):
    caplog.set_level(logging.INFO, logger=PROGRESS)
    clock = FakeClock()
    stages = StageClock(pipeline_stages(["a", "b"]), interval=3600, clock=clock)
    with stages.stage("teacher"):
        clock.now += 100
    with stages.stage("distill a"):
        clock.now += 40
    clock.now += 5  # time between stages counts in the elapsed time, not in any stage
    with stages.stage("gate a"):
        clock.now += 20
        running = stages.line("probe")
    lines = _lines(caplog)
    assert lines[0] == "stage 1/5 teacher: started · elapsed 0:00:00 · remaining estimated after the first stage"
    # after the teacher, every kind not seen yet is estimated by the mean of all finished stages (100 s each)
    assert lines[1] == "stage 1/5 teacher: done in 0:01:40 · elapsed 0:01:40 · remaining ~0:06:40"
    assert lines[2] == "stage 2/5 distill a: started · elapsed 0:01:40 · remaining ~0:06:40"
    # distill b is now estimated by distill a (40 s); gates by the mean of all (70 s)
    assert lines[3] == "stage 2/5 distill a: done in 0:00:40 · elapsed 0:02:20 · remaining ~0:03:00"
    assert lines[4] == "stage 3/5 gate a: started · elapsed 0:02:25 · remaining ~0:03:00"
    # inside gate a: its own 70 s estimate minus the 20 s spent, + distill b 40 s + gate b 70 s
    assert running == "stage 3/5 gate a: probe · elapsed 0:02:45 · remaining ~0:02:40"
    assert lines[5] == "stage 3/5 gate a: done in 0:00:20 · elapsed 0:02:45 · remaining ~0:01:00"


def test_skipped_and_failed_stages_leave_the_estimate_and_say_why(caplog):
    caplog.set_level(logging.INFO, logger=PROGRESS)
    clock = FakeClock()
    stages = StageClock(pipeline_stages(["a", "b"]), interval=3600, clock=clock)
    with stages.stage("teacher"):
        clock.now += 60
    with pytest.raises(RuntimeError, match="boom"):
        with stages.stage("distill a"):
            clock.now += 7
            raise RuntimeError("boom")
    assert stages.pending("gate a") and not stages.pending("distill a")
    stages.skip("gate a", "its distillation failed")
    assert not stages.pending("gate a")
    with pytest.raises(KeyboardInterrupt):
        with stages.stage("distill b"):
            clock.now += 3
            raise KeyboardInterrupt
    lines = _lines(caplog)
    assert lines[3] == "stage 2/5 distill a: failed after 0:00:07 (RuntimeError) · elapsed 0:01:07 · remaining ~0:03:00"
    assert lines[4] == "stage 3/5 gate a: skipped (its distillation failed)"
    assert lines[5] == "stage 4/5 distill b: started · elapsed 0:01:07 · remaining ~0:02:00"
    assert lines[6] == "stage 4/5 distill b: interrupted after 0:00:03 · elapsed 0:01:10 · remaining ~0:01:57"
    with pytest.raises(KeyError, match="no pending stage 'gate a'"):
        stages.skip("gate a", "twice")


def test_heartbeat_repeats_the_running_line_with_the_work_s_note(caplog):
    caplog.set_level(logging.INFO, logger=PROGRESS)
    stages = StageClock(pipeline_stages(["a"]), interval=0.05)
    with stages.stage("teacher"):
        note("fit epoch 2/15, ETA 0:01:02")
        assert _wait_for(lambda: sum("running" in line for line in _lines(caplog)) >= 2)
        assert current_note() == "fit epoch 2/15, ETA 0:01:02"
    beats = [line for line in _lines(caplog) if "running" in line]
    assert re.fullmatch(
        r"stage 1/3 teacher: running \d:\d\d:\d\d \(fit epoch 2/15, ETA 0:01:02\) · "
        r"elapsed \d:\d\d:\d\d · remaining estimated after the first stage",
        beats[-1],
    )
    assert current_note() is None  # the next stage starts without the previous one's note
    count = len(_lines(caplog))
    time.sleep(0.2)  # the heartbeat stopped with its stage
    assert len(_lines(caplog)) == count
    assert not [t for t in threading.enumerate() if t.name == "metacompress-heartbeat"]


def test_heartbeat_interval_comes_from_the_environment_when_it_starts(monkeypatch):
    monkeypatch.delenv(HEARTBEAT_ENV, raising=False)
    assert heartbeat_interval() == 30.0
    monkeypatch.setenv(HEARTBEAT_ENV, "0.5")
    assert heartbeat_interval() == 0.5 and Heartbeat(lambda: "x").interval == 0.5
    assert heartbeat_interval(2) == 2.0
    for bad in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv(HEARTBEAT_ENV, bad)
        with pytest.raises(ValueError, match=HEARTBEAT_ENV):
            heartbeat_interval()
    with pytest.raises(ValueError, match="positive"):
        heartbeat_interval(0)


def test_a_broken_status_line_does_not_stop_the_heartbeat(caplog):
    caplog.set_level(logging.DEBUG, logger="hb-test")
    calls = []

    def line() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("bad line")
        return "alive"

    with Heartbeat(line, 0.02, logging.getLogger("hb-test")):
        assert _wait_for(lambda: any(r.getMessage() == "alive" for r in caplog.records))


def test_format_seconds():
    assert format_seconds(0) == "0:00:00" and format_seconds(3725.4) == "1:02:05"
    assert format_seconds(None) == format_seconds(float("inf")) == "?"


# ------------------------------------------------------------------ Lightning under a file
def test_fit_logs_epoch_lines_and_shows_no_bar_when_output_is_not_a_terminal(caplog, monkeypatch):
    import torch

    from mlflow_metacompress.distill import training
    from mlflow_metacompress.distill.arch import ArchSpec
    from mlflow_metacompress.distill.datasets import CodeExamples
    from mlflow_metacompress.distill.modules import ClassifierModule
    from mlflow_metacompress.models.tokenizer import train_tokenizer
    from tests.conftest import TOY_CODE, toy_frame

    tok = train_tokenizer(TOY_CODE * 5, vocab_size=300)
    train = CodeExamples.from_frame(toy_frame(16, seed=1), ["func"], "target")
    val = CodeExamples.from_frame(toy_frame(8, seed=2), ["func"], "target")
    trainers = []
    real_trainer = training.L.Trainer

    levels: list[int] = []

    def spy(*args, **kwargs):
        levels.append(logging.getLogger("lightning.pytorch").getEffectiveLevel())
        trainers.append(real_trainer(*args, **kwargs))
        return trainers[-1]

    monkeypatch.setattr(training.L, "Trainer", spy)
    # start from Lightning's own logger levels, whatever earlier tests in the session left
    # (a dictConfig elsewhere may have disabled existing loggers)
    for name in [n for n in logging.root.manager.loggerDict if n.startswith("lightning")]:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
        monkeypatch.setattr(logging.getLogger(name), "disabled", False)
    logging.disable(logging.NOTSET)
    caplog.set_level(logging.INFO)
    notices: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: notices.append(record.getMessage())  # type: ignore[method-assign]  # a recording handler
    logging.getLogger("lightning.pytorch").addHandler(handler)
    gpu_notices, histories = [], []
    try:
        for terminal in (False, True):
            monkeypatch.setattr(training, "on_terminal", lambda terminal=terminal: terminal)
            torch.manual_seed(0)
            model = ArchSpec(
                vocab_size=len(tok),
                hidden_size=16,
                num_hidden_layers=1,
                num_attention_heads=1,
                intermediate_size=32,
                max_length=64,
            ).build()
            result = training.fit(
                ClassifierModule(model),
                tok,
                train,
                val,
                training.FitConfig(epochs=2, batch_size=8, progress=True),
                mlflow_logger=False,
            )
            assert result.epochs_run == 2
            histories.append(result.history)
            gpu_notices.append(sum("GPU available" in m for m in notices))
            notices.clear()
    finally:
        logging.getLogger("lightning.pytorch").removeHandler(handler)
    quiet, shown = trainers
    assert quiet.progress_bar_callback is None and shown.progress_bar_callback is not None
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "mlflow_metacompress.distill.training" and r.getMessage().startswith("fit epoch")
    ]
    assert len(lines) == 4  # two epochs per fit
    pattern = r"fit epoch (\d)/2 · \d:\d\d:\d\d · ETA \d:\d\d:\d\d · val_acc (\d\.\d{3}), val_loss \d\.\d{3}"
    for line, row in zip(lines, [r for h in histories for r in h], strict=True):
        match = re.fullmatch(pattern, line)
        assert match, line
        assert int(match[1]) == row["epoch"] + 1 and float(match[2]) == pytest.approx(row["val_acc"], abs=5e-4)
    assert " · ETA 0:00:00 · " in lines[1]
    # Lightning's start-up notices are quieted when no bar is shown, and only then
    # (Lightning's own notice is not emitted in every session state, so the level it would
    # be logged at is checked too: raised to WARNING only without a bar)
    assert gpu_notices[0] == 0
    assert levels == [logging.WARNING, logging.INFO]
