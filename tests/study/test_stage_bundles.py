"""Stage bundles (``study/bundle.py``): a teacher stage finished in one store is written into
a repository folder and adopted by an empty store on another machine, which then runs
nothing and predicts with the very same weights; bundles of other arguments are refused."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tests.conftest import TOY_CODE
from tests.support.study import switch_to_empty_store

pytestmark = pytest.mark.slow


def _fake_training(tiny_classifiers, calls):
    """``run_teacher_job`` that logs the tiny classifier as the stage's model (no training)."""

    def run_teacher_job(job):
        import mlflow

        from mlflow_metacompress.models.pyfunc import log_code_classifier

        calls.append(job.fit.seed)
        tok, model, _ = tiny_classifiers
        info = log_code_classifier(
            model, tok, registered_model_name=job.registered_name, code_columns=["func1", "func2"],
            tags={"metacompress.method": "teacher"},
        )  # fmt: skip
        uri = f"models:/{job.registered_name}/{info.registered_model_version}"
        return SimpleNamespace(model_uri=uri, run_id=mlflow.active_run().info.run_id, metrics={"size_mb": 0.5})

    return run_teacher_job


def _data():
    rows = [(TOY_CODE[i % len(TOY_CODE)], TOY_CODE[(i + 1) % len(TOY_CODE)], i % 2) for i in range(12)]
    test = pd.DataFrame(rows, columns=["func1", "func2", "label"])
    return SimpleNamespace(
        frames=lambda rows: rows, teacher_train=test, codexglue_task="clone", test=test,
        code_columns=("func1", "func2"), label_column="label",
    )  # fmt: skip


def test_a_bundled_teacher_is_adopted_by_an_empty_store_with_the_same_weights(
    tracking, tmp_path, monkeypatch, tiny_classifiers, _migrated_db
):
    import mlflow

    from mlflow_metacompress.distill import teacher as teacher_mod
    from mlflow_metacompress.study import teacher as study_teacher
    from mlflow_metacompress.study.bundle import ADOPTED_TAG, STAGE_FILE, find_bundle
    from mlflow_metacompress.study.config import StudyConfig

    calls: list[int] = []
    monkeypatch.setattr(teacher_mod, "run_teacher_job", _fake_training(tiny_classifiers, calls))
    folder = tmp_path / "repo" / "stages"
    cfg = replace(StudyConfig(data_dir=str(tmp_path / "machine-a" / "data")), teacher_seed=1)
    data = _data()
    first = study_teacher.teacher_stage(cfg, data, folder)
    assert calls == [1] and not first.skipped
    bundles = [p for p in folder.iterdir()]
    assert [p.name for p in bundles] == [f"teacher-{first.key}"]
    record = json.loads((bundles[0] / STAGE_FILE).read_text())
    assert record["metrics"]["teacher_test_acc"] == pytest.approx(
        mlflow.MlflowClient().get_run(first.run_id).data.metrics["teacher_test_acc"]
    )
    expected = np.asarray(mlflow.pyfunc.load_model(first.outputs["model_uri"]).predict(data.test[["func1", "func2"]]))

    # another machine: an empty store, the data at another absolute path
    switch_to_empty_store(tmp_path / "other.db", _migrated_db)
    elsewhere = replace(cfg, data_dir=str(tmp_path / "machine-b" / "data"))
    monkeypatch.setattr(teacher_mod, "run_teacher_job", lambda job: pytest.fail("a bundled teacher was trained again"))
    adopted = study_teacher.teacher_stage(elsewhere, data, folder)
    assert adopted.skipped and adopted.key != first.key  # the key holds the data path; the bundle matched anyway
    run = mlflow.MlflowClient().get_run(adopted.run_id)
    assert run.data.tags[ADOPTED_TAG] == str(bundles[0])
    assert run.data.metrics == record["metrics"]
    got = np.asarray(mlflow.pyfunc.load_model(adopted.outputs["model_uri"]).predict(data.test[["func1", "func2"]]))
    np.testing.assert_array_equal(got, expected)
    name, version = adopted.outputs["model_uri"][len("models:/") :].rsplit("/", 1)
    assert mlflow.MlflowClient().get_model_version(name, version).tags["metacompress.method"] == "teacher"
    # found finished from now on: a second call adopts nothing more
    again = study_teacher.teacher_stage(elsewhere, data, folder)
    assert again.run_id == adopted.run_id and len(list(folder.iterdir())) == 1

    # a bundle of other arguments (another teacher seed) is not this stage, nor is a half-written one
    other = replace(elsewhere, teacher_seed=2)
    assert find_bundle(folder, "teacher", study_teacher.teacher_args(other)) is None
    shutil.copytree(bundles[0], folder / f"teacher-{first.key}x.partial")
    (bundles[0] / STAGE_FILE).rename(bundles[0] / "moved.json")
    assert find_bundle(folder, "teacher", study_teacher.teacher_args(elsewhere)) is None


def test_the_command_line_passes_the_stages_folder(monkeypatch):
    import mlflow

    from mlflow_metacompress.study import cli, stages

    monkeypatch.setattr(mlflow, "set_experiment", lambda name: None)  # no experiment left active for later tests
    seen = {}
    monkeypatch.setattr(stages, "run_study", lambda cfg, **kw: seen.update(kw) or {})
    cli.main(["--only", "teacher", "--stages", "reproduction/three-teachers/stages"])
    assert seen["bundles"] == "reproduction/three-teachers/stages" and seen["only"] == "teacher"


def test_a_teachers_soft_labels_travel_in_its_bundle_and_a_tampered_entry_does_not(
    tracking, tmp_path, monkeypatch, tiny_classifiers, _migrated_db
):
    import mlflow

    from mlflow_metacompress import cache
    from mlflow_metacompress.cache_keys import rows_digest
    from mlflow_metacompress.distill import teacher as teacher_mod
    from mlflow_metacompress.distill.soft_labels import teacher_logits
    from mlflow_metacompress.study import teacher as study_teacher
    from mlflow_metacompress.study.bundle import bundle_of
    from mlflow_metacompress.study.bundle_cache import CACHE_DIR, _header, refresh
    from mlflow_metacompress.study.config import StudyConfig

    monkeypatch.setattr(teacher_mod, "run_teacher_job", _fake_training(tiny_classifiers, []))
    folder = tmp_path / "stages"
    cfg = replace(StudyConfig(data_dir=str(tmp_path / "machine-a" / "data")), teacher_seed=1)
    data, columns = _data(), ["func1", "func2"]
    first = study_teacher.teacher_stage(cfg, data, folder)
    bundle = bundle_of(folder, "teacher", first.key)
    assert bundle is not None and refresh(bundle, first.outputs["model_uri"]) == 0  # nothing computed yet
    halves = data.test.iloc[:5], data.test.iloc[5:]  # two row sets, two entries
    expected = [teacher_logits(first.outputs["model_uri"], h, columns) for h in halves]
    assert refresh(bundle, first.outputs["model_uri"]) == 2 and refresh(bundle, first.outputs["model_uri"]) == 0
    damaged = next(
        e for e in (bundle / CACHE_DIR).glob("*.npz") if _header(e)["rows"] == rows_digest(halves[1], columns)
    )
    raw = damaged.read_bytes()
    damaged.write_bytes(raw[:-300] + bytes(300))  # the second half's entry, damaged in the repository

    switch_to_empty_store(tmp_path / "other.db", _migrated_db)
    adopted = study_teacher.teacher_stage(replace(cfg, data_dir=str(tmp_path / "machine-b" / "data")), data, folder)
    assert adopted.skipped
    loads: list[str] = []
    real_load = mlflow.pyfunc.load_model
    monkeypatch.setattr(mlflow.pyfunc, "load_model", lambda uri, *a, **k: loads.append(uri) or real_load(uri, *a, **k))
    got = [teacher_logits(adopted.outputs["model_uri"], h, columns) for h in halves]
    np.testing.assert_array_equal(got[0], expected[0])  # a cache hit under the adopted model's identity
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-6)  # recomputed: same weights
    assert len(loads) == 1  # only the damaged half ran the teacher
    assert len(list(cache.location().glob("soft_labels-*.npz"))) == 4  # each half under each identity
