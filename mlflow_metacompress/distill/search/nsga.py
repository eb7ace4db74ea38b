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

logger = logging.getLogger(__name__)


def avatar_search(ctx: DistillContext, opts: ProbeOptions,
                  tokenizers: dict | None = None) -> tuple[ArchSpec, dict[str, Any]]:
    """Steps 1–4: the chosen configuration and a JSON-able search record (probes are
    distilled with Compressor's loss, KD at T = 1)."""
    from ..modules import soft_label_loss
    from .build import gflops
    from .moo import fit_surrogate, moo_search, nearest_to_target

    pruned = pruned_space(ctx, opts)
    probes = run_probes(ctx, pruned, opts, soft_label_loss(1.0), tokenizers=tokenizers)
    surrogate = fit_surrogate([p.config for p in probes], [p.val_acc for p in probes], pruned, "bayesian_ridge")
    k, pm = len(ctx.labels), ctx.pair_mode

    def objectives(configs: list[ArchSpec]) -> np.ndarray:
        acc = surrogate.predict(configs)
        return np.array([[abs(size_mb(c, k, pm) - ctx.size_mb), -a, gflops(c, k, pm)] for c, a in zip(configs, acc)])

    result = moo_search(pruned, objectives, 3, algorithm="nsga2", population=opts.population,
                        generations=opts.generations, seed=ctx.seed)
    best = nearest_to_target(result.configs, ctx.size_mb, pruned, tie_break=result.F[:, 1])
    record = {"bounds": pruned.bounds, "choices": pruned.choices, "z3_checks": pruned.checks,
              "probes": [{**p.config.to_dict(), "val_acc": p.val_acc} for p in probes],
              "pareto": [{**c.to_dict(), "objectives": f.tolist()} for c, f in zip(result.configs, result.F)],
              "evaluated": result.evaluated, "predicted_val_acc": float(-result.F[best, 1])}
    return result.configs[best], record
