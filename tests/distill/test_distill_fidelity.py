"""The fidelity method: each loss term against hand-computed and NumPy values, the
variant table and per-step variant draws, and a tiny end-to-end run whose registered
student excludes the learned projection."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
import torch

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.augment import variant_table
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.losses import FIDELITY_WEIGHTS, confidence_loss, consistency_loss, fidelity_loss
from mlflow_metacompress.distill.methods.fidelity import Options as FidelityWeights
from tests.support.distill import QUICK_FIT
from tests.support.models import C_CODE, tiny_teacher


def softmax(x: np.ndarray, T: float = 1.0) -> np.ndarray:
    e = np.exp(x / T - (x / T).max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return (p * (np.log(p) - np.log(q))).sum(axis=1)


def numpy_fidelity(s_o, t_o, h_o, z_o, s_v, t_v, h_v, z_v, parent, w: FidelityWeights) -> dict[str, float]:
    T = w.temperature
    kd = kl(softmax(t_o, T), softmax(s_o, T)).mean() * T * T
    kd_v = kl(softmax(t_v, T), softmax(s_v, T)).mean() * T * T

    def cos(a, b):
        return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    align = 0.5 * ((1 - cos(h_o, z_o)).mean() + (1 - cos(h_v, z_v)).mean())
    p, q = softmax(np.vstack([t_o, t_v])), softmax(np.vstack([s_o, s_v]))
    c = p.argmax(1)
    high = p.max(1) >= w.confidence_threshold
    conf = ((q[np.arange(len(q)), c] - p.max(1))[high] ** 2).mean() if high.any() else 0.0
    qo, qv = softmax(s_o)[parent], softmax(s_v)
    cons = (0.5 * (kl(qo, qv) + kl(qv, qo))).mean()
    total = kd + w.align * align + w.confidence * conf + w.variant_kd * kd_v + w.consistency * cons
    return {"kd": kd, "kd_var": kd_v, "align": align, "confidence": conf, "consistency": cons, "total": total}


def test_confidence_term_hand_computed():
    # teacher [ln 9, 0] → p = [0.9, 0.1] (≥ 0.8, in H); student [0, 0] → q = [½, ½]: (0.5 − 0.9)² = 0.16
    # teacher [0, 0] → p = [½, ½] (< 0.8, not in H): ignored
    s = torch.zeros(2, 2, requires_grad=True)
    t = torch.tensor([[np.log(9.0), 0.0], [0.0, 0.0]])
    loss = confidence_loss(s, t, 0.8)
    assert loss.item() == pytest.approx(0.16, rel=1e-6)
    loss.backward()
    assert s.grad[0, 0] < 0 and torch.all(s.grad[1] == 0)  # raise the student's confidence on row 0 only
    assert confidence_loss(s, torch.zeros(2, 2), 0.8).item() == 0.0  # empty H


def test_consistency_is_symmetric_kl_to_each_variants_own_original():
    s_o = torch.tensor([[0.0, 0.0], [np.log(3.0), 0.0]])
    s_v = torch.tensor([[np.log(3.0), 0.0], [np.log(3.0), 0.0], [0.0, 0.0]])
    parent = torch.tensor([0, 1, 1])
    half, quarter = np.array([[0.5, 0.5]]), np.array([[0.75, 0.25]])
    sym = 0.5 * (kl(half, quarter) + kl(quarter, half))[0]
    assert consistency_loss(s_o, s_v, parent).item() == pytest.approx((sym + 0.0 + sym) / 3, rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_fidelity_loss_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n, m, k, hs = 5, 7, 2, 6
    arrays = dict(
        s_o=rng.normal(size=(n, k)) * 2,
        t_o=rng.normal(size=(n, k)) * 3,
        h_o=rng.normal(size=(n, hs)),
        z_o=rng.normal(size=(n, hs)),
        s_v=rng.normal(size=(m, k)) * 2,
        t_v=rng.normal(size=(m, k)) * 3,
        h_v=rng.normal(size=(m, hs)),
        z_v=rng.normal(size=(m, hs)),
    )
    parent = rng.integers(0, n, m)
    w = FidelityWeights(temperature=2.0, variant_kd=0.7, align=0.3, confidence=1.5, consistency=0.4)
    want = numpy_fidelity(**arrays, parent=parent, w=w)
    tens = {k_: torch.tensor(v, dtype=torch.float32) for k_, v in arrays.items()}
    total, parts = fidelity_loss(
        tens["s_o"],
        tens["t_o"],
        tens["h_o"],
        tens["z_o"],
        tens["s_v"],
        tens["t_v"],
        tens["h_v"],
        tens["z_v"],
        torch.tensor(parent),
        w,
    )
    for key in ("kd", "kd_var", "align", "confidence", "consistency"):
        assert parts[key] == pytest.approx(want[key], rel=1e-4, abs=1e-6), key
    assert total.item() == pytest.approx(want["total"], rel=1e-4)
    # no variants in the batch: only the original-side terms remain
    total_o, parts_o = fidelity_loss(tens["s_o"], tens["t_o"], tens["h_o"], tens["z_o"], w=w)
    assert set(parts_o) == {"kd", "align", "confidence"}
    cos = (
        (arrays["h_o"] * arrays["z_o"]).sum(1)
        / np.linalg.norm(arrays["h_o"], axis=1)
        / np.linalg.norm(arrays["z_o"], axis=1)
    )
    assert parts_o["align"] == pytest.approx((1 - cos).mean(), rel=1e-5)


def test_fidelity_options_coerce_values_and_refuse_unknown_keys():
    from mlflow_metacompress.distill import get_method

    method = get_method("fidelity")
    w = method.parse(
        {
            "temperature": "4",
            "align_kind": "mse",
            "population": 3,
            "transforms": "rename_variables,swap_operands",
            "student_config": {
                "vocab_size": 1000,
                "num_hidden_layers": 1,
                "hidden_size": 16,
                "num_attention_heads": 2,
                "intermediate_size": 64,
            },
        }
    )
    assert w.temperature == 4.0 and w.align_kind == "mse" and w.consistency == FidelityWeights().consistency
    assert w.population == 3 and w.transforms == ("rename_variables", "swap_operands")
    assert w.student_config == ArchSpec(1000, 1, 16, 2, 64)
    assert set(FIDELITY_WEIGHTS) <= {f for f in FidelityWeights.__dataclass_fields__}  # the options carry every weight
    with pytest.raises(
        ValueError, match=r"unknown option\(s\) \['temprature'\] of method 'fidelity'; known options: .*'temperature'"
    ):
        method.parse({"temprature": 4})
    with pytest.raises(
        ValueError, match=r"option align_kind='l1' of method 'fidelity': expected one of \['cosine', 'mse'\]"
    ):
        method.parse({"align_kind": "l1"})
    with pytest.raises(ValueError, match="option student_config=.*unknown option.*'hidden'"):
        method.parse({"student_config": {"hidden": 16}})
    with pytest.raises(ValueError, match="option variants_per_step=2.5 .*expected an integer"):
        method.parse({"variants_per_step": 2.5})


def test_variant_table_and_draws_stay_with_their_original():
    from mlflow_metacompress.distill.modules import FidelityModule

    codes = [C_CODE, "not C at all {{{", C_CODE.replace("add_one", "inc").replace("+ 1", "+ 2")]
    ex = CodeExamples(codes)
    table, variant_of = variant_table(ex, "c", ["rename_function", "rename_variables", "swap_operands"], seed=0)
    assert len(variant_of[1]) == 0 and len(variant_of[0]) >= 2 and len(variant_of[2]) >= 2
    for i, rows in enumerate(variant_of):
        for r in rows:
            assert table.texts[r] != codes[i]
            assert ("+ 2" in table.texts[r] or "2 +" in table.texts[r]) == (i == 2)  # a variant of its own original
    model = ArchSpec(1000, 1, 16, 2, 32, max_length=32).build(["0", "1"])
    module = FidelityModule(
        model,
        None,
        np.zeros((3, 2)),
        np.zeros((3, 4)),
        table.texts,
        None,
        np.zeros((len(table), 2)),
        np.zeros((len(table), 4)),
        variant_of,
        FidelityWeights(),
        variants_per_step=2,
    )
    for _ in range(20):
        rows, parents = module.draw_variants(np.array([2, 1, 0]))
        pos_to_orig = {0: 2, 1: 1, 2: 0}
        assert all(r in variant_of[pos_to_orig[p]] for r, p in zip(rows, parents, strict=True))
        assert 1 not in parents.tolist() and np.bincount(parents, minlength=3).max() <= 2
        assert len(set(zip(rows.tolist(), parents.tolist(), strict=True))) == len(rows)  # distinct per original


def test_variant_rows_gives_variants_to_a_seeded_sample_of_rows_only():
    codes = [C_CODE.replace("add_one", f"f{i}").replace("+ 1", f"+ {i}") for i in range(8)]
    ex, names = CodeExamples(codes), ["rename_function", "swap_operands"]
    full, full_of = variant_table(ex, "c", names, seed=3)
    part, part_of = variant_table(ex, "c", names, seed=3, rows=3)
    owners = [i for i, v in enumerate(part_of) if len(v)]
    assert len(owners) == 3 and owners == sorted(owners)
    assert variant_table(ex, "c", names, seed=3, rows=3)[1][owners[0]].tolist() == part_of[owners[0]].tolist()
    for i in owners:  # each sampled row's variants are its own
        assert all(part.texts[r] != codes[i] for r in part_of[i])
        assert all(f"+ {i}" in part.texts[r] or f"{i} +" in part.texts[r] for r in part_of[i])
    assert len(part) < len(full) and variant_table(ex, "c", names, seed=3, rows=100)[0].texts == full.texts
    with pytest.raises(ValueError, match="variant_rows"):
        variant_table(ex, "c", names, rows=0)


@pytest.mark.slow
def test_fidelity_end_to_end_with_a_given_architecture(tracking, tmp_path, capsys):
    from mlflow_metacompress.distill.arch import param_count
    from mlflow_metacompress.distill.cli import main

    data, teacher = tiny_teacher(tmp_path)
    arch = {
        "vocab_size": 1000,
        "num_hidden_layers": 1,
        "hidden_size": 16,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "tokenizer": "bpe",
        "hidden_act": "gelu",
        "dropout": 0.1,
        "max_length": 64,
        "position_embedding_type": "rotary",
    }
    cache = tmp_path / "soft"
    rc = main(
        [
            "student",
            "--method",
            "fidelity",
            "--data-dir",
            str(data),
            "--teacher",
            teacher,
            "--size-mb",
            "0.2",
            *QUICK_FIT,
            "--cache-dir",
            str(cache),
            "--no-progress",
            "--option",
            f"student_config={arch!r}",
            "--option",
            "transforms=['rename_variables','swap_operands']",
            "--option",
            "align_kind=mse",
        ]
    )
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    config = result["config"]
    assert config["search"] == {"given": True} and config["variants"] > 0 and config["weights"]["align_kind"] == "mse"
    # teacher states of originals, of their variants and of the validation rows with theirs, cached
    assert len(list(cache.glob("fidelity-*.npz"))) == 3
    assert config["checkpoint_selection"] == "agreement" and config["validation_rows"] > 16
    tags = mlflow.MlflowClient().get_model_version("metacompress-fidelity", "1").tags
    assert tags["metacompress.method"] == "fidelity"
    student = ArchSpec(**config["student"])
    assert student.position_embedding_type == "rotary"
    assert int(tags["metacompress.params"]) == param_count(student)  # the projection is not part of the student
    run = mlflow.MlflowClient().get_run(result["run_id"])
    assert {"train_kd", "train_align", "train_consistency"} <= set(run.data.metrics)
    # the monitored score is logged under its own name: agreement is not accuracy
    assert "best_val_agreement" in run.data.metrics and "best_val_acc" not in run.data.metrics
    assert run.data.params["opt.select"] == "agreement" and run.data.params["opt.align_kind"] == "mse"
