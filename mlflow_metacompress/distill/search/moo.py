"""Multi-objective architecture search shared by AVATAR and MORPH: feature encoding,
surrogates, a pymoo problem over a pruned space, and Pareto selection.

- AVATAR (Shi et al., ICSE-SEIS 2024) runs NSGA-II (Deb et al., 2002) over
  ``|size − target|``, ``−predicted accuracy`` and GFLOPs, with a Bayesian-ridge
  surrogate of validation accuracy.
- MORPH (Panichella, ICSE 2025) runs AGE-MOEA (Panichella, GECCO 2019) over size,
  predicted prediction flips on metamorphic inputs, GFLOPs and predicted accuracy,
  with gradient-boosting surrogates.

Genes are real numbers rounded to indices of each gene's feasible grid
(:meth:`.space.PrunedSpace.grid`); heads are repaired to divide the hidden size (and,
in a structurally sound space, to a head dimension ≥ 16 with FFN ≤ 4 × hidden) and
the size band is a pymoo inequality constraint, as are any extra constraints (the
latency budget). A search that finds nothing feasible returns an empty front with
every configuration it evaluated, for the caller's fallback (:mod:`.objective`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arch import ArchSpec
from .space import CATEGORICAL, NUMERIC, PrunedSpace, size_mb

logger = logging.getLogger(__name__)
GENES = NUMERIC + CATEGORICAL


def features(configs: Sequence[ArchSpec], pruned: PrunedSpace) -> np.ndarray:
    """Surrogate inputs: log2 of the numeric genes, dropout, max length / 512 and
    one-hot tokenizer, activation and position-embedding type."""
    rows = []
    for c in configs:
        row = [float(np.log2(getattr(c, n))) for n in NUMERIC] + [float(c.dropout), c.max_length / 512]
        for n in ("tokenizer", "hidden_act", "position_embedding_type"):
            row += [1.0 if getattr(c, n) == v else 0.0 for v in getattr(pruned.space, n)]
        rows.append(row)
    return np.asarray(rows, dtype=np.float64)


@dataclass
class Surrogate:
    """A fitted sklearn regressor over :func:`features`."""

    model: Any
    pruned: PrunedSpace
    kind: str

    def predict(self, configs: Sequence[ArchSpec]) -> np.ndarray:
        return np.asarray(self.model.predict(features(configs, self.pruned)), dtype=np.float64)


def fit_surrogate(
    configs: Sequence[ArchSpec], y: Sequence[float], pruned: PrunedSpace, kind: str = "bayesian_ridge", seed: int = 0
) -> Surrogate:
    """Fit ``BayesianRidge`` (AVATAR) or ``GradientBoostingRegressor`` (MORPH)."""
    if len(configs) != len(y) or len(configs) < 2:
        raise ValueError(f"a surrogate needs ≥ 2 (config, value) pairs of equal count, got {len(configs)} and {len(y)}")
    if kind == "bayesian_ridge":
        from sklearn.linear_model import BayesianRidge

        model: Any = BayesianRidge()
    elif kind == "gradient_boosting":
        from sklearn.ensemble import GradientBoostingRegressor

        model = GradientBoostingRegressor(n_estimators=50, max_depth=2, learning_rate=0.1, random_state=seed)
    else:
        raise ValueError(f"unknown surrogate kind {kind!r}; expected 'bayesian_ridge' or 'gradient_boosting'")
    model.fit(features(configs, pruned), np.asarray(y, dtype=np.float64))
    return Surrogate(model, pruned, kind)


def decode(x: np.ndarray, pruned: PrunedSpace) -> ArchSpec:
    """Genes (one real per gene, rounded to a grid index) → config; heads repaired to
    the largest feasible count ≤ the gene's that divides the hidden size."""
    vals: dict[str, Any] = {}
    for gene, value in zip(GENES, x, strict=True):
        grid = pruned.grid(gene)
        vals[gene] = grid[int(np.clip(np.rint(value), 0, len(grid) - 1))]
    if pruned.sound:
        from .objective import repair

        vals = repair(vals, pruned.grid("num_attention_heads"), pruned.grid("intermediate_size"))
    else:
        heads = [
            h
            for h in pruned.grid("num_attention_heads")
            if vals["hidden_size"] % h == 0 and h <= vals["num_attention_heads"]
        ]
        vals["num_attention_heads"] = max(heads) if heads else 1
    if vals["position_embedding_type"] == "rotary" and "gelu" in pruned.grid("hidden_act"):
        vals["hidden_act"] = "gelu"
    return ArchSpec(**vals, num_labels=pruned.num_labels, pair_mode=pruned.pair_mode)


def encode(config: ArchSpec, pruned: PrunedSpace) -> np.ndarray:
    """The inverse of :func:`decode`: each gene's index on its grid of ``pruned`` (the
    nearest value for numeric genes, an exact match for the others), so
    ``decode(encode(c)) == c`` for every configuration on the grid that needs no repair.

    Raises ``ValueError`` naming the gene when a non-numeric value is not a choice left."""
    row = []
    for gene in GENES:
        grid, value = pruned.grid(gene), getattr(config, gene)
        if value in grid:
            row.append(grid.index(value))
        elif isinstance(value, (int, float)) and all(isinstance(g, (int, float)) for g in grid):
            row.append(int(np.argmin([abs(g - value) for g in grid])))
        else:
            raise ValueError(f"{gene}={value!r} is not among the pruned space's choices {grid}")
    return np.asarray(row, dtype=np.float64)


def non_dominated(F: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows of ``F`` (minimised) no other row dominates."""
    from ..._optional import require

    require("pymoo", "multi-objective search (MORPH)")
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    F = np.asarray(F, dtype=np.float64)
    mask = np.zeros(len(F), dtype=bool)
    if len(F):
        mask[NonDominatedSorting().do(F, only_non_dominated_front=True)] = True
    return mask


def nearest_to_target(
    configs: Sequence[ArchSpec], target_mb: float, pruned: PrunedSpace, tie_break: np.ndarray | None = None
) -> int:
    """Index of the configuration whose size is closest to ``target_mb`` (ties: lowest
    ``tie_break``, then first)."""
    dist = np.array([abs(size_mb(c, pruned.num_labels, pruned.pair_mode) - target_mb) for c in configs])
    tb = np.zeros(len(configs)) if tie_break is None else np.asarray(tie_break, dtype=np.float64)
    return int(np.lexsort((tb, np.round(dist, 9)))[0])


@dataclass
class MooResult:
    """The non-dominated configurations found and their objective vectors."""

    configs: list[ArchSpec]
    F: np.ndarray
    evaluated: int
    feasible: list[ArchSpec] = field(default_factory=list)  # every feasible configuration evaluated
    feasible_F: np.ndarray | None = None
    evaluated_configs: list[ArchSpec] = field(default_factory=list)  # feasible or not


def moo_search(
    pruned: PrunedSpace,
    objectives: Callable[[list[ArchSpec]], np.ndarray],
    n_obj: int,
    *,
    algorithm: str = "nsga2",
    population: int = 24,
    generations: int = 20,
    seed: int = 0,
    constraints: Callable[[list[ArchSpec]], np.ndarray] | None = None,
    n_constraints: int = 0,
    seeds: Sequence[ArchSpec] = (),
) -> MooResult:
    """Minimise ``objectives(configs) -> (n, n_obj)`` over the pruned space with
    NSGA-II (``"nsga2"``) or AGE-MOEA (``"agemoea"``), subject to the size band and
    ``constraints(configs) -> (n, n_constraints)`` (feasible where ≤ 0). Returns the
    feasible non-dominated configurations of everything evaluated (none when nothing was
    feasible: see :func:`.objective.fallback`).

    ``seeds`` (e.g. known feasible configurations) start the initial population, each at
    its nearest grid point (:func:`encode`), the rest drawn by pymoo's seeded random
    integer sampling; without seeds the sampling is pymoo's alone, as published."""
    from ..._optional import require

    require("pymoo", "multi-objective search (MORPH)")
    from pymoo.core.problem import Problem
    from pymoo.operators.sampling.rnd import IntegerRandomSampling
    from pymoo.optimize import minimize

    xu = np.array([len(pruned.grid(g)) - 1 for g in GENES], dtype=float)
    seen: dict[ArchSpec, np.ndarray] = {}
    extra: dict[ArchSpec, np.ndarray] = {}
    upper_mb, lower_mb = pruned.upper * pruned.target_mb, pruned.lower * pruned.target_mb

    class _Problem(Problem):
        def __init__(self) -> None:
            super().__init__(
                n_var=len(GENES), n_obj=n_obj, n_ieq_constr=2 + n_constraints, xl=np.zeros(len(GENES)), xu=xu, vtype=int
            )

        def _evaluate(self, X: np.ndarray, out: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            configs = [decode(x, pruned) for x in X]
            new = [c for c in dict.fromkeys(configs) if c not in seen]
            if new:
                for c, f in zip(new, np.atleast_2d(objectives(new)), strict=True):
                    seen[c] = np.asarray(f, dtype=np.float64)
                if constraints is not None:
                    for c, g in zip(new, np.atleast_2d(constraints(new)), strict=True):
                        extra[c] = np.asarray(g, dtype=np.float64)
            out["F"] = np.stack([seen[c] for c in configs])
            sizes = np.array([size_mb(c, pruned.num_labels, pruned.pair_mode) for c in configs])
            G = np.stack([sizes - upper_mb, lower_mb - sizes], axis=1)
            if constraints is not None:
                G = np.concatenate([G, np.stack([extra[c] for c in configs])], axis=1)
            out["G"] = G

    algo = _algorithm(algorithm, population, _sampling(seeds, pruned, population, IntegerRandomSampling()))
    minimize(_Problem(), algo, ("n_gen", generations), seed=seed, verbose=False)
    feasible = [c for c in seen if pruned.feasible(c) and (constraints is None or bool(np.all(extra[c] <= 0)))]
    if not feasible:
        logger.warning(
            "%s found no configuration within the size band of %s MB (%d evaluated)",
            algorithm,
            pruned.target_mb,
            len(seen),
        )
        return MooResult([], np.zeros((0, n_obj)), len(seen), [], np.zeros((0, n_obj)), list(seen))
    F = np.stack([seen[c] for c in feasible])
    mask = non_dominated(F)
    logger.info("%s: %d evaluated, %d feasible, %d non-dominated", algorithm, len(seen), len(feasible), int(mask.sum()))
    return MooResult(
        [c for c, keep in zip(feasible, mask, strict=True) if keep], F[mask], len(seen), feasible, F, list(seen)
    )


def _algorithm(algorithm: str, population: int, sampling: Any) -> Any:
    """pymoo's NSGA-II (Deb et al., 2002) or AGE-MOEA (Panichella, GECCO 2019) on integer genes:
    SBX crossover and polynomial mutation rounded back to the grid, duplicates removed."""
    from pymoo.operators.crossover.sbx import SBX
    from pymoo.operators.mutation.pm import PM
    from pymoo.operators.repair.rounding import RoundingRepair

    from ..._optional import require

    kw = dict(
        pop_size=population,
        sampling=sampling,
        crossover=SBX(prob=0.9, eta=15, vtype=float, repair=RoundingRepair()),
        mutation=PM(eta=20, vtype=float, repair=RoundingRepair()),
        eliminate_duplicates=True,
    )
    if algorithm == "nsga2":
        from pymoo.algorithms.moo.nsga2 import NSGA2

        return NSGA2(**kw)
    if algorithm == "agemoea":
        require("numba", "AGE-MOEA search (MORPH)")
        from pymoo.algorithms.moo.age import AGEMOEA

        return AGEMOEA(**kw)
    raise ValueError(f"unknown algorithm {algorithm!r}; expected 'nsga2' or 'agemoea'")


def _sampling(seeds: Sequence[ArchSpec], pruned: PrunedSpace, population: int, random: Any) -> Any:
    """``random`` (pymoo's integer sampling), or a sampling whose first rows are the
    distinct encoded ``seeds`` (at most ``population``) and the rest ``random``'s draws."""
    if not seeds:
        return random
    from pymoo.core.sampling import Sampling

    rows = list(dict.fromkeys(tuple(encode(c, pruned)) for c in seeds))[:population]
    fixed = np.asarray(rows, dtype=np.float64)

    class _Seeded(Sampling):
        def _do(self, problem: Any, n_samples: int, *args: Any, random_state: Any = None, **kwargs: Any) -> np.ndarray:
            rest = random._do(problem, max(0, n_samples - len(fixed)), random_state=random_state)
            return np.concatenate([fixed, np.reshape(rest, (-1, fixed.shape[1]))])[:n_samples]

    logger.info("initial population: %d seeded configurations, %d random", len(fixed), max(0, population - len(fixed)))
    return _Seeded()
