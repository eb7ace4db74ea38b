"""Compressor (Shi, Yang, Xu, Zhou, Lo, "Compressing Pre-trained Models of Code into
3 MB", ASE 2022).

1. **Search.** Compressor's genetic algorithm (:mod:`..search.compressor_search`, pymoo's GA) at the
   size target: fitness ``GFLOPs − |size_MB − target|``, no candidate trained. The
   vocabulary genes are capped at what BPE can learn from the unlabeled task code.
   ``objective="paper"`` is the published search; ``objective="latency"`` (default,
   :mod:`..search.objective`) searches structurally sound shapes only and bounds their
   inference cost by ``latency_slack`` × that of the teacher-shaped student of the same
   size; the cost is a deterministic FLOP count (``cost="flops"``, default,
   :mod:`..cost`), so one seed searches one architecture on every run, or the latency
   measured on this machine (``cost="measured"``, :mod:`..latency`). With nothing in the size band the
   candidate nearest the target is taken and the student tagged
   ``metacompress.search_fallback=true``.
2. **Tokenizer.** Byte-level BPE trained on the unlabeled task code with the searched
   vocabulary size.
3. **Distillation.** Soft-label KD at T = 1 on the unlabeled half of the training data
   (teacher logits cached beforehand), keeping the best validation checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from ..context import DistillContext, StudentOutcome
from ..options import SearchOptions
from ..student import train_on_soft_labels

NAME = "compressor"


@dataclass(frozen=True)
class Options(SearchOptions):
    """``population``/``generations`` of the GA, ``max_vocab`` of the BPE tokenizer,
    the KD ``temperature``, the ``tolerance`` (relative) around the size target, ``lr``,
    the search ``objective`` (``latency`` or the published ``paper`` one), the
    ``latency_slack`` of the latency budget and the ``cost`` it bounds (``flops``,
    deterministic, or ``measured``; :mod:`..cost`)."""

    temperature: float = 1.0
    tolerance: float = 0.1
    objective: Literal["latency", "paper"] = "latency"
    latency_slack: float = 1.0
    cost: Literal["flops", "measured"] = "flops"


def run(ctx: DistillContext, options: Options) -> StudentOutcome:
    """Compressor: GA search at ``ctx.size_mb``, BPE tokenizer, KD (T = 1) student."""
    import mlflow

    from ...models.tokenizer import train_tokenizer
    from ..arch import ArchSpec, seeded
    from ..search.compressor_search import SearchSpace, search_architecture
    from ..search.objective import FALLBACK_KEY

    texts = ctx.corpus()
    # the corpus bounds the vocabulary BPE can learn; search only sizes it can reach
    reachable = len(train_tokenizer(texts, vocab_size=options.max_vocab, kind="bpe"))
    base = ArchSpec(max_length=ctx.max_length, num_labels=len(ctx.labels), pair_mode=ctx.pair_mode)
    latency: dict[str, Any] = _latency_setup(ctx, options, reachable)
    result = search_architecture(
        ctx.size_mb,
        population=options.population,
        generations=options.generations,
        seed=ctx.seed,
        base=base,
        space=SearchSpace().cap_vocab(reachable),
        tolerance=options.tolerance,
        progress=ctx.fit_config.progress,
        objective=options.objective,
        **latency,
    )
    if mlflow.active_run() is not None:
        for row in result.history:
            mlflow.log_metrics(
                {"ga_best_fitness": row["best_fitness"], "ga_mean_fitness": row["mean_fitness"]},
                step=int(row["generation"]),
            )
    tokenizer = train_tokenizer(texts, vocab_size=result.best.vocab_size, kind="bpe", model_max_length=ctx.max_length)
    spec = replace(result.best, vocab_size=len(tokenizer))
    with seeded(ctx.seed):
        model = spec.build(ctx.labels)
    fit = train_on_soft_labels(ctx, model, tokenizer, options.temperature, options.lr)
    config: dict[str, Any] = {
        "method": NAME,
        "arch": spec.to_dict(),
        "tokenizer": {"kind": "bpe", "vocab_size": len(tokenizer)},
        "target_size_mb": ctx.size_mb,
        "size_mb": spec.size_mb(),
        "gflops": spec.gflops(),
        "fitness": result.fitness,
        "feasible": result.feasible,
        "temperature": options.temperature,
        "reachable_vocab": reachable,
        "objective": options.objective,
        FALLBACK_KEY: result.fallback is not None,
        "search": {
            "evaluated": result.evaluated,
            "history": result.history,
            "fallback": result.fallback,
            "cost": result.cost_model,
            "cost_unit": result.cost_unit,
            "predicted_cost": result.cost,
            "cost_budget": result.cost_budget,
            "predicted_latency_ms": result.latency_ms,
            "latency_budget_ms": result.latency_budget_ms,
        },
    }
    params = {f"arch.{k}": v for k, v in spec.to_dict().items()}
    return StudentOutcome(model, tokenizer, config, fit, params)


def _latency_setup(ctx: DistillContext, options: Options, max_vocab: int) -> dict[str, Any]:
    """Keyword arguments of the latency objective: the search cost (:mod:`..cost`, at the
    task's length and batch size for a measured one), the budget and the teacher-shaped seeds (none for
    ``objective="paper"``): the budget's reference, sized in ``[0.8, 1] × target``, and
    the teacher-shaped student of the GA's own band ``[1 − tolerance, 1 + tolerance] ×
    target``, so that a small GA starts from a shape inside it."""
    if options.objective == "paper":
        return {}
    from ..cost import search_cost
    from ..search.objective import latency_budget, reference

    model = search_cost(
        options.cost,
        ctx.max_length,
        ctx.fit_config.batch_size,
        cache_dir=ctx.cache_dir,
        progress=ctx.fit_config.progress,
    )
    budget, ref = latency_budget(
        model,
        ctx.size_mb,
        options.latency_slack,
        num_labels=len(ctx.labels),
        pair_mode=ctx.pair_mode,
        max_length=ctx.max_length,
        max_vocab=max_vocab,
    )
    tol = options.tolerance
    band = reference(
        ctx.size_mb * (1 + tol),
        lower=(1 - tol) / (1 + tol),
        num_labels=len(ctx.labels),
        pair_mode=ctx.pair_mode,
        max_length=ctx.max_length,
        max_vocab=max_vocab,
    )
    seeds = tuple(dict.fromkeys(s for s in (ref, band) if s is not None))
    return {"latency": model, "latency_budget_ms": budget, "seeds": seeds}
