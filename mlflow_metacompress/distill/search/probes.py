"""Briefly distilled probe configurations: the training data of the search surrogates.

AVATAR (Shi et al., ICSE-SEIS 2024) fits its accuracy predictor on a handful of
configurations, each distilled for a short budget; MORPH (Panichella, ICSE 2025)
also measures prediction flips on metamorphic variants. :func:`pruned_space` caps
AVATAR's space by the corpus and prunes it with z3, :func:`sample_feasible` draws
distinct feasible configurations from it, :func:`probe` distils one briefly (no MLflow
logging) and measures it on a validation subset, and :func:`run_probes` does both for a
method's context with the budget of :class:`ProbeOptions`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arch import ArchSpec
from ..datasets import CodeExamples
from ..options import MethodOptions, SearchOptions
from .moo import GENES, decode
from .space import AvatarSpace, PrunedSpace, prune

if TYPE_CHECKING:
    from ..context import DistillContext

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeOptions(SearchOptions):
    """Budget of the surrogate probes and the size band of the pruned space.

    ``probes`` configurations are distilled for ``probe_steps`` steps on ``probe_rows``
    training rows and measured on ``probe_valid`` validation rows; ``size_lower`` prunes
    sizes below that fraction of the target; ``max_lengths`` (default: the space's
    lengths ≤ the context's ``max_length``) are the sequence lengths searched."""

    probes: int = 6
    probe_steps: int = 30
    probe_rows: int = 256
    probe_valid: int = 200
    size_lower: float = 0.5
    max_lengths: tuple[int, ...] | None = None


def sample_feasible(pruned: PrunedSpace, n: int, seed: int = 0, max_tries: int = 5000) -> list[ArchSpec]:
    """``n`` distinct feasible configurations drawn uniformly over gene indices."""
    rng = np.random.default_rng(seed)
    sizes = np.array([len(pruned.grid(g)) for g in GENES])
    out: dict[ArchSpec, None] = {}
    for _ in range(max_tries):
        c = decode(rng.integers(0, sizes).astype(float), pruned)
        if pruned.feasible(c):
            out.setdefault(c)
            if len(out) == n:
                break
    if len(out) < min(n, 2):
        raise RuntimeError(f"found only {len(out)} feasible configurations in {max_tries} draws; widen the size band")
    return list(out)


@dataclass
class ProbeResult:
    """Validation accuracy (and flip rate on variants, when given) of one probe."""

    config: ArchSpec
    val_acc: float
    flip_rate: float = float("nan")
    metamorphic_acc: float = float("nan")


def subset(examples: CodeExamples, n: int | None, seed: int = 0) -> CodeExamples:
    """At most ``n`` rows of ``examples`` (seeded, order kept)."""
    if n is None or len(examples) <= n:
        return examples
    idx = np.sort(np.random.default_rng(seed).choice(len(examples), n, replace=False))
    return CodeExamples(
        [examples.texts[i] for i in idx],
        None if examples.texts_b is None else [examples.texts_b[i] for i in idx],
        None if examples.labels is None else examples.labels[idx],
        None if examples.teacher_logits is None else examples.teacher_logits[idx],
    )


def probe(
    config: ArchSpec,
    texts: list[str],
    train: Sequence[CodeExamples],
    valid: CodeExamples,
    labels: list[str],
    pair_mode: str | None,
    loss_fn: Any,
    *,
    steps: int = 30,
    batch_size: int = 16,
    lr: float = MethodOptions.lr,
    seed: int = 0,
    valid_variants: CodeExamples | None = None,
    tokenizers: dict[tuple[str, int], Any] | None = None,
    extra_loss: Callable[..., Any] | None = None,
) -> ProbeResult:
    """Distil ``config`` for ``steps`` optimiser steps and measure it on ``valid``
    (accuracy) and ``valid_variants`` (row-aligned: accuracy and prediction flips)."""
    from torch.utils.data import ConcatDataset

    from ..modules import ClassifierModule
    from ..training import FitConfig, fit
    from .build import materialise

    model, tokenizer, _ = materialise(texts, config, labels, pair_mode, tokenizers, seed)
    module = ClassifierModule(model, loss_fn, extra_loss, lr=lr)
    data = train[0] if len(train) == 1 else ConcatDataset(list(train))
    fit(
        module,
        tokenizer,
        data,
        None,
        FitConfig(epochs=1, batch_size=batch_size, max_steps=steps, seed=seed, progress=False),
        mlflow_logger=False,
    )
    pred = model.predict_proba(tokenizer, valid.texts, valid.texts_b, batch_size=64).argmax(axis=1)
    result = ProbeResult(config, float(np.mean(pred == valid.labels)))
    if valid_variants is not None:
        var = model.predict_proba(tokenizer, valid_variants.texts, valid_variants.texts_b, batch_size=64).argmax(axis=1)
        result = replace(
            result, flip_rate=float(np.mean(var != pred)), metamorphic_acc=float(np.mean(var == valid_variants.labels))
        )
    logger.info("probe %s: acc %.3f flips %.3f", config, result.val_acc, result.flip_rate)
    return result


def pruned_space(ctx: DistillContext, opts: ProbeOptions, sound: bool = False) -> PrunedSpace:
    """AVATAR's space capped by what the corpus (``opts.max_vocab``) and
    ``ctx.max_length`` allow, pruned by z3 at the size band ``[size_lower, 1] × target``
    (structurally sound shapes only with ``sound``, see :mod:`.objective`)."""
    from ...models.tokenizer import train_tokenizer

    reachable = len(train_tokenizer(ctx.corpus(), vocab_size=opts.max_vocab, kind="bpe"))
    top = max(1000, reachable // 1000 * 1000)
    space = AvatarSpace()
    lengths = tuple(opts.max_lengths or sorted({v for v in space.max_length if v <= ctx.max_length} | {ctx.max_length}))
    space = replace(space, vocab_size=(1000, top), max_length=lengths)
    return prune(
        space,
        ctx.size_mb,
        lower=opts.size_lower,
        upper=1.0,
        num_labels=len(ctx.labels),
        pair_mode=ctx.pair_mode,
        sound=sound,
    )


def run_probes(
    ctx: DistillContext,
    pruned: PrunedSpace,
    opts: ProbeOptions,
    loss_fn: Any,
    *,
    train: list[Any] | None = None,
    valid_variants: Any = None,
    tokenizers: dict | None = None,
    extra_loss: Any = None,
) -> list[ProbeResult]:
    """Probe ``opts.probes`` feasible configurations of ``pruned`` (see :class:`ProbeOptions`)."""
    from tqdm.auto import tqdm

    configs = sample_feasible(pruned, opts.probes, seed=ctx.seed)
    train = train or [subset(ctx.unlabeled, opts.probe_rows, ctx.seed)]
    valid = subset(ctx.valid, opts.probe_valid, ctx.seed)
    variants = subset(valid_variants, opts.probe_valid, ctx.seed) if valid_variants is not None else None
    texts = ctx.corpus()
    results = []
    for c in tqdm(configs, desc="surrogate probes", disable=not ctx.fit_config.progress, leave=False):
        results.append(
            probe(
                c,
                texts,
                train,
                valid,
                ctx.labels,
                ctx.pair_mode,
                loss_fn,
                steps=opts.probe_steps,
                batch_size=ctx.fit_config.batch_size,
                lr=opts.lr,
                seed=ctx.seed,
                valid_variants=variants,
                tokenizers=tokenizers,
                extra_loss=extra_loss,
            )
        )
    return results
