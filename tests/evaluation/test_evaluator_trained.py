"""``evaluator_config["trained_transforms"]`` (issue 44, part 3: a fair test): the pooled
``/metamorphic`` metrics pool only the rewrites the student never trained on, the seen ones
are pooled apart as ``/metamorphic_seen``, both against a direct computation from the
logged per-sample table; per-transformation metrics are unchanged; ``"auto"`` reads the
student's training-run tag; the deviation search composes only unseen operators; and bad
values are refused, naming them, before any model runs."""

from __future__ import annotations

import json
import re

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.artifact_names import DEVIATIONS, PER_SAMPLE, TRAINED_TRANSFORMS_TAG, run_path
from tests.support.attacks import CODES

CALLS = {"teacher": 0}
SEEN = ("rename_variables", "insert_dead_code")


def teacher(df: pd.DataFrame) -> np.ndarray:
    CALLS["teacher"] += len(df)
    return np.tile([0.2, 0.8], (len(df), 1))


def student(df: pd.DataFrame) -> np.ndarray:
    """Leaves the teacher as code grows: its label depends on the token count."""
    n = np.array([len(re.findall(r"\w+|[^\w\s]", c)) for c in df["func"]])
    p = 1 / (1 + np.exp(-(1.0 - 0.08 * (n - 25))))
    return np.stack([1 - p, p], axis=1)


DATA = pd.DataFrame({"func": list(CODES), "target": [1] * len(CODES)})
CONFIG = {"teacher": teacher, "language": "c", "transforms": "all", "progress": False, "bootstrap_samples": 100}


def _evaluate(config: dict, model=student):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=model, data=DATA, targets="target", model_type="metacompress", evaluators="metacompress",
            evaluator_config=config,
        )  # fmt: skip
    return result.metrics, run.info.run_id


def _table(run_id: str, name: str) -> pd.DataFrame:
    return pd.read_parquet(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=run_path(name)))


def _pooled_rate(per_sample: pd.DataFrame, variants: list[str], flag: str) -> float:
    rows = per_sample[per_sample["variant"].isin(variants)]
    return float(rows[flag].astype(float).mean())


@pytest.mark.slow
def test_seen_rewrites_are_pooled_apart_and_the_headline_pools_only_unseen_ones(tracking):
    plain, _ = _evaluate(CONFIG)
    held, run_id = _evaluate({**CONFIG, "trained_transforms": list(SEEN)})
    per_sample = _table(run_id, PER_SAMPLE)
    applied = sorted({v for v in per_sample["variant"] if v != "original"})
    unseen = [v for v in applied if v not in SEEN]
    seen = [v for v in applied if v in SEEN]
    assert seen and unseen  # both kinds applied to the toy C functions
    for flag, metric in (("mr1_violation", "mr1_violation_rate"), ("any_violation", "any_violation_rate")):
        assert held[f"{metric}/metamorphic"] == pytest.approx(_pooled_rate(per_sample, unseen, flag))
        assert held[f"{metric}/metamorphic_seen"] == pytest.approx(_pooled_rate(per_sample, seen, flag))
        assert plain[f"{metric}/metamorphic"] == pytest.approx(_pooled_rate(per_sample, applied, flag))
        for name in applied:  # per-transformation metrics do not move
            assert held[f"{metric}/{name}"] == plain[f"{metric}/{name}"]
    assert held["mr1_violation_rate/metamorphic"] != plain["mr1_violation_rate/metamorphic"]
    assert "mr1_violation_rate/metamorphic_seen" not in plain
    assert held["mr1_violation_rate_ci_low/metamorphic_seen"] <= held["mr1_violation_rate/metamorphic_seen"]
    config = json.loads(mlflow.artifacts.load_text(f"runs:/{run_id}/{run_path('summary.json')}"))
    assert config["trained_transforms"] == {"unseen": unseen, "seen": seen}


class _Student(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return pd.DataFrame(student(model_input), columns=["0", "1"])


@pytest.mark.slow
def test_auto_reads_the_students_training_run_tag(tracking):
    explicit, _ = _evaluate({**CONFIG, "trained_transforms": list(SEEN), "bootstrap_samples": 0})
    with mlflow.start_run(tags={TRAINED_TRANSFORMS_TAG: ",".join(SEEN)}):
        tagged = mlflow.pyfunc.log_model(
            name="s", python_model=_Student(), input_example=DATA[["func"]].head(2), pip_requirements=[]
        )
    with mlflow.start_run():
        untagged = mlflow.pyfunc.log_model(
            name="s", python_model=_Student(), input_example=DATA[["func"]].head(2), pip_requirements=[]
        )
    auto, run_id = _evaluate({**CONFIG, "trained_transforms": "auto", "bootstrap_samples": 0}, tagged.model_uri)
    assert auto["any_violation_rate/metamorphic"] == explicit["any_violation_rate/metamorphic"]
    assert auto["any_violation_rate/metamorphic_seen"] == explicit["any_violation_rate/metamorphic_seen"]
    none, _ = _evaluate({**CONFIG, "trained_transforms": "auto", "bootstrap_samples": 0}, untagged.model_uri)
    plain, _ = _evaluate({**CONFIG, "bootstrap_samples": 0})
    assert none["any_violation_rate/metamorphic"] == plain["any_violation_rate/metamorphic"]
    assert not any(k.endswith("/metamorphic_seen") for k in none)


@pytest.mark.slow
def test_the_deviation_search_composes_only_unseen_operators(tracking):
    config = {**CONFIG, "transforms": [], "deviation": {"queries": 30, "seed": 3}, "bootstrap_samples": 0}
    _, free_run = _evaluate(config)
    free = _table(free_run, DEVIATIONS)
    used = sorted({op for ops in free["operators"] for op in json.loads(ops)})
    assert used  # the operators the unrestricted search found its deviations with: now held apart
    _, held_run = _evaluate({**config, "trained_transforms": used})
    held = _table(held_run, DEVIATIONS)
    assert len(held) > 0
    assert not {op for ops in held["operators"] for op in json.loads(ops)} & set(used)
    _, one_run = _evaluate({**config, "deviation": {"queries": 30, "seed": 3, "operators": ["rename_identifier"]}})
    assert {op for ops in _table(one_run, DEVIATIONS)["operators"] for op in json.loads(ops)} <= {"rename_identifier"}


@pytest.mark.parametrize(
    "extra, needle",
    [
        ({"trained_transforms": ["rename_variables", "unroll_everything"]}, r"\['unroll_everything'\].*not rewrites"),
        ({"trained_transforms": 3}, r"trained_transforms.*got 3"),
        ({"deviation": {"operators": ["shuffle"]}}, r"operators.*\['shuffle'\]"),
        ({"deviation": {"operators": ["rename_identifier"]}, "trained_transforms": ["rename_identifier"]}, r"every"),
    ],
)
def test_bad_values_are_refused_naming_them_before_any_model_runs(tracking, extra, needle):
    CALLS.update(teacher=0)
    with pytest.raises(Exception, match=needle):
        _evaluate({**CONFIG, **extra})
    assert CALLS["teacher"] == 0
    assert not mlflow.search_runs(filter_string="metrics.mr1_violation_rate >= 0").shape[0]


def test_static_mode_refuses_trained_transforms(tracking):
    data = pd.DataFrame({"t0": [0.2, 0.6], "t1": [0.8, 0.4], "s0": [0.3, 0.5], "s1": [0.7, 0.5], "target": [1, 0]})
    config = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], "trained_transforms": "auto"}
    with pytest.raises(Exception, match=r"trained_transforms.*static mode"):
        with mlflow.start_run():
            mlflow.models.evaluate(
                data=data, targets="target", model_type="metacompress", evaluators="metacompress",
                evaluator_config=config,
            )  # fmt: skip
