"""How close training and inference come to the CPU's own limit, in fp32 and bf16 (issue 31).

1. **GEMM peak**: the best GFLOP/s of 30 square ``torch.mm`` (``--gemm-n``, 2·n³ FLOPs) in
   float32 and bfloat16, at 1 thread and at every core (``--threads``): what the machine's
   BLAS (oneDNN/MKL) reaches at all.
2. **Workloads**, each timed in ``32-true`` (fp32) and under ``torch.autocast("cpu",
   bfloat16)`` (what Lightning's ``bf16-mixed`` and ``precision="auto"`` do on a CPU with
   AVX512-BF16/AMX, :mod:`mlflow_metacompress.precision`), at ``--threads`` threads. FLOPs
   are counted once per workload with ``torch.utils.flop_counter.FlopCounterMode``
   (matrix products and attention, forward and backward); achieved GFLOP/s = FLOPs / the
   fastest of ``--steps`` steps (after the counted one, which warms up; the fp32 and bf16
   runs of a workload follow each other); the share is of the GEMM peak of the same dtype
   and thread count (measured before and after the workloads, the larger kept: on a busy
   machine a peak is only ever underestimated, so shares are upper bounds there).

   - ``teacher train step``: the BigCloneBench study teacher (``reproduction/bigclonebench.json``
     ``config.teacher``: RoBERTa 2 × 256, 4 heads, FFN 1024, 16k vocabulary, 256 tokens,
     32 pairs a step, i.e. 64 × 256 tokens, ``concat_cls``): tokenising, forward,
     cross-entropy, backward and AdamW, as Lightning's loop does them;
   - ``student step <method>``: one distillation step of ``compressor`` and ``avatar``
     (soft-label KD on cached teacher logits), ``morph`` (KD + cosine) and ``fidelity``
     (:class:`~mlflow_metacompress.distill.modules.FidelityModule`: originals and one
     metamorphic variant each, hidden states aligned), each method's own module and loss,
     on the teacher-shaped 3 MB student at the study's student length 128 (``--student-arch``:
     any other ``ArchSpec`` JSON; the searched shapes differ per method and run);
   - ``eval inference teacher/student``: ``CodeClassifier.predict_logits`` of 64 pairs, as
     the evaluator's pyfunc calls it (tokenising, length bucketing, batches of 32);
   - ``attack query batch``: one query of an attack, 256 perturbed pairs scored by the student.

   Inputs are generated clone pairs (``mlflow_metacompress.data.generators``), several
   functions joined per text so that every row fills the maximum length, as most
   BigCloneBench functions do. Weights are random: speed does not depend on them.
3. **Done-when ratio**: the teacher step at the default precision (``auto``, resolved on this
   machine) against ``32-true``.

Writes ``--out`` (JSON) and the same name with ``.md`` (the Markdown table). ``--quick``
(the default) times 3 steps per workload and a 1536³ GEMM, a few minutes on 2 idle cores;
``--full`` 8 steps and 2048³. The load average is recorded: on a shared machine the
numbers are only as good as the machine was idle.

    OMP_NUM_THREADS=2 python benchmarks/bench_cpu_efficiency.py --out /tmp/cpu_efficiency.json

bf16 is timed only where it is native (:func:`timed_precisions`: AVX512-BF16 or AMX in
``/proc/cpuinfo``); elsewhere the bf16 GEMM peak and workloads are skipped, with the line
``skipping the bf16 GEMM peak and workloads: this CPU has none of ['amx_bf16',
'avx512_bf16'] (bf16 would be emulated, and precision='auto' trains in 32-true here)``.
Measured on an AVX2-only AMD EPYC (2 cores otherwise idle, ``OMP_NUM_THREADS=2``, 2026-12-07):
38.7 s wall, 54 s CPU time (over 7 minutes before, when it timed emulated bf16); beside a
training job and other tests (load average 6-10) 9 min 21 s wall; see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PRECISIONS = ("fp32", "bf16")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


@contextlib.contextmanager
def cast(precision: str) -> Iterator[None]:
    """fp32: nothing; bf16: CPU autocast to bfloat16 (Lightning's ``bf16-mixed``)."""
    import torch

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        yield


def gemm_peak(dtype: str, threads: int, n: int, repeats: int) -> float:
    """Best GFLOP/s of an n×n by n×n ``torch.mm`` in ``dtype`` on ``threads`` threads."""
    import torch

    from mlflow_metacompress.threads import using

    kind = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=gen).to(kind) for _ in range(2))
    out = torch.empty(n, n, dtype=kind)
    best = float("inf")
    with using(threads):
        torch.mm(a, b, out=out)  # warm-up: oneDNN picks and caches its kernel
        for _ in range(repeats):
            t = time.perf_counter()
            torch.mm(a, b, out=out)
            best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def flops_of(step: Callable[[], Any]) -> int:
    """FLOPs of one call of ``step`` (FlopCounterMode: matmuls, convolutions, attention).
    SDPA runs its math backend while counting: FlopCounterMode has no formula for the CPU
    flash kernel SDPA picks in training, which left attention out of fp32 counts, while the
    bf16 kernel's matrix products (models/attention.py) were counted."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        step()
    return int(counter.get_total_flops())


def best_seconds(step: Callable[[], Any], steps: int) -> float:
    """The fastest of ``steps`` calls (a busy machine only ever adds time)."""
    best = float("inf")
    for _ in range(steps):
        t = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t)
    return best


# ----------------------------------------------------------------------------- inputs and models
def long_texts(rows: int, seed: int, per_text: int = 6) -> tuple[list[str], list[str]]:
    """``rows`` pairs of generated C functions, ``per_text`` functions joined per text."""
    from mlflow_metacompress.data.generators.clones import generate_clones

    frame = generate_clones(max(rows * per_text, 64), seed)
    a, b = frame["func1"].astype(str).tolist(), frame["func2"].astype(str).tolist()

    def join(col: list[str], i: int) -> str:
        return "\n".join(col[(i * per_text + k) % len(col)] for k in range(per_text))

    return [join(a, i) for i in range(rows)], [join(b, i) for i in range(rows)]


def setup(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from mlflow_metacompress.distill.arch import ArchSpec
    from mlflow_metacompress.distill.search.objective import reference
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    config = json.loads((ROOT / "reproduction" / "bigclonebench.json").read_text())["config"]
    t = config["teacher"]
    texts_a, texts_b = long_texts(max(256, t["batch_size"]), seed=0)
    tok = train_tokenizer(texts_a + texts_b, vocab_size=t["vocab_size"], kind="bpe", model_max_length=t["max_length"])
    teacher_spec = ArchSpec(
        vocab_size=t["vocab_size"],
        num_hidden_layers=t["layers"],
        hidden_size=t["hidden"],
        num_attention_heads=t["heads"],
        intermediate_size=t["intermediate"],
        max_length=t["max_length"],
        pair_mode="concat_cls",
    )
    if args.student_arch:
        student_spec = ArchSpec(**json.loads(args.student_arch))
    else:
        found = reference(config["size_mb"], pair_mode="concat_cls", max_length=config["student_max_length"])
        if found is None:
            raise SystemExit(f"no teacher-shaped student at {config['size_mb']} MB; pass --student-arch")
        student_spec = found
    torch.manual_seed(0)
    return {
        "tok": tok,
        "texts": (texts_a, texts_b),
        "teacher_spec": teacher_spec,
        "student_spec": student_spec,
        "batch": t["batch_size"],
        "student_batch": config["student_batch_size"],
        "lr": t["lr"],
    }


def batch_of(model: Any, s: dict[str, Any], rows: int, start: int = 0) -> dict[str, Any]:
    """A training batch as the distillation collator makes it: tokenised pairs, index,
    labels and (random) cached teacher logits."""
    import torch

    a, b = s["texts"]
    idx = [(start + i) % len(a) for i in range(rows)]
    batch = dict(model.encode(s["tok"], [a[i] for i in idx], [b[i] for i in idx]))
    gen = torch.Generator().manual_seed(start)
    batch["index"] = torch.tensor(idx, dtype=torch.long)
    batch["labels"] = torch.randint(0, 2, (rows,), generator=gen)
    batch["teacher_logits"] = 3 * torch.randn(rows, 2, generator=gen)
    return batch


def train_step(module: Any, s: dict[str, Any], rows: int, precision: str, lr: float) -> Callable[[], None]:
    """One optimisation step of a Lightning ``module``: batch, ``training_step`` under the
    precision's autocast (as Lightning's MixedPrecision plugin runs it), backward, AdamW."""
    import torch

    module.train()
    opt = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad], lr=lr)
    counter = iter(range(10**9))

    def step() -> None:
        batch = batch_of(module.model, s, rows, next(counter) * rows)
        with cast(precision):
            loss = module.training_step(batch, 0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def student_module(method: str, s: dict[str, Any]) -> Any:
    """The method's own Lightning module and loss around a fresh student."""
    import torch

    from mlflow_metacompress.distill.methods import fidelity
    from mlflow_metacompress.distill.modules import (
        ClassifierModule,
        FidelityModule,
        morph_soft_label_loss,
        soft_label_loss,
    )

    torch.manual_seed(0)
    model = s["student_spec"].build(["0", "1"])
    if method in ("compressor", "avatar"):
        return ClassifierModule(model, soft_label_loss(1.0), lr=2e-3)
    if method == "morph":
        return ClassifierModule(model, morph_soft_label_loss(3.0), lr=2e-3)
    options = fidelity.Options(variants_per_step=1)
    a, b = s["texts"]
    n, hidden = len(a), s["teacher_spec"].hidden_size
    rng = np.random.default_rng(0)
    return FidelityModule(
        model,
        s["tok"],
        rng.normal(size=(n, 2)).astype(np.float32),
        rng.normal(size=(n, hidden)).astype(np.float32),
        list(reversed(a)),  # a variant of each pair: another pair of the same length
        list(reversed(b)),
        rng.normal(size=(n, 2)).astype(np.float32),
        rng.normal(size=(n, hidden)).astype(np.float32),
        [np.array([i]) for i in range(n)],
        options,
        options.variants_per_step,
        lr=2e-3,
    )


def predict(model: Any, s: dict[str, Any], rows: int, precision: str) -> Callable[[], Any]:
    a, b = s["texts"]
    return lambda: model.predict_logits(s["tok"], a[:rows], b[:rows], batch_size=32, precision=precision)


# ----------------------------------------------------------------------------- measurement
def workloads(s: dict[str, Any], precision: str, methods: list[str]) -> dict[str, Callable[[], Any]]:
    from mlflow_metacompress.distill.modules import ClassifierModule

    teacher = s["teacher_spec"].build(["0", "1"])
    student = s["student_spec"].build(["0", "1"])
    out = {"teacher train step": train_step(ClassifierModule(teacher, lr=s["lr"]), s, s["batch"], precision, s["lr"])}
    for method in methods:
        out[f"student step {method}"] = train_step(student_module(method, s), s, s["student_batch"], precision, 2e-3)
    out["eval inference teacher (64 pairs)"] = predict(teacher.eval(), s, 64, precision)
    out["eval inference student (64 pairs)"] = predict(student.eval(), s, 64, precision)
    out["attack query batch (256 pairs)"] = predict(student, s, 256, precision)
    return out


def timed_precisions() -> tuple[str, ...]:
    """``PRECISIONS`` where bf16 is native (AVX512-BF16 or AMX in ``/proc/cpuinfo``, the
    project's own test, :func:`mlflow_metacompress.precision.cpu_has_fast_bf16`, which
    ``precision="auto"`` follows), else fp32 only: bf16 without those units is emulated,
    takes minutes and is never chosen by ``auto``. Prints why it skips."""
    from mlflow_metacompress.precision import BF16_CPU_FLAGS, cpu_has_fast_bf16

    if cpu_has_fast_bf16():
        return PRECISIONS
    print(
        f"skipping the bf16 GEMM peak and workloads: this CPU has none of {sorted(BF16_CPU_FLAGS)} "
        "(bf16 would be emulated, and precision='auto' trains in 32-true here)",
        flush=True,
    )
    return ("fp32",)


def measure(
    args: argparse.Namespace, s: dict[str, Any], peaks: dict[str, dict[str, float]], precisions: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Each workload in fp32 and then at once in bf16 (side by side, so that a change in the
    machine's load hits both alike), bf16 only where it is native (:func:`timed_precisions`):
    FLOPs counted once, then the best of ``--steps`` steps."""
    import torch

    from mlflow_metacompress.threads import using

    out = []
    with using(args.threads):
        built = {precision: workloads(s, precision, args.methods) for precision in precisions}
        for name in built["fp32"]:
            row: dict[str, Any] = {"workload": name}
            for precision in precisions:
                step = built[precision][name]
                torch.manual_seed(0)
                flops = flops_of(step)  # also the warm-up step
                seconds = best_seconds(step, args.steps)
                gflops = flops / seconds / 1e9
                peak = peaks[precision][str(args.threads)]
                row["gflop"] = round(flops / 1e9, 3)
                row[precision] = {"seconds": round(seconds, 4), "gflops": round(gflops, 1), "share": gflops / peak}
                print(
                    f"  {name:<36} {precision}  {seconds * 1e3:9.1f} ms  {gflops:7.1f} GFLOP/s  "
                    f"{100 * gflops / peak:5.1f}% of the first peak  (load {load()})",
                    flush=True,
                )
            if "bf16" in row:
                row["bf16_speedup"] = round(row["fp32"]["seconds"] / row["bf16"]["seconds"], 3)
            out.append(row)
    return out


def markdown(result: dict[str, Any]) -> str:
    peaks, threads = result["gemm_peak_gflops"], result["threads"]
    lines = [
        f"GEMM peak (GFLOP/s, {result['gemm_n']}³ `torch.mm`): "
        + "; ".join(
            f"{p} " + ", ".join(f"{v:.0f} at {n} thread{'s' if n != '1' else ''}" for n, v in peaks[p].items())
            for p in peaks
        ),
        "",
        f"| workload ({threads} thread(s)) | GFLOP/step | fp32 s | fp32 GFLOP/s | % fp32 peak "
        "| bf16 s | bf16 GFLOP/s | % bf16 peak | bf16 speedup |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["workloads"]:
        f, b = r["fp32"], r.get("bf16")
        bf16 = (
            f"| {b['seconds']:.3f} | {b['gflops']:.0f} | {100 * b['share']:.0f}% | {r['bf16_speedup']:.2f}× |"
            if b
            else "| skipped | | | |"  # bf16 is not native here (timed_precisions)
        )
        lines.append(
            f"| {r['workload']} | {r['gflop']:.2f} | {f['seconds']:.3f} | {f['gflops']:.0f} | {100 * f['share']:.0f}% "
            + bf16
        )
    d = result["default_precision"]
    lines += [
        "",
        f"Teacher train step at the default precision (`auto` → `{d['resolved']}` on this CPU) against "
        f"`32-true`: **{d['speedup_vs_32_true']:.2f}×** faster. Load average {result['load_at_start']} at start, "
        f"{result['load_at_end']} at the end; {result['cpu']}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="3 steps per workload, 1536³ GEMM (the default)")
    size.add_argument("--full", action="store_true", help="8 steps per workload, 2048³ GEMM")
    p.add_argument("--threads", type=int, default=None, help="threads of the workloads (default: every core)")
    p.add_argument("--steps", type=int, default=None, help="timed steps per workload (the best; after 1 warm-up)")
    p.add_argument("--gemm-n", type=int, default=None)
    p.add_argument("--methods", default="compressor,avatar,morph,fidelity")
    p.add_argument("--student-arch", default=None, help="the students' ArchSpec as JSON (default: 3 MB teacher-shaped)")
    p.add_argument("--out", default="cpu_efficiency.json", help="the JSON; the Markdown table goes beside it (.md)")
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    import torch

    from mlflow_metacompress.precision import cpu_flags, for_training
    from mlflow_metacompress.threads import available_cores

    args.threads = args.threads or available_cores()
    args.steps = args.steps or (8 if args.full else 3)
    args.gemm_n = args.gemm_n or (2048 if args.full else 1536)
    args.methods = [m for m in args.methods.split(",") if m]
    flags = sorted(cpu_flags() & {"avx512f", "avx512_bf16", "amx_bf16", "avx2"})
    cpu = f"torch {torch.__version__}, {available_cores()} core(s), CPU flags {flags}"
    print(f"{cpu}; load {load()}", flush=True)
    result: dict[str, Any] = {"load_at_start": load(), "cpu": cpu, "threads": args.threads, "gemm_n": args.gemm_n}
    started = time.perf_counter()
    counts = sorted({1, available_cores(), args.threads})
    precisions = timed_precisions()
    result["bf16_skipped"] = precisions == ("fp32",)
    peaks = {d: {str(n): round(gemm_peak(d, n, args.gemm_n, 30), 1) for n in counts} for d in precisions}
    print(f"GEMM peak GFLOP/s: {peaks}", flush=True)
    s = setup(args)
    result["teacher_arch"], result["student_arch"] = s["teacher_spec"].to_dict(), s["student_spec"].to_dict()
    result["workloads"] = measure(args, s, peaks, precisions)
    # measured again at the end: on a shared machine the larger of the two is nearer the truth
    again = {d: {str(n): round(gemm_peak(d, n, args.gemm_n, 30), 1) for n in counts} for d in precisions}
    print(f"GEMM peak GFLOP/s at the end: {again}", flush=True)
    peaks = {d: {n: max(v, again[d][n]) for n, v in peaks[d].items()} for d in precisions}
    result["gemm_peak_gflops"] = peaks
    for row in result["workloads"]:
        for precision in precisions:
            row[precision]["share"] = round(row[precision]["gflops"] / peaks[precision][str(args.threads)], 4)
    resolved = for_training("auto", "cpu")
    teacher = result["workloads"][0]
    default = teacher["bf16" if resolved == "bf16-mixed" else "fp32"]["seconds"]
    result["default_precision"] = {
        "resolved": resolved,
        "speedup_vs_32_true": round(teacher["fp32"]["seconds"] / default, 3),
    }
    result["load_at_end"], result["wall_s"] = load(), round(time.perf_counter() - started, 1)
    out = Path(args.out)
    out.write_text(json.dumps(result, indent=2))
    table = markdown(result)
    out.with_suffix(".md").write_text(table)
    print("\n" + table + f"\nwrote {out} and {out.with_suffix('.md')} in {result['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
