"""``metacompress/report.html`` from real evaluations (model mode with transformations and an
attack; static mode), checked against the tracking store, rebuilt by ``metacompress report``,
compared by ``metacompress compare``, and rendered in headless Chromium."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from mlflow_metacompress.cli import main
from mlflow_metacompress.report import fmt
from tests.conftest import random_probs, toy_frame
from tests.support.attacks import identifier_student as student
from tests.support.attacks import length_bucket_teacher as teacher
from tests.support.pages import CHROMIUM, external_refs, read_page, script_hashes
from tests.support.pages import chromium as _chromium

ATTACK = "mhm_zhang_2020"
TRANSFORMS = ["rename_variables", "insert_dead_code", "swap_operands", "for_to_while"]


@pytest.fixture(scope="module")
def model_run(store) -> str:
    df = toy_frame(24, seed=2)
    df["target"] = teacher(df).argmax(1)
    with mlflow.start_run(run_name="model-mode") as run:
        mlflow.models.evaluate(
            model=student,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher,
                "language": "c",
                "transforms": TRANSFORMS,
                "attacks": [ATTACK],
                "attack_budget": 60,
                "attack_max_samples": 6,
                "max_examples": 8,
                "progress": False,
            },
        )
    return run.info.run_id


def _static(run_name: str, student_seed: int, n: int = 120, data_seed: int = 0) -> str:
    rng = np.random.default_rng(data_seed)
    t = random_probs(rng, n, 2, 2.0)
    s = np.clip(t + np.random.default_rng(student_seed).normal(0, 0.2, t.shape), 0.01, None)
    s /= s.sum(axis=1, keepdims=True)
    df = pd.DataFrame(
        {"t0": t[:, 0], "t1": t[:, 1], "s0": s[:, 0], "s1": s[:, 1], "target": (rng.random(n) < t[:, 1]).astype(int)}
    )
    with mlflow.start_run(run_name=run_name) as run:
        mlflow.set_tag("metacompress.gate_model", f"models:/{run_name}/1")  # as gate_version tags its run
        mlflow.models.evaluate(
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]},
        )
    return run.info.run_id


@pytest.fixture(scope="module")
def static_runs(store) -> dict[str, str]:
    """Two students on the same data, and one on other data."""
    return {"a": _static("student-a", 1), "b": _static("student-b", 2), "other": _static("other-data", 1, data_seed=5)}


def _logged_report(run_id: str) -> str:
    return Path(
        mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/report.html")
    ).read_text()


def _headline_keys(metrics: dict[str, float]) -> list[str]:
    names = [
        "teacher_accuracy",
        "student_accuracy",
        "accuracy_drop",
        "any_violation_rate",
        *(f"mr{k}_violation_rate" for k in range(1, 5)),
    ]
    keys = [n for n in names if n in metrics]
    for suffix in ("metamorphic", f"attack_{ATTACK}"):
        keys += [f"{n}/{suffix}" for n in names[3:] if f"{n}/{suffix}" in metrics]
    return keys


def _check_numbers(numbers: dict[str, tuple[str | None, str]], metrics: dict[str, float], keys: list[str]) -> None:
    """Each key is shown with the value the tracking store holds, formatted as the report formats it."""
    assert keys
    for key in keys:
        assert key in numbers, key
        value, text = numbers[key]
        assert float(value) == metrics[key], key
        expected = fmt.signed(metrics[key]) if key == "accuracy_drop" else fmt.rate(metrics[key])
        assert text == expected, (key, text, expected)
    if "accuracy_drop_pvalue" in metrics:  # helper "stats" logs it; shown when present
        assert float(numbers["accuracy_drop_pvalue"][0]) == metrics["accuracy_drop_pvalue"]


@pytest.mark.slow
def test_model_mode_report_is_logged_with_every_section_and_no_external_resource(model_run):
    page = _logged_report(model_run)
    parsed = read_page(page)
    assert parsed.ids == ["headline", "transformations", "plots", "worst", "attacks", "provenance"]
    assert external_refs(page) == []
    assert parsed.csp.startswith("default-src 'none';") and "connect-src" not in parsed.csp
    assert parsed.scripts and all(
        h in parsed.csp for h in script_hashes(parsed)
    )  # the one inline script is allowed by hash
    metrics = MlflowClient().get_run(model_run).data.metrics
    _check_numbers(parsed.numbers, metrics, _headline_keys(metrics))
    table = re.search(r'<section id="transformations">.*?</section>', page, flags=re.S).group(0)
    shown = set(re.findall(r'<tr(?: class="total")?><th scope="row">([^<]+)</th>', table))
    ran = {k.split("/", 1)[1] for k in metrics if k.startswith("transform_applicable_rate/")}
    assert shown == ran | {"transformed (pooled)"}
    assert page.count('<article class="example">') >= 1
    assert (
        re.search(r'<section id="worst">.*?</section>', page, flags=re.S).group(0).count('<article class="example">')
        <= 8
    )
    assert model_run in re.search(r'<section id="provenance">.*?</section>', page, flags=re.S).group(0)


def test_adversarial_examples_highlight_exactly_the_attack_renaming(model_run):
    page = _logged_report(model_run)
    table = pd.read_parquet(
        mlflow.artifacts.download_artifacts(run_id=model_run, artifact_path=f"metacompress/attacks/{ATTACK}.parquet")
    )
    won = table[table["status"] == "succeeded"]
    section = re.search(r'<section id="attacks">.*?</section>', page, flags=re.S).group(0)
    examples = section.split('<article class="example">')[1:]
    assert len(examples) == min(5, len(won)) > 0
    for example, (_, row) in zip(examples, won.iterrows(), strict=False):  # the first five are shown
        left, right = re.findall(r'<pre class="code">(.*?)</pre>', example, flags=re.S)
        assert html.unescape(re.sub(r"</?(del|ins)>", "", left)) == row["original_code"]
        assert html.unescape(re.sub(r"</?(del|ins)>", "", right)) == row["adversarial_code"]
        renaming = json.loads(row["renaming"])
        assert set(re.findall(r"<del>(.*?)</del>", left)) == set(renaming)
        assert set(re.findall(r"<ins>(.*?)</ins>", right)) == set(renaming.values())


def test_report_cli_rebuilds_the_logged_report_without_a_model(model_run, tmp_path):
    out = tmp_path / "rebuilt.html"
    assert main(["report", model_run, "--out", str(out)]) == 0
    logged, rebuilt = _logged_report(model_run), out.read_text()
    for section in ("headline", "transformations", "plots", "worst", "attacks"):
        pattern = rf'<section id="{section}">.*?</section>'
        assert re.search(pattern, rebuilt, flags=re.S).group(0) == re.search(pattern, logged, flags=re.S).group(0), (
            section
        )


@pytest.mark.slow
def test_static_report_and_compare_cli(static_runs, tmp_path, capsys):
    client = MlflowClient()
    page = _logged_report(static_runs["a"])
    parsed = read_page(page)
    assert parsed.ids == ["headline", "plots", "worst", "provenance"]
    metrics = client.get_run(static_runs["a"]).data.metrics
    _check_numbers(parsed.numbers, metrics, _headline_keys(metrics))

    out = tmp_path / "compare.html"
    assert main(["compare", static_runs["a"], static_runs["b"], "--out", str(out)]) == 0
    compared = out.read_text()
    assert external_refs(compared) == []
    for key in ("a", "b"):
        run_id = static_runs[key]
        assert run_id in compared
        assert f"models:/student-{key}/1" in compared  # the student named by the gate's tag
        value = client.get_run(run_id).data.metrics["any_violation_rate"]
        assert f'data-metric="any_violation_rate" data-value="{value!r}">{fmt.rate(value)}<' in compared

    capsys.readouterr()
    assert main(["compare", static_runs["a"], static_runs["other"], "--out", str(tmp_path / "no.html")]) == 2
    err = capsys.readouterr().err
    assert "different data" in err and static_runs["a"] in err and static_runs["other"] in err
    assert not (tmp_path / "no.html").exists()
    with mlflow.start_run() as plain:
        pass
    assert main(["report", plain.info.run_id, "--out", str(tmp_path / "x.html")]) == 2
    assert "not a metacompress evaluation run" in capsys.readouterr().err


def test_teacher_alias_is_recorded_as_the_version_it_pointed_at(store):
    from mlflow_metacompress.report.provenance import registered_version

    client = MlflowClient()
    client.create_registered_model("report-teacher")
    for _ in range(2):
        client.create_model_version("report-teacher", str(store.root))
    client.set_registered_model_alias("report-teacher", "champion", "1")
    assert registered_version("models:/report-teacher@champion") == "1"
    assert registered_version("models:/report-teacher/latest") == "2"
    assert registered_version("runs:/abc/model") is None


def _page_requests(netlog: Path) -> list[str]:
    """URLs of the network requests the page itself started. Chromium's own background
    requests (component updates, time checks) carry the initiator ``not an origin``; a
    request from a ``file://`` page carries ``null``, from an http page its origin."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start and e.get("params", {}).get("initiator", "not an origin") != "not an origin"
    ]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_chromium_renders_the_headline_as_logged_and_no_request_leaves_the_page(model_run, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(_logged_report(model_run))
    netlog = tmp_path / "net.json"
    done = _chromium(f"--log-net-log={netlog}", "--virtual-time-budget=3000", "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = read_page(done.stdout)
    assert dom.ids == ["headline", "transformations", "plots", "worst", "attacks", "provenance"]
    metrics = MlflowClient().get_run(model_run).data.metrics
    _check_numbers(dom.numbers, metrics, _headline_keys(metrics))
    assert _page_requests(netlog) == []

    # the same harness sees a page that does fetch something (so the check above can fail)
    leaky = tmp_path / "leaky.html"
    leaky.write_text(
        '<html><body><img src="https://example.invalid/x.png"><link rel="stylesheet" href="http://example.invalid/a.css">'
        "</body></html>"
    )
    _chromium(f"--log-net-log={tmp_path / 'leaky.json'}", "--virtual-time-budget=3000", "--dump-dom", leaky.as_uri())
    assert sorted(_page_requests(tmp_path / "leaky.json")) == [
        "http://example.invalid/a.css",
        "https://example.invalid/x.png",
    ]


def test_pipeline_comparison_logs_report_html(static_runs, caplog):
    from mlflow_metacompress.report.compare import log_comparison_html

    client = MlflowClient()
    with mlflow.start_run() as parent:
        assert (
            log_comparison_html([static_runs["a"], None, static_runs["b"]], "task on data") == "comparison/report.html"
        )
        assert log_comparison_html([static_runs["a"], static_runs["other"]], artifact_path="refused") is None
    assert [a.path for a in client.list_artifacts(parent.info.run_id, "comparison")] == ["comparison/report.html"]
    assert client.list_artifacts(parent.info.run_id, "refused") == []
    assert "different data" in caplog.text
    page = Path(
        mlflow.artifacts.download_artifacts(run_id=parent.info.run_id, artifact_path="comparison/report.html")
    ).read_text()
    assert "task on data" in page and static_runs["a"] in page and static_runs["b"] in page
