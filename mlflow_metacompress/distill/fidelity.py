"""``fidelity``: our distillation method for the smallest teacher/student gap on
MetaCompress's four relations (Awal, Rochan, Roy, arXiv 2511.05476) at a size budget.

1. **Architecture.** ``arch="teacher_shaped"`` (default): a scaled-down standard
   transformer that fits the size budget (:mod:`.fidelity_arch`); ``arch="avatar"``:
   AVATAR's z3-pruned NSGA-II search (:mod:`.avatar`); or a given ``student_config``
   (e.g. AVATAR's choice, to compare losses at equal architecture).
2. **Variants.** Every training sample is rewritten by every applicable
   semantics-preserving transformation of the library (``transforms`` option,
   default all for the language). The teacher's log-probabilities and ``[CLS]`` states
   for originals and variants are computed once and cached (:mod:`.fidelity_cache`).
3. **Training.** :class:`.fidelity_module.FidelityModule` with the loss of
   :mod:`.fidelity_loss`: KD on originals and variants, projected-state alignment,
   high-confidence matching (MR3) and sample/variant consistency.
4. **Checkpoints.** ``select="agreement"`` (default) keeps the epoch whose argmax agrees
   most with the teacher's on the validation rows and every one of their variants (the
   method's goal is the teacher/student gap, so it selects on it).
   ``select="relations"`` counts only rows that keep all four relations
   (:func:`.losses.relation_agreement`; stricter, and on Devign it kept a slightly worse
   epoch: any_violation_rate/metamorphic 0.81 against 0.78 at T = 1);
   ``select="accuracy"`` keeps MORPH's choice, the mean of clean and metamorphic
   validation accuracy.
"""

from __future__ import annotations

import logging
from dataclasses import fields, replace
from typing import Any

import numpy as np

from .avatar import avatar_search, corpus
from .datasets import CodeExamples
from .methods import DistillContext, StudentOutcome, register_method
from .morph_data import MORPH_TRANSFORMS, concat, each_variant, language_of, metamorphic
from .z3_space import StudentConfig, size_mb

logger = logging.getLogger(__name__)
SELECT_MONITOR = {"relations": "val_relations_kept", "agreement": "val_agreement", "accuracy": "val_acc"}


def variant_table(examples: CodeExamples, language: str, names: list[str], seed: int = 0) -> tuple[CodeExamples, list[np.ndarray]]:
    """All changed variants of every row (first column transformed; a pair's second
    function is kept) and, per original, the indices of its variants in the table."""
    table = each_variant(examples.texts, names, language, seed)
    texts, texts_b, owner = [], [] if examples.texts_b is not None else None, []
    for name in names:
        for i, code in enumerate(table[name]):
            if code is not None and code != examples.texts[i]:
                texts.append(code)
                owner.append(i)
                if texts_b is not None:
                    texts_b.append(examples.texts_b[i])  # type: ignore[index]
    owner_arr = np.asarray(owner, dtype=np.int64)
    variant_of = [np.flatnonzero(owner_arr == i) for i in range(len(examples))]
    return CodeExamples(texts, texts_b), variant_of


def validation_set(ctx: DistillContext, language: str, names: list[str], select: str) -> CodeExamples:
    """Validation rows for checkpoint selection. ``relations``/``agreement``: the clean rows and all
    their variants under ``names``, with labels and the teacher's (cached) logits;
    ``accuracy``: MORPH's clean + metamorphic rows with labels."""
    from .fidelity_cache import teacher_outputs

    if select == "accuracy":
        valid_variants, _ = metamorphic(ctx.valid, language, MORPH_TRANSFORMS, seed=ctx.seed + 7)
        return concat([ctx.valid, valid_variants])
    if select not in SELECT_MONITOR:
        raise ValueError(f"fidelity option select must be one of {sorted(SELECT_MONITOR)}, got {select!r}")
    variants, variant_of = variant_table(ctx.valid, language, names, ctx.seed + 7)
    owner = np.zeros(len(variants), dtype=np.int64)
    for i, rows in enumerate(variant_of):
        owner[rows] = i
    rows = CodeExamples(ctx.valid.texts + variants.texts,
                        None if ctx.valid.texts_b is None else ctx.valid.texts_b + (variants.texts_b or []))
    logits, _ = teacher_outputs(ctx.teacher_uri, rows, ctx.cache_dir, progress=ctx.fit_config.progress)
    labels = None if ctx.valid.labels is None else np.concatenate([ctx.valid.labels, ctx.valid.labels[owner]])
    return CodeExamples(rows.texts, rows.texts_b, labels, logits)


def choose_architecture(ctx: DistillContext, texts: list[str], tokenizers: dict) -> tuple[StudentConfig, dict[str, Any]]:
    """The student configuration for ``ctx.options["arch"]`` and a JSON-able record."""
    from .fidelity_arch import teacher_shaped

    arch = str(ctx.options.get("arch", "teacher_shaped"))
    if arch == "avatar":
        return avatar_search(ctx, texts, tokenizers)
    if arch != "teacher_shaped":
        raise ValueError(f"fidelity option arch must be 'teacher_shaped' or 'avatar', got {arch!r}")
    kw = {k: int(ctx.options[k]) for k in ("head_dim", "ffn_ratio", "max_layers", "min_vocab") if k in ctx.options}
    shape = dict(num_labels=len(ctx.labels), pair_mode=ctx.pair_mode, max_length=ctx.max_length)
    explicit = "min_vocab" in kw
    floors = [kw.pop("min_vocab")] if explicit else [4000, 1000]  # an explicit floor is not relaxed
    for floor in floors:
        try:
            choice = teacher_shaped(ctx.size_mb, **shape, **kw, min_vocab=floor)
        except ValueError:
            if explicit:
                raise
            continue
        record = {"arch": "teacher_shaped", **kw}
        if explicit or floor != floors[0]:
            record["min_vocab"] = floor
        if floor != floors[0]:
            logger.warning("fidelity: no teacher-shaped student with a %d-token vocabulary fits %.2f MB; allowing %d",
                           floors[0], ctx.size_mb, floor)
        return choice, record
    logger.warning("fidelity: no teacher-shaped student fits %.2f MB; using AVATAR's search", ctx.size_mb)
    choice, record = avatar_search(ctx, texts, tokenizers)
    return choice, {"arch": "avatar", "fallback_from": "teacher_shaped", **record}


def weights_from(options: dict[str, Any]) -> Any:
    from .fidelity_loss import FidelityWeights

    known = {f.name for f in fields(FidelityWeights)}
    return FidelityWeights(**{k: type(getattr(FidelityWeights(), k))(v) for k, v in options.items() if k in known})


@register_method("fidelity")
def fidelity(ctx: DistillContext) -> StudentOutcome:
    """Fidelity student. Options: ``arch`` (teacher_shaped, with ``head_dim`` 32,
    ``ffn_ratio`` 4, ``max_layers`` 4, ``min_vocab`` 4000; or avatar),
    ``student_config`` (dict; skips the choice),
    ``transforms`` (list, default every transformation of the language),
    ``variants_per_step`` (2), ``lr`` (1e-3), ``select`` (agreement), the :class:`FidelityWeights` fields
    (``temperature`` 3, ``variant_kd`` 1, ``align`` 0.5, ``align_kind`` cosine,
    ``confidence`` 1, ``confidence_threshold`` 0.8, ``consistency`` 0.5), and AVATAR's
    search options when searching."""
    from ..transforms import list_transforms
    from .avatar_build import gflops, materialise
    from .fidelity_cache import teacher_outputs
    from .fidelity_module import FidelityModule
    from .training import fit

    opts = ctx.options
    language = language_of(ctx.task, opts.get("language"))
    texts, tokenizers = corpus(ctx), {}
    if opts.get("student_config"):
        choice, record = StudentConfig(**dict(opts["student_config"])), {"given": True}
    else:
        choice, record = choose_architecture(ctx, texts, tokenizers)
    names = list(opts.get("transforms") or list_transforms(language))
    variants, variant_of = variant_table(ctx.unlabeled, language, names, ctx.seed)
    logger.info("fidelity: %d variants of %d samples (%s)", len(variants), len(ctx.unlabeled), names)
    t_o, z_o = teacher_outputs(ctx.teacher_uri, ctx.unlabeled, ctx.cache_dir, progress=ctx.fit_config.progress)
    t_v, z_v = (teacher_outputs(ctx.teacher_uri, variants, ctx.cache_dir, progress=ctx.fit_config.progress)
                if len(variants) else (np.zeros((0, t_o.shape[1]), np.float32), np.zeros((0, z_o.shape[1]), np.float32)))
    model, tokenizer, config = materialise(texts, choice, ctx.labels, ctx.pair_mode, tokenizers)
    weights = weights_from(opts)
    module = FidelityModule(model, tokenizer, t_o, z_o, variants.texts, variants.texts_b, t_v, z_v, variant_of,
                            weights, int(opts.get("variants_per_step", 2)), lr=float(opts.get("lr", 1e-3)),
                            seed=ctx.seed)
    select = str(opts.get("select", "agreement"))
    valid = validation_set(ctx, language, names, select)
    train = CodeExamples(ctx.unlabeled.texts, ctx.unlabeled.texts_b, None, t_o)
    result = fit(module, tokenizer, train, valid, replace(ctx.fit_config, monitor=SELECT_MONITOR[select]))
    k, pm = len(ctx.labels), ctx.pair_mode
    out = {"method": "fidelity", "student": config.to_dict(), "target_size_mb": ctx.size_mb,
           "size_mb": size_mb(config, k, pm), "gflops": gflops(config, k, pm), "weights": weights.__dict__,
           "transforms": names, "variants": len(variants), "language": language,
           "variants_per_step": int(opts.get("variants_per_step", 2)),
           "checkpoint_selection": select, "validation_rows": len(valid), "search": record}
    params = {f"arch.{k2}": v for k2, v in config.to_dict().items()}
    return StudentOutcome(model, tokenizer, out, result, params)
