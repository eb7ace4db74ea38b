"""Deviation-search cost benchmark (issue 43, part 6): what one *paired query* costs inside
the search, against the floor and against a naive loop.

A paired query runs one equivalent variant through both the teacher and the student
(DFLARE, Tian et al., TOSEM 2023; DiffChaser, Xie et al., ASE 2019). The search
(:func:`mlflow_metacompress.attacks.deviation.find_deviations`, DFLARE, ``batch=4``) batches
the variants it proposes and caches every text it has seen per model, so it forwards each
distinct text once. Three costs per distinct text, side by side in one run:

- **search**: the search's wall time (proposing and checking variants with tree-sitter,
  Metropolis–Hastings bookkeeping, both models, verification) / texts forwarded;
- **floor**: the raw batched forward pass of both models over the *same* texts (batches of
  64, sorted by length, no search) / texts — no search can cost less per query;
- **naive**: the same texts, one row per model call (a per-variant loop, no batching) / texts.

The models are built here, no download: a teacher-shaped ``CodeClassifier`` (hidden 256,
4 layers, 256 tokens) and a student (hidden 64, 2 layers), randomly initialised, heads
shifted so about half the rows start in agreement near the boundary, on synthetic C functions.
torch runs on one thread.

Measured once on the project machine (AMD EPYC, AVX2 only, 2 cores shared with two
teacher-training jobs running in the background, so absolute times are noisy), 40 rows,
30 paired queries per row::

    texts forwarded 148 (40 originals + 108 variants/verification), deviations 20 of 20 agreeing
    per text:  search 22.84 ms | floor 21.07 ms | naive 54.31 ms
    ratios:    search/floor 1.08 | naive/floor 2.58 | model time inside the search / floor 0.99

The target (search ≤ 1.3× the floor) holds: what the search adds over the floor is variant
generation and bookkeeping (about 8%); the naive loop pays the per-call overhead on every row.
These random models disagree easily (every agreeing row deviated within a few variants), so
the run is short; harder pairs run longer searches made of the same parts.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_deviation_cost.py --rows 40 --queries 30
"""

from __future__ import annotations

import argparse
import logging
import time

logger = logging.getLogger("bench_deviation_cost")


def _synthetic(n: int) -> list[str]:
    names = ["count", "total", "idx", "buf", "len", "acc", "tmp", "key", "value", "ptr", "size", "pos"]
    out = []
    for i in range(n):
        a, b, c = names[i % 12], names[(i * 5 + 1) % 12], names[(i * 7 + 3) % 12]
        b = "other" if a == b else b
        out.append(
            f"int f{i}(int *{a}, int {b}) {{\n  int {c}_{i} = 0;\n"
            f"  for (int k = 0; k < {b}; k++) {{\n    if ({a}[k] > {i % 5}) {{\n"
            f"      {c}_{i} += {a}[k] * {i % 7 + 1};\n"
            f"    }} else {{\n      {c}_{i} -= 1;\n    }}\n  }}\n  return {c}_{i};\n}}\n"
        )
    return out


def _model(tok, codes, hidden: int, layers: int, seed: int, max_length: int):  # noqa: ANN001, ANN202
    import numpy as np
    import torch

    from mlflow_metacompress.models.classifier import CodeClassifier

    torch.manual_seed(seed)
    model = CodeClassifier.from_config(
        len(tok),
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=2 * hidden,
        max_length=max_length,
        pad_token_id=tok.pad_token_id,
    ).eval()
    margin = np.diff(model.predict_logits(tok, codes), axis=1)[:, 0]
    with torch.no_grad():  # near the boundary: about half the rows on each side
        model.head.out_proj.bias[1] -= float(np.median(margin))
    return model


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=40)
    p.add_argument("--queries", type=int, default=30)
    p.add_argument("--max-length", type=int, default=256)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("mlflow_metacompress").setLevel(logging.ERROR)

    import pandas as pd
    import torch

    from mlflow_metacompress.attacks.deviation import find_deviations
    from mlflow_metacompress.models.tokenizer import train_tokenizer

    torch.set_num_threads(1)
    codes = _synthetic(args.rows)
    tok = train_tokenizer(codes * 3, vocab_size=800)
    teacher = _model(tok, codes, 256, 4, 0, args.max_length)
    student = _model(tok, codes, 64, 2, 1, args.max_length)
    seen: list[str] = []
    inside = [0.0]

    def wrap(model, record: bool):  # noqa: ANN001, ANN202
        def predict(frame: pd.DataFrame):  # noqa: ANN202
            t0 = time.perf_counter()
            texts = frame["func"].tolist()
            out = model.predict_proba(tok, texts, batch_size=64)
            inside[0] += time.perf_counter() - t0
            if record:
                seen.extend(texts)
            return out

        return predict

    frame = pd.DataFrame({"func": codes})
    t0 = time.perf_counter()
    out = find_deviations(
        wrap(teacher, True), wrap(student, False), frame, ["func"], "c", queries=args.queries, search="dflare"
    )
    t_search = time.perf_counter() - t0
    n = len(seen)

    def floor() -> float:
        t = time.perf_counter()
        for model in (teacher, student):
            model.predict_proba(tok, seen, batch_size=64)
        return time.perf_counter() - t

    def naive() -> float:
        t = time.perf_counter()
        for text in seen:
            for model in (teacher, student):
                model.predict_proba(tok, [text], batch_size=1)
        return time.perf_counter() - t

    t_floor = min(floor() for _ in range(3))
    t_naive = naive()
    agreeing = sum(r.agreed_at_start for r in out)
    logger.info(
        "texts forwarded %d (%d originals + %d variants/verification), deviations %d of %d agreeing",
        n,
        len(codes),
        n - len(codes),
        sum(r.found for r in out),
        agreeing,
    )
    logger.info(
        "per text:  search %.2f ms | floor %.2f ms | naive %.2f ms",
        1e3 * t_search / n,
        1e3 * t_floor / n,
        1e3 * t_naive / n,
    )
    logger.info(
        "ratios:    search/floor %.2f | naive/floor %.2f | model time inside the search / floor %.2f",
        t_search / t_floor,
        t_naive / t_floor,
        inside[0] / t_floor,
    )


if __name__ == "__main__":
    main()
