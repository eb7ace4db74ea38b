"""Student/teacher inference speedup at the scale of the Compressor paper.

Compressor (Shi et al., ASE 2022) reports a 4.31× CPU inference speedup for a 3 MB student
of CodeBERT (481 MB). Speed does not depend on the weights, so this benchmark builds a
CodeBERT-base-shaped teacher (12 × 768, FFN 3072, vocabulary 50,265) and the students
our searches choose for a 3 MB target (randomly initialised): Compressor's GA with the
published objective (``paper``) and with the default ``latency`` objective (this
machine's measured latency model, :mod:`mlflow_metacompress.distill.latency`), the
teacher-shaped student (the latency budget's reference and the searches' fallback), and
optionally the students of a ``bench_distill.py`` report (``--students-json``, e.g.
AVATAR's). It tokenises the same Devign functions once and times the forward passes
side by side, alternating models, best of ``--repeats``, on the inference threads
(:func:`~mlflow_metacompress.distill.latency.timing_threads`: ``$METACOMPRESS_THREADS``,
else the cores less one; the count is printed), and prints per-sample
latency and the speedup over the teacher for every model.
Usage: ``nice -n 5 python benchmarks/bench_speedup.py [--n 32] [--max-length 256]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.latency import latency_model, timing_threads
from mlflow_metacompress.distill.search.compressor_search import search_architecture
from mlflow_metacompress.distill.search.objective import latency_budget

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "devign"
CODEBERT = ArchSpec(
    vocab_size=50265, num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072
)


def token_lengths(n: int, max_length: int) -> list[int]:
    """Token counts of real Devign functions (or a spread of lengths without the data)."""
    if (SHARED / "test.jsonl").exists():
        from mlflow_metacompress.data.codexglue import load_devign
        from mlflow_metacompress.models.tokenizer import train_tokenizer

        codes = load_devign(SHARED, "test")["func"].head(n).tolist()
        tok = train_tokenizer(codes, vocab_size=4000)
        return [min(len(tok(c)["input_ids"]), max_length) for c in codes]
    return [32 + (i * 37) % (max_length - 32) for i in range(n)]


@torch.no_grad()
def forward_time(model: torch.nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    t0 = time.perf_counter()
    for ids, mask in batches:
        model(input_ids=ids, attention_mask=mask)
    return time.perf_counter() - t0


def make_batches(lengths: list[int], vocab: int, batch_size: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    order = sorted(lengths)
    out = []
    for s in range(0, len(order), batch_size):
        chunk = order[s : s + batch_size]
        ids = torch.randint(5, vocab, (len(chunk), max(chunk)), generator=g)
        mask = torch.zeros_like(ids)
        for i, n in enumerate(chunk):
            mask[i, :n] = 1
        out.append((ids, mask))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--size-mb", type=float, default=3.0)
    ap.add_argument("--students-json", default=None, help="a bench_distill.py --out report: add its students' shapes")
    args = ap.parse_args()
    torch.manual_seed(0)
    lengths = token_lengths(args.n, args.max_length)
    base = ArchSpec(max_length=args.max_length)
    lat = latency_model(args.max_length, args.batch_size)
    budget, reference = latency_budget(lat, args.size_mb, max_length=args.max_length)
    students = {
        "compressor GA, paper": search_architecture(args.size_mb, seed=0, base=base, progress=False).best,
        "compressor GA, latency": search_architecture(
            args.size_mb,
            seed=0,
            base=base,
            progress=False,
            objective="latency",
            latency=lat,
            latency_budget_ms=budget,
            seeds=(reference,) if reference else (),
        ).best,
    }
    if reference is not None:
        students["teacher-shaped"] = reference
    if args.students_json:
        import json

        for name, row in json.loads(Path(args.students_json).read_text())["models"].items():
            if row.get("arch"):
                fields = {k: v for k, v in row["arch"].items() if k in ArchSpec.__dataclass_fields__}
                students[f"{name} (bench_distill)"] = ArchSpec(**{**fields, "max_length": args.max_length})
    models = {"teacher (CodeBERT shape)": CODEBERT, **students}
    built = {name: spec.build().eval() for name, spec in models.items()}
    batches = {name: make_batches(lengths, spec.vocab_size, args.batch_size) for name, spec in models.items()}
    best = {name: float("inf") for name in models}
    with timing_threads() as threads:
        for _ in range(args.repeats):
            for name in models:
                best[name] = min(best[name], forward_time(built[name].encoder, batches[name]))
    teacher = "teacher (CodeBERT shape)"
    print(
        f"{len(lengths)} Devign functions, max length {args.max_length}, batch {args.batch_size}, "
        f"best of {args.repeats}, {threads} thread(s)"
    )
    print(f"{'model':<40} {'MB':>8} {'GFLOPs':>8} {'ms/sample':>10} {'predicted':>10} {'speedup':>8}")
    for name, spec in models.items():
        ms = 1000 * best[name] / len(lengths)
        print(
            f"{name:<40} {spec.size_mb():>8.2f} {spec.gflops():>8.2f} {ms:>10.2f} {lat.predict_ms(spec):>10.2f} "
            f"{best[teacher] / best[name]:>7.2f}×"
        )
    for name, spec in students.items():
        print(f"{name}: {spec.to_dict()}")
    print("Compressor (Shi et al., ASE 2022) reports 4.31× for its 3 MB CodeBERT student.")


if __name__ == "__main__":
    main()
