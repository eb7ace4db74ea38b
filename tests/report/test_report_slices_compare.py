"""The report and ``metacompress compare`` on static-mode frames (issue 23.6 and 23.7):
``slice:<column>:<value>`` metrics in their own "Slices" section, never among rewrites nor in
the headline; students whose probabilities sit side by side in one frame compared, while
different data is still refused; digests of earlier single-student evaluations unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from mlflow_metacompress.cli import main
from mlflow_metacompress.report import fmt
from mlflow_metacompress.report.provenance import data_digest
from tests.conftest import toy_frame
from tests.support.attacks import identifier_student as student
from tests.support.attacks import length_bucket_teacher as teacher
from tests.support.evaluation import CWES, shared_frame, static_run
from tests.support.pages import read_page


def _section(page: str, name: str) -> str | None:
    found = re.search(rf'<section id="{name}">.*?</section>', page, flags=re.S)
    return found.group(0) if found else None


def _logged_report(run_id: str) -> str:
    return Path(
        mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/report.html")
    ).read_text()


@pytest.mark.slow
def test_static_slices_have_their_own_section_and_never_name_a_rewrite(store):
    run_id = static_run(shared_frame(), "s", "sliced", slice_columns=["cwe"])
    metrics = MlflowClient().get_run(run_id).data.metrics
    sliced = {k: v for k, v in metrics.items() if "/slice:" in k}
    assert len(sliced) >= 4 * 4  # four CWE values, MR1, MR2, MR4 and any at least
    page = _logged_report(run_id)
    parsed = read_page(page)
    assert parsed.ids == [
        "headline",
        "slices",
        "plots",
        "worst",
        "provenance",
    ]  # no "transformations": nothing was rewritten
    assert "rewrite" not in _section(page, "headline")
    section = _section(page, "slices")
    for key, value in sliced.items():  # every slice metric, shown as logged
        assert parsed.numbers[key] == (repr(value), fmt.rate(value)), key
    shown = re.findall(r'<tr><th scope="row">([^<]+)</th><td class="n" data-sort="(\d+)">', section)
    counts = shared_frame()["cwe"].value_counts()
    assert sorted(shown) == sorted((c, str(counts[c])) for c in CWES)  # each value by name, with its sample count
    outside = page.replace(section, "")
    assert "slice:" not in outside


@pytest.mark.slow
def test_model_mode_slices_stay_out_of_the_rewrites(store):
    df = toy_frame(24, seed=2)
    df["target"] = teacher(df).argmax(1)
    df["project"] = ["FFmpeg" if i % 3 else "qemu" for i in range(len(df))]
    with mlflow.start_run() as run:
        mlflow.models.evaluate(
            model=student,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher,
                "language": "c",
                "transforms": ["rename_variables", "swap_operands"],
                "slice_columns": ["project"],
                "progress": False,
            },
        )
    page = _logged_report(run.info.run_id)
    assert read_page(page).ids == ["headline", "transformations", "slices", "plots", "worst", "provenance"]
    rows = re.findall(r'<tr(?: class="total")?><th scope="row">([^<]+)</th>', _section(page, "transformations"))
    assert sorted(rows) == ["rename_variables", "swap_operands", "transformed (pooled)"]
    worst = re.search(r"The rewrite that breaks it most is <b>([^<]+)</b>", _section(page, "headline"))
    assert worst is None or worst.group(1) in ("rename_variables", "swap_operands")
    assert re.findall(r'<tr><th scope="row">([^<]+)</th>', _section(page, "slices")) in (
        ["FFmpeg", "qemu"],
        ["qemu", "FFmpeg"],
    )


@pytest.mark.slow
def test_students_judged_on_one_frame_are_compared_and_other_data_is_refused(store, tmp_path, capsys):
    df = shared_frame()
    a, b = static_run(df, "s", "student-s"), static_run(df, "u", "student-u")
    out = tmp_path / "compare.html"
    assert main(["compare", a, b, "--out", str(out)]) == 0, capsys.readouterr().err
    page = out.read_text()
    for run_id in (a, b):
        value = MlflowClient().get_run(run_id).data.metrics["any_violation_rate"]
        assert f'data-metric="any_violation_rate" data-value="{value!r}">{fmt.rate(value)}<' in page

    changed = {
        "teacher probabilities": df.assign(t0=df["t1"], t1=df["t0"]),
        "labels": df.assign(target=1 - df["target"]),
        "code": df.assign(func=df["func"].str.replace("int", "long")),
    }
    for what, other in changed.items():
        c = static_run(other, "s", f"other-{what.split()[0]}")
        capsys.readouterr()
        assert main(["compare", a, c, "--out", str(tmp_path / "no.html")]) == 2, what
        err = capsys.readouterr().err
        assert "different data" in err and a in err and c in err, what
        assert not (tmp_path / "no.html").exists()


def test_digests_of_single_student_frames_are_unchanged():
    """The values the previous digest (every column but the student's) gave for these frames."""
    from mlflow_metacompress.report.provenance import digest_columns

    n = 40
    x = np.linspace(0.05, 0.95, n)
    df = pd.DataFrame(
        {
            "func": [f"int f{i}(void) {{ return {i}; }}" for i in range(n)],
            "t0": x,
            "t1": 1 - x,
            "s0": x[::-1],
            "s1": 1 - x[::-1],
        }
    )
    y = np.arange(n) % 2
    static = type("Cfg", (), {"static": True, "code_columns": ("func",), "teacher_prob_columns": ("t0", "t1")})()
    assert data_digest(df, y, digest_columns(static)) == "a1a07da608c51438"
    no_code = type("Cfg", (), {"static": True, "code_columns": None, "teacher_prob_columns": ("t0", "t1")})()
    assert data_digest(df[["t0", "t1", "s0", "s1"]], y, digest_columns(no_code)) == "34c1eb68d9d4b2c0"
    model = type("Cfg", (), {"static": False})()
    assert data_digest(df, y, digest_columns(model)) == "8395bc446da26863"
    # another student's columns beside them change nothing
    assert data_digest(df.assign(u0=x, u1=1 - x), y, digest_columns(static)) == "a1a07da608c51438"
