"""AVATAR's architecture search (Shi, Yang, Yang, Xu, Zhou, Lo, "Greening Large Language
Models of Code", ICSE-SEIS 2024), shared by the ``avatar`` method and ``fidelity``'s
``arch="avatar"`` choice (and its fallback).

1. **Pruning.** z3 removes infeasible configurations (:mod:`.space`); the feasible
   bounds become the search bounds.
2. **Surrogate.** ``probes`` feasible configurations are distilled briefly
   (:mod:`.probes`); a ``BayesianRidge`` regressor maps a configuration to its
   validation accuracy.
3. **Search.** NSGA-II (Deb et al., 2002) over ``|size − target|``, ``−predicted
   accuracy`` and GFLOPs (:mod:`.moo`).
4. **Choice.** The Pareto configuration nearest the size target (ties: the higher
   predicted accuracy).

``objective="paper"`` is the published search above. ``objective="latency"``
(:mod:`.objective`) prunes to structurally sound shapes, replaces GFLOPs by a per-sample
inference cost (``cost``, :mod:`..cost`: the deterministic ``"flops"`` by default, or
the latency the machine's fitted :class:`~..latency_fit.LatencyModel` predicts with
``"measured"``), bounds it by
``latency_slack`` × that of the teacher-shaped student of the same size (a constraint),
and warm-starts NSGA-II: the teacher-shaped student (at its nearest grid point, when that
is inside the size band) and the probed configurations join the initial population, the
rest drawn at random as before (``objective="paper"`` starts from random draws only,
as published).
When nothing is feasible, the search falls back to
the teacher-shaped student (else the evaluated configuration nearest the target size)
and records ``fallback`` (the student is tagged ``metacompress.search_fallback=true``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arch import ArchSpec
from .probes import ProbeOptions, pruned_space, run_probes
from .space import size_mb

if TYPE_CHECKING:
    from ..context import DistillContext
    from .moo import MooResult
    from .probes import ProbeResult
    from .space import PrunedSpace

logger = logging.getLogger(__name__)


def avatar_search(
    ctx: DistillContext,
    opts: ProbeOptions,
    tokenizers: dict | None = None,
    *,
    objective: str = "paper",
    latency_slack: float = 1.0,
    cost: str = "flops",
) -> tuple[ArchSpec, dict[str, Any]]:
    """Steps 1–4: the chosen configuration and a JSON-able search record (probes are
    distilled with Compressor's loss, KD at T = 1)."""
    from ..modules import soft_label_loss
    from .build import gflops
    from .moo import fit_surrogate, moo_search, nearest_to_target
    from .objective import check_objective, fallback

    latency_mode = check_objective(objective) == "latency"
    pruned = pruned_space(ctx, opts, sound=latency_mode)
    probes = run_probes(ctx, pruned, opts, soft_label_loss(1.0), tokenizers=tokenizers)
    surrogate = fit_surrogate([p.config for p in probes], [p.val_acc for p in probes], pruned, "bayesian_ridge")
    k, pm = len(ctx.labels), ctx.pair_mode
    top_vocab = pruned.space.vocab_size[1]
    price: Any = lambda c: gflops(c, k, pm)  # noqa: E731 - replaced by the cost model's in latency mode
    budget: float | None = None
    constraints: Any = None
    seeds: list[ArchSpec] = []
    model = None
    if latency_mode:
        model, budget, constraints, seeds = _latency_terms(ctx, cost, latency_slack, [p.config for p in probes], pruned)
        price = model.cost

    def objectives(configs: list[ArchSpec]) -> np.ndarray:
        acc = surrogate.predict(configs)
        return np.array(
            [[abs(size_mb(c, k, pm) - ctx.size_mb), -a, price(c)] for c, a in zip(configs, acc, strict=True)]
        )

    result = moo_search(
        pruned,
        objectives,
        3,
        algorithm="nsga2",
        population=opts.population,
        generations=opts.generations,
        seed=ctx.seed,
        constraints=constraints,
        n_constraints=0 if constraints is None else 1,
        seeds=seeds,
    )
    record = _search_record(objective, pruned, probes, result)
    if model is not None:
        bounded = budget if budget is not None and np.isfinite(budget) else None
        record.update(seeded=len(seeds), cost=model.name, cost_unit=model.unit, cost_budget=bounded)
        record["latency_budget_ms"] = bounded if model.unit == "ms" else None
    if not result.configs:
        choice, kind = fallback(
            ctx.size_mb,
            result.evaluated_configs,
            num_labels=k,
            pair_mode=pm,
            max_length=ctx.max_length,
            max_vocab=top_vocab,
            lower=pruned.lower,
        )
        record.update(fallback=kind, predicted_val_acc=float(surrogate.predict([choice])[0]))
    else:
        best = nearest_to_target(result.configs, ctx.size_mb, pruned, tie_break=result.F[:, 1])
        choice = result.configs[best]
        record["predicted_val_acc"] = float(-result.F[best, 1])
    if model is not None:
        record["predicted_cost"] = float(price(choice))
        record["predicted_latency_ms"] = record["predicted_cost"] if model.unit == "ms" else None
    return choice, record


def _latency_terms(
    ctx: DistillContext, cost: str, latency_slack: float, probed: list[ArchSpec], pruned: Any
) -> tuple[Any, float, Any, list[ArchSpec]]:
    """``objective="latency"``'s terms: the cost model (:mod:`..cost`), the budget of
    ``latency_slack`` × the teacher-shaped student's cost, the constraint bounding it (None
    when the budget is infinite) and the warm-start seeds (:func:`_seeds`)."""
    from ..cost import search_cost
    from .objective import latency_budget

    model = search_cost(
        cost, ctx.max_length, ctx.fit_config.batch_size, cache_dir=ctx.cache_dir, progress=ctx.fit_config.progress
    )
    budget, ref = latency_budget(
        model,
        ctx.size_mb,
        latency_slack,
        num_labels=len(ctx.labels),
        pair_mode=ctx.pair_mode,
        max_length=ctx.max_length,
        max_vocab=pruned.space.vocab_size[1],
    )
    constraints = None
    if np.isfinite(budget):
        limit = float(budget)

        def over_budget(cs: list[ArchSpec]) -> np.ndarray:
            return np.array([[model.cost(c) - limit] for c in cs])

        constraints = over_budget
    return model, budget, constraints, _seeds(ref, probed, pruned)


def _seeds(ref: ArchSpec | None, probed: list[ArchSpec], pruned: Any) -> list[ArchSpec]:
    """The warm start of the latency search: the teacher-shaped ``ref`` at its nearest
    grid point when that lies inside the size band (it meets the budget of slack ≥ 1 by
    construction), then the probed configurations (feasible in size by construction)."""
    from .moo import decode, encode

    seeds = []
    if ref is not None:
        try:
            snapped = decode(encode(ref, pruned), pruned)
        except ValueError as exc:
            logger.info("the teacher-shaped reference does not seed the search: %s", exc)
        else:
            if pruned.feasible(snapped):
                seeds.append(snapped)
            else:
                logger.info(
                    "the teacher-shaped reference %s snaps to %s outside the size band; not seeded", ref, snapped
                )
    return list(dict.fromkeys(seeds + list(probed)))


def _search_record(objective: str, pruned: PrunedSpace, probes: list[ProbeResult], result: MooResult) -> dict[str, Any]:
    """The JSON-able record of steps 1–3: the pruned bounds and z3 checks, the probed
    configurations with their validation accuracy, and NSGA-II's Pareto front."""
    return {
        "objective": objective,
        "bounds": pruned.bounds,
        "choices": pruned.choices,
        "z3_checks": pruned.checks,
        "probes": [{**p.config.to_dict(), "val_acc": p.val_acc} for p in probes],
        "pareto": [{**c.to_dict(), "objectives": f.tolist()} for c, f in zip(result.configs, result.F, strict=True)],
        "evaluated": result.evaluated,
        "fallback": None,
    }
