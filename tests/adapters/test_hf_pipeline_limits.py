"""Long code through Hugging Face pipelines (issue 23.5): a tokenizer trained with
``tokenizers`` that sets no ``model_max_length`` (transformers' ~1e30 sentinel) in front of a
tiny RoBERTa with few position embeddings. Inputs are cut to the model's real limit
(``max_position_embeddings`` − RoBERTa's position offset ``padding_idx + 1``), the limit and
its source are in ``summary.json``, and input that still cannot run is a
:class:`MetaCompressInputError` naming the limit, one line from the CLI.

The oracle is the model's own forward pass: it runs on ``limit`` tokens and fails on one more.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.checks import MetaCompressInputError
from mlflow_metacompress.cli import main
from tests.conftest import TOY_CODE
from tests.support.evaluation import HF_LABELS as LABELS
from tests.support.evaluation import HF_REQS as REQS
from tests.support.evaluation import assert_same_metrics
from tests.support.evaluation import evaluate_hf as evaluate
from tests.support.models import tiny_sequence_classifiers

POSITIONS = 34  # RoBERTa: pad id 1, positions numbered from 2, so 32 tokens fit
LIMIT = 32


@pytest.fixture(scope="module")
def bare():
    """A BPE tokenizer built from a ``tokenizers`` object with no model_max_length, and two
    tiny RoBERTa classifiers with 34 position embeddings."""
    from transformers import PreTrainedTokenizerFast

    from mlflow_metacompress.models.tokenizer import train_tokenizer

    trained = train_tokenizer(TOY_CODE * 5, vocab_size=400)
    tok = PreTrainedTokenizerFast(tokenizer_object=trained.backend_tokenizer, **trained.special_tokens_map)
    assert tok.model_max_length > 1e20, "transformers' 'unset' sentinel"
    models = tiny_sequence_classifiers(tok, LABELS, positions=POSITIONS)
    assert tok.pad_token_id == 1
    return tok, models[0], models[1]


def long_frame(n: int = 10) -> pd.DataFrame:
    """Code far longer than 32 tokens."""
    code = [(TOY_CODE[i % len(TOY_CODE)] + "\n") * 6 for i in range(n)]
    return pd.DataFrame({"func": code, "target": [LABELS[i % 2] for i in range(n)]})


def forward(tok, model, texts: list[str], max_length: int) -> np.ndarray:
    import torch

    with torch.no_grad():
        enc = tok(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        return torch.softmax(model(**enc).logits, dim=-1).numpy()


def log_pipeline(tok, model, name: str) -> str:
    from transformers import pipeline

    with mlflow.start_run():
        pipe = pipeline("text-classification", model=model, tokenizer=tok)
        return mlflow.transformers.log_model(pipe, name=name, pip_requirements=REQS).model_uri


def test_the_oracle_limit_is_the_models(bare):
    """The model itself runs on 32 tokens and fails on 33: that is the limit to cut to."""
    tok, model, _ = bare
    text = long_frame(1)["func"].tolist()
    assert len(tok(text)["input_ids"][0]) > 3 * LIMIT
    forward(tok, model, text, LIMIT)
    with pytest.raises((IndexError, RuntimeError)):
        forward(tok, model, text, LIMIT + 1)


@pytest.mark.slow
def test_long_code_is_cut_to_the_position_embeddings_and_the_limit_is_recorded(tracking, bare):
    tok, teacher, student = bare
    df = long_frame()
    t_uri, s_uri = log_pipeline(tok, teacher, "teacher"), log_pipeline(tok, student, "student")
    with mlflow.start_run() as run:
        got = mlflow.models.evaluate(
            model=s_uri,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={"teacher": t_uri, "code_columns": ["func"], "transforms": [], "progress": False},
        ).metrics

    def reference(m):
        return lambda f: pd.DataFrame(forward(tok, m, f["func"].tolist(), LIMIT), columns=LABELS)

    oracle = {who: reference(m) for who, m in (("teacher", teacher), ("student", student))}
    assert_same_metrics(got, evaluate(oracle["student"], oracle["teacher"], df))
    summary = json.loads(
        Path(
            mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress/summary.json")
        ).read_text()
    )
    expected = {
        "max_length": LIMIT,
        "source": "model.max_position_embeddings",
        "max_position_embeddings": POSITIONS,
        "position_offset": 2,
    }
    assert summary["input_limits"] == {"teacher": expected, "student": expected}


def test_a_set_model_max_length_is_used_and_capped_to_the_positions(bare):
    from transformers import pipeline

    from mlflow_metacompress.adapters.hf_pipeline import PipelineScorer

    tok, model, _ = bare
    df = long_frame(4)[["func"]]
    for given, expected in (
        (16, {"max_length": 16, "source": "tokenizer.model_max_length", "model_max_length": 16}),
        (
            512,
            {
                "max_length": LIMIT,
                "source": "model.max_position_embeddings",
                "model_max_length": 512,
                "max_position_embeddings": POSITIONS,
                "position_offset": 2,
            },
        ),
    ):
        tok.model_max_length = given
        try:
            scorer = PipelineScorer(pipeline("text-classification", model=model, tokenizer=tok), "student")
            assert scorer.limit.as_dict() == expected
            np.testing.assert_allclose(
                scorer(df).to_numpy(),
                forward(tok, model, df["func"].tolist(), expected["max_length"]),
                rtol=1e-5,
                atol=1e-6,
            )
        finally:
            tok.model_max_length = int(1e30)
    # a logged model_config asking for fewer tokens is kept
    scorer = PipelineScorer(pipeline("text-classification", model=model, tokenizer=tok), "student", {"max_length": 8})
    assert scorer.limit.as_dict() == {"max_length": 8, "source": "model_config.max_length"}
    np.testing.assert_allclose(scorer(df).to_numpy(), forward(tok, model, df["func"].tolist(), 8), rtol=1e-5, atol=1e-6)


def test_input_that_still_cannot_run_names_the_limit(tracking, bare):
    """The model's config claims more positions (512) than its embeddings hold (34): the
    evaluator cuts to 510 and raises a MetaCompressInputError naming that limit, not a torch error."""
    tok, teacher, student = bare
    df = long_frame(6)
    loaded = mlflow.pyfunc.load_model(log_pipeline(tok, student, "student"))
    loaded.get_raw_model().model.config.max_position_embeddings = 512
    t_uri = log_pipeline(tok, teacher, "teacher")
    longest = max(len(ids) for ids in tok(df["func"].tolist())["input_ids"])
    with mlflow.start_run() as run:
        with pytest.raises(
            MetaCompressInputError,
            match=rf"^student cannot run on inputs of up to {longest} tokens: input limit 510 "
            r"tokens \(the model's max_position_embeddings 512 minus position offset 2\); "
            r"the model failed with (IndexError|RuntimeError): \S",
        ):
            mlflow.models.evaluate(
                model=loaded,
                data=df,
                targets="target",
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={"teacher": t_uri, "code_columns": ["func"], "transforms": [], "progress": False},
            )
    assert mlflow.get_run(run.info.run_id).data.metrics == {}


@pytest.mark.slow
def test_cli_evaluates_long_code_with_exit_0(tracking, bare, tmp_path, capsys):
    """Before the fix: a raw torch error and a traceback with exit 1."""
    tok, teacher, student = bare
    data = tmp_path / "long.jsonl"
    long_frame(6).to_json(data, orient="records", lines=True)
    t_uri, s_uri = log_pipeline(tok, teacher, "teacher"), log_pipeline(tok, student, "student")
    code = main(
        [
            "evaluate",
            "--student",
            s_uri,
            "--teacher",
            t_uri,
            "--data",
            str(data),
            "--targets",
            "target",
            "--evaluator-config",
            '{"transforms": [], "progress": false}',
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    assert "student_accuracy" in out.out and "Traceback" not in out.err


def test_input_limit_reads_the_sentinel_as_unset_and_bert_positions_have_no_offset():
    from types import SimpleNamespace as NS

    from mlflow_metacompress.adapters.input_limits import input_limit

    bert = NS(config=NS(max_position_embeddings=512), base_model=NS(embeddings=NS(position_embeddings=object())))
    assert input_limit(NS(tokenizer=NS(model_max_length=int(1e30)), model=bert)).as_dict() == {
        "max_length": 512,
        "source": "model.max_position_embeddings",
        "max_position_embeddings": 512,
        "position_offset": 0,
    }
    unknown = input_limit(NS(tokenizer=NS(model_max_length=int(1e30)), model=NS(config=NS())))
    assert unknown.as_dict() == {"max_length": None, "source": "unknown"}
    assert "no input limit is known" in unknown.describe()
