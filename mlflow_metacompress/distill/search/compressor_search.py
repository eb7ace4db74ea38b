"""Compressor's genetic architecture search (Shi, Yang, Xu, Zhou, Lo, "Compressing
Pre-trained Models of Code into 3 MB", ASE 2022).

A genetic algorithm over the tokenizer's vocabulary size and the encoder's layers,
hidden size, attention heads and intermediate size. Fitness is
``GFLOPs(a) − |size_MB(a) − target|`` (maximised): as much computation as possible (a
proxy for capacity) at the target size. Size is parameters × 4 bytes / 10^6; GFLOPs are
counted by ``torch.utils.flop_counter`` (see :mod:`..arch`). No candidate is trained
during the search.

The genetic algorithm is pymoo's ``GA`` (tournament selection, uniform crossover,
polynomial mutation rounded to gene indices, elitist survival of the fittest of parents
and offspring). ``objective="latency"`` (see :mod:`.objective`) repairs every genome
to a structurally sound shape and adds the constraint ``cost ≤ budget``, the cost being
the deterministic :class:`~..cost.FlopCost` (default) or the machine's measured
:class:`~..latency_fit.LatencyModel` (:mod:`..cost`); ``objective="paper"`` is the
published search.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arch import ArchSpec
from ..options import SearchOptions
from .objective import check_objective, repair

if TYPE_CHECKING:
    from ..cost import SearchCost

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchSpace:
    """Choices per gene, modelled on Compressor's space (vocabulary 1k–46k, 1–12 layers,
    hidden 16–256, 1–8 heads, intermediate 32–3072); narrower ranges suit small budgets."""

    vocab_size: tuple[int, ...] = tuple(range(1000, 46001, 1000))
    num_hidden_layers: tuple[int, ...] = tuple(range(1, 13))
    hidden_size: tuple[int, ...] = tuple(range(16, 257, 16))
    num_attention_heads: tuple[int, ...] = (1, 2, 4, 8)
    intermediate_size: tuple[int, ...] = tuple(range(32, 3073, 32))

    @property
    def genes(self) -> tuple[str, ...]:
        return ("vocab_size", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")

    def cap_vocab(self, max_vocab: int) -> SearchSpace:
        """The same space with vocabulary choices ≤ ``max_vocab`` (what the corpus allows)."""
        kept = tuple(v for v in self.vocab_size if v <= max_vocab) or (max_vocab,)
        return replace(self, vocab_size=kept)


@dataclass
class SearchResult:
    """The chosen architecture and the search trace; ``fallback`` says how the choice was
    made when no candidate was within the size band (``"nearest"``), else None."""

    best: ArchSpec
    fitness: float
    size_mb: float
    gflops: float
    feasible: bool
    history: list[dict[str, float]] = field(default_factory=list)
    evaluated: int = 0
    objective: str = "paper"
    cost: float | None = None  # the chosen architecture's search cost, ``objective="latency"`` only
    cost_budget: float | None = None
    fallback: str | None = None
    cost_model: str | None = None  # "flops" or "measured" (:mod:`..cost`)
    cost_unit: str | None = None  # "MFLOP" or "ms"

    @property
    def latency_ms(self) -> float | None:
        """The predicted latency (ms per sample) when the search bounded a measured one."""
        return self.cost if self.cost_unit == "ms" else None

    @property
    def latency_budget_ms(self) -> float | None:
        return self.cost_budget if self.cost_unit == "ms" else None


def fitness(spec: ArchSpec, target_mb: float) -> float:
    """Compressor's fitness: ``GFLOPs − |size_MB − target_MB|``."""
    return spec.gflops() - abs(spec.size_mb() - target_mb)


def _decode(genome: np.ndarray, space: SearchSpace, base: ArchSpec, sound: bool = False) -> ArchSpec:
    values = {g: getattr(space, g)[int(i)] for g, i in zip(space.genes, genome, strict=True)}
    if sound:
        values = repair(values, space.num_attention_heads, space.intermediate_size)
    while values["hidden_size"] % values["num_attention_heads"]:  # repair: heads must divide hidden
        values["num_attention_heads"] //= 2
    return replace(base, **values)


def search_architecture(
    target_mb: float = 3.0,
    *,
    population: int = SearchOptions.population,
    generations: int = SearchOptions.generations,
    seed: int = 0,
    base: ArchSpec | None = None,
    space: SearchSpace | None = None,
    tolerance: float = 0.1,
    mutation_rate: float = 0.2,
    progress: bool = True,
    objective: str = "paper",
    latency: SearchCost | None = None,
    latency_budget_ms: float = math.inf,
    seeds: tuple[ArchSpec, ...] = (),
) -> SearchResult:
    """Run the GA and return the fittest architecture within ``tolerance`` (relative)
    of ``target_mb`` (and, for ``objective="latency"``, with ``latency``'s cost
    (:mod:`..cost`) within ``latency_budget_ms``, in that cost's unit; the cheapest in
    the band when none is). When no candidate is
    within the band, the one nearest the target size (``feasible=False``,
    ``fallback="nearest"``).

    ``base`` fixes the non-searched fields (max length, labels, pair mode); ``seeds``
    join the random initial population (each gene at the nearest choice), e.g. the
    teacher-shaped reference of the latency budget, so the GA starts from a shape that
    meets it.
    """
    from ..._optional import require

    require("pymoo", "Compressor's genetic search")
    from pymoo.core.problem import Problem
    from pymoo.operators.sampling.rnd import IntegerRandomSampling
    from pymoo.optimize import minimize
    from tqdm.auto import tqdm

    sound = _check_search(population, generations, objective, latency)
    base, space = base or ArchSpec(), space or SearchSpace()
    xu = np.array([len(getattr(space, g)) - 1 for g in space.genes], dtype=float)
    scores: dict[ArchSpec, tuple[float, float]] = {}  # spec -> (fitness, search cost)

    def score(genome: np.ndarray) -> tuple[float, float]:
        spec = _decode(genome, space, base, sound)
        if spec not in scores:
            scores[spec] = (fitness(spec, target_mb), latency.cost(spec) if sound and latency else 0.0)
        return scores[spec]

    constrained = sound and math.isfinite(latency_budget_ms)

    class _Problem(Problem):
        def __init__(self) -> None:
            super().__init__(
                n_var=len(xu), n_obj=1, n_ieq_constr=1 if constrained else 0, xl=np.zeros(len(xu)), xu=xu, vtype=int
            )

        def _evaluate(self, X: np.ndarray, out: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            rows = [score(np.rint(x).astype(int)) for x in X]
            out["F"] = np.array([[-f] for f, _ in rows])
            if constrained:
                out["G"] = np.array([[ms - latency_budget_ms] for _, ms in rows])

    history: list[dict[str, float]] = []
    bar = tqdm(total=generations, desc="compressor GA", disable=not progress, leave=False)
    algorithm = _genetic_algorithm(
        population, _initial(space, seeds, population, seed, IntegerRandomSampling()), mutation_rate
    )
    try:
        minimize(_Problem(), algorithm, ("n_gen", generations), seed=seed, callback=_trace(history, bar), verbose=False)
    finally:
        bar.close()
    result = _choose(scores, target_mb, tolerance, objective, latency_budget_ms, history)
    if sound and latency is not None:
        result.cost_model, result.cost_unit = latency.name, latency.unit
    return result


def _check_search(population: int, generations: int, objective: str, latency: SearchCost | None) -> bool:
    """Reject a GA that cannot run; whether ``objective`` is ``"latency"`` (sound shapes)."""
    if population < 2 or generations < 1:
        raise ValueError(f"need population ≥ 2 and generations ≥ 1, got {population}, {generations}")
    sound = check_objective(objective) == "latency"
    if sound and latency is None:
        raise ValueError(
            "objective='latency' needs a search cost (distill.cost.search_cost: a FLOP cost or a latency model)"
        )
    return sound


def _genetic_algorithm(population: int, sampling: Any, mutation_rate: float) -> Any:
    """Compressor's GA (Shi et al., ASE 2022): uniform crossover and polynomial mutation of
    each gene with probability ``mutation_rate``, rounded back to the grid."""
    from pymoo.algorithms.soo.nonconvex.ga import GA
    from pymoo.operators.crossover.ux import UX
    from pymoo.operators.mutation.pm import PM
    from pymoo.operators.repair.rounding import RoundingRepair

    return GA(
        pop_size=population,
        sampling=sampling,
        crossover=UX(repair=RoundingRepair()),
        mutation=PM(prob=1.0, prob_var=mutation_rate, eta=3.0, vtype=float, repair=RoundingRepair()),
        eliminate_duplicates=True,
    )


def _trace(history: list[dict[str, float]], bar: Any) -> Any:
    """A pymoo callback appending each generation's best and mean fitness to ``history``
    and advancing the progress ``bar``."""
    from pymoo.core.callback import Callback

    class _Trace(Callback):
        def notify(self, algorithm: Any) -> None:
            fit = -algorithm.pop.get("F")[:, 0]
            history.append(
                {
                    "generation": len(history),
                    "best_fitness": float(-algorithm.opt.get("F")[0, 0]),
                    "mean_fitness": float(fit.mean()),
                }
            )
            bar.update(1)

    return _Trace()


def _initial(space: SearchSpace, seeds: tuple[ArchSpec, ...], population: int, seed: int, random: Any) -> Any:
    """pymoo's random integer sampling, or an initial population holding ``seeds``."""
    if not seeds:
        return random
    rng = np.random.default_rng(seed)
    rows = [[int(np.argmin([abs(v - getattr(c, g)) for v in getattr(space, g)])) for g in space.genes] for c in seeds]
    sizes = [len(getattr(space, g)) for g in space.genes]
    rows += [list(rng.integers(0, sizes)) for _ in range(max(0, population - len(rows)))]
    return np.asarray(rows[:population], dtype=float)


def _choose(
    scores: dict[ArchSpec, tuple[float, float]],
    target_mb: float,
    tolerance: float,
    objective: str,
    budget: float,
    history: list[dict[str, float]],
) -> SearchResult:
    """The fittest in the band (and budget); else the fastest in the band; else the nearest."""
    in_band = [s for s in scores if abs(s.size_mb() - target_mb) <= tolerance * target_mb]
    latency_mode = objective == "latency"
    fallback = None
    if in_band:
        within = [s for s in in_band if not latency_mode or scores[s][1] <= budget]
        if within:
            best = max(within, key=lambda s: scores[s][0])
        else:
            best = min(in_band, key=lambda s: scores[s][1])
            logger.warning(
                "no architecture at %.2f MB meets the cost budget of %.3f per sample; taking the cheapest (%.3f)",
                target_mb,
                budget,
                scores[best][1],
            )
    else:
        best = min(scores, key=lambda s: (abs(s.size_mb() - target_mb), -scores[s][0]))
        fallback = "nearest"
        logger.warning(
            "no architecture within %.0f%% of %.2f MB; falling back to the nearest, %.3f MB",
            100 * tolerance,
            target_mb,
            best.size_mb(),
        )
    fit, ms = scores[best]
    return SearchResult(
        best,
        fit,
        best.size_mb(),
        best.gflops(),
        bool(in_band),
        history,
        len(scores),
        objective,
        ms if latency_mode else None,
        budget if latency_mode and math.isfinite(budget) else None,
        fallback,
    )
