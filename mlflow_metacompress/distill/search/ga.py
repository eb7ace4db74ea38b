"""Compressor's genetic architecture search (Shi, Yang, Xu, Zhou, Lo, "Compressing
Pre-trained Models of Code into 3 MB", ASE 2022).

A genetic algorithm over the tokenizer's vocabulary size and the encoder's layers,
hidden size, attention heads and intermediate size. Fitness is
``GFLOPs(a) − |size_MB(a) − target|`` (maximised): as much computation as possible (a
proxy for capacity) at the target size. Size is parameters × 4 bytes / 10^6; GFLOPs are
counted by ``torch.utils.flop_counter`` (see :mod:`..arch`). No candidate is trained
during the search.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np

from ..arch import ArchSpec
from ..options import SearchOptions

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
    """The chosen architecture and the search trace."""

    best: ArchSpec
    fitness: float
    size_mb: float
    gflops: float
    feasible: bool
    history: list[dict[str, float]] = field(default_factory=list)
    evaluated: int = 0


def fitness(spec: ArchSpec, target_mb: float) -> float:
    """Compressor's fitness: ``GFLOPs − |size_MB − target_MB|``."""
    return spec.gflops() - abs(spec.size_mb() - target_mb)


def _decode(genome: np.ndarray, space: SearchSpace, base: ArchSpec) -> ArchSpec:
    values = {g: getattr(space, g)[int(i)] for g, i in zip(space.genes, genome)}
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
    elite: int = 2,
    progress: bool = True,
) -> SearchResult:
    """Run the GA and return the fittest architecture within ``tolerance`` (relative)
    of ``target_mb``; if none was found, the fittest overall (``feasible=False``).

    ``base`` fixes the non-searched fields (max length, labels, pair mode).
    """
    from tqdm.auto import tqdm

    if population < 2 or generations < 1:
        raise ValueError(f"need population ≥ 2 and generations ≥ 1, got {population}, {generations}")
    base, space = base or ArchSpec(), space or SearchSpace()
    rng = np.random.default_rng(seed)
    sizes = np.array([len(getattr(space, g)) for g in space.genes])
    scores: dict[ArchSpec, float] = {}

    def score(genome: np.ndarray) -> float:
        spec = _decode(genome, space, base)
        if spec not in scores:
            scores[spec] = fitness(spec, target_mb)
        return scores[spec]

    pop = rng.integers(0, sizes, size=(population, len(sizes)))
    history = []
    for gen in tqdm(range(generations), desc="compressor GA", disable=not progress, leave=False):
        fit = np.array([score(g) for g in pop])
        order = np.argsort(-fit)
        history.append({"generation": gen, "best_fitness": float(fit[order[0]]), "mean_fitness": float(fit.mean())})
        children = [pop[i].copy() for i in order[:elite]]
        while len(children) < population:
            a, b = (pop[max(rng.choice(population, 3, replace=False), key=lambda i: fit[i])] for _ in range(2))
            child = np.where(rng.random(len(sizes)) < 0.5, a, b)  # uniform crossover
            # mutation: half the time a random reset, half the time a step to a neighbour
            mutate = rng.random(len(sizes)) < mutation_rate
            reset = mutate & (rng.random(len(sizes)) < 0.5)
            child[reset] = rng.integers(0, sizes[reset])
            step = mutate & ~reset
            child[step] = np.clip(child[step] + rng.choice([-2, -1, 1, 2], size=int(step.sum())), 0, sizes[step] - 1)
            children.append(child)
        pop = np.stack(children)
    for g in pop:
        score(g)
    feasible = {s: f for s, f in scores.items() if abs(s.size_mb() - target_mb) <= tolerance * target_mb}
    pool = feasible or scores
    best = max(pool, key=pool.__getitem__)
    if not feasible:
        logger.warning("no architecture within %.0f%% of %.2f MB; best is %.3f MB", 100 * tolerance, target_mb, best.size_mb())
    return SearchResult(best, pool[best], best.size_mb(), best.gflops(), bool(feasible), history, len(scores))
