"""AVATAR (Shi, Yang, Yang, Xu, Zhou, Lo, "Greening Large Language Models of Code",
ICSE-SEIS 2024).

1. **Pruning.** z3 removes infeasible configurations (:mod:`.z3_space`); the feasible
   bounds become the search bounds.
2. **Surrogate.** ``probes`` feasible configurations are distilled briefly
   (``probe_steps`` steps, :mod:`.avatar_probe`); a ``BayesianRidge`` regressor maps a
   configuration to its validation accuracy.
3. **Search.** NSGA-II over ``|size − target|``, ``−predicted accuracy`` and GFLOPs
   (:mod:`.search_moo`); the space covers tokenizer type (BPE, WordPiece, Unigram),
   vocabulary, layers, hidden size, heads, intermediate size, activation, dropout,
   maximum sequence length and position-embedding type.
4. **Choice and distillation.** The Pareto configuration nearest the size target is
   distilled with Compressor's loss (soft-label KD at T = 1 on cached teacher logits).
5. **Energy.** With ``codecarbon`` installed, inference energy per 1,000 samples of
   teacher and student is logged.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np

from .avatar_probe import ProbeResult, probe, sample_feasible, subset
from .methods import DistillContext, StudentOutcome, register_method, train_student
from .z3_space import AvatarSpace, PrunedSpace, StudentConfig, prune, size_mb

logger = logging.getLogger(__name__)


def corpus(ctx: DistillContext) -> list[str]:
    return ctx.unlabeled.texts + (ctx.unlabeled.texts_b or [])


def pruned_space(ctx: DistillContext, texts: list[str]) -> PrunedSpace:
    """AVATAR's space capped by what the corpus and ``ctx.max_length`` allow, pruned by z3.

    Options: ``max_vocab`` (46000), ``size_lower`` (0.5: sizes below half the target are
    pruned too), ``max_lengths`` (the space's lengths ≤ ``ctx.max_length``).
    """
    from ..models.tokenizer import train_tokenizer

    opts = ctx.options
    reachable = len(train_tokenizer(texts, vocab_size=int(opts.get("max_vocab", 46000)), kind="bpe"))
    top = max(1000, reachable // 1000 * 1000)
    space = AvatarSpace()
    lengths = tuple(opts.get("max_lengths") or sorted({v for v in space.max_length if v <= ctx.max_length} | {ctx.max_length}))
    space = replace(space, vocab_size=(1000, top), max_length=lengths)
    return prune(space, ctx.size_mb, lower=float(opts.get("size_lower", 0.5)), upper=1.0,
                 num_labels=len(ctx.labels), pair_mode=ctx.pair_mode)


def run_probes(ctx: DistillContext, pruned: PrunedSpace, texts: list[str], loss_fn: Any, *,
               train: list[Any] | None = None, valid_variants: Any = None, tokenizers: dict | None = None,
               extra_loss: Any = None) -> list[ProbeResult]:
    """Options: ``probes`` (6), ``probe_steps`` (30), ``probe_rows`` (training rows, 256),
    ``probe_valid`` (validation rows, 200)."""
    from tqdm.auto import tqdm

    opts = ctx.options
    configs = sample_feasible(pruned, int(opts.get("probes", 6)), seed=ctx.seed)
    train = train or [subset(ctx.unlabeled, int(opts.get("probe_rows", 256)), ctx.seed)]
    n_valid = int(opts.get("probe_valid", 200))
    valid = subset(ctx.valid, n_valid, ctx.seed)
    variants = subset(valid_variants, n_valid, ctx.seed) if valid_variants is not None else None
    results = []
    for c in tqdm(configs, desc="surrogate probes", disable=not ctx.fit_config.progress, leave=False):
        results.append(probe(c, texts, train, valid, ctx.labels, ctx.pair_mode, loss_fn,
                             steps=int(opts.get("probe_steps", 30)), batch_size=ctx.fit_config.batch_size,
                             lr=float(opts.get("lr", 1e-3)), seed=ctx.seed, valid_variants=variants,
                             tokenizers=tokenizers, extra_loss=extra_loss))
    return results


def avatar_search(ctx: DistillContext, texts: list[str], tokenizers: dict | None = None) -> tuple[StudentConfig, dict[str, Any]]:
    """Steps 1–4 of AVATAR: the chosen configuration and a JSON-able search record."""
    from .avatar_build import gflops
    from .modules import soft_label_loss
    from .search_moo import fit_surrogate, moo_search, nearest_to_target

    opts = ctx.options
    pruned = pruned_space(ctx, texts)
    probes = run_probes(ctx, pruned, texts, soft_label_loss(1.0), tokenizers=tokenizers)
    surrogate = fit_surrogate([p.config for p in probes], [p.val_acc for p in probes], pruned, "bayesian_ridge")
    k, pm = len(ctx.labels), ctx.pair_mode

    def objectives(configs: list[StudentConfig]) -> np.ndarray:
        acc = surrogate.predict(configs)
        return np.array([[abs(size_mb(c, k, pm) - ctx.size_mb), -a, gflops(c, k, pm)] for c, a in zip(configs, acc)])

    result = moo_search(pruned, objectives, 3, algorithm="nsga2", population=int(opts.get("population", 20)),
                        generations=int(opts.get("generations", 15)), seed=ctx.seed)
    best = nearest_to_target(result.configs, ctx.size_mb, pruned, tie_break=result.F[:, 1])
    record = {"bounds": pruned.bounds, "choices": pruned.choices, "z3_checks": pruned.checks,
              "probes": [{**p.config.to_dict(), "val_acc": p.val_acc} for p in probes],
              "pareto": [{**c.to_dict(), "objectives": f.tolist()} for c, f in zip(result.configs, result.F)],
              "evaluated": result.evaluated, "predicted_val_acc": float(-result.F[best, 1])}
    return result.configs[best], record


@register_method("avatar")
def avatar(ctx: DistillContext) -> StudentOutcome:
    """AVATAR student. Options: ``population`` (20), ``generations`` (15), ``probes`` (6),
    ``probe_steps`` (30), ``probe_rows`` (256), ``probe_valid`` (200), ``size_lower``
    (0.5), ``max_vocab`` (46000), ``lr`` (1e-3), ``temperature`` (1.0, Compressor's),
    ``energy_samples`` (200)."""
    from .avatar_build import gflops, materialise
    from .avatar_energy import log_inference_energy
    from .modules import soft_label_loss

    texts, tokenizers = corpus(ctx), {}
    choice, record = avatar_search(ctx, texts, tokenizers)
    model, tokenizer, config = materialise(texts, choice, ctx.labels, ctx.pair_mode, tokenizers)
    temperature = float(ctx.options.get("temperature", 1.0))
    fit = train_student(model, tokenizer, [ctx.unlabeled], ctx.valid, soft_label_loss(temperature),
                        fit_config=ctx.fit_config, lr=float(ctx.options.get("lr", 1e-3)))
    n = int(ctx.options.get("energy_samples", 200))
    energy = log_inference_energy(model, tokenizer, ctx.valid.texts[:n], (ctx.valid.texts_b or None) and ctx.valid.texts_b[:n],
                                  ctx.teacher_uri, ctx.code_columns)
    k, pm = len(ctx.labels), ctx.pair_mode
    out = {"method": "avatar", "student": config.to_dict(), "target_size_mb": ctx.size_mb,
           "size_mb": size_mb(config, k, pm), "gflops": gflops(config, k, pm), "temperature": temperature,
           "search": record, "energy": energy}
    params = {f"arch.{k2}": v for k2, v in config.to_dict().items()}
    return StudentOutcome(model, tokenizer, out, fit, params)
