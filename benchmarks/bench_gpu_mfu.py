"""Teacher inference inside an evaluation: model FLOPs utilisation (MFU) and where time goes.

Builds a CodeBERT-shaped teacher from a config (RoBERTa, 12 layers × 768, 12 heads, FFN
3072, vocabulary 50,265, 512 tokens; randomly initialised, offline: speed does not depend
on the weights) with a byte-level BPE tokenizer trained on the same Devign functions, and
times, side by side in one run (best of ``--repeats`` after a warm-up):

- ``floor``: the batched forward pass alone on pre-tokenised, pre-padded tensors already
  on the device (length-bucketed batches, as ``new`` makes them): the physical floor;
  ``floor_bs<N>`` (``--floor-batch-sizes``) and ``floor_max_tokens`` the same with other
  batch sizes and with the token budget, to show what batch size alone is worth;
- ``new``: ``CodeClassifier.predict_proba`` as the evaluation (pyfunc) calls it:
  tokenisation, length bucketing, padding, transfer, forward, softmax (on CUDA the
  tokenisation runs in chunks in a background thread, overlapping the forward passes);
- ``new_one_chunk`` (CUDA) / ``new_chunked`` (CPU): the same with the other chunking;
- ``new_max_tokens``: the same with a padded-token budget per batch (``--max-tokens``,
  default ``batch_size × max_length``) instead of a fixed ``batch_size``;
- ``old``: the previous path (character-length sort, per-batch tokenise with padding,
  fixed batches, ``no_grad``, a host synchronisation per batch), same precision;
- ``old_fp32``: on CUDA with a lower precision, the previous path as it ran (fp32).

FLOPs counted (padded tokens included, since the kernels compute them): for each model
input of a batch of ``B`` rows padded to ``S`` tokens,
``2 · P · B · S + 4 · L · B · S² · H`` where ``P`` is the number of non-embedding
parameters (encoder layers and head), ``L`` the layers and ``H`` the hidden size (the
second term is QKᵀ and attention × V). ``useful`` FLOPs use each row's real length
instead. MFU = executed FLOPs / time / ``--peak-tflops`` (default 989, the H200's dense
bf16 peak from the data sheet; an 8192³ bf16 matmul measured about 790 on the lent
H200s). The ``breakdown`` splits the ``new`` path into tokenisation, bucketing and
collation (into pinned memory on CUDA), host-to-device copies and the forward pass,
each timed alone over all rows in one chunk; ``other`` is what ``new`` takes beyond
their sum (0 when the chunked tokenisation hides part of it behind the forward passes).

Prints one JSON object (and writes it to ``--out``). GPU:
``python benchmarks/bench_gpu_mfu.py --n 2000`` (data: ``--data DIR`` holding Devign's
``test.jsonl``; else ``shared/data/devign`` in or beside the checkout; else generated C).
CPU smoke run: ``python benchmarks/bench_gpu_mfu.py --device cpu --layers 2 --hidden 64 --n 64``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mlflow_metacompress.models.batching import (
    autocast_dtype,
    bucketed,
    collate,
    padded_tokens,
    plan_batches,
    tokenise_all,
)
from mlflow_metacompress.models.classifier import CodeClassifier
from mlflow_metacompress.models.encoder import attention_implementation
from mlflow_metacompress.models.tokenizer import train_tokenizer

REPO = Path(__file__).resolve().parents[1]
DATA_DIRS = [REPO / "shared" / "data" / "devign", REPO.parent / "shared" / "data" / "devign"]


def load_code(n: int, data: str | None) -> tuple[list[str], str]:
    """``n`` Devign test functions (repeated if fewer), or generated C of varied length."""
    for d in [Path(data)] if data else DATA_DIRS:
        path = d / "test.jsonl" if d.is_dir() else d
        if path.is_file():
            funcs = [json.loads(line)["func"] for line in path.open() if line.strip()]
            return [funcs[i % len(funcs)] for i in range(n)], str(path)
    if data:
        raise FileNotFoundError(f"--data {data}: no test.jsonl there")
    rng = np.random.default_rng(0)

    def body(j: int) -> str:
        return f"  if (buf[{j}] > {j}) {{ total += buf[{j}] * {j}; }} else {{ total -= {j}; }}\n"

    sizes = rng.lognormal(3, 1, n).astype(int) + 1  # a long tail of lengths, as in Devign
    return [
        f"int f{i}(int *buf, int n) {{\n  int total = 0;\n{''.join(map(body, range(k)))}  return total;\n}}"
        for i, k in enumerate(sizes)
    ], "generated"


def best_times(fns: dict[str, Callable[[], Any]], device: torch.device, repeats: int) -> dict[str, float]:
    """Best wall time of each function over ``repeats`` rounds, alternating them within a
    round, after one warm-up call each; CUDA is synchronised around every call."""

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def flops(widths: np.ndarray, batches: list[np.ndarray], p_ne: int, layers: int, hidden: int) -> tuple[float, float]:
    """(executed, useful) FLOPs of the batches: padded and real lengths (module docstring)."""
    w = np.asarray(widths, dtype=np.float64).reshape(len(widths), -1)
    executed = 0.0
    for b in batches:
        s = w[b].max(axis=0)
        executed += float((2 * p_ne * len(b) * s + 4 * layers * len(b) * s**2 * hidden).sum())
    useful = float((2 * p_ne * w + 4 * layers * w**2 * hidden).sum())
    return executed, useful


def old_plan(texts: list[str], batch_size: int) -> list[np.ndarray]:
    """Batches of the previous path: character-length order, fixed ``batch_size``."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]


def old_predict(model: CodeClassifier, tok: Any, texts: list[str], batch_size: int, dtype: Any) -> np.ndarray:
    """The previous ``predict_proba`` (before length bucketing), kept here for comparison."""
    device = next(model.parameters()).device
    out = np.zeros((len(texts), model.num_labels), dtype=np.float32)
    with torch.no_grad(), torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
        for idx in old_plan(texts, batch_size):
            batch = {k: v.to(device) for k, v in model.encode(tok, [texts[i] for i in idx]).items()}
            out[idx] = model(**batch)[0].float().cpu().numpy()
    e = np.exp(out - out.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def sig(x: float) -> float:
    return float(f"{x:.4g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=None, help="default: hidden / 64, at least 1")
    ap.add_argument("--ffn", type=int, default=None, help="default: 4 × hidden")
    ap.add_argument("--vocab", type=int, default=50265)
    ap.add_argument("--tokenizer-vocab", type=int, default=16000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--floor-batch-sizes", default="16,256", help="more batch sizes for the floor (comma-separated)")
    ap.add_argument("--max-tokens", type=int, default=None, help="default: batch_size × max_length")
    ap.add_argument("--precision", default=None, help="fp32, bf16 or fp16; default bf16 on CUDA, fp32 on CPU")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=None)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    device = torch.device(args.device)
    precision = args.precision or ("bf16" if device.type == "cuda" else "fp32")
    dtype = autocast_dtype(precision)
    heads = args.heads or max(1, args.hidden // 64)
    max_tokens = args.max_tokens or args.batch_size * args.max_length
    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    texts, source = load_code(args.n, args.data)
    tok = train_tokenizer(texts, vocab_size=args.tokenizer_vocab, model_max_length=args.max_length)
    model = (
        CodeClassifier.from_config(
            vocab_size=max(args.vocab, len(tok)),
            hidden_size=args.hidden,
            num_hidden_layers=args.layers,
            num_attention_heads=heads,
            intermediate_size=args.ffn or 4 * args.hidden,
            max_length=args.max_length,
            pad_token_id=tok.pad_token_id,
        )
        .to(device)
        .eval()
    )
    setup_s = time.perf_counter() - t0
    p_ne = sum(p.numel() for n, p in model.named_parameters() if ".embeddings." not in f".{n}")
    hidden, layers = args.hidden, args.layers

    enc = tokenise_all(tok, texts, None, None, args.max_length)
    widths = enc.widths
    cuda = device.type == "cuda"
    pad_id = int(tok.pad_token_id)
    # on CUDA predict_proba tokenises in chunks in a background thread by default; the
    # alternative on this device (one global chunk on CUDA, chunks on CPU) runs beside it
    default_chunks = max(256, -(-len(texts) // 8)) if cuda else 0
    alt_chunks, alt_name = (0, "new_one_chunk") if cuda else (max(1, len(texts) // 8), "new_chunked")

    def plan(chunk_rows: int, **kw: Any) -> list[np.ndarray]:
        return [
            rows[b]
            for _, rows, bs in bucketed(tok, texts, None, None, args.max_length, chunk_rows=chunk_rows, **kw)
            for b in bs
        ]

    plans = {
        "floor": plan_batches(widths, args.batch_size),
        "new": plan(default_chunks, batch_size=args.batch_size),
        "new_max_tokens": plan(default_chunks, max_tokens=max_tokens),
        alt_name: plan(alt_chunks, batch_size=args.batch_size),
    }
    plans["old"] = plans["old_fp32"] = old_plan(texts, args.batch_size)

    def autocast() -> Any:
        return torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None)

    def forward_only(batches: list[np.ndarray]) -> Callable[[], None]:
        on_device = [{k: v.to(device) for k, v in collate(enc, b, pad_id).items()} for b in batches]

        def run() -> None:
            with torch.inference_mode(), autocast():
                for batch in on_device:
                    model(**batch)

        return run

    floor = forward_only(plans["floor"])
    runs: dict[str, Callable[[], Any]] = {"floor": floor}
    # batch size alone: the floor with other batch sizes and with the token budget
    for bs in sorted({int(x) for x in args.floor_batch_sizes.split(",") if x} - {args.batch_size}):
        plans[f"floor_bs{bs}"] = plan_batches(widths, bs)
        runs[f"floor_bs{bs}"] = forward_only(plans[f"floor_bs{bs}"])
    plans["floor_max_tokens"] = plan_batches(widths, max_tokens=max_tokens)
    runs["floor_max_tokens"] = forward_only(plans["floor_max_tokens"])
    runs.update(
        {
            "new": lambda: model.predict_proba(tok, texts, batch_size=args.batch_size, precision=precision),
            "new_max_tokens": lambda: model.predict_proba(tok, texts, precision=precision, max_tokens=max_tokens),
            alt_name: lambda: model.predict_proba(
                tok, texts, batch_size=args.batch_size, precision=precision, chunk_rows=alt_chunks
            ),
            "old": lambda: old_predict(model, tok, texts, args.batch_size, dtype),
        }
    )
    if cuda and dtype is not None:
        runs["old_fp32"] = lambda: old_predict(model, tok, texts, args.batch_size, None)
    real = int(widths.sum())
    results: dict[str, Any] = {}
    for name, seconds in best_times(runs, device, args.repeats).items():
        executed, useful = flops(widths, plans[name], p_ne, layers, hidden)
        padded = padded_tokens(widths, plans[name])
        tflops = executed / seconds / 1e12
        results[name] = {
            "seconds": sig(seconds),
            "batches": len(plans[name]),
            "padded_tokens": padded,
            "padding_fraction": sig(1 - real / padded),
            "tokens_per_s": sig(real / seconds),
            "padded_tokens_per_s": sig(padded / seconds),
            "executed_tflop": sig(executed / 1e12),
            "achieved_tflops": sig(tflops),
            "mfu": sig(tflops / args.peak_tflops),
            "mfu_useful": sig(useful / seconds / 1e12 / args.peak_tflops),
        }
    for name in list(results):
        results[name]["floor_over_this"] = sig(results["floor"]["seconds"] / results[name]["seconds"])

    # where the new path's time goes, each stage timed alone
    host: list[dict[str, torch.Tensor]] = []

    def bucket_and_collate() -> None:
        host[:] = [collate(enc, b, pad_id, pin=cuda) for b in plan_batches(widths, args.batch_size)]

    stages = {
        "tokenise": lambda: tokenise_all(tok, texts, None, None, args.max_length),
        "bucket_and_collate": bucket_and_collate,
        "h2d_transfer": lambda: [v.to(device, non_blocking=cuda) for h in host for v in h.values()],
        "forward": floor,
    }
    breakdown = best_times(stages, device, args.repeats)
    breakdown["other"] = max(0.0, results["new"]["seconds"] - sum(breakdown.values()))
    total = sum(breakdown.values())
    new_p = model.predict_proba(tok, texts, batch_size=args.batch_size, precision=precision)
    old_p = old_predict(model, tok, texts, args.batch_size, dtype)
    best_floor = min((k for k in results if k.startswith("floor")), key=lambda k: results[k]["seconds"])
    report = {
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "tokenizers_parallelism": os.environ.get("TOKENIZERS_PARALLELISM", "unset"),
        "precision": precision,
        "attention": attention_implementation(model),
        "data": source,
        "n": len(texts),
        "shape": {
            "layers": layers,
            "hidden": hidden,
            "heads": heads,
            "ffn": args.ffn or 4 * hidden,
            "vocab": model.encoder.config.vocab_size,
            "max_length": args.max_length,
        },
        "params": sum(p.numel() for p in model.parameters()),
        "params_non_embedding": p_ne,
        "tokens": {
            "real": real,
            "mean": sig(real / max(1, len(texts))),
            "truncated_fraction": sig(float((widths[:, 0] >= args.max_length).mean())),
        },
        "batch_size": args.batch_size,
        "max_tokens": max_tokens,
        "peak_tflops": args.peak_tflops,
        "setup_seconds": sig(setup_s),
        "results": results,
        "breakdown_seconds": {k: sig(v) for k, v in breakdown.items()},
        "breakdown_fraction": {k: sig(v / total) for k, v in breakdown.items()},
        "holds_back": {  # what separates ``new`` from the best forward-only floor
            "best_floor": best_floor,
            "best_floor_mfu": results[best_floor]["mfu"],
            "new_seconds_over_best_floor": sig(results["new"]["seconds"] / results[best_floor]["seconds"]),
            "batch_size_floor_over_best": sig(results["floor"]["seconds"] / results[best_floor]["seconds"]),
            "tokenise_share_of_new": sig(breakdown["tokenise"] / results["new"]["seconds"]),
            "h2d_share_of_new": sig(breakdown["h2d_transfer"] / results["new"]["seconds"]),
            "collate_share_of_new": sig(breakdown["bucket_and_collate"] / results["new"]["seconds"]),
            "padding_fraction_new": results["new"]["padding_fraction"],
        },
        "speedup_new_over_old": sig(results["old"]["seconds"] / results["new"]["seconds"]),
        "new_vs_old_max_abs_prob_diff": sig(float(np.abs(new_p - old_p).max())),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
