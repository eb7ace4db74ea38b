"""The reproduction study (entry point ``reproduce``): seed statistics against scipy, the
table writer, the CodeBERT comparison, resumable stages found through MLflow, and (slow)
a whole tiny study on generated BigCloneBench-shaped files run twice: the second run
trains and evaluates nothing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from mlflow_metacompress.study.oracle import bootstrap_mean, codebert_metrics
from mlflow_metacompress.study.seeds import paired_test, t_interval
from mlflow_metacompress.study.table import headline, render_markdown, summarise
from tests.support.study import bigclonebench_folder, tiny_study_config


def test_t_interval_is_scipys_student_t_interval():
    values = [0.31, 0.27, 0.36]
    mean, low, high = t_interval(values)
    ref = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert mean == pytest.approx(np.mean(values))
    assert (low, high) == pytest.approx(ref)
    # NaN seeds (a stage that did not finish) are left out, one value has no interval
    assert t_interval([0.2, math.nan, 0.4])[1:] == pytest.approx(
        stats.t.interval(0.95, 1, loc=0.3, scale=stats.sem([0.2, 0.4]))
    )
    m, lo, hi = t_interval([0.5])
    assert m == 0.5 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(x) for x in t_interval([]))


def test_paired_test_is_scipys_ttest_rel():
    a, b = [0.20, 0.25, 0.22], [0.40, 0.41, 0.47]
    out = paired_test(a, b)
    assert out["pvalue"] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    assert out["mean_difference"] == pytest.approx(np.mean(np.subtract(a, b)))
    assert out["n"] == 3
    assert paired_test([0.1, math.nan], [0.2, 0.3])["n"] == 1


def _page_report(summary, methods):
    """A report as :func:`render_markdown` reads it, around a synthetic ``summary``."""
    config = {"threads": 1, "methods": methods, "size_mb": 3.0, "eval_rows": 200, "attacks": [], "attack_budget": 30}
    return {
        "dataset": "bigclonebench",
        "teacher": {},
        "summary": summary,
        "headline": headline(summary),
        "config": config,
    }


def _results(seeds=(0, 1, 2)):
    """Synthetic finished evaluations: fidelity halves the baselines' violations."""
    rng = np.random.default_rng(0)
    out = {}
    for method, level in (("compressor", 0.40), ("avatar", 0.30), ("morph", 0.35), ("fidelity", 0.12)):
        for s in seeds:
            v = level + rng.normal(0, 0.01)
            out[(method, s)] = {
                "student_accuracy": 0.90 + rng.normal(0, 0.003),
                "teacher_accuracy": 0.92,
                "accuracy_drop": 0.02,
                "mr1_violation_rate": v / 3,
                "mr1_violation_rate/metamorphic": v / 2,
                "mr2_violation_rate/metamorphic": v / 2,
                "mr3_violation_rate/metamorphic": v,
                "any_violation_rate/metamorphic": v,
                "any_violation_rate_ci_low/metamorphic": v - 0.05,
                "any_violation_rate_ci_high/metamorphic": v + 0.05,
                "size_mb": 3.0,
                "attack_alert_yang_2022/excess_drop_pct": -40.0,
                "attack_excess_drop_pct": -0.4,
                "codebert/mr1_violation_rate": 0.1,
            }
    return out


def test_summary_headline_and_markdown():
    results = _results()
    seeds = (0, 1, 2)
    s = summarise(results, ["compressor", "avatar", "morph", "fidelity"], seeds, ["alert_yang_2022"])
    row = s["methods"]["avatar"]["any_violation_rate/metamorphic"]
    values = [results[("avatar", k)]["any_violation_rate/metamorphic"] for k in seeds]
    assert row["values"] == values and row["mean"] == pytest.approx(np.mean(values))
    assert row["within_run"][1] == [values[1] - 0.05, values[1] + 0.05]
    assert row["interval"] == "logit-t" and 0 < row["low"] < row["mean"] < row["high"] < 1
    f = s["fidelity"]
    assert f["best_baseline"] == "avatar"  # the lowest mean violation rate among the baselines
    fid = [results[("fidelity", k)]["any_violation_rate/metamorphic"] for k in seeds]
    assert f["violations"]["pvalue"] == pytest.approx(stats.ttest_rel(fid, values).pvalue)
    acc = np.subtract(*[[results[(m, k)]["student_accuracy"] for k in seeds] for m in ("fidelity", "avatar")])
    from statsmodels.stats.weightstats import DescrStatsW

    assert f["accuracy_tost_p"] == pytest.approx(DescrStatsW(acc).ttost_mean(-0.01, 0.01)[0])
    assert f["halved"] and f["violations_lower"] and f["accuracy_within_1pt"] == (f["accuracy_tost_p"] < 0.05)
    rows = {r["key"]: r for r in headline(s)}
    assert rows["mr3_violations"]["method"] == "compressor" and rows["mr3_violations"]["appears"]
    assert rows["accuracy_within_3pt"]["appears"]  # every gap is 2 points with no spread
    assert rows["excess_attack_drop"]["appears"] is False  # students lose less than the teacher
    assert all(s["methods"][m]["appears"]["excess_attack_drop"] is False for m in ("compressor", "avatar"))
    report = {
        "dataset": "bigclonebench",
        "teacher": {"teacher_size_mb": 23.0, "teacher_test_f1": 0.91},
        "summary": s,
        "headline": headline(s),
        "config": {
            "threads": 1,
            "methods": ["compressor"],
            "size_mb": 3.0,
            "eval_rows": 200,
            "attacks": ["alert_yang_2022"],
            "attack_budget": 50,
        },
    }
    md = render_markdown(report)
    assert "| MR3 violations (confident rows) | up to 62.0% | compressor:" in md
    assert "not recorded" in md  # the teacher's own CodeBERT disagreement was not given
    assert f"{100 * np.mean(values):.1f}%" in md


@pytest.mark.slow
def test_mr_violations_appear_per_method_after_holm_and_the_control_is_judged_alike():
    """A steady 17% appears; a rate of about 5% does not (its p-value of "rate <= 5%" is
    large); the control at 0.5% does not, and its verdict is on the record."""
    mr1 = {"compressor": (0.16, 0.17, 0.18), "avatar": (0.049, 0.051, 0.050), "quantize": (0.004, 0.006, 0.005)}
    results = {}
    for method, values in mr1.items():
        for seed, x in enumerate(values):
            results[(method, seed)] = {
                "mr1_violation_rate/metamorphic": x,
                "mr1_violation_rate_ci_low/metamorphic": max(0.0, x - 0.04),
                "mr1_violation_rate_ci_high/metamorphic": x + 0.04,
                "accuracy_drop": 0.1,
            }
    s = summarise(results, list(mr1), (0, 1, 2))
    appears = {m: s["methods"][m]["appears"]["mr1_violations"] for m in mr1}
    assert appears == {"compressor": True, "avatar": False, "quantize": False}
    v = s["verdicts"]
    from statsmodels.stats.multitest import multipletests

    raw = [v[m]["mr1_violations"]["pvalue"] for m in ("compressor", "avatar")]
    assert [v[m]["mr1_violations"]["pvalue_holm"] for m in ("compressor", "avatar")] == pytest.approx(
        list(multipletests(raw, method="holm")[1])
    )
    assert v["quantize"]["mr1_violations"]["pvalue_holm"] == v["quantize"]["mr1_violations"]["pvalue"]
    row = {r["key"]: r for r in headline(s)}["mr1_violations"]
    assert row["methods"] == ["compressor"] and row["control"] == {"quantize": False}
    # a gap of 10 points is no premise; TOST cannot show it within 3
    assert not any(s["methods"][m]["appears"]["accuracy_within_3pt"] for m in mr1)


def test_codebert_metrics_count_flips_against_codebert():
    codebert = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    student = np.array([1, 0, 0, 1, 0, 1, 1, 0])  # two flips
    teacher = np.array([1, 0, 1, 1, 0, 0, 1, 1])  # one flip
    m = codebert_metrics(student, teacher, codebert, samples=200, seed=1)
    assert m["codebert/mr1_violation_rate"] == pytest.approx(2 / 8)
    assert m["codebert/student_accuracy"] == pytest.approx(6 / 8)
    assert m["codebert/teacher_mr1_violation_rate"] == pytest.approx(1 / 8)
    assert m["codebert/student_teacher_mr1_violation_rate"] == pytest.approx(3 / 8)
    assert m["codebert/mr1_violation_rate_ci_low"] <= 0.25 <= m["codebert/mr1_violation_rate_ci_high"]
    flips = (np.random.default_rng(3).random(400) < 0.3).astype(float)
    ref = stats.bootstrap((flips,), np.mean, n_resamples=4000, method="percentile", random_state=0).confidence_interval
    low, high = bootstrap_mean(flips, 4000, 0)
    assert low == pytest.approx(ref.low, abs=0.01) and high == pytest.approx(ref.high, abs=0.01)
    with pytest.raises(ValueError, match="3 student"):
        codebert_metrics(student[:3], teacher, codebert)


def test_run_stage_skips_a_finished_stage_and_retries_a_failed_one(tracking):
    import mlflow

    from mlflow_metacompress.study.resume import KEY_TAG, run_stage, stage_key

    calls = []

    def body():
        calls.append(1)
        mlflow.log_metric("x", 1.0)
        return {"model_uri": f"models:/m/{len(calls)}"}

    first = run_stage("student-a-seed0", {"seed": 0}, body)
    again = run_stage("student-a-seed0", {"seed": 0}, body)
    assert len(calls) == 1 and again.skipped and again.run_id == first.run_id
    assert again.outputs == {"model_uri": "models:/m/1"}
    other = run_stage("student-a-seed0", {"seed": 1}, body)  # other arguments: another stage
    assert len(calls) == 2 and not other.skipped and other.key != first.key

    def broken():
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        run_stage("evaluate", {"seed": 0}, broken)
    retried = run_stage("evaluate", {"seed": 0}, body)
    assert not retried.skipped and len(calls) == 3
    runs = mlflow.search_runs(
        filter_string=f"tags.`{KEY_TAG}` = '{stage_key('evaluate', {'seed': 0})}'",
        output_format="list",
        search_all_experiments=True,
    )
    assert sorted(r.info.status for r in runs) == ["FAILED", "FINISHED"]
    assert json.loads(mlflow.artifacts.load_text(f"runs:/{first.run_id}/stage_args.json")) == {"seed": 0}


@pytest.mark.slow
def test_study_runs_then_a_rerun_trains_and_evaluates_nothing(tracking, tmp_path, monkeypatch):
    import mlflow

    from mlflow_metacompress.study import stages as reproduce
    from mlflow_metacompress.study.resume import STAGE_TAG

    cfg = tiny_study_config(bigclonebench_folder(tmp_path / "data"))
    out = tmp_path / "reproduction"
    first = reproduce.run_study(cfg, output=out)
    assert first["failed"] == []
    stages = mlflow.search_runs(
        filter_string=f"tags.`{STAGE_TAG}` != 'report'", search_all_experiments=True, output_format="list"
    )
    assert sorted(r.data.tags[STAGE_TAG] for r in stages) == [
        "attack-compressor-seed0",
        "evaluate-compressor-seed0",
        "student-compressor-seed0",
        "teacher",
    ]
    assert all(r.info.status == "FINISHED" for r in stages)
    ev = next(r for r in stages if r.data.tags[STAGE_TAG].startswith("evaluate"))
    assert "mr1_violation_rate" in ev.data.metrics and "codebert/mr1_violation_rate" in ev.data.metrics
    teacher = next(r for r in stages if r.data.tags[STAGE_TAG] == "teacher")
    assert {"teacher_test_f1", "teacher_conf80_share", "teacher_size_mb"} <= set(teacher.data.metrics)
    report = json.loads((out / "bigclonebench.json").read_text())
    assert report["finished"] == ["compressor-seed0"]
    assert report["summary"]["methods"]["compressor"]["mr1_violation_rate"]["values"] == [
        pytest.approx(ev.data.metrics["mr1_violation_rate"])
    ]
    assert "| MR1 violations (label flips) | up to 36.0% |" in (out / "bigclonebench.md").read_text()
    # the threads and precision the teacher trained with, read from its training run, not the study's
    trained = mlflow.get_run(first["teacher"].outputs["teacher_run_id"]).data.params
    assert report["teacher"]["train_threads"] == trained["threads"]
    assert report["teacher"]["train_precision"] == trained["precision"]
    assert f"({trained['threads']} thread(s), {trained['precision']})" in (out / "bigclonebench.md").read_text()
    # the attacks ran on their own rows, and their flip counts are what the verdict reads
    at = next(r for r in stages if r.data.tags[STAGE_TAG].startswith("attack"))
    a = "attack_wir_random_zeng_2022"
    assert at.data.metrics[f"{a}/rows"] == report["config"]["attack_rows"] == 12
    assert at.data.metrics[f"{a}/teacher_flips"] == round(12 * at.data.metrics[f"{a}/teacher_accuracy_drop"])
    assert a + "/excess_drop" not in ev.data.metrics  # the evaluation judged MR1-MR4 only
    rc = report["summary"]["row_counts"]["compressor"]["mr1_violation_rate/metamorphic"]
    assert len(rc["k"]) == 1 and len(rc["k"][0]) == 8  # one seed × the 8 judged rows
    assert isinstance(report["summary"]["methods"]["compressor"]["appears"]["mr1_violations"], bool)
    n_runs = len(mlflow.search_runs(search_all_experiments=True, output_format="list"))

    def never(*args, **kwargs):
        raise AssertionError("a finished stage ran again")

    monkeypatch.setattr("mlflow_metacompress.distill.teacher.run_teacher_job", never)
    monkeypatch.setattr("mlflow_metacompress.distill.runner.run_student_job", never)
    monkeypatch.setattr(mlflow.models, "evaluate", never)
    second = reproduce.run_study(cfg, output=out)
    assert second["failed"] == [] and all(
        second[k].skipped
        for k in ("teacher", "student-compressor-seed0", "evaluate-compressor-seed0", "attack-compressor-seed0")
    )
    # only the report run is new
    assert len(mlflow.search_runs(search_all_experiments=True, output_format="list")) == n_runs + 1
    assert json.loads((out / "bigclonebench.json").read_text())["summary"] == report["summary"]


def test_mlproject_reproduce_entry_point_parses_into_a_study_config():
    from mlflow.projects._project_spec import load_project

    from mlflow_metacompress.study.cli import config_from, parser
    from tests.conftest import REPO

    entry = load_project(str(REPO)).get_entry_point("reproduce")
    assert {
        "task",
        "data_dir",
        "seeds",
        "methods",
        "eval_rows",
        "attacks",
        "transforms",
        "threads",
        "attack_rows",
        "size_mb",
        "student_steps",
        "distill_rows",
    } <= set(entry.parameters)
    assert "recipes/reproduce.py" in entry.command
    params = {k: v.default for k, v in entry.parameters.items()}
    assert params["seeds"] == "0,1,2" and params["methods"] == "compressor,avatar,morph,fidelity,quantize"
    # MLflow passes float parameters as "200.0"; seeds as written
    args = parser().parse_args(
        [
            "--seeds",
            "0,2",
            "--eval-rows",
            "200.0",
            "--threads",
            "1.0",
            "--transforms",
            "rename_variables,swap_operands",
            "--attacks",
            "alert_yang_2022",
            "--attack-rows",
            "1000.0",
            "--distill-rows",
            "all",
            "--student-steps",
            "3000.0",
        ]
    )
    cfg = config_from(args)
    assert cfg.attack_rows == 1000 and cfg.distill_rows is None and cfg.student_steps == 3000
    assert config_from(parser().parse_args(["--attack-rows", "0"])).attack_rows is None
    assert cfg.seeds == (0, 2) and cfg.eval_rows == 200 and cfg.threads == 1
    assert cfg.transforms == ["rename_variables", "swap_operands"] and cfg.attacks == ("alert_yang_2022",)
    with pytest.raises(SystemExit):
        parser().parse_args(["--eval-rows", "2.5"])


def test_paired_bootstrap_over_rows_matches_a_direct_resample():
    import pandas as pd

    from mlflow_metacompress.study.rows import paired_bootstrap

    rng = np.random.default_rng(0)
    index = pd.MultiIndex.from_product([["rename_variables", "swap_operands"], range(150)], names=["variant", "row"])
    a = pd.Series((rng.random(len(index)) < 0.2).astype(float), index=index)
    b = pd.Series((rng.random(len(index)) < 0.4).astype(float), index=index)
    out = paired_bootstrap(a, b, samples=3000, seed=1)
    assert out["n_rows"] == 150 and out["n_pairs"] == 300
    assert out["mean_difference"] == pytest.approx(a.mean() - b.mean())
    assert out["low"] < out["mean_difference"] < out["high"] < 0 and out["pvalue"] < 0.01
    # every resample below zero: the p-value is floored at 2/(B+1), two-sided, never 0
    assert out["resamples"] == 3000 and out["pvalue"] >= 1 / 3001
    # the same resample by hand: rows drawn with replacement, both models' variants together
    idx = np.random.default_rng(1).integers(0, 150, size=(3000, 150))
    da, db = a.groupby(level="row").sum().to_numpy(), b.groupby(level="row").sum().to_numpy()
    diffs = (da[idx].sum(1) - db[idx].sum(1)) / (2 * 150)
    assert out["low"] == pytest.approx(np.quantile(diffs, 0.025)) and out["high"] == pytest.approx(
        np.quantile(diffs, 0.975)
    )
    # only the (variant, row) pairs both hold are compared
    assert paired_bootstrap(a.iloc[:150], b.iloc[150:])["n_rows"] == 0


def test_fidelity_is_compared_at_equal_size_and_quantize_is_no_phenomenon():
    """MORPH's search settles at 1.6 MB with the fewest violations: it is left out of item 5's
    equal-size comparison (named on the page); the int8 control never sets a headline row."""
    results = _results()
    for s in (0, 1, 2):
        results[("morph", s)]["size_mb"] = 1.6
        results[("morph", s)]["any_violation_rate/metamorphic"] = 0.05 + 0.01 * s
        results[("quantize", s)] = dict(results[("compressor", s)], size_mb=6.1, accuracy_drop=0.5)
        results[("quantize", s)]["mr3_violation_rate/metamorphic"] = 0.9
    methods = ["compressor", "avatar", "morph", "fidelity", "quantize"]
    s = summarise(results, methods, (0, 1, 2), ["alert_yang_2022"])
    f = s["fidelity"]
    assert f["best_baseline"] == "avatar" and f["equal_size"] and f["other_size"] == {"morph": pytest.approx(1.6)}
    fid = [results[("fidelity", k)]["any_violation_rate/metamorphic"] for k in (0, 1, 2)]
    ava = [results[("avatar", k)]["any_violation_rate/metamorphic"] for k in (0, 1, 2)]
    assert f["violations"]["pvalue"] == pytest.approx(stats.ttest_rel(fid, ava).pvalue)
    rows = {r["key"]: r for r in headline(s)}
    assert rows["mr3_violations"]["method"] == "compressor"  # not quantize's 0.9
    assert rows["mr3_violations"]["control"] == {"quantize": True}  # the control is judged, and shown
    assert rows["accuracy_within_3pt"]["method"] != "quantize" and rows["accuracy_within_3pt"]["appears"]
    assert s["methods"]["quantize"]["appears"]["accuracy_within_3pt"] is False  # a 50-point gap
    assert "(avatar, 3.00 MB; morph at 1.60 MB left out)" in render_markdown(_page_report(s, methods))


def test_premise_ladder_stops_at_the_first_rung_within_3_points(tmp_path):
    """Rungs run in order (sizes outermost) on every CodeBERT-labelled pair, without attacks,
    on at least 1,000 judged rows; the ladder stops where the study's own rule (TOST and the
    two-level interval inside ±3 points) first says "within 3 points"."""
    from mlflow_metacompress.study.config import StudyConfig
    from mlflow_metacompress.study.premise import premise_ladder

    gap = {(3.0, 1000): 0.08, (3.0, 2000): 0.05, (6.0, 1000): 0.004, (6.0, 2000): 0.0}
    seen = []

    def runner(cfg, output):
        seen.append((cfg.size_mb, cfg.student_steps))
        assert cfg.distill_rows is None and cfg.attacks == () and cfg.eval_rows == 1000
        assert cfg.methods == ("compressor", "fidelity")
        results = {}
        for m in cfg.methods:
            for s, noise in zip((0, 1, 2), (-0.002, 0.0, 0.002), strict=True):
                g = gap[(cfg.size_mb, cfg.student_steps)] + noise
                results[(m, s)] = {
                    "accuracy_drop": g,
                    "accuracy_drop_ci_low": g - 0.01,
                    "accuracy_drop_ci_high": g + 0.01,
                    "mr1_violation_rate/metamorphic": 0.2,
                }
        return {"report": {"summary": summarise(results, cfg.methods, (0, 1, 2))}}

    out = premise_ladder(StudyConfig(eval_rows=200), [1000, 2000], [3, 6], runner=runner, output=tmp_path)
    assert seen == [(3.0, 1000), (3.0, 2000), (6.0, 1000)]
    assert out["reached"] and out["size_mb"] == 6.0 and out["steps"] == 1000
    assert out["methods"] == ["compressor", "fidelity"]
    assert [r["gaps"]["compressor"]["appears"] for r in out["rungs"]] == [False, False, True]
    assert out["rungs"][0]["gaps"]["compressor"]["gap_points"] == pytest.approx(8.0)
    with pytest.raises(ValueError, match="steps and sizes"):
        premise_ladder(StudyConfig(), [], [3], runner=runner)


@pytest.mark.parametrize(
    ("extra", "want"), [([], ("compressor", "fidelity")), (["--methods", "compressor"], ("compressor",))]
)
def test_premise_ladder_from_the_command_line_keeps_the_methods_given(tmp_path, monkeypatch, extra, want):
    """``recipes/reproduce.py`` calls ``main()`` without argv: ``--methods`` read from
    ``sys.argv`` narrows the ladder (it was silently dropped), and without it both methods run."""
    import mlflow

    from mlflow_metacompress.study import cli as repro_cli
    from mlflow_metacompress.study import premise as repro_premise

    seen = {}

    def ladder(cfg, steps, sizes, *, methods, output):
        seen.update(methods=tuple(methods), steps=list(steps), sizes=list(sizes))
        return {"reached": False, "rungs": []}

    monkeypatch.setattr(repro_premise, "premise_ladder", ladder)
    monkeypatch.setattr(mlflow, "set_experiment", lambda name: None)
    argv = ["reproduce.py", "--premise-steps", "3000", "--premise-sizes", "3,6", "--output", str(tmp_path), *extra]
    monkeypatch.setattr("sys.argv", argv)
    assert repro_cli.main() == 0
    assert seen == {"methods": want, "steps": [3000], "sizes": [3.0, 6.0]}


def test_flip_counts_turn_logged_drops_into_rows():
    from mlflow_metacompress.study.attacks import flip_counts

    m = {"attack_a/teacher_accuracy_drop": 0.07, "attack_a/student_accuracy_drop": 0.135}
    assert flip_counts(m, ["a", "b"], 200) == {
        "attack_a/teacher_flips": 14.0,
        "attack_a/student_flips": 27.0,
        "attack_a/rows": 200.0,
    }  # attack b logged nothing: no counts rather than invented ones


def test_fidelity_on_one_paired_seed_renders_without_t_intervals():
    """A study resumed part by part can hold one seed that both fidelity and the baseline
    finished: the paired t-test and TOST are undefined (None in the JSON) and the page says
    "–" for them instead of failing, and does not claim the comparison's goal."""
    results = {k: v for k, v in _results().items() if k[0] in ("compressor", "fidelity") and k[1] == 0}
    s = summarise(results, ["compressor", "fidelity"], (0,), [])
    f = s["fidelity"]
    undefined = [f["violations"]["t_low"], f["violations"]["pvalue"], f["accuracy_tost_p"]]
    assert f["paired_seeds"] == 1 and all(x is None or np.isnan(x) for x in undefined)
    page = render_markdown(_page_report(s, ["compressor", "fidelity"]))
    assert "95% t [–, –]" in page and "TOST p at ±1 point = –" in page
    assert "the comparison asks for at least 5" in page and "not met" in page
