"""The report at the widths people read it (issue 23.11), in headless Chromium: inside
MLflow's artifact pane (870 px) and on a laptop (1,400 px), no element is wider than its
card (a table may scroll inside its card instead), for a model-mode report with
transformations, slices and an attack, and for a four-student comparison. Also: short model
labels with the full URI on hover and in the provenance, the statistics as a rounded table,
and the worst discrepancies showing distinct samples first.

Set ``METACOMPRESS_LAYOUT_SHOTS=<folder>`` to keep a screenshot of each page and width.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from html import unescape
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.report import fmt
from tests.conftest import toy_frame
from tests.support.attacks import identifier_student as student
from tests.support.attacks import length_bucket_teacher as teacher
from tests.support.evaluation import shared_frame, static_run
from tests.support.pages import CHROMIUM
from tests.support.pages import chromium as _chromium

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

WIDTHS = (870, 1400)
CARDS = "section, .card, article.example, figure.fig, header, nav"
# Measures every element against its card after opening every <details>; an element inside
# a scrolling box (overflow-x auto/scroll) within its card is measured by that box.
MEASURE = (
    """(function(){
document.querySelectorAll('details').forEach(function(d){d.open=true;});
var W=document.documentElement.clientWidth,bad=[],n=0;
function scroller(e,card){var out=null;for(var p=e.parentElement;p&&p!==card;p=p.parentElement){
var o=getComputedStyle(p).overflowX;if(o==='auto'||o==='scroll')out=p;}return out;}
document.querySelectorAll('body *').forEach(function(e){
var tag=e.tagName.toLowerCase();if(tag==='script'||tag==='style'||(e.closest('svg')&&tag!=='svg'))return;
var r=e.getBoundingClientRect();if(r.width===0&&r.height===0)return;n++;
var card=e.parentElement?e.parentElement.closest('__CARDS__'):null;
var box=card?card.getBoundingClientRect():{left:0,right:W};
var t=(card&&scroller(e,card))||e,b=t.getBoundingClientRect();
if(b.right>box.right+0.5||b.left<box.left-0.5)bad.push({tag:tag,cls:String(e.getAttribute('class')||''),
text:(e.textContent||'').trim().slice(0,50),right:Math.round(b.right),card:card?card.tagName.toLowerCase()+'#'+(card.id||card.className):'viewport',cardRight:Math.round(box.right)});});
document.body.setAttribute('data-layout',JSON.stringify({width:W,scrollWidth:document.documentElement.scrollWidth,checked:n,bad:bad.slice(0,25),count:bad.length}));
})();"""
).replace("__CARDS__", CARDS)
LONG_STUDENTS = [
    "models:/codexglue-defect-detection-student-compressor/12",
    "models:/codexglue-defect-detection-student-avatar/7",
    "runs:/0123456789abcdef0123456789abcdef/distilled-student-model",
    "models:/m-a1b2c3d4e5f60718293a4b5c6d7e8f90",
]


def measure(html: str, width: int, tmp: Path, name: str) -> dict:
    """The layout of ``html`` in Chromium at ``width`` px (the page's CSP extended by the
    measuring script's hash only)."""
    digest = "'sha256-" + base64.b64encode(hashlib.sha256(MEASURE.encode()).digest()).decode() + "'"
    page = re.sub(r"script-src ('sha256-[^']+')", rf"script-src \1 {digest}", html, count=1)
    page = page.replace("</body>", f"<script>{MEASURE}</script></body>")
    path = tmp / f"{name}-{width}.html"
    path.write_text(page, encoding="utf-8")
    done = _chromium(f"--window-size={width},1200", "--virtual-time-budget=3000", "--dump-dom", path.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'data-layout="([^"]*)"', done.stdout)
    assert found, "the measuring script did not run"
    shots = os.environ.get("METACOMPRESS_LAYOUT_SHOTS")
    if shots:  # the measured page: every <details> open
        Path(shots).mkdir(parents=True, exist_ok=True)
        _chromium(f"--window-size={width},12000", f"--screenshot={Path(shots) / f'{name}-{width}.png'}", path.as_uri())
    return json.loads(unescape(found.group(1)))


@pytest.fixture(scope="module")
def model_page(store) -> tuple[str, str]:
    """Model mode with four transformations, an attack and a slice column, the student named by a long registry URI."""
    df = toy_frame(24, seed=2)
    df["target"] = teacher(df).argmax(1)
    df["project"] = ["FFmpeg" if i % 3 else "qemu" for i in range(len(df))]
    with mlflow.start_run(run_name="layout") as run:
        mlflow.set_tag("metacompress.gate_model", LONG_STUDENTS[0])
        mlflow.models.evaluate(
            model=student,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher,
                "language": "c",
                "slice_columns": ["project"],
                "transforms": ["rename_variables", "insert_dead_code", "swap_operands", "for_to_while"],
                "attacks": ["mhm_zhang_2020"],
                "attack_budget": 60,
                "attack_max_samples": 6,
                "max_examples": 8,
                "progress": False,
            },
        )
    path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress/report.html")
    return run.info.run_id, Path(path).read_text()


@pytest.fixture(scope="module")
def compare_page(store, tmp_path_factory) -> tuple[list[str], str]:
    """Four students whose probabilities sit in one static-mode frame, each named by a long URI."""
    from mlflow_metacompress.report.compare import write_comparison_html

    df = shared_frame(students=4)
    runs = []
    for prefix, uri in zip("suvw", LONG_STUDENTS, strict=True):
        runs.append(static_run(df, prefix, f"layout-{prefix}", uri))
    out = write_comparison_html(
        runs, tmp_path_factory.mktemp("compare") / "compare.html", "defect detection on CodeXGLUE"
    )
    return runs, out.read_text()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
@pytest.mark.parametrize("width", WIDTHS)
def test_every_element_fits_its_card(model_page, compare_page, width, tmp_path):
    for name, html in (("report", model_page[1]), ("compare", compare_page[1])):
        layout = measure(html, width, tmp_path, name)
        assert abs(layout["width"] - width) <= 20, layout["width"]  # the viewport is the width asked for
        assert layout["checked"] > 100
        assert layout["bad"] == [], f"{name} at {width}px: {layout['count']} elements wider than their card"
        assert layout["scrollWidth"] <= layout["width"], f"{name} at {width}px scrolls sideways"


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_measure_sees_an_overflowing_table(tmp_path):
    """The check above can fail: a table of long unbreakable cells in a card of the report's CSS."""
    from mlflow_metacompress.report.page import page

    wide = "".join(f"<td>{'x' * 40}</td>" for _ in range(6))
    layout = measure(
        page("t", "s", [], f'<section id="t"><table><tr>{wide}</tr></table></section>'), 870, tmp_path, "wide"
    )
    assert layout["count"] > 0 and layout["bad"][0]["card"] in ("section#t", "viewport")


def test_compare_headers_are_short_labels_with_the_full_uri_on_hover_and_in_provenance(compare_page):
    runs, html = compare_page
    head = re.search(r"<thead>.*?</thead>", html, flags=re.S).group(0)
    labels = re.findall(r'<th title="([^"]*)">([^<]*)<', head)
    assert [title for title, _ in labels] == LONG_STUDENTS
    shown = [label for _, label in labels]
    assert shown == [
        "codexglue-defect-detection-student-compressor v12",
        "codexglue-defect-detection-student-avatar v7",
        "run 01234567 · distilled-student-model",
        "model m-a1b2c3d4",
    ]
    prov = re.search(r'<section id="provenance">.*?</section>', html, flags=re.S).group(0)
    for uri, run_id in zip(LONG_STUDENTS, runs, strict=True):
        assert f"<code>{uri}</code>" in prov and run_id in prov


def _provenance_text(html: str) -> str:
    section = re.search(r'<section id="provenance">.*?</section>', html, flags=re.S).group(0)
    return re.sub(r"<[^>]+>", " ", section)


def test_statistics_are_a_rounded_table(model_page):
    run_id, html = model_page
    summary = json.loads(
        Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/summary.json")).read_text()
    )
    assert isinstance(summary["statistics"], dict) and summary["statistics"]
    section = re.search(r'<section id="provenance">.*?</section>', html, flags=re.S).group(0)
    table = re.search(r'<table class="stats">.*?</table>', section, flags=re.S)
    assert table, "the statistics are a table"
    text = _provenance_text(html)
    assert "{" not in text and not re.search(r"\d\.\d{5,}", text), "no raw dictionary, no unrounded float"
    stats = {k: v for k, v in summary["statistics"].items() if k != "level"}  # the level is the header's "95% interval"
    assert summary["statistics"]["level"] == 0.95 and "95% interval" in table.group(0)
    assert table.group(0).count("<tr>") == 1 + len(
        {k.split("/")[0] for k in summary["statistics"]["intervals"]}
    )  # one row per metric
    shown = section[section.index("Statistics</h3>") :]
    floats = [v for v in _leaves(stats) if isinstance(v, float)]
    assert len(floats) > 20
    for v in floats:  # each number as the report formats numbers elsewhere
        forms = (
            f">{fmt.rate(v)}<",
            f">{fmt.signed(v)}<",
            f"[{fmt.rate(v)},",
            f" {fmt.rate(v)}]",
            f">{fmt.pvalue(v)} ·",
        )
        assert any(form in shown for form in forms), v


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def test_worst_discrepancies_show_distinct_samples_first():
    """One sample whose six variants all have the largest KL fills at most one of the first
    five places; the order is otherwise by KL."""
    from mlflow_metacompress.report.data import ReportData
    from mlflow_metacompress.report.worst import worst

    variants = [
        "original",
        "rename_variables",
        "insert_dead_code",
        "swap_operands",
        "for_to_while",
        "attack_mhm_zhang_2020",
    ]
    rows = [{"variant": v, "row": 0, "kl": 5.0 - i / 10} for i, v in enumerate(variants)]
    rows += [{"variant": "original", "row": r, "kl": 1.0 / r} for r in range(1, 8)]
    per = pd.DataFrame(rows).assign(
        any_violation=True,
        mr1_violation=True,
        teacher_pred=0,
        student_pred=1,
        label=0,
        teacher_prob_A=0.9,
        teacher_prob_B=0.1,
        student_prob_A=0.2,
        student_prob_B=0.8,
    )
    data = ReportData({}, per, ["A", "B"], {"config": {"max_examples": 10}}, {}, {})
    shown = [(v, int(r)) for v, r in re.findall(r"<h3>#\d+ · ([^·]+) · row (\d+)", worst(data))]
    assert [r for _, r in shown] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 0]
    assert shown[0][0].strip() == "original" and len(shown) == 10
    from mlflow_metacompress.evaluation.artifacts import worst_discrepancies

    csv = worst_discrepancies(per, 10)
    assert csv["row"].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 0, 0]
    assert np.all(np.diff(csv["kl"].to_numpy()[:8]) <= 0)
