"""Helpers of the study tests: a generated BigCloneBench folder, a tiny study configuration
and a switch to another machine's empty store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlflow


def bigclonebench_folder(root, rows: int = 160):
    """Generated clone pairs written in the shared folder's layout (data_full.jsonl,
    train_full.txt, unlabeled_codebert.txt, valid.txt, test.txt)."""
    from mlflow_metacompress.data.generators.splits import make_splits

    frames = make_splits("clone", rows, 0)
    ids: dict[str, int] = {}
    folder = root / "bigclonebench"
    folder.mkdir(parents=True)

    def pairs(df, name):
        lines = []
        for a, b, y in zip(df["func1"], df["func2"], df["label"], strict=True):
            i, j = (ids.setdefault(t, len(ids)) for t in (a, b))
            lines.append(f"{i}\t{j}\t{int(y)}")
        (folder / name).write_text("\n".join(lines) + "\n")

    pairs(frames["train"], "train_full.txt")
    pairs(frames["train"].iloc[::-1], "unlabeled_codebert.txt")  # "CodeBERT's" labels: the true ones
    pairs(frames["valid"], "valid.txt")
    pairs(frames["test"], "test.txt")
    with (folder / "data_full.jsonl").open("w") as fh:
        for text, i in ids.items():
            fh.write(json.dumps({"func": text, "idx": str(i)}) + "\n")
    return root


def tiny_study_config(data_dir):
    from mlflow_metacompress.study.config import StudyConfig, TeacherBudget

    return StudyConfig(
        task="clone",
        data_dir=str(data_dir),
        seeds=(0,),
        methods=("compressor",),
        eval_rows=8,
        attacks=("wir_random_zeng_2022",),
        transforms=["rename_variables"],
        threads=1,
        teacher=TeacherBudget(
            vocab_size=1000,
            layers=1,
            hidden=32,
            heads=2,
            intermediate=64,
            max_length=64,
            batch_size=16,
            max_steps=4,
            epochs=1,
        ),
        size_mb=0.15,
        student_max_length=64,
        student_batch_size=16,
        student_steps=4,
        method_options={"compressor": {"population": 4, "generations": 2}},
        attack_budget=6,
        bootstrap=50,
        oracle_rows=8,
        distill_rows=40,
        attack_rows=12,
    )


def switch_to_empty_store(path: Path, template: Path) -> None:
    """Point MLflow at a copy of the migrated empty store ``template`` at ``path`` (another
    machine's store), dropping the cached store objects of the previous one."""
    from tests.conftest import fresh_mlflow_stores

    shutil.copy(template, path)
    fresh_mlflow_stores()
    mlflow.set_tracking_uri(f"sqlite:///{path}")
    mlflow.set_registry_uri(f"sqlite:///{path}")
