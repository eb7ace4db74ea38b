"""MORPH (Panichella, "Metamorphic-Based Many-Objective Distillation of LLMs for
Code-related Tasks", ICSE 2025).

1. **Augmentation.** Every unlabeled training sample gets a metamorphic variant
   (``rename_function`` then ``rename_variables``, parameters included; :mod:`..augment`);
   changed variants join the training set with teacher logits computed once (cached).
2. **Loss.** KD + (1 − cosine similarity of the probability vectors), temperature 3
   by default (the paper's value; its code uses 10), see :func:`..losses.morph_loss`.
3. **Search.** AGE-MOEA over four objectives: size, prediction flips on metamorphic
   validation variants, GFLOPs and validation accuracy (negated). Flips and accuracy
   come from gradient-boosting surrogates fitted on briefly distilled probes; the space
   is AVATAR's z3-pruned space at the size budget (:mod:`..search`).
4. **Choice.** Among the non-dominated configurations, the highest predicted
   ``accuracy − flips`` (ties: nearest the size target). When nothing fits the size
   band (small budgets), the teacher-shaped student (:mod:`..search.objective`) and the
   version is tagged ``metacompress.search_fallback=true``.
5. **Checkpoints.** The validation set is the clean validation split followed by its
   metamorphic variants (same rows, same labels), so the monitored ``val_acc`` is the
   mean of clean and metamorphic validation accuracy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arch import ArchSpec
from ..context import DistillContext, StudentOutcome
from ..search.build import describe_student
from ..search.probes import ProbeOptions
from ..student import train_student

NAME = "morph"
TRAINING_VARIANTS = 1  # every unlabeled row adds one variant to the training set (pipeline.budget)
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options(ProbeOptions):
    """The search budget (:class:`~..search.probes.ProbeOptions`), the loss's
    ``temperature`` (the paper's 3; its code uses 10) and ``cosine_weight``, and the
    ``language`` of the transformations (default: the task's)."""

    temperature: float = 3.0
    cosine_weight: float = 1.0
    language: str | None = None


def augmented_training(ctx: DistillContext, language: str) -> Any:
    """The changed metamorphic variants of ``ctx.unlabeled`` with cached teacher logits."""
    from ..augment import MORPH_TRANSFORMS, metamorphic, with_teacher_logits

    variants, _ = metamorphic(ctx.unlabeled, language, MORPH_TRANSFORMS, seed=ctx.seed, keep_unchanged=False)
    if len(variants) == 0:
        logger.warning("no training sample could be transformed; MORPH trains on the originals only")
        return None
    return with_teacher_logits(variants, ctx.teacher_uri, ctx.code_columns, ctx.cache_dir)


def morph_search(
    ctx: DistillContext, options: Options, train: list[Any], valid_variants: Any, loss_fn: Any, tokenizers: dict
) -> tuple[ArchSpec, dict[str, Any]]:
    """Probes, flip and accuracy surrogates, AGE-MOEA and MORPH's choice."""
    from ..search.build import gflops
    from ..search.moo import fit_surrogate, moo_search
    from ..search.objective import fallback
    from ..search.probes import pruned_space, run_probes, subset
    from ..search.space import size_mb

    pruned = pruned_space(ctx, options)
    probe_train = [subset(part, options.probe_rows, ctx.seed) for part in train]
    probes = run_probes(
        ctx, pruned, options, loss_fn, train=probe_train, valid_variants=valid_variants, tokenizers=tokenizers
    )
    configs = [p.config for p in probes]
    acc = fit_surrogate(configs, [p.val_acc for p in probes], pruned, "gradient_boosting", ctx.seed)
    flips = fit_surrogate(configs, [p.flip_rate for p in probes], pruned, "gradient_boosting", ctx.seed)
    k, pm = len(ctx.labels), ctx.pair_mode

    def objectives(cs: list[ArchSpec]) -> np.ndarray:
        a, f = acc.predict(cs), flips.predict(cs)
        return np.array([[size_mb(c, k, pm), fi, gflops(c, k, pm), -ai] for c, ai, fi in zip(cs, a, f, strict=True)])

    result = moo_search(
        pruned,
        objectives,
        4,
        algorithm="agemoea",
        population=options.population,
        generations=options.generations,
        seed=ctx.seed,
    )
    record: dict[str, Any] = {
        "bounds": pruned.bounds,
        "choices": pruned.choices,
        "probes": [
            {**p.config.to_dict(), "val_acc": p.val_acc, "flip_rate": p.flip_rate, "metamorphic_acc": p.metamorphic_acc}
            for p in probes
        ],
        "pareto": [{**c.to_dict(), "objectives": f.tolist()} for c, f in zip(result.configs, result.F, strict=True)],
        "evaluated": result.evaluated,
        "fallback": None,
    }
    if not result.configs:
        choice, kind = fallback(
            ctx.size_mb,
            result.evaluated_configs,
            num_labels=k,
            pair_mode=pm,
            max_length=ctx.max_length,
            max_vocab=pruned.space.vocab_size[1],
            lower=pruned.lower,
        )
        f = objectives([choice])[0]
        record.update(fallback=kind, predicted_val_acc=float(-f[3]), predicted_flip_rate=float(f[1]))
        return choice, record
    score = -result.F[:, 3] - result.F[:, 1]
    dist = np.abs(result.F[:, 0] - ctx.size_mb)
    best = int(np.lexsort((dist, -np.round(score, 9)))[0])
    record.update(predicted_val_acc=float(-result.F[best, 3]), predicted_flip_rate=float(result.F[best, 1]))
    return result.configs[best], record


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """MORPH student: augment, search, distil with KD + cosine."""
    from ..augment import MORPH_TRANSFORMS, concat, language_of, metamorphic
    from ..modules import morph_soft_label_loss
    from ..search.build import materialise

    language = language_of(ctx.task, options.language)
    loss_fn = morph_soft_label_loss(options.temperature, options.cosine_weight)
    augmented = augmented_training(ctx, language)
    train = [ctx.unlabeled] + ([augmented] if augmented is not None else [])
    valid_variants, _ = metamorphic(ctx.valid, language, MORPH_TRANSFORMS, seed=ctx.seed + 7)
    tokenizers: dict = {}
    choice, record = morph_search(ctx, options, train, valid_variants, loss_fn, tokenizers)
    model, tokenizer, config = materialise(ctx.corpus(), choice, ctx.labels, ctx.pair_mode, tokenizers, ctx.seed)
    # clean + metamorphic validation rows, equally many: val_acc is their mean accuracy
    selection_set = concat([ctx.valid, valid_variants])
    fit = train_student(model, tokenizer, train, selection_set, loss_fn, fit_config=ctx.fit_config, lr=options.lr)
    return describe_student(
        ctx,
        NAME,
        (model, tokenizer, config),
        fit,
        record,
        fallback=record.get("fallback") is not None,
        temperature=options.temperature,
        augmented_rows=0 if augmented is None else len(augmented),
        language=language,
        checkpoint_selection="mean of clean and metamorphic validation accuracy",
    )
