"""GPU check (run on a machine with CUDA; needs torch, transformers, tokenizers, lightning).

1. ``CodeClassifier`` inference on CUDA matches the CPU.
2. Distillation's ``fit`` (``accelerator="auto"``) trains on the GPU with soft labels and
   the loss falls; the best checkpoint is reloaded.
3. Inference throughput, student vs a CodeBERT-shaped teacher, fp32 and bf16 autocast,
   measured side by side with CUDA events (ratios).
Prints one JSON object. Usage: ``python benchmarks/gpu_check.py``.
"""

from __future__ import annotations

import json
import time

import numpy as np
import torch

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.datasets import CodeExamples
from mlflow_metacompress.distill.modules import ClassifierModule, soft_label_loss
from mlflow_metacompress.distill.training import FitConfig, fit
from mlflow_metacompress.models.tokenizer import train_tokenizer

CODE = [
    f"int f{i}(int a, int b) {{ int s = a {'+-*'[i % 3]} b; for (int i = 0; i < {i}; i++) s += i; return s; }}"
    for i in range(256)
]


def timed(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1000)
    return best


def main() -> None:
    assert torch.cuda.is_available(), "no CUDA device"
    out: dict[str, object] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    tok = train_tokenizer(CODE, vocab_size=600)
    torch.manual_seed(0)
    model = (
        ArchSpec(vocab_size=len(tok), num_hidden_layers=2, hidden_size=64, intermediate_size=128, max_length=64)
        .build()
        .eval()
    )
    cpu = model.predict_proba(tok, CODE[:64])
    gpu = model.cuda().predict_proba(tok, CODE[:64])
    out["cuda_vs_cpu_max_abs_diff"] = float(np.abs(cpu - gpu).max())

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(len(CODE), 2)).astype(np.float32) * 3
    train = CodeExamples(CODE, teacher_logits=logits)
    val = CodeExamples(CODE[:64], labels=logits[:64].argmax(1))
    student = ArchSpec(
        vocab_size=len(tok), num_hidden_layers=2, hidden_size=64, intermediate_size=128, max_length=64
    ).build()
    module = ClassifierModule(student, loss_fn=soft_label_loss(1.0), lr=2e-3)
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    res = fit(module, tok, train, val, FitConfig(epochs=8, batch_size=32, progress=False), mlflow_logger=False)
    out["fit_seconds"] = round(time.perf_counter() - t0, 2)
    # Lightning moves the module back to the CPU at teardown; peak CUDA memory shows where it trained
    out["fit_peak_cuda_mb"] = round(torch.cuda.max_memory_allocated() / 1e6, 1)
    losses = [r["train_loss"] for r in res.history if "train_loss" in r]
    out["train_loss_first_last"] = [round(losses[0], 4), round(losses[-1], 4)] if losses else None
    out["best_val_acc"] = res.best_val_acc

    teacher = ArchSpec(
        vocab_size=50265,
        num_hidden_layers=12,
        hidden_size=768,
        num_attention_heads=12,
        intermediate_size=3072,
        max_length=512,
    )
    students = {
        "compressor_ga_3mb": ArchSpec(
            vocab_size=1000,
            num_hidden_layers=10,
            hidden_size=16,
            num_attention_heads=1,
            intermediate_size=2176,
            max_length=512,
        ),
        "4x96": ArchSpec(
            vocab_size=4000,
            num_hidden_layers=4,
            hidden_size=96,
            num_attention_heads=4,
            intermediate_size=384,
            max_length=512,
        ),
    }
    ids = torch.randint(5, 1000, (1024, 256), device="cuda")
    mask = torch.ones_like(ids)
    speed = {}
    for precision in ("fp32", "bf16"):
        times = {}
        for name, spec in {"teacher_codebert_shape": teacher, **students}.items():
            enc = spec.build().encoder.cuda().eval()

            @torch.no_grad()
            def run(enc=enc, precision=precision) -> None:
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
                    for s in range(0, len(ids), 128):
                        enc(input_ids=ids[s : s + 128], attention_mask=mask[s : s + 128])

            run()
            times[name] = timed(run)
            del enc
        speed[precision] = {
            k: {"seconds_1024x256": round(v, 4), "speedup_vs_teacher": round(times["teacher_codebert_shape"] / v, 2)}
            for k, v in times.items()
        }
    out["inference"] = speed
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
