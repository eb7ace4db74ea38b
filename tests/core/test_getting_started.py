"""The getting-started page's first hour (issue 33): the Hugging Face walk-through runs
verbatim on two tiny local RoBERTa classifiers and prints the MR1 their own forward passes
give; the distillable-teacher block logs a model whose pyfunc returns those probabilities;
the sample output has the stage lines the pipeline writes; the stage count is the code's."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mlflow_metacompress.pipeline.progress import pipeline_stages
from tests.conftest import TOY_CODE, fresh_mlflow_stores, toy_frame
from tests.support.models import tiny_sequence_classifiers

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "getting-started.md"
LABELS = ["SAFE", "VULN"]


def block(name: str) -> str:
    text = PAGE.read_text()
    part = text.split(f"<!-- --8<-- [start:{name}] -->\n")[1].split(f"<!-- --8<-- [end:{name}] -->")[0]
    return re.search(r"```python\n(.*?)```", part, re.S).group(1)


def tiny_models(root: Path):
    """A locally trained tokenizer and two differently seeded tiny RoBERTa classifiers
    (id2label SAFE/VULN, output bias centred so both classes occur), saved with
    ``save_pretrained`` in ``root/teacher`` and ``root/student``."""
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    tok = train_tokenizer(TOY_CODE * 5, vocab_size=400, model_max_length=128)
    models = dict(zip(("teacher", "student"), tiny_sequence_classifiers(tok, LABELS, centred_on=TOY_CODE), strict=True))
    for role, model in models.items():
        model.save_pretrained(root / role)
        tok.save_pretrained(root / role)
    return tok, models


def forward(tok, model, code: list[str]) -> np.ndarray:
    """The oracle: softmax of the model's logits, columns in label-id order."""
    import torch

    with torch.no_grad():
        enc = tok(code, padding=True, truncation=True, return_tensors="pt")
        return torch.softmax(model(**enc).logits, dim=-1).numpy()


@pytest.mark.slow
def test_hugging_face_walkthrough_runs_verbatim_and_prints_the_models_mr1(tmp_path, monkeypatch, capsys):
    import mlflow

    tok, models = tiny_models(tmp_path / "models")
    data = toy_frame(24, seed=3)
    data.to_json(tmp_path / "test.jsonl", orient="records", lines=True)
    monkeypatch.chdir(tmp_path)
    fresh_mlflow_stores()  # a relative sqlite:///mlflow.db is this folder's, not an earlier test's
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    mlflow.set_registry_uri(None)
    namespace: dict = {}
    try:
        exec(compile(block("hf"), "getting-started.md#hf", "exec"), namespace)
        metrics = namespace["result"].metrics
        pt = forward(tok, models["teacher"], data["func"].tolist())
        ps = forward(tok, models["student"], data["func"].tolist())
        mr1 = float(np.mean(pt.argmax(1) != ps.argmax(1)))
        assert 0 < mr1 < 1  # the two models disagree on some rows, so the check can fail
        assert metrics["mr1_violation_rate"] == pytest.approx(mr1)
        assert {"mr1_violation_rate/rename_variables", "mr1_violation_rate/swap_if_else"} <= set(metrics)
        assert f"MR1 {mr1:.3f}" in capsys.readouterr().out
        assert (tmp_path / "mlflow.db").exists()

        # the distillable teacher: the same folder, logged in the project's format, predicts
        # class probabilities from the code column, as distillation's soft labels need
        exec(compile(block("hf-teacher"), "getting-started.md#hf-teacher", "exec"), namespace)
        teacher = mlflow.pyfunc.load_model("models:/my-teacher/1")
        probs = np.asarray(teacher.predict(data[["func"]]), dtype=float)
        np.testing.assert_allclose(probs, pt, rtol=1e-4, atol=1e-5)
        # fidelity and quantize need the project's CodeClassifier, and say so
        from mlflow_metacompress.distill.fidelity_cache import load_teacher_classifier

        with pytest.raises(ValueError, match="is not a logged CodeClassifier"):
            load_teacher_classifier("models:/my-teacher/1")
    finally:
        if mlflow.active_run():
            mlflow.end_run()
        mlflow.set_tracking_uri(None)


STAGE_LINE = re.compile(
    r"^mlflow_metacompress\.pipeline\.progress INFO stage (\d+)/(\d+) (teacher|distill \w+|gate \w+): "
    r"(started|done in \d+:\d\d:\d\d) · elapsed \d+:\d\d:\d\d · "
    r"remaining (~\d+:\d\d:\d\d|estimated after the first stage)$"
)


def test_first_hour_sample_and_stage_count_follow_the_code():
    text = PAGE.read_text()
    sample = text.split("<!-- sample: mlflow run output -->\n```text\n")[1].split("```")[0]
    stages = [STAGE_LINE.match(line) for line in sample.splitlines() if " INFO stage " in line]
    assert stages and all(stages), [line for line in sample.splitlines() if " INFO stage " in line]
    labels = [label for _, label in pipeline_stages(["compressor", "quantize"])]  # the sample's two methods
    for m in stages:
        assert int(m[2]) == len(labels) and labels[int(m[1]) - 1] == m[3]
    # the quick job's stage count, as the page states it, from the MLproject's default methods
    from mlflow.projects._project_spec import load_project

    methods = load_project(str(REPO)).get_entry_point("main").parameters["methods"].default.split(",")
    assert f"It is {len(pipeline_stages(methods))}\nstages" in text
    assert "mlflow ui --backend-store-uri sqlite:///mlflow.db" in text
    for where in ("`mlflow.db`", "`mlruns/`", "## With a GPU", "## Your own Hugging Face models"):
        assert where in text, where
