"""``bench_distill.py --steps``: what each "no wasted work" change of issue 31 saves, as a
ratio of training-step times measured side by side in one process.

A KD student step (forward, KD loss at T = 1, backward, AdamW) on real code rows, the
batch's preparation included, in these pairs (before / after):

- ``teacher_logits``: the teacher run on every batch (no grad) / its logits read from the
  cache (:mod:`mlflow_metacompress.distill.soft_labels`, the way distillation works);
- ``tokenisation``: every batch tokenised by the model's ``encode`` (each epoch) / rows
  tokenised once per fit and only padded per batch (:mod:`mlflow_metacompress.distill.batches`);
- ``length_grouping``: shuffled batches / batches grouped by length in a seeded order
  (same rows; the padding shares are reported too);
- ``threads``: 1 thread / 2 threads, with what ``threads="auto"`` picks right now.

The variants of a pair alternate in ``rounds`` rounds of ``steps`` steps and the median
per-step time is kept, so both see the same machine load; on a shared machine the ratios
are noisy, and the report says what the load was.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any


def _rows(data_dir: str | None, n: int) -> tuple[list[str], Any]:
    """``n`` Devign functions (the shared data) or generated vulnerability rows, and labels."""
    import numpy as np

    from mlflow_metacompress.data.sampling import cap_rows

    if data_dir and os.path.isdir(os.path.join(data_dir, "devign")):
        from mlflow_metacompress.data import load_task

        df = cap_rows(load_task("devign", "train", data_dir), n, "target", 0)
        return [str(x) for x in df["func"]], df["target"].to_numpy(np.int64)
    from mlflow_metacompress.pipeline.data import load_task_data
    from mlflow_metacompress.profiles import get_profile

    data = load_task_data("vulnerability", None, get_profile("quick", "vulnerability"), 0)
    df = data.frames["train"].head(n)
    return [str(x) for x in df[data.code_columns[0]]], df[data.label_column].to_numpy(np.int64)


def _timed(step: Callable[[], None], steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def _side_by_side(variants: dict[str, Callable[[], None]], steps: int, rounds: int) -> dict[str, float]:
    """Median seconds per step of each variant, the variants alternating round by round."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for step in variants.values():  # warm-up
        step()
    for _ in range(rounds):
        for name, step in variants.items():
            times[name].append(_timed(step, steps))
    return {name: statistics.median(v) for name, v in times.items()}


def step_ratios(
    data_dir: str | None = None, rows: int = 512, max_length: int = 256, steps: int = 6, rounds: int = 3
) -> dict[str, Any]:
    import numpy as np
    import torch

    from mlflow_metacompress.distill.batches import TokenisedCollator, TokenisedRows, length_grouped_batches
    from mlflow_metacompress.distill.batches import padded_share as share
    from mlflow_metacompress.distill.datasets import CodeExamples, Collator
    from mlflow_metacompress.distill.losses import kd_loss
    from mlflow_metacompress.models.classifier import CodeClassifier
    from mlflow_metacompress.models.tokenizer import train_tokenizer
    from mlflow_metacompress.threads import busy_cores, default_threads

    torch.set_num_threads(1)
    texts, labels = _rows(data_dir, rows)
    tok = train_tokenizer(texts, vocab_size=8000, kind="bpe", model_max_length=max_length)
    torch.manual_seed(0)
    teacher = CodeClassifier.from_config(
        len(tok), hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024,
        max_length=max_length, pad_token_id=tok.pad_token_id,
    ).eval()  # fmt: skip
    student = CodeClassifier.from_config(
        len(tok), hidden_size=96, num_hidden_layers=3, num_attention_heads=3, intermediate_size=384,
        max_length=max_length, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    logits = np.random.default_rng(0).normal(size=(len(texts), 2)).astype(np.float32)
    data = CodeExamples(texts, None, labels, logits)
    opt = torch.optim.AdamW(student.parameters(), lr=1e-4)
    fresh = Collator(functools.partial(student.encode, tok))
    tokenised = TokenisedRows(data, tok, None, max_length)
    once = TokenisedCollator(tokenised, tok.pad_token_id)
    bs = 16
    plain = length_grouped_batches(tokenised.lengths, bs, 0, seed=0, epoch=0)
    grouped = length_grouped_batches(tokenised.lengths, bs, 16, seed=0, epoch=0)

    def cycle(batches: list[Any]) -> Iterator[Any]:
        while True:
            yield from batches

    def stepper(batches: list[Any], collate: Any, run_teacher: bool = False) -> Callable[[], None]:
        source = cycle(batches)

        def step() -> None:
            b = next(source)
            batch = collate([tokenised[int(i)] for i in b] if collate is once else [data[int(i)] for i in b])
            inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}
            if run_teacher:
                with torch.inference_mode():
                    target = teacher(**inputs)[0].log_softmax(-1)
                target = target.clone()
            else:
                target = batch["teacher_logits"]
            loss = kd_loss(student(**inputs)[0], target, 1.0)
            opt.zero_grad()
            loss.backward()
            opt.step()

        return step

    def pair(before: Callable[[], None], after: Callable[[], None]) -> dict[str, float]:
        t = _side_by_side({"before": before, "after": after}, steps, rounds)
        return {"before_s": round(t["before"], 4), "after_s": round(t["after"], 4), "ratio": t["before"] / t["after"]}

    load_before = os.getloadavg()
    report: dict[str, Any] = {
        "rows": len(texts),
        "batch_size": bs,
        "max_length": max_length,
        "teacher_logits": pair(stepper(grouped, once, run_teacher=True), stepper(grouped, once)),
        "tokenisation": pair(stepper(grouped, fresh), stepper(grouped, once)),
        "length_grouping": pair(stepper(plain, once), stepper(grouped, once)),
        "padding_share": {"shuffled": share(tokenised.lengths, plain), "grouped": share(tokenised.lengths, grouped)},
    }

    def on(threads: int, step: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            torch.set_num_threads(threads)
            step()

        return run

    report["threads"] = pair(on(1, stepper(grouped, once)), on(2, stepper(grouped, once)))
    torch.set_num_threads(1)
    busy = busy_cores(fresh=True)
    report["threads"]["auto_now"] = {"busy_cores": round(busy, 2), "threads": default_threads(1, busy=busy)}
    report["load_average"] = {"before": load_before, "after": os.getloadavg()}
    return report


def print_table(report: dict[str, Any]) -> None:
    print(f"\n{'change':<18} {'before s/step':>13} {'after s/step':>13} {'ratio':>7}")
    for name in ("teacher_logits", "tokenisation", "length_grouping", "threads"):
        r = report[name]
        print(f"{name:<18} {r['before_s']:>13.4f} {r['after_s']:>13.4f} {r['ratio']:>6.2f}×")
    pad = report["padding_share"]
    auto = report["threads"]["auto_now"]
    print(f"padding: {pad['shuffled']:.1%} shuffled, {pad['grouped']:.1%} grouped; threads=auto now: {auto}")
