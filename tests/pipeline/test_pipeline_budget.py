"""The remaining-time estimate from each stage's own budget (pipeline/budget.py and
StageClock), checked with a fake clock: from the third stage on it must be within ±50%
of the time that really remained (issue 22: after the teacher, the old estimate copied
the teacher's time to every stage and said 1 h 44 min where 18 minutes remained)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mlflow_metacompress.pipeline.budget import SEARCH, pipeline_work, training_variants, trains
from mlflow_metacompress.pipeline.progress import StageClock
from mlflow_metacompress.profiles import get_profile

SIZES = {"train": 9600, "valid": 120, "test": 100}  # the quick profile's split sizes
METHODS = ["compressor", "avatar", "morph", "fidelity", "quantize"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _work(profile=None, methods=METHODS):
    return pipeline_work(
        profile or get_profile("quick"), methods, SIZES, transforms=10, training={m: m != "quantize" for m in methods}
    )


def test_budgets_follow_each_stage_s_own_size():
    work = {w.label: w.work for w in _work()}
    assert [w.label for w in _work()][:3] == ["teacher", "distill compressor", "gate compressor"]
    assert work["distill compressor"] > 2 * work["gate avatar"]
    # trains nothing: measured 11 s against AVATAR's 54 s, and 22 s against 67 s (MEASURED*)
    assert work["distill quantize"] < work["distill avatar"] / 3
    # MORPH trains on every unlabeled row and one variant of it, and rewrites them first
    # (measured 113 s against 51 s, and 220 s against 141 s with compressor first: 1.6-2.2x)
    assert work["distill morph"] > 1.3 * work["distill compressor"]
    assert work["gate compressor"] > work["gate avatar"]  # the teacher's predictions are cached after the first gate
    quick = get_profile("quick")
    longer = {w.label: w.work for w in _work(replace(quick, teacher_epochs=2 * quick.teacher_epochs))}
    assert longer["teacher"] / work["teacher"] == pytest.approx(2, rel=0.05)
    capped = {w.label: w.work for w in _work(replace(quick, max_steps=10))}
    assert capped["teacher"] < work["teacher"] / 10
    assert capped["distill compressor"] < work["distill compressor"] / 1.5
    assert capped["distill compressor"] > SEARCH  # the search is not capped by max_steps


def test_a_method_says_whether_it_trains_and_on_how_many_variants():
    assert trains("compressor") and trains("fidelity")
    assert trains("no-such-method")  # unknown names are budgeted as training methods
    assert training_variants("morph") == 1 and training_variants("compressor") == 0
    assert training_variants("no-such-method") == 0


def _replay(stages, seconds, clock_work=True):
    """Run the stages with a fake clock taking ``seconds[label]`` each; return, for every
    stage's start, (stage number, estimate, truth)."""
    clock = FakeClock()
    sc = StageClock(
        [(w.kind, w.label, w.work) if clock_work else (w.kind, w.label) for w in stages], interval=3600, clock=clock
    )
    total = sum(seconds.values())
    out = []
    for i, w in enumerate(stages, 1):
        with sc.stage(w.label):
            out.append((i, sc.remaining(), total - clock.now))
            clock.now += seconds[w.label]
    return out


def _truth(stages):
    """Stage times from a model unlike the estimator's: every kind at its own speed (students
    step faster than the teacher, gates pay more for MLflow and reports), jittered ±25%."""
    rate = {"teacher": 1.0, "distill": 0.6, "gate": 2.0}
    jitter = [1.0, 1.25, 0.8, 1.2, 0.75, 1.1, 0.9, 1.25, 0.8, 1.0, 1.2]
    return {w.label: w.work * rate[w.kind] * jitter[i % len(jitter)] for i, w in enumerate(stages)}


def test_estimate_is_within_half_of_the_truth_from_the_third_stage_on():
    stages = _work()
    seconds = _truth(stages)
    for number, estimate, truth in _replay(stages, seconds):
        if number >= 3:
            assert estimate == pytest.approx(truth, rel=0.5), (number, estimate, truth)
    # the mean-duration estimate it replaces copies the teacher's time to the gates: far off
    old = [(n, e, t) for n, e, t in _replay(stages, seconds, clock_work=False) if n >= 3]
    assert max(abs(e / t - 1) for _, e, t in old) > 0.5


def test_a_stage_kind_not_seen_yet_is_priced_at_the_teacher_s_rate():
    clock = FakeClock()
    sc = StageClock(
        [
            ("teacher", "teacher", 100.0),
            ("distill", "distill a", 50.0),
            ("gate", "gate a", 10.0),
            ("distill", "distill q", 5.0),
        ],
        interval=3600,
        clock=clock,
    )
    assert sc.remaining() is None
    with sc.stage("teacher"):
        clock.now += 200  # 2 s per unit of work
    assert sc.remaining() == pytest.approx(2 * (50 + 10 + 5))
    with sc.stage("distill a"):
        clock.now += 50  # students: 1 s per unit
    # the gate still at the teacher's rate; distillations at their own (students step faster)
    assert sc.remaining() == pytest.approx(2 * 10 + 1 * 5)
    with sc.stage("gate a"):
        clock.now += 4
        assert sc.remaining() == pytest.approx(20 - 4 + 5)  # the running stage's estimate less its time so far
        clock.now += 30  # far over its estimate
        assert sc.remaining() == pytest.approx(5)


def test_a_method_module_declaring_trains_false_is_budgeted_without_training(monkeypatch):
    import types

    from mlflow_metacompress.distill import discovery as registry

    module = types.ModuleType("fake_ptq")
    module.NAME, module.Options, module.run, module.TRAINS = "ptq", registry.MethodOptions, lambda c, o: None, False
    monkeypatch.setattr(registry, "discover", lambda: {"ptq": registry._method_of(module)})
    assert not trains("ptq") and registry.get_method("ptq").trains is False
    work = {w.label: w.work for w in pipeline_work(get_profile("quick"), ["ptq"], SIZES, transforms=10)}
    assert work["distill ptq"] < work["teacher"] / 5


# Stage times of a real quick main job (generated vulnerability data, 1 thread, the 2-core
# machine idle, load 0.65 at the start; benchmarks/bench_threads.py --main-job, 2026-12-01,
# 1,218 s in all). It replaced a record taken at load 9-20 under an older profile (2,000
# rows), whose stage times followed the machine's load more than each stage's work. The
# quick profile's budgets are pinned as they were, so later changes to the profile do not
# move this record.
MEASURED = {
    "teacher": 864,
    "distill avatar": 54,
    "gate avatar": 8,
    "distill compressor": 51,
    "gate compressor": 3,
    "distill fidelity": 91,
    "gate fidelity": 3,
    "distill morph": 113,
    "gate morph": 3,
    "distill quantize": 11,
    "gate quantize": 4,
}


# Stage times of the fresh-clone quick main job after the vulnerability budget doubled (48,000
# generated rows, 19,200 labelled, 6 teacher epochs; 1 thread, beside another 1-thread job,
# 2026-12-02, 2,111 s in all). With the constants fitted to the first record alone its
# estimate was +73% at the third stage; budget.py's constants are fitted to both.
MEASURED_48K = {
    "teacher": 1460,
    "distill compressor": 141,
    "gate compressor": 8,
    "distill avatar": 67,
    "gate avatar": 3,
    "distill morph": 220,
    "gate morph": 3,
    "distill fidelity": 177,
    "gate fidelity": 3,
    "distill quantize": 22,
    "gate quantize": 4,
}


def _pinned_quick(**budgets):
    """The quick profile with the budgets a measured job ran under (later profile changes
    must not move a record)."""
    pinned = dict(
        valid_rows=120,
        eval_rows=100,
        teacher_patience=3,
        student_epochs=1,
        method_epochs={"fidelity": 1},
        batch_size=16,
        attacks=("alert_yang_2022",),
        attack_budget=40,
        attack_max_samples=16,
        max_steps=-1,
    )
    return replace(get_profile("quick"), **{**pinned, **budgets})


# The same job with 200 judged test rows, again from a fresh clone beside one other 1-thread
# job (2026-12-02, 1,661 s), after the constants were fitted: an independent check.
MEASURED_48K_200 = {
    "teacher": 1112,
    "distill compressor": 105,
    "gate compressor": 7,
    "distill avatar": 58,
    "gate avatar": 5,
    "distill morph": 181,
    "gate morph": 5,
    "distill fidelity": 157,
    "gate fidelity": 3,
    "distill quantize": 21,
    "gate quantize": 5,
}


RECORDS = [
    (
        _pinned_quick(generated_rows=24000, train_rows=19200, teacher_epochs=8),
        ["avatar", "compressor", "fidelity", "morph", "quantize"],
        {"train": 19200, "valid": 120, "test": 100},
        MEASURED,
    ),
    (
        _pinned_quick(generated_rows=48000, train_rows=38400, teacher_epochs=6),
        ["compressor", "avatar", "morph", "fidelity", "quantize"],
        {"train": 38400, "valid": 120, "test": 100},
        MEASURED_48K,
    ),
    (
        _pinned_quick(generated_rows=48000, train_rows=38400, teacher_epochs=6, eval_rows=200),
        ["compressor", "avatar", "morph", "fidelity", "quantize"],
        {"train": 38400, "valid": 120, "test": 200},
        MEASURED_48K_200,
    ),
]


@pytest.mark.parametrize("record", range(len(RECORDS)), ids=["24k-idle", "48k-fresh-clone", "48k-200-rows"])
def test_estimate_on_a_measured_quick_job_is_within_half_from_the_third_stage(record):
    quick, methods, sizes, measured = RECORDS[record]
    training = {m: m != "quantize" for m in methods}
    stages = pipeline_work(quick, methods, sizes, transforms=10, training=training, augments={"morph": 1})
    for subset in (methods, methods[:3]):  # the whole job, and its first seven stages as a 3-method job
        part = stages[: 1 + 2 * len(subset)]
        times = {w.label: measured[w.label] for w in part}
        errors = {n: e / t - 1 for n, e, t in _replay(part, times) if n >= 3}
        assert max(abs(e) for e in errors.values()) <= 0.5, errors
        old = {n: e / t - 1 for n, e, t in _replay(part, times, clock_work=False) if n >= 3}
        assert max(abs(e) for e in old.values()) > 0.5  # the mean-duration estimate copies the teacher's time


def test_fidelity_without_a_transforms_option_is_budgeted_for_every_transformation_of_its_language():
    from mlflow_metacompress.transforms import list_transforms

    quick = get_profile("quick")
    named = quick.with_overrides(
        method_options={**quick.method_options, "fidelity": {**quick.options_for("fidelity"), "transforms": ["a"]}}
    )
    every = quick.with_overrides(
        method_options={**quick.method_options, "fidelity": {**quick.options_for("fidelity"), "transforms": None}}
    )

    def fidelity(profile, language):
        stages = pipeline_work(profile, ["fidelity"], SIZES, transforms=1, language=language)
        return {w.label: w.work for w in stages}["distill fidelity"]

    one = fidelity(named, "c")
    for language in ("c", "java"):
        n = len(list_transforms(language))
        assert n > 1
        # each transformation rewrites every unlabeled row once more: work grows linearly in n
        two = fidelity(
            named.with_overrides(
                method_options={"fidelity": {**named.options_for("fidelity"), "transforms": ["a", "b"]}}
            ),
            language,
        )
        assert fidelity(every, language) == pytest.approx(one + (n - 1) * (two - one))
