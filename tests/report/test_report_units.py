"""The report's parts without MLflow: token diffs against difflib-free oracles, the
reference checker (it must catch what a browser would fetch), the comparability check,
section caps and the 5 MB bound for 10,000 static samples."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.loop import run_evaluation
from mlflow_metacompress.report import fmt
from mlflow_metacompress.report.compare import check_comparable
from mlflow_metacompress.report.data import ReportData, from_outcome
from mlflow_metacompress.report.diff import side_by_side, tokens
from mlflow_metacompress.report.render import render_report
from tests.conftest import TOY_CODE, random_probs
from tests.support.pages import external_refs, read_page, script_hashes


def _panes(fragment: str) -> tuple[str, str]:
    left, right = re.findall(r'<pre class="code">(.*?)</pre>', fragment, flags=re.S)
    return left, right


def _strip(pane: str) -> str:
    return html.unescape(re.sub(r"</?(del|ins)>", "", pane))


def test_token_diff_marks_exactly_the_renamed_identifiers():
    original = 'int f(int a, int b) {\n  int s = a + b; /* a<b & "x" */\n  return s;\n}'
    renamed = (
        original.replace("s =", "total =")
        .replace("return s", "return total")
        .replace("(int a", "(int n")
        .replace("= a +", "= n +")
    )
    left, right = _panes(side_by_side(original, renamed))
    assert _strip(left) == original and _strip(right) == renamed  # nothing lost, everything escaped once
    assert re.findall(r"<del>(.*?)</del>", left) == ["a", "s", "a", "s"]
    assert re.findall(r"<ins>(.*?)</ins>", right) == ["n", "total", "n", "total"]
    assert "".join(tokens(original)) == original
    same_left, same_right = _panes(side_by_side(original, original))
    assert "<del>" not in same_left and "<ins>" not in same_right


def test_reference_checker_catches_what_a_browser_would_fetch():
    bad = (
        '<html><head><link rel="stylesheet" href="https://cdn.example/a.css"><style>@import "x.css"; '
        'body{background:url(http://t.example/p.png)}</style></head><body><img srcset="a.png 1x, data:x 2x"><a '
        'href="#ok">ok</a><div style="background-image:url(\'//evil/x\')"></div><svg><image xlink:href="q.svg"/></svg>'
        '<script src="s.js"></script><form action="/post"></form></body></html>'
    )
    assert sorted(external_refs(bad)) == sorted(
        ["https://cdn.example/a.css", "x.css", "http://t.example/p.png", "a.png", "//evil/x", "q.svg", "s.js", "/post"]
    )


def _static_frame(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = random_probs(rng, n, 2, 2.0)
    s = np.clip(t + rng.normal(0, 0.2, t.shape), 0.01, None)
    s /= s.sum(axis=1, keepdims=True)
    df = pd.DataFrame(
        {
            "func": [TOY_CODE[i % len(TOY_CODE)] for i in range(n)],
            "t0": t[:, 0],
            "t1": t[:, 1],
            "s0": s[:, 0],
            "s1": s[:, 1],
        }
    )
    return df, (rng.random(n) < t[:, 1]).astype(int)


def _static_report(n: int, **config) -> tuple[str, ReportData]:
    df, y = _static_frame(n)
    cfg = parse_config(
        {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], **config}, df, model_given=False
    )
    data = from_outcome(run_evaluation(df, y, cfg, None, None), cfg, {"run_id": "r", "mode": "static"})
    return render_report(data), data


@pytest.mark.parametrize("cap", [0, 3])
def test_max_examples_caps_the_worst_discrepancies(cap):
    page, data = _static_report(200, max_examples=cap)
    worst = re.search(r'<section id="worst">.*?</section>', page, flags=re.S)
    if cap == 0:
        assert worst is None
    else:
        assert worst.group(0).count('<article class="example">') == cap
        kls = [float(k) for k in re.findall(r"KL <b>([0-9.]+)</b>", worst.group(0))]
        failing = data.per_sample[data.per_sample["any_violation"]]
        assert kls == [float(fmt.prob(v)) for v in failing["kl"].nlargest(cap)]  # the largest KLs, in order


def test_static_report_of_10000_samples_is_small_and_self_contained():
    page, data = _static_report(10_000)
    size = len(page.encode())
    print(f"report.html for 10,000 static samples: {size / 1e6:.3f} MB")
    assert size < 5_000_000
    parsed = read_page(page)
    assert parsed.ids == ["headline", "plots", "worst", "provenance"]  # static mode: no transformations, no attacks
    assert external_refs(page) == []
    assert parsed.csp and "default-src 'none'" in parsed.csp
    assert all(h in parsed.csp for h in script_hashes(parsed)) and parsed.scripts
    assert page.count("<svg") == 3
    value, text = parsed.numbers["any_violation_rate"]
    assert float(value) == data.metrics["any_violation_rate"] and text == fmt.rate(data.metrics["any_violation_rate"])


def _run(run_id: str, teacher: str | None, version: str | None, digest: str | None, mode: str = "model") -> ReportData:
    prov = {"run_id": run_id, "teacher_uri": teacher, "teacher_version": version, "data_digest": digest, "mode": mode}
    return ReportData({}, pd.DataFrame(), [], {}, {}, prov)


def test_runs_with_different_teachers_or_data_are_refused_by_name():
    same = [_run("r1", "models:/t@champion", "3", "d"), _run("r2", "models:/t/3", "3", "d")]
    check_comparable(same)  # the alias resolved to the same version at evaluation time
    with pytest.raises(ValueError, match=r"different teachers: run r1 has 'models:/t/3', run r2 has 'models:/t/4'"):
        check_comparable([_run("r1", "models:/t/3", "3", "d"), _run("r2", "models:/t@champion", "4", "d")])
    with pytest.raises(ValueError, match=r"different data \(digests\): run r1 has 'd1', run r3 has 'd2'"):
        check_comparable(
            [
                _run("r1", "models:/t/3", "3", "d1"),
                _run("r2", "models:/t/3", "3", "d1"),
                _run("r3", "models:/t/3", "3", "d2"),
            ]
        )
    check_comparable([_run("s1", None, None, "d", "static"), _run("s2", None, None, "d", "static")])


def test_intervals_and_pvalue_are_shown_when_logged():
    """Helper metrics of issue 14.1 (``<metric>_ci_low/_ci_high``, suffix last;
    ``accuracy_drop_pvalue``) appear beside their metric."""
    _, data = _static_report(300)
    metrics = dict(data.metrics)
    metrics.update(
        {
            "any_violation_rate_ci_low": 0.2512,
            "any_violation_rate_ci_high": 0.3488,
            "accuracy_drop_pvalue": 0.0213,
            "mr1_violation_rate_ci_low": 0.01,
            "mr1_violation_rate_ci_high": 0.07,
        }
    )
    page = render_report(ReportData(metrics, data.per_sample, data.classes, data.summary, {}, data.provenance))
    assert (
        '<span class="ci" data-interval="any_violation_rate" title="95% bootstrap interval">[0.251, 0.349]</span>'
        in page
    )
    assert 'data-interval="mr1_violation_rate"' in page
    assert 'data-value="0.0213">p = 0.021 (McNemar, exact)' in page
    assert "significant at 5%" in page


@pytest.mark.parametrize("k", [2, 3])
def test_report_without_labels_or_code(k):
    rng = np.random.default_rng(3)
    t, s = random_probs(rng, 80, k), random_probs(rng, 80, k)
    df = pd.DataFrame({**{f"t{j}": t[:, j] for j in range(k)}, **{f"s{j}": s[:, j] for j in range(k)}})
    cfg = parse_config(
        {"teacher_prob_columns": [f"t{j}" for j in range(k)], "student_prob_columns": [f"s{j}" for j in range(k)]},
        df,
        model_given=False,
        labels_given=False,
    )
    data = from_outcome(run_evaluation(df, None, cfg, None, None), cfg, {"mode": "static"})
    page = render_report(data)
    parsed = read_page(page)
    assert parsed.ids == ["headline", "plots", "worst", "provenance"]
    assert "teacher_accuracy" not in parsed.numbers and "agreement with teacher" in page  # label-free reliability
    assert float(parsed.numbers["mr1_violation_rate"][0]) == pytest.approx(float((t.argmax(1) != s.argmax(1)).mean()))
    assert '<pre class="code">' not in page


def test_the_evaluators_results_satisfy_the_reports_contract():
    """The report reads an evaluation through its own protocols (report/contract.py), never
    through the evaluation package: the evaluator's EvaluationOutcome and config satisfy them, and a
    plain stand-in with the same members renders the same page."""
    from types import SimpleNamespace

    from mlflow_metacompress.report.contract import EvaluationResults, EvaluationSettings

    df, y = _static_frame(40)
    cfg = parse_config(
        {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]}, df, model_given=False
    )
    outcome = run_evaluation(df, y, cfg, None, None)
    assert isinstance(outcome, EvaluationResults) and isinstance(cfg, EvaluationSettings)
    assert not isinstance(SimpleNamespace(metrics={}), EvaluationResults)
    fields = ("metrics", "per_sample", "classes", "extra_tables", "notes")
    stand_in = SimpleNamespace(**{f: getattr(outcome, f) for f in fields})
    assert isinstance(stand_in, EvaluationResults)
    provenance = {"run_id": "r", "mode": "static"}
    assert render_report(from_outcome(stand_in, cfg, provenance)) == render_report(
        from_outcome(outcome, cfg, provenance)
    )
