"""The reproduction's verdict rules against independent oracles (statsmodels, scipy), and
the study's own records: the int8 control must not show the excess drop."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit, logit
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from mlflow_metacompress.study import verdicts as v
from mlflow_metacompress.study.judge import attack_counts, denominators, teacher_flips
from tests.conftest import REPO


@pytest.mark.slow
def test_holm_is_statsmodels_holm():
    ps = {"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.20, "e": math.nan}
    out = v.holm(ps)
    ref = multipletests([0.01, 0.04, 0.03, 0.20], method="holm")[1]
    assert [out[k] for k in "abcd"] == pytest.approx(list(ref))
    assert math.isnan(out["e"])


@pytest.mark.parametrize("k,n", [(0, 3804), (1, 3804), (17, 200), (200, 200), (5, 7)])
def test_clopper_pearson_is_statsmodels_beta_interval(k, n):
    assert v.clopper_pearson(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="beta"), abs=1e-12)


def test_rate_interval_uses_the_logit_scale_and_stays_in_zero_one():
    values = [0.62, 0.57, 0.89]  # AVATAR-like: a raw t-interval reaches above 100%
    raw = stats.t.interval(0.95, 2, loc=np.mean(values), scale=stats.sem(values))
    assert raw[1] > 1
    z = logit(values)
    ref = expit(stats.t.interval(0.95, 2, loc=np.mean(z), scale=stats.sem(z)))
    r = v.rate_interval(values)
    assert r["method"] == "logit-t" and (r["low"], r["high"]) == pytest.approx(tuple(ref))
    assert 0 < r["low"] < r["high"] < 1
    # a seed at 0 (the int8 copy's MR1): exact bounds on the counts pooled over seeds, one seed
    one = v.rate_interval([1 / 1268], [1268])
    assert one["method"] == "clopper-pearson 1/1268"
    assert (one["low"], one["high"]) == pytest.approx(proportion_confint(1, 1268, method="beta"))
    # with more seeds, widened to cover the t-interval of the empirical logits (k + 1/2)/(n + 1)
    zero = v.rate_interval([0.0, 0.0, 1 / 1268], [1268, 1268, 1268])
    assert zero["method"] == "clopper-pearson 1/3804 ∪ empirical-logit t"
    cp = proportion_confint(1, 3804, method="beta")
    e = logit(np.array([0.5, 0.5, 1.5]) / 1269)
    el = expit(stats.t.interval(0.95, 2, loc=np.mean(e), scale=stats.sem(e)))
    assert (zero["low"], zero["high"]) == pytest.approx((min(cp[0], el[0]), max(cp[1], el[1])))
    # seeds at 14%, 100%, 12% and 27% of 1,000 rows (the premise rung's MR3): pooling alone
    # gives about [36%, 40%]; the spread between seeds must show
    mixed = v.rate_interval([0.136, 1.0, 0.119, 0.273], [1000] * 4)
    assert mixed["low"] < 0.1 and mixed["high"] > 0.9
    assert v.rate_interval([0.0, 0.0])["method"] == "none"
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.beta(0.5, 0.5, size=rng.integers(2, 6))
        r = v.rate_interval(list(x), [200] * len(x))
        assert 0 <= r["low"] <= r["high"] <= 1


def test_tost_is_statsmodels_ttost_mean():
    d = [0.004, -0.012, 0.009, 0.002, -0.003]
    ref = DescrStatsW(np.array(d)).ttost_mean(-0.01, 0.01)[0]
    assert v.tost(d, 0.01) == pytest.approx(ref)
    # the study's accuracy difference of fidelity and Compressor: p = 0.86 by a paired t-test,
    # which does not show equivalence: TOST at ±1 point is far from significant
    diff = np.subtract([0.795, 0.76, 0.865], [0.815, 0.815, 0.81])
    assert stats.ttest_1samp(diff, 0).pvalue > 0.8
    assert v.tost(diff, 0.01) == pytest.approx(DescrStatsW(diff).ttost_mean(-0.01, 0.01)[0])
    assert v.tost(diff, 0.01) > 0.4
    assert v.tost([0.0, 0.0, 0.0], 0.03) == 0.0 and v.tost([0.05] * 3, 0.03) == 1.0 and math.isnan(v.tost([0.1], 0.03))


def test_bootstrap_p_is_floored_at_one_over_b_plus_one():
    stats_ = np.linspace(1, 2, 1999)  # every resample above the null
    assert v.boot_p(stats_, 0.0, "greater") == pytest.approx(1 / 2000)
    assert v.boot_p(stats_, 0.0, "two") == pytest.approx(2 / 2000)
    assert v.floor_p(0.0, 2000) == pytest.approx(1 / 2001)


def test_excess_drop_is_a_pooled_log_ratio_never_below_minus_100_percent():
    student = np.array([[27, 22], [45, 27], [28, 26]])  # seeds × attacks
    teacher = np.array([[14, 6], [14, 7], [14, 12]])
    e = v.excess_drop(student, teacher, 200, resamples=2000, seed=0)
    logs = np.log((student.sum(1) + 0.5) / (teacher.sum(1) + 0.5))
    assert e["per_seed"] == pytest.approx(list(np.expm1(logs)))
    ref = stats.t.interval(0.95, 2, loc=logs.mean(), scale=stats.sem(logs))
    assert (e["t_low"], e["t_high"]) == pytest.approx(tuple(np.expm1(ref)))
    assert e["excess"] == pytest.approx(math.expm1(logs.mean()))
    assert e["boot_low"] < e["excess"] < e["boot_high"] and e["pvalue"] < 0.05
    # a student that loses nothing: finite, and never below -100%
    none = v.excess_drop(np.zeros((3, 2)), teacher, 200, resamples=500)
    assert -1 < none["boot_low"] <= none["excess"] < 0 and none["t_low"] > -1
    # the same counts on every seed: the seeds add nothing, the rows still do
    same = v.excess_drop(np.array([[16, 7]] * 3), np.array([[14, 6]] * 3), 200, resamples=2000)
    assert same["t_low"] == pytest.approx(same["t_high"]) and same["boot_low"] < 0 < same["boot_high"]
    assert same["pvalue"] > 0.3 and same["pvalue"] >= 1 / 2001


def test_two_level_bootstrap_draws_seeds_and_shared_rows():
    rng = np.random.default_rng(1)
    k = (rng.random((3, 200)) < 0.2).astype(float)
    n = np.ones((3, 200))
    boot = v.two_level_rows(k, n, resamples=300, seed=4)
    # the same resample by hand
    r = np.random.default_rng(4)
    ref = []
    for _ in range(300):
        s, rows = r.integers(0, 3, size=3), r.integers(0, 200, size=200)
        ref.append(np.mean(k[np.ix_(s, rows)].sum(1) / n[np.ix_(s, rows)].sum(1)))
    assert boot == pytest.approx(np.array(ref))
    # identical seeds: the spread is the row bootstrap of one seed (scipy's percentile bootstrap)
    same = v.two_level_rows(np.vstack([k[0]] * 3), n, resamples=3000, seed=0)
    ci = stats.bootstrap((k[0],), np.mean, n_resamples=3000, method="percentile", random_state=0).confidence_interval
    assert np.quantile(same, [0.025, 0.975]) == pytest.approx([ci.low, ci.high], abs=0.015)
    within = v.two_level_within([0.01, 0.0, 0.02], [[0.0, 0.03], [0.0, 0.0], None], 1000)
    assert within.min() >= 0 and within.max() <= 1


def test_teacher_flips_and_denominators_are_recovered_from_stored_fractions():
    # every method's student/teacher ratio on one seed and attack, the teacher's count being 14
    ratios = [27 / 14, 9 / 7, 6 / 7, 8 / 7, 8 / 7]
    assert teacher_flips(ratios, 200) == 14
    assert teacher_flips([1.0], 200) == 1 and teacher_flips([math.pi], 200) is None
    assert denominators([214 / 1268, 0.0, 1 / 1268]) == 1268
    assert denominators([0.0]) is None


def _study_records():
    """The stored records of the 2026-12-02 BigCloneBench study (3 seeds of every method,
    attacks on 200 rows: reproduction/2026-12-02/bigclonebench.json)."""
    from mlflow_metacompress.study.rerender import results_from_report

    report = json.loads((REPO / "reproduction" / "2026-12-02" / "bigclonebench.json").read_text())
    return report, results_from_report(report)


def test_the_int8_control_shows_no_excess_drop_on_the_studys_own_records():
    """ALERT flips the same rows of the int8 copy on every seed (+14.3% three times): the
    seed t-interval excludes zero, the rows' uncertainty does not, so it does not appear."""
    report, results = _study_records()
    q = [results[("quantize", s)] for s in (0, 1, 2)]
    assert [r["attack_alert_yang_2022/excess_drop_pct"] for r in q] == pytest.approx([100 / 7] * 3)
    counts, source = attack_counts(results, report["config"]["methods"], (0, 1, 2), report["config"]["attacks"], 200)
    assert source.startswith("reconstructed")
    assert counts["quantize"]["teacher"].tolist() == [[14, 6], [14, 7], [14, 12]]
    e = v.excess_drop(counts["quantize"]["student"], counts["quantize"]["teacher"], 200, resamples=2000)
    assert e["t_low"] > 0  # the former rule (seed t lower end above zero) would have let it pass
    assert e["pvalue"] > 0.05 and e["boot_low"] < 0
    methods = report["summary"]["methods"]
    assert methods["quantize"]["appears"]["excess_attack_drop"] is False
    for m in report["config"]["methods"]:
        assert set(methods[m]["appears"]) == {
            "mr1_violations",
            "mr2_violations",
            "mr3_violations",
            "accuracy_within_3pt",
            "excess_attack_drop",
        }
        assert all(isinstance(x, bool) for x in methods[m]["appears"].values())


STORED = [
    "bigclonebench",
    "devign",
    "2026-12-02/bigclonebench",
    "premise/3mb-3000steps/bigclonebench",
    "premise/3mb-3000steps-lr0.001-clip1/bigclonebench",
    "premise/3mb-6000steps-lr0.001-clip1/bigclonebench",
]


@pytest.mark.parametrize("name", STORED)
def test_stored_pages_keep_rates_in_zero_one_and_excess_above_minus_100(name):
    from mlflow_metacompress.study.table import RATES

    report = json.loads((REPO / "reproduction" / f"{name}.json").read_text())
    for rows in report["summary"]["methods"].values():
        for metric in RATES:
            lo, hi = rows[metric]["low"], rows[metric]["high"]
            assert lo is None or 0 <= lo <= hi <= 1, (metric, lo, hi)
        for metric, r in rows.items():
            if metric.endswith("excess_drop_pct") and r["low"] is not None:
                assert r["low"] >= -100
    for verdict in report["summary"]["verdicts"].values():
        e = verdict.get("excess_attack_drop")
        if e:
            assert all(x >= -1 for x in (e["boot_low"], e["excess"], *e["per_seed"]))
            assert e["verdict"] in (
                "established",
                "established, below the paper's 285%",
                "refuted (the paper's 285% is above the interval)",
                "not settled",
            )
    md = (REPO / "reproduction" / f"{name}.md").read_text()
    assert "< 0.0005" not in md and "p = 0.0 " not in md and "p = ≤" not in md


@pytest.mark.slow
def test_rerendering_the_stored_page_is_stable(tmp_path):
    """The committed pages are what the rules make of the committed JSON."""
    import shutil

    from mlflow_metacompress.study.rerender import rerender

    for name in STORED:
        out = tmp_path / name.replace("/", "-")
        out.mkdir()
        stem = name.rsplit("/", 1)[-1]
        shutil.copy(REPO / "reproduction" / f"{name}.json", out / f"{stem}.json")
        shutil.copy(REPO / "reproduction" / f"{name}_conclusions.md", out / f"{stem}_conclusions.md")
        rerender(out / f"{stem}.json")
        assert (out / f"{stem}.md").read_text() == (REPO / "reproduction" / f"{name}.md").read_text(), name
        assert json.loads((out / f"{stem}.json").read_text()) == json.loads(
            (REPO / "reproduction" / f"{name}.json").read_text()
        ), name


def test_the_flagship_study_meets_the_attack_and_fidelity_protocol():
    """Issue 32's bar for ``reproduction/bigclonebench.json``: attacks on at least 1,000
    pairs, a decided excess-drop verdict (interval against zero or the paper's 285%) for each
    distilled method, ``fidelity`` against the baseline on at least 5 paired seeds with the
    TOST on accuracy, and every method's ``appears`` recorded as booleans."""
    report = json.loads((REPO / "reproduction" / "bigclonebench.json").read_text())
    assert report["config"]["attack_rows"] >= 1000
    verdicts, methods = report["summary"]["verdicts"], report["summary"]["methods"]
    for m in ("compressor", "avatar", "morph", "fidelity", "quantize"):
        e = verdicts[m]["excess_attack_drop"]
        assert e["verdict"] != "not settled", m
        assert e["boot_low"] >= -1 and (e["boot_high"] < 2.85 or e["boot_low"] > 0), m
        assert all(isinstance(x, bool) for x in methods[m]["appears"].values())
    assert methods["quantize"]["appears"]["excess_attack_drop"] is False
    for m in ("compressor", "fidelity"):  # the 5-seed methods are attacked on every seed
        e = verdicts[m]["excess_attack_drop"]
        assert len(e["per_seed"]) == len(report["config"]["seeds"]) == 5 and min(e["teacher_flips"]) > 0
    fidelity = report["summary"]["fidelity"]
    assert fidelity["paired_seeds"] >= 5 and 0 <= fidelity["accuracy_tost_p"] <= 1


def test_a_page_names_the_students_training_and_says_when_nothing_was_attacked():
    """The premise rung trains longer on every CodeBERT-labelled pair and attacks nothing;
    its page says both (it read "attacks  on 1000 test pairs" before)."""
    from mlflow_metacompress.study.markdown import render_markdown

    report = json.loads((REPO / "reproduction" / "premise" / "3mb-3000steps" / "bigclonebench.json").read_text())
    md = render_markdown(report)
    assert "3000 steps of 32 pairs on every CodeBERT-labelled pair;" in md and "; no attacks." in md
    stabilised = {**report, "config": {**report["config"], "student_lr": 0.001, "student_grad_clip": 1.0}}
    assert (
        "3000 steps of 32 pairs on every CodeBERT-labelled pair at lr 0.001 for every method, "
        "gradient norm clipped at 1;" in render_markdown(stabilised)
    )
    flagship = json.loads((REPO / "reproduction" / "bigclonebench.json").read_text())
    md = render_markdown(flagship)
    assert "300 steps of 32 pairs on 6,000 distillation pairs" in md
    assert "attacks alert_yang_2022, mhm_zhang_2020 on 1000 test pairs (budget 30 queries)" in md


@pytest.mark.parametrize(
    ("rung", "established"), [("3mb-3000steps-lr0.001-clip1", False), ("3mb-6000steps-lr0.001-clip1", True)]
)
def test_the_stabilised_premise_rungs_keep_the_mean_gap_within_3_points_with_mr1_to_mr3(rung, established):
    """Issue 32's premise bar, on the stored rungs: a distilled method at 3 MB with a mean
    accuracy gap of at most 3 points over at least 3 seeds, and MR1–MR3 reported for it. The
    gap is recomputed from the per-seed accuracies, and the page's stricter verdict (TOST and
    the two-level interval inside ±3) is checked against those same numbers: not established
    at 3,000 steps (the interval reaches +3.4), established at 6,000."""
    report = json.loads((REPO / "reproduction" / "premise" / rung / "bigclonebench.json").read_text())
    cfg, rows = report["config"], report["summary"]["methods"]["compressor"]
    assert cfg["size_mb"] == 3.0 and cfg["student_lr"] == 0.001 and cfg["student_grad_clip"] == 1.0
    teacher, student = (np.array(rows[k]["values"]) for k in ("teacher_accuracy", "student_accuracy"))
    gaps = teacher - student
    assert len(gaps) >= 3 and np.allclose(gaps, rows["accuracy_drop"]["values"])
    assert 0 <= gaps.mean() <= 0.03
    for metric in (f"mr{k}_violation_rate/metamorphic" for k in (1, 2, 3)):
        assert len(rows[metric]["values"]) == len(gaps) and 0 < rows[metric]["low"] < rows[metric]["high"] < 1
    verdict = report["summary"]["verdicts"]["compressor"]["accuracy_within_3pt"]
    upper = stats.ttest_1samp(gaps, 0.03, alternative="less").pvalue
    lower = stats.ttest_1samp(gaps, -0.03, alternative="greater").pvalue
    assert verdict["tost_p"] == pytest.approx(max(upper, lower))
    inside = -3 < verdict["boot90_points"][0] and verdict["boot90_points"][1] < 3
    assert verdict["appears"] == (verdict["tost_p"] < 0.05 and inside) == established
