"""The repair method (issue 44): the alignment losses against direct computations, the
options' validation, discovery, and a round on a tiny teacher/student pair that removes
deviations found on its training rows and logs its figures to the active MLflow run."""

from __future__ import annotations

import copy
import re

import mlflow
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mlflow_metacompress.distill.align import (
    attention_loss,
    buckets,
    hidden_loss,
    layer_map,
    pool_attention,
    value_loss,
    value_relations,
)
from mlflow_metacompress.distill.devices import TrainerSettings
from mlflow_metacompress.distill.discovery import get_method, list_methods
from mlflow_metacompress.distill.methods.repair import Options, split_transforms

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane


# ------------------------------------------------------------------ alignment
def test_layer_map_is_tinybert_uniform():
    assert layer_map(4, 12) == [3, 6, 9, 12]
    assert layer_map(2, 4) == [2, 4]
    assert layer_map(3, 2) == [1, 1, 2]  # never the embeddings (0)
    with pytest.raises(ValueError, match="at least one layer"):
        layer_map(0, 2)


def test_buckets_follow_relative_position_among_real_tokens():
    right = buckets(torch.tensor([[1, 1, 1, 1, 0]]), 2)[0]
    assert right.argmax(-1)[:4].tolist() == [0, 0, 1, 1] and right[4].sum() == 0
    left = buckets(torch.tensor([[0, 1, 1, 1]]), 3)[0]
    assert left[0].sum() == 0 and left[1:].argmax(-1).tolist() == [0, 1, 2]
    uniform = torch.full((1, 1, 4, 4), 0.25)  # every query spreads evenly: each bucket pair gets half
    pooled = pool_attention(uniform, buckets(torch.ones(1, 4), 2))
    torch.testing.assert_close(pooled, torch.full((1, 1, 2, 2), 0.5))


def test_hidden_loss_is_mse_of_projected_mapped_layers():
    torch.manual_seed(0)
    b, t, hs, ht = 2, 5, 6, 8
    student = [torch.randn(b, t, hs) for _ in range(3)]  # embeddings + 2 layers
    teacher = [torch.randn(b, t, ht) for _ in range(5)]  # embeddings + 4 layers
    w = torch.nn.Linear(hs, ht)
    mask = torch.ones(b, t)
    direct = (F.mse_loss(w(student[1]), teacher[2]) + F.mse_loss(w(student[2]), teacher[4])) / 2
    torch.testing.assert_close(hidden_loss(student, teacher, mask, mask, w, t), direct)
    assert hidden_loss(teacher, teacher, mask, mask, torch.nn.Identity(), 3).item() == 0.0


def test_attention_loss_is_minilm_kl_per_head():
    torch.manual_seed(1)
    b, h, t = 2, 3, 4
    a_s = torch.randn(b, h, t, t).softmax(-1)
    a_t = torch.randn(b, h, t, t).softmax(-1)
    mask = torch.ones(b, t)
    direct = (a_t * (a_t.log() - a_s.log())).sum(-1).mean()  # KL(A_T ‖ A_S), mean over batch, heads, queries
    torch.testing.assert_close(attention_loss(a_s, a_t, mask, mask, t), direct)
    torch.testing.assert_close(
        attention_loss(a_s, a_t, mask, mask, t), F.kl_div(a_s.log(), a_t, reduction="none").sum(-1).mean()
    )
    fewer = a_s[:, :2]  # 2 student heads against 3: the head-averaged distributions
    m_s, m_t = fewer.mean(1), a_t.mean(1)
    torch.testing.assert_close(
        attention_loss(fewer, a_t, mask, mask, t), (m_t * (m_t.log() - m_s.log())).sum(-1).mean()
    )
    padded = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    assert attention_loss(a_t, a_t, padded, padded, 2).abs().item() < 1e-6
    assert attention_loss(a_s, a_t, padded, padded, 2).item() > 0


def test_value_loss_is_minilm_value_relation_kl():
    torch.manual_seed(2)
    b, t, heads_s, heads_t, d = 2, 5, 2, 4, 3
    v_s, v_t = torch.randn(b, t, heads_s * d), torch.randn(b, t, heads_t * d)
    mask = torch.ones(b, t)

    def relation(v, h):  # MiniLM, head by head: softmax(V_h V_h^T / sqrt(d_head))
        return torch.stack(
            [
                torch.softmax(v[..., k * d : (k + 1) * d] @ v[..., k * d : (k + 1) * d].transpose(-1, -2) / d**0.5, -1)
                for k in range(h)
            ],
            1,
        )

    torch.testing.assert_close(value_relations(v_t, heads_t, mask), relation(v_t, heads_t))
    r_s, r_t = relation(v_s, heads_s).mean(1), relation(v_t, heads_t).mean(1)  # head counts differ: averaged
    direct = (r_t * (r_t.log() - r_s.log())).sum(-1).mean()
    torch.testing.assert_close(value_loss(v_s, v_t, (heads_s, heads_t), mask, mask, t), direct)
    same = torch.randn(b, t, heads_t * d)
    assert value_loss(same, same, (heads_t, heads_t), mask, mask, t).abs().item() < 1e-6
    padded = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])
    rel = value_relations(v_t, heads_t, padded)
    assert torch.all(rel[0, :, :, 3:] == 0) and torch.allclose(rel.sum(-1), torch.ones(b, heads_t, t))
    with pytest.raises(ValueError, match="heads"):
        value_relations(torch.randn(1, 2, 7), 2, torch.ones(1, 2))


def test_the_value_hook_captures_the_last_layers_values_and_the_loss_reaches_them(tiny_classifiers):
    from mlflow_metacompress.distill.align import capture_values

    tok, teacher, student = tiny_classifiers
    enc = student.encode(tok, ["int f(int a) { return a + 1; }", "int g(int b) { int c = b; return c; }"], None)
    values: list[torch.Tensor] = []
    with capture_values(student.encoder, values):
        out = student.encoder(**{k: enc[k] for k in ("input_ids", "attention_mask")}, output_hidden_states=True)
    last = student.encoder.encoder.layer[-1].attention.self
    torch.testing.assert_close(values[0], last.value(out.hidden_states[-2]))
    t_values: list[torch.Tensor] = []
    with torch.no_grad(), capture_values(teacher.encoder, t_values):
        teacher.encoder(**{k: enc[k] for k in ("input_ids", "attention_mask")})
    heads = (student.encoder.config.num_attention_heads, teacher.encoder.config.num_attention_heads)
    mask = enc["attention_mask"]
    loss = value_loss(values[0], t_values[0], heads, mask, mask, 8)
    loss.backward()
    assert loss.item() > 0 and last.value.weight.grad is not None and last.value.weight.grad.abs().sum() > 0


# ------------------------------------------------------------------ options and discovery
def test_repair_is_discovered_with_typed_options():
    assert "repair" in list_methods()
    method = get_method("repair")
    assert method.options is Options and "deviations" in method.summary
    opts = method.parse({"rounds": "3", "layer_align": "both", "train_transforms": "swap_operands,for_to_while"})
    assert (
        opts.rounds == 3 and opts.layer_align == "both" and opts.train_transforms == ("swap_operands", "for_to_while")
    )
    assert method.parse({"layer_align": "none"}).layer_align is None
    assert method.parse({"depth": "1"}).depth == 1 and Options().depth == 10


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rounds": "-1"}, "repair option rounds must be an integer >= 0"),
        ({"queries": "0"}, "repair option queries must be an integer >= 1"),
        ({"round_steps": "0"}, "repair option round_steps must be an integer >= 1"),
        ({"search_rows": "0"}, "repair option search_rows must be an integer >= 1"),
        ({"depth": "0"}, "repair option depth must be an integer >= 1"),
        ({"layer_weight": "-0.5"}, "repair option layer_weight must be >= 0"),
        ({"layer_align": "tokens"}, "option layer_align='tokens'"),
        ({"search": "mhm"}, "option search='mhm'"),
        ({"transforms": "swap_operands"}, "name the training rewrites with train_transforms"),
        ({"round": "2"}, r"unknown option\(s\) \['round'\]"),
    ],
)
def test_bad_options_are_refused_by_name(values, message):
    with pytest.raises(ValueError, match=message):
        get_method("repair").parse(values)


def test_training_and_held_out_rewrites_are_disjoint_and_checked():
    from mlflow_metacompress.attacks.deviation.space import default_operators

    known = default_operators("c")
    train, held = split_transforms(Options(), "c")
    assert held == known[1::2] and sorted(train + held) == sorted(known) and not set(train) & set(held)
    train, held = split_transforms(Options(train_transforms=("swap_operands",)), "c")
    assert train == ["swap_operands"] and "swap_operands" not in held and len(held) == len(known) - 1
    with pytest.raises(ValueError, match=r"share \['swap_operands'\]"):
        split_transforms(Options(train_transforms=("swap_operands",), held_out_transforms=("swap_operands",)), "c")
    with pytest.raises(ValueError, match=r"held_out_transforms: unknown rewrite\(s\) \['nope'\]"):
        split_transforms(Options(held_out_transforms=("nope",)), "c")
    with pytest.raises(ValueError, match="leaves no rewrite to train on"):
        split_transforms(Options(train_transforms=()), "c")


# ------------------------------------------------------------------ a round on tiny models
def ntok(code: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", code))


def teacher_probs(texts: list[str]) -> np.ndarray:
    """A confident teacher whose class is the program's length (TOY_CODE spans 21-49 tokens):
    rewrites that add or remove tokens move rows across its boundary at 40."""
    p = 1 / (1 + np.exp(-0.5 * (np.array([ntok(c) for c in texts]) - 40)))
    return np.stack([1 - p, p], axis=1)


def label(examples):
    """The teacher's log-probabilities and (unused, align=0) states, as fidelity_cache returns them."""
    return np.log(teacher_probs(examples.texts)).astype(np.float32), np.zeros((len(examples), 8), np.float32)


def test_a_repair_round_removes_deviations_found_on_training_rows(tracking, tiny_classifiers, monkeypatch):
    import mlflow_metacompress.attacks.deviation as deviation
    from mlflow_metacompress.distill.context import DistillContext
    from mlflow_metacompress.distill.datasets import CodeExamples
    from mlflow_metacompress.distill.jobs import FitConfig
    from mlflow_metacompress.distill.methods.repair import round_trainer
    from mlflow_metacompress.distill.repair import predictor, repair_rounds, still_deviating
    from tests.conftest import TOY_CODE

    tok, _, base_student = tiny_classifiers
    student = copy.deepcopy(base_student).train()
    texts = TOY_CODE * 4
    rows = CodeExamples(texts)
    t_o, z_o = label(rows)
    ctx = DistillContext(
        task="devign", code_columns=("func",), unlabeled=CodeExamples(texts, None, None, t_o), valid=rows,
        labels=["0", "1"], pair_mode=None, size_mb=1.0, max_length=128,
        fit_config=FitConfig(
            epochs=1,
            batch_size=8,
            progress=False,
            settings=TrainerSettings(accelerator="cpu", threads=1),
            length_window=0,
        ),
    )  # fmt: skip
    options = Options(rounds=1, queries=20, search_rows=len(texts), round_steps=40, replay=1, lr=5e-3, align=0.0)
    train_ops, held = split_transforms(options, "c")
    empty = (CodeExamples([]), np.zeros((0, 2), np.float32), np.zeros((0, 8), np.float32))
    train = round_trainer(ctx, options, student, tok, (t_o, z_o), (*empty, [np.zeros(0, np.int64)] * len(texts)))
    train(0, CodeExamples(TOY_CODE), t_o[:6], z_o[:6])  # distil on the originals: the student agrees on them
    seen = []
    real = deviation.find_deviations

    def recording(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append((kwargs["operators"], kwargs["depth"], [d for d in out if d.found]))
        return out

    monkeypatch.setattr(deviation, "find_deviations", recording)
    student_p = predictor(student, tok, ["func"])
    with mlflow.start_run() as run:
        (fig,) = repair_rounds(
            rows, ["func"], "c", lambda df: teacher_probs(df["func"].tolist()), student_p, label, train,
            rounds=1, queries=20, search_rows=len(texts), operators=train_ops, seed=0, depth=2,
        )  # fmt: skip
    ((operators, depth, found),) = seen
    assert depth == 2  # the search's operators per mutant reach it
    assert operators == train_ops and all(set(d.operators) <= set(train_ops) for d in found)  # no held-out rewrite
    assert not set(train_ops) & set(held)
    assert fig.deviations_found == len(found) >= 6  # several verified deviations before the round
    after = still_deviating(found, student_p, ["func"], rows)  # re-queried after the round's training
    assert after < len(found) and fig.remaining == after and fig.removed == len(found) - after
    assert fig.rows_searched == len(texts) and fig.training_rows == len(found)
    history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "repair_deviations_found")
    assert [(m.step, m.value) for m in history] == [(1, float(len(found)))]
    logged = mlflow.MlflowClient().get_run(run.info.run_id).data.metrics
    assert logged["repair_removed"] == fig.removed and logged["repair_rows_searched"] == len(texts)
    assert logged["repair_paired_queries"] == fig.paired_queries > 0
    assert logged["repair_queries_per_deviation"] == pytest.approx(fig.paired_queries / len(found))
    assert logged["repair_agreeing_rows"] == fig.agreeing_rows and logged["repair_remaining"] == after


@pytest.mark.slow
def test_repair_end_to_end_with_layer_alignment(tracking, tmp_path, capsys):
    """The CLI path: a logged tiny teacher, a given student, TinyBERT + both MiniLM terms, one round;
    the run says which rewrites it trained on and holds the round's figures."""
    import json

    from mlflow_metacompress.distill.cli import main
    from tests.support.models import tiny_teacher

    data, teacher = tiny_teacher(tmp_path)
    arch = {
        "vocab_size": 1000, "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2,
        "intermediate_size": 32, "tokenizer": "bpe", "hidden_act": "gelu", "dropout": 0.1, "max_length": 64,
    }  # fmt: skip
    options = [f"student_config={arch!r}", "layer_align=all", "rounds=1", "queries=8", "search_rows=8"]
    options += ["round_steps=4", "train_transforms=['swap_operands','insert_dead_code','rename_identifier']"]
    args = ["student", "--method", "repair", "--data-dir", str(data), "--teacher", teacher, "--size-mb", "0.2"]
    args += ["--epochs", "1", "--batch-size", "8", "--max-length", "64", "--cache-dir", str(tmp_path / "c")]
    assert main([*args, "--no-progress", *[x for o in options for x in ("--option", o)]]) == 0
    result = json.loads(capsys.readouterr().out)
    run = mlflow.MlflowClient().get_run(result["run_id"])
    assert run.data.tags["metacompress.trained_transforms"] == "swap_operands,insert_dead_code,rename_identifier"
    held = run.data.tags["metacompress.held_out_transforms"].split(",")
    assert "for_to_while" in held and "swap_operands" not in held
    assert {"train_hidden", "train_attention", "train_value", "repair_rows_searched", "repair_deviations_found"} <= set(
        run.data.metrics
    )
    assert run.data.metrics["repair_rows_searched"] == 8 and len(result["config"]["rounds"]) == 1
    assert result["config"]["layer_align"] == "all"
