"""MORPH (Panichella, "Metamorphic-Based Many-Objective Distillation of LLMs for
Code-related Tasks", ICSE 2025).

1. **Augmentation.** Every unlabeled training sample gets a metamorphic variant
   (``rename_function`` then ``rename_variables``, parameters included); changed
   variants join the training set with teacher logits computed once (cached).
2. **Loss.** KD + (1 − cosine similarity of the probability vectors), temperature 3
   by default (the paper's value; its code uses 10), see :mod:`.morph_loss`.
3. **Search.** AGE-MOEA over four objectives: size, prediction flips on metamorphic
   validation variants, GFLOPs and validation accuracy (negated). Flips and accuracy
   come from gradient-boosting surrogates fitted on briefly distilled probes; the space
   is AVATAR's z3-pruned space at the size budget.
4. **Choice.** Among the non-dominated configurations, the highest predicted
   ``accuracy − flips`` (ties: nearest the size target).
5. **Checkpoints.** The validation set is the clean validation split followed by its
   metamorphic variants (same rows, same labels), so the monitored ``val_acc`` is the
   mean of clean and metamorphic validation accuracy.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .avatar import corpus, pruned_space, run_probes
from .avatar_probe import subset
from .methods import DistillContext, StudentOutcome, register_method, train_student
from .morph_data import MORPH_TRANSFORMS, concat, language_of, metamorphic, with_teacher_logits
from .morph_loss import DEFAULT_TEMPERATURE, morph_soft_label_loss
from .z3_space import StudentConfig, size_mb

logger = logging.getLogger(__name__)


def augmented_training(ctx: DistillContext, language: str, names: tuple[str, ...] = MORPH_TRANSFORMS) -> Any:
    """The changed metamorphic variants of ``ctx.unlabeled`` with cached teacher logits."""
    variants, _ = metamorphic(ctx.unlabeled, language, names, seed=ctx.seed, keep_unchanged=False)
    if len(variants) == 0:
        logger.warning("no training sample could be transformed; MORPH trains on the originals only")
        return None
    return with_teacher_logits(variants, ctx.teacher_uri, ctx.code_columns, ctx.cache_dir)


def morph_search(ctx: DistillContext, texts: list[str], train: list[Any], valid_variants: Any, loss_fn: Any,
                 tokenizers: dict) -> tuple[StudentConfig, dict[str, Any]]:
    from .avatar_build import gflops
    from .search_moo import fit_surrogate, moo_search

    opts = ctx.options
    pruned = pruned_space(ctx, texts)
    probe_rows = int(opts.get("probe_rows", 256))
    probe_train = [subset(part, probe_rows, ctx.seed) for part in train]
    probes = run_probes(ctx, pruned, texts, loss_fn, train=probe_train, valid_variants=valid_variants,
                        tokenizers=tokenizers)
    configs = [p.config for p in probes]
    acc = fit_surrogate(configs, [p.val_acc for p in probes], pruned, "gradient_boosting", ctx.seed)
    flips = fit_surrogate(configs, [p.flip_rate for p in probes], pruned, "gradient_boosting", ctx.seed)
    k, pm = len(ctx.labels), ctx.pair_mode

    def objectives(cs: list[StudentConfig]) -> np.ndarray:
        a, f = acc.predict(cs), flips.predict(cs)
        return np.array([[size_mb(c, k, pm), fi, gflops(c, k, pm), -ai] for c, ai, fi in zip(cs, a, f)])

    result = moo_search(pruned, objectives, 4, algorithm="agemoea", population=int(opts.get("population", 20)),
                        generations=int(opts.get("generations", 15)), seed=ctx.seed)
    score = -result.F[:, 3] - result.F[:, 1]
    dist = np.abs(result.F[:, 0] - ctx.size_mb)
    best = int(np.lexsort((dist, -np.round(score, 9)))[0])
    record = {"bounds": pruned.bounds, "choices": pruned.choices,
              "probes": [{**p.config.to_dict(), "val_acc": p.val_acc, "flip_rate": p.flip_rate,
                          "metamorphic_acc": p.metamorphic_acc} for p in probes],
              "pareto": [{**c.to_dict(), "objectives": f.tolist()} for c, f in zip(result.configs, result.F)],
              "evaluated": result.evaluated, "predicted_val_acc": float(-result.F[best, 3]),
              "predicted_flip_rate": float(result.F[best, 1])}
    return result.configs[best], record


@register_method("morph")
def morph(ctx: DistillContext) -> StudentOutcome:
    """MORPH student. Options: ``temperature`` (3; the paper's code uses 10),
    ``cosine_weight`` (1.0), ``population`` (20), ``generations`` (15), ``probes`` (6),
    ``probe_steps`` (30), ``probe_rows`` (256), ``probe_valid`` (200), ``size_lower``
    (0.5), ``lr`` (1e-3), ``language`` (from the task)."""
    from .avatar_build import gflops, materialise

    opts = ctx.options
    language = language_of(ctx.task, opts.get("language"))
    temperature = float(opts.get("temperature", DEFAULT_TEMPERATURE))
    loss_fn = morph_soft_label_loss(temperature, float(opts.get("cosine_weight", 1.0)))
    augmented = augmented_training(ctx, language)
    train = [ctx.unlabeled] + ([augmented] if augmented is not None else [])
    valid_variants, _ = metamorphic(ctx.valid, language, MORPH_TRANSFORMS, seed=ctx.seed + 7)
    texts, tokenizers = corpus(ctx), {}
    choice, record = morph_search(ctx, texts, train, valid_variants, loss_fn, tokenizers)
    model, tokenizer, config = materialise(texts, choice, ctx.labels, ctx.pair_mode, tokenizers)
    # clean + metamorphic validation rows, equally many: val_acc is their mean accuracy
    selection_set = concat([ctx.valid, valid_variants])
    fit = train_student(model, tokenizer, train, selection_set, loss_fn, fit_config=ctx.fit_config,
                        lr=float(opts.get("lr", 1e-3)))
    k, pm = len(ctx.labels), ctx.pair_mode
    out = {"method": "morph", "student": config.to_dict(), "target_size_mb": ctx.size_mb,
           "size_mb": size_mb(config, k, pm), "gflops": gflops(config, k, pm), "temperature": temperature,
           "augmented_rows": 0 if augmented is None else len(augmented), "language": language,
           "checkpoint_selection": "mean of clean and metamorphic validation accuracy", "search": record}
    params = {f"arch.{k2}": v for k2, v in config.to_dict().items()}
    return StudentOutcome(model, tokenizer, out, fit, params)
