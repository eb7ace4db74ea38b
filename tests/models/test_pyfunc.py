"""The project's pyfunc format: a CodeClassifier (single and clone pair) and a plain
Hugging Face sequence classifier saved with save_pretrained, logged and reloaded offline."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch

from mlflow_metacompress.models.classifier import CodeClassifier
from mlflow_metacompress.models.pyfunc import log_code_classifier
from tests.conftest import TOY_CODE
from tests.support.models import tiny_roberta_config


def test_plain_hf_sequence_classifier_directory(tracking, tiny_classifiers, tmp_path):
    from transformers import RobertaForSequenceClassification

    tok = tiny_classifiers[0]
    torch.manual_seed(0)
    cfg = tiny_roberta_config(len(tok), tok.pad_token_id, labels=["safe", "vulnerable"])
    model = RobertaForSequenceClassification(cfg).eval()
    model.save_pretrained(tmp_path / "hf")
    tok.save_pretrained(tmp_path / "hf")
    with mlflow.start_run():
        info = log_code_classifier(tmp_path / "hf", registered_model_name="plain", code_columns=["func"])
    out = mlflow.pyfunc.load_model(info.model_uri).predict(pd.DataFrame({"func": TOY_CODE}))
    assert list(out.columns) == ["safe", "vulnerable"]
    with torch.no_grad():
        enc = tok(TOY_CODE, padding=True, truncation=True, max_length=128, return_tensors="pt")
        expected = torch.softmax(model(**enc).logits, dim=-1).numpy()
    np.testing.assert_allclose(out.to_numpy(), expected, atol=1e-5)


def test_concat_cls_pair_model_round_trip(tracking, tiny_classifiers, tmp_path):
    tok = tiny_classifiers[0]
    torch.manual_seed(1)
    model = CodeClassifier.from_config(
        len(tok),
        pair_mode="concat_cls",
        hidden_size=32,
        intermediate_size=64,
        max_length=64,
        pad_token_id=tok.pad_token_id,
    ).eval()
    a, b = TOY_CODE[:3], TOY_CODE[3:]
    direct = model.predict_proba(tok, a, b)
    with mlflow.start_run():
        info = log_code_classifier(model, tok, code_columns=["func1", "func2"])
    out = mlflow.pyfunc.load_model(info.model_uri).predict(pd.DataFrame({"func1": a, "func2": b}))
    np.testing.assert_allclose(out.to_numpy(), direct, atol=1e-5)
    # order of the pair matters for concat_cls: swapping changes the prediction
    assert not np.allclose(model.predict_proba(tok, b, a), direct)
    with pytest.raises(Exception, match=r"missing inputs \['func2'\]"):  # the logged signature names the columns
        mlflow.pyfunc.load_model(info.model_uri).predict(pd.DataFrame({"func1": a, "other": b}))
