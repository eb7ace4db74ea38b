"""torch's thread count (mlflow_metacompress/threads.py): where it comes from, that bad
values are refused by name, that it is restored, and that training, speed tags and the
evaluator really run on it and record it (read with ``torch.get_num_threads`` inside the
models' forward passes)."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from mlflow_metacompress import threads
from mlflow_metacompress.distill.devices import TrainerSettings
from tests.conftest import toy_frame


@pytest.fixture
def clean_env(monkeypatch):
    """No thread variable inherited from the shell (the helpers run with OMP_NUM_THREADS=1),
    and an idle machine (no other process busy), so the default is the same everywhere."""
    for name in (threads.ENV, threads.OMP_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads, "busy_cores", lambda *a, **k: 0.0)
    return monkeypatch


# ------------------------------------------------------------------ policy
def test_default_leaves_a_core_and_shares_the_rest_between_training_processes(clean_env):
    assert [threads.default_threads(1, cores) for cores in (1, 2, 4, 16)] == [1, 2, 3, 15]
    assert [threads.default_threads(p, 16) for p in (2, 4, 32)] == [7, 3, 1]
    clean_env.setattr(threads, "available_cores", lambda: 8)
    assert threads.resolve() == 7 and threads.resolve(processes=2) == 3


@pytest.mark.parametrize(
    "cores,busy,expected",
    [(2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 1.0, 1), (2, 2.5, 1), (1, 0.0, 1), (4, 1.0, 2), (16, 4.2, 11)],
)
def test_the_second_core_is_used_only_while_it_is_free(cores, busy, expected):
    assert threads.default_threads(1, cores, busy=busy) == expected


def _fake_probe(monkeypatch, stats, own_cpu_s, cpus=2):
    """/proc/stat reads ``stats`` in turn; this process spends ``own_cpu_s`` during the probe."""
    reads, clock = iter(stats), iter([10.0, 10.0 + own_cpu_s])
    monkeypatch.setattr(threads, "_proc_stat", lambda *a: next(reads))
    monkeypatch.setattr(threads.time, "process_time", lambda: next(clock))
    monkeypatch.setattr(threads.time, "sleep", lambda s: None)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(threads, "available_cores", lambda: cpus)
    monkeypatch.setattr(threads, "_probe", [])


def test_busy_cores_probe_counts_other_processes_only(monkeypatch):
    # 0.2 s on 2 cores = 40 jiffies: 30 busy is 1.5 cores, of which this process used 0.1 s / 0.2 s = 0.5
    _fake_probe(monkeypatch, [(1000, 5000), (1030, 5040)], own_cpu_s=0.1)
    assert threads.busy_cores(fresh=True) == pytest.approx(1.0)
    assert threads.default_threads(1, 2) == 1  # the probe's result is reused: no second read
    # an idle machine (this process alone busy) gives the second core
    _fake_probe(monkeypatch, [(1000, 5000), (1012, 5040)], own_cpu_s=0.1)  # 0.6 cores, 0.5 ours
    assert threads.busy_cores(fresh=True) == pytest.approx(0.1)
    assert threads.default_threads(1, 2) == 2
    # no /proc/stat: the 1-minute load average
    monkeypatch.setattr(threads, "_proc_stat", lambda *a: None)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.7, 0.5, 0.2))
    assert threads.busy_cores(fresh=True) == pytest.approx(1.7) and threads.default_threads(1, 2) == 1


def test_proc_stat_is_parsed(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\n")
    assert threads._proc_stat(str(stat)) == (160, 1000)
    stat.write_text("intr 1 2 3\n")
    assert threads._proc_stat(str(stat)) is None and threads._proc_stat(str(tmp_path / "absent")) is None


def test_available_cores_follow_affinity_and_a_cgroup_quota(tmp_path, monkeypatch):
    quota = tmp_path / "cpu.max"
    for text, expected in (("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000", 1), ("junk", None)):
        quota.write_text(text)
        assert threads._cgroup_quota(quota) == expected, text
    assert threads._cgroup_quota(tmp_path / "absent") is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: None)
    assert threads.available_cores() == 4
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: 2)
    assert threads.available_cores() == 2


def test_option_beats_environment_beats_omp_beats_default(clean_env):
    clean_env.setattr(threads, "available_cores", lambda: 16)
    assert threads.resolve() == 15
    clean_env.setenv(threads.OMP_ENV, "4")
    assert threads.resolve() == 4
    clean_env.setenv(threads.ENV, "3")
    assert threads.resolve() == 3
    assert threads.resolve(5) == threads.resolve("5") == threads.resolve(5.0) == 5
    for unset in (None, "", "auto", " AUTO ", 0, "0"):
        assert threads.resolve(unset) == 3, unset
    clean_env.setenv(threads.ENV, "auto")
    assert threads.resolve() == 4
    clean_env.setenv(threads.OMP_ENV, "lots")  # read by other libraries too: ignored here, not fatal
    assert threads.resolve() == 15


@pytest.mark.parametrize("bad", ["two", "-1", "1.5", True, [2], "nan", -3])
def test_bad_values_name_the_option_or_the_variable(clean_env, bad):
    with pytest.raises(ValueError, match=r"evaluator_config\['threads'\] must be a positive integer"):
        threads.resolve(bad, source="evaluator_config['threads']")
    if isinstance(bad, str):
        clean_env.setenv(threads.ENV, bad)
        with pytest.raises(ValueError, match=f"{threads.ENV} must be a positive integer or 'auto', got"):
            threads.resolve()


def test_using_sets_and_restores_and_nested_work_inherits_the_enclosing_count(clean_env):
    import torch

    clean_env.setenv(threads.ENV, "2")
    before = torch.get_num_threads()
    with threads.using(3) as outer:
        assert outer == torch.get_num_threads() == 3
        with threads.using() as inner:  # nested work without its own setting: the enclosing count
            assert inner == torch.get_num_threads() == 3
        with threads.using(1) as explicit:
            assert explicit == torch.get_num_threads() == 1
        assert torch.get_num_threads() == 3
        assert threads.resolve(processes=2) == 2  # training ranks are not the enclosing process: env/default
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), threads.using(2):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before and threads._active == []


def test_tokenizers_pool_is_off_inside_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv(threads.TOKENIZERS_ENV, raising=False)
    with threads.using(1):
        assert os.environ[threads.TOKENIZERS_ENV] == "false"
    assert threads.TOKENIZERS_ENV not in os.environ  # nothing left behind
    monkeypatch.setenv(threads.TOKENIZERS_ENV, "true")
    with threads.using(1):
        assert os.environ[threads.TOKENIZERS_ENV] == "true"


# ------------------------------------------------------------------ training
@pytest.mark.slow
def test_fit_trains_on_the_configured_threads_and_restores_them(clean_env):
    import torch

    from mlflow_metacompress.distill import training
    from mlflow_metacompress.distill.arch import ArchSpec
    from mlflow_metacompress.distill.datasets import CodeExamples
    from mlflow_metacompress.distill.modules import ClassifierModule
    from mlflow_metacompress.models.tokenizer import train_tokenizer
    from tests.conftest import TOY_CODE

    seen: list[int] = []

    class Spy(ClassifierModule):
        def forward(self, batch):
            seen.append(torch.get_num_threads())
            return super().forward(batch)

    tok = train_tokenizer(TOY_CODE * 5, vocab_size=300)
    data = CodeExamples.from_frame(toy_frame(16, seed=1), ["func"], "target")
    model = ArchSpec(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=32,
        max_length=64,
    ).build()
    before = torch.get_num_threads()
    want = 3 if before != 3 else 2
    training.fit(
        Spy(model),
        tok,
        data,
        None,
        training.FitConfig(epochs=1, batch_size=8, progress=False, settings=TrainerSettings(threads=want)),
        mlflow_logger=False,
    )
    assert seen and set(seen) == {want}
    assert torch.get_num_threads() == before
    clean_env.setenv(threads.ENV, "2")
    seen.clear()
    training.fit(
        Spy(model), tok, data, None, training.FitConfig(epochs=1, batch_size=8, progress=False), mlflow_logger=False
    )
    assert set(seen) == {2}
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        training.fit(
            Spy(model),
            tok,
            data,
            None,
            training.FitConfig(epochs=1, settings=TrainerSettings(threads="many")),
            mlflow_logger=False,
        )


def test_trainer_settings_check_threads_and_log_the_resolved_count(clean_env):

    clean_env.setenv(threads.ENV, "2")
    assert TrainerSettings().params()["threads"] == 2
    assert TrainerSettings(threads=3).params()["threads"] == 3
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        TrainerSettings(threads="x").check()


# ------------------------------------------------------------------ speed tags and the evaluator
class Recording:
    """A pyfunc-like model that records the thread count its predict runs on."""

    def __init__(self, log: list[int]) -> None:
        self.log = log

    def predict(self, rows: pd.DataFrame) -> pd.DataFrame:
        import torch

        self.log.append(torch.get_num_threads())
        return pd.DataFrame({"0": [0.5] * len(rows), "1": [0.5] * len(rows)})


def test_speed_tags_are_timed_on_the_inference_threads_and_say_so(clean_env):
    import torch

    from mlflow_metacompress.distill import speed

    log: list[int] = []
    clean_env.setenv(threads.ENV, "3")
    report = speed.measure(Recording(log), Recording(log), toy_frame(4), ["func"], repeats=2, energy=False)
    assert set(log) == {3} and report.threads == 3
    assert report.tags()["metacompress.speed_threads"] == "3"
    log.clear()
    with threads.using(2):  # inside a distillation run on 2 threads: timed on 2, not the environment's 3
        report = speed.measure(Recording(log), Recording(log), toy_frame(4), ["func"], repeats=2, energy=False)
    assert set(log) == {2} and report.tags()["metacompress.speed_threads"] == "2"
    log.clear()
    before = torch.get_num_threads()
    report = speed.measure(Recording(log), Recording(log), toy_frame(4), ["func"], repeats=2, energy=False, threads=1)
    assert set(log) == {1} and report.threads == 1 and torch.get_num_threads() == before


@pytest.mark.slow
def test_evaluator_predicts_on_its_threads_and_records_them(tracking, clean_env):
    import mlflow
    import torch

    seen: list[int] = []

    def model(df: pd.DataFrame):
        seen.append(torch.get_num_threads())
        return pd.DataFrame({"0": [0.4] * len(df), "1": [0.6] * len(df)})

    before = torch.get_num_threads()
    want = 3 if before != 3 else 2
    with mlflow.start_run() as run:
        mlflow.models.evaluate(
            model,
            toy_frame(8),
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": model,
                "transforms": [],
                "progress": False,
                "threads": want,
                "bootstrap_samples": 0,
            },
        )
    assert seen and set(seen) == {want} and torch.get_num_threads() == before
    summary = summary_of(run.info.run_id)
    assert summary["threads"] == want and summary["config"]["threads"] == want
    assert "speed_threads" not in summary  # no speed measured


def summary_of(run_id: str) -> dict:
    import mlflow

    return json.loads(mlflow.artifacts.load_text(f"runs:/{run_id}/metacompress/summary.json"))


@pytest.mark.slow
def test_student_speedup_is_timed_on_the_evaluation_threads_and_tagged(
    tracking, clean_env, tiny_classifiers, monkeypatch
):
    import mlflow
    import torch

    from mlflow_metacompress.adapters import timing as speed  # the evaluator's timings (adapters/timing.py)
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, big, small = tiny_classifiers
    with mlflow.start_run():
        teacher = log_code_classifier(big, tok, code_columns=["func"]).model_uri
        student = log_code_classifier(small, tok, code_columns=["func"]).model_uri
    timed: list[int] = []
    real = speed.side_by_side

    def spy(runs, *a, **k):
        timed.append(torch.get_num_threads())
        return real(runs, *a, **k)

    monkeypatch.setattr(speed, "side_by_side", spy)
    clean_env.setenv(threads.ENV, "1")  # the evaluation's own setting must win over the environment
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            student,
            toy_frame(8),
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={
                "teacher": teacher,
                "transforms": [],
                "progress": False,
                "measure_speed": True,
                "threads": 2,
                "bootstrap_samples": 0,
            },
        )
    assert timed == [2] and result.metrics["student_speedup"] > 0
    assert mlflow.get_run(run.info.run_id).data.tags["metacompress.speed_threads"] == "2"
    summary = summary_of(run.info.run_id)
    assert summary["speed_threads"] == summary["threads"] == 2


@pytest.mark.parametrize("bad", ["many", -1, 1.5, True])
def test_evaluator_refuses_bad_threads_by_key(bad):
    from mlflow_metacompress.adapters.checks import MetaCompressInputError
    from mlflow_metacompress.evaluation.config import parse_config

    with pytest.raises(MetaCompressInputError, match=r"evaluator_config\['threads'\] must be a positive integer"):
        parse_config({"teacher": "x", "threads": bad, "transforms": []}, toy_frame(4), model_given=True)
    cfg = parse_config({"teacher": "x", "threads": "auto", "transforms": []}, toy_frame(4), model_given=True)
    assert cfg.threads == "auto"


def test_distill_cli_refuses_bad_threads_before_any_data(capsys):
    from mlflow_metacompress.cli import main

    assert main(["distill", "teacher", "--threads", "lots"]) == 2
    assert "--threads must be a positive integer or 'auto', got 'lots'" in capsys.readouterr().err


def test_evaluate_cli_threads_are_checked_and_given_once(capsys):
    from mlflow_metacompress.cli import main

    base = ["evaluate", "--student", "models:/s/1", "--teacher", "models:/t/1", "--data", "absent.jsonl"]
    assert main([*base, "--threads", "0.5"]) == 2
    assert "--threads must be a positive integer or 'auto', got '0.5'" in capsys.readouterr().err
    assert main([*base, "--threads", "2", "--evaluator-config", '{"threads": 1}']) == 2
    assert "sets 'threads' and so does --threads" in capsys.readouterr().err
