"""Helpers of the distillation tests: the architecture-search space and its brute-force oracle,
a toy distillation context, a fake latency model and a method module added for one test."""

from __future__ import annotations

import importlib
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from mlflow_metacompress.distill import methods as methods_pkg
from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.latency_fit import LatencyModel
from mlflow_metacompress.distill.search.space import AvatarSpace, size_mb
from tests.conftest import TOY_CODE


def add_method_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str) -> None:
    """Make ``source`` the module ``distill.methods.<module>``, as if saved in the
    package folder: a temporary folder joins the package's search path for this test."""
    folder = tmp_path / f"methods-{module}"
    folder.mkdir()
    (folder / f"{module}.py").write_text(source)
    monkeypatch.setattr(methods_pkg, "__path__", [*methods_pkg.__path__, str(folder)])
    importlib.invalidate_caches()
    full = f"{methods_pkg.__name__}.{module}"
    monkeypatch.setitem(sys.modules, full, None)  # records "absent": the import is removed after the test
    del sys.modules[full]


# a one-epoch fit on short inputs: the distil commands' training options in the tests
QUICK_FIT = ["--epochs", "1", "--batch-size", "8", "--max-length", "64"]

SEARCH_ARGS = [
    "--population",
    "6",
    "--generations",
    "2",
    "--option",
    "probes=2",
    "--option",
    "probe_steps=2",
    "--option",
    "probe_rows=16",
    "--option",
    "probe_valid=8",
]


def toy_context(seed: int, target: float = 3.0):
    from mlflow_metacompress.distill.context import DistillContext
    from mlflow_metacompress.distill.training import FitConfig

    texts = TOY_CODE * 4
    return DistillContext(
        task="devign",
        code_columns=("func",),
        unlabeled=CodeExamples(texts, teacher_logits=np.zeros((len(texts), 2), np.float32)),
        valid=CodeExamples(texts, labels=np.zeros(len(texts), int)),
        labels=["0", "1"],
        pair_mode=None,
        size_mb=target,
        max_length=64,
        fit_config=FitConfig(progress=False, batch_size=8),
        seed=seed,
    )


TINY = AvatarSpace(
    vocab_size=(500, 3500),
    num_hidden_layers=(1, 2),
    hidden_size=(8, 56),
    num_attention_heads=(1, 4),
    intermediate_size=(16, 100),
    tokenizer=("bpe",),
    hidden_act=("gelu", "relu"),
    dropout=(0.1,),
    max_length=(32, 64),
    position_embedding_type=("absolute", "rotary"),
)


TARGET, LOWER = 0.3, 0.5


def brute_force(space: AvatarSpace, target: float, lower: float, pair_mode=None) -> set[ArchSpec]:
    """Every configuration of ``space`` meeting the constraints, checked by plain loops
    over every integer of each interval (no multiples assumed)."""
    out = set()
    hidden = [h for h in range(space.hidden_size[0], space.hidden_size[1] + 1) if h % 16 == 0]
    vocab = [v for v in range(space.vocab_size[0], space.vocab_size[1] + 1) if v % 1000 == 0]
    inter = [i for i in range(space.intermediate_size[0], space.intermediate_size[1] + 1) if i % 32 == 0]
    for v, L, h, a, i, act, ml, pos in itertools.product(
        vocab,
        range(space.num_hidden_layers[0], space.num_hidden_layers[1] + 1),
        hidden,
        range(space.num_attention_heads[0], space.num_attention_heads[1] + 1),
        inter,
        space.hidden_act,
        space.max_length,
        space.position_embedding_type,
    ):
        if h % a or (pos == "rotary" and act != "gelu"):
            continue
        c = ArchSpec(
            vocab_size=v,
            num_hidden_layers=L,
            hidden_size=h,
            num_attention_heads=a,
            intermediate_size=i,
            tokenizer="bpe",
            hidden_act=act,
            dropout=0.1,
            max_length=ml,
            position_embedding_type=pos,
            pair_mode=pair_mode,
        )
        if lower * target <= size_mb(c, 2, pair_mode) <= target:
            out.add(c)
    return out


FAKE = LatencyModel((0.05, 0.01, 2.0, 1.0, 0.0, 0.5, 0.0), "cpu:test", "0", 1, 64, 8)
