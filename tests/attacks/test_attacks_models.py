"""Attacks against a real tiny CodeClassifier: through the goal function, through a
logged ``models:/`` URI, through the CLI, and with a masked language model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.attacks import AttackStatus, run_attack
from mlflow_metacompress.attacks.cli import main
from mlflow_metacompress.attacks.substitutes import IDENT, MLMSubstitutes
from tests.support.attacks import CODES, assert_consistent_renaming
from tests.support.models import tiny_roberta_config


@pytest.fixture(scope="module")
def tiny():
    import torch

    from mlflow_metacompress.models.classifier import CodeClassifier
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    torch.manual_seed(0)
    tok = train_tokenizer(CODES * 3, vocab_size=400, min_frequency=1)
    model = CodeClassifier.from_config(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_length=128,
    )
    model.eval()
    # A random encoder barely separates inputs: rescale the head so the logit margin
    # spans about ±2 around the median over the data, putting inputs near the boundary.
    logits = model.predict_logits(tok, CODES)
    margin = logits[:, 1] - logits[:, 0]
    scale = 4.0 / float(margin.max() - margin.min())
    with torch.no_grad():
        model.head.out_proj.weight.mul_(scale)
        model.head.out_proj.bias.mul_(scale)
        model.head.out_proj.bias[1] -= float(np.median(margin)) * scale
    return model, tok


def test_code_classifier_through_the_goal_function(tiny):
    model, tok = tiny

    def predict(df):
        return model.predict_proba(tok, list(df["func"]))

    df = pd.DataFrame({"func": CODES[:5]})
    labels = predict(df).argmax(axis=1)  # the model's own verdicts: every row is attacked
    report = run_attack("alert_yang_2022", predict, df, ["func"], labels, "c", budget=40, progress=False)
    statuses = [r.status for r in report.results]
    assert statuses.count(AttackStatus.SKIPPED) == 0 and AttackStatus.SUCCEEDED in statuses
    for r in report.results:
        assert r.queries <= 40
        if r.status is AttackStatus.SUCCEEDED:
            again = predict(pd.DataFrame({"func": [r.adversarial_code]}))[0]
            assert again.argmax() != r.label
            assert_consistent_renaming(r.original_code, r.adversarial_code, r.renaming)
    assert report.forward_rows <= 5 + sum(r.queries for r in report.results)


@pytest.mark.slow
def test_run_attack_and_cli_on_a_models_uri(tiny, tracking, tmp_path, capsys):
    import mlflow

    from mlflow_metacompress.models.pyfunc import log_code_classifier

    model, tok = tiny
    with mlflow.start_run():
        log_code_classifier(model, tok, registered_model_name="tiny_attack", code_columns=["func"])
    uri = "models:/tiny_attack/1"
    df = pd.DataFrame({"func": CODES[:3]})
    labels = model.predict_proba(tok, list(df["func"])).argmax(axis=1)
    report = run_attack("mhm_zhang_2020", uri, df, ["func"], labels, "c", budget=15, progress=False)
    assert len(report.results) == 3 and all(r.queries <= 15 for r in report.results)
    assert report.count(AttackStatus.SKIPPED) == 0
    table = report.table()
    assert list(table.columns[:4]) == ["index", "status", "skip_reason", "queries"]
    table.to_parquet(tmp_path / "t.parquet")  # the artifact format round-trips

    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"func": c, "target": int(y)}) + "\n" for c, y in zip(df["func"], labels, strict=True))
    )
    out = tmp_path / "res.parquet"
    assert (
        main(
            [
                "--model",
                uri,
                "--data",
                str(data),
                "--attack",
                "wir_random_zeng_2022",
                "--budget",
                "10",
                "--language",
                "c",
                "--limit",
                "2",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "Attack success rate" in printed and "Number of skipped attacks" in printed
    assert len(pd.read_parquet(out)) == 2


def test_alert_with_a_masked_language_model(tmp_path):
    import torch
    from transformers import RobertaForMaskedLM

    from mlflow_metacompress.models.tokenizer import train_tokenizer

    torch.manual_seed(0)
    tok = train_tokenizer(CODES * 3, vocab_size=400, min_frequency=1)
    cfg = tiny_roberta_config(len(tok), tok.pad_token_id, positions=520)
    RobertaForMaskedLM(cfg).save_pretrained(tmp_path / "mlm")
    tok.save_pretrained(tmp_path / "mlm")
    mlm = MLMSubstitutes.from_pretrained(tmp_path / "mlm")
    subs = mlm.substitutes(CODES[0], "count", "c", k=10)
    assert subs and all(IDENT.match(s) and s != "count" for s in subs)

    def predict(df):  # flips when 'count' disappears
        p = np.array([0.9 if "count" in c else 0.1 for c in df["func"]])
        return np.stack([1 - p, p], axis=1)

    df = pd.DataFrame({"func": CODES[:2]})
    report = run_attack(
        "alert_yang_2022", predict, df, ["func"], [1, 1], "c", budget=60, progress=False, mlm=str(tmp_path / "mlm")
    )
    assert "masked language model" in report.details["substitutes"]
    assert str(tmp_path / "mlm") in report.summary()
    assert all(r.status is AttackStatus.SUCCEEDED for r in report.results)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        MLMSubstitutes.from_pretrained(tmp_path / "missing")


def test_attack_cli_input_errors_exit_2_naming_the_fault(tmp_path, capsys):
    from mlflow_metacompress.cli import main as metacompress

    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"func": CODES[0], "target": 1}) + "\n{broken\n")
    base = ["attack", "--model", str(tmp_path / "no-model"), "--attack", "mhm_zhang_2020"]
    assert metacompress([*base, "--data", str(data)]) == 2
    assert f"{data}:2: invalid JSON" in capsys.readouterr().err
    assert metacompress([*base, "--data", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv does not exist" in capsys.readouterr().err
    data.write_text(json.dumps({"func": CODES[0], "label": 1}) + "\n")
    assert metacompress([*base, "--data", str(data)]) == 2
    assert "label column 'target' not in" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        metacompress(["attack", "--model", "m", "--data", str(data), "--attack", "nope"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope'" in err and "coda_tian_2023" in err
