"""Commands leave the working directory empty (issue 24): evaluation, attacks and distillation
write their caches and runs elsewhere."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support.distill import QUICK_FIT


@pytest.fixture
def empty_cwd(tmp_path, monkeypatch, _migrated_db):
    """An empty working directory; tracking store, artifacts and caches live elsewhere."""
    import mlflow

    work, store = tmp_path / "work", tmp_path / "store"
    work.mkdir()
    store.mkdir()
    shutil.copy(_migrated_db, store / "mlflow.db")
    uri = f"sqlite:///{store}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_METACOMPRESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("METACOMPRESS_CACHE_DIR", str(tmp_path / "cache"))
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    from mlflow import MlflowClient

    client = MlflowClient(uri, uri)
    experiment = client.create_experiment("empty-cwd", artifact_location=(store / "artifacts").as_uri())
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment)
    monkeypatch.chdir(work)
    yield work, store, uri
    if mlflow.active_run():
        mlflow.end_run()
    mlflow.set_tracking_uri(None)
    mlflow.set_registry_uri(None)


@pytest.fixture
def logged_models(empty_cwd, tiny_classifiers):
    """Teacher and student logged as MLflow models (artifacts under the store, not the cwd)."""
    import mlflow

    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, teacher, student = tiny_classifiers
    uris = {}
    for role, model in (("teacher", teacher), ("student", student)):
        with mlflow.start_run(experiment_id=os.environ["MLFLOW_EXPERIMENT_ID"]):
            uris[role] = log_code_classifier(model, tok, code_columns=["func"]).model_uri
    return uris


def _write_data(path: Path) -> None:
    from tests.conftest import toy_frame

    df = toy_frame(8, seed=3)
    path.write_text("".join(json.dumps(r) + "\n" for r in df.to_dict("records")))


@pytest.mark.slow
def test_evaluate_with_models_leaves_an_empty_cwd_empty(empty_cwd, logged_models, tmp_path, capsys):
    from mlflow_metacompress.cli import main

    work, _, uri = empty_cwd
    data = tmp_path / "data.jsonl"
    _write_data(data)
    code = main(
        [
            "--tracking-uri",
            uri,
            "evaluate",
            "--student",
            logged_models["student"],
            "--teacher",
            logged_models["teacher"],
            "--data",
            str(data),
            "--targets",
            "target",
            "--evaluator-config",
            json.dumps({"language": "c", "transforms": ["swap_operands"], "progress": False}),
        ]
    )
    assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "mr1_violation_rate/metamorphic" in out and "run_id:" in out
    assert sorted(os.listdir(work)) == []


@pytest.mark.slow
def test_attack_cli_leaves_an_empty_cwd_empty(empty_cwd, logged_models, tmp_path, capsys):
    from mlflow_metacompress.cli import main

    work, _, uri = empty_cwd
    data = tmp_path / "data.jsonl"
    _write_data(data)
    code = main(
        [
            "--tracking-uri",
            uri,
            "attack",
            "--model",
            logged_models["student"],
            "--data",
            str(data),
            "--attack",
            "wir_random_zeng_2022",
            "--budget",
            "5",
            "--language",
            "c",
            "--limit",
            "3",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "Attack success rate" in capsys.readouterr().out
    assert sorted(os.listdir(work)) == []


@pytest.mark.slow
def test_distill_student_leaves_an_empty_cwd_empty(empty_cwd, tiny_classifiers, tmp_path, capsys):
    """``metacompress distill student`` against a tiny registered teacher, no ``--cache-dir``:
    soft labels go to MLFLOW_METACOMPRESS_CACHE, nothing to the working directory."""
    import mlflow

    from mlflow_metacompress.cli import main
    from mlflow_metacompress.models.pyfunc import log_code_classifier
    from tests.conftest import toy_frame

    work, _, uri = empty_cwd
    tok, teacher, _ = tiny_classifiers
    with mlflow.start_run(experiment_id=os.environ["MLFLOW_EXPERIMENT_ID"]):
        log_code_classifier(teacher, tok, registered_model_name="empty-cwd-teacher", code_columns=["func"])
    folder = tmp_path / "data" / "devign"
    folder.mkdir(parents=True)
    for split, n, seed in (("train", 24, 0), ("valid", 8, 1), ("test", 8, 2)):
        toy_frame(n, seed).assign(idx=range(n), project="toy").to_json(
            folder / f"{split}.jsonl", orient="records", lines=True
        )
    code = main(
        [
            "--tracking-uri",
            uri,
            "distill",
            "student",
            "--method",
            "compressor",
            "--data-dir",
            str(tmp_path / "data"),
            "--teacher",
            "models:/empty-cwd-teacher/1",
            "--size-mb",
            "0.1",
            "--population",
            "4",
            "--generations",
            "2",
            *QUICK_FIT,
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert sorted(os.listdir(work)) == []
