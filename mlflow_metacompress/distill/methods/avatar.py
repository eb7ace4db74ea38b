"""AVATAR (Shi, Yang, Yang, Xu, Zhou, Lo, "Greening Large Language Models of Code",
ICSE-SEIS 2024).

1. **Search.** AVATAR's search (:mod:`..search.avatar_search`): z3 pruning of the space
   (tokenizer type BPE/WordPiece/Unigram, vocabulary, layers, hidden size, heads,
   intermediate size, activation, dropout, maximum sequence length, position-embedding
   type), ``probes`` briefly distilled configurations, a ``BayesianRidge`` accuracy
   surrogate and NSGA-II over ``|size − target|``, ``−predicted accuracy`` and GFLOPs.
   ``objective="paper"`` is that published search; ``objective="latency"`` (default,
   :mod:`..search.objective`) keeps structurally sound shapes only and replaces GFLOPs
   by an inference cost bounded by ``latency_slack`` × that of the teacher-shaped
   student of the same size: a deterministic FLOP count (``cost="flops"``, default,
   :mod:`..cost`; one seed, one architecture, on every run) or the latency measured on
   this machine (``cost="measured"``, :mod:`..latency`).
2. **Choice and distillation.** The Pareto configuration nearest the size target is
   distilled with Compressor's loss (soft-label KD at T = 1 on cached teacher logits).
   The latency search is warm-started from the teacher-shaped student and the probes;
   when nothing fits the size band and budget all the same, the teacher-shaped student is
   distilled instead and the version tagged ``metacompress.search_fallback=true``.
3. **Energy.** With ``codecarbon`` installed, inference energy per 1,000 samples of
   teacher and student is logged (:mod:`..energy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..context import DistillContext, StudentOutcome
from ..search.build import describe_student
from ..search.probes import ProbeOptions
from ..student import train_on_soft_labels

NAME = "avatar"


@dataclass(frozen=True)
class Options(ProbeOptions):
    """The search budget (:class:`~..search.probes.ProbeOptions`), the KD
    ``temperature`` (Compressor's 1.0), the validation rows timed for energy, the search
    ``objective`` (``latency`` or the published ``paper`` one), the ``latency_slack``
    of the latency budget and the ``cost`` it bounds (``flops``, deterministic, or
    ``measured``; :mod:`..cost`)."""

    temperature: float = 1.0
    energy_samples: int = 200
    objective: Literal["latency", "paper"] = "latency"
    latency_slack: float = 1.0
    cost: Literal["flops", "measured"] = "flops"


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """AVATAR student: search, then distil the chosen configuration."""
    from ..energy import log_inference_energy
    from ..search.avatar_search import avatar_search
    from ..search.build import materialise

    tokenizers: dict = {}
    choice, record = avatar_search(
        ctx, options, tokenizers, objective=options.objective, latency_slack=options.latency_slack, cost=options.cost
    )
    model, tokenizer, config = materialise(ctx.corpus(), choice, ctx.labels, ctx.pair_mode, tokenizers, ctx.seed)
    fit = train_on_soft_labels(ctx, model, tokenizer, options.temperature, options.lr)
    n = options.energy_samples
    energy = log_inference_energy(
        model,
        tokenizer,
        ctx.valid.texts[:n],
        (ctx.valid.texts_b or None) and ctx.valid.texts_b[:n],
        ctx.teacher_uri,
        ctx.code_columns,
    )
    outcome = describe_student(
        ctx,
        NAME,
        (model, tokenizer, config),
        fit,
        record,
        fallback=record.get("fallback") is not None,
        temperature=options.temperature,
        objective=options.objective,
    )
    outcome.config["energy"] = energy
    return outcome
