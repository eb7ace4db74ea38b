"""Hugging Face text-classification pipelines logged for real with ``mlflow.transformers``
as teacher and student (issue 17.1): a ``func`` column, all class scores, labels by name,
clone pairs as text/text_pair, and a named error for every output the adapters cannot read.

The oracle is an independent forward pass (tokenizer → model → softmax) of the same
in-memory models, passed to the evaluator as plain callables.
"""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.checks import MetaCompressInputError
from mlflow_metacompress.adapters.predictors import to_probabilities
from tests.conftest import TOY_CODE, toy_frame
from tests.support.evaluation import HF_LABELS as LABELS
from tests.support.evaluation import HF_REQS as REQS
from tests.support.evaluation import assert_same_metrics
from tests.support.evaluation import evaluate_hf as evaluate
from tests.support.models import tiny_sequence_classifiers


@pytest.fixture(scope="module")
def hf():
    """A locally trained tokenizer and two differently initialised tiny RoBERTa classifiers
    (id2label SAFE/VULN), their output bias centred so both classes get predicted."""
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    tok = train_tokenizer(TOY_CODE * 5, vocab_size=400, model_max_length=128)
    teacher, student = tiny_sequence_classifiers(tok, LABELS, centred_on=TOY_CODE)
    return tok, teacher, student


def forward(tok, model, a: list[str], b: list[str] | None = None) -> np.ndarray:
    """The oracle: softmax of the model's logits, columns in label-id order."""
    import torch

    with torch.no_grad():
        enc = tok(a, b, padding=True, truncation=True, return_tensors="pt")
        return torch.softmax(model(**enc).logits, dim=-1).numpy()


def oracle(tok, model, columns: list[str]):
    return lambda f: pd.DataFrame(forward(tok, model, *[f[c].tolist() for c in columns]), columns=LABELS)


def log_pipeline(tok, model, name: str, how: str, registered: str | None = None):
    """Log ``model`` as a text-classification pipeline: plain, built with top_k=None, or
    logged with model_config={"top_k": None}."""
    from transformers import pipeline

    pipe = pipeline("text-classification", model=model, tokenizer=tok, **({"top_k": None} if how == "top_k" else {}))
    extra = {"model_config": {"top_k": None}} if how == "model_config" else {}
    with mlflow.start_run():
        return mlflow.transformers.log_model(
            pipe, name=name, pip_requirements=REQS, registered_model_name=registered, **extra
        )


def frame(n: int = 12) -> pd.DataFrame:
    df = toy_frame(n)
    df["target"] = np.asarray(LABELS)[df["target"]]
    return df


@pytest.mark.slow
def test_logged_pipelines_on_a_func_column_match_callables(tracking, hf):
    """Teacher logged plainly (top label only through pyfunc) as a registry URI, student
    logged with model_config top_k=None as a runs:/ URI, one transformation: every metric
    equals the one computed from the same models' own forward pass."""
    tok, teacher, student = hf
    df = frame()
    log_pipeline(tok, teacher, "teacher", "plain", registered="hf-teacher")
    s_info = log_pipeline(tok, student, "student", "model_config")
    config = {"transforms": ["rename_variables"]}
    got = evaluate(f"runs:/{s_info.run_id}/student", "models:/hf-teacher/1", df, **config)
    expected = evaluate(oracle(tok, student, ["func"]), oracle(tok, teacher, ["func"]), df, **config)
    assert_same_metrics(got, expected)
    # the oracle is independent of the evaluator: accuracy straight from the forward pass
    y = (df["target"] == "VULN").to_numpy()
    teacher_acc = float((forward(tok, teacher, df["func"].tolist()).argmax(axis=1) == y).mean())
    assert got["teacher_accuracy"] == teacher_acc
    assert 0 < got["mr1_violation_rate"] < 1, (
        "the two tiny models must disagree somewhere for the check to mean anything"
    )


@pytest.mark.slow
def test_loaded_pyfunc_models_labels_by_name_and_integer_targets(tracking, hf):
    """Loaded PyFuncModels work too (teacher logged with model_config top_k=None, student
    built with top_k=None); a student whose id2label lists the classes in the other order
    (head permuted to match) gives the same metrics, and integer targets are read as the
    teacher's label ids."""
    import copy

    import torch

    tok, teacher, student = hf
    flipped = copy.deepcopy(student)
    flipped.config.id2label, flipped.config.label2id = {0: "VULN", 1: "SAFE"}, {"VULN": 0, "SAFE": 1}
    with torch.no_grad():
        flipped.classifier.out_proj.weight.copy_(student.classifier.out_proj.weight.flip(0))
        flipped.classifier.out_proj.bias.copy_(student.classifier.out_proj.bias.flip(0))
    t_model = mlflow.pyfunc.load_model(log_pipeline(tok, teacher, "teacher", "model_config").model_uri)
    s_model = mlflow.pyfunc.load_model(log_pipeline(tok, flipped, "student", "top_k").model_uri)
    df = frame()
    got = evaluate(s_model, t_model, df)
    assert_same_metrics(got, evaluate(oracle(tok, student, ["func"]), oracle(tok, teacher, ["func"]), df))
    ids = df.assign(target=(df["target"] == "VULN").astype(int))
    assert_same_metrics(evaluate(s_model, t_model, ids), got)


@pytest.mark.slow
def test_clone_pairs_map_two_code_columns_to_text_and_text_pair(tracking, hf):
    """Teacher built with top_k=None, student plain, both given as logged-model URIs."""
    tok, teacher, student = hf
    a = TOY_CODE * 2
    b = (TOY_CODE[1:] + TOY_CODE[:1]) * 2
    df = pd.DataFrame({"func1": a, "func2": b, "target": [LABELS[i % 2] for i in range(len(a))]})
    assert not np.allclose(forward(tok, teacher, a, b), forward(tok, teacher, a)), "the pair must matter"
    t_uri = log_pipeline(tok, teacher, "teacher", "top_k").model_uri
    s_uri = log_pipeline(tok, student, "student", "plain").model_uri
    cols = {"code_columns": ["func1", "func2"]}
    got = evaluate(s_uri, t_uri, df, **cols)
    assert_same_metrics(
        got, evaluate(oracle(tok, student, ["func1", "func2"]), oracle(tok, teacher, ["func1", "func2"]), df, **cols)
    )


def test_pyfunc_outputs_of_logged_pipelines(tracking, hf):
    """What MLflow's own pyfunc returns: dict cells (model_config top_k=None) are read by
    label name; the top label and score alone are refused, naming what came back."""
    tok, teacher, _ = hf
    texts = pd.DataFrame({"text": TOY_CODE})
    cells = mlflow.pyfunc.load_model(log_pipeline(tok, teacher, "t", "model_config").model_uri).predict(texts)
    probs, names = to_probabilities(cells, len(texts), "teacher")
    assert names == LABELS
    np.testing.assert_allclose(probs, forward(tok, teacher, TOY_CODE), atol=1e-5)
    top = mlflow.pyfunc.load_model(log_pipeline(tok, teacher, "t", "top_k").model_uri).predict(texts)
    with pytest.raises(
        MetaCompressInputError, match=r"teacher returned only its top label and score .*label='(SAFE|VULN)'"
    ):
        to_probabilities(top, len(texts), "teacher")


def test_pipeline_is_loaded_with_mlflow_transformers_when_pyfunc_gives_no_pipeline(tracking, hf):
    from mlflow.models import Model

    from mlflow_metacompress.adapters.hf_pipeline import is_text_classification, load_scorer

    tok, teacher, _ = hf
    uri = log_pipeline(tok, teacher, "t", "plain").model_uri

    class MetadataOnly:  # a model whose pyfunc exposes no raw pipeline
        metadata = Model.load(uri)

        def predict(self, df):  # pragma: no cover - never called
            raise AssertionError

    assert is_text_classification(MetadataOnly())
    scorer = load_scorer(MetadataOnly(), None, "teacher")
    out = scorer(pd.DataFrame({"func": TOY_CODE}))
    assert list(out.columns) == LABELS
    np.testing.assert_allclose(out.to_numpy(), forward(tok, teacher, TOY_CODE), atol=1e-5)


def _fixed(value):
    return lambda f: value(len(f))


UNREADABLE = [
    (
        "strings",
        _fixed(lambda n: np.array(["VULN"] * n)),
        r"student returned ndarray holding str values such as 'VULN'; expected class probabilities",
    ),
    (
        "string column",
        _fixed(lambda n: pd.DataFrame({"SAFE": [0.5] * n, "VULN": ["VULN"] * n})),
        r"student returned a DataFrame whose column 'VULN' holds str 'VULN' \(row 0\); expected class probabilities",
    ),
    (
        "top label",
        _fixed(lambda n: pd.DataFrame({"label": ["VULN"] * n, "score": [0.9] * n})),
        r"student returned only its top label and score per row .*label='VULN', score=0.9",
    ),
    (
        "dict cells missing a label",
        _fixed(
            lambda n: pd.DataFrame({0: [{"label": "SAFE", "score": 1.0}] * (n - 1) + [{"label": "VULN", "score": 1.0}]})
        ),
        r"student output row 0 scores the labels \['SAFE'\], not every one of \['SAFE', 'VULN'\]",
    ),
    (
        "bad dict cells",
        _fixed(lambda n: pd.DataFrame({0: [{"label": "SAFE", "score": 0.5}] * n, 1: [{"VULN": 0.5}] * n})),
        r"student output row 0 holds dict \{'VULN': 0.5\}; expected \{'label'",
    ),
    (
        "ragged rows",
        _fixed(lambda n: [[0.5, 0.5]] * (n - 1) + [[1.0]]),
        r"student returned list rows of different lengths",
    ),
    (
        "one column",
        _fixed(lambda n: np.ones((n, 1))),
        r"student probabilities must be an N×K array with K ≥ 2; got shape \(\d+, 1\)",
    ),
    (
        "three columns",
        _fixed(lambda n: np.full((n, 3), 1 / 3)),
        r"teacher and student disagree on the number of classes: teacher has 2",
    ),
    (
        "a dict",
        _fixed(lambda n: {"SAFE": [0.5] * n}),
        r"student returned a dict with keys \['SAFE'\]; expected class probabilities",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("bad,match", [c[1:] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE])
def test_unreadable_outputs_name_what_came_back(tracking, bad, match):
    df = frame(8)
    teacher = _fixed(lambda n: np.tile([0.7, 0.3], (n, 1)))
    with mlflow.start_run() as run:
        with pytest.raises(MetaCompressInputError, match=match):
            mlflow.models.evaluate(
                model=bad,
                data=df,
                targets="target",
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={"teacher": teacher, "code_columns": ["func"], "transforms": [], "progress": False},
            )
    assert mlflow.get_run(run.info.run_id).data.metrics == {}, "nothing may be logged from unreadable outputs"


def test_a_transformers_pipeline_of_another_task_is_named():
    from types import SimpleNamespace

    from mlflow_metacompress.adapters.predictors import resolve_model

    fill_mask = SimpleNamespace(predict=None, metadata=SimpleNamespace(flavors={"transformers": {"task": "fill-mask"}}))
    with pytest.raises(
        MetaCompressInputError, match=r"teacher is a transformers 'fill-mask' pipeline; .*text-classification"
    ):
        resolve_model(fill_mask, "teacher")
