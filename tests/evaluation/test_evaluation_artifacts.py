"""The evaluator's plots and the teacher-against-student confusion matrix: counts checked
against sklearn on the models' own outputs, the figures' contents read back from matplotlib,
the PNG files re-opened with Pillow, and the plugin run end to end in static mode."""

from __future__ import annotations

import json
import zlib

import mlflow
import numpy as np
import pandas as pd
import pytest
from PIL import Image
from sklearn.metrics import confusion_matrix

from mlflow_metacompress.adapters.predictors import Predictor
from mlflow_metacompress.data.generators import generate_vulnerability
from mlflow_metacompress.evaluation.artifacts import write_artifacts
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.loop import run_evaluation
from mlflow_metacompress.evaluation.plots import (
    confusion_counts,
    confusion_figure,
    kl_figure,
    variant_group,
    write_plots,
)
from mlflow_metacompress.relations import evaluate_relations
from tests.conftest import random_probs

CLASSES = ["benign", "CWE-121", "CWE-78"]


def _probs(codes: list[str], salt: int) -> np.ndarray:
    """Deterministic per code (the predictor runs each distinct code once)."""
    return np.stack(
        [random_probs(np.random.default_rng(zlib.crc32(f"{salt}:{c}".encode())), 1, 3, 2.0)[0] for c in codes]
    )


def teacher_fn(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(_probs(frame["func"].tolist(), 0), columns=CLASSES)


def student_fn(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        0.5 * _probs(frame["func"].tolist(), 0) + 0.5 * _probs(frame["func"].tolist(), 1), columns=CLASSES
    )


def model_outcome(df: pd.DataFrame, **raw):
    cfg = parse_config({"teacher": teacher_fn, "progress": False, "use_cache": False, **raw}, df, model_given=True)
    pair = (
        Predictor("teacher", teacher_fn, cache_dir=None, progress=False),
        Predictor("student", student_fn, cache_dir=None, progress=False),
    )
    return run_evaluation(df, None, cfg, *pair), cfg


def png_size(path) -> tuple[int, int]:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.format == "PNG"
        return image.size


@pytest.mark.slow
def test_confusion_counts_match_sklearn_and_are_written_to_summary(tmp_path):
    df = generate_vulnerability(60, seed=2)
    outcome, cfg = model_outcome(df, transforms=[])
    written = write_artifacts(outcome, cfg, tmp_path)
    assert "confusion_teacher_vs_student.png" in written
    expected = confusion_matrix(
        teacher_fn(df).to_numpy().argmax(1), student_fn(df).to_numpy().argmax(1), labels=[0, 1, 2]
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    confusion = summary["confusion_teacher_vs_student"]
    assert confusion["labels"] == CLASSES and confusion["counts"] == expected.tolist()
    assert confusion["rows"] == "teacher prediction" and confusion["columns"] == "student prediction"
    assert np.trace(expected) / 60 == pytest.approx(1 - outcome.metrics["mr1_violation_rate"])
    assert min(png_size(tmp_path / "confusion_teacher_vs_student.png")) >= 300


def test_confusion_counts_only_the_original_inputs():
    df = generate_vulnerability(20, seed=3)
    outcome, _ = model_outcome(df, language="c", transforms=["rename_variables"])
    assert set(outcome.per_sample["variant"]) == {"original", "rename_variables"}
    expected = confusion_matrix(
        teacher_fn(df).to_numpy().argmax(1), student_fn(df).to_numpy().argmax(1), labels=[0, 1, 2]
    )
    np.testing.assert_array_equal(confusion_counts(outcome.per_sample, outcome.classes), expected)


def test_confusion_figure_labels_rows_teacher_columns_student_with_counts():
    counts = np.array([[5, 0, 1], [2, 7, 0], [0, 3, 11]])
    fig = confusion_figure(counts, CLASSES)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == CLASSES
    assert [t.get_text() for t in ax.get_xticklabels()] == CLASSES
    assert ax.get_ylabel() == "teacher prediction" and ax.get_xlabel() == "student prediction"
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    assert cells == {(i, j): str(counts[i, j]) for i in range(3) for j in range(3)}
    assert "23/29" in ax.get_title()


def synthetic_per_sample(
    transforms: int = 12, attacks: tuple[str, ...] = ("attack_mhm_zhang_2020", "attack_alert_yang_2022")
):
    """A per-sample table like the engine's: original, ``transforms`` transformations, attacks."""
    rng = np.random.default_rng(7)
    frames = []
    variants = ["original", *[f"transform_{i:02d}" for i in range(transforms)], *attacks]
    for j, variant in enumerate(variants):
        n = 50 if variant == "original" else 30
        pt = random_probs(rng, n, 3, 3.0)
        ps = 0.8 * pt + 0.2 * random_probs(rng, n, 3, 1.0 + 0.2 * j)
        result = evaluate_relations(pt, ps)
        data = {"variant": variant, "row": np.arange(n)}
        data.update({f"teacher_prob_{c}": pt[:, i] for i, c in enumerate(CLASSES)})
        data.update({f"student_prob_{c}": ps[:, i] for i, c in enumerate(CLASSES)})
        data.update(result.per_sample)
        frames.append(pd.DataFrame(data))
    return pd.concat(frames, ignore_index=True), variants


def test_kl_figure_has_one_curve_per_group_the_threshold_and_one_box_per_variant():
    per, variants = synthetic_per_sample()
    fig = kl_figure(per, 0.1)
    left, right = fig.axes[:2]
    groups = ["original", "metamorphic", "attack_mhm_zhang_2020", "attack_alert_yang_2022"]
    assert [variant_group(v) for v in variants] == ["original"] + ["metamorphic"] * 12 + groups[2:]
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    assert len(labels) == 5 and labels[-1] == "MR2 kl_threshold = 0.1"
    for group, label in zip(groups, labels[:-1], strict=True):
        rows = per[[variant_group(v) == group for v in per["variant"]]]
        share = (rows["kl"] > 0.1).mean()  # the group's MR2 violation rate, computed here independently
        assert label == f"{group} (n={len(rows)}, {share:.0%} > threshold)"
    curves = [line for line in left.get_lines() if len(line.get_xdata()) > 2]
    assert len(curves) == 4 and len({line.get_color() for line in curves}) == 4
    assert max(curves[1].get_ydata()) == 1.0 and len(curves[1].get_xdata()) == 12 * 30
    for ax in (left, right):
        thresholds = [line for line in ax.get_lines() if list(line.get_xdata()) == [0.1, 0.1]]
        assert len(thresholds) == 1 and thresholds[0].get_color() == "red"
        assert ax.get_xscale() == "log"
    assert [t.get_text() for t in right.get_yticklabels()] == variants
    assert "kl_threshold = 0.1" in right.get_title()


@pytest.mark.slow
def test_kl_histogram_png_is_readable_with_twelve_transformations(tmp_path):
    per, _ = synthetic_per_sample()
    assert write_plots(per, CLASSES, 10, 0.1, tmp_path) == [
        "reliability.png",
        "kl_histogram.png",
        "confusion_teacher_vs_student.png",
    ]
    width, height = png_size(tmp_path / "kl_histogram.png")
    assert width == 1200 and 450 <= height <= 1000
    assert (tmp_path / "kl_histogram.png").stat().st_size > 20_000  # drawn content, not an empty canvas


def test_kl_figure_with_zero_kl_and_zero_threshold(tmp_path):
    per, _ = synthetic_per_sample(transforms=0, attacks=())
    per["kl"] = 0.0
    fig = kl_figure(per, 0.0)
    assert not [line for line in fig.axes[0].get_lines() if len(line.get_xdata()) == 2 and line.get_color() == "red"]
    assert any("every sample with positive KL violates MR2" in t.get_text() for t in fig.texts)
    fig.savefig(tmp_path / "k.png")
    png_size(tmp_path / "k.png")


@pytest.mark.slow
def test_static_mode_logs_the_confusion_matrix(tracking):
    rng = np.random.default_rng(4)
    pt, ps = random_probs(rng, 80, 3, 2.5), random_probs(rng, 80, 3, 2.5)
    df = pd.DataFrame({**{f"t{k}": pt[:, k] for k in range(3)}, **{f"s{k}": ps[:, k] for k in range(3)}})
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=None,
            data=df,
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher_prob_columns": ["t0", "t1", "t2"], "student_prob_columns": ["s0", "s1", "s2"]},
        )
    assert "confusion_teacher_vs_student" in result.artifacts
    path = mlflow.artifacts.download_artifacts(
        run_id=run.info.run_id, artifact_path="metacompress/confusion_teacher_vs_student.png"
    )
    png_size(__import__("pathlib").Path(path))
    summary = json.loads(
        open(
            mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress/summary.json")
        ).read()
    )
    expected = confusion_matrix(pt.argmax(1), ps.argmax(1), labels=[0, 1, 2])
    assert summary["confusion_teacher_vs_student"]["labels"] == ["0", "1", "2"]
    assert summary["confusion_teacher_vs_student"]["counts"] == expected.tolist()
