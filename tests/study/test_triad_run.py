"""The three-teacher study and issue 44's repair page run end to end on generated
BigCloneBench-shaped files with tiny models: every part's stages finish, the teachers are
bundled, the pages are written from the store, and a rerun trains, evaluates and attacks
nothing (every stage is found finished)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from tests.support.study import bigclonebench_folder, switch_to_empty_store, tiny_study_config

pytestmark = pytest.mark.slow


def test_the_three_teacher_study_and_the_repair_page_run_then_a_rerun_runs_nothing(
    tracking, tmp_path, monkeypatch, _migrated_db
):
    import mlflow

    from mlflow_metacompress.study.repair_plan import RepairPlan
    from mlflow_metacompress.study.repair_study import run_repair_study
    from mlflow_metacompress.study.triad import run_triad
    from mlflow_metacompress.study.triad_plan import TriadPlan

    base = replace(
        tiny_study_config(bigclonebench_folder(tmp_path / "data")), eval_seed=0, attack_rows=None, attacks=()
    )
    plan = TriadPlan(
        base=base, teacher_seeds=(0, 1), seeds={"compressor": (0,)}, confirm_seeds=(10,),
        attacks=("wir_random_zeng_2022",), budgets=(2, 6), attack_rows=8,
    )  # fmt: skip
    stages, out = tmp_path / "stages", tmp_path / "three"
    done = run_triad(plan, output=out, bundles=stages)
    assert done["failed"] == []
    assert len(list(stages.glob("teacher-*/stage.json"))) == 2
    record = json.loads((out / "bigclonebench.json").read_text())
    assert set(record["rows"]) == {"0", "1"}
    assert set(record["rows"]["0"]) == {"replica:1", "compressor:0"} and set(record["rows"]["1"]) == {
        "replica:0",
        "compressor:0",
    }
    assert len(record["rows"]["0"]["compressor:0"]["original"]["correct"]) == 8
    a = record["attacks"]["wir_random_zeng_2022"]
    assert set(a["teacher_success"]["2"]) == {"0", "1"} and a["budget"] in (2, 6, None)
    if a["budget"] is not None:
        assert set(a["students"]["compressor"]) == {"0", "1"}
    assert set(record["confirmation"]) == {"confirmation", "natural"}
    assert set(record["confirmation"]["confirmation"]) == {"0", "1"}
    v = record["verdicts"]
    assert v["premise"]["compressor"]["units"] == 2
    assert "mr1/transformed" in v["relations"]["excess"]
    assert "## The premise (rule 3)" in (out / "bigclonebench.md").read_text()

    options = {
        "probes": 2, "probe_steps": 1, "probe_rows": 8, "probe_valid": 8, "population": 2, "generations": 1,
        "variant_rows": 8, "rounds": 1, "queries": 3, "search_rows": 4, "round_steps": 2,
    }  # fmt: skip
    repair = RepairPlan(base=base, seeds=(0,), options=options, queries=4, deviation_rows=4)
    repaired = run_repair_study(repair, output=tmp_path / "repair", bundles=stages)
    assert repaired["failed"] == []
    page = json.loads((tmp_path / "repair" / "bigclonebench.json").read_text())
    assert page["trained_transforms"] and set(page["seeds"]["0"]) == {"compressor", "repair"}
    assert "deviation_rows_agreeing" in page["seeds"]["0"]["repair"]["metrics"]
    assert "deviation_rows_agreeing" in page["reference"]
    assert page["verdicts"]["seeds"] == ["0"]

    def never(*args, **kwargs):
        raise AssertionError("a finished stage ran again")

    monkeypatch.setattr("mlflow_metacompress.distill.teacher.run_teacher_job", never)
    monkeypatch.setattr("mlflow_metacompress.distill.runner.run_student_job", never)
    monkeypatch.setattr(mlflow.models, "evaluate", never)
    again = run_triad(plan, output=out, bundles=stages)
    assert again["failed"] == []
    assert json.loads((out / "bigclonebench.json").read_text())["verdicts"] == v
    assert run_repair_study(repair, output=tmp_path / "repair", bundles=stages)["failed"] == []

    # a runner older than the carried stages bundled only teachers: `report` bundles the rest
    def triad_bundles():  # the repair study's own students aside
        kinds = ("student", "evaluate", "attack")
        return sorted(p.name for p in stages.iterdir() if p.name.split("-")[0] in kinds and "-repair-" not in p.name)

    carried = triad_bundles()
    for name in carried:
        shutil.rmtree(stages / name)
    reported = run_triad(plan, output=out, bundles=stages, only="report")
    assert triad_bundles() == carried
    assert reported["bundled"] >= len(carried)

    # another machine: an empty store, the same repository. Every finished stage comes from
    # its bundle (students with their models, evaluations with their per-row results, attacks
    # with their success rates), nothing runs, and both pages are written again unchanged.
    page_before = json.loads((tmp_path / "repair" / "bigclonebench.json").read_text())
    kinds = {p.name.split("-")[0] for p in stages.iterdir()}
    assert {"teacher", "student", "evaluate", "attack", "repair"} <= kinds, kinds
    assert not list(stages.glob("*.partial"))
    import pandas as pd

    bundled = pd.read_parquet(next(stages.glob("evaluate-compressor-*/artifacts/metacompress/per_sample.parquet")))
    assert "code" not in bundled and {"variant", "row", "mr1_violation", "student_pred"} <= set(bundled)
    switch_to_empty_store(tmp_path / "elsewhere.db", _migrated_db)
    assert run_triad(plan, output=out, bundles=stages)["failed"] == []
    assert json.loads((out / "bigclonebench.json").read_text())["verdicts"] == v
    assert run_repair_study(repair, output=tmp_path / "repair", bundles=stages)["failed"] == []
    page_after = json.loads((tmp_path / "repair" / "bigclonebench.json").read_text())
    assert page_after["verdicts"] == page_before["verdicts"] and page_after["seeds"] == page_before["seeds"]
    assert page_after["trained_transforms"] == page_before["trained_transforms"]  # the student run's tag came along
