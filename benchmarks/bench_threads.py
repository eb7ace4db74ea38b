"""Threads that fit the machine (issue 22): torch's thread count, idle and beside busy CPUs.

Part (a), always: the quick profile's teacher and a quick-sized student, side by side in
one process, at 1 thread, 2 threads and the default of :mod:`mlflow_metacompress.threads`
(the cores less one), first on an idle machine and then beside ``--busy`` (default 2)
busy-loop processes (bounded in time, killed at the end). It prints, per setting:

- seconds per training step of the teacher (batch 16, length 128: tokenising, forward,
  backward and AdamW, as Lightning's loop does them, without Lightning's bookkeeping);
- inference throughput (rows/s) of the teacher and the student, and their ratio (the
  speedup a speed tag or ``student_speedup`` would report);
- the ratio of each setting's step time to the default's, and busy to idle.

A last row repeats the default setting with Hugging Face tokenizers' own thread pool on
(``TOKENIZERS_PARALLELISM=true``) to show what turning it off buys.

Part (b), with ``--main-job``: the quick main job (``python recipes/main.py``, the
MLproject's ``main`` command, against a temporary sqlite store) idle and beside the busy
processes, reporting wall times, their ratio (goal: busy ≤ 2× idle) and, from the stage
lines, how far the remaining-time estimate was from the truth at each stage's start.

The load average (``os.getloadavg()``) is printed before each measurement: on a shared
machine the "idle" rows are only as idle as the machine was.

    OMP_NUM_THREADS=1 python benchmarks/bench_threads.py --out /tmp/threads.json
    python benchmarks/bench_threads.py --skip-micro --main-job --out /tmp/threads-job.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _spin(deadline: float) -> None:
    """A busy loop until ``deadline`` (time.time()), in a child process."""
    x = 0
    while time.time() < deadline:
        x += 1


@contextmanager
def busy(n: int, seconds: float) -> Iterator[list[int]]:
    """``n`` busy-loop processes for at most ``seconds``, killed when the block ends."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_spin, args=(time.time() + seconds,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let them reach the loop
    try:
        yield [p.pid for p in procs if p.pid is not None]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(5)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ----------------------------------------------------------------------------- part (a)
def _setup(rows: int, seed: int = 0) -> dict:
    import torch

    from mlflow_metacompress.data.generators import make_splits
    from mlflow_metacompress.distill.arch import ArchSpec
    from mlflow_metacompress.models.tokenizer import train_tokenizer
    from mlflow_metacompress.profiles import get_profile

    quick = get_profile("quick")
    frame = make_splits("vulnerability", rows, seed)["train"]
    texts = frame["func"].astype(str).tolist()
    labels = torch.tensor(frame["target"].astype(int).to_numpy())
    tok = train_tokenizer(
        texts, vocab_size=quick.teacher_arch["vocab_size"], kind="bpe", model_max_length=quick.max_length
    )
    torch.manual_seed(seed)
    teacher = ArchSpec(**{**quick.teacher_arch, "vocab_size": len(tok)}, max_length=quick.max_length).build(["0", "1"])
    student = ArchSpec(
        vocab_size=len(tok),
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=128,
        max_length=quick.max_length,
    ).build(["0", "1"])
    return {
        "texts": texts,
        "labels": labels,
        "tok": tok,
        "teacher": teacher,
        "student": student,
        "batch": quick.batch_size,
        "profile_teacher": quick.teacher_arch,
    }


def step_seconds(s: dict, steps: int) -> float:
    """Median seconds of a training step of the teacher (tokenise, forward, backward, AdamW)."""
    import torch

    from mlflow_metacompress.distill.losses import hard_label_loss

    model, tok, b = s["teacher"], s["tok"], s["batch"]
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    times = []
    n = len(s["texts"])
    for i in range(steps + 2):  # two warm-up steps
        start = (i * b) % max(1, n - b)
        t = time.perf_counter()
        enc = model.encode(tok, s["texts"][start : start + b])
        logits = model(**enc)[0]
        loss = hard_label_loss(logits, s["labels"][start : start + b])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def throughput(s: dict, which: str, rows: int, repeats: int = 3) -> float:
    """Best rows/s of ``which`` predicting ``rows`` rows in batches of 64."""
    model = s[which]
    model.eval()
    texts = (s["texts"] * (rows // len(s["texts"]) + 1))[:rows]
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        model.predict_proba(s["tok"], texts, batch_size=64)
        best = min(best, time.perf_counter() - t)
    return rows / best


def measure_settings(s: dict, settings: list[tuple[str, int, bool]], steps: int, rows: int) -> list[dict]:
    from mlflow_metacompress.threads import using

    out = []
    for label, threads, tok_parallel in settings:
        before = os.environ.get("TOKENIZERS_PARALLELISM")
        os.environ["TOKENIZERS_PARALLELISM"] = "true" if tok_parallel else "false"
        try:
            with using(threads) as n:
                row = {
                    "setting": label,
                    "threads": n,
                    "tokenizers_parallel": tok_parallel,
                    "load": load(),
                    "step_s": step_seconds(s, steps),
                    "teacher_rows_s": throughput(s, "teacher", rows),
                    "student_rows_s": throughput(s, "student", rows),
                }
        finally:
            if before is None:
                os.environ.pop("TOKENIZERS_PARALLELISM", None)
            else:
                os.environ["TOKENIZERS_PARALLELISM"] = before
        row["speedup"] = row["student_rows_s"] / row["teacher_rows_s"]
        print(
            f"  {label:<28} threads {n}  step {row['step_s']:.3f} s  teacher {row['teacher_rows_s']:7.1f} rows/s  "
            f"student {row['student_rows_s']:7.1f} rows/s  speedup {row['speedup']:.2f}×  load {row['load']}",
            flush=True,
        )
        out.append(row)
    return out


def part_a(args: argparse.Namespace) -> dict:
    import torch

    from mlflow_metacompress.threads import available_cores, default_threads

    s = _setup(args.rows)
    default = default_threads()
    settings = [
        ("1 thread", 1, False),
        ("2 threads", 2, False),
        (f"default ({default})", default, False),
        (f"default ({default}) + tokenizers pool", default, True),
    ]
    print(
        f"(a) torch {torch.__version__}, {available_cores()} core(s), default {default} thread(s); "
        f"teacher {s['profile_teacher']}, batch {s['batch']}",
        flush=True,
    )
    result: dict = {"cores": available_cores(), "default_threads": default, "conditions": {}}
    print(f"idle (load {load()})", flush=True)
    result["conditions"]["idle"] = measure_settings(s, settings, args.steps, args.infer_rows)
    print(f"beside {args.busy} busy process(es) (load {load()})", flush=True)
    with busy(args.busy, args.busy_seconds):
        result["conditions"]["busy"] = measure_settings(s, settings, args.steps, args.infer_rows)
    print("\nratios (step time of the setting ÷ the default's, same condition; busy ÷ idle, same setting)")
    print(f"  {'setting':<28} {'idle':>8} {'busy':>8} {'busy/idle':>10}")
    for i, (label, _, _) in enumerate(settings):
        idle, hot = result["conditions"]["idle"][i], result["conditions"]["busy"][i]
        ref_i, ref_b = result["conditions"]["idle"][2]["step_s"], result["conditions"]["busy"][2]["step_s"]
        print(
            f"  {label:<28} {idle['step_s'] / ref_i:8.2f} {hot['step_s'] / ref_b:8.2f} "
            f"{hot['step_s'] / idle['step_s']:10.2f}"
        )
    return result


# ----------------------------------------------------------------------------- part (b)
STAGE = re.compile(
    r"stage (\d+)/(\d+) (.+?): (started|done in (\d+):(\d\d):(\d\d)) · elapsed (\d+):(\d\d):(\d\d) · "
    r"remaining (~(\d+):(\d\d):(\d\d)|estimated after the first stage)"
)


def _s(h: str, m: str, s: str) -> int:
    return int(h) * 3600 + int(m) * 60 + int(s)


def estimate_errors(log: str) -> list[dict]:
    """At each stage's start: the estimated and the true remaining time (to the last
    stage's end) and the relative error, from the pipeline's stage lines."""
    starts, end = [], None
    for m in STAGE.finditer(log):
        elapsed = _s(m[8], m[9], m[10])
        estimate = _s(m[12], m[13], m[14]) if m[12] else None
        if m[4] == "started":
            starts.append({"stage": int(m[1]), "label": m[3], "elapsed_s": elapsed, "estimate_s": estimate})
        else:
            end = elapsed
    for row in starts:
        row["true_s"] = None if end is None else end - row["elapsed_s"]
        ok = row["estimate_s"] is not None and row["true_s"]
        row["error"] = round(row["estimate_s"] / row["true_s"] - 1, 3) if ok else None
    return starts


def run_main_job(workdir: Path, threads: str, profile: str, methods: str | None) -> dict:
    # the job's own thread policy decides: no inherited thread limits
    drop = (
        "MLFLOW_RUN_ID",
        "MLFLOW_TRACKING_URI",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "METACOMPRESS_THREADS",
        "TOKENIZERS_PARALLELISM",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        MLFLOW_TRACKING_URI=f"sqlite:///{workdir / 'mlflow.db'}",
        METACOMPRESS_CACHE_DIR=str(workdir / "cache"),
        HF_HUB_OFFLINE="1",
        PYTHONPATH=f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}",
    )
    cmd = [
        sys.executable,
        str(ROOT / "recipes" / "main.py"),
        "--progress",
        "false",
        "--profile",
        profile,
        "--threads",
        threads,
    ] + (["--methods", methods] if methods else [])
    before = load()
    t = time.perf_counter()
    log = workdir / "main.log"  # written as the job runs: follow it with tail -f
    with log.open("w") as out:
        proc = subprocess.run(cmd, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    wall = time.perf_counter() - t
    errors = estimate_errors(log.read_text())
    late = [e["error"] for e in errors if e["stage"] >= 3 and e["error"] is not None]
    return {
        "wall_s": round(wall, 1),
        "rc": proc.returncode,
        "load_before": before,
        "load_after": load(),
        "estimates": errors,
        "max_abs_error_from_stage_3": max((abs(e) for e in late), default=None),
        "log": str(workdir / "main.log"),
    }


def part_b(args: argparse.Namespace) -> dict:
    result: dict = {}
    for condition in ("idle", "busy"):
        workdir = Path(tempfile.mkdtemp(prefix=f"bench-threads-{condition}-"))
        print(f"(b) main job, {condition}, threads {args.main_threads} (load {load()}) in {workdir}", flush=True)
        if condition == "busy":
            with busy(args.busy, args.busy_seconds):
                result[condition] = run_main_job(workdir, args.main_threads, args.profile, args.methods)
        else:
            result[condition] = run_main_job(workdir, args.main_threads, args.profile, args.methods)
        r = result[condition]
        print(
            f"  wall {r['wall_s']:.0f} s, exit {r['rc']}, load before {r['load_before']} after {r['load_after']}; "
            f"largest estimate error from stage 3 on: {r['max_abs_error_from_stage_3']}",
            flush=True,
        )
        for e in r["estimates"]:
            print(
                f"    stage {e['stage']:>2} {e['label']:<22} estimate {e['estimate_s']} s, true {e['true_s']} s, "
                f"error {e['error']}"
            )
    result["busy_over_idle"] = round(result["busy"]["wall_s"] / result["idle"]["wall_s"], 2)
    print(f"  busy / idle wall time: {result['busy_over_idle']:.2f} (goal ≤ 2)")
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the measurement")
    p.add_argument("--busy-seconds", type=float, default=3600, help="the busy processes stop by themselves after this")
    p.add_argument("--rows", type=int, default=400, help="generated training rows for part (a)")
    p.add_argument("--steps", type=int, default=20, help="training steps timed per setting (median)")
    p.add_argument("--infer-rows", type=int, default=256, help="rows predicted per throughput measurement")
    p.add_argument("--skip-micro", action="store_true", help="skip part (a)")
    p.add_argument("--main-job", action="store_true", help="also run part (b): the quick main job idle and busy")
    p.add_argument("--main-threads", default="auto", help="--threads of the main job in part (b)")
    p.add_argument("--profile", default="quick")
    p.add_argument("--methods", default=None, help="the main job's --methods (default: its own)")
    p.add_argument("--out", default=None, help="write the results as JSON here")
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    out: dict = {"load_at_start": load(), "cpu_count": os.cpu_count()}
    if not args.skip_micro:
        out["micro"] = part_a(args)
    if args.main_job:
        out["main_job"] = part_b(args)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
