"""The three-teacher study (issue 42; ``study/triad*.py``): per-row data against direct
pandas computations, the verdicts against scipy and statsmodels on synthetic records with a
planted effect and a negative control, rule 6's seen/unseen split, the confirmation rows,
the budget rule, the page and the command line."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from mlflow_metacompress.study.replica import FIDELITY_SEEN
from mlflow_metacompress.study.triad_rows import RowData, decode, encode, row_data

VARIANTS = ("rename_variables", "insert_dead_code", "swap_operands", "for_to_while", "compose")
ROWS = 120


def per_sample(rng: np.random.Generator, p_original: float, p_transformed: float, rows: int = ROWS) -> pd.DataFrame:
    """An evaluation's per-sample table: every row original, most rows under every variant."""
    records = []
    label = rng.integers(0, 2, rows)
    for variant in ("original", *VARIANTS, "attack_mhm_zhang_2020"):
        p = p_original if variant == "original" else p_transformed
        for row in range(rows):
            if variant != "original" and rng.random() < 0.2:
                continue  # a rewrite that does not apply to this row
            in_h = bool(rng.random() < 0.7)
            flags = rng.random(3) < p
            records.append(
                {
                    "variant": variant, "row": row, "label": int(label[row]), "teacher_pred": int(label[row]),
                    "student_pred": int(label[row] if rng.random() < 0.9 else 1 - label[row]),
                    "mr1_violation": bool(flags[0]), "mr2_violation": bool(flags[1]),
                    "mr3_in_h": in_h, "mr3_violation": bool(flags[2] and in_h),
                }
            )  # fmt: skip
    return pd.DataFrame(records)


def test_row_data_matches_a_direct_computation_and_round_trips_through_json():
    rng = np.random.default_rng(0)
    df = per_sample(rng, 0.1, 0.3)
    data = row_data(df, ROWS)
    rewritten = df[(df.variant != "original") & ~df.variant.str.startswith("attack_")]
    for relation in ("mr1", "mr2"):
        assert data.rate(relation, "transformed") == pytest.approx(rewritten[f"{relation}_violation"].mean())
        unseen = rewritten[~rewritten.variant.isin(FIDELITY_SEEN)]
        assert data.rate(relation, "transformed", ("unseen",)) == pytest.approx(unseen[f"{relation}_violation"].mean())
        orig = df[df.variant == "original"]
        assert data.rate(relation, "original") == pytest.approx(orig[f"{relation}_violation"].mean())
    in_h = rewritten[rewritten.mr3_in_h]
    assert data.rate("mr3", "transformed") == pytest.approx(in_h["mr3_violation"].mean())
    orig = df[df.variant == "original"]
    assert data.rate("mr3", "original") == pytest.approx(orig.loc[orig.mr3_in_h, "mr3_violation"].mean())
    # rule 2: per row, the share of violating variants minus the original's flag
    per_row = rewritten.groupby("row")["mr1_violation"].mean() - orig.set_index("row")["mr1_violation"]
    assert data.increment("mr1") == pytest.approx(per_row.dropna().mean())
    back = RowData.from_json(data.to_json())
    for relation in ("mr1", "mr2", "mr3"):
        for kind in ("original", "transformed"):
            assert back.rate(relation, kind) == pytest.approx(data.rate(relation, kind), nan_ok=True)
    assert list(decode(encode([0, 3, math.nan, 35]))[[0, 1, 3]]) == [0, 3, 35] and math.isnan(decode("-")[0])
    with pytest.raises(ValueError, match="integers"):
        encode([36])


def _record(student_shift: float, seed: int = 0) -> dict:
    """Three teachers, two replicas each, Compressor (2 seeds), MORPH and fidelity (1 seed);
    students violate ``student_shift`` more than replicas on every rewrite."""
    rng = np.random.default_rng(seed)
    rows = {}
    for t in ("0", "1", "2"):
        base = 0.15 + 0.03 * int(t)
        models = {f"replica:{j}": row_data(per_sample(rng, base, base + 0.05), ROWS).to_json() for j in "012" if j != t}
        for label in ("compressor:0", "compressor:1", "morph:0", "fidelity:0"):
            models[label] = row_data(per_sample(rng, base + student_shift, base + 0.05 + student_shift), ROWS).to_json()
        rows[t] = models
    return {"rows": rows, "teachers": {t: {"teacher_test_acc": 0.9} for t in rows}}


def test_rule_1_is_a_teacher_level_t_test_with_holm_and_a_negative_control_is_not_established():
    from mlflow_metacompress.study.triad_verdicts import verdicts

    planted = _record(0.25)
    v = verdicts(planted)["relations"]["excess"]["mr1/transformed"]
    rows = {t: {m: RowData.from_json(d) for m, d in ms.items()} for t, ms in planted["rows"].items()}
    for method in ("compressor", "morph"):
        d = []
        for ms in rows.values():
            student = np.mean([x.rate("mr1", "transformed") for k, x in ms.items() if k.startswith(method + ":")])
            ref = np.mean([x.rate("mr1", "transformed") for k, x in ms.items() if k.startswith("replica:")])
            d.append(student - ref)
        assert v[method]["mean"] == pytest.approx(np.mean(d))
        assert v[method]["p"] == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
    ps = [v[m]["p"] for m in sorted(v)]
    assert [v[m]["p_holm"] for m in sorted(v)] == pytest.approx(list(multipletests(ps, method="holm")[1]))
    assert {r["verdict"] for r in v.values()} == {"appears over the reference"}
    assert all(r["bootstrap"]["low"] > 0 for r in v.values())

    control = verdicts(_record(0.0, seed=1))["relations"]["excess"]["mr1/transformed"]
    assert {r["verdict"] for r in control.values()} == {"not established"}


def test_fidelity_is_judged_on_unseen_rewrites_and_its_seen_ones_apart():
    from mlflow_metacompress.study.triad_verdicts import verdicts

    record = _record(0.0, seed=2)
    rng = np.random.default_rng(3)
    for models in record["rows"].values():  # fidelity: clean on unseen rewrites, violating on seen ones
        df = per_sample(rng, 0.15, 0.0)
        seen = df.variant.isin(FIDELITY_SEEN)
        df.loc[seen, "mr1_violation"] = True
        models["fidelity:0"] = row_data(df, ROWS).to_json()
    v = verdicts(record)
    fid = v["relations"]["excess"]["mr1/transformed"]["fidelity"]
    assert fid["student_rate"] == 0.0 and fid["mean"] < 0
    assert v["fidelity_seen"]["excess"]["mr1/transformed"]["fidelity"]["student_rate"] == 1.0


def test_premise_and_confirmation_are_tosts_on_teacher_by_seed_units():
    from mlflow_metacompress.study.replica import tost_total
    from mlflow_metacompress.study.triad_verdicts import verdicts

    record = _record(0.0, seed=4)
    rng = np.random.default_rng(5)
    record["confirmation"] = {
        "confirmation": {
            t: {s: {"correct": encode(rng.random(300) < 0.9), "teacher_correct": encode(rng.random(300) < 0.9)}
                for s in ("10", "11")}
            for t in ("0", "1", "2")
        }
    }  # fmt: skip
    v = verdicts(record)
    rows = {t: {m: RowData.from_json(d) for m, d in ms.items()} for t, ms in record["rows"].items()}
    gaps = np.array([ms[k].accuracy_gap() for ms in rows.values() for k in ("compressor:0", "compressor:1")])
    assert v["premise"]["compressor"]["units"] == 6
    assert v["premise"]["compressor"]["p"] == pytest.approx(tost_total(gaps, 0.03)["p"])
    c = v["confirmation"]["confirmation"]
    assert c["units"] == 6 and c["rows"] == 300 and c["verdict"] in ("confirmed", "not confirmed")


def test_attack_rule_reads_success_among_correct_rows_at_the_chosen_budget():
    from mlflow_metacompress.study.triad_plan import chosen_budget
    from mlflow_metacompress.study.triad_verdicts import attacks

    assert chosen_budget({30: {0: 0.10, 1: 0.2}, 100: {0: 0.16, 1: 0.3}}, (30, 100, 300)) == 100
    assert chosen_budget({30: {0: 0.10}}, (30,)) is None
    record = {
        "attacks": {
            "mhm_zhang_2020": {
                "budget": 100,
                "teacher": {"0": 0.2, "1": 0.25, "2": 0.2},
                "students": {"compressor": {"0": [0.4, 0.5], "1": [0.5, 0.45], "2": [0.42, 0.4]}},
            }
        }
    }
    r = attacks(record)["mhm_zhang_2020"]["verdicts"]["compressor"]
    logs = [np.mean(np.log(np.array(v) / record["attacks"]["mhm_zhang_2020"]["teacher"][t]))
            for t, v in record["attacks"]["mhm_zhang_2020"]["students"]["compressor"].items()]  # fmt: skip
    assert r["excess"] == pytest.approx(math.exp(np.mean(logs)) - 1)
    assert r["p"] == pytest.approx(stats.ttest_1samp(logs, 0.0, alternative="greater").pvalue)
    assert r["verdict"] == "reproduced" and r["paper"] is None


def test_confirmation_rows_never_overlap_the_selection_and_the_natural_resample_has_the_natural_ratio():
    from mlflow_metacompress.study.config import StudyConfig
    from mlflow_metacompress.study.data import eval_rows

    test = pd.DataFrame({"func1": [f"a{i}" for i in range(400)], "label": [i % 2 for i in range(400)]})
    data = SimpleNamespace(test=test, label_column="label")
    cfg = StudyConfig(eval_rows=200)
    selection = set(eval_rows(cfg, data)["func1"])
    confirmation = eval_rows(replace(cfg, eval_split="confirmation"), data)
    natural = eval_rows(replace(cfg, eval_split="natural"), data)
    assert len(selection) == 200 and not selection & set(confirmation["func1"])
    assert selection | set(confirmation["func1"]) == set(test["func1"])
    assert set(natural["func1"]) <= set(confirmation["func1"])
    assert natural["label"].mean() == pytest.approx(0.14, abs=0.01)
    assert (natural["label"] == 0).sum() == (confirmation["label"] == 0).sum()
    with pytest.raises(ValueError, match="eval_split"):
        eval_rows(replace(cfg, eval_split="everything"), data)


def test_eval_split_and_seed_enter_the_evaluation_key_only_when_set():
    from mlflow_metacompress.study.config import StudyConfig
    from mlflow_metacompress.study.resume import StageResult
    from mlflow_metacompress.study.stages import eval_args

    student = StageResult("s", "k", "r")
    plain = eval_args(StudyConfig(), student, "compressor", 0)
    assert "eval_split" not in plain and "eval_seed" not in plain
    keyed = eval_args(StudyConfig(eval_split="natural", eval_seed=0), student, "compressor", 0)
    assert keyed["eval_split"] == "natural" and keyed["eval_seed"] == 0


def test_the_page_renders_every_rule_and_says_what_has_not_run(tmp_path):
    from mlflow_metacompress.study.triad_markdown import render_triad
    from mlflow_metacompress.study.triad_verdicts import verdicts

    empty = {"rows": {}, "teachers": {}}
    empty["verdicts"] = verdicts(empty)
    assert render_triad(empty).count("Not run yet.") >= 4
    record = _record(0.25)
    record["verdicts"] = verdicts(record)
    page = render_triad(record)
    assert "appears over the reference" in page and "## The premise (rule 3)" in page
    assert "rules" in page and "compressor" in page


def test_a_partial_page_says_so_and_counts_what_ran():
    from mlflow_metacompress.study.triad_markdown import progress, render_triad
    from mlflow_metacompress.study.triad_verdicts import verdicts

    plan = {
        "teacher_seeds": [0, 1, 2], "seeds": {"compressor": [0, 1], "morph": [0], "fidelity": [0]},
        "confirm": {"method": "compressor", "seeds": [10, 11]}, "attacks": ["alert", "mhm"],
    }  # fmt: skip
    full = {**_record(0.0), "plan": plan}
    unit = {"correct": "1" * 40, "teacher_correct": "1" * 40}
    full["confirmation"] = {"confirmation": {t: {"10": unit, "11": unit} for t in "012"}, "natural": {}}
    students = {"compressor": {t: [0.2, 0.3] for t in "012"}, "morph": {t: [0.2] for t in "012"}}
    students["fidelity"] = {t: [0.2] for t in "012"}
    full["attacks"] = {a: {"students": students} for a in ("alert", "mhm")}
    assert progress(full) == {
        "teachers": (3, 3), "replicas": (6, 6), "premise students": (12, 12),
        "confirmation students": (6, 6), "attacked students": (24, 24),
    }  # fmt: skip
    full["verdicts"] = verdicts(full)
    assert "Every planned unit has run." in render_triad(full) and "Partial page" not in render_triad(full)

    partial = {**full, "rows": {"0": {"compressor:0": full["rows"]["0"]["compressor:0"]}}, "confirmation": {}}
    partial["teachers"] = {"0": {}, "1": {}}
    partial["attacks"] = {}
    assert progress(partial) == {
        "teachers": (2, 3), "replicas": (0, 6), "premise students": (1, 12),
        "confirmation students": (0, 6), "attacked students": (0, 24),
    }  # fmt: skip
    partial["verdicts"] = verdicts(partial)
    said = "**Partial page: not every planned unit has run** (teachers 2 of 3, replicas 0 of 6, premise students 1 of"
    assert said + " 12, confirmation students 0 of 6, attacked students 0 of 24)" in render_triad(partial)


def test_the_command_line_runs_the_three_teacher_plan(monkeypatch):
    """docs/benchmarks.md's command ("How it runs"), parsed by the real parser."""
    import shlex
    from pathlib import Path

    from mlflow_metacompress.study import cli, triad

    page = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text()
    block = page.split("python recipes/reproduce.py --three-teachers", 1)[1].split("```", 1)[0]
    argv = ["--three-teachers", *shlex.split(block.replace("\\\n", " "), comments=True)]
    import mlflow

    monkeypatch.setattr(mlflow, "set_experiment", lambda name: None)  # no experiment left active for later tests
    seen = {}
    monkeypatch.setattr(triad, "run_triad", lambda plan, **kw: seen.update(plan=plan, **kw) or {"failed": []})
    cli.main(argv)
    assert seen["only"] == "teachers" and seen["bundles"] == "reproduction/three-teachers/stages"
    assert seen["plan"].teacher_seeds == (0, 1, 2) and seen["plan"].base.threads == 1
    cli.main(["--three-teachers", "--teacher-seeds", "0,1", "--only", "replicas", "--stages", "st"])
    plan = seen["plan"]
    assert plan.teacher_seeds == (0, 1) and seen["only"] == "replicas" and seen["bundles"] == "st"
    assert seen["output"] == "reproduction/three-teachers"
    base = plan.base
    assert (base.size_mb, base.student_steps, base.student_lr, base.student_grad_clip) == (3.0, 6000, 1e-3, 1.0)
    assert base.distill_rows is None and base.eval_rows == 1000 and base.eval_seed == 0
    assert plan.seeds == {"compressor": (0, 1), "morph": (0,), "fidelity": (0,)}


def test_a_teacher_judged_against_two_teachers_is_two_evaluations():
    """An evaluation's key holds its student's key, not its teacher's: a replica's key must name its judge."""
    from mlflow_metacompress.study.resume import StageResult, stage_key
    from mlflow_metacompress.study.stages import eval_args
    from mlflow_metacompress.study.triad_plan import REPLICA, TriadPlan, as_replica

    t = {i: StageResult("teacher", f"key{i}", f"run{i}", {"model_uri": f"models:/t/{i}"}) for i in range(3)}
    plan = TriadPlan()
    keys = {
        i: stage_key("evaluate-replica-seed1", eval_args(plan.teacher_cfg(i), as_replica(t[1], t[i]), REPLICA, 1))
        for i in (0, 2)
    }
    assert keys[0] != keys[2]
    assert as_replica(t[1], t[0]).outputs == t[1].outputs  # the model judged is still teacher 1


def test_skip_leaves_out_parts_and_refuses_the_teachers_and_unknown_names(monkeypatch):
    """``--only attacks --skip students`` attacks what is trained while other processes train the rest."""
    import pytest

    from mlflow_metacompress.study import cli, teacher, triad
    from mlflow_metacompress.study.resume import StageResult
    from mlflow_metacompress.study.triad_plan import TriadPlan

    ran: list[str] = []
    monkeypatch.setattr(teacher, "teacher_stage", lambda cfg, data, bundles: StageResult("teacher", "k", "r", {}))
    for part in ("replicas", "students", "attacks", "confirmation"):
        monkeypatch.setattr(triad, f"_{part}", lambda *a, part=part: ran.append(part))
    plan = TriadPlan(teacher_seeds=(0,))
    assert triad.run_triad(plan, only="attacks", skip=("students",), data=object())["failed"] == []
    assert ran == ["replicas", "attacks"]
    ran.clear()
    triad.run_triad(plan, only="confirmation", skip=("replicas", "students"), data=object())
    assert ran == ["attacks", "confirmation"]
    with pytest.raises(ValueError, match=r"skip takes parts of .*got \['teachers'\]"):
        triad.run_triad(plan, skip=("teachers",), data=object())
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["--three-teachers", "--skip", "students,teacher"])
    assert cli.parser().parse_args(["--skip", "students, attacks"]).skip == ("students", "attacks")


def test_the_units_table_matches_the_per_sample_tables():
    """Each judged model's accuracy, its teacher's, the gap and MR1 (``fidelity`` on the rewrites
    it never trained on), recomputed with pandas from the per-sample tables behind the record."""
    from mlflow_metacompress.study.triad_markdown import render_triad
    from mlflow_metacompress.study.triad_verdicts import verdicts

    rng = np.random.default_rng(3)
    frames = {"compressor:1": per_sample(rng, 0.1, 0.3), "fidelity:0": per_sample(rng, 0.2, 0.4)}
    frames["replica:2"] = per_sample(rng, 0.05, 0.1)
    for frame in frames.values():  # the teacher wrong on a few rows
        frame.loc[frame.row % 9 == 0, "teacher_pred"] = 1 - frame["label"]
    record = {"rows": {"1": {k: row_data(f, ROWS).to_json() for k, f in frames.items()}}, "teachers": {"1": {}}}
    record["verdicts"] = verdicts(record)
    page = render_triad(record)
    names = {"compressor:1": "compressor seed 1", "fidelity:0": "fidelity seed 0", "replica:2": "teacher 2 (replica)"}
    for key, df in frames.items():
        orig = df[df.variant == "original"]
        acc, teacher_acc = (orig[c].eq(orig.label).mean() for c in ("student_pred", "teacher_pred"))
        rewritten = df[(df.variant != "original") & ~df.variant.str.startswith("attack_")]
        if key.startswith("fidelity"):
            rewritten = rewritten[~rewritten.variant.isin(FIDELITY_SEEN)]
        cells = [
            "1", names[key], f"{100 * acc:.1f}%", f"{100 * teacher_acc:.1f}%", f"{100 * (teacher_acc - acc):+.1f}",
            f"{100 * orig.mr1_violation.mean():.1f}%", f"{100 * rewritten.mr1_violation.mean():.1f}%",
        ]  # fmt: skip
        assert "| " + " | ".join(cells) + " |" in page
    assert page.index("| 1 | compressor seed 1 |") < page.index("| 1 | teacher 2 (replica) |")  # students first
    empty = {"rows": {}, "teachers": {}}
    empty["verdicts"] = verdicts(empty)
    assert "## Units\n\nNot run yet." in render_triad(empty)
