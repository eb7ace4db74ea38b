"""Briefly distilled probe configurations: the training data of the search surrogates.

AVATAR (Shi et al., ICSE-SEIS 2024) fits its accuracy predictor on a handful of
configurations, each distilled for a short budget; MORPH (Panichella, ICSE 2025)
also measures prediction flips on metamorphic variants. :func:`sample_feasible`
draws distinct feasible configurations from a z3-pruned space and :func:`probe`
distils one briefly (no MLflow logging) and measures it on a validation subset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .datasets import CodeExamples
from .search_moo import GENES, decode
from .z3_space import PrunedSpace, StudentConfig

logger = logging.getLogger(__name__)


def sample_feasible(pruned: PrunedSpace, n: int, seed: int = 0, max_tries: int = 5000) -> list[StudentConfig]:
    """``n`` distinct feasible configurations drawn uniformly over gene indices."""
    rng = np.random.default_rng(seed)
    sizes = np.array([len(pruned.grid(g)) for g in GENES])
    out: dict[StudentConfig, None] = {}
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

    config: StudentConfig
    val_acc: float
    flip_rate: float = float("nan")
    metamorphic_acc: float = float("nan")


def subset(examples: CodeExamples, n: int | None, seed: int = 0) -> CodeExamples:
    """At most ``n`` rows of ``examples`` (seeded, order kept)."""
    if n is None or len(examples) <= n:
        return examples
    idx = np.sort(np.random.default_rng(seed).choice(len(examples), n, replace=False))
    pick = lambda xs: None if xs is None else [xs[i] for i in idx]  # noqa: E731
    return CodeExamples(pick(examples.texts), pick(examples.texts_b),
                        None if examples.labels is None else examples.labels[idx],
                        None if examples.teacher_logits is None else examples.teacher_logits[idx])


def probe(
    config: StudentConfig,
    texts: list[str],
    train: Sequence[CodeExamples],
    valid: CodeExamples,
    labels: list[str],
    pair_mode: str | None,
    loss_fn: Any,
    *,
    steps: int = 30,
    batch_size: int = 16,
    lr: float = 1e-3,
    seed: int = 0,
    valid_variants: CodeExamples | None = None,
    tokenizers: dict[tuple[str, int], Any] | None = None,
    extra_loss: Callable[..., Any] | None = None,
) -> ProbeResult:
    """Distil ``config`` for ``steps`` optimiser steps and measure it on ``valid``
    (accuracy) and ``valid_variants`` (row-aligned: accuracy and prediction flips)."""
    from torch.utils.data import ConcatDataset

    from .avatar_build import materialise
    from .modules import ClassifierModule
    from .training import FitConfig, fit

    model, tokenizer, _ = materialise(texts, config, labels, pair_mode, tokenizers)
    module = ClassifierModule(model, loss_fn, extra_loss, lr=lr)
    data = train[0] if len(train) == 1 else ConcatDataset(list(train))
    fit(module, tokenizer, data, None, FitConfig(epochs=1, batch_size=batch_size, max_steps=steps, seed=seed,
                                                 progress=False), mlflow_logger=False)
    pred = model.predict_proba(tokenizer, valid.texts, valid.texts_b, batch_size=64).argmax(axis=1)
    result = ProbeResult(config, float(np.mean(pred == valid.labels)))
    if valid_variants is not None:
        var = model.predict_proba(tokenizer, valid_variants.texts, valid_variants.texts_b, batch_size=64).argmax(axis=1)
        result = replace(result, flip_rate=float(np.mean(var != pred)),
                         metamorphic_acc=float(np.mean(var == valid_variants.labels)))
    logger.info("probe %s: acc %.3f flips %.3f", config, result.val_acc, result.flip_rate)
    return result
