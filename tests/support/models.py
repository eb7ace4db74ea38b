"""Tiny models and toy data for the tests: RoBERTa configurations and classifiers, a trained
``malloc`` teacher, a registered toy teacher, a toy Devign folder, a length oracle and code examples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import pandas as pd
import torch
from torch import nn

from mlflow_metacompress.data.generators import make_splits
from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.models.classifier import CodeClassifier
from mlflow_metacompress.models.tokenizer import train_tokenizer
from tests.conftest import TOY_CODE, toy_frame


def tiny_roberta_config(
    vocab_size: int,
    pad_token_id: int,
    *,
    labels: Sequence[str] | None = None,
    positions: int = 130,
    hidden: int = 32,
    **overrides: Any,
) -> Any:
    """A one-layer RoBERTa configuration (``hidden`` wide, 2 heads, FFN ``2 * hidden``,
    ``positions`` position embeddings); with ``labels``, their ``id2label``/``label2id``."""
    from transformers import RobertaConfig

    names: dict[str, Any] = {}
    if labels is not None:
        names = {"id2label": dict(enumerate(labels)), "label2id": {k: i for i, k in enumerate(labels)}}
    return RobertaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=positions,
        pad_token_id=pad_token_id,
        **names,
        **overrides,
    )


def tiny_sequence_classifiers(
    tok: Any,
    labels: Sequence[str],
    *,
    seeds: Sequence[int] = (0, 1),
    positions: int = 130,
    centred_on: list[str] | None = None,
) -> list[Any]:
    """One tiny ``RobertaForSequenceClassification`` per seed (``initializer_range=0.5``, so
    that seeds disagree), in eval mode; with ``centred_on``, the classifier's bias is shifted
    so that the mean logit over those texts is zero (both labels predicted)."""
    import torch
    from transformers import RobertaForSequenceClassification

    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        cfg = tiny_roberta_config(len(tok), tok.pad_token_id, labels=labels, positions=positions, initializer_range=0.5)
        model = RobertaForSequenceClassification(cfg).eval()
        if centred_on is not None:
            with torch.no_grad():
                logits = model(**tok(centred_on, padding=True, return_tensors="pt")).logits
                model.classifier.out_proj.bias -= logits.mean(dim=0)
        models.append(model)
    return models


def tiny_teacher(tmp_path: Path) -> tuple[Path, str]:
    """A toy Devign folder and a registered 1-layer teacher (seconds)."""
    from mlflow_metacompress.distill.teacher import train_teacher

    data = write_devign(tmp_path / "data")
    arch = ArchSpec(
        vocab_size=300, num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64, max_length=64
    )
    result = train_teacher(
        data, "devign", arch=arch, epochs=1, batch_size=8, registered_name="toy-teacher", progress=False
    )
    return data, result.model_uri


HIDDEN, LAYERS, INTERMEDIATE, MAX_LENGTH, STEPS = 64, 2, 128, 64, 100


def malloc_teacher(frames: dict[str, pd.DataFrame]) -> tuple[CodeClassifier, object]:
    """A small classifier trained (plain AdamW, a few seconds) to tell whether a function
    calls ``malloc``: a learnable task, so the teacher is confident and its predictions
    depend on the input, which faithfulness needs of an oracle (an untrained model is
    flat at 0.5, where any noise flips the argmax)."""
    tok = train_tokenizer(list(frames["train"]["func"]), vocab_size=1000)
    torch.manual_seed(0)
    model = CodeClassifier.from_config(
        len(tok),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=2,
        intermediate_size=INTERMEDIATE,
        max_length=MAX_LENGTH,
        pad_token_id=tok.pad_token_id,
    )
    texts = list(frames["train"]["func"])
    labels = torch.tensor([int("malloc" in t) for t in texts])
    optimiser = torch.optim.AdamW(model.parameters(), lr=2e-3)
    rng = np.random.default_rng(0)
    model.train()
    for _ in range(STEPS):
        idx = rng.choice(len(texts), 16, replace=False)
        logits, _ = model(**model.encode(tok, [texts[i] for i in idx]))
        loss = nn.functional.cross_entropy(logits, labels[idx])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model.eval(), tok


def register_toy_teacher(model: CodeClassifier, tok: object) -> str:
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    with mlflow.start_run(run_name="toy-teacher"):
        log_code_classifier(model, tok, registered_model_name="toy-teacher", code_columns=["func"])
    return "models:/toy-teacher/1"


def held_out_rows() -> pd.DataFrame:
    """Generated rows of another seed: nothing in the test saw them."""
    return make_splits("vulnerability", 300, seed=9)["train"][["func"]].reset_index(drop=True)


def write_devign(root: Path) -> Path:
    folder = root / "devign"
    folder.mkdir(parents=True)
    for split, n, seed in (("train", 40, 0), ("valid", 16, 1), ("test", 16, 2)):
        df = toy_frame(n, seed).assign(idx=range(n), project="toy")
        df.to_json(folder / f"{split}.jsonl", orient="records", lines=True)
    return root


LENGTH_CODES = [f"int f{i}(int a) {{ return a * {i}; }}" + " " * i for i in range(10)]


class LengthModel(mlflow.pyfunc.PythonModel):
    """Class-1 probability from the code length: an oracle the test can recompute."""

    def predict(self, context, model_input: pd.DataFrame) -> pd.DataFrame:
        p = length_expected_probs(model_input)
        return pd.DataFrame({"0": p[:, 0], "1": p[:, 1]})


def length_expected_probs(df: pd.DataFrame) -> np.ndarray:
    p = (df.iloc[:, 0].str.len().to_numpy() % 5 + 1) / 7.0
    return np.column_stack([1 - p, p])


C_CODE = "int add_one(int value) {\n  int result = value + 1;\n  return result;\n}\n"


def code_examples(n: int = 30, pairs: bool = False) -> CodeExamples:
    rng = np.random.default_rng(0)
    texts = [TOY_CODE[i % len(TOY_CODE)] * (1 + i % 4) for i in range(n)]  # 1-4 copies: lengths vary
    b = [TOY_CODE[(i + 2) % len(TOY_CODE)] for i in range(n)] if pairs else None
    return CodeExamples(texts, b, rng.integers(0, 2, n), rng.normal(size=(n, 2)).astype(np.float32))
