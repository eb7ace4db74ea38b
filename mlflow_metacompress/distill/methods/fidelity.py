"""``fidelity``: our distillation method for the smallest teacher/student gap on
MetaCompress's four relations (Awal, Rochan, Roy, arXiv 2511.05476) at a size budget.

1. **Architecture.** ``arch="teacher_shaped"`` (default): a scaled-down standard
   transformer that fits the size budget (:mod:`..search.teacher_shaped`);
   ``arch="avatar"``: AVATAR's z3-pruned NSGA-II search (:mod:`..search.avatar_search`); or a
   given ``student_config`` (e.g. AVATAR's choice, to compare losses at equal
   architecture).
2. **Variants.** Every training sample is rewritten by every applicable
   semantics-preserving transformation of the library (``transforms`` option,
   default all for the language; :func:`..augment.variant_table`). The teacher's
   log-probabilities and ``[CLS]`` states for originals and variants are computed once
   and cached (:mod:`..fidelity_cache`).
3. **Training.** :class:`..modules.FidelityModule` with :func:`..losses.fidelity_loss`:
   KD on originals and variants, projected-state alignment, high-confidence matching
   (MR3) and sample/variant consistency.
4. **Checkpoints.** ``select="agreement"`` (default) keeps the epoch whose argmax agrees
   most with the teacher's on the validation rows and every one of their variants (the
   method's goal is the teacher/student gap, so it selects on it); logged as
   ``best_val_agreement``. ``select="relations"`` counts only rows that keep all four
   relations (:func:`..losses.relation_agreement`; stricter, and on Devign it kept a
   slightly worse epoch: any_violation_rate/metamorphic 0.81 against 0.78 at T = 1);
   ``select="accuracy"`` keeps MORPH's choice, the mean of clean and metamorphic
   validation accuracy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ..arch import ArchSpec
from ..context import DistillContext, StudentOutcome
from ..datasets import CodeExamples
from ..search.build import describe_student
from ..search.probes import ProbeOptions

NAME = "fidelity"
logger = logging.getLogger(__name__)
SELECT_MONITOR = {"relations": "val_relations_kept", "agreement": "val_agreement", "accuracy": "val_acc"}


@dataclass(frozen=True)
class Options(ProbeOptions):
    """Architecture (``arch``; ``head_dim``, ``ffn_ratio``, ``max_layers``, ``min_vocab``
    of the teacher-shaped family, default: the family's, with ``min_vocab`` 4000 relaxed
    to 1000 when nothing fits; or a ``student_config``), ``transforms`` (default: every
    transformation of the ``language``), ``variants_per_step``, checkpoint ``select``, and
    the loss weights (:class:`..losses.FidelityWeights`). AVATAR's search budget applies
    when searching."""

    arch: Literal["teacher_shaped", "avatar"] = "teacher_shaped"
    head_dim: int | None = None
    ffn_ratio: int | None = None
    max_layers: int | None = None
    min_vocab: int | None = None
    student_config: ArchSpec | None = None
    transforms: tuple[str, ...] | None = None
    variants_per_step: int = 2
    variant_rows: int | None = None  # only a seeded sample of this many training rows gets variants (teacher passes)
    select: Literal["agreement", "relations", "accuracy"] = "agreement"
    language: str | None = None
    # T = 3 (MORPH's value) rather than T = 1: with a confident teacher (p ≈ 0.99), KD at
    # T = 1 stops pulling once the student is "confident enough"; softened targets carry the
    # teacher's logit scale, so students match its confidence (MR2-MR4). Measured on the
    # shared Devign subset: any_violation_rate/metamorphic 0.57 at T = 3 against 0.78 at T = 1.
    temperature: float = 3.0
    variant_kd: float = 1.0
    align: float = 0.5
    align_kind: Literal["cosine", "mse"] = "cosine"
    confidence: float = 1.0
    confidence_threshold: float = 0.8
    consistency: float = 0.5


def validation_set(ctx: DistillContext, language: str, names: list[str], select: str) -> CodeExamples:
    """Validation rows for checkpoint selection. ``relations``/``agreement``: the clean rows and all
    their variants under ``names``, with labels and the teacher's (cached) logits;
    ``accuracy``: MORPH's clean + metamorphic rows with labels."""
    from ..augment import MORPH_TRANSFORMS, concat, metamorphic, variant_table
    from ..fidelity_cache import teacher_outputs

    if select == "accuracy":
        valid_variants, _ = metamorphic(ctx.valid, language, MORPH_TRANSFORMS, seed=ctx.seed + 7)
        return concat([ctx.valid, valid_variants])
    if select not in SELECT_MONITOR:
        raise ValueError(f"fidelity option select must be one of {sorted(SELECT_MONITOR)}, got {select!r}")
    variants, variant_of = variant_table(ctx.valid, language, names, ctx.seed + 7)
    owner = np.zeros(len(variants), dtype=np.int64)
    for i, rows in enumerate(variant_of):
        owner[rows] = i
    pooled = CodeExamples(
        ctx.valid.texts + variants.texts,
        None if ctx.valid.texts_b is None else ctx.valid.texts_b + (variants.texts_b or []),
    )
    logits, _ = teacher_outputs(ctx.teacher_uri, pooled, ctx.cache_dir, progress=ctx.fit_config.progress)
    labels = None if ctx.valid.labels is None else np.concatenate([ctx.valid.labels, ctx.valid.labels[owner]])
    return CodeExamples(pooled.texts, pooled.texts_b, labels, logits)


def choose_architecture(ctx: DistillContext, options: Options, tokenizers: dict) -> tuple[ArchSpec, dict[str, Any]]:
    """The student configuration for ``options.arch`` and a JSON-able record."""
    from ..search.avatar_search import avatar_search
    from ..search.teacher_shaped import teacher_shaped

    if options.arch == "avatar":
        return avatar_search(ctx, options, tokenizers)
    if options.arch != "teacher_shaped":
        raise ValueError(f"fidelity option arch must be 'teacher_shaped' or 'avatar', got {options.arch!r}")
    kw = {k: getattr(options, k) for k in ("head_dim", "ffn_ratio", "max_layers") if getattr(options, k) is not None}
    explicit = options.min_vocab is not None
    floors = [options.min_vocab] if options.min_vocab is not None else [4000, 1000]  # an explicit floor is not relaxed
    for floor in floors:
        try:
            choice = teacher_shaped(
                ctx.size_mb,
                num_labels=len(ctx.labels),
                pair_mode=ctx.pair_mode,
                max_length=ctx.max_length,
                **kw,
                min_vocab=floor,
            )
        except ValueError:
            if explicit:
                raise
            continue
        record = {"arch": "teacher_shaped", **kw}
        if explicit or floor != floors[0]:
            record["min_vocab"] = floor
        if floor != floors[0]:
            logger.warning(
                "fidelity: no teacher-shaped student with a %d-token vocabulary fits %.2f MB; allowing %d",
                floors[0],
                ctx.size_mb,
                floor,
            )
        return choice, record
    logger.warning("fidelity: no teacher-shaped student fits %.2f MB; using AVATAR's search", ctx.size_mb)
    choice, record = avatar_search(ctx, options, tokenizers)
    return choice, {"arch": "avatar", "fallback_from": "teacher_shaped", **record}


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """Fidelity student: architecture, variants, fidelity loss, selection on the teacher gap."""
    from ...transforms import list_transforms
    from ..augment import language_of, variant_table
    from ..fidelity_cache import teacher_outputs
    from ..losses import FIDELITY_WEIGHTS
    from ..modules import FidelityModule
    from ..search.build import materialise
    from ..training import fit

    language = language_of(ctx.task, options.language)
    tokenizers: dict = {}
    if options.student_config is not None:
        choice, record = options.student_config, {"given": True}
    else:
        choice, record = choose_architecture(ctx, options, tokenizers)
    names = list(options.transforms or list_transforms(language))
    tag_trained(names, [n for n in list_transforms(language) if n not in names])
    variants, variant_of = variant_table(ctx.unlabeled, language, names, ctx.seed, options.variant_rows)
    logger.info("fidelity: %d variants of %d samples (%s)", len(variants), len(ctx.unlabeled), names)
    t_o, z_o = teacher_outputs(ctx.teacher_uri, ctx.unlabeled, ctx.cache_dir, progress=ctx.fit_config.progress)
    t_v, z_v = (
        teacher_outputs(ctx.teacher_uri, variants, ctx.cache_dir, progress=ctx.fit_config.progress)
        if len(variants)
        else (np.zeros((0, t_o.shape[1]), np.float32), np.zeros((0, z_o.shape[1]), np.float32))
    )
    model, tokenizer, config = materialise(ctx.corpus(), choice, ctx.labels, ctx.pair_mode, tokenizers, ctx.seed)
    module = FidelityModule(
        model,
        tokenizer,
        t_o,
        z_o,
        variants.texts,
        variants.texts_b,
        t_v,
        z_v,
        variant_of,
        options,
        options.variants_per_step,
        lr=options.lr,
        seed=ctx.seed,
    )
    valid = validation_set(ctx, language, names, options.select)
    train = CodeExamples(ctx.unlabeled.texts, ctx.unlabeled.texts_b, None, t_o)
    result = fit(module, tokenizer, train, valid, replace(ctx.fit_config, monitor=SELECT_MONITOR[options.select]))
    return describe_student(
        ctx,
        NAME,
        (model, tokenizer, config),
        result,
        record,
        weights={w: getattr(options, w) for w in FIDELITY_WEIGHTS},
        transforms=names,
        variants=len(variants),
        language=language,
        variants_per_step=options.variants_per_step,
        checkpoint_selection=options.select,
        validation_rows=len(valid),
    )


def tag_trained(trained: list[str], held_out: list[str]) -> None:
    """Tag the active run (before training, so a failed run still says it) with the rewrites
    the student trains on and those it never sees, which the evaluator's
    ``trained_transforms="auto"`` reads to judge the unseen ones apart (issue 44)."""
    import mlflow

    from ...artifact_names import HELD_OUT_TRANSFORMS_TAG, TRAINED_TRANSFORMS_TAG

    if mlflow.active_run() is not None:
        mlflow.set_tags({TRAINED_TRANSFORMS_TAG: ",".join(trained), HELD_OUT_TRANSFORMS_TAG: ",".join(held_out)})
