"""Length-bucketed inference (models.batching, CodeClassifier.predict_logits) against an
independent oracle: every row run alone through the model's forward, with no padding."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from mlflow_metacompress.models.batching import (
    padded_tokens,
    padding_fraction,
    plan_batches,
    tokenise_all,
)
from mlflow_metacompress.models.classifier import CodeClassifier
from tests.conftest import REPO, TOY_CODE

# skewed lengths: mostly short functions, a few long ones (some past max_length), and
# character lengths that disagree with token lengths (rare symbols cost a token per
# character, familiar words a token per several)
SKEWED = (
    [f"int g{i}(int x) {{ return x + {i}; }}" for i in range(12)]
    + ["`~@$" * 6 + "#" * i for i in range(4)]
    + ["return buf; " * 6 + str(i) for i in range(4)]
    + [" " * 300 + f"int h{i}(void) {{ return {i}; }}" for i in range(4)]
    + [TOY_CODE[i % len(TOY_CODE)] + "\n" + "x = y * z + w;\n" * (5 * i) for i in range(1, 6)]
    + ["void big(int *a) {\n" + "  a[0] += a[1] - a[2];\n" * 60 + "}"]
)


def oracle(model: CodeClassifier, tok, texts, texts_b=None) -> np.ndarray:
    """Class probabilities from one unpadded row at a time through ``forward``."""
    rows = []
    with torch.no_grad():
        for i, text in enumerate(texts):
            enc = model.encode(tok, [text], None if texts_b is None else [texts_b[i]])
            assert int(enc["attention_mask"].sum()) == enc["attention_mask"].numel()  # no padding at all
            rows.append(torch.softmax(model(**enc)[0], dim=-1)[0].numpy())
    return np.array(rows)


def build(tok, pair_mode=None, seed=0) -> CodeClassifier:
    torch.manual_seed(seed)
    return CodeClassifier.from_config(
        len(tok),
        pair_mode=pair_mode,
        hidden_size=32,
        intermediate_size=64,
        max_length=48,
        pad_token_id=tok.pad_token_id,
    ).eval()


@pytest.mark.slow
@pytest.mark.parametrize(("batch_size", "chunk_rows"), [(1, None), (3, None), (8, None), (64, None), (3, 5), (8, 7)])
def test_single_texts_match_unbatched_forward(tiny_classifiers, batch_size, chunk_rows):
    tok = tiny_classifiers[0]
    model = build(tok)
    expected = oracle(model, tok, SKEWED)
    got = model.predict_proba(tok, SKEWED, batch_size=batch_size, chunk_rows=chunk_rows)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert got.dtype == np.float32 and got.shape == (len(SKEWED), 2)


@pytest.mark.slow
@pytest.mark.parametrize("pair_mode", ["single_sequence", "concat_cls", "siamese"])
def test_clone_pairs_match_unbatched_forward(tiny_classifiers, pair_mode):
    tok = tiny_classifiers[0]
    model = build(tok, pair_mode, seed=3)
    a = SKEWED
    b = list(reversed(SKEWED))  # long with short: the sort key is the combined length
    expected = oracle(model, tok, a, b)
    for kw in ({"batch_size": 4}, {"max_tokens": 200}, {"batch_size": 3, "chunk_rows": 4}):
        np.testing.assert_allclose(model.predict_proba(tok, a, b, **kw), expected, atol=1e-5)
    with pytest.raises(ValueError, match="two code columns"):
        model.predict_proba(tok, a)


def test_token_budget_batches(tiny_classifiers):
    tok = tiny_classifiers[0]
    model = build(tok)
    enc = tokenise_all(tok, SKEWED, None, None, model.meta.max_length)
    batches = plan_batches(enc.widths, max_tokens=120)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(SKEWED)))  # every row exactly once
    for b in batches:  # within budget unless a single row is longer than the budget
        assert len(b) == 1 or len(b) * enc.widths[b].max() <= 120
    assert max(map(len, batches)) > min(map(len, batches))  # short rows travel in bigger batches
    np.testing.assert_allclose(model.predict_proba(tok, SKEWED, max_tokens=120), oracle(model, tok, SKEWED), atol=1e-5)
    with pytest.raises(ValueError, match="max_tokens"):
        plan_batches(enc.widths, max_tokens=0)


def old_padded(lengths, texts, bs) -> int:
    """Padded tokens of the previous path: character-length order, chunks of ``bs``."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    return sum(len(order[s : s + bs]) * max(lengths[i] for i in order[s : s + bs]) for s in range(0, len(order), bs))


def test_bucketing_pads_less_than_character_order(tiny_classifiers):
    tok = tiny_classifiers[0]
    enc = tokenise_all(tok, SKEWED, None, None, 48)
    lengths = [len(tok(t, truncation=True, max_length=48)["input_ids"]) for t in SKEWED]
    assert enc.widths[:, 0].tolist() == lengths
    for bs in (2, 3, 4, 8):
        new = plan_batches(enc.widths, bs)
        assert sorted(np.concatenate(new).tolist()) == list(range(len(SKEWED)))
        assert all(len(b) <= bs for b in new) and sum(len(b) < bs for b in new) <= 1
        assert padded_tokens(enc.widths, new) <= old_padded(lengths, SKEWED, bs)
        assert 0.0 <= padding_fraction(enc.widths, new) <= 1 - sum(lengths) / old_padded(lengths, SKEWED, bs)
    # character order misplaces the symbol-heavy and the word-heavy rows here: strictly less padding
    assert padded_tokens(enc.widths, plan_batches(enc.widths, 8)) < old_padded(lengths, SKEWED, 8)


def test_fixed_size_batches_are_optimal_for_their_sizes():
    """Brute force: no ordering of the rows, cut into chunks of batch_size, pads less."""
    rng = np.random.default_rng(0)
    for _ in range(40):
        n, bs = int(rng.integers(1, 8)), int(rng.integers(1, 5))
        lengths = rng.integers(1, 20, n)
        got = padded_tokens(lengths, plan_batches(lengths, bs))
        best = min(
            sum(len(p[s : s + bs]) * lengths[list(p[s : s + bs])].max() for s in range(0, n, bs))
            for p in itertools.permutations(range(n))
        )
        assert got == best, (lengths.tolist(), bs)


def test_empty_input_and_bad_precision(tiny_classifiers):
    tok = tiny_classifiers[0]
    model = build(tok)
    assert model.predict_proba(tok, []).shape == (0, 2)
    with pytest.raises(ValueError, match="'fp8'"):
        model.predict_proba(tok, SKEWED[:2], precision="fp8")


def _cpu_bf16_autocast() -> bool:
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.ones(2, 2) @ torch.ones(2, 2) is not None
    except RuntimeError:  # pragma: no cover - depends on the torch build
        return False


@pytest.mark.skipif(not _cpu_bf16_autocast(), reason="this torch has no CPU bf16 autocast")
def test_bf16_precision_runs_and_stays_close(tiny_classifiers):
    tok = tiny_classifiers[0]
    model = build(tok)
    fp32 = model.predict_proba(tok, SKEWED)
    bf16 = model.predict_proba(tok, SKEWED, precision="bf16")
    assert bf16.dtype == np.float32
    np.testing.assert_allclose(bf16, fp32, atol=2e-2)
    assert not np.array_equal(bf16, fp32)  # autocast did take effect


def test_training_still_works_after_inference_mode(tiny_classifiers):
    """Tensors made under inference_mode must not leak into a later training step."""
    from mlflow_metacompress.distill.arch import ArchSpec

    tok = tiny_classifiers[0]
    for position in ("absolute", "rotary"):
        model = ArchSpec(vocab_size=len(tok), max_length=48, position_embedding_type=position).build()
        model.predict_proba(tok, SKEWED[:4])
        model.train()
        logits, _ = model(**model.encode(tok, SKEWED[:4]))
        logits.sum().backward()
        assert model.head.out_proj.weight.grad is not None


def test_pyfunc_precision_and_token_budget_options(tiny_classifiers, tmp_path, monkeypatch):
    import pandas as pd

    from mlflow_metacompress.models.pyfunc import PRECISION_ENV, CodeClassifierPyfunc

    tok = tiny_classifiers[0]
    model = build(tok)
    directory = model.save(tmp_path / "m", tok)
    expected = oracle(model, tok, SKEWED)
    frame = pd.DataFrame({"func": SKEWED})

    def predict(config, params=None):
        wrapper = CodeClassifierPyfunc()
        ctx = type("Ctx", (), {"artifacts": {"hf_dir": str(directory)}, "model_config": config})()
        wrapper.load_context(ctx)
        return wrapper.predict(ctx, frame, params).to_numpy()

    np.testing.assert_allclose(predict({"max_tokens": 100}), expected, atol=1e-5)
    np.testing.assert_allclose(predict({}, {"batch_size": 2, "max_tokens": None}), expected, atol=1e-5)
    with pytest.raises(ValueError, match="'int4'"):
        predict({"precision": "int4"})
    monkeypatch.setenv(PRECISION_ENV, "nope")
    with pytest.raises(ValueError, match="'nope'"):
        predict({})
    np.testing.assert_allclose(predict({"precision": "fp32"}), expected, atol=1e-5)  # config beats the env


@pytest.mark.slow
def test_mfu_benchmark_cpu_smoke(tmp_path):
    out = tmp_path / "mfu.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "bench_gpu_mfu.py"),
            "--device",
            "cpu",
            "--layers",
            "2",
            "--hidden",
            "64",
            "--n",
            "48",
            "--max-length",
            "64",
            "--batch-size",
            "8",
            "--repeats",
            "1",
            "--tokenizer-vocab",
            "600",
            "--data",
            str(tmp_path),
            "--out",
            str(out),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode != 0 and "no test.jsonl" in proc.stderr  # --data names a folder without the data
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "bench_gpu_mfu.py"),
            "--device",
            "cpu",
            "--layers",
            "2",
            "--hidden",
            "64",
            "--n",
            "48",
            "--max-length",
            "64",
            "--batch-size",
            "8",
            "--repeats",
            "1",
            "--tokenizer-vocab",
            "600",
            "--out",
            str(out),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report == json.loads(out.read_text())
    assert report["n"] == 48 and report["attention"] == "metacompress_sdpa"  # models/attention.py
    assert set(report["results"]) == {
        "floor",
        "floor_bs16",
        "floor_bs256",
        "floor_max_tokens",
        "new",
        "new_max_tokens",
        "new_chunked",
        "old",
    }
    limits = report["holds_back"]
    assert limits["best_floor"].startswith("floor") and limits["batch_size_floor_over_best"] >= 1
    assert (
        0 < limits["tokenise_share_of_new"]
        and limits["padding_fraction_new"] == report["results"]["new"]["padding_fraction"]
    )
    for r in report["results"].values():
        assert 0.0 <= r["padding_fraction"] < 1.0
        assert r["mfu"] > 0 and r["achieved_tflops"] > 0 and r["seconds"] > 0
        assert r["mfu_useful"] <= r["mfu"] * (1 + 1e-3)  # useful FLOPs never exceed executed ones
        assert r["padded_tokens"] >= report["tokens"]["real"]
    assert report["results"]["new"]["padding_fraction"] <= report["results"]["old"]["padding_fraction"]
    assert set(report["breakdown_seconds"]) == {"tokenise", "bucket_and_collate", "h2d_transfer", "forward", "other"}
    assert report["new_vs_old_max_abs_prob_diff"] < 1e-5  # fp32 on CPU: same probabilities


def test_siamese_head_reads_mean_pooled_pair_features(tiny_classifiers):
    """``siamese`` (Sentence-BERT's features): the head's input is ``[u, v, |u - v|, u * v]``
    of each function's hidden states averaged over its own tokens, recomputed here in numpy
    from the encoder's unpadded outputs; the pair's order then matters only through u and v."""
    tok = tiny_classifiers[0]
    model = build(tok, "siamese", seed=5)
    a, b = SKEWED[:6], SKEWED[-6:]

    def pooled(text: str) -> np.ndarray:
        enc = tok([text], truncation=True, max_length=model.meta.max_length, return_tensors="pt")
        with torch.no_grad():
            states = model.encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        return states[0].numpy().mean(axis=0)

    head = {k: v.numpy() for k, v in model.head.state_dict().items()}
    expected = []
    for x, y in zip(a, b, strict=True):
        u, v = pooled(x), pooled(y)
        feats = np.concatenate([u, v, np.abs(u - v), u * v])
        hidden = np.tanh(head["dense.weight"] @ feats + head["dense.bias"])
        logits = head["out_proj.weight"] @ hidden + head["out_proj.bias"]
        expected.append(np.exp(logits) / np.exp(logits).sum())
    np.testing.assert_allclose(model.predict_proba(tok, a, b, batch_size=4), np.array(expected), atol=1e-5)
    assert model.head.dense.in_features == 4 * model.encoder.config.hidden_size
