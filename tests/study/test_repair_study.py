"""Issue 44's page (``study/repair_study.py``, ``study/repair_page.py``): the ratios against a
direct log-t computation with scipy, each verdict state (met, met by the point estimate only,
missed by a stated factor), the accuracy TOST on the total error, equal total steps, options
the ``repair`` method accepts, and the command line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mlflow_metacompress.study.repair_page import ratio, render_repair, repair_verdicts
from mlflow_metacompress.study.triad_rows import encode


def test_ratio_is_a_geometric_mean_with_a_log_t_interval():
    rep, com = [0.2, 0.25, 0.3, 0.22, 0.18], [0.6, 0.55, 0.7, 0.65, 0.5]
    r = ratio(rep, com, 0.5, "at most")
    logs = np.log(np.array(rep) / np.array(com))
    low, high = stats.t.interval(0.95, 4, loc=logs.mean(), scale=stats.sem(logs))
    assert r["ratio"] == pytest.approx(math.exp(logs.mean()))
    assert (r["low"], r["high"]) == pytest.approx((math.exp(low), math.exp(high)))
    assert r["verdict"] == "met"
    assert ratio([0.3, 0.1, 0.32], [0.6, 0.5, 0.58], 0.5, "at most")["verdict"] == "met by the point estimate only"
    missed = ratio([0.6, 0.62, 0.58], [0.6, 0.6, 0.6], 0.5, "at most")
    assert missed["verdict"].startswith("missed: 2.00") and missed["ratio"] == pytest.approx(1.0, abs=0.02)
    short = ratio([20.0, 22.0, 21.0], [10.0, 10.0, 10.0], 5.0, "at least")
    assert short["verdict"].startswith("missed:") and "short" in short["verdict"]
    assert ratio([60.0, 62.0, 65.0], [10.0, 10.0, 10.0], 5.0, "at least")["verdict"] == "met"
    assert ratio([], [], 0.5, "at most")["verdict"] == "not established"


def _record(shift: float) -> dict:
    rng = np.random.default_rng(0)
    seeds = {}
    for s in range(5):
        pair = {}
        for method, rate in (("compressor", 0.6), ("repair", 0.6 * shift)):
            pair[method] = {
                "metrics": {
                    "deviation_rate": rate + 0.02 * rng.standard_normal(),
                    "any_violation_rate/metamorphic": rate + 0.02 * rng.standard_normal(),
                    "deviation_queries_per_deviation": 10.0 / max(rate, 0.05),
                    "any_violation_rate/metamorphic_seen": 0.3,
                },
                "correct": encode(rng.random(400) < 0.9),
            }
        seeds[str(s)] = pair
    return {"seeds": seeds, "trained_transforms": ["swap_operands"], "reference": {"deviation_rate": 0.5}}


def test_verdicts_and_page_from_the_record():
    from mlflow_metacompress.study.replica import tost_total
    from mlflow_metacompress.study.triad_rows import decode

    record = _record(0.3)
    v = repair_verdicts(record)
    assert v["seeds"] == ["0", "1", "2", "3", "4"]
    assert v["deviation_rate"]["verdict"] == "met" and v["deviation_rate"]["reference"] == 0.5
    assert v["queries_per_deviation"]["ratio"] > 3
    gaps = np.array(
        [decode(p["compressor"]["correct"]) - decode(p["repair"]["correct"]) for p in record["seeds"].values()]
    )
    assert v["accuracy"]["p"] == pytest.approx(tost_total(gaps, 0.01)["p"])
    assert v["seen"] == {"compressor": 0.3, "repair": 0.3}
    record["verdicts"] = v
    page = render_repair(record)
    assert "| deviation rate |" in page and "swap_operands" in page and "TOST at ±1 point" in page
    control = repair_verdicts(_record(1.0))
    assert control["deviation_rate"]["verdict"].startswith("missed")
    empty = {"seeds": {}}
    empty["verdicts"] = repair_verdicts(empty)
    assert "Not run yet." in render_repair(empty)


def test_repair_students_get_equal_total_steps_and_options_the_method_accepts():
    from mlflow_metacompress.distill.methods.repair import Options
    from mlflow_metacompress.study.repair_plan import REPAIR_OPTIONS, RepairPlan

    plan = RepairPlan()
    repair = plan.cfg("repair")
    rounds = REPAIR_OPTIONS["rounds"] * REPAIR_OPTIONS["round_steps"]
    assert repair.student_steps + rounds == plan.cfg("compressor").student_steps == 6000
    assert repair.size_mb == plan.cfg("compressor").size_mb == 3.0
    options = Options(**{k: tuple(v) if isinstance(v, list) else v for k, v in repair.options("repair").items()})
    assert options.variant_rows == 6000 and options.transforms is None and options.lr == 1e-3


def test_the_command_line_runs_five_paired_seeds_by_default(monkeypatch):
    """docs/benchmarks.md's command ("Repair against Compressor: the design"), parsed by the real parser."""
    import shlex
    from pathlib import Path

    import mlflow

    from mlflow_metacompress.study import cli, repair_study

    page = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text()
    block = page.split("python recipes/reproduce.py --repair-study", 1)[1].split("```", 1)[0]
    seen = {}
    monkeypatch.setattr(mlflow, "set_experiment", lambda name: None)
    monkeypatch.setattr(
        repair_study, "run_repair_study", lambda plan, **kw: seen.update(plan=plan, **kw) or {"failed": []}
    )
    cli.main(["--repair-study", *shlex.split(block.replace("\\\n", " "), comments=True)])
    assert seen["plan"].seeds == (0, 1, 2, 3, 4) and seen["only"] == "students"
    assert seen["bundles"] == "reproduction/three-teachers/stages" and seen["plan"].base.threads == 1
    assert seen["output"] == "reproduction/repair" and seen["plan"].base.student_steps == 6000
    cli.main(["--repair-study", "--seeds", "7,8"])
    assert seen["plan"].seeds == (7, 8)
