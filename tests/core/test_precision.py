"""``precision="auto"`` (mlflow_metacompress/precision.py): bf16 autocast where the CPU has
AVX512-BF16/AMX (or the GPU supports bf16), fp32 elsewhere, for training and inference.

Oracles: the resolver is judged on fake CPU flags; bf16 training on a small learnable task
against the same model trained in fp32 (both re-queried on held-out rows, their paired
correctness compared with McNemar's exact test: scipy's binomial test on the discordant
rows); bf16 inference against
fp32 inference of one teacher/student pair, relations recomputed by
:func:`~mlflow_metacompress.relations.evaluate_relations` and by the evaluator itself.
"""

from __future__ import annotations

import json
import os

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch

from mlflow_metacompress import precision
from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.devices import PRECISION_TAG, TrainerSettings, resolve
from mlflow_metacompress.relations import RelationConfig, evaluate_relations

NAMES = ["count", "total", "idx", "len", "size", "value", "offset", "limit", "step", "acc", "tmp", "pos"]


def unsafe_copy_frame(n: int, seed: int) -> pd.DataFrame:
    """C functions that copy ``src`` into a stack buffer with ``strcpy`` (label 1) or a
    bounded ``strncpy`` (0), at a random place among random declarations: learnable by a
    tiny encoder, and held-out rows are new functions, not repeats."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        label = int(rng.integers(0, 2))
        body = [f"  int {rng.choice(NAMES)}{k} = {int(rng.integers(0, 99))};" for k in range(int(rng.integers(2, 6)))]
        call = "  strcpy(dst, src);" if label else "  strncpy(dst, src, sizeof(dst) - 1);"
        body.insert(int(rng.integers(0, len(body) + 1)), call)
        head = f"void f{int(rng.integers(0, 1000))}(char *src) {{\n  char dst[{int(rng.integers(8, 64))}];\n"
        rows.append((head + "\n".join(body) + "\n}", label))
    return pd.DataFrame(rows, columns=["func", "target"])


# ----------------------------------------------------------------------------- (a) the resolver
X86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 avx512f {extra}\nbogomips\t: 4800\n"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"avx2", "avx512f", "avx512_bf16"}, "bf16"),  # AMD Zen 4, Intel Cooper Lake
        ({"avx2", "amx_tile", "amx_bf16"}, "bf16"),  # Intel Sapphire Rapids
        ({"avx2", "avx512f", "avx512_vnni"}, "fp32"),  # AVX-512 without BF16: emulated, slower
        ({"sse2", "avx2"}, "fp32"),
    ],
)
def test_auto_picks_bf16_only_on_cpus_with_native_bf16(flags, expected, monkeypatch):
    monkeypatch.delenv(precision.PRECISION_ENV, raising=False)
    assert precision.auto("cpu", flags) == expected
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    assert precision.for_inference() == precision.for_inference("auto") == expected
    lightning = {"bf16": "bf16-mixed", "fp32": "32-true"}[expected]
    assert precision.for_training() == lightning
    placed = resolve("cpu", 1, "auto", None)
    assert placed.precision == lightning
    settings = TrainerSettings(accelerator="cpu")
    assert settings.params()["precision"] == lightning and settings.params()["precision_requested"] == "auto"
    assert settings.tags() == {PRECISION_TAG: lightning}
    # full precision can always be forced, in either spelling
    for forced in ("32-true", "fp32", "32"):
        assert resolve("cpu", 1, "auto", forced).precision == "32-true"
        assert precision.for_inference(forced) == "fp32"


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    x86, arm, none = tmp_path / "x86", tmp_path / "arm", tmp_path / "none"
    x86.write_text(X86.format(extra="avx512_bf16 avx512_vnni") * 2)
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16 sve\n")
    precision.cpu_flags.cache_clear()
    assert {"avx512_bf16", "avx2"} <= precision.cpu_flags(str(x86))
    assert precision.cpu_has_fast_bf16(precision.cpu_flags(str(x86)))
    assert "asimd" in precision.cpu_flags(str(arm))
    assert not precision.cpu_has_fast_bf16(precision.cpu_flags(str(arm)))  # not an x86 bf16 flag: stays fp32
    assert precision.cpu_flags(str(none)) == frozenset()
    precision.cpu_flags.cache_clear()


def test_the_environment_sets_what_unset_means_and_bad_values_are_named(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    monkeypatch.setenv(precision.PRECISION_ENV, "fp32")
    assert precision.for_inference() == "fp32" and resolve("cpu").precision == "32-true"
    assert precision.for_inference("auto") == "bf16"  # an explicit value beats the variable
    monkeypatch.setenv(precision.PRECISION_ENV, "bfloat16")
    assert TrainerSettings(accelerator="cpu").resolved_precision() == "bf16-mixed"
    monkeypatch.setenv(precision.PRECISION_ENV, "half-ish")
    with pytest.raises(ValueError, match=r"\$METACOMPRESS_PRECISION must be one of .* got 'half-ish'"):
        precision.for_inference()
    with pytest.raises(ValueError, match=r"got 'half-ish' \(from \$METACOMPRESS_PRECISION\)"):
        resolve("cpu")
    with pytest.raises(ValueError, match="precision must be one of .* got '8-bit'"):
        resolve("cpu", precision="8-bit")
    with pytest.raises(ValueError, match="for inference .* got '64-true'"):
        precision.for_inference("64-true")


def test_gpu_auto_follows_cuda_bf16_support(monkeypatch):
    monkeypatch.delenv(precision.PRECISION_ENV, raising=False)
    monkeypatch.setattr(precision, "gpu_has_bf16", lambda: True)
    assert precision.for_training(None, "gpu") == "bf16-mixed" and precision.for_inference(None, "cuda") == "bf16"
    monkeypatch.setattr(precision, "gpu_has_bf16", lambda: False)
    assert precision.for_training("auto", "gpu") == "32-true" and precision.for_inference("auto", "cuda") == "fp32"


# ----------------------------------------------------------------------------- (b), (c) trained models
@pytest.fixture(scope="module")
def trained():
    """One tokenizer; the same seeded model trained in 32-true and in bf16-mixed; a smaller,
    shorter-trained student; the held-out rows."""
    from mlflow_metacompress.distill.modules import ClassifierModule
    from mlflow_metacompress.distill.training import FitConfig, fit
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    train, valid, test = unsafe_copy_frame(256, 0), unsafe_copy_frame(64, 1), unsafe_copy_frame(240, 2)
    tok = train_tokenizer(train["func"].tolist(), vocab_size=300, kind="bpe", model_max_length=96)

    def trained_model(hidden: int, epochs: int, prec: str):
        torch.manual_seed(0)
        spec = ArchSpec(
            vocab_size=len(tok),
            num_hidden_layers=1,
            hidden_size=hidden,
            num_attention_heads=2,
            intermediate_size=2 * hidden,
            max_length=96,
        )
        model = spec.build(["0", "1"])
        config = FitConfig(
            epochs=epochs,
            batch_size=16,
            progress=False,
            settings=TrainerSettings(accelerator="cpu", precision=prec, threads=1),
            monitor="last",
        )
        fit(
            ClassifierModule(model, lr=5e-3),
            tok,
            CodeExamples.from_frame(train, ["func"], "target"),
            CodeExamples.from_frame(valid, ["func"], "target"),
            config,
            mlflow_logger=False,
        )
        return model.eval()

    return {
        "tok": tok,
        "fp32": trained_model(32, 4, "32-true"),
        "bf16": trained_model(32, 4, "bf16-mixed"),
        "student": trained_model(16, 2, "32-true"),
        "test": test,
    }


@pytest.mark.slow
def test_training_in_bf16_reaches_fp32_accuracy(trained):
    from scipy.stats import binomtest

    tok, test = trained["tok"], trained["test"]
    texts, y = test["func"].tolist(), test["target"].to_numpy()
    right = {p: trained[p].predict_proba(tok, texts, precision="fp32").argmax(1) == y for p in ("fp32", "bf16")}
    acc = {p: float(r.mean()) for p, r in right.items()}
    assert acc["fp32"] >= 0.9 and acc["bf16"] >= 0.9, acc  # the task is learnt in both precisions
    a, b = right["fp32"], right["bf16"]
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    # McNemar's exact test: the discordant rows split as a fair coin would (no significant difference)
    discordant = table[0][1] + table[1][0]
    assert discordant == 0 or binomtest(table[0][1], discordant, 0.5).pvalue > 0.05, (acc, table)
    assert abs(acc["fp32"] - acc["bf16"]) <= 0.05
    # bf16 autocast really trained: same seed and data, different weights
    w32, w16 = trained["fp32"].head.out_proj.weight, trained["bf16"].head.out_proj.weight
    assert w16.dtype == torch.float32 and not torch.allclose(w32, w16)


@pytest.mark.slow
def test_bf16_and_fp32_inference_give_the_same_relations(trained):
    tok, texts = trained["tok"], trained["test"]["func"].tolist()
    teacher, student = trained["fp32"], trained["student"]
    probs = {
        p: (teacher.predict_proba(tok, texts, precision=p), student.predict_proba(tok, texts, precision=p))
        for p in ("fp32", "bf16")
    }
    for p_t, p_s in probs.values():  # softmax formed in float32 whatever the forward pass ran in
        assert p_t.dtype == np.float32 and p_s.dtype == np.float32
        np.testing.assert_allclose(p_t.sum(axis=1), 1.0, atol=1e-6)
    assert not np.array_equal(probs["bf16"][0], probs["fp32"][0])  # bf16 autocast did take effect
    y = trained["test"]["target"].to_numpy()
    # MR3's high-confidence set at the fp32 teacher's median confidence: half the rows, whatever
    # the tiny teacher's calibration (it may be right on 0.9 of them and sure of none at 0.8)
    cfg = RelationConfig(confidence_threshold=float(np.median(probs["fp32"][0].max(axis=1))))
    full, half = (evaluate_relations(*probs[p], y, cfg).metrics for p in ("fp32", "bf16"))
    assert "mr3_violation_rate" in full and "mr3_violation_rate" in half
    n = len(texts)
    assert abs(full["mr1_violation_rate"] - half["mr1_violation_rate"]) <= 2 / n
    assert half["mr2_mean_kl"] == pytest.approx(full["mr2_mean_kl"], rel=0.1, abs=5e-3)
    assert half["mr3_violation_rate"] == pytest.approx(full["mr3_violation_rate"], abs=3 / n)


@pytest.mark.slow
def test_the_evaluator_tags_its_precision_and_caches_bf16_apart(trained, tracking, monkeypatch):
    from mlflow_metacompress.models.pyfunc import log_code_classifier

    tok, test = trained["tok"], trained["test"].head(96)
    with mlflow.start_run():
        t_uri = log_code_classifier(trained["fp32"], tok, code_columns=["func"]).model_uri
        s_uri = log_code_classifier(trained["student"], tok, code_columns=["func"]).model_uri
    results = {}
    for value in ("fp32", "bf16"):
        monkeypatch.setenv(precision.PRECISION_ENV, value)
        with mlflow.start_run() as run:
            out = mlflow.models.evaluate(
                model=s_uri,
                data=test,
                targets="target",
                model_type="metacompress",
                evaluators="metacompress",
                evaluator_config={"teacher": t_uri, "transforms": [], "progress": False},
            )
        tags = mlflow.get_run(run.info.run_id).data.tags
        assert tags["metacompress.precision.teacher"] == tags["metacompress.precision.student"] == value
        path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress/summary.json")
        assert json.loads(open(path).read())["teacher_rows_run"] == len(test)  # bf16 never reads fp32's cache
        results[value] = out.metrics
    assert abs(results["bf16"]["mr1_violation_rate"] - results["fp32"]["mr1_violation_rate"]) <= 2 / len(test)
    assert results["bf16"]["mr2_mean_kl"] == pytest.approx(results["fp32"]["mr2_mean_kl"], rel=0.1, abs=5e-3)
    # the pyfunc's probabilities are float32 in bf16 too
    frame = mlflow.pyfunc.load_model(s_uri).predict(test[["func"]])
    assert all(dtype == np.float32 for dtype in frame.dtypes)


# ----------------------------------------------------------------------------- (d) training runs
@pytest.mark.slow
def test_a_teacher_run_records_the_resolved_precision(tracking, monkeypatch):
    from mlflow_metacompress.distill.teacher import train_teacher

    monkeypatch.delenv(precision.PRECISION_ENV, raising=False)
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))  # as if native bf16
    frames = {"train": unsafe_copy_frame(96, 0), "valid": unsafe_copy_frame(16, 1), "test": unsafe_copy_frame(16, 2)}
    arch = ArchSpec(
        vocab_size=300, num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32, max_length=64
    )
    result = train_teacher(
        frames,
        "devign",
        arch=arch,
        epochs=1,
        batch_size=16,
        max_steps=2,
        registered_name=None,
        progress=False,
        trainer=TrainerSettings(accelerator="cpu", threads=1),
    )
    run = mlflow.get_run(result.run_id).data
    assert run.params["precision"] == "bf16-mixed" and run.params["precision_requested"] == "auto"
    assert run.tags[PRECISION_TAG] == "bf16-mixed"
    # --precision 32-true forces fp32 training and the run's own inference (here: its test accuracy)
    import mlflow_metacompress.distill.teacher as teacher_module

    seen = []
    real = teacher_module.accuracy_on
    monkeypatch.setattr(
        teacher_module, "accuracy_on", lambda *a, **k: seen.append(precision.for_inference()) or real(*a, **k)
    )
    forced = TrainerSettings(accelerator="cpu", precision="32-true", threads=1)
    again = train_teacher(
        frames, "devign", arch=arch, epochs=1, max_steps=1, registered_name=None, progress=False, trainer=forced
    )
    run = mlflow.get_run(again.run_id).data
    assert run.params["precision"] == "32-true" and run.tags[PRECISION_TAG] == "32-true" and seen == ["fp32"]
    assert precision.PRECISION_ENV not in os.environ  # never set


@pytest.mark.parametrize(
    ("training", "inside"),
    [("32-true", "fp32"), ("bf16-mixed", "bf16"), ("64-true", "fp32"), ("auto", None), ("", None)],
)
def test_inference_follows_an_explicit_training_precision(training, inside, monkeypatch):
    """The scoped precision is what an unset one means inside; the environment is never changed."""
    monkeypatch.delenv(precision.PRECISION_ENV, raising=False)
    with precision.inference_follows(training):
        assert precision.requested() == (inside or "auto")
        assert precision.PRECISION_ENV not in os.environ
    assert precision.requested() == "auto"
    monkeypatch.setenv(precision.PRECISION_ENV, "bf16")
    with precision.inference_follows(training):
        assert precision.requested() == (inside or "bf16")
        assert os.environ[precision.PRECISION_ENV] == "bf16"
    assert precision.requested() == "bf16"


def test_a_scoped_precision_stays_in_its_thread_and_names_a_bad_value(monkeypatch):
    """Issue 45: the gate's evaluation gets its precision through the evaluator config, scoped
    to the evaluating thread; a webhook worker thread beside it still sees the default."""
    import threading

    monkeypatch.delenv(precision.PRECISION_ENV, raising=False)
    seen = {}
    inside = threading.Event()
    done = threading.Event()

    def worker():
        inside.wait(5)
        seen["worker"] = precision.requested()
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    with precision.scoped("32-true") as chosen:
        inside.set()
        done.wait(5)
        seen["evaluator"] = precision.requested()
    thread.join(5)
    assert chosen == "fp32" and seen == {"worker": "auto", "evaluator": "fp32"}
    with pytest.raises(ValueError, match=r"evaluator_config\['precision'\].*'fp8'"):
        with precision.scoped("fp8", source="evaluator_config['precision']"):
            pass


# ----------------------------------------------------------------------------- the benchmark's parts
@pytest.mark.slow
def test_cpu_efficiency_benchmark_counts_flops_and_runs_every_workload():
    import importlib.util

    from mlflow_metacompress.models.tokenizer import train_tokenizer
    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location(
        "bench_cpu_efficiency", REPO / "benchmarks" / "bench_cpu_efficiency.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    a, b = torch.randn(64, 48), torch.randn(48, 32)
    assert bench.flops_of(lambda: a @ b) == 2 * 64 * 48 * 32  # FlopCounterMode against the textbook count
    assert bench.gemm_peak("bf16", 1, 64, 2) > 0 and bench.best_seconds(lambda: a @ b, 2) > 0
    texts_a, texts_b = bench.long_texts(40, seed=0, per_text=2)
    tok = train_tokenizer(texts_a + texts_b, vocab_size=300, kind="bpe", model_max_length=48)
    tiny = dict(
        num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64, pair_mode="concat_cls"
    )
    s = {
        "tok": tok,
        "texts": (texts_a, texts_b),
        "teacher_spec": ArchSpec(vocab_size=len(tok), max_length=48, **tiny),
        "student_spec": ArchSpec(vocab_size=len(tok), max_length=32, **tiny),
        "batch": 8,
        "student_batch": 8,
        "lr": 1e-3,
    }
    flops = {}
    for prec in ("fp32", "bf16"):
        for name, step in bench.workloads(s, prec, ["compressor", "morph", "fidelity"]).items():
            flops[prec, name] = bench.flops_of(step)
    assert all(v > 0 for v in flops.values())
    # fidelity runs each original and one variant of it through the student: about twice KD's step
    ratio = flops["fp32", "student step fidelity"] / flops["fp32", "student step compressor"]
    assert 1.8 < ratio < 2.3, ratio
    assert flops["bf16", "teacher train step"] == flops["fp32", "teacher train step"]  # autocast changes no count
    row = {"workload": "teacher train step", "gflop": 1.0, "bf16_speedup": 2.0}
    row |= {p: {"seconds": 1.0 / k, "gflops": 10.0 * k, "share": 0.1 * k} for p, k in (("fp32", 1), ("bf16", 2))}
    table = bench.markdown(
        {
            "gemm_peak_gflops": {"fp32": {"1": 50.0, "2": 90.0}, "bf16": {"1": 100.0, "2": 180.0}},
            "threads": 2,
            "gemm_n": 64,
            "workloads": [row],
            "default_precision": {"resolved": "bf16-mixed", "speedup_vs_32_true": 2.0},
            "load_at_start": [0.1],
            "load_at_end": [0.2],
            "cpu": "test",
        }
    )
    assert "| teacher train step | 1.00 | 1.000 | 10 | 10% | 0.500 | 20 | 20% | 2.00× |" in table
    assert "**2.00×** faster" in table
