"""AVATAR: a tiny end-to-end run through the CLI (its search is tested in
test_distill_search.py) and the inference-energy measurement."""

from __future__ import annotations

import json

import mlflow
import pytest

from mlflow_metacompress.distill.arch import ArchSpec, param_count
from tests.support.distill import QUICK_FIT, SEARCH_ARGS
from tests.support.models import tiny_teacher

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane


@pytest.mark.slow
def test_avatar_cli_end_to_end(tracking, tmp_path, capsys):
    from mlflow_metacompress.distill.cli import main

    data, teacher = tiny_teacher(tmp_path)
    rc = main(
        [
            "student",
            "--method",
            "avatar",
            "--data-dir",
            str(data),
            "--teacher",
            teacher,
            "--size-mb",
            "0.2",
            *QUICK_FIT,
            "--no-progress",
            *SEARCH_ARGS,
        ]
    )
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model_uri"] == "models:/metacompress-avatar/1"
    tags = mlflow.MlflowClient().get_model_version("metacompress-avatar", "1").tags
    assert tags["metacompress.method"] == "avatar" and tags["metacompress.teacher"] == teacher
    config = result["config"]
    assert len(config["search"]["probes"]) == 2
    # the latency search starts from the teacher-shaped student (in the band, within the budget it
    # sets), so even this budget ends with a front, whatever the machine's measured latencies
    assert config["search"]["pareto"] and config["search"]["seeded"] >= 1
    assert config["search_fallback"] is False and "metacompress.search_fallback" not in tags
    student = ArchSpec(**config["student"])
    assert int(tags["metacompress.params"]) == param_count(student)  # the registered model is the searched one
    assert float(tags["metacompress.size_mb"]) <= 0.2
    assert config["temperature"] == 1.0  # Compressor's loss


def test_energy_per_1000_scales_codecarbon_energy_and_is_skipped_without_it(monkeypatch):
    import importlib.machinery
    import sys
    import types

    from mlflow_metacompress.distill import energy

    calls = []

    class Tracker:
        def __init__(self, **kw):
            self.final_emissions_data = types.SimpleNamespace(energy_consumed=0.002)

        def start(self):
            calls.append("start")

        def stop(self):
            calls.append("stop")

    fake = types.ModuleType("codecarbon")
    fake.__spec__ = importlib.machinery.ModuleSpec("codecarbon", None)
    fake.OfflineEmissionsTracker = Tracker
    monkeypatch.setitem(sys.modules, "codecarbon", fake)
    ran = []
    assert energy.energy_per_1000(lambda: ran.append(1), 200) == pytest.approx(0.01)  # 0.002 kWh / 200 × 1000
    assert ran == [1] and calls == ["start", "stop"]
    monkeypatch.setattr(energy, "available", lambda: False)
    assert energy.energy_per_1000(lambda: ran.append(1), 200) is None and ran == [1]
    assert energy.log_inference_energy(None, None, ["x"], None, "", ("func",)) == {}
