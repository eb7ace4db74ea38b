"""The work each pipeline stage is budgeted, from the profile, in one unit: the
teacher's training step (:class:`StageWork`).

The remaining-time estimate (:class:`~.progress.StageClock`) multiplies each pending
stage's work by the seconds per unit measured on the finished stages of its kind
(teacher, distill, gate), or on the teacher for a kind not seen yet. Stages differ
tenfold in cost: the quick profile's teacher trains for hundreds of steps, a gate only
predicts, and ``quantize`` trains nothing. Copying the teacher's time to every stage
said 1 h 44 min where 18 minutes remained (issue 22); the budgets below make the
estimate follow each stage's own size.

Work counted per stage, in teacher steps of ``batch_size`` rows:

- **teacher**: ``teacher_epochs × ⌈labelled rows / batch⌉`` steps (``max_steps`` caps
  them), plus the forward passes of validation (each epoch) and the test split;
- **distill** (method ``m``): ``epochs_for(m) × ⌈unlabeled rows / batch⌉`` student steps
  (× ``1 + variants_per_step / 2`` for methods that also train on transformed variants;
  × ``1 + k`` for a method whose module says ``TRAINING_VARIANTS = k``, MORPH's 1, which
  trains on each row's variants too), each at :data:`STUDENT` the cost of a teacher step;
  the rows rewritten before training (MORPH's variants, and fidelity's one per
  transformation) at :data:`REWRITE` per batch, with the teacher's labels on each; the
  search probes (``probes × probe_steps`` steps, and ``probe_valid`` rows each), the
  test split, the speed timings, and, in the first distillation only, the teacher's soft
  labels on the unlabeled rows (cached afterwards); a method whose module says
  ``TRAINS = False`` (post-training quantization) or whose epochs are 0 trains nothing;
- **gate**: both models on ``eval_rows × (1 + transformations)`` rows and on the attack
  queries (``attack_max_samples × attack_budget`` per attack); the teacher only in the
  first gate (its predictions are cached for the others), which also pays
  :data:`FIRST_GATE` once.

A forward pass over ``r`` rows counts ``r / (3 × batch)`` steps (the backward pass costs
about twice the forward), a student's step or forward pass :data:`STUDENT` the teacher's
(``benchmarks/bench_threads.py`` measures 1.5–1.9× the teacher's throughput for a quick
student), an architecture search (a method with a ``population``) :data:`SEARCH` steps,
and every stage a fixed :data:`OVERHEAD` (loading, logging and registering models; for a
gate also rewriting code, bootstrap intervals, plots and the report).

The constants are fitted to two quick main jobs (1 thread, generated vulnerability data;
``tests/pipeline/test_pipeline_budget.py`` replays both): one on the idle 2-core machine with 24,000
rows (2026-12-01, 1,218 s: teacher 864 s, distillations 51-113 s, gates 3-8 s) and one from
a fresh clone with 48,000 rows beside another job (2026-12-02, 2,111 s: teacher 1,460 s,
distillations 22-220 s). MLflow's logging and registering take about 8 s a distillation
whatever the method (``quantize``, which trains nothing, took 11-22 s), hence
:data:`OVERHEAD`; rewriting a batch of rows costs a tenth of a teacher step (the
transformations run at ~600 rows/s, a teacher step takes ~0.2 s). Before, student steps were
priced as teacher steps, MORPH's and fidelity's rewritten variants were free and each kind's
rate was mixed with the teacher's: the estimate was +131% after the teacher and −60% near
the end. With the first fit (one job) the second job's estimate was +73% at its third
stage; with these constants both jobs are within ±28% of the truth at every stage's start
from the third on, and a third job (200 judged rows, 1,661 s) within −26% … +5%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..profiles import Profile

FORWARD = 1.0 / 3.0  # a forward pass's share of a training step on the same rows
STUDENT = 0.4  # a student's training step or forward pass, relative to the teacher's
# fixed work per stage, in teacher steps: loading, logging and registering models; a gate also
# rewrites code (tree-sitter), bootstraps intervals, draws plots and writes its report
OVERHEAD = {"teacher": 20.0, "distill": 150.0, "gate": 40.0}
FIRST_GATE = 160.0  # the first gate's one-time work: attacking the teacher (cached for the others), loading grammars
VARIANT = 0.5  # a training step's extra cost per transformed variant (fidelity: 1.5× a KD step, measured)
SEARCH = 300.0  # an architecture search (latency calibration, GA/NSGA generations), in teacher steps
REWRITE = 0.1  # rewriting a batch of rows (tree-sitter transformations), in teacher steps
SPEED_ROWS = 6 * 32  # rows each model predicts for the speed tags (warm-up + 5 rounds of 32)


@dataclass(frozen=True)
class StageWork:
    """One stage of the pipeline and its budgeted work in teacher steps."""

    kind: str  # teacher | distill | gate
    label: str
    work: float


def _steps(epochs: int, rows: int, batch: int, max_steps: int = -1) -> float:
    steps = max(epochs, 0) * math.ceil(max(rows, 0) / max(batch, 1))
    return float(min(steps, max_steps) if max_steps and max_steps > 0 else steps)


def _forward(rows: float, batch: int) -> float:
    return FORWARD * rows / max(batch, 1)


def _declared(method: str, attribute: str, default: Any) -> Any:
    """``attribute`` of the discovered method ``method``; ``default`` for an unknown name."""
    from ..distill.discovery import get_method

    try:
        return getattr(get_method(method), attribute)
    except ValueError:
        return default


def trains(method: str) -> bool:
    """False for a method whose module declares ``TRAINS = False`` (e.g. post-training
    quantization); True for every other method, and for a name not discovered."""
    return bool(_declared(method, "trains", True))


def training_variants(method: str) -> int:
    """Metamorphic variants per unlabeled row that a method adds to its training set (its
    module's ``TRAINING_VARIANTS``: MORPH's 1); 0 for every other method and unknown names."""
    return int(_declared(method, "training_variants", 0))


def teacher_work(profile: Profile, sizes: dict[str, int]) -> float:
    labelled = sizes.get("train", 0) // 2
    steps = _steps(profile.teacher_epochs, labelled, profile.batch_size, profile.max_steps)
    epochs_run = min(profile.teacher_epochs, math.ceil(steps / max(1, math.ceil(labelled / profile.batch_size))))
    rows = epochs_run * sizes.get("valid", 0) + sizes.get("test", 0)
    return steps + _forward(rows, profile.batch_size) + OVERHEAD["teacher"]


def _variant_sources(options: dict[str, Any], language: str) -> int:
    """How many transformations a method draws its per-step variants from: its
    ``transforms`` option, or every transformation of ``language`` when that is None
    (as :mod:`~mlflow_metacompress.distill.methods.fidelity` does)."""
    names = options.get("transforms")
    return _count_transforms("all" if names is None else names, language)


def _count_transforms(names: Any, language: str) -> int:
    """How many transformations ``names`` means: ``"all"`` every one for ``language``, one
    name, or a list of names."""
    if names == "all":
        from ..transforms import list_transforms

        return len(list_transforms(language))
    return 1 if isinstance(names, str) else len(list(names))


def distill_work(
    profile: Profile,
    sizes: dict[str, int],
    method: str,
    first: bool,
    training: bool = True,
    augments: int = 0,
    language: str = "c",
) -> float:
    b = profile.batch_size
    unlabeled = sizes.get("train", 0) - sizes.get("train", 0) // 2
    options = profile.options_for(method)
    epochs = profile.epochs_for(method) if training else 0
    # rows rewritten before training: MORPH's training variants (``augments`` per row, trained
    # on like originals) and the variants a method draws from per step (fidelity: one per
    # transformation); the teacher labels every one
    per_step = int(options.get("variants_per_step", 0))
    rewritten = unlabeled * (augments + (_variant_sources(options, language) if per_step and training else 0))
    steps = _steps(epochs, unlabeled * (1 + augments), b, profile.max_steps) * (1 + VARIANT * per_step)
    probes = int(options.get("probes", 0))
    if training:
        steps += probes * int(options.get("probe_steps", 0)) + (SEARCH if "population" in options else 0.0)
    student_rows = (
        epochs * sizes.get("valid", 0) * (1 + augments)
        + probes * int(options.get("probe_valid", 0))
        + sizes.get("test", 0)
        + SPEED_ROWS
    )
    teacher_rows = SPEED_ROWS + (unlabeled if first else 0) + rewritten  # soft labels once, then cached
    rewrite = REWRITE * rewritten / max(b, 1)
    return STUDENT * steps + _forward(STUDENT * student_rows + teacher_rows, b) + rewrite + OVERHEAD["distill"]


def gate_work(profile: Profile, sizes: dict[str, int], transforms: int, first: bool) -> float:
    eval_rows = sizes.get("test", 0) if profile.eval_rows is None else min(profile.eval_rows, sizes.get("test", 0))
    attacked = eval_rows if profile.attack_max_samples is None else min(profile.attack_max_samples, eval_rows)
    per_model = eval_rows * (1 + transforms) + len(profile.attacks) * attacked * profile.attack_budget
    once = FIRST_GATE if first else 0.0
    return _forward(per_model * (STUDENT + (1 if first else 0)), profile.batch_size) + OVERHEAD["gate"] + once


def pipeline_work(
    profile: Profile,
    methods: Sequence[str],
    sizes: dict[str, int],
    transforms: int,
    training: dict[str, bool] | None = None,
    augments: dict[str, int] | None = None,
    language: str = "c",
) -> list[StageWork]:
    """Every stage of a pipeline run (teacher, then distill and gate per method) with its
    budgeted work; ``transforms``: the transformations each gate runs; ``training``:
    which methods train (default: :func:`trains`); ``language``: the code's language
    (a method's ``transforms=None`` means each of its transformations)."""
    training = training if training is not None else {m: trains(m) for m in methods}
    augments = augments if augments is not None else {m: training_variants(m) for m in methods}
    out = [StageWork("teacher", "teacher", teacher_work(profile, sizes))]
    for i, method in enumerate(methods):
        out.append(
            StageWork(
                "distill",
                f"distill {method}",
                distill_work(
                    profile, sizes, method, i == 0, training.get(method, True), augments.get(method, 0), language
                ),
            )
        )
        out.append(StageWork("gate", f"gate {method}", gate_work(profile, sizes, transforms, i == 0)))
    return out


def transform_count(profile: Profile, language: str = "c") -> int:
    """How many transformations a gate runs under ``profile`` (``"all"``: every one for ``language``)."""
    names: Any = profile.transforms
    if names in (None, "", (), []):
        return 0
    return _count_transforms(names, language)
